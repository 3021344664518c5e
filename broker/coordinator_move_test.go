package broker

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/groups"
	"github.com/wren-broker/wren/groups/coordinator"
)

// coordinatorMove moves the leadership of one __consumer_offsets partition
// away from this node (to broker 2, which is not running) and back,
// through the replica manager, each time at the next leader epoch, as a
// controller would. The broker's group coordinator follows the
// partition's leadership on its own: that is what the tests watch.
type coordinatorMove struct {
	t     *testing.T
	b     *Broker
	tp    engine.TopicPartition
	epoch int32
}

func newCoordinatorMove(t *testing.T, b *Broker, group string) *coordinatorMove {
	t.Helper()
	tp := engine.TopicPartition{Topic: coordinator.OffsetsTopic, Partition: groups.PartitionFor(group, b.groups.Partitions())}
	p := b.Replicas().Partition(tp)
	if p == nil {
		t.Fatalf("%s is not hosted", tp)
	}
	lead, epoch := p.Leader()
	if !lead {
		t.Fatalf("%s is not led here before the move", tp)
	}
	return &coordinatorMove{t: t, b: b, tp: tp, epoch: epoch}
}

func (m *coordinatorMove) to(leader int32) {
	m.t.Helper()
	m.epoch++
	if err := m.b.Replicas().BecomeLeaderOrFollower(m.tp, leader, m.epoch); err != nil {
		m.t.Fatalf("move %s to broker %d at epoch %d: %v", m.tp, leader, m.epoch, err)
	}
	m.checkLeader(leader == m.b.cfg.NodeID)
}

func (m *coordinatorMove) away() { m.to(2) }
func (m *coordinatorMove) back() { m.to(m.b.cfg.NodeID) }

// checkLeader fails unless this node's replica leads (or not) at the
// move's latest epoch.
func (m *coordinatorMove) checkLeader(want bool) {
	m.t.Helper()
	lead, epoch := m.b.Replicas().Partition(m.tp).Leader()
	if lead != want || epoch != m.epoch {
		m.t.Fatalf("%s: leader %v at epoch %d, want %v at %d", m.tp, lead, epoch, want, m.epoch)
	}
}

// joinStableGroup makes a one-member group Stable by hand (JoinGroup,
// then the leader's SyncGroup with assignment "mine").
func joinStableGroup(t *testing.T, cl *kgo.Client, group string) *kmsg.JoinGroupResponse {
	t.Helper()
	j := kmsg.NewPtrJoinGroupRequest()
	j.Group, j.SessionTimeoutMillis, j.RebalanceTimeoutMillis, j.ProtocolType = group, 30000, 30000, "wren-test"
	j.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "p", Metadata: []byte("meta")}}
	jr := direct[*kmsg.JoinGroupResponse](t, cl, j)
	if kerr.ErrorForCode(jr.ErrorCode) == kerr.MemberIDRequired {
		j.MemberID = jr.MemberID
		jr = direct[*kmsg.JoinGroupResponse](t, cl, j)
	}
	wantCode(t, "join "+group, jr.ErrorCode, nil)
	s := kmsg.NewPtrSyncGroupRequest()
	s.Group, s.Generation, s.MemberID = group, jr.Generation, jr.MemberID
	s.ProtocolType, s.Protocol = kmsg.StringPtr("wren-test"), kmsg.StringPtr("p")
	s.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: jr.MemberID, MemberAssignment: []byte("mine")}}
	sr := direct[*kmsg.SyncGroupResponse](t, cl, s)
	if sr.ErrorCode != 0 || string(sr.MemberAssignment) != "mine" {
		t.Fatalf("sync %s: %+v", group, sr)
	}
	return jr
}

// groupRequests are one member's requests to its coordinator, each
// returning the response's error code (the first partition's, for
// commits).
type groupRequests struct {
	t          *testing.T
	cl         *kgo.Client
	group      string
	member     string
	generation int32
}

func (g groupRequests) commit(partition int32, offset int64) int16 {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = g.group, g.generation, g.member
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: partition, Offset: offset, LeaderEpoch: -1}}}}
	return direct[*kmsg.OffsetCommitResponse](g.t, g.cl, req).Topics[0].Partitions[0].ErrorCode
}

