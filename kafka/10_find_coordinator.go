package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator: v0-6
//
// Behavior:
// * Advertised from v0: librdkafka enables lz4 only if it is.
// * Group keys (type 0) and transactional ids (type 1) are answered
//   COORDINATOR_NOT_AVAILABLE, node -1: wren has no group or transaction
//   coordinator yet. The error is retriable, so clients keep asking
//   instead of failing, as they do while Kafka creates
//   __consumer_offsets.
// * Share group keys (type 2) the same from v6; below v6, and for unknown
//   types, INVALID_REQUEST.
// * v4+: the batched form, one result per key, in request order, with no
//   error message (as Kafka).
//
// Not implemented:
// * Coordinators: the group coordinator and transactions are later work;
//   this handler then answers with the leader of the key's partition of
//   __consumer_offsets (or __transaction_state).

// Coordinator types of FindCoordinator. Part of the wire protocol.
const (
	coordinatorGroup       int8 = 0
	coordinatorTransaction int8 = 1
	coordinatorShare       int8 = 2
)

func (s *Server) handleFindCoordinator(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.FindCoordinatorRequest)
	resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
	if r.Version < 4 {
		err := findCoordinator(r.Version, r.CoordinatorType)
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), kafkaMessage(err)
		resp.NodeID, resp.Host, resp.Port = -1, "", -1
		return Respond(resp), nil
	}
	for _, key := range r.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		// No message per key, as Kafka: it would be most of the
		// response, many times the size of the key that asked.
		c.ErrorCode = errorCode(findCoordinator(r.Version, r.CoordinatorType))
		c.NodeID, c.Host, c.Port = -1, "", -1
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return Respond(resp), nil
}

// findCoordinator is the answer for one key: today always an error.
func findCoordinator(version int16, coordinatorType int8) error {
	switch {
	case coordinatorType == coordinatorGroup:
		return fmt.Errorf("%w: consumer groups are not served by this broker yet", kerr.CoordinatorNotAvailable)
	case coordinatorType == coordinatorTransaction:
		return fmt.Errorf("%w: transactions are not served by this broker yet", kerr.CoordinatorNotAvailable)
	case coordinatorType == coordinatorShare && version >= 6:
		return fmt.Errorf("%w: share groups are not served by this broker", kerr.CoordinatorNotAvailable)
	}
	return fmt.Errorf("%w: unknown coordinator type %d in FindCoordinator v%d", kerr.InvalidRequest, coordinatorType, version)
}
