package broker

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/internal/vfs"
)

// groupsTestConfig is a test broker with no initial rebalance delay (a
// group's first rebalance would wait 3 s for more members), few
// __consumer_offsets partitions (each is a log to create), and KIP-848
// members that heartbeat every 100 ms: they learn of a new assignment
// only on a heartbeat, so the interval paces every rebalance step.
const groupsTestConfig = `
[groups]
group.initial.rebalance.delay.ms = 0
offsets.topic.num.partitions = 5
group.consumer.heartbeat.interval.ms = 100
group.consumer.min.heartbeat.interval.ms = 100
`

func TestConsumerGroupRangeBalancer(t *testing.T) {
	testConsumerGroup(t, kgo.Balancers(kgo.RangeBalancer()))
}

func TestConsumerGroupCooperativeSticky(t *testing.T) {
	testConsumerGroup(t) // kgo's default: cooperative-sticky
}

func TestConsumerGroupRoundRobin(t *testing.T) {
	testConsumerGroup(t, kgo.Balancers(kgo.RoundRobinBalancer()))
}

// TestConsumerGroupSticky is the eager sticky assignor: every rebalance
// revokes everything, and the assignment is computed from the owners the
// members report.
func TestConsumerGroupSticky(t *testing.T) {
	testConsumerGroup(t, kgo.Balancers(kgo.StickyBalancer()))
}

// TestConsumerGroupKIP848 runs the same scenario with KIP-848: the
// broker assigns (uniform, franz-go's StickyBalancer; range), members
// reconcile through ConsumerGroupHeartbeat, and a member's generation is
// its member epoch.
func TestConsumerGroupKIP848(t *testing.T) {
	t.Run("uniform", func(t *testing.T) {
		testConsumerGroup(t, kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer())
	})
	t.Run("range", func(t *testing.T) {
		testConsumerGroup(t, kgo.Balancers(kgo.RangeBalancer()), kgo.ServerSideBalancer())
	})
}

// spreadProducer writes numbered records round-robin over a topic's
// partitions, from any goroutine.
type spreadProducer struct {
	cl         *kgo.Client
	partitions int
	mu         sync.Mutex
	produced   int
}

func newSpreadProducer(t *testing.T, b *Broker, topic string, partitions int) *spreadProducer {
	cl, _ := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	return &spreadProducer{cl: cl, partitions: partitions}
}

// produce writes the next n records and waits for their acks.
func (p *spreadProducer) produce(ctx context.Context, n int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Partition: int32(p.produced % p.partitions), Value: []byte(strconv.Itoa(p.produced))}
		p.produced++
	}
	return p.cl.ProduceSync(ctx, recs...).FirstErr()
}

// background produces batches of n until the returned stop is called;
// stop returns the first error.
func (p *spreadProducer) background(ctx context.Context, n int) (stop func() error) {
	quit := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for {
			select {
			case <-quit:
				done <- nil
				return
			default:
			}
			if err := p.produce(ctx, n); err != nil {
				done <- err
				return
			}
		}
	}()
	return func() error {
		close(quit)
		return <-done
	}
}

// total is how many records were produced.
func (p *spreadProducer) total() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.produced
}

// groupWatch records what every member of a group consumed and owned.
type groupWatch struct {
	t  *testing.T
	mu sync.Mutex
	// consumed counts deliveries per partition and offset: exactly once
	// means every count is 1.
	consumed map[int32]map[int64]int
	total    int // distinct records consumed
	// owned is each live member's partitions now.
	owned map[string][]int32
	// byGeneration is each member's partitions as of each generation in
	// which it was assigned some.
	byGeneration map[int32]map[string][]int32
	progress     chan struct{} // signalled on each poll with records
}

func newGroupWatch(t *testing.T) *groupWatch {
	return &groupWatch{t: t, consumed: map[int32]map[int64]int{}, owned: map[string][]int32{},
		byGeneration: map[int32]map[string][]int32{}, progress: make(chan struct{}, 1)}
}

