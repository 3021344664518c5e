package kafka

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/txn"
)

// ListTransactions: v0
//
// Behavior:
// * The transactions of the coordinators on this node (KIP-664; admin
//   clients ask every node), filtered by state (Kafka's names; an unknown
//   one is listed in UnknownStateFilters) and producer id.
//   COORDINATOR_LOAD_IN_PROGRESS while a coordinator here is loading.
// * Authorization: only the transactional ids the principal may
//   DESCRIBE are listed, as Kafka.
//
// Not implemented:
// * v1's duration filter, v2's id pattern.

func (s *Server) handleListTransactions(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.ListTransactionsRequest)
	resp := r.ResponseKind().(*kmsg.ListTransactionsResponse)
	states := map[string]bool{}
	for _, st := range txn.States() {
		states[st.String()] = true
	}
	want := map[string]bool{}
	for _, f := range r.StateFilters {
		if !states[f] {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, f)
			continue
		}
		want[f] = true
	}
	idOK := s.authz(req).checker(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId)
	t := s.node().Txn
	return func(ctx context.Context) (Response, error) {
		if t == nil {
			return Response{Msg: resp}, nil
		}
		ls, code, err := t.List(ctx)
		if err != nil {
			code = txnErrorCode(err)
		}
		resp.ErrorCode = code
		for _, l := range ls {
			if len(want) > 0 && !want[l.State.String()] {
				continue
			}
			if len(r.ProducerIDFilters) > 0 && !slices.Contains(r.ProducerIDFilters, l.ProducerID) {
				continue
			}
			if idOK != nil && !idOK(l.TransactionalID) {
				continue
			}
			ts := kmsg.NewListTransactionsResponseTransactionState()
			ts.TransactionalID, ts.ProducerID, ts.TransactionState = l.TransactionalID, l.ProducerID, l.State.String()
			resp.TransactionStates = append(resp.TransactionStates, ts)
		}
		return Response{Msg: resp}, nil
	}, nil
}