func (g groupRequests) heartbeat() int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.Generation, req.MemberID = g.group, g.generation, g.member
	return direct[*kmsg.HeartbeatResponse](g.t, g.cl, req).ErrorCode
}

func (g groupRequests) fetch() (int16, map[int32]int64) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: g.group}}
	resp := direct[*kmsg.OffsetFetchResponse](g.t, g.cl, req).Groups[0]
	offsets := map[int32]int64{}
	for _, topic := range resp.Topics {
		for _, p := range topic.Partitions {
			offsets[p.Partition] = p.Offset
		}
	}
	return resp.ErrorCode, offsets
}

func (g groupRequests) describe() kmsg.DescribeGroupsResponseGroup {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{g.group}
	return direct[*kmsg.DescribeGroupsResponse](g.t, g.cl, req).Groups[0]
}

// findCoordinator returns the node FindCoordinator names for each group,
// -1 for an error.
func findCoordinator(t *testing.T, cl *kgo.Client, group ...string) []int32 {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKeys = group
	resp := direct[*kmsg.FindCoordinatorResponse](t, cl, req)
	var nodes []int32
	for _, c := range resp.Coordinators {
		if c.ErrorCode != 0 {
			if c.ErrorCode != kerr.CoordinatorNotAvailable.Code || c.NodeID != -1 {
				t.Fatalf("FindCoordinator %s: %+v", c.Key, c)
			}
			nodes = append(nodes, -1)
			continue
		}
		nodes = append(nodes, c.NodeID)
	}
	return nodes
}

