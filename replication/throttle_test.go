package replication

import (
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/internal/vfs"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestThrottleTokenBucket(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	th := NewThrottle(clk.now)
	if got := th.Available(); got != math.MaxInt64 {
		t.Fatalf("unthrottled: Available = %d, want MaxInt64", got)
	}
	th.Record(1 << 30)
	if got := th.Available(); got != math.MaxInt64 {
		t.Fatalf("unthrottled after a record: Available = %d", got)
	}

	th.SetRate(1000)
	if got := th.Available(); got != 1000 {
		t.Fatalf("a new throttle starts with a full bucket of one second: %d, want 1000", got)
	}
	th.Record(600)
	if got := th.Available(); got != 400 {
		t.Fatalf("after 600 bytes: %d, want 400", got)
	}
	// A read larger than what is left runs into debt...
	th.Record(900)
	if got := th.Available(); got != -500 {
		t.Fatalf("after running over: %d, want -500", got)
	}
	// ...paid back at the rate: 0.5 s clears it, 0.25 s more gives 250.
	clk.advance(500 * time.Millisecond)
	if got := th.Available(); got != 0 {
		t.Fatalf("after 0.5 s: %d, want 0", got)
	}
	clk.advance(250 * time.Millisecond)
	if got := th.Available(); got != 250 {
		t.Fatalf("after 0.75 s: %d, want 250", got)
	}
	// The bucket holds at most one second of the rate.
	clk.advance(time.Hour)
	if got := th.Available(); got != 1000 {
		t.Fatalf("after an idle hour: %d, want the capacity 1000", got)
	}
	// A lower rate keeps the tokens up to its own capacity.
	th.SetRate(100)
	if got := th.Available(); got != 100 {
		t.Fatalf("lowered to 100 B/s: %d, want 100", got)
	}
	// 0 holds everything back, whatever time passes.
	th.SetRate(0)
	clk.advance(time.Minute)
	if got := th.Available(); got != 0 {
		t.Fatalf("rate 0: %d, want 0", got)
	}
	// Lifting the throttle; setting one again starts full.
	th.SetRate(-1)
	if th.Rate() != Unthrottled || th.Available() != math.MaxInt64 {
		t.Fatalf("lifted: rate %d, available %d", th.Rate(), th.Available())
	}
	th.SetRate(5000)
	if got := th.Available(); got != 5000 {
		t.Fatalf("throttled again: %d, want 5000", got)
	}
	th.Held()
	th.recordFetch(throttledRead{bytes: 10, held: 2})
	st := th.Stats()
	if st.Rate != 5000 || st.Bytes != 1<<30+600+900+10 || st.Held != 3 {
		t.Fatalf("stats %+v", st)
	}
}

// The average rate over many reads stays at the rate: a cross-check of
// the bucket against the arithmetic, reading as fast as it admits.
func TestThrottleKeepsTheRate(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	th := NewThrottle(clk.now)
	const rate = 64 << 10
	th.SetRate(rate)
	var moved int64
	for step := 0; step < 10000; step++ {
		clk.advance(10 * time.Millisecond)
		if a := th.Available(); a > 0 {
			// Reads of up to 16 KiB, at least one 3000-byte batch.
			n := max(min(a, 16<<10), 3000)
			th.Record(n)
			moved += n
		}
	}
	elapsed := 100.0 // seconds: 10000 steps of 10 ms
	got := float64(moved) / elapsed
	// At most the rate plus the first full bucket and the last read's
	// unpaid debt, spread over the run.
	if got > rate+(rate+16<<10)/elapsed+1 || got < rate*0.95 {
		t.Fatalf("moved %d bytes in %.0f s: %.0f B/s, want about %d", moved, elapsed, got, rate)
	}
}

