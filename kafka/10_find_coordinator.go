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
// * Transactional ids (type 1) are answered
//   TRANSACTIONAL_ID_AUTHORIZATION_FAILED with the message "transactions
//   are not supported by wren": wren has no transaction coordinator, and
//   that code is fatal in franz-go, librdkafka and the Java client, so
//   init_transactions fails at once. COORDINATOR_NOT_AVAILABLE (retriable)
//   made them retry until their timeout. librdkafka shows the message;
//   franz-go and the Java client show only the code's own text, so the
//   broker also logs the refusal with the client's id.
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
	if r.CoordinatorType == coordinatorTransaction {
		s.logTransactionsRefused(req)
	}
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
		// response, many times the size of the key that asked. The
		// one exception is short and tells a user why their
		// transactional producer stopped.
		err := s.findCoordinator(r.Version, r.CoordinatorType, key)
		c.ErrorCode = errorCode(err)
		if err == errTransactionsUnsupported {
			c.ErrorMessage = kafkaMessage(err)
		}
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
		return errTransactionsUnsupported
	case coordinatorType == coordinatorShare && version >= 6:
		return fmt.Errorf("%w: share groups are not served by this broker", kerr.CoordinatorNotAvailable)
	}
	return fmt.Errorf("%w: unknown coordinator type %d in FindCoordinator v%d", kerr.InvalidRequest, coordinatorType, version)
}

// errTransactionsUnsupported answers every transactional request: see the
// header.
var errTransactionsUnsupported = fmt.Errorf("%w: transactions are not supported by wren", kerr.TransactionalIDAuthorizationFailed)

// logTransactionsRefused tells the operator why a transactional producer
// failed, since most clients do not show the broker's message. A refused
// client stops (the error is fatal), so this is one line per producer.
func (s *Server) logTransactionsRefused(req *Request) {
	remote := ""
	if req.Session != nil && req.Session.RemoteAddr != nil {
		remote = req.Session.RemoteAddr.String()
	}
	s.log.Info("transactional producer refused: transactions are not supported by wren",
		"client.id", req.Header.ClientID, "remote", remote)
}
