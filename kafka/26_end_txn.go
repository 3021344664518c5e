package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/txn"
)

// EndTxn: v0-4
//
// Behavior:
// * Commits or aborts the producer's transaction (txn.Coordinator.EndTxn):
//   answered once the PrepareCommit or PrepareAbort record is durable on
//   the in-sync replicas of __transaction_state; the coordinator then
//   writes the markers to every partition of the transaction and the
//   Complete record. Until then the producer's next requests get
//   CONCURRENT_TRANSACTIONS (retriable). PRODUCER_FENCED is
//   INVALID_PRODUCER_EPOCH below v2.
// * Authorization: WRITE on the transactional id, or
//   TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
//
// Not implemented:
// * v5 (transaction version 2: an epoch bump with every end).

func (s *Server) handleEndTxn(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.EndTxnRequest)
	resp := r.ResponseKind().(*kmsg.EndTxnResponse)
	if !s.authorized(req, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, r.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return Respond(resp), nil
	}
	id, pid, epoch, commit, version := r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit, r.Version
	wait := s.txnSubmit(reqContext(req), id, func(c TxnCore, requestID uint64, nowMs int64) {
		c.EndTxn(txn.EndRequest{RequestID: requestID, TransactionalID: id, ProducerID: pid, ProducerEpoch: epoch, Commit: commit}, nowMs)
	})
	return func(ctx context.Context) (Response, error) {
		_, code := wait(ctx)
		resp.ErrorCode = fencedCode(code, version, 2)
		return Response{Msg: resp}, nil
	}, nil
}
