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
