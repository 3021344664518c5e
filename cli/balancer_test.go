package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups/assign"
)

func mustAssignBalancer(t *testing.T, name string) *assignBalancer {
	t.Helper()
	b, err := newAssignBalancer(name)
	if err != nil {
		t.Fatalf("newAssignBalancer(%q): %v", name, err)
	}
	return b
}

func TestAssignBalancerNames(t *testing.T) {
	for _, name := range classicAssignors {
		b := mustAssignBalancer(t, name)
		if b.ProtocolName() != name {
			t.Errorf("ProtocolName() = %q, want %q", b.ProtocolName(), name)
		}
		if got, want := b.IsCooperative(), name == assign.CooperativeStickyName; got != want {
			t.Errorf("%s: IsCooperative() = %v, want %v", name, got, want)
		}
	}
	for _, bad := range []string{"", "uniform", "best", "Range"} {
		if _, err := newAssignBalancer(bad); !errors.Is(err, ErrUnknownAssignor) {
			t.Errorf("newAssignBalancer(%q): %v, want ErrUnknownAssignor", bad, err)
		}
	}
}

// consume --group --protocol classic offers wren's own assignor, and only
// it; --protocol consumer keeps franz-go's names for the broker's.
func TestConsumerGroupOptsBalancer(t *testing.T) {
	for _, tc := range []struct{ protocol, assignor, want string }{
		{protocolClassic, "", assign.CooperativeStickyName},
		{protocolClassic, "range", "range"},
		{protocolClassic, "roundrobin", "roundrobin"},
		{protocolClassic, "sticky", "sticky"},
		{protocolClassic, "cooperative-sticky", "cooperative-sticky"},
		{protocolConsumer, "range", "range"},
		{protocolConsumer, "", "sticky"}, // franz-go's StickyBalancer names "uniform"
	} {
		opts, err := consumerGroupOpts("g", tc.protocol, tc.assignor)
		if err != nil {
			t.Fatalf("consumerGroupOpts(%s, %q): %v", tc.protocol, tc.assignor, err)
		}
		// The client is never used: no connection is made before a
		// request.
		cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers("127.0.0.1:1"))...)
		if err != nil {
			t.Fatal(err)
		}
		bs, _ := cl.OptValue(kgo.Balancers).([]kgo.GroupBalancer)
		cl.Close()
		if len(bs) != 1 || bs[0].ProtocolName() != tc.want {
			t.Fatalf("%s %q: balancers %v, want one named %s", tc.protocol, tc.assignor, bs, tc.want)
		}
		_, ours := bs[0].(*assignBalancer)
		if ours != (tc.protocol == protocolClassic) {
			t.Errorf("%s %q: balancer %T", tc.protocol, tc.assignor, bs[0])
		}
	}
	for _, tc := range [][2]string{{protocolClassic, "uniform"}, {protocolClassic, "best"}, {protocolConsumer, "roundrobin"}} {
		if _, err := consumerGroupOpts("g", tc[0], tc[1]); !errors.Is(err, ErrUsage) {
			t.Errorf("consumerGroupOpts(%s, %q): %v, want a usage error", tc[0], tc[1], err)
		}
	}
}

// JoinGroupMetadata writes what the Java client writes for the protocol:
// read back by groups/assign, the sticky protocols claim the current
// assignment at its generation, the eager range and roundrobin nothing.
func TestAssignBalancerJoinGroupMetadata(t *testing.T) {
	current := map[string][]int32{"b": {1}, "a": {0, 2}}
	owned := []assign.TopicPartition{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 2}, {Topic: "b", Partition: 1}}
	for _, name := range classicAssignors {
		t.Run(name, func(t *testing.T) {
			b := mustAssignBalancer(t, name)
			claims := name == assign.StickyName || name == assign.CooperativeStickyName
			for _, tc := range []struct {
				current    map[string][]int32
				generation int32
				want       []assign.TopicPartition
			}{
				{current, 7, owned},
				{nil, assign.DefaultGeneration, nil}, // a first join
			} {
				meta := b.JoinGroupMetadata([]string{"a", "b"}, maps.Clone(tc.current), tc.generation)
				m, err := assign.DecodeSubscription(name, "m1", "", meta)
				if err != nil {
					t.Fatalf("DecodeSubscription: %v", err)
				}
				want := tc.want
				if !claims {
					want = nil
				}
				if !slices.Equal(m.Topics, []string{"a", "b"}) || !slices.Equal(sortedTPs(m.Owned), want) || m.Generation != tc.generation {
					t.Errorf("decoded %+v, want topics [a b], owned %v, generation %d", m, want, tc.generation)
				}
				// Every reader first parses the ConsumerProtocolSubscription;
				// the newest version carries the generation.
				var km kmsg.ConsumerMemberMetadata
				if err := km.ReadFrom(meta); err != nil || km.Version != assign.SubscriptionVersion || km.Generation != tc.generation {
					t.Errorf("kmsg reads version %d generation %d: %v", km.Version, km.Generation, err)
				}
			}
		})
	}
}

