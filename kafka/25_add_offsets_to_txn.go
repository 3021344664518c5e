package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
	"github.com/wren-broker/wren/txn"
)

// AddOffsetsToTxn: v0-3
//
// Behavior:
// * The group's partition of __consumer_offsets (groups.PartitionFor over
//   the topic's partition count) joins the producer's transaction, as an
//   AddPartitionsToTxn of that partition; its markers are written by the
//   group coordinator (GroupTxnMarkers). COORDINATOR_NOT_AVAILABLE while
//   __consumer_offsets does not exist. PRODUCER_FENCED is
//   INVALID_PRODUCER_EPOCH below v2.
// * Authorization: WRITE on the transactional id
//   (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group
//   (GROUP_AUTHORIZATION_FAILED), as Kafka.
//
// Not implemented:
// * v4 (transaction version 2).

func (s *Server) handleAddOffsetsToTxn(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.AddOffsetsToTxnRequest)
	resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	if !s.authorized(req, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, r.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return Respond(resp), nil
	}
	if !s.authorized(req, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, r.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return Respond(resp), nil
	}
	t := s.node().Metadata.Image().Topic(groups.OffsetsTopic)
	if t == nil || len(t.Partitions) == 0 {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return Respond(resp), nil
	}
	tp := txn.TopicPartition{Topic: groups.OffsetsTopic, Partition: groups.PartitionFor(r.Group, int32(len(t.Partitions)))}
	id, pid, epoch, version := r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Version
	wait := s.txnSubmit(reqContext(req), id, func(c TxnCore, requestID uint64, nowMs int64) {
		c.AddPartitions(txn.AddPartitionsRequest{RequestID: requestID, TransactionalID: id, ProducerID: pid,
			ProducerEpoch: epoch, Partitions: []txn.TopicPartition{tp}}, nowMs)
	})
	return func(ctx context.Context) (Response, error) {
		out, code := wait(ctx)
		if code == 0 {
			code = out.Partitions[tp]
		}
		resp.ErrorCode = fencedCode(code, version, 2)
		return Response{Msg: resp}, nil
	}, nil
}
