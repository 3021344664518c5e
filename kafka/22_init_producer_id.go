package kafka

import (
	"context"

	"github.com/wren-broker/wren/txn"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitProducerId: v0-4
//
// Behavior:
// * Without a transactional id (an idempotent producer) every request gets
//   a new producer id with epoch 0, as Kafka's coordinator does for
//   non-transactional producers, also when a v3+ request names its current
//   id and epoch (KIP-360): the client then restarts its sequences at 0.
// * Ids come from a block of 1000 this broker holds, reserved for it in
//   the metadata log before any of it is handed out, so an id is never
//   handed out twice, across restarts and controllers too. The broker asks
//   for its next block before this one runs out, so the answer never waits
//   on the controller: a producer gets its id during a controller election
//   and with the quorum lost, as long as the broker still holds ids. With
//   none left it answers COORDINATOR_LOAD_IN_PROGRESS (retriable, as
//   Kafka does) after a short wait for a block.
// * The id is taken on the connection's writer (in the Pending), so a wait
//   for a block does not hold up the requests read after it.
// * Authorization: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic
//   (Kafka 3.x), or CLUSTER_AUTHORIZATION_FAILED.
//
// * With a transactional id: the transaction coordinator of the id
//   (txn.Coordinator.InitProducerID) answers, once its record is durable:
//   a new id gets a producer id from the same blocks at epoch 0, an
//   existing one a bumped epoch, fencing older producers (KIP-360's
//   current id and epoch checked, v3+); transaction.timeout.ms above
//   transaction.max.timeout.ms is INVALID_TRANSACTION_TIMEOUT; a node that
//   is not the coordinator answers NOT_COORDINATOR. A fresh producer id is
//   taken for every such request (the coordinator uses it only for a new
//   id or an exhausted epoch): ids are plentiful, and the core stays pure.
//   PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below v4, as Kafka.
//   Authorization: WRITE on the transactional id, or
//   TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
//
// Not implemented:
// * v5 (KIP-939, two-phase commit) and transaction version 2.

func (s *Server) handleInitProducerID(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.InitProducerIDRequest)
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if r.TransactionalID != nil {
		return s.initTransactionalProducerID(req, r, resp)
	}
	// As Kafka 3.x: an idempotent producer needs IDEMPOTENT_WRITE on the
	// cluster, or WRITE on some topic.
	az := s.authz(req)
	if az.on() && !az.check(kmsg.ACLOperationIdempotentWrite, kmsg.ACLResourceTypeCluster, ClusterResourceName) &&
		!az.allowAny(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, s.node().Metadata.Image().TopicNames()) {
		az.denied(kmsg.ACLOperationIdempotentWrite, kmsg.ACLResourceTypeCluster, ClusterResourceName)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return Respond(resp), nil
	}
	ids := s.node().ProducerIDs
	return func(ctx context.Context) (Response, error) {
		id, err := ids.Next(ctx)
		if err != nil {
			resp.ErrorCode = errorCode(err)
			return Response{Msg: resp}, nil
		}
		resp.ProducerID, resp.ProducerEpoch = id, 0
		return Response{Msg: resp}, nil
	}, nil
}

func (s *Server) initTransactionalProducerID(req *Request, r *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) (Pending, error) {
	id := *r.TransactionalID
	if !s.authorized(req, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, id) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return Respond(resp), nil
	}
	if id == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return Respond(resp), nil
	}
	if t := s.node().Txn; t != nil {
		t.EnsureTopic() // as FindCoordinator: a client that skipped it
	}
	ids := s.node().ProducerIDs
	version := r.Version
	return func(ctx context.Context) (Response, error) {
		fresh, err := ids.Next(ctx)
		if err != nil {
			resp.ErrorCode = errorCode(err)
			return Response{Msg: resp}, nil
		}
		expPID, expEpoch := txn.NoProducerID, txn.NoProducerEpoch
		if version >= 3 {
			expPID, expEpoch = r.ProducerID, r.ProducerEpoch
		}
		wait := s.txnSubmit(ctx, id, func(c TxnCore, requestID uint64, nowMs int64) {
			c.InitProducerID(txn.InitRequest{RequestID: requestID, TransactionalID: id, TimeoutMs: r.TransactionTimeoutMillis,
				ExpectedProducerID: expPID, ExpectedEpoch: expEpoch, FreshProducerID: fresh}, nowMs)
		})
		out, code := wait(ctx)
		resp.ErrorCode = fencedCode(code, version, 4)
		if code == 0 {
			resp.ProducerID, resp.ProducerEpoch = out.ProducerID, out.ProducerEpoch
		}
		return Response{Msg: resp}, nil
	}, nil
}
