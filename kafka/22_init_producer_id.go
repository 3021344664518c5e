package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitProducerId: v0-4
//
// Behavior:
// * Without a transactional id (an idempotent producer) every request gets
//   a new producer id with epoch 0, as Kafka's coordinator does for
//   non-transactional producers, also when a v3+ request names its current
//   id and epoch (KIP-360): the client then restarts its sequences at 0.
// * Ids come from blocks of 1000 reserved in the metadata log, so an id is
//   never handed out twice, across restarts too.
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
	id, err := s.node().ProducerIDs.Next(req.Session.Context())
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return Respond(resp), nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return Respond(resp), nil
}