// An eager sticky member claims its last assignment at the generation it
// was assigned in, although franz-go passes it none after revoking
// everything: what Kafka's StickyAssignor remembers in onAssignment.
func TestAssignBalancerStickyRemembers(t *testing.T) {
	b := mustAssignBalancer(t, assign.StickyName)
	decode := func(meta []byte) assign.Member {
		t.Helper()
		m, err := assign.DecodeSubscription(assign.StickyName, "m", "", meta)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	tps := func(ps ...int32) []assign.TopicPartition {
		var out []assign.TopicPartition
		for _, p := range ps {
			out = append(out, assign.TopicPartition{Topic: "a", Partition: p})
		}
		return out
	}
	// First join: nothing to claim. The join gives generation 3.
	if m := decode(b.JoinGroupMetadata([]string{"a"}, nil, assign.DefaultGeneration)); len(m.Owned) != 0 || m.Generation != assign.DefaultGeneration {
		t.Errorf("first join claims %v at %d", m.Owned, m.Generation)
	}
	if _, err := b.ParseSyncAssignment(assign.EncodeAssignment(tps(2, 0))); err != nil {
		t.Fatal(err)
	}
	// The rejoin after an eager revoke: franz-go passes nothing, and the
	// generation of the join whose sync assigned [0 2].
	if m := decode(b.JoinGroupMetadata([]string{"a"}, nil, 3)); !slices.Equal(sortedTPs(m.Owned), tps(0, 2)) || m.Generation != 3 {
		t.Errorf("rejoin claims %v at %d, want [a-0 a-2] at 3", m.Owned, m.Generation)
	}
	// That join (generation 4) fails to sync: the claim keeps its own
	// generation.
	if m := decode(b.JoinGroupMetadata([]string{"a"}, nil, 4)); !slices.Equal(sortedTPs(m.Owned), tps(0, 2)) || m.Generation != 3 {
		t.Errorf("rejoin after a failed sync claims %v at %d, want [a-0 a-2] at 3", m.Owned, m.Generation)
	}
	// A current assignment, when franz-go passes one, wins.
	if m := decode(b.JoinGroupMetadata([]string{"a"}, map[string][]int32{"a": {1}}, 5)); !slices.Equal(m.Owned, tps(1)) || m.Generation != 5 {
		t.Errorf("join with a current assignment claims %v at %d, want [a-1] at 5", m.Owned, m.Generation)
	}
	// Only sticky remembers.
	rr := mustAssignBalancer(t, assign.RoundRobinName)
	if _, err := rr.ParseSyncAssignment(assign.EncodeAssignment(tps(1))); err != nil {
		t.Fatal(err)
	}
	if m, _ := assign.DecodeSubscription(assign.RoundRobinName, "m", "", rr.JoinGroupMetadata([]string{"a"}, nil, 3)); len(m.Owned) != 0 {
		t.Errorf("roundrobin claims %v", m.Owned)
	}
}

func sortedTPs(tps []assign.TopicPartition) []assign.TopicPartition {
	if len(tps) == 0 {
		return nil
	}
	out := slices.Clone(tps)
	slices.SortFunc(out, func(a, b assign.TopicPartition) int {
		switch {
		case a.Less(b):
			return -1
		case b.Less(a):
			return 1
		}
		return 0
	})
	return out
}

// joinedMembers is what a JoinGroup response gives the leader for members.
func joinedMembers(protocol string, members []assign.Member) []kmsg.JoinGroupResponseMember {
	out := make([]kmsg.JoinGroupResponseMember, len(members))
	for i, m := range members {
		out[i] = kmsg.NewJoinGroupResponseMember()
		out[i].MemberID = m.MemberID
		if m.InstanceID != "" {
			out[i].InstanceID = ptr(m.InstanceID)
		}
		out[i].ProtocolMetadata = assign.EncodeSubscription(protocol, m)
	}
	return out
}

// balanceAsLeader runs b as franz-go does when it leads: MemberBalancer,
// then BalanceOrError, then the SyncGroup assignments, decoded again.
func balanceAsLeader(b *assignBalancer, joined []kmsg.JoinGroupResponseMember, counts map[string]int32) (assign.GroupAssignment, map[string]struct{}, error) {
	mb, topics, err := b.MemberBalancer(joined)
	if err != nil {
		return nil, nil, err
	}
	into, err := mb.(kgo.GroupMemberBalancerOrError).BalanceOrError(counts)
	if err != nil {
		return nil, topics, err
	}
	got := assign.GroupAssignment{}
	syncs := into.IntoSyncAssignment()
	for i, sa := range syncs {
		if i > 0 && syncs[i-1].MemberID >= sa.MemberID {
			return nil, topics, fmt.Errorf("sync assignments not sorted by member: %q then %q", syncs[i-1].MemberID, sa.MemberID)
		}
		tps, err := assign.DecodeAssignment(sa.MemberAssignment)
		if err != nil {
			return nil, topics, fmt.Errorf("member %s: %w", sa.MemberID, err)
		}
		// The member's own view goes through ParseSyncAssignment.
		parsed, err := b.ParseSyncAssignment(sa.MemberAssignment)
		if err != nil {
			return nil, topics, fmt.Errorf("member %s: ParseSyncAssignment: %w", sa.MemberID, err)
		}
		n := 0
		for _, ps := range parsed {
			n += len(ps)
		}
		if n != len(tps) {
			return nil, topics, fmt.Errorf("member %s: ParseSyncAssignment has %d partitions, the assignment %d", sa.MemberID, n, len(tps))
		}
		got[sa.MemberID] = sortedTPs(tps)
	}
	return got, topics, nil
}

// The leader's result is the assignor's, computed directly on the same
// members: nothing is lost or added between the bytes and groups/assign.
func TestAssignBalancerBalance(t *testing.T) {
	tp := func(topic string, p int32) assign.TopicPartition {
		return assign.TopicPartition{Topic: topic, Partition: p}
	}
	// m1 and s2 claim what they owned in generation 4; m3 is new.
	members := []assign.Member{
		{MemberID: "m3", Topics: []string{"b", "c"}, Generation: assign.DefaultGeneration},
		{MemberID: "m1", Topics: []string{"a", "b"}, Generation: 4,
			Owned: []assign.TopicPartition{tp("a", 0), tp("a", 1), tp("a", 2), tp("b", 0), tp("b", 1)}},
		{MemberID: "s2", InstanceID: "instance-2", Rack: "r1", Topics: []string{"a"}, Generation: 4,
			Owned: []assign.TopicPartition{tp("a", 3)}},
	}
	counts := map[string]int32{"a": 4, "b": 3, "c": 2}
	for _, name := range classicAssignors {
		t.Run(name, func(t *testing.T) {
			b := mustAssignBalancer(t, name)
			got, topics, err := balanceAsLeader(b, joinedMembers(name, members), counts)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string]struct{}{"a": {}, "b": {}, "c": {}}; !maps.Equal(topics, want) {
				t.Errorf("MemberBalancer topics %v, want %v", topics, want)
			}
			assignor, _ := assign.ByName(name)
			want, err := assignor(members, []assign.Topic{{Name: "a", Partitions: 4}, {Name: "b", Partitions: 3}, {Name: "c", Partitions: 2}})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("assignment for %d members, want %d: %v", len(got), len(want), got)
			}
			total := 0
			for id, w := range want {
				total += len(got[id])
				if !slices.Equal(got[id], sortedTPs(w)) {
					t.Errorf("member %s assigned %v, the assignor gives %v", id, got[id], w)
				}
			}
			// Cooperative-sticky withholds what moves; the others assign all.
			if name != assign.CooperativeStickyName && total != 9 {
				t.Errorf("%d partitions assigned, want 9: %v", total, got)
			}
		})
	}
}

