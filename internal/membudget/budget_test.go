package membudget

import (
	"context"
	"testing"
	"time"
)

// waitFor polls cond until it holds or a deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestFirstComeFirstServed(t *testing.T) {
	b := New(10)
	if err := b.Acquire(context.Background(), 8); err != nil {
		t.Fatal(err)
	}
	order := make(chan int64, 2)
	// A large waiter arrives first; a small one that would fit now must
	// wait behind it, or a stream of small ones could starve it.
	go func() { b.Acquire(context.Background(), 6); order <- 6 }()
	waitFor(t, "the large waiter", func() bool { return b.Waiting() == 1 })
	go func() { b.Acquire(context.Background(), 1); order <- 1 }()
	waitFor(t, "the small waiter", func() bool { return b.Waiting() == 2 })
	if b.TryAcquire(1) {
		t.Fatal("TryAcquire jumped the queue")
	}
	// Room for the small one but not the large one: both keep waiting.
	b.Release(3)
	if b.Waiting() != 2 || b.InUse() != 5 {
		t.Fatalf("after a partial release: waiting %d, in use %d; want 2 and 5", b.Waiting(), b.InUse())
	}
	b.Release(5)
	got := map[int64]bool{<-order: true, <-order: true}
	if !got[6] || !got[1] || b.InUse() != 7 {
		t.Fatalf("granted %v, in use %d; want 6 and 1, in use 7", got, b.InUse())
	}
	if got := b.Peak(); got != 8 {
		t.Fatalf("peak %d, want 8", got)
	}
}

func TestClampAndCancel(t *testing.T) {
	b := New(10)
	// More than the capacity waits for the whole budget.
	if err := b.Acquire(context.Background(), 100); err != nil {
		t.Fatal(err)
	}
	if b.InUse() != 10 {
		t.Fatalf("in use %d after a clamped acquire, want 10", b.InUse())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- b.Acquire(ctx, 1) }()
	waitFor(t, "the waiter", func() bool { return b.Waiting() == 1 })
	cancel()
	if err := <-done; err == nil {
		t.Fatal("Acquire returned nil after its context ended")
	}
	b.Release(100)
	if b.InUse() != 0 || b.Waiting() != 0 {
		t.Fatalf("in use %d, waiting %d after release, want 0 and 0", b.InUse(), b.Waiting())
	}
}

func TestNilIsUnbounded(t *testing.T) {
	var b *Budget
	if err := b.Acquire(context.Background(), 1<<40); err != nil || !b.TryAcquire(1<<40) {
		t.Fatal("a nil budget refused")
	}
	b.Release(1 << 40)
}

// TestFairShareBetweenOwners: an owner that holds its share is passed
// over while another owner waits, however early it asked; an owner that
// holds nothing is served in its turn even for more than its share; with
// nobody else waiting an owner may take the whole budget.
func TestFairShareBetweenOwners(t *testing.T) {
	ctx := context.Background()
	b := New(10)
	a, c := "a", "c"
	// Alone, a may take everything.
	for range 2 {
		if err := b.AcquireAs(ctx, a, 5); err != nil {
			t.Fatal(err)
		}
	}
	order := make(chan string, 3)
	go func() { b.AcquireAs(ctx, a, 4); order <- "a" }()
	waitFor(t, "a's third request", func() bool { return b.Waiting() == 1 })
	go func() { b.AcquireAs(ctx, c, 4); order <- "c" }()
	waitFor(t, "c's request", func() bool { return b.Waiting() == 2 })
	// 5 come back: a (holding 5 of a share of 5) is passed over for c.
	b.ReleaseAs(a, 5)
	if got := <-order; got != "c" {
		t.Fatalf("%s served first, want c", got)
	}
	if st := b.Stats(); st.Waiting != 1 || st.InUse != 9 || st.Waited != 2 {
		t.Fatalf("stats %+v, want 1 waiting, 9 in use, 2 waited", st)
	}
	// c gone, a is alone again and gets its turn.
	b.ReleaseAs(c, 4)
	if got := <-order; got != "a" {
		t.Fatalf("%s served, want a", got)
	}
	b.ReleaseAs(a, 9)
	if st := b.Stats(); st.InUse != 0 || st.Waiting != 0 {
		t.Fatalf("stats %+v after every release", st)
	}

	// An owner holding nothing is never over its share: a request for
	// the whole budget is served in its turn.
	if err := b.AcquireAs(ctx, a, 2); err != nil {
		t.Fatal(err)
	}
	go func() { b.AcquireAs(ctx, c, 10); order <- "c" }()
	waitFor(t, "c's whole-budget request", func() bool { return b.Waiting() == 1 })
	go func() { b.AcquireAs(ctx, a, 1); order <- "a" }()
	waitFor(t, "a's request", func() bool { return b.Waiting() == 2 })
	b.ReleaseAs(a, 2)
	if got := <-order; got != "c" {
		t.Fatalf("%s served first, want c", got)
	}
	b.ReleaseAs(c, 10)
	if got := <-order; got != "a" {
		t.Fatalf("%s served, want a", got)
	}
}
