package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeTransactions: v0
//
// Behavior:
// * Each transactional id's state from its coordinator (KIP-664):
//   state (Kafka's names), timeout, start, producer id and epoch, and the
//   partitions of the ongoing transaction. NOT_COORDINATOR from a node
//   that does not coordinate the id (the admin client asks the
//   coordinator FindCoordinator names), TRANSACTIONAL_ID_NOT_FOUND for an
//   id it does not know.
// * Authorization: DESCRIBE on each transactional id, or
//   TRANSACTIONAL_ID_AUTHORIZATION_FAILED for it; a partition's topic
//   the principal may not DESCRIBE is left out, as Kafka.

func (s *Server) handleDescribeTransactions(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.DescribeTransactionsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	az := s.authz(req)
	allowed := make([]bool, len(r.TransactionalIDs))
	for i, id := range r.TransactionalIDs {
		allowed[i] = az.allow(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, id)
	}
	topicOK := az.checker(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic)
	t := s.node().Txn
	return func(ctx context.Context) (Response, error) {
		for i, id := range r.TransactionalIDs {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
			switch {
			case !allowed[i]:
				st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			case t == nil:
				st.ErrorCode = kerr.CoordinatorNotAvailable.Code
			default:
				m, code, err := t.Describe(ctx, id)
				if err != nil {
					code = txnErrorCode(err)
				}
				st.ErrorCode = code
				if code == 0 && m != nil {
					st.State, st.TimeoutMillis, st.StartTimestamp = m.State.String(), m.TimeoutMs, m.StartMs
					st.ProducerID, st.ProducerEpoch = m.ProducerID, m.ProducerEpoch
					for _, tp := range m.Partitions {
						if topicOK != nil && !topicOK(tp.Topic) {
							continue
						}
						if n := len(st.Topics); n == 0 || st.Topics[n-1].Topic != tp.Topic {
							rt := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
							rt.Topic = tp.Topic
							st.Topics = append(st.Topics, rt)
						}
						st.Topics[len(st.Topics)-1].Partitions = append(st.Topics[len(st.Topics)-1].Partitions, tp.Partition)
					}
				}
			}
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
		return Response{Msg: resp}, nil
	}, nil
}
