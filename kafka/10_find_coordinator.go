package kafka

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/groups"
	"github.com/wren-broker/wren/txn"
)

// FindCoordinator: v0-6
//
// Behavior:
// * Advertised from v0: librdkafka enables lz4 only if it is.
// * Group keys (type 0): the leader of the group's partition of
//   __consumer_offsets (groups.PartitionFor over the topic's partition
//   count) in this node's committed metadata image, wherever it is, as
//   Kafka answers from its metadata cache: any node of a cluster names the
//   coordinator. COORDINATOR_NOT_AVAILABLE, node -1, which is retriable,
//   only while the topic does not exist yet, or the partition has no
//   leader, or its leader is not a live broker with an address on this
//   listener, or when the image names this node but its own replica
//   follows at a later leader epoch (the image is stale here). The
//   coordinator itself answers COORDINATOR_LOAD_IN_PROGRESS
//   to the group APIs while it loads the partition, and every other node
//   NOT_COORDINATOR (groups/coordinator), so a client that asked a node
//   whose image lagged asks again. An empty group id is INVALID_REQUEST,
//   as in Kafka.
// * COORDINATOR_NOT_AVAILABLE here costs a client more than the group
//   APIs' NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS: franz-go
//   retries those until its retry timeout, and retries this answer for
//   JoinGroup, SyncGroup, Heartbeat and OffsetCommit too, but fails an
//   OffsetFetch (a sharded request) on it at once, which ends the session
//   of a member that is starting one. So it is given only where Kafka
//   gives it: while no live broker leads the group's partition.
// * Transactional ids (type 1): the leader of the id's partition of
//   __transaction_state (txn.PartitionFor, the same hash), by the same
//   lookup as groups, from any node. While the topic does not exist the
//   answer is COORDINATOR_NOT_AVAILABLE (retriable) and the topic is
//   created in the background, as Kafka creates it on the first such
//   request. Authorization: DESCRIBE on the transactional id, or
//   TRANSACTIONAL_ID_AUTHORIZATION_FAILED. An empty id is INVALID_REQUEST.
// * Share group keys (type 2) the same from v6; below v6, and for unknown
//   types, INVALID_REQUEST.
// * v4+: the batched form, one result per key, in request order, with no
//   error message (as Kafka).
// * Authorization: DESCRIBE on the group, or GROUP_AUTHORIZATION_FAILED.

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
		c, err := s.findCoordinator(req, r.Version, r.CoordinatorType, r.CoordinatorKey)
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), kafkaMessage(err)
		resp.NodeID, resp.Host, resp.Port = c.id, c.host, c.port
		return Respond(resp), nil
	}
	for _, key := range r.CoordinatorKeys {
		rc := kmsg.NewFindCoordinatorResponseCoordinator()
		rc.Key = key
		// No message per key, as Kafka: it would be most of the
		// response, many times the size of the key that asked.
		c, err := s.findCoordinator(req, r.Version, r.CoordinatorType, key)
		rc.ErrorCode = errorCode(err)
		rc.NodeID, rc.Host, rc.Port = c.id, c.host, c.port
		resp.Coordinators = append(resp.Coordinators, rc)
	}
	return Respond(resp), nil
}

// coordinatorAddr is a coordinator as FindCoordinator names it.
type coordinatorAddr struct {
	id   int32
	host string
	port int32
}

// noCoordinator is the answer that names none.
var noCoordinator = coordinatorAddr{id: -1, host: "", port: -1}

// findCoordinator is the answer for one key.
func (s *Server) findCoordinator(req *Request, version int16, coordinatorType int8, key string) (coordinatorAddr, error) {
	switch {
	case coordinatorType == coordinatorGroup && key == "":
		return noCoordinator, fmt.Errorf("%w: empty group id", kerr.InvalidRequest)
	case coordinatorType == coordinatorGroup && !s.authorized(req, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, key):
		return noCoordinator, kerr.GroupAuthorizationFailed
	case coordinatorType == coordinatorGroup:
		return s.partitionLeader(req.Session, groups.OffsetsTopic, key)
	case coordinatorType == coordinatorTransaction && key == "":
		return noCoordinator, fmt.Errorf("%w: empty transactional id", kerr.InvalidRequest)
	case coordinatorType == coordinatorTransaction && !s.authorized(req, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, key):
		return noCoordinator, kerr.TransactionalIDAuthorizationFailed
	case coordinatorType == coordinatorTransaction:
		if t := s.node().Txn; t == nil || !t.EnsureTopic() {
			return noCoordinator, fmt.Errorf("%w: %s does not exist yet", kerr.CoordinatorNotAvailable, txn.StateTopic)
		}
		return s.partitionLeader(req.Session, txn.StateTopic, key)
	case coordinatorType == coordinatorShare && version >= 6:
		return noCoordinator, fmt.Errorf("%w: share groups are not served by this broker", kerr.CoordinatorNotAvailable)
	}
	return noCoordinator, fmt.Errorf("%w: unknown coordinator type %d in FindCoordinator v%d", kerr.InvalidRequest, coordinatorType, version)
}

// partitionLeader is the coordinator of key among the partitions of an
// internal topic: the leader of partition groups.PartitionFor(key, count)
// in the committed image, with its address on this listener.
func (s *Server) partitionLeader(sess *Session, topic, key string) (coordinatorAddr, error) {
	n := s.node()
	lname, lhost, lport := s.listenerOf(sess)
	t := n.Metadata.Image().Topic(topic)
	if t == nil || len(t.Partitions) == 0 {
		return noCoordinator, fmt.Errorf("%w: %s does not exist yet", kerr.CoordinatorNotAvailable, topic)
	}
	p := groups.PartitionFor(key, int32(len(t.Partitions)))
	leader := t.Partitions[p].Leader
	if leader < 0 {
		return noCoordinator, fmt.Errorf("%w: %s-%d has no leader", kerr.CoordinatorNotAvailable, topic, p)
	}
	if leader == n.Metadata.NodeID() {
		// This node's replica follows the image; one that follows at a
		// later leader epoch knows the image is stale here (only a
		// test moves a replica by hand): naming this node would send
		// the client back and forth on NOT_COORDINATOR.
		if r := n.Partitions.Partition(engine.TopicPartition{Topic: topic, Partition: p}); r != nil {
			if lead, epoch := r.Leader(); !lead && epoch > t.Partitions[p].LeaderEpoch {
				return noCoordinator, fmt.Errorf("%w: this node's replica of %s-%d follows at leader epoch %d, after the %d that names it leader",
					kerr.CoordinatorNotAvailable, topic, p, epoch, t.Partitions[p].LeaderEpoch)
			}
		}
		return coordinatorAddr{id: leader, host: lhost, port: lport}, nil
	}
	if !slices.Contains(n.Metadata.Brokers(), leader) {
		return noCoordinator, fmt.Errorf("%w: %s-%d is led by broker %d, which is not live", kerr.CoordinatorNotAvailable, topic, p, leader)
	}
	host, port, ok := n.Metadata.BrokerAddr(leader, lname)
	if !ok {
		return noCoordinator, fmt.Errorf("%w: broker %d, the leader of %s-%d, has no %s listener", kerr.CoordinatorNotAvailable, leader, topic, p, lname)
	}
	return coordinatorAddr{id: leader, host: host, port: port}, nil
}