// A malformed or hostile JoinGroup member list is an error from
// MemberBalancer or BalanceOrError, which fails the join; it never panics.
func TestAssignBalancerMalformed(t *testing.T) {
	good := assign.EncodeSubscription(assign.StickyName, assign.Member{Topics: []string{"a"}})
	// StickyAssignorUserData claiming 2^30 topics in a few bytes.
	hostileSticky := kmsg.NewConsumerMemberMetadata()
	hostileSticky.Version = 3
	hostileSticky.Topics = []string{"a"}
	hostileSticky.UserData = []byte{0x40, 0, 0, 0, 0, 1, 'a'}
	negative := kmsg.NewConsumerMemberMetadata()
	negative.Version = 3
	negative.Topics = []string{"a"}
	negative.OwnedPartitions = []kmsg.ConsumerMemberMetadataOwnedPartition{{Topic: "a", Partitions: []int32{-1}}}
	for _, tc := range []struct {
		name     string
		protocol string
		meta     []byte
		want     error
	}{
		{"empty", assign.RangeName, nil, assign.ErrMalformedMetadata},
		{"truncated", assign.RoundRobinName, good[:len(good)-3], assign.ErrMalformedMetadata},
		{"negative version", assign.RangeName, []byte{0xff, 0xff, 0, 0, 0, 0}, assign.ErrMalformedMetadata},
		{"too large", assign.RangeName, make([]byte, assign.MaxMetadataBytes+1), assign.ErrMetadataTooLarge},
		{"sticky user data counts", assign.StickyName, hostileSticky.AppendTo(nil), assign.ErrMalformedMetadata},
		{"negative owned partition", assign.CooperativeStickyName, negative.AppendTo(nil), assign.ErrMalformedMetadata},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := mustAssignBalancer(t, tc.protocol)
			joined := []kmsg.JoinGroupResponseMember{
				{MemberID: "ok", ProtocolMetadata: assign.EncodeSubscription(tc.protocol, assign.Member{Topics: []string{"a"}})},
				{MemberID: "bad-member", ProtocolMetadata: tc.meta},
			}
			mb, _, err := b.MemberBalancer(joined)
			if !errors.Is(err, tc.want) || mb != nil {
				t.Fatalf("MemberBalancer: %v (balancer %v), want %v", err, mb, tc.want)
			}
			if !strings.Contains(err.Error(), "bad-member") {
				t.Errorf("error %q does not name the member", err)
			}
		})
	}

	t.Run("duplicate member", func(t *testing.T) {
		b := mustAssignBalancer(t, assign.RangeName)
		m := assign.Member{MemberID: "twice", Topics: []string{"a"}}
		joined := joinedMembers(assign.RangeName, []assign.Member{m, m})
		mb, _, err := b.MemberBalancer(joined)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mb.(kgo.GroupMemberBalancerOrError).BalanceOrError(map[string]int32{"a": 2}); !errors.Is(err, assign.ErrDuplicateMember) {
			t.Errorf("BalanceOrError: %v, want ErrDuplicateMember", err)
		}
		// franz-go reports a nil plan from Balance as a failed balance.
		if into := mb.Balance(map[string]int32{"a": 2}); into != nil {
			t.Errorf("Balance of a failing assignment = %v, want nil", into)
		}
	})
	t.Run("too many partitions", func(t *testing.T) {
		b := mustAssignBalancer(t, assign.StickyName)
		mb, _, err := b.MemberBalancer(joinedMembers(assign.StickyName, []assign.Member{{MemberID: "m", Topics: []string{"a"}}}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mb.(kgo.GroupMemberBalancerOrError).BalanceOrError(map[string]int32{"a": assign.MaxPartitions + 1}); !errors.Is(err, assign.ErrTooManyPartitions) {
			t.Errorf("BalanceOrError: %v, want ErrTooManyPartitions", err)
		}
	})
	t.Run("sync assignment", func(t *testing.T) {
		b := mustAssignBalancer(t, assign.RangeName)
		if got, err := b.ParseSyncAssignment(nil); err != nil || len(got) != 0 {
			t.Errorf("ParseSyncAssignment(empty) = %v, %v; want nothing assigned", got, err)
		}
		for _, bad := range [][]byte{{0, 0, 0, 0, 0, 9}, {0xff, 0xff}, make([]byte, assign.MaxMetadataBytes+1)} {
			if _, err := b.ParseSyncAssignment(bad); err == nil {
				t.Errorf("ParseSyncAssignment(% x...) accepted", bad[:min(len(bad), 8)])
			}
		}
	})
}

// ---- interop: wren and franz-go members in one classic group ----

// interopPartitions is the partition count of the interop test's topic:
// divisible by two and three members, so that every member gets some.
const interopPartitions = 6

// countingBalancer counts the rebalances its member led: only the leader's
// balancer sees MemberBalancer.
type countingBalancer struct {
	kgo.GroupBalancer
	led atomic.Int32
}

func (c *countingBalancer) MemberBalancer(ms []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	c.led.Add(1)
	return c.GroupBalancer.MemberBalancer(ms)
}

// consumedLog counts every record value the members of a test consumed.
type consumedLog struct {
	mu     sync.Mutex
	counts map[string]int
	total  int
}

func (l *consumedLog) add(v string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts[v]++
	l.total++
}

func (l *consumedLog) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// interopMember is one kgo group member consuming topic in a goroutine.
// It commits what each poll returned before it lets a rebalance proceed
// (BlockRebalanceOnPoll), so the group as a whole consumes every record
// exactly once, however partitions move.
type interopMember struct {
	name     string // for messages: wren-1, franz-go-2, ...
	cl       *kgo.Client
	balancer *countingBalancer
	topic    string

	mu    sync.Mutex
	owned map[int32]bool // by the client's own callbacks
	errs  []error

	cancel  context.CancelFunc
	done    chan struct{}
	stopped bool
}

func startInteropMember(t *testing.T, b, group, topic, name string, balancer kgo.GroupBalancer, log *consumedLog) *interopMember {
	t.Helper()
	m := &interopMember{name: name, balancer: &countingBalancer{GroupBalancer: balancer}, topic: topic,
		owned: map[int32]bool{}, done: make(chan struct{})}
	track := func(add bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, tps map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range tps[topic] {
				if add {
					m.owned[p] = true
				} else {
					delete(m.owned, p)
				}
			}
		}
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(b, ",")...),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.Balancers(m.balancer),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(track(true)), kgo.OnPartitionsRevoked(track(false)), kgo.OnPartitionsLost(track(false)),
		// A rebalance waits for every member's heartbeat to notice it.
		kgo.HeartbeatInterval(200*time.Millisecond), kgo.FetchMaxWait(500*time.Millisecond),
	)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go m.poll(ctx, log)
	t.Cleanup(func() { m.stop(t) })
	return m
}