// TestCoordinatorLeadershipMoves moves a Stable group's coordinator away
// and back in-process. While its __consumer_offsets partition is led
// elsewhere, every request of the group gets NOT_COORDINATOR and
// FindCoordinator does not name this node (its image still does, but the
// replica knows a later epoch), while a group of another
// partition carries on; a metadata image at the older epoch does not
// bring the leadership back. Once it returns, the coordinator is loaded
// from the partition: the same generation, member and assignment, Stable,
// and the offsets committed before the move (not the one refused during
// it).
func TestCoordinatorLeadershipMoves(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir(), groupsTestConfig))
	cl, adm := newClient(t, b)
	createTopic(t, adm, "t", 3, nil)
	const group = "moving"
	other := ""
	for i := 0; other == ""; i++ {
		if name := "other-" + strconv.Itoa(i); groups.PartitionFor(name, b.groups.Partitions()) != groups.PartitionFor(group, b.groups.Partitions()) {
			other = name
		}
	}

	jr := joinStableGroup(t, cl, group)
	g := groupRequests{t: t, cl: cl, group: group, member: jr.MemberID, generation: jr.Generation}
	wantCode(t, "commit t/0=5", g.commit(0, 5), nil)
	wantCode(t, "commit t/1=7", g.commit(1, 7), nil)
	ojr := joinStableGroup(t, cl, other)
	o := groupRequests{t: t, cl: cl, group: other, member: ojr.MemberID, generation: ojr.Generation}

	move := newCoordinatorMove(t, b, group)
	move.away()

	// (a) Led elsewhere. The commit is refused whether the coordinator
	// was still loaded (its append is refused) or already unloaded (the
	// leadership check runs on the driver's tick); either way the
	// coordinator is gone afterwards, so what follows is deterministic.
	wantCode(t, "commit while led elsewhere", g.commit(0, 99), kerr.NotCoordinator)
	// The metadata image, which FindCoordinator answers from, still names
	// this node (this in-process move bypasses the controller), but the
	// replica's later epoch says otherwise: FindCoordinator names no one
	// and the group's requests get NOT_COORDINATOR, not LOAD_IN_PROGRESS.
	if nodes := findCoordinator(t, cl, group, other); !slices.Equal(nodes, []int32{-1, 1}) {
		t.Fatalf("FindCoordinator [%s %s] while led elsewhere: nodes %v, want [-1 1]", group, other, nodes)
	}
	wantCode(t, "heartbeat while led elsewhere", g.heartbeat(), kerr.NotCoordinator)
	if code, _ := g.fetch(); code != kerr.NotCoordinator.Code {
		t.Fatalf("OffsetFetch while led elsewhere: %v", kerr.ErrorForCode(code))
	}
	wantCode(t, "DescribeGroups while led elsewhere", g.describe().ErrorCode, kerr.NotCoordinator)
	j := kmsg.NewPtrJoinGroupRequest()
	j.Group, j.MemberID, j.SessionTimeoutMillis, j.RebalanceTimeoutMillis, j.ProtocolType = group, jr.MemberID, 30000, 30000, "wren-test"
	j.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "p", Metadata: []byte("meta")}}
	wantCode(t, "JoinGroup while led elsewhere", direct[*kmsg.JoinGroupResponse](t, cl, j).ErrorCode, kerr.NotCoordinator)
	s := kmsg.NewPtrSyncGroupRequest()
	s.Group, s.Generation, s.MemberID = group, jr.Generation, jr.MemberID
	wantCode(t, "SyncGroup while led elsewhere", direct[*kmsg.SyncGroupResponse](t, cl, s).ErrorCode, kerr.NotCoordinator)
	l := kmsg.NewPtrLeaveGroupRequest()
	l.Group, l.Members = group, []kmsg.LeaveGroupRequestMember{{MemberID: jr.MemberID}}
	wantCode(t, "LeaveGroup while led elsewhere", direct[*kmsg.LeaveGroupResponse](t, cl, l).ErrorCode, kerr.NotCoordinator)
	listed, err := adm.ListGroups(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	if names := listed.Groups(); !slices.Equal(names, []string{other}) {
		t.Fatalf("ListGroups while %s is led elsewhere: %v, want [%s]", group, names, other)
	}
	// The other partition's group is untouched.
	wantCode(t, "heartbeat of "+other, o.heartbeat(), nil)
	wantCode(t, "commit of "+other, o.commit(2, 3), nil)

	// A new metadata image names this node leader at the epoch before
	// the move: stale, it changes nothing.
	createTopic(t, adm, "while-away", 1, nil)
	move.checkLeader(false)
	wantCode(t, "heartbeat after a stale image", g.heartbeat(), kerr.NotCoordinator)

	// (b) Back at a newer epoch. FindCoordinator names this node; the
	// coordinator loads on the driver's next tick, and until then the
	// group's requests get COORDINATOR_LOAD_IN_PROGRESS, which clients
	// retry here (NOT_COORDINATOR only in the instant before the driver
	// saw the leadership).
	move.back()
	if nodes := findCoordinator(t, cl, group); !slices.Equal(nodes, []int32{1}) {
		t.Fatalf("FindCoordinator %s after the move back: nodes %v, want [1]", group, nodes)
	}
	deadline := time.Now().Add(20 * time.Second)
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	var d kmsg.DescribeGroupsResponseGroup
	for {
		d = g.describe()
		if d.ErrorCode == 0 {
			break
		}
		if d.ErrorCode != kerr.CoordinatorLoadInProgress.Code && d.ErrorCode != kerr.NotCoordinator.Code || time.Now().After(deadline) {
			t.Fatalf("DescribeGroups after the move back: %v", kerr.ErrorForCode(d.ErrorCode))
		}
		<-poll.C // the load is the driver's tick's work
	}
	if d.State != "Stable" || len(d.Members) != 1 || d.Members[0].MemberID != jr.MemberID || string(d.Members[0].MemberAssignment) != "mine" {
		t.Fatalf("after the move back: %+v", d)
	}
	// The generation came back too: the member's heartbeat and commit
	// in it are accepted, without a rebalance.
	wantCode(t, "heartbeat in the generation before the move", g.heartbeat(), nil)
	code, offsets := g.fetch()
	if want := map[int32]int64{0: 5, 1: 7}; code != 0 || fmt.Sprint(offsets) != fmt.Sprint(want) {
		t.Fatalf("OffsetFetch after the move back: %v %v, want %v", kerr.ErrorForCode(code), offsets, want)
	}
	wantCode(t, "commit t/0=6 after the move back", g.commit(0, 6), nil)
	if code, offsets := g.fetch(); code != 0 || offsets[0] != 6 {
		t.Fatalf("OffsetFetch after a commit: %v %v", kerr.ErrorForCode(code), offsets)
	}
	// The commit was written at the leader epoch of the move back.
	epochs := b.Replicas().Partition(move.tp).Log().LeaderEpochs()
	if last := epochs[len(epochs)-1]; last.Epoch != move.epoch {
		t.Fatalf("%s leader epochs %v: the last is not %d", move.tp, epochs, move.epoch)
	}
}