func (w *groupWatch) assigned(name string, cl *kgo.Client, ps []int32) {
	member, generation := cl.GroupMetadata()
	w.mu.Lock()
	defer w.mu.Unlock()
	for other, theirs := range w.owned {
		if other == name {
			continue
		}
		for _, p := range ps {
			if slices.Contains(theirs, p) {
				w.t.Errorf("generation %d: %s (%s) assigned partition %d that %s still owns", generation, name, member, p, other)
			}
		}
	}
	mine := append(slices.Clone(w.owned[name]), ps...)
	slices.Sort(mine)
	w.owned[name] = slices.Compact(mine)
	if w.byGeneration[generation] == nil {
		w.byGeneration[generation] = map[string][]int32{}
	}
	w.byGeneration[generation][name] = slices.Clone(w.owned[name])
}

func (w *groupWatch) revoked(name string, ps []int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.owned[name] = slices.DeleteFunc(w.owned[name], func(p int32) bool { return slices.Contains(ps, p) })
}

func (w *groupWatch) record(r *kgo.Record) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.consumed[r.Partition]
	if m == nil {
		m = map[int64]int{}
		w.consumed[r.Partition] = m
	}
	m[r.Offset]++
	if m[r.Offset] == 1 {
		w.total++
	} else {
		w.t.Errorf("partition %d offset %d consumed %d times", r.Partition, r.Offset, m[r.Offset])
	}
}

func (w *groupWatch) consumedTotal() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.total
}

// waitConsumed waits until n distinct records were consumed.
func (w *groupWatch) waitConsumed(ctx context.Context, n int) {
	w.t.Helper()
	for w.consumedTotal() < n {
		select {
		case <-w.progress:
		case <-ctx.Done():
			w.t.Fatalf("consumed %d records, want %d: %v", w.consumedTotal(), n, ctx.Err())
		}
	}
}

// waitOwners waits until exactly the members named own all partitions
// between them.
func (w *groupWatch) waitOwners(ctx context.Context, partitions int, names ...string) {
	w.t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		w.mu.Lock()
		n, ok := 0, true
		for m, ps := range w.owned {
			if len(ps) > 0 && !slices.Contains(names, m) {
				ok = false
			}
			n += len(ps)
		}
		for _, m := range names {
			if len(w.owned[m]) == 0 {
				ok = false
			}
		}
		owned := fmt.Sprint(w.owned)
		w.mu.Unlock()
		if ok && n == partitions {
			return
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			w.t.Fatalf("owners %s, want %v over %d partitions", owned, names, partitions)
		case <-ctx.Done():
			w.t.Fatalf("owners %s, want %v: %v", owned, names, ctx.Err())
		}
	}
}

func (w *groupWatch) generations() []int32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var gs []int32
	for g := range w.byGeneration {
		gs = append(gs, g)
	}
	slices.Sort(gs)
	return gs
}

// checkGenerations fails if two members owned a partition in one
// generation.
func (w *groupWatch) checkGenerations() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for g, members := range w.byGeneration {
		seen := map[int32]string{}
		for m, ps := range members {
			for _, p := range ps {
				if other, ok := seen[p]; ok {
					w.t.Errorf("generation %d: partition %d owned by %s and %s", g, p, other, m)
				}
				seen[p] = m
			}
		}
	}
}

// groupMember is one consuming client of the test's group.
type groupMember struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