func (m *interopMember) fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.errs = append(m.errs, err)
}

func (m *interopMember) poll(ctx context.Context, log *consumedLog) {
	defer close(m.done)
	for {
		fs := m.cl.PollRecords(ctx, 100)
		if fs.IsClientClosed() || ctx.Err() != nil {
			m.cl.AllowRebalance()
			return
		}
		fs.EachError(func(t string, p int32, err error) {
			m.fail(fmt.Errorf("fetch %s/%d: %w", t, p, err))
		})
		fs.EachRecord(func(r *kgo.Record) { log.add(string(r.Value)) })
		if fs.NumRecords() > 0 {
			if err := m.cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
				m.fail(fmt.Errorf("commit: %w", err))
			}
		}
		m.cl.AllowRebalance()
	}
}

// stop ends polling, commits what was polled and leaves the group.
func (m *interopMember) stop(t *testing.T) {
	t.Helper()
	if m.stopped {
		return
	}
	m.stopped = true
	m.cancel()
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: poll loop still running 30s after stop", m.name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Errorf("%s: final commit: %v", m.name, err)
	}
	m.cl.Close()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, err := range m.errs {
		t.Errorf("%s: %v", m.name, err)
	}
}

func (m *interopMember) memberID() string {
	id, _ := m.cl.GroupMetadata()
	return id
}

