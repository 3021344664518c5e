package uplink

import (
	"testing"
	"time"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// The bucket starts with a tenth of a second of bytes, refills at the
// rate up to that, lends to a record larger than it holds, and makes
// the next record wait for the debt.
func TestUplinkBucket(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	b := newBucket(1000, clk.now) // 1000 B/s, holds 100 B
	if w := b.take(100); w != 0 {
		t.Fatalf("first 100 B wait %v, want 0 (a full bucket)", w)
	}
	if w := b.take(50); w != 50*time.Millisecond {
		t.Fatalf("50 B from an empty bucket wait %v, want 50ms", w)
	}
	// The caller waited; the debt is repaid, and 10 ms more give 10 B.
	clk.advance(60 * time.Millisecond)
	if w := b.take(10); w != 0 {
		t.Fatalf("10 B after 60 ms wait %v, want 0", w)
	}
	// An hour idle fills the bucket to 100 B only: no hour-long burst.
	clk.advance(time.Hour)
	if w := b.take(100); w != 0 {
		t.Fatalf("100 B after an hour wait %v, want 0", w)
	}
	if w := b.take(1); w != time.Millisecond {
		t.Fatalf("1 B more wait %v, want 1ms", w)
	}
	// A record of 5000 B (fifty times the bucket) is lent: it waits the
	// debt of the one before only, and the next waits 5 s more.
	clk.advance(time.Millisecond)
	if w := b.take(5000); w != 5*time.Second {
		t.Fatalf("5000 B wait %v, want 5s", w)
	}
	clk.advance(5 * time.Second)
	if w := b.take(0); w != 0 {
		t.Fatalf("after the debt: wait %v, want 0", w)
	}
	// A clock that steps back takes nothing and gives nothing.
	clk.advance(-time.Minute)
	if w := b.take(0); w != 0 {
		t.Fatalf("clock back: wait %v", w)
	}
}

// Over a simulated minute of back-to-back records, what the bucket lets
// through is the rate times the minute, plus at most what it holds.
func TestUplinkBucketMinute(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	const rate = 250_000
	b := newBucket(rate, clk.now)
	start, sent := clk.t, 0
	for i := 0; clk.t.Sub(start) < time.Minute && i < 1_000_000; i++ {
		size := 300 + i%1700 // records of 300 to 2000 bytes
		clk.advance(b.take(size))
		sent += size
	}
	want := rate * 60
	if sent < want || sent > want+rate/10+2000 {
		t.Fatalf("sent %d bytes in a simulated minute, want %d (+ the bucket's %d and one record)", sent, want, rate/10)
	}
}
