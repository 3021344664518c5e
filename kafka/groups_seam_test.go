package kafka

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/groups"
)

// fakeCoordinator is the seam's GroupCoordinator for the group APIs'
// tests: each submitted input runs at once on a core that records the
// request the handler built, and answer gives the coordinator's response.
// It leads every __consumer_offsets partition.
type fakeCoordinator struct {
	// submitted are the groups of the Submit calls, in order; got the
	// requests the inputs made (one each: a *groups.XRequest).
	submitted []string
	got       []any
	// answer answers a request; nil answers each with its kind of
	// response and no error.
	answer func(req any) (groups.Response, error)
	// listed, listCode and listErr are ListGroups' answer.
	listed   []groups.ListedGroup
	listCode int16
	listErr  error
	nextID   uint64
}

func (g *fakeCoordinator) Submit(_ context.Context, group string, input GroupInput) GroupCall {
	g.submitted = append(g.submitted, group)
	g.nextID++
	core := &recordingCore{}
	input(core, g.nextID, 1000)
	if len(core.got) != 1 {
		// Every handler feeds one request per Submit.
		return fakeGroupCall{err: fmt.Errorf("the input made %d requests, want 1", len(core.got))}
	}
	req := core.got[0]
	g.got = append(g.got, req)
	answer := g.answer
	if answer == nil {
		answer = emptyGroupResponse
	}
	r, err := answer(req)
	return fakeGroupCall{r: r, err: err}
}

func (g *fakeCoordinator) ListGroups(context.Context) ([]groups.ListedGroup, int16, error) {
	return g.listed, g.listCode, g.listErr
}

// fakeGroupCall is answered already.
type fakeGroupCall struct {
	r   groups.Response
	err error
}

func (c fakeGroupCall) Wait(context.Context) (groups.Response, error) { return c.r, c.err }

// recordingCore is a GroupCore that keeps the requests it gets.
type recordingCore struct{ got []any }

func (c *recordingCore) Join(req groups.JoinRequest, _ int64)           { c.got = append(c.got, &req) }
func (c *recordingCore) Sync(req groups.SyncRequest, _ int64)           { c.got = append(c.got, &req) }
func (c *recordingCore) Heartbeat(req groups.HeartbeatRequest, _ int64) { c.got = append(c.got, &req) }
func (c *recordingCore) Leave(req groups.LeaveRequest, _ int64)         { c.got = append(c.got, &req) }
func (c *recordingCore) CommitOffsets(req groups.CommitRequest, _ int64) {
	c.got = append(c.got, &req)
}
func (c *recordingCore) TxnCommitOffsets(req groups.TxnCommitRequest, _ int64) {
	c.got = append(c.got, &req)
}
func (c *recordingCore) FetchOffsets(req groups.FetchOffsetsRequest) { c.got = append(c.got, &req) }
func (c *recordingCore) DeleteOffsets(req groups.OffsetDeleteRequest, _ int64) {
	c.got = append(c.got, &req)
}
func (c *recordingCore) DescribeGroup(req groups.DescribeGroupRequest) { c.got = append(c.got, &req) }
func (c *recordingCore) DeleteGroup(req groups.DeleteGroupRequest, _ int64) {
	c.got = append(c.got, &req)
}
func (c *recordingCore) ConsumerHeartbeat(req groups.ConsumerHeartbeatRequest, _ int64) {
	c.got = append(c.got, &req)
}
func (c *recordingCore) ConsumerDescribe(req groups.ConsumerDescribeRequest) {
	c.got = append(c.got, &req)
}