func (m *interopMember) ownedView() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.owned))
}

// waitSettled waits until the group is Stable with exactly members, every
// one of the topic's partitions assigned to exactly one of them, each
// member assigned at least one, and each member's own view (its callbacks)
// equal to what the coordinator describes. It returns the assignment by
// member name.
func waitSettled(t *testing.T, adm *kadm.Client, group, topic string, partitions int32, members ...*interopMember) map[string][]int32 {
	t.Helper()
	var settled map[string][]int32
	var names []string
	for _, m := range members {
		names = append(names, m.name)
	}
	waitFor(t, fmt.Sprintf("group %s settled on %v", group, names), func() (bool, string) {
		described, err := adm.DescribeGroups(testCtx(t), group)
		if err != nil {
			return false, err.Error()
		}
		dg := described[group]
		if dg.Err != nil || dg.State != "Stable" || len(dg.Members) != len(members) {
			return false, fmt.Sprintf("state %s, %d members, err %v", dg.State, len(dg.Members), dg.Err)
		}
		byID := map[string][]int32{}
		for _, dm := range dg.Members {
			a, ok := dm.Assigned.AsConsumer()
			if !ok {
				return false, fmt.Sprintf("member %s: no consumer assignment", dm.MemberID)
			}
			for _, at := range a.Topics {
				if at.Topic != topic {
					return false, fmt.Sprintf("member %s assigned topic %s", dm.MemberID, at.Topic)
				}
				byID[dm.MemberID] = append(byID[dm.MemberID], at.Partitions...)
			}
		}
		owners := make([]int, partitions)
		out := map[string][]int32{}
		var seen strings.Builder
		for _, m := range members {
			ps := slices.Sorted(slices.Values(byID[m.memberID()]))
			fmt.Fprintf(&seen, "%s (%s): described %v, own view %v\n", m.name, m.memberID(), ps, m.ownedView())
			if len(ps) == 0 || !slices.Equal(ps, m.ownedView()) {
				return false, seen.String()
			}
			for _, p := range ps {
				if p < 0 || p >= partitions {
					return false, seen.String()
				}
				owners[p]++
			}
			out[m.name] = ps
		}
		for p, n := range owners {
			if n != 1 {
				return false, fmt.Sprintf("partition %d has %d owners\n%s", p, n, seen.String())
			}
		}
		settled = out
		return true, ""
	})
	return settled
}

