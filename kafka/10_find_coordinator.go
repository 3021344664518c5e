package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

// FindCoordinator: v0-6
//
// Behavior:
// * Advertised from v0: librdkafka enables lz4 only if it is.
// * Group keys (type 0): this node, when it leads the group's partition
//   of __consumer_offsets (groups.PartitionFor); else
//   COORDINATOR_NOT_AVAILABLE, node -1, which is retriable, so clients
//   keep asking while the topic is created or its leader elected. An
//   empty group id is INVALID_REQUEST, as in Kafka.
// * Transactional ids (type 1) are answered COORDINATOR_NOT_AVAILABLE:
//   wren has no transaction coordinator yet.
// * Share group keys (type 2) the same from v6; below v6, and for unknown
//   types, INVALID_REQUEST.
// * v4+: the batched form, one result per key, in request order, with no
//   error message (as Kafka).
//
// Not implemented:
// * Transactions are later work; this handler then answers with the
//   leader of the key's partition of __transaction_state.

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
		err := s.findCoordinator(r.Version, r.CoordinatorType, r.CoordinatorKey)
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), kafkaMessage(err)
		resp.NodeID, resp.Host, resp.Port = -1, "", -1
		if err == nil {
			n := s.node()
			resp.NodeID, resp.Host, resp.Port = n.Config.NodeID, n.Host, n.Port
		}
		return Respond(resp), nil
	}
	for _, key := range r.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		// No message per key, as Kafka: it would be most of the
		// response, many times the size of the key that asked.
		err := s.findCoordinator(r.Version, r.CoordinatorType, key)
		c.ErrorCode = errorCode(err)
		c.NodeID, c.Host, c.Port = -1, "", -1
		if err == nil {
			n := s.node()
			c.NodeID, c.Host, c.Port = n.Config.NodeID, n.Host, n.Port
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return Respond(resp), nil
}

// findCoordinator is the answer for one key: nil means this node.
func (s *Server) findCoordinator(version int16, coordinatorType int8, key string) error {
	switch {
	case coordinatorType == coordinatorGroup && key == "":
		return fmt.Errorf("%w: empty group id", kerr.InvalidRequest)
	case coordinatorType == coordinatorGroup:
		d := s.node().Groups
		if d == nil || !d.Leads(groups.PartitionFor(key, d.Partitions())) {
			return fmt.Errorf("%w: the group's partition of __consumer_offsets has no leader here", kerr.CoordinatorNotAvailable)
		}
		return nil
	case coordinatorType == coordinatorTransaction:
		return fmt.Errorf("%w: transactions are not served by this broker yet", kerr.CoordinatorNotAvailable)
	case coordinatorType == coordinatorShare && version >= 6:
		return fmt.Errorf("%w: share groups are not served by this broker", kerr.CoordinatorNotAvailable)
	}
	return fmt.Errorf("%w: unknown coordinator type %d in FindCoordinator v%d", kerr.InvalidRequest, coordinatorType, version)
}
