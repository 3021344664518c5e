package quorum

import (
	"testing"
	"time"
)

// A stall delivers every missed tick at once, so the election's lease sees
// the time that passed; time that runs backwards delivers nothing.
func TestTickCounterCatchesUp(t *testing.T) {
	tc := tickCounter{start: 10 * time.Second, tick: 100 * time.Millisecond}
	steps := []struct {
		now  time.Duration
		want int64
	}{
		{10*time.Second + 50*time.Millisecond, 0},
		{10*time.Second + 100*time.Millisecond, 1},
		{10*time.Second + 250*time.Millisecond, 1},
		{15 * time.Second, 48}, // a 4.75 s stall
		{14 * time.Second, 0},  // not monotonic: nothing, and no debt
		{15*time.Second + 100*time.Millisecond, 1},
	}
	for i, s := range steps {
		if got := tc.due(s.now); got != s.want {
			t.Fatalf("step %d: due(%v) = %d ticks, want %d", i, s.now, got, s.want)
		}
	}
	if tc.delivered != 51 {
		t.Fatalf("delivered %d ticks in all, want 51", tc.delivered)
	}
}