// emptyGroupResponse answers req with its kind of response, no error.
func emptyGroupResponse(req any) (groups.Response, error) {
	switch r := req.(type) {
	case *groups.JoinRequest:
		return groups.Response{RequestID: r.RequestID, Join: &groups.JoinResponse{MemberID: r.MemberID}}, nil
	case *groups.SyncRequest:
		return groups.Response{RequestID: r.RequestID, Sync: &groups.SyncResponse{}}, nil
	case *groups.HeartbeatRequest:
		return groups.Response{RequestID: r.RequestID, Heartbeat: &groups.HeartbeatResponse{}}, nil
	case *groups.LeaveRequest:
		lr := &groups.LeaveResponse{}
		for _, m := range r.Members {
			lr.Members = append(lr.Members, groups.LeaveMemberResult{MemberID: m.MemberID, InstanceID: m.InstanceID})
		}
		return groups.Response{RequestID: r.RequestID, Leave: lr}, nil
	case *groups.CommitRequest:
		cr := &groups.CommitResponse{}
		for _, o := range r.Offsets {
			cr.Partitions = append(cr.Partitions, groups.PartitionResult{Topic: o.Topic, Partition: o.Partition})
		}
		return groups.Response{RequestID: r.RequestID, Commit: cr}, nil
	case *groups.TxnCommitRequest:
		cr := &groups.CommitResponse{}
		for _, o := range r.Offsets {
			cr.Partitions = append(cr.Partitions, groups.PartitionResult{Topic: o.Topic, Partition: o.Partition})
		}
		return groups.Response{RequestID: r.RequestID, TxnCommit: cr}, nil
	case *groups.FetchOffsetsRequest:
		fr := &groups.FetchOffsetsResponse{}
		for _, tp := range r.Partitions {
			fr.Offsets = append(fr.Offsets, groups.FetchedOffset{Topic: tp.Topic, Partition: tp.Partition, Offset: -1, LeaderEpoch: -1})
		}
		return groups.Response{RequestID: r.RequestID, Fetch: fr}, nil
	case *groups.OffsetDeleteRequest:
		dr := &groups.OffsetDeleteResponse{}
		for _, tp := range r.Partitions {
			dr.Partitions = append(dr.Partitions, groups.PartitionResult{Topic: tp.Topic, Partition: tp.Partition})
		}
		return groups.Response{RequestID: r.RequestID, OffsetDelete: dr}, nil
	case *groups.DescribeGroupRequest:
		return groups.Response{RequestID: r.RequestID, Describe: &groups.DescribeGroupResponse{
			ErrorCode: kerr.GroupIDNotFound.Code, Group: r.Group, State: groups.Dead.String()}}, nil
	case *groups.DeleteGroupRequest:
		return groups.Response{RequestID: r.RequestID, Delete: &groups.DeleteGroupResponse{}}, nil
	case *groups.ConsumerHeartbeatRequest:
		return groups.Response{RequestID: r.RequestID, ConsumerHB: &groups.ConsumerHeartbeatResponse{
			MemberID: r.MemberID, MemberEpoch: r.MemberEpoch, HeartbeatIntervalMs: 5000}}, nil
	case *groups.ConsumerDescribeRequest:
		return groups.Response{RequestID: r.RequestID, ConsumerDescribe: &groups.ConsumerDescribeResponse{
			ErrorCode: kerr.GroupIDNotFound.Code, Group: r.Group}}, nil
	}
	return groups.Response{}, fmt.Errorf("no answer for %T", req)
}

// groupFixture is the seam fixture with fakeCoordinator as its group
// coordinator.
func groupFixture(t *testing.T) (*seamFixture, *fakeCoordinator) {
	t.Helper()
	f := newSeamFixture(t)
	g := &fakeCoordinator{}
	f.node.Groups = g
	return f, g
}

// lastGroupRequest is the request the last input made, as a T.
func lastGroupRequest[T any](t *testing.T, g *fakeCoordinator) *T {
	t.Helper()
	if len(g.got) == 0 {
		t.Fatalf("no request reached the coordinator, want a %T", new(T))
	}
	r, ok := g.got[len(g.got)-1].(*T)
	if !ok {
		t.Fatalf("the coordinator got %T, want %T", g.got[len(g.got)-1], new(T))
	}
	return r
}

// notCoordinator answers every request as a coordinator that lost its
// partition's leadership: the broker's adapter wraps the driver's error
// in kerr.NotCoordinator (broker/seam.go).
func notCoordinator(any) (groups.Response, error) {
	return groups.Response{}, fmt.Errorf("%w: __consumer_offsets partition moved", kerr.NotCoordinator)
}

// coordinatorClosed answers as a coordinator shutting down.
func coordinatorClosed(any) (groups.Response, error) {
	return groups.Response{}, fmt.Errorf("%w: coordinator closed", kerr.CoordinatorNotAvailable)
}

// loading answers every request as a coordinator still loading its
// partition does: the request's kind of response with the error.
func loading(req any) (groups.Response, error) {
	r, err := emptyGroupResponse(req)
	return r.WithError(kerr.CoordinatorLoadInProgress.Code), err
}

// offsetsReplicas hosts a replica of each of the fake 4-partition
// __consumer_offsets' partitions (addOffsetsTopic), leading or following
// at epoch.
func (f *seamFixture) offsetsReplicas(leader bool, epoch int32) {
	for p := range int32(4) {
		f.partitions.replicas[engine.TopicPartition{Topic: groups.OffsetsTopic, Partition: p}] = &fakeReplica{leader: leader, leaderEpoch: epoch}
	}
}