// produceRound writes perPartition records to every partition, with
// values unique to the round, and returns the values.
func produceRound(t *testing.T, b, topic string, partitions int32, perPartition int, round string) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(b, ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	var values []string
	for p := range partitions {
		for i := range perPartition {
			v := fmt.Sprintf("%s-%d-%d", round, p, i)
			values = append(values, v)
			rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)})
		}
	}
	if err := cl.ProduceSync(testCtx(t), rs...).FirstErr(); err != nil {
		t.Fatalf("produce round %s: %v", round, err)
	}
	return values
}

func waitConsumed(t *testing.T, log *consumedLog, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d records consumed", n), func() (bool, string) {
		got := log.size()
		return got >= n, strconv.Itoa(got) + " consumed"
	})
}

// isSubset reports whether every partition of a is in b.
func isSubset(a, b []int32) bool {
	for _, p := range a {
		if !slices.Contains(b, p) {
			return false
		}
	}
	return true
}

// A classic group whose members mix wren's balancer and franz-go's own of
// the same protocol name, led first by a wren member, then (the leader
// gone) by a franz-go member: each leader reads the other's subscriptions
// (the sticky ones' claims included), every partition ends with exactly
// one owner, and the group consumes every record exactly once.
func TestAssignBalancerInterop(t *testing.T) {
	protocols := []string{assign.CooperativeStickyName, assign.RangeName}
	if !testing.Short() {
		protocols = append(protocols, assign.RoundRobinName, assign.StickyName)
	}
	franz := map[string]func() kgo.GroupBalancer{
		assign.RangeName:             kgo.RangeBalancer,
		assign.RoundRobinName:        kgo.RoundRobinBalancer,
		assign.StickyName:            kgo.StickyBalancer,
		assign.CooperativeStickyName: kgo.CooperativeStickyBalancer,
	}
	b := groupBrokers(t)
	adm := testAdmin(t, b)
	for _, protocol := range protocols {
		t.Run(protocol, func(t *testing.T) {
			const partitions, perPartition = interopPartitions, 5
			topic := uniqueTopic(t)
			group := topic + "-g"
			mustRun(t, "", "topic", "create", topic, "-p", strconv.Itoa(partitions), "-r", "1", "-b", b)
			log := &consumedLog{counts: map[string]int{}}
			// Who keeps its partitions across a rebalance: with
			// cooperative-sticky, every member, claiming them in
			// OwnedPartitions; with sticky, the wren members alone,
			// claiming them in the user data: franz-go's eager member
			// forgets its assignment when it revokes it and claims
			// nothing.
			keeps := map[string]bool{}
			switch protocol {
			case assign.CooperativeStickyName:
				keeps = map[string]bool{"wren-1": true, "franz-go-2": true, "wren-3": true}
			case assign.StickyName:
				keeps = map[string]bool{"wren-1": true, "wren-3": true}
			}
			kept := func(before, after map[string][]int32, joined bool) bool {
				for name, ps := range before {
					if _, stayed := after[name]; !stayed || !keeps[name] {
						continue
					}
					if joined && !isSubset(after[name], ps) || !joined && !isSubset(ps, after[name]) {
						return false
					}
				}
				return true
			}

			// Join order decides the leader: w1 first, then f2, then w3.
			w1 := startInteropMember(t, b, group, topic, "wren-1", mustAssignBalancer(t, protocol), log)
			a1 := waitSettled(t, adm, group, topic, partitions, w1)
			f2 := startInteropMember(t, b, group, topic, "franz-go-2", franz[protocol](), log)
			a2 := waitSettled(t, adm, group, topic, partitions, w1, f2)
			w3 := startInteropMember(t, b, group, topic, "wren-3", mustAssignBalancer(t, protocol), log)
			a3 := waitSettled(t, adm, group, topic, partitions, w1, f2, w3)
			if w1.balancer.led.Load() == 0 || f2.balancer.led.Load() != 0 || w3.balancer.led.Load() != 0 {
				t.Fatalf("rebalances led: wren-1 %d, franz-go-2 %d, wren-3 %d; want wren-1 alone",
					w1.balancer.led.Load(), f2.balancer.led.Load(), w3.balancer.led.Load())
			}
			// On a join, partitions move only to the new member.
			if !kept(a1, a2, true) || !kept(a2, a3, true) {
				t.Errorf("wren's leader moved partitions between the members %v claim: %v, then %v, then %v", slices.Sorted(maps.Keys(keeps)), a1, a2, a3)
			}
			checkEagerAssignment(t, protocol, a3, w1, f2, w3)
			want := produceRound(t, b, topic, partitions, perPartition, "first")
			waitConsumed(t, log, len(want))

			// The leader leaves: f2, the first to have joined of those
			// left, leads the next rebalance.
			w1.stop(t)
			a4 := waitSettled(t, adm, group, topic, partitions, f2, w3)
			if f2.balancer.led.Load() == 0 || w3.balancer.led.Load() != 0 {
				t.Fatalf("after wren-1 left, rebalances led: franz-go-2 %d, wren-3 %d; want franz-go-2 alone",
					f2.balancer.led.Load(), w3.balancer.led.Load())
			}
			// On a leave, the members that stayed keep theirs.
			if !kept(a3, a4, false) {
				t.Errorf("franz-go's leader moved partitions off the members %v claim: %v, then %v", slices.Sorted(maps.Keys(keeps)), a3, a4)
			}
			checkEagerAssignment(t, protocol, a4, f2, w3)
			want = append(want, produceRound(t, b, topic, partitions, perPartition, "second")...)
			waitConsumed(t, log, len(want))
			f2.stop(t)
			w3.stop(t)

			log.mu.Lock()
			defer log.mu.Unlock()
			for _, v := range want {
				if n := log.counts[v]; n != 1 {
					t.Errorf("record %s consumed %d times", v, n)
				}
			}
			if log.total != len(want) {
				t.Errorf("%d records consumed, %d produced", log.total, len(want))
			}
		})
	}
}

// checkEagerAssignment cross-checks range and roundrobin, which are
// functions of the member ids alone: whoever led, the group's assignment
// is the one groups/assign computes.
func checkEagerAssignment(t *testing.T, protocol string, got map[string][]int32, members ...*interopMember) {
	t.Helper()
	if protocol != assign.RangeName && protocol != assign.RoundRobinName {
		return
	}
	var ms []assign.Member
	names := map[string]string{}
	for _, m := range members {
		ms = append(ms, assign.Member{MemberID: m.memberID(), Topics: []string{m.topic}})
		names[m.memberID()] = m.name
	}
	assignor, _ := assign.ByName(protocol)
	want, err := assignor(ms, []assign.Topic{{Name: members[0].topic, Partitions: interopPartitions}})
	if err != nil {
		t.Fatal(err)
	}
	for id, tps := range want {
		var ps []int32
		for _, tp := range tps {
			ps = append(ps, tp.Partition)
		}
		if !slices.Equal(got[names[id]], ps) {
			t.Errorf("%s: %s assigned %v, groups/assign gives %v", protocol, names[id], got[names[id]], ps)
		}
	}
}
