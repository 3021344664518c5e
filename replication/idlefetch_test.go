package replication

import (
	"fmt"
	"log/slog"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/internal/vfs"
	"github.com/wren-broker/wren/wire"
)

// loopbackConn is a follower's connection to a leader Manager in the same
// process: each request is encoded and decoded as on a replica
// connection, and the response's chunks are copied out as the transport
// would send them.
type loopbackConn struct {
	leader *Manager
	from   int32
	// id is the connection's, for the leader's fetch sessions.
	id     uint64
	buf    []byte
	closed chan struct{}
}

// loopbackConns numbers loopbackConns.
var loopbackConns atomic.Uint64

func (c *loopbackConn) RoundTrip(r kmsg.Request, _ time.Time) ([]byte, error) {
	select {
	case <-c.closed:
		return nil, fmt.Errorf("loopbackConn: closed")
	default:
	}
	req := kmsg.RequestForKey(r.Key())
	req.SetVersion(r.GetVersion())
	if err := req.ReadFrom(r.AppendTo(c.buf[:0])); err != nil {
		return nil, err
	}
	body := c.leader.ServeReplicaRequest(c.from, c.id, req)
	if body == nil {
		return nil, fmt.Errorf("loopbackConn: the leader closed the connection")
	}
	b, err := wire.AppendTo(c.buf[:0], body.Chunks)
	body.Done()
	c.buf = b
	return b, err
}

func (c *loopbackConn) Close() error {
	select {
	case <-c.closed:
	default:
		close(c.closed)
		c.leader.ReplicaConnClosed(c.from, c.id)
	}
	return nil
}

// idleReplicaCluster is one leader (node 1) of n empty partitions
// (replicas 1, 2, 3, all in the ISR) and its two followers' fetchers, in
// one process, on memory logs: what the three nodes of a cluster do
// between them when no client writes (each node leads a third of the
// partitions and follows the rest).
type idleReplicaCluster struct {
	leader    *Manager
	followers []*fetcherManager
	leaders   []*Partition
	replicas  [][]*Partition
}

func newIdleReplicaCluster(tb testing.TB, n int, waitMaxMs int32) *idleReplicaCluster {
	tb.Helper()
	fsys := vfs.NewMem()
	c := &idleReplicaCluster{leader: &Manager{nodeID: 1, partitions: map[engine.TopicPartition]*Partition{},
		leaderThrottle: NewThrottle(time.Now), followerThrottle: NewThrottle(time.Now)}}
	open := func(node int32, tp engine.TopicPartition) *engine.Log {
		l, _, err := engine.Open(fsys, fmt.Sprintf("/n%d/%s", node, tp), tp, engine.DefaultOptions(), engine.OpenOptions{})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { l.Close() })
		return l
	}
	tps := make([]engine.TopicPartition, n)
	for i := range n {
		tp := engine.TopicPartition{Topic: fmt.Sprintf("topic%d", i/100), Partition: int32(i % 100)}
		tps[i] = tp
		p := newPartition(tp, open(1, tp), &partitionHooks{nodeID: 1, now: time.Now}, 0)
		p.setMetadata(1, []int32{1, 2, 3}, []int32{1, 2, 3}, 2, 30000)
		if err := p.becomeLeader(1); err != nil {
			tb.Fatal(err)
		}
		c.leader.partitions[tp] = p
		c.leaders = append(c.leaders, p)
	}
	for node := int32(2); node <= 3; node++ {
		dial := func(int32) (LeaderConn, error) {
			return &loopbackConn{leader: c.leader, from: node, id: loopbackConns.Add(1), closed: make(chan struct{})}, nil
		}
		fm := newFetcherManager(node, FetchConfig{Dial: dial, WaitMaxMs: waitMaxMs}, slog.New(slog.DiscardHandler))
		tb.Cleanup(fm.stopAll)
		var ps []*Partition
		for _, tp := range tps {
			p := newPartition(tp, open(node, tp), &partitionHooks{nodeID: node, now: time.Now}, 0)
			if err := p.becomeLeaderOrFollower(false, 1); err != nil {
				tb.Fatal(err)
			}
			fm.follow(tp, p, 1, 1)
			ps = append(ps, p)
		}
		c.followers = append(c.followers, fm)
		c.replicas = append(c.replicas, ps)
	}
	return c
}