// findCounter counts, per member, the FindCoordinator requests the
// member's client sent since it was armed: a classic consumer sends one
// when its coordinator answers NOT_COORDINATOR.
type findCounter struct {
	mu      sync.Mutex
	armed   bool
	n       map[string]int
	changed chan struct{}
}

type findHook struct {
	c    *findCounter
	name string
}

func (h findHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key != int16(kmsg.FindCoordinator) || err != nil {
		return
	}
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	if h.c.armed {
		h.c.n[h.name]++
		select {
		case h.c.changed <- struct{}{}:
		default:
		}
	}
}

func (c *findCounter) arm() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed = true
}

// waitAll waits until every member named sent a FindCoordinator since
// arm.
func (c *findCounter) waitAll(t *testing.T, names ...string) {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		missing := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return c.n[n] > 0 })
		c.mu.Unlock()
		if len(missing) == 0 {
			return
		}
		select {
		case <-c.changed:
		case <-deadline.C:
			t.Fatalf("members %v never looked for their coordinator while it was away", missing)
		}
	}
}

// TestConsumerGroupAcrossCoordinatorMove runs a franz-go group while its
// coordinator moves away and back: every member notices (it looks for its
// coordinator again), consumption goes on meanwhile (fetches do not need
// the coordinator), and when the coordinator is back, loaded from the
// log, the members carry on in their generation: no rebalance, every
// record consumed once, committed offsets equal to the end offsets.
func TestConsumerGroupAcrossCoordinatorMove(t *testing.T) {
	const (
		topic      = "moved"
		group      = "movers"
		partitions = 6
		perPhase   = 300
	)
	b := startBroker(t, testConfig(t, t.TempDir(), groupsTestConfig))
	ctx := testContext(t)
	cl, adm := newClient(t, b)
	createTopic(t, adm, topic, partitions, nil)
	producer := newSpreadProducer(t, b, topic, partitions)
	produceN := func(n int) error { return producer.produce(ctx, n) }
	producedSoFar := producer.total
	if err := produceN(perPhase); err != nil {
		t.Fatal(err)
	}

	w := newGroupWatch(t)
	finds := &findCounter{n: map[string]int{}, changed: make(chan struct{}, 1)}
	names := []string{"m0", "m1", "m2"}
	members := map[string]*groupMember{}
	for _, name := range names {
		members[name] = startMember(t, b, w, name, group, topic, kgo.WithHooks(findHook{c: finds, name: name}))
	}
	w.waitOwners(ctx, partitions, names...)
	w.waitConsumed(ctx, perPhase)
	// The move waits until every member's session is under way. A
	// member assigned partitions in the last rebalance asks for their
	// committed offsets (OffsetFetch) before it fetches them; had the
	// move come first, its client would ask FindCoordinator again and be
	// told COORDINATOR_NOT_AVAILABLE (the partition's leader, broker 2,
	// is not live: Kafka answers the same), and franz-go fails an
	// OffsetFetch at once on that answer, unlike a Heartbeat, which it
	// retries: the member would lose its session. One more record per
	// partition, consumed, shows every owner is past its OffsetFetch.
	if err := produceN(partitions); err != nil {
		t.Fatal(err)
	}
	w.waitConsumed(ctx, producedSoFar())
	g := groupRequests{t: t, cl: cl, group: group}
	before := g.describe()
	if before.ErrorCode != 0 || before.State != "Stable" || len(before.Members) != len(names) {
		t.Fatalf("before the move: %+v", before)
	}
	generations := w.generations()

	stopProducing := producer.background(ctx, 6)

	move := newCoordinatorMove(t, b, group)
	move.away()
	finds.arm()
	finds.waitAll(t, names...)
	// Records produced while the coordinator is away are consumed while
	// it is away.
	w.waitConsumed(ctx, producedSoFar())
	move.back()

	if err := stopProducing(); err != nil {
		t.Fatal(err)
	}
	total := producedSoFar()
	w.waitConsumed(ctx, total)
	for _, name := range names {
		members[name].stop()
		if err := members[name].cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("%s: final commit: %v", name, err)
		}
	}
	t.Logf("%d records, generations %v", total, w.generations())
	if got := w.generations(); !slices.Equal(got, generations) {
		t.Errorf("generations %v after the move, %v before: the group rebalanced", got, generations)
	}
	w.checkGenerations()
	after := g.describe()
	if after.ErrorCode != 0 || after.State != "Stable" || len(after.Members) != len(names) {
		t.Fatalf("after the move: %+v", after)
	}
	for i := range before.Members {
		if after.Members[i].MemberID != before.Members[i].MemberID {
			t.Fatalf("members after the move %+v, before %+v", after.Members, before.Members)
		}
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	ends.Each(func(e kadm.ListedOffset) {
		c, ok := committed.Lookup(e.Topic, e.Partition)
		if !ok || c.Err != nil || c.At != e.Offset {
			t.Errorf("%s/%d committed %+v, end offset %d", e.Topic, e.Partition, c, e.Offset)
		}
		n++
	})
	if n != partitions {
		t.Fatalf("%d end offsets, want %d", n, partitions)
	}
	if got := w.consumedTotal(); got != total {
		t.Fatalf("consumed %d distinct records, produced %d", got, total)
	}
}

