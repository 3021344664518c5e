package kafka

import (
	"context"
	"errors"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/groups"
)

// groupInput feeds one request to a group's coordinator.
type groupInput = GroupInput

// The coordinator-level answers of every group API, as Kafka's group
// coordinator gives them:
//
//   - This node runs no group coordinator (Node.Groups is nil, or it is
//     closing): COORDINATOR_NOT_AVAILABLE, what Kafka's
//     GroupCoordinatorService answers while it is not active. Clients treat
//     it as NOT_COORDINATOR: they look the coordinator up again.
//   - The group's __consumer_offsets partition is not led here:
//     NOT_COORDINATOR, so the client asks FindCoordinator again, which any
//     node answers from its image.
//   - This node leads it but has not loaded it yet:
//     COORDINATOR_LOAD_IN_PROGRESS, which clients retry on the same node.
//     That includes the window after this node's committed image named it
//     the leader and before its replica took the leadership
//     (arrivingCoordinator): FindCoordinator already names this node then,
//     and NOT_COORDINATOR would send the client back and forth between
//     the two until the replica catches up.

// groupCall is one group request in flight: Submit at once (so a
// connection's requests reach the coordinator in order), Wait in the
// Pending.
type groupCall struct {
	call GroupCall
	code int16 // set when there is no coordinator to ask
	// arriving reports whether the group's coordinator is arriving here
	// (arrivingCoordinator), asked when the coordinator says it is not.
	arriving func() bool
}

// submitGroup hands input to the coordinator of group.
func (s *Server) submitGroup(req *Request, group string, input groupInput) groupCall {
	d := s.node().Groups
	if d == nil {
		return groupCall{code: kerr.CoordinatorNotAvailable.Code}
	}
	return groupCall{call: d.Submit(req.Session.Context(), group, input),
		arriving: func() bool { return s.arrivingCoordinator(group) }}
}

// submitGroupAuthorized is submitGroup when the principal may do op on
// group; otherwise nothing is submitted and the call answers
// GROUP_AUTHORIZATION_FAILED.
func (s *Server) submitGroupAuthorized(req *Request, op kmsg.ACLOperation, group string, input groupInput) groupCall {
	if !s.authorized(req, op, kmsg.ACLResourceTypeGroup, group) {
		return groupCall{code: kerr.GroupAuthorizationFailed.Code}
	}
	return s.submitGroup(req, group, input)
}

// wait returns the coordinator's response, or a Kafka error code when no
// coordinator answered. A Go error means ctx ended: the connection is
// closing and the response is dropped.
func (g groupCall) wait(ctx context.Context) (groups.Response, int16, error) {
	if g.call == nil {
		return groups.Response{}, g.code, nil
	}
	r, err := g.call.Wait(ctx)
	switch {
	case err == nil:
		return r, 0, nil
	case errors.Is(err, kerr.NotCoordinator):
		if g.arriving != nil && g.arriving() {
			return r, kerr.CoordinatorLoadInProgress.Code, nil
		}
		return r, kerr.NotCoordinator.Code, nil
	case errors.Is(err, kerr.CoordinatorNotAvailable):
		return r, kerr.CoordinatorNotAvailable.Code, nil
	}
	return r, 0, err
}

// arrivingCoordinator reports, for a group whose coordinator answered
// that it is not loaded here, whether it is arriving: this node's
// committed image names it the leader of the group's __consumer_offsets
// partition and its replica either has not taken that leadership yet
// (arrivingLeadership) or has just taken it, so the driver loads it next.
// A replica that follows at the image's epoch or a later one knows better
// than the image: NOT_COORDINATOR then.
func (s *Server) arrivingCoordinator(group string) bool {
	n := s.node()
	t := n.Metadata.Image().Topic(groups.OffsetsTopic)
	if t == nil || len(t.Partitions) == 0 {
		return false
	}
	p := t.Partitions[groups.PartitionFor(group, int32(len(t.Partitions)))]
	if p.Leader != n.Metadata.NodeID() {
		return false
	}
	if s.arrivingLeadership(p) {
		return true
	}
	leader, _ := n.Partitions.Partition(engine.TopicPartition{Topic: groups.OffsetsTopic, Partition: p.Partition}).Leader()
	return leader
}

// arrivingLeadership reports whether the image names this node the leader
// of __consumer_offsets partition p at a leader epoch its replica has not
// reached (or it hosts no replica of p yet): the image is committed, and
// the replica's leadership follows it.
func (s *Server) arrivingLeadership(p cluster.PartitionImage) bool {
	n := s.node()
	if p.Leader != n.Metadata.NodeID() {
		return false
	}
	r := n.Partitions.Partition(engine.TopicPartition{Topic: groups.OffsetsTopic, Partition: p.Partition})
	if r == nil {
		return true
	}
	_, epoch := r.Leader()
	return epoch < p.LeaderEpoch
}

// arrivingOffsetsPartitions reports whether the leadership of any
// __consumer_offsets partition is arriving here (arrivingLeadership).
func (s *Server) arrivingOffsetsPartitions() bool {
	t := s.node().Metadata.Image().Topic(groups.OffsetsTopic)
	if t == nil {
		return false
	}
	for _, p := range t.Partitions {
		if s.arrivingLeadership(p) {
			return true
		}
	}
	return false
}

// clientHost is the member's address as Kafka reports it ("/" + IP).
func clientHost(sess *Session) string {
	if tcp, ok := sess.RemoteAddr.(*net.TCPAddr); ok {
		return "/" + tcp.IP.String()
	}
	if sess.RemoteAddr == nil {
		return ""
	}
	return "/" + sess.RemoteAddr.String()
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func nullableString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
