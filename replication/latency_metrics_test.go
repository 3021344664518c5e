package replication

import (
	"errors"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// countingObserver counts what an Observer is told.
type countingObserver struct {
	mu                               sync.Mutex
	durable, isrWait, followerAppend int
	negative                         bool
}

func (o *countingObserver) note(n *int, d time.Duration) {
	o.mu.Lock()
	*n++
	o.negative = o.negative || d < 0
	o.mu.Unlock()
}

func (o *countingObserver) LeaderDurable(d time.Duration)  { o.note(&o.durable, d) }
func (o *countingObserver) AcksAllISRWait(d time.Duration) { o.note(&o.isrWait, d) }
func (o *countingObserver) FollowerAppend(d time.Duration) { o.note(&o.followerAppend, d) }

func (o *countingObserver) counts() (durable, isrWait, followerAppend int, negative bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.durable, o.isrWait, o.followerAppend, o.negative
}

// TestLatencyObserverSeesEveryStep: acks=all produces through two
// followers tell the Observer, per append, when the leader had it durable
// and how long the ISR held it, and per follower append how long that
// took; acks=1 appends are durable but wait for no ISR.
func TestLatencyObserverSeesEveryStep(t *testing.T) {
	obs := &countingObserver{}
	c := hourPollCluster(t, 2, obs)
	const all, one = 5, 3
	for i := range all + one {
		acks := int16(-1)
		if i >= all {
			acks = 1
		}
		_, wait, err := c.leaders[i%2].AppendAsLeaderTimeout(oneRecord(t), acks, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- wait() }()
		if err := within(t, done, "the produce's answer"); err != nil {
			t.Fatal(err)
		}
	}
	// The followers' appends of the last records may still run: wait for
	// both followers to hold all of them (bounded).
	deadline := time.Now().Add(20 * time.Second)
	for {
		durable, isrWait, followerAppend, negative := obs.counts()
		if durable == all+one && isrWait == all && followerAppend >= 2*all && !negative {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("observed %d durable (want %d), %d ISR waits (want %d), %d follower appends (want at least %d), a negative time: %v",
				durable, all+one, isrWait, all, followerAppend, 2*all, negative)
		}
		runtime.Gosched()
	}
}

// TestLatencyFetchCounters: a follower Fetch held to the end of its wait
// with nothing new counts as expired; a follower round that fails counts
// as a fetch failure.
func TestLatencyFetchCounters(t *testing.T) {
	m, _ := leaderWithFollower(t, vfs.NewMem())
	if n := followerFetch(t, m, 0, 1); n != 0 {
		t.Fatalf("an idle fetch got %d batches", n)
	}
	if st := m.ReplicaFetchStats(); st.Expired != 1 {
		t.Fatalf("%d expired follower fetches after one held to its end, want 1", st.Expired)
	}
	if n := followerFetch(t, m, 0, 0); n != 0 {
		t.Fatalf("an idle fetch got %d batches", n)
	}
	if st := m.ReplicaFetchStats(); st.Expired != 1 {
		t.Fatalf("%d expired follower fetches after one that asked no wait, want still 1", st.Expired)
	}

	fm := newFetcherManager(2, FetchConfig{Dial: func(int32) (LeaderConn, error) { return failingConn{}, nil },
		Backoff: time.Millisecond}, slog.New(slog.DiscardHandler))
	defer fm.stopAll()
	m.fetchers = fm
	_, p := leaderWithFollower(t, vfs.NewMem())
	if err := p.becomeLeaderOrFollower(false, 2); err != nil {
		t.Fatal(err)
	}
	fm.follow(p.tp, p, 1, 2)
	deadline := time.Now().Add(20 * time.Second)
	for m.ReplicaFetchStats().FetchFailures < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d fetch failures counted, want at least 2", m.ReplicaFetchStats().FetchFailures)
		}
		runtime.Gosched()
	}
}

// failingConn is a leader connection whose every round trip fails.
type failingConn struct{}

func (failingConn) RoundTrip(kmsg.Request, time.Time) ([]byte, error) {
	return nil, errors.New("failingConn: refused")
}
func (failingConn) Close() error { return nil }

// BenchmarkLeaderAppendObserved is an acks=1 append on a one-replica
// leader, on a memory log, waited for: without an Observer and with one
// (what it adds to the append path: three clock reads and the calls).
func BenchmarkLeaderAppendObserved(b *testing.B) {
	for _, tc := range []struct {
		name string
		obs  Observer
	}{{"none", nil}, {"counting", &countingObserver{}}} {
		b.Run(tc.name, func(b *testing.B) {
			tp := engine.TopicPartition{Topic: "t"}
			l, _, err := engine.Open(vfs.NewMem(), "/d/t-0", tp, engine.DefaultOptions(), engine.OpenOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			p := newPartition(tp, l, &partitionHooks{nodeID: 1, now: time.Now, observer: tc.obs}, 0)
			p.setMetadata(1, []int32{1}, []int32{1}, 1, 30000)
			if err := p.becomeLeader(1); err != nil {
				b.Fatal(err)
			}
			rec := oneRecordB(b)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				_, wait, err := p.AppendAsLeaderTimeout(rec, -1, time.Minute)
				if err != nil {
					b.Fatal(err)
				}
				if err := wait(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func oneRecordB(b *testing.B) []byte {
	bl := batch.NewBuilder(batch.CompressionNone)
	bl.Append(batch.Record{Timestamp: 1, Value: []byte("v")})
	raw, err := bl.Build()
	if err != nil {
		b.Fatal(err)
	}
	return raw
}
