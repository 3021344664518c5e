package wake

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// A held follower fetch waits on thousands of partitions with a goroutine
// per chunk of them, not one per partition, and still wakes when any one
// of them gets records.
func TestAnyGoroutinesPerChunk(t *testing.T) {
	const n = 5000
	chans := make([]chan struct{}, n)
	recv := make([]<-chan struct{}, n)
	for i := range chans {
		chans[i] = make(chan struct{})
		recv[i] = chans[i]
	}
	base := runtime.NumGoroutine()
	woke := make(chan bool, 1)
	go func() { woke <- Any(context.Background(), recv, time.Now().Add(time.Minute)) }()
	chunks := (n + chunk - 1) / chunk
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() < base+1+chunks {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines, want %d waiting", runtime.NumGoroutine(), base+1+chunks)
		}
		runtime.Gosched()
	}
	if got := runtime.NumGoroutine() - base; got > chunks+2 {
		t.Fatalf("waiting on %d channels takes %d goroutines, want at most %d", n, got, chunks+2)
	}
	close(chans[n-3])
	select {
	case ok := <-woke:
		if !ok {
			t.Fatal("woke for the deadline, not the closed channel")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a closed channel did not wake the wait within 10 s")
	}
	// The chunks' goroutines end with the wait.
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left after the wait, want %d", runtime.NumGoroutine(), base)
		}
		runtime.Gosched()
	}
	if Any(context.Background(), recv[:10], time.Now().Add(20*time.Millisecond)) {
		t.Fatal("woke with nothing closed")
	}
}

// Any returns false when its context ends, and true for a channel closed
// before it, at every size (one select, one select with the context, a
// goroutine per chunk).
func TestAnyContextAndClosed(t *testing.T) {
	for _, n := range []int{0, 1, 2, maxSelect, maxSelect + 1, 3 * chunk} {
		recv := make([]<-chan struct{}, n)
		for i := range recv {
			recv[i] = make(chan struct{})
		}
		ctx, cancel := context.WithCancel(context.Background())
		woke := make(chan bool, 1)
		go func() { woke <- Any(ctx, recv, time.Now().Add(time.Minute)) }()
		cancel()
		select {
		case ok := <-woke:
			if ok {
				t.Fatalf("%d channels: woke for a channel after the context ended", n)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%d channels: an ended context did not end the wait within 10 s", n)
		}
		if n == 0 {
			continue
		}
		closed := make(chan struct{})
		close(closed)
		recv[n-1] = closed
		if !Any(context.Background(), recv, time.Now().Add(time.Minute)) {
			t.Fatalf("%d channels: a closed channel did not wake the wait", n)
		}
	}
}

// TestAnyWakes: a long poll over any number of partitions wakes when any
// one of them appends (the last, the first, one in the middle), and ends
// unwoken at its deadline when none does; one select for a few
// partitions, a goroutine per chunk for many.
func TestAnyWakes(t *testing.T) {
	for _, n := range []int{1, 2, 6, maxSelect, maxSelect + 1, 200, chunk + 1} {
		for _, which := range []int{0, n / 2, n - 1} {
			chans := make([]chan struct{}, n)
			ro := make([]<-chan struct{}, n)
			for i := range chans {
				chans[i] = make(chan struct{})
				ro[i] = chans[i]
			}
			woke := make(chan bool, 1)
			go func() { woke <- Any(context.Background(), ro, time.Now().Add(time.Hour)) }()
			close(chans[which])
			select {
			case ok := <-woke:
				if !ok {
					t.Fatalf("%d channels, %d closed: returned false", n, which)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%d channels, %d closed: not woken within 10 s", n, which)
			}
		}
		ro := make([]<-chan struct{}, n)
		for i := range ro {
			ro[i] = make(chan struct{})
		}
		if Any(context.Background(), ro, time.Now().Add(time.Millisecond)) {
			t.Fatalf("%d channels, none closed: woken before the deadline", n)
		}
	}
}