// TestCoordinatorMoveAnswersHeldJoin: a JoinGroup the coordinator holds
// (a rebalance waiting for the other member to rejoin) is answered
// NOT_COORDINATOR when the leadership leaves, and the group comes back
// from the log in its last stored generation, Stable: the rebalance in
// flight was never stored.
func TestCoordinatorMoveAnswersHeldJoin(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir(), groupsTestConfig))
	cl, _ := newClient(t, b)
	const group = "held"
	jr := joinStableGroup(t, cl, group)
	g := groupRequests{t: t, cl: cl, group: group, member: jr.MemberID, generation: jr.Generation}

	j := kmsg.NewPtrJoinGroupRequest()
	j.Group, j.SessionTimeoutMillis, j.RebalanceTimeoutMillis, j.ProtocolType = group, 30000, 30000, "wren-test"
	j.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "p", Metadata: []byte("meta")}}
	first := direct[*kmsg.JoinGroupResponse](t, cl, j)
	wantCode(t, "second member's first join", first.ErrorCode, kerr.MemberIDRequired)
	j.MemberID = first.MemberID
	ctx := testContext(t)
	held := make(chan int16, 1)
	go func() {
		resp, err := cl.Broker(1).Request(ctx, j)
		if err != nil {
			t.Errorf("held JoinGroup: %v", err)
			held <- -1
			return
		}
		held <- resp.(*kmsg.JoinGroupResponse).ErrorCode
	}()
	// The join is held once the group prepares a rebalance for it.
	deadline := time.Now().Add(20 * time.Second)
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for d := g.describe(); d.State != "PreparingRebalance"; d = g.describe() {
		if time.Now().After(deadline) {
			t.Fatalf("the second member's join did not start a rebalance: %+v", d)
		}
		<-poll.C
	}

	move := newCoordinatorMove(t, b, group)
	move.away()
	select {
	case code := <-held:
		wantCode(t, "held JoinGroup when the leadership left", code, kerr.NotCoordinator)
	case <-ctx.Done():
		t.Fatal("the held JoinGroup was not answered when the leadership left")
	}

	move.back()
	deadline = time.Now().Add(20 * time.Second)
	var d kmsg.DescribeGroupsResponseGroup
	for d = g.describe(); d.ErrorCode != 0; d = g.describe() {
		if d.ErrorCode != kerr.CoordinatorLoadInProgress.Code && d.ErrorCode != kerr.NotCoordinator.Code || time.Now().After(deadline) {
			t.Fatalf("DescribeGroups after the move back: %v", kerr.ErrorForCode(d.ErrorCode))
		}
		<-poll.C // the load is the driver's tick's work
	}
	if d.State != "Stable" || len(d.Members) != 1 || d.Members[0].MemberID != jr.MemberID {
		t.Fatalf("after the move back: %+v", d)
	}
	wantCode(t, "heartbeat in the stored generation", g.heartbeat(), nil)
}