// startMember runs a consumer of group on topic until stopped. Records are
// processed (recorded) within the poll, and rebalances wait for that
// (BlockRebalanceOnPoll), so a revoke's commit covers everything handed
// out: nothing is consumed twice.
func startMember(t *testing.T, b *Broker, w *groupWatch, name, group, topic string, opts ...kgo.Opt) *groupMember {
	t.Helper()
	var cl *kgo.Client
	// closing is set when the test's cleanup closes the member. Close
	// cancels a heartbeat that is waiting to retry after a coordinator
	// error (NOT_COORDINATOR, from before a coordinator moved back), and
	// the client then reports that error as a lost session, though the
	// coordinator still holds the member: only a loss while the member
	// runs is one.
	var closing atomic.Bool
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(b.Addr().String()),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ClientID(name),
		kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(200 * time.Millisecond),
		kgo.RebalanceTimeout(20 * time.Second),
		kgo.AutoCommitInterval(300 * time.Millisecond),
		kgo.RequestTimeoutOverhead(10 * time.Second),
		kgo.OnPartitionsAssigned(func(_ context.Context, c *kgo.Client, m map[string][]int32) {
			w.assigned(name, c, m[topic])
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, c *kgo.Client, m map[string][]int32) {
			// Commit before the partitions go: every polled record was
			// processed in its poll.
			if err := c.CommitUncommittedOffsets(ctx); err != nil {
				t.Errorf("%s: commit on revoke: %v", name, err)
			}
			w.revoked(name, m[topic])
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			if closing.Load() {
				t.Logf("%s: partitions %v reported lost by its close", name, m[topic])
			} else {
				t.Errorf("%s lost partitions %v", name, m[topic])
			}
			w.revoked(name, m[topic])
		}),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gm := &groupMember{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(gm.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachError(func(topic string, p int32, err error) {
				if ctx.Err() == nil {
					t.Errorf("%s: fetch %s/%d: %v", name, topic, p, err)
				}
			})
			n := 0
			fs.EachRecord(func(r *kgo.Record) { w.record(r); n++ })
			cl.AllowRebalance()
			if n > 0 {
				select {
				case w.progress <- struct{}{}:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() { gm.stop(); closing.Store(true); cl.Close() })
	return gm
}

// stop ends the poll loop; the client stays in the group.
func (gm *groupMember) stop() {
	gm.cancel()
	<-gm.done
}

func testConsumerGroup(t *testing.T, balancer ...kgo.Opt) {
	const (
		topic      = "events"
		group      = "readers"
		partitions = 12
		perPhase   = 600
	)
	dir := t.TempDir()
	cfg := testConfig(t, dir, groupsTestConfig)
	b := startBroker(t, cfg)
	ctx := testContext(t)
	_, adm := newClient(t, b)
	createTopic(t, adm, topic, partitions, nil)
	producer := newSpreadProducer(t, b, topic, partitions)
	produceN := func(n int) error { return producer.produce(ctx, n) }
	if err := produceN(perPhase); err != nil {
		t.Fatal(err)
	}

	w := newGroupWatch(t)
	members := map[string]*groupMember{}
	for i := range 4 {
		name := fmt.Sprintf("m%d", i)
		members[name] = startMember(t, b, w, name, group, topic, balancer...)
	}
	w.waitOwners(ctx, partitions, "m0", "m1", "m2", "m3")
	w.waitConsumed(ctx, perPhase)

	// Records keep coming while members join and leave.
	stopProducing := producer.background(ctx, 12)
	// A fifth member joins mid-stream.
	members["m4"] = startMember(t, b, w, "m4", group, topic, balancer...)
	w.waitOwners(ctx, partitions, "m0", "m1", "m2", "m3", "m4")
	// One leaves mid-stream: Close commits in the revoke, then leaves.
	members["m1"].stop()
	members["m1"].cl.Close()
	delete(members, "m1")
	w.waitOwners(ctx, partitions, "m0", "m2", "m3", "m4")
	if err := stopProducing(); err != nil {
		t.Fatal(err)
	}
	total := producer.total()
	w.waitConsumed(ctx, total)
	t.Logf("%d records, generations %v", total, w.generations())
	if len(w.generations()) < 3 {
		t.Fatalf("generations %v: want at least 3 (start, join, leave)", w.generations())
	}

	// Everyone commits what it processed, then the group is compared with
	// the log ends.
	for name, m := range members {
		m.stop()
		if err := m.cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("%s: final commit: %v", name, err)
		}
	}
	w.checkGenerations()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	checkCommitted := func(adm *kadm.Client, when string) {
		t.Helper()
		committed, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		n := 0
		ends.Each(func(e kadm.ListedOffset) {
			c, ok := committed.Lookup(e.Topic, e.Partition)
			if !ok || c.Err != nil || c.At != e.Offset {
				t.Errorf("%s: %s/%d committed %+v, end offset %d", when, e.Topic, e.Partition, c, e.Offset)
			}
			n++
		})
		if n != partitions {
			t.Fatalf("%s: %d end offsets, want %d", when, n, partitions)
		}
	}
	checkCommitted(adm, "before restart")
	for name, m := range members {
		m.cl.Close()
		delete(members, name)
	}
	if got := w.consumedTotal(); got != total {
		t.Fatalf("consumed %d distinct records, produced %d", got, total)
	}

	// The committed offsets survive a restart: the coordinator reloads
	// them from __consumer_offsets.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2 := startBroker(t, cfg)
	_, adm2 := newClient(t, b2)
	checkCommitted(adm2, "after restart")
	// Every member left: the group is back Empty (ListGroups reports
	// classic and KIP-848 groups alike).
	listed, err := adm2.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := listed[group]; !ok || d.State != "Empty" {
		t.Fatalf("after restart: group %+v", d)
	}
}

// TestGroupAPIsAtOldAndNewVersions drives one group by hand through the
// classic APIs at their oldest versions, and the administrative ones
// (commits outside group management, multi-group OffsetFetch, ListGroups
// with a state filter, DescribeGroups, DeleteGroups) through kadm.
func TestGroupAPIsAtOldAndNewVersions(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir(), groupsTestConfig))
	ctx := testContext(t)
	_, adm := newClient(t, b)
	createTopic(t, adm, "t", 3, nil)

	// Commits from outside group management.
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "t", Partition: 0, At: 5, LeaderEpoch: -1})
	os.Add(kadm.Offset{Topic: "t", Partition: 1, At: 7, LeaderEpoch: -1, Metadata: "m"})
	os.Add(kadm.Offset{Topic: "t", Partition: 9, At: 1, LeaderEpoch: -1})
	os.Add(kadm.Offset{Topic: "nope", Partition: 0, At: 1, LeaderEpoch: -1})
	cr, err := adm.CommitOffsets(ctx, "admin", os)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		topic     string
		partition int32
		want      *kerr.Error
	}{{"t", 0, nil}, {"t", 1, nil}, {"t", 9, kerr.UnknownTopicOrPartition}, {"nope", 0, kerr.UnknownTopicOrPartition}} {
		r, ok := cr.Lookup(c.topic, c.partition)
		if !ok {
			t.Fatalf("commit %s/%d: no result", c.topic, c.partition)
		}
		wantErr(t, fmt.Sprintf("commit %s/%d", c.topic, c.partition), r.Err, c.want)
	}

	// OffsetFetch v8, several groups in one request.
	many := adm.FetchManyOffsets(ctx, "admin", "missing")
	if err := many.Error(); err != nil {
		t.Fatal(err)
	}
	got := many["admin"].Fetched
	if o, _ := got.Lookup("t", 0); o.At != 5 {
		t.Fatalf("admin t/0: %+v", o)
	}
	if o, _ := got.Lookup("t", 1); o.At != 7 || o.Metadata != "m" {
		t.Fatalf("admin t/1: %+v", o)
	}
	if n := len(many["missing"].Fetched.Offsets()); n != 0 {
		t.Fatalf("missing group has %d offsets", n)
	}
	// OffsetFetch v1: named partitions, -1 for none committed.
	f1 := kmsg.NewPtrOffsetFetchRequest()
	f1.Group = "admin"
	f1.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0, 2}}}
	fr := direct[*kmsg.OffsetFetchResponse](t, pinned(t, b, kmsg.OffsetFetch, 1), f1)
	if fr.Version != 1 || len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 2 ||
		fr.Topics[0].Partitions[0].Offset != 5 || fr.Topics[0].Partitions[1].Offset != -1 {
		t.Fatalf("OffsetFetch v1: %+v", fr)
	}

	// A one-member group at v0 of JoinGroup, SyncGroup, Heartbeat,
	// LeaveGroup, and OffsetCommit v2.
	j := kmsg.NewPtrJoinGroupRequest()
	j.Group, j.SessionTimeoutMillis, j.ProtocolType = "old", 10000, "wren-test"
	j.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "p", Metadata: []byte("meta")}}
	jr := direct[*kmsg.JoinGroupResponse](t, pinned(t, b, kmsg.JoinGroup, 0), j)
	if jr.Version != 0 || jr.ErrorCode != 0 || jr.Generation != 1 || jr.LeaderID != jr.MemberID || len(jr.Members) != 1 ||
		jr.Protocol == nil || *jr.Protocol != "p" {
		t.Fatalf("JoinGroup v0: %+v", jr)
	}
	s := kmsg.NewPtrSyncGroupRequest()
	s.Group, s.Generation, s.MemberID = "old", jr.Generation, jr.MemberID
	s.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: jr.MemberID, MemberAssignment: []byte("assigned")}}
	sr := direct[*kmsg.SyncGroupResponse](t, pinned(t, b, kmsg.SyncGroup, 0), s)
	if sr.ErrorCode != 0 || string(sr.MemberAssignment) != "assigned" {
		t.Fatalf("SyncGroup v0: %+v", sr)
	}
	h := kmsg.NewPtrHeartbeatRequest()
	h.Group, h.Generation, h.MemberID = "old", jr.Generation, jr.MemberID
	wantCode(t, "Heartbeat v0", direct[*kmsg.HeartbeatResponse](t, pinned(t, b, kmsg.Heartbeat, 0), h).ErrorCode, nil)
	h.Generation++
	wantCode(t, "Heartbeat v0, stale generation", direct[*kmsg.HeartbeatResponse](t, pinned(t, b, kmsg.Heartbeat, 0), h).ErrorCode, kerr.IllegalGeneration)
	c := kmsg.NewPtrOffsetCommitRequest()
	c.Group, c.Generation, c.MemberID, c.RetentionTimeMillis = "old", jr.Generation, jr.MemberID, -1
	c.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 2, Offset: 11}}}}
	ocr := direct[*kmsg.OffsetCommitResponse](t, pinned(t, b, kmsg.OffsetCommit, 2), c)
	wantCode(t, "OffsetCommit v2", ocr.Topics[0].Partitions[0].ErrorCode, nil)

	listed, err := adm.ListGroups(ctx, "Stable")
	if err != nil {
		t.Fatal(err)
	}
	if names := listed.Groups(); !slices.Equal(names, []string{"old"}) {
		t.Fatalf("Stable groups %v, want [old]", names)
	}
	lg := direct[*kmsg.ListGroupsResponse](t, pinned(t, b, kmsg.ListGroups, 0), kmsg.NewPtrListGroupsRequest())
	if len(lg.Groups) != 2 {
		t.Fatalf("ListGroups v0: %+v", lg.Groups)
	}
	described, err := adm.DescribeGroups(ctx, "old", "missing")
	if err != nil {
		t.Fatal(err)
	}
	if d := described["old"]; d.State != "Stable" || len(d.Members) != 1 || d.Members[0].MemberID != jr.MemberID || d.Protocol != "p" {
		t.Fatalf("described %+v", d)
	}
	if d := described["missing"]; d.State != "Dead" || d.Err != nil {
		t.Fatalf("described missing %+v", d)
	}
	deleted, err := adm.DeleteGroups(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, "delete a Stable group", deleted["old"].Err, kerr.NonEmptyGroup)

	l := kmsg.NewPtrLeaveGroupRequest()
	l.Group, l.MemberID = "old", jr.MemberID
	wantCode(t, "LeaveGroup v0", direct[*kmsg.LeaveGroupResponse](t, pinned(t, b, kmsg.LeaveGroup, 0), l).ErrorCode, nil)
	wantCode(t, "LeaveGroup v0 again", direct[*kmsg.LeaveGroupResponse](t, pinned(t, b, kmsg.LeaveGroup, 0), l).ErrorCode, kerr.UnknownMemberID)
	deleted, err = adm.DeleteGroups(ctx, "old", "admin")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"old", "admin"} {
		wantErr(t, "delete "+g, deleted[g].Err, nil)
	}
	after, err := adm.FetchOffsets(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(after.Offsets()); n != 0 {
		t.Fatalf("deleted group has %d offsets", n)
	}
}