// groupErrorCase is one coordinator-level failure and the code every group
// API answers it with.
type groupErrorCase struct {
	name  string
	setup func(t *testing.T, f *seamFixture, g *fakeCoordinator)
	want  *kerr.Error
	// arriving: the coordinator is arriving here; Heartbeat and
	// SyncGroup then answer as a loading core does (arrivingAnswer).
	arriving bool
}

// groupErrorCodes are the coordinator-level failures every group API
// turns into its error code: no coordinator on this node, one that moved
// away, one shutting down, one still loading, one this node's image names
// but its replica has not taken yet. The image's __consumer_offsets
// partitions are at leader epoch 1 (addOffsetsTopic).
var groupErrorCodes = []groupErrorCase{
	// Kafka's GroupCoordinatorService answers COORDINATOR_NOT_AVAILABLE
	// while it is not active, whatever the image says.
	{"no coordinator", func(_ *testing.T, f *seamFixture, _ *fakeCoordinator) { f.node.Groups = nil }, kerr.CoordinatorNotAvailable, false},
	{"no coordinator, image names this node", func(t *testing.T, f *seamFixture, _ *fakeCoordinator) {
		f.node.Groups = nil
		f.addOffsetsTopic(t, 1, 1, 1, 1)
	}, kerr.CoordinatorNotAvailable, false},
	{"not coordinator", func(_ *testing.T, _ *seamFixture, g *fakeCoordinator) { g.answer = notCoordinator }, kerr.NotCoordinator, false},
	{"not coordinator, image names another node", func(t *testing.T, f *seamFixture, g *fakeCoordinator) {
		g.answer = notCoordinator
		f.addOffsetsTopic(t, 2, 2, 2, 2)
		f.offsetsReplicas(false, 1)
	}, kerr.NotCoordinator, false},
	{"coordinator closing", func(_ *testing.T, _ *seamFixture, g *fakeCoordinator) { g.answer = coordinatorClosed }, kerr.CoordinatorNotAvailable, false},
	{"coordinator loading", func(_ *testing.T, _ *seamFixture, g *fakeCoordinator) { g.answer = loading }, kerr.CoordinatorLoadInProgress, false},
	// The image names this node; its replica follows the image.
	{"image names this node, no replica yet", func(t *testing.T, f *seamFixture, g *fakeCoordinator) {
		g.answer = notCoordinator
		f.addOffsetsTopic(t, 1, 1, 1, 1)
	}, kerr.CoordinatorLoadInProgress, true},
	{"image names this node, replica at the older epoch", func(t *testing.T, f *seamFixture, g *fakeCoordinator) {
		g.answer = notCoordinator
		f.addOffsetsTopic(t, 1, 1, 1, 1)
		f.offsetsReplicas(false, 0)
	}, kerr.CoordinatorLoadInProgress, true},
	{"image names this node, replica leads, not loaded yet", func(t *testing.T, f *seamFixture, g *fakeCoordinator) {
		g.answer = notCoordinator
		f.addOffsetsTopic(t, 1, 1, 1, 1)
		f.offsetsReplicas(true, 1)
	}, kerr.CoordinatorLoadInProgress, true},
	// A replica at the image's epoch or later that follows knows better.
	{"image names this node, replica follows at its epoch", func(t *testing.T, f *seamFixture, g *fakeCoordinator) {
		g.answer = notCoordinator
		f.addOffsetsTopic(t, 1, 1, 1, 1)
		f.offsetsReplicas(false, 1)
	}, kerr.NotCoordinator, false},
	{"image names this node, replica follows at a later epoch", func(t *testing.T, f *seamFixture, g *fakeCoordinator) {
		g.answer = notCoordinator
		f.addOffsetsTopic(t, 1, 1, 1, 1)
		f.offsetsReplicas(false, 2)
	}, kerr.NotCoordinator, false},
}

// arrivingAnswer is what Heartbeat (want heartbeat) or SyncGroup answer
// for c: as a loading core does while the coordinator is arriving (NONE,
// REBALANCE_IN_PROGRESS, as Kafka's), else c.want.
func arrivingAnswer(c groupErrorCase, heartbeat bool) *kerr.Error {
	switch {
	case !c.arriving:
		return c.want
	case heartbeat:
		return nil
	}
	return kerr.RebalanceInProgress
}
