package kafka

import (
	"context"

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
// Not implemented:
// * Transactions: a transactional id gets
//   TRANSACTIONAL_ID_AUTHORIZATION_FAILED, fatal in clients, as
//   FindCoordinator answers for transactional ids (there is no transaction
//   coordinator). The response has no message field: the log says why.

func (s *Server) handleInitProducerID(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.InitProducerIDRequest)
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if r.TransactionalID != nil {
		s.logTransactionsRefused(req)
		resp.ErrorCode = errorCode(errTransactionsUnsupported)
		return Respond(resp), nil
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