// TestOffsetCommitNotDurable fails the fdatasync of __consumer_offsets: the
// commit is answered with an error, never with success, and the
// coordinator, rebuilt from what is durable, still has the previous
// offset.
func TestOffsetCommitNotDurable(t *testing.T) {
	fs := vfs.NewFaultFS(vfs.NewOS())
	cfg := testConfig(t, t.TempDir(), groupsTestConfig)
	b, err := Start(cfg, Options{FS: fs, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	cl, adm := newClient(t, b)
	createTopic(t, adm, "t", 1, nil)
	commit := func(offset int64) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = "g", -1
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}}}
		return direct[*kmsg.OffsetCommitResponse](t, cl, req).Topics[0].Partitions[0].ErrorCode
	}
	wantCode(t, "commit 5", commit(5), nil)
	fs.Inject(vfs.Fault{Op: vfs.OpSyncData, Path: func(name string) bool { return strings.Contains(name, "__consumer_offsets-") }})
	if code := commit(9); code != kerr.CoordinatorNotAvailable.Code && code != kerr.NotCoordinator.Code {
		t.Fatalf("commit 9 with a failing fdatasync: error %d (%v)", code, kerr.ErrorForCode(code))
	}
	if fs.Fired() == 0 {
		t.Fatal("no fdatasync of __consumer_offsets failed")
	}
	// The coordinator is rebuilt on a later tick; until then NOT_COORDINATOR.
	deadline := time.Now().Add(20 * time.Second)
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	for {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}}
		resp := direct[*kmsg.OffsetFetchResponse](t, cl, req)
		g := resp.Groups[0]
		if g.ErrorCode == 0 {
			if len(g.Topics) != 1 || len(g.Topics[0].Partitions) != 1 || g.Topics[0].Partitions[0].Offset != 5 {
				t.Fatalf("after the failed commit: %+v", g.Topics)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("OffsetFetch still fails: %v", kerr.ErrorForCode(g.ErrorCode))
		}
		<-poll.C // polling with a deadline: the reload is a timer's work
	}
}