// cpuTime is the CPU time (user and system) this process used so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkIdleReplicaFetch reports the CPU time that a leader of 3,000
// idle partitions and its two followers use per second of wall time
// between them (cpu-s/s), at replica.fetch.wait.max.ms 500: the cost of
// replication with no client traffic. Each iteration idles one second;
// the machine's load shows in the figure, so compare runs taken
// together.
func BenchmarkIdleReplicaFetch(b *testing.B) {
	const n = 3000
	c := newIdleReplicaCluster(b, n, 500)
	// The first rounds (truncation, the first fetches) are not idle.
	time.Sleep(2 * time.Second)
	b.ResetTimer()
	var cpu, wall time.Duration
	for range b.N {
		startCPU, start := cpuTime(b), time.Now()
		time.Sleep(time.Second)
		cpu += cpuTime(b) - startCPU
		wall += time.Since(start)
	}
	b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cpu-s/s")
	b.ReportMetric(0, "ns/op")
	_ = c
}

// reversingLeader answers a Fetch with one record at offset 0 and a high
// watermark of 1 for each partition asked from offset 0, its topics and
// partitions in the reverse of the request's order.
type reversingLeader struct {
	records []byte
	closed  chan struct{}
}

func (c *reversingLeader) Close() error { return nil }

func (c *reversingLeader) RoundTrip(r kmsg.Request, deadline time.Time) ([]byte, error) {
	req, ok := r.(*kmsg.FetchRequest)
	if !ok {
		return nil, fmt.Errorf("reversingLeader: api key %d", r.Key())
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	for i := len(req.Topics) - 1; i >= 0; i-- {
		rt := req.Topics[i]
		t := kmsg.NewFetchResponseTopic()
		t.Topic = rt.Topic
		for j := len(rt.Partitions) - 1; j >= 0; j-- {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition, p.HighWatermark = rt.Partitions[j].Partition, 1
			if rt.Partitions[j].FetchOffset == 0 {
				p.RecordBatches = c.records
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	if len(resp.Topics) > 0 && len(resp.Topics[0].Partitions) > 0 && resp.Topics[0].Partitions[0].RecordBatches == nil {
		// Nothing new: hold the poll as a leader would, briefly.
		t := time.NewTimer(time.Until(deadline) / 100)
		defer t.Stop()
		select {
		case <-t.C:
		case <-c.closed:
		}
	}
	return resp.AppendTo(nil), nil
}

// A follower finds each partition of a Fetch response by its place in
// the request; a leader that answers in another order still has each
// partition's records and high watermark applied to that partition.
func TestFollowerAppliesResponseOutOfRequestOrder(t *testing.T) {
	leader := &reversingLeader{records: oneRecord(t), closed: make(chan struct{})}
	defer close(leader.closed)
	fm := newFetcherManager(2, FetchConfig{Dial: func(int32) (LeaderConn, error) { return leader, nil }, WaitMaxMs: 500},
		slog.New(slog.DiscardHandler))
	defer fm.stopAll()
	var ps []*Partition
	for _, tp := range []engine.TopicPartition{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 1}, {Topic: "b", Partition: 0}} {
		l, _, err := engine.Open(vfs.NewMem(), "/d/"+tp.String(), tp, engine.DefaultOptions(), engine.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		p := newPartition(tp, l, nil, 0)
		if err := p.becomeLeaderOrFollower(false, 1); err != nil {
			t.Fatal(err)
		}
		fm.follow(tp, p, 1, 1)
		ps = append(ps, p)
	}
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for _, p := range ps {
		for {
			moved := p.HighWatermarkChanged()
			if p.Log().LogEndOffset() == 1 && p.HighWatermark() == 1 {
				break
			}
			select {
			case <-moved:
			case <-timeout.C:
				t.Fatalf("%s: log end %d, high watermark %d; want 1 and 1", p.TopicPartition(), p.Log().LogEndOffset(), p.HighWatermark())
			}
		}
	}
}

// A follower's long poll ends at the leader's append, not at the end of
// its wait: the fetch registers its wake-up with the partition as the
// partition takes it (Partition.fetchWaits), and the append's durability
// sends into it. The leader holds the poll for up to an hour here, longer
// than within waits, so no time is measured.
func TestFollowerLongPollWokenByAppend(t *testing.T) {
	m, p := leaderWithFollower(t, vfs.NewMem())
	m.repl.MaxFollowerWait = time.Hour
	type answer struct {
		n       int
		elapsed time.Duration
	}
	fetched := make(chan answer, 1)
	start := time.Now()
	go func() {
		n := followerFetch(t, m, 0, int32(time.Hour/time.Millisecond))
		fetched <- answer{n, time.Since(start)}
	}()
	// The append comes once the fetch waits on the partition.
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.mu.Lock()
		registered := len(p.waitsLocked().fetchWaits) > 0
		p.mu.Unlock()
		if registered {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the follower's fetch never waited on the partition")
		}
		runtime.Gosched()
	}
	if _, _, err := p.AppendAsLeaderTimeout(oneRecord(t), 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	got := within(t, fetched, "answer to the follower's long poll")
	if got.n == 0 {
		t.Fatal("the follower's long poll ended with no records")
	}
	t.Logf("the follower's long poll was answered after %v", got.elapsed)
}

// A follower's Fetch that names a partition this leader does not have is
// answered at once, whatever wait it asks and however idle its other
// partitions are (Kafka's ReplicaManager answers a read error without
// delay). Held, it kept a new partition that the follower asked for before
// its leader hosted it out of the follower's next Fetch for a whole long
// poll, and with it a first acks=all produce. The leader would hold the
// poll for an hour here, longer than within waits.
func TestFollowerFetchWithErrorAnsweredAtOnce(t *testing.T) {
	m, _ := leaderWithFollower(t, vfs.NewMem())
	m.repl.MaxFollowerWait = time.Hour
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(ReplicaFetchVersion)
	req.ReplicaID, req.MaxBytes, req.MinBytes, req.MaxWaitMillis = 2, 1<<20, 1, int32(time.Hour/time.Millisecond)
	for _, topic := range []string{"t", "new"} {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = 1, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	answered := make(chan kmsg.FetchResponse, 1)
	go func() {
		body := m.serveFetch(2, 0, req)
		defer body.Done()
		answered <- *decodeFetch(t, body.Chunks)
	}()
	resp := within(t, answered, "answer to a Fetch naming an unknown partition")
	codes := map[string]int16{}
	for _, rt := range resp.Topics {
		codes[rt.Topic] = rt.Partitions[0].ErrorCode
	}
	if codes["t"] != 0 || codes["new"] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("error codes %v, want t: 0, new: %d", codes, kerr.UnknownTopicOrPartition.Code)
	}
}

// Two fetches of one follower held at once (it closed its connection to
// send a new Fetch, and the leader took the new one before the old one,
// which nobody will read) are both woken by the next append. When the
// old fetch's registration replaced the new one's, only the dead fetch
// woke and the live one waited out its whole long poll; the leader holds
// polls for an hour here, longer than within waits.
func TestFollowerFetchesHeldTogetherBothWoken(t *testing.T) {
	m, p := leaderWithFollower(t, vfs.NewMem())
	m.repl.MaxFollowerWait = time.Hour
	waiting := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			p.mu.Lock()
			live := 0
			for _, fw := range p.waitsLocked().fetchWaits {
				if !fw.w.done.Load() {
					live++
				}
			}
			p.mu.Unlock()
			if live == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d fetches waiting on the partition, want %d", live, n)
			}
			runtime.Gosched()
		}
	}
	live, dead := make(chan int, 1), make(chan int, 1)
	go func() { live <- followerFetch(t, m, 0, int32(time.Hour/time.Millisecond)) }()
	waiting(1)
	go func() { dead <- followerFetch(t, m, 0, int32(time.Hour/time.Millisecond)) }()
	waiting(2)
	if _, _, err := p.AppendAsLeaderTimeout(oneRecord(t), 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := within(t, live, "answer to the fetch registered first"); n == 0 {
		t.Fatal("the fetch registered first was answered with no records")
	}
	if n := within(t, dead, "answer to the fetch registered second"); n == 0 {
		t.Fatal("the fetch registered second was answered with no records")
	}
	// Answered fetches leave their places to the follower's next one.
	go func() { live <- followerFetch(t, m, 1, int32(time.Hour/time.Millisecond)) }()
	waiting(1)
	p.mu.Lock()
	entries := len(p.waitsLocked().fetchWaits)
	p.mu.Unlock()
	if entries != 2 {
		t.Fatalf("%d wait entries for one follower after its third fetch, want the 2 of its two fetches held at once", entries)
	}
	if _, _, err := p.AppendAsLeaderTimeout(oneRecord(t), 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	within(t, live, "answer to the follower's next fetch")
}
