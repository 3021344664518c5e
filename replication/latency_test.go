package replication

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/internal/vfs"
)

// How an acks=all produce reaches its answer without waiting for a timer
// or for the caller: the leader's fdatasync starts at the append, its end
// wakes the followers' long polls, and the follower's next fetch, which
// shows it holds the records, answers the produce. The benchmark
// (scripts/bench-cluster.sh, WREN_BENCH_RATE) shows what that does to the
// latency tail; these tests show the mechanism, with no timed assertion.

// syncGateFS holds the fdatasync of segment files (.log) while its gate
// is held, and says when one starts, so a test can see where a sync runs
// and what may be read before it returns.
type syncGateFS struct {
	vfs.FS
	mu   sync.Mutex
	held chan struct{} // nil: syncs pass
	// entered receives one value per segment fdatasync that starts while
	// the gate is held.
	entered chan struct{}
}

func newSyncGateFS() *syncGateFS {
	return &syncGateFS{FS: vfs.NewMem(), entered: make(chan struct{}, 64)}
}

// hold holds segment syncs until release, or until the test ends (a
// failed test must not leave the log's close waiting on its last sync).
func (g *syncGateFS) hold(t *testing.T) {
	g.mu.Lock()
	g.held = make(chan struct{})
	g.mu.Unlock()
	t.Cleanup(g.release)
}

func (g *syncGateFS) release() {
	g.mu.Lock()
	if g.held != nil {
		close(g.held)
		g.held = nil
	}
	g.mu.Unlock()
}

func (g *syncGateFS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(f.Name(), ".log") {
		return f, err
	}
	return gatedFile{File: f, g: g}, nil
}

func (g *syncGateFS) Create(name string) (vfs.File, error) { return g.wrap(g.FS.Create(name)) }
func (g *syncGateFS) OpenReadWrite(name string) (vfs.File, error) {
	return g.wrap(g.FS.OpenReadWrite(name))
}

type gatedFile struct {
	vfs.File
	g *syncGateFS
}

func (f gatedFile) SyncData() error {
	f.g.mu.Lock()
	held := f.g.held
	f.g.mu.Unlock()
	if held != nil {
		f.g.entered <- struct{}{}
		<-held
	}
	return f.File.SyncData()
}

// within receives from ch, or fails the test after a generous deadline
// (a bound on a wait, not a measure of speed).
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("no %s within 20 s", what)
		panic("unreachable")
	}
}

