package replication

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/internal/vfs"
)

// The leader holds a follower's Fetch until it has new records (the long
// poll). These tests hold every poll for an hour, far past the bound each
// wait has (within: 20 s), so a wake-up that goes missing fails the test
// instead of costing a poll's length: no time is measured, and nothing
// sleeps to wait for a state.

// hourPoll is a follower's long poll of an hour, in milliseconds.
const hourPoll = int32(time.Hour / time.Millisecond)

// wakeSeed returns a seed for a test's random choices, logged so that a
// failure can be replayed.
func wakeSeed(t *testing.T) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, seed>>1|1))
}

// spin yields the processor n times: a random point in another
// goroutine's progress, without sleeping.
func spin(n int) {
	for range n {
		runtime.Gosched()
	}
}

// TestWakeFollowerFetchAtAppend: a follower's Fetch held for an hour
// returns with the records as soon as the leader appends, wherever the
// append lands in the fetch's progress (before it registers, between its
// registration and its look for records, while it waits): many rounds,
// each with the append at a random point.
func TestWakeFollowerFetchAtAppend(t *testing.T) {
	rng := wakeSeed(t)
	m, p := leaderWithFollower(t, vfs.NewMem())
	m.repl.MaxFollowerWait = time.Hour
	for round := range 50 {
		offset := p.Log().LogEndOffset()
		fetched := make(chan int, 1)
		go func() { fetched <- followerFetch(t, m, offset, hourPoll) }()
		spin(rng.IntN(200))
		_, wait, err := p.AppendAsLeaderTimeout(oneRecord(t), 1, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if n := within(t, fetched, fmt.Sprintf("round %d: answer to the follower's hour-long poll after the append", round)); n == 0 {
			t.Fatalf("round %d: the follower's poll ended with no records", round)
		}
		if err := wait(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWakeAppendAfterFetchFoundNothing: the append lands, durable and its
// followers notified, after the fetch looked for records and found none
// but before it waits: the wake-up it registered (under the partition's
// lock, before the look) holds the append for it. A wake-up registered
// only for the wait, or one that is lost when nobody is receiving at the
// moment it is sent, leaves the fetch asleep for its hour.
func TestWakeAppendAfterFetchFoundNothing(t *testing.T) {
	m, p := leaderWithFollower(t, vfs.NewMem())
	m.repl.MaxFollowerWait = time.Hour
	var once sync.Once
	appended := make(chan error, 1)
	hook := func() {
		once.Do(func() {
			_, wait, err := p.AppendAsLeaderTimeout(oneRecord(t), 1, time.Minute)
			if err == nil {
				// Durable, and the waiting fetches notified, before the
				// fetch goes on to wait.
				err = wait()
			}
			appended <- err
		})
	}
	m.testHookFetchWaits = hook
	fetched := make(chan int, 1)
	go func() { fetched <- followerFetch(t, m, 0, hourPoll) }()
	if err := within(t, appended, "append between the fetch's look for records and its wait"); err != nil {
		t.Fatal(err)
	}
	if n := within(t, fetched, "answer to the follower's hour-long poll"); n == 0 {
		t.Fatal("the follower's poll ended with no records")
	}
}

// TestWakeAcksAllReleasedAtFetchArrival: an acks=all append is answered
// when the follower's next Fetch arrives showing it holds the records,
// not when that Fetch is answered: that Fetch has nothing new to read and
// is held for its hour, while the produce's answer comes at once.
func TestWakeAcksAllReleasedAtFetchArrival(t *testing.T) {
	m, p := leaderWithFollower(t, vfs.NewMem())
	m.repl.MaxFollowerWait = time.Hour
	m.stopped = make(chan struct{})
	_, wait, err := p.AppendAsLeaderTimeout(oneRecord(t), -1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	acked := make(chan error, 1)
	go func() { acked <- wait() }()
	if n := followerFetch(t, m, 0, hourPoll); n == 0 {
		t.Fatal("the follower's fetch got no records")
	}
	held := make(chan int, 1)
	go func() { held <- followerFetch(t, m, 1, hourPoll) }()
	if err := within(t, acked, "acks=all answer while the follower's next fetch is held"); err != nil {
		t.Fatalf("acks=all: %v", err)
	}
	select {
	case n := <-held:
		t.Fatalf("the follower's fetch at the log end was answered (%d batches) instead of held", n)
	default:
	}
	if hw := p.HighWatermark(); hw != 1 {
		t.Fatalf("high watermark %d, want 1", hw)
	}
	// The leader stopping answers the held poll.
	close(m.stopped)
	if n := within(t, held, "answer to the held fetch once the leader stops"); n != 0 {
		t.Fatalf("the held fetch got %d batches, want none", n)
	}
}

// closableConn is a loopbackConn whose round trip in flight fails when
// the connection is closed, as a socket's does: the fetcher closes its
// connection under a held poll to fetch a partition it just followed.
// The leader's side of the poll stays held, as a real leader's does until
// its answer fails.
type closableConn struct{ *loopbackConn }

func (c closableConn) RoundTrip(r kmsg.Request, deadline time.Time) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := c.loopbackConn.RoundTrip(r, deadline)
		done <- result{b, err}
	}()
	select {
	case res := <-done:
		return res.b, res.err
	case <-c.closed:
		return nil, errors.New("closableConn: closed under the round trip")
	}
}

// hourPollCluster is idleReplicaCluster with every follower's poll held
// for up to an hour by the leader: whatever answers an acks=all produce
// must be a wake-up.
func hourPollCluster(t *testing.T, n int, obs Observer) *idleReplicaCluster {
	t.Helper()
	fsys := vfs.NewMem()
	c := &idleReplicaCluster{leader: &Manager{nodeID: 1, partitions: map[engine.TopicPartition]*Partition{},
		repl:           ReplicationConfig{MaxFollowerWait: time.Hour},
		leaderThrottle: NewThrottle(time.Now), followerThrottle: NewThrottle(time.Now)}}
	open := func(node int32, tp engine.TopicPartition) *engine.Log {
		l, _, err := engine.Open(fsys, fmt.Sprintf("/n%d/%s", node, tp), tp, engine.DefaultOptions(), engine.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	tps := make([]engine.TopicPartition, n)
	for i := range n {
		tp := engine.TopicPartition{Topic: "t", Partition: int32(i)}
		tps[i] = tp
		p := newPartition(tp, open(1, tp), &partitionHooks{nodeID: 1, now: time.Now, observer: obs}, 0)
		p.setMetadata(1, []int32{1, 2, 3}, []int32{1, 2, 3}, 2, 30000)
		if err := p.becomeLeader(1); err != nil {
			t.Fatal(err)
		}
		c.leader.partitions[tp] = p
		c.leaders = append(c.leaders, p)
	}
	// Stopping a fetcher closes its connection, which ends no poll the
	// leader holds: the leader's stop does (a channel it selects on).
	stopped := make(chan struct{})
	c.leader.stopped = stopped
	for node := int32(2); node <= 3; node++ {
		dial := func(int32) (LeaderConn, error) {
			return closableConn{&loopbackConn{leader: c.leader, from: node, id: loopbackConns.Add(1), closed: make(chan struct{})}}, nil
		}
		fm := newFetcherManager(node, FetchConfig{Dial: dial, WaitMaxMs: hourPoll, Backoff: time.Hour}, slog.New(slog.DiscardHandler))
		fm.observer = obs
		for _, tp := range tps {
			p := newPartition(tp, open(node, tp), &partitionHooks{nodeID: node, now: time.Now}, 0)
			if err := p.becomeLeaderOrFollower(false, 1); err != nil {
				t.Fatal(err)
			}
			fm.follow(tp, p, 1, 1)
		}
		// Registered after the logs: the fetcher stops before they close.
		t.Cleanup(func() {
			select {
			case <-stopped:
			default:
				close(stopped)
			}
			fm.stopAll()
		})
		c.followers = append(c.followers, fm)
	}
	return c
}

// TestWakeAcksAllThroughHourLongPolls: acks=all produces to a leader
// whose two followers fetch with hour-long polls, one after another and
// several at once, are each answered: every round of replication (the
// leader's durable append waking the followers' polls, their appends,
// their next fetches releasing the produce) runs on wake-ups alone.
func TestWakeAcksAllThroughHourLongPolls(t *testing.T) {
	rng := wakeSeed(t)
	c := hourPollCluster(t, 3, nil)
	for round := range 30 {
		inFlight := 1 + rng.IntN(4)
		acked := make(chan error, inFlight)
		for range inFlight {
			p := c.leaders[rng.IntN(len(c.leaders))]
			_, wait, err := p.AppendAsLeaderTimeout(oneRecord(t), -1, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			go func() { acked <- wait() }()
			spin(rng.IntN(50))
		}
		for k := range inFlight {
			if err := within(t, acked, fmt.Sprintf("round %d: acks=all answer %d of %d", round, k+1, inFlight)); err != nil {
				t.Fatalf("round %d: acks=all: %v", round, err)
			}
		}
	}
	if st := c.leader.ReplicaFetchStats(); st.Expired != 0 {
		t.Errorf("%d follower fetches held to the end of an hour-long wait", st.Expired)
	}
}

// TestWakeFollowerFetchWhenDurable: a follower's Fetch already held when
// the leader appends is woken when the append becomes durable (flush
// policy ack: its fdatasync returned), the moment it can read the
// records. A wake-up at the write itself finds nothing the follower may
// read yet, and, with none to follow, leaves the fetch asleep for its hour.
func TestWakeFollowerFetchWhenDurable(t *testing.T) {
	fs := newSyncGateFS()
	m, p := leaderWithFollower(t, fs)
	m.repl.MaxFollowerWait = time.Hour
	// waits counts the fetch's goes at waiting: one per look for
	// records that found none.
	var waits atomic.Int32
	hook := func() { waits.Add(1) }
	m.testHookFetchWaits = hook
	fetched := make(chan int, 1)
	go func() { fetched <- followerFetch(t, m, 0, hourPoll) }()
	deadline := time.Now().Add(20 * time.Second)
	for waits.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the follower's fetch never waited")
		}
		runtime.Gosched()
	}
	fs.hold(t)
	_, wait, err := p.AppendAsLeaderTimeout(oneRecord(t), 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	within(t, fs.entered, "the append's fdatasync")
	// Nothing may wake the fetch while the records are not durable: no
	// wake-up pending, none taken (a second go at waiting). A wake-up
	// sent before the fdatasync began would be one of the two by now,
	// or soon: the fetch is given many chances to run.
	for range 1000 {
		p.mu.Lock()
		pending := 0
		for _, fw := range p.waitsLocked().fetchWaits {
			pending += len(fw.w.appended)
		}
		p.mu.Unlock()
		if pending > 0 || waits.Load() > 1 {
			t.Fatalf("the follower's fetch was woken before the append was durable (wake-ups pending %d, goes at waiting %d)", pending, waits.Load())
		}
		select {
		case n := <-fetched:
			t.Fatalf("the follower's fetch was answered (%d batches) before the append was durable", n)
		default:
		}
		runtime.Gosched()
	}
	fs.release()
	if n := within(t, fetched, "answer to the follower's hour-long poll once the append is durable"); n == 0 {
		t.Fatal("the follower's poll ended with no records")
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
}