func TestParseThrottledReplicas(t *testing.T) {
	for _, tc := range []struct {
		value  string
		broker int32
		all    bool
		has    []int32
		hasNot []int32
		bad    bool
	}{
		{value: "", broker: 1, hasNot: []int32{0}},
		{value: "*", broker: 7, all: true, has: []int32{0, 99}},
		{value: "0:1,0:2,1:2, 3:1", broker: 1, has: []int32{0, 3}, hasNot: []int32{1, 2}},
		{value: "0:1,0:2,1:2", broker: 2, has: []int32{0, 1}},
		{value: "0:1,*", bad: true},
		{value: "0-1", bad: true},
		{value: "x:1", bad: true},
		{value: "-1:1", bad: true},
	} {
		r, err := config.ParseThrottledReplicas(tc.value, tc.broker)
		if (err != nil) != tc.bad {
			t.Errorf("%q: err %v", tc.value, err)
			continue
		}
		if r.All != tc.all {
			t.Errorf("%q: All %v", tc.value, r.All)
		}
		for _, p := range tc.has {
			if !r.Has(p) {
				t.Errorf("%q on broker %d: partition %d not throttled", tc.value, tc.broker, p)
			}
		}
		for _, p := range tc.hasNot {
			if r.Has(p) {
				t.Errorf("%q on broker %d: partition %d throttled", tc.value, tc.broker, p)
			}
		}
	}
	if err := config.ValidateTopicConfig("leader.replication.throttled.replicas", "0:1,banana"); err == nil {
		t.Error("ValidateTopicConfig took a bad throttled replicas list")
	}
	if err := config.ValidateTopicConfig("follower.replication.throttled.replicas", "*"); err != nil {
		t.Errorf("ValidateTopicConfig refused *: %v", err)
	}
}

// The leader's side on one Manager, with a fake clock: once the rate is
// used up, a follower outside the ISR gets no records of a throttled
// partition, while an ISR member of the same partition and any follower
// of an unthrottled partition still get theirs; time refills the bucket.
func TestLeaderThrottleHoldsOnlyReplicasOutsideTheISR(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	m := &Manager{nodeID: 1, partitions: map[engine.TopicPartition]*Partition{},
		leaderThrottle: NewThrottle(clk.now), followerThrottle: NewThrottle(clk.now)}
	open := func(topic string, throttled bool) {
		tp := engine.TopicPartition{Topic: topic}
		l, _, err := engine.Open(vfs.NewMem(), "/d/"+topic+"-0", tp, engine.DefaultOptions(), engine.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		p := newPartition(tp, l, &partitionHooks{nodeID: 1, now: clk.now}, 0)
		p.setMetadata(1, []int32{1, 2, 3}, []int32{1, 2}, 1, 30000)
		if err := p.becomeLeader(1); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 4; i++ {
			if _, wait, err := p.AppendAsLeader(oneRecord(t), 1); err != nil || wait() != nil {
				t.Fatalf("append to %s: %v", topic, err)
			}
		}
		p.throttled.leader.Store(throttled)
		m.partitions[tp] = p
	}
	open("slow", true)
	open("fast", false)
	fetch := func(from int32) map[string]int {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(ReplicaFetchVersion)
		req.ReplicaID, req.MaxBytes, req.MinBytes, req.MaxWaitMillis = from, 1<<20, 0, 0
		for _, topic := range []string{"slow", "fast"} {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = -1, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		body := m.serveFetch(from, 0, req)
		defer body.Done()
		resp := decodeFetch(t, body.Chunks)
		got := map[string]int{}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					t.Fatalf("fetch by %d of %s: error %d", from, rt.Topic, rp.ErrorCode)
				}
				got[rt.Topic] = len(rp.RecordBatches)
			}
		}
		return got
	}
	all := fetch(2)["fast"]
	if all == 0 {
		t.Fatal("an unthrottled fetch returned nothing")
	}
	m.leaderThrottle.SetRate(10)
	// The bucket's 10 bytes let one batch through (a read returns at
	// least one), which puts it in debt.
	if got := fetch(3); got["slow"] == 0 || got["slow"] >= all || got["fast"] != all {
		t.Fatalf("first throttled fetch by 3: %v, want one batch of slow (of %d bytes) and all of fast", got, all)
	}
	if got := fetch(3); got["slow"] != 0 || got["fast"] != all {
		t.Fatalf("fetch by 3 in debt: %v, want nothing of slow and all of fast", got)
	}
	// Replica 2 is in the ISR: not held, though its bytes count.
	before := m.leaderThrottle.Stats()
	if got := fetch(2); got["slow"] != all || got["fast"] != all {
		t.Fatalf("fetch by ISR member 2: %v, want everything", got)
	}
	after := m.leaderThrottle.Stats()
	if after.Bytes-before.Bytes != int64(all) || after.Held != 1 {
		t.Fatalf("throttle stats %+v then %+v: want %d more bytes and 1 held", before, after, all)
	}
	// Time pays the debt back.
	clk.advance(time.Hour)
	if got := fetch(3); got["slow"] == 0 {
		t.Fatalf("fetch by 3 after the bucket refilled: %v", got)
	}
}

// The throttle's cost per throttled partition read: one Available and
// one Record, as a fetch makes them.
func BenchmarkThrottle(b *testing.B) {
	th := NewThrottle(nil)
	th.SetRate(64 << 10)
	for b.Loop() {
		if th.Available() > -1<<40 {
			th.Record(100)
		}
	}
}