// leaderWithFollower opens a leader replica (node 1) of t-0 on fs with
// follower 2 in its ISR and min.insync.replicas 2, on a clock that never
// moves, and a Manager that serves its followers' fetches.
func leaderWithFollower(t *testing.T, fs vfs.FS) (*Manager, *Partition) {
	t.Helper()
	clk := &fakeClock{t: time.Unix(1000, 0)}
	tp := engine.TopicPartition{Topic: "t"}
	l, _, err := engine.Open(fs, "/d/t-0", tp, engine.DefaultOptions(), engine.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if l.Options().FlushPolicy != engine.FlushAck {
		t.Fatalf("the default flush policy is %v, these tests need ack", l.Options().FlushPolicy)
	}
	p := newPartition(tp, l, &partitionHooks{nodeID: 1, now: clk.now}, 0)
	p.setMetadata(1, []int32{1, 2}, []int32{1, 2}, 2, 30000)
	if err := p.becomeLeader(1); err != nil {
		t.Fatal(err)
	}
	m := &Manager{nodeID: 1, partitions: map[engine.TopicPartition]*Partition{tp: p},
		leaderThrottle: NewThrottle(clk.now), followerThrottle: NewThrottle(clk.now)}
	return m, p
}

// followerFetch is follower 2's Fetch of t-0 from offset, long-polling up
// to waitMs for at least one byte; it returns the record batches' bytes.
func followerFetch(t *testing.T, m *Manager, offset int64, waitMs int32) int {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(ReplicaFetchVersion)
	req.ReplicaID, req.MaxBytes, req.MinBytes, req.MaxWaitMillis = 2, 1<<20, 1, waitMs
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.CurrentLeaderEpoch, rp.PartitionMaxBytes, rp.FetchOffset = 1, 1<<20, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	body := m.serveFetch(2, 0, req)
	defer body.Done()
	resp := decodeFetch(t, body.Chunks)
	got := resp.Topics[0].Partitions[0]
	if got.ErrorCode != 0 {
		t.Fatalf("fetch from %d: error %d", offset, got.ErrorCode)
	}
	return len(got.RecordBatches)
}

// TestLeaderSyncStartsAtAppend: the leader's fdatasync of an append
// starts when the append is written, before anyone waits for its
// acknowledgement, and a follower's long poll is woken when it returns.
// The wire layer waits for a pipelined request only after answering the
// ones before it; a sync that started only then (as it once did) left the
// records unreadable for followers, and the follower asleep in its long
// poll, for a whole round of replication of the request ahead.
func TestLeaderSyncStartsAtAppend(t *testing.T) {
	fs := newSyncGateFS()
	m, p := leaderWithFollower(t, fs)
	fs.hold(t)
	_, wait, err := p.AppendAsLeaderTimeout(oneRecord(t), 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	within(t, fs.entered, "fdatasync started by the append alone (nobody waits for it)")
	fetched := make(chan int, 1)
	go func() { fetched <- followerFetch(t, m, 0, 5000) }()
	fs.release()
	if n := within(t, fetched, "answer to the follower's long poll"); n == 0 {
		t.Fatal("the follower's long poll ended with no records: it was not woken when the append became durable")
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
}

// TestAcksAllAnsweredByFollowerFetch: an acks=all append is answered by
// the follower's fetch that shows it holds the records (its fetch offset
// past them), on a clock that never moves: no timer, tick or later fetch
// is needed. Fetching the records is not enough; holding them is.
func TestAcksAllAnsweredByFollowerFetch(t *testing.T) {
	m, p := leaderWithFollower(t, vfs.NewMem())
	_, wait, err := p.AppendAsLeaderTimeout(oneRecord(t), -1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	acked := make(chan error, 1)
	go func() { acked <- wait() }()
	if n := followerFetch(t, m, 0, 5000); n == 0 {
		t.Fatal("the follower's fetch got no records")
	}
	select {
	case err := <-acked:
		t.Fatalf("acks=all answered (%v) before the follower showed it holds the records", err)
	default:
	}
	if hw := p.HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d before the follower's next fetch, want 0", hw)
	}
	// The follower appended and fetches again at once from its new end.
	followerFetch(t, m, 1, 0)
	if err := within(t, acked, "acks=all answer after the follower's fetch at offset 1"); err != nil {
		t.Fatalf("acks=all: %v", err)
	}
	if hw := p.HighWatermark(); hw != 1 {
		t.Fatalf("high watermark %d after the follower's fetch at 1, want 1", hw)
	}
}

// recordsOnce is a leader that answers a follower's first Fetch of all
// of its partitions (all of them) with one record for each
// partition in withRecords and nothing for the others, and hands every
// later Fetch to the test, holding it until the fetcher closes the
// connection. A Fetch of fewer partitions (the fetcher started before the
// test followed them all) gets nothing.
type recordsOnce struct {
	records     []byte
	withRecords map[int32]bool
	all         int
	served      bool
	later       chan *kmsg.FetchRequest
	closed      chan struct{}
}

func (c *recordsOnce) RoundTrip(r kmsg.Request, _ time.Time) ([]byte, error) {
	req, ok := r.(*kmsg.FetchRequest)
	if !ok {
		return nil, fmt.Errorf("recordsOnce: %s", kmsg.NameForKey(r.Key()))
	}
	n := 0
	for _, rt := range req.Topics {
		n += len(rt.Partitions)
	}
	full := n == c.all
	if full && c.served {
		c.later <- req
		<-c.closed
		return nil, errors.New("recordsOnce: closed")
	}
	c.served = c.served || full
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	for _, rt := range req.Topics {
		t := kmsg.NewFetchResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition, p.HighWatermark = rp.Partition, 0
			if full && c.withRecords[rp.Partition] {
				p.RecordBatches = c.records
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp.AppendTo(nil), nil
}

func (c *recordsOnce) Close() error {
	select {
	case <-c.closed:
	default:
		close(c.closed)
	}
	return nil
}

// TestFollowerFetchesAgainOnceAppended: a follower whose fetch brought
// records appends them, durably, and fetches again at once from its new
// log end: that fetch is what moves the leader's high watermark and
// answers acks=all. No pause comes between (the fetcher's backoff is an
// hour here), whichever partitions brought records.
func TestFollowerFetchesAgainOnceAppended(t *testing.T) {
	conn := &recordsOnce{records: oneRecord(t), withRecords: map[int32]bool{0: true, 2: true}, all: 3,
		later: make(chan *kmsg.FetchRequest, 1), closed: make(chan struct{})}
	fm := newFetcherManager(2, FetchConfig{
		Dial:      func(int32) (LeaderConn, error) { return conn, nil },
		WaitMaxMs: 500,
		Backoff:   time.Hour,
	}, slog.New(slog.DiscardHandler))
	defer fm.stopAll()
	logs := map[int32]*engine.Log{}
	for i := range int32(3) {
		tp := engine.TopicPartition{Topic: "t", Partition: i}
		l, _, err := engine.Open(vfs.NewMem(), fmt.Sprintf("/d/t-%d", i), tp, engine.DefaultOptions(), engine.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		p := newPartition(tp, l, nil, 0)
		if err := p.becomeLeaderOrFollower(false, 1); err != nil {
			t.Fatal(err)
		}
		logs[i] = l
		fm.follow(tp, p, 1, 1)
	}
	req := within(t, conn.later, "second fetch")
	for _, rp := range req.Topics[0].Partitions {
		want := int64(0)
		if conn.withRecords[rp.Partition] {
			want = 1
		}
		if rp.FetchOffset != want {
			t.Errorf("partition %d: second fetch from offset %d, want %d", rp.Partition, rp.FetchOffset, want)
		}
		if d := logs[rp.Partition].DurableOffset(); d != want {
			t.Errorf("partition %d: durable offset %d when the next fetch went out, want %d", rp.Partition, d, want)
		}
	}
}
