package replication

import (
	"math"
	"testing"
	"time"

	"github.com/wren-broker/wren/config"
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