// TestStableGroupSurvivesRestart: a Stable group's generation, members and
// assignments come back from __consumer_offsets, so its member's next
// heartbeat after a restart is accepted without a rebalance.
func TestStableGroupSurvivesRestart(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), groupsTestConfig)
	b := startBroker(t, cfg)
	cl, _ := newClient(t, b)
	j := kmsg.NewPtrJoinGroupRequest()
	j.Group, j.SessionTimeoutMillis, j.RebalanceTimeoutMillis, j.ProtocolType = "kept", 30000, 30000, "wren-test"
	j.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "p", Metadata: []byte("meta")}}
	jr := direct[*kmsg.JoinGroupResponse](t, cl, j)
	if kerr.ErrorForCode(jr.ErrorCode) == kerr.MemberIDRequired {
		j.MemberID = jr.MemberID
		jr = direct[*kmsg.JoinGroupResponse](t, cl, j)
	}
	wantCode(t, "join", jr.ErrorCode, nil)
	s := kmsg.NewPtrSyncGroupRequest()
	s.Group, s.Generation, s.MemberID = "kept", jr.Generation, jr.MemberID
	s.ProtocolType, s.Protocol = kmsg.StringPtr("wren-test"), kmsg.StringPtr("p")
	s.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: jr.MemberID, MemberAssignment: []byte("mine")}}
	sr := direct[*kmsg.SyncGroupResponse](t, cl, s)
	if sr.ErrorCode != 0 || string(sr.MemberAssignment) != "mine" || deref(sr.Protocol) != "p" {
		t.Fatalf("sync: %+v", sr)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b2 := startBroker(t, cfg)
	cl2, adm2 := newClient(t, b2)
	ctx := testContext(t)
	described, err := adm2.DescribeGroups(ctx, "kept")
	if err != nil {
		t.Fatal(err)
	}
	d := described["kept"]
	if d.State != "Stable" || len(d.Members) != 1 || d.Members[0].MemberID != jr.MemberID {
		t.Fatalf("after restart: %+v", d)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"kept"}
	if got := direct[*kmsg.DescribeGroupsResponse](t, cl2, dg).Groups[0]; len(got.Members) != 1 || string(got.Members[0].MemberAssignment) != "mine" {
		t.Fatalf("after restart, described raw: %+v", got)
	}
	h := kmsg.NewPtrHeartbeatRequest()
	h.Group, h.Generation, h.MemberID = "kept", jr.Generation, jr.MemberID
	wantCode(t, "heartbeat after restart", direct[*kmsg.HeartbeatResponse](t, cl2, h).ErrorCode, nil)
}
