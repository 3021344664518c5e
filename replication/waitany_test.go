package replication

import (
	"runtime"
	"testing"
	"time"
)

// A held follower fetch waits on thousands of partitions with a goroutine
// per chunk of them, not one per partition, and still wakes when any one
// of them gets records.
func TestWaitAnyUntilGoroutinesPerChunk(t *testing.T) {
	const n = 5000
	chans := make([]chan struct{}, n)
	recv := make([]<-chan struct{}, n)
	for i := range chans {
		chans[i] = make(chan struct{})
		recv[i] = chans[i]
	}
	base := runtime.NumGoroutine()
	woke := make(chan bool, 1)
	go func() { woke <- waitAnyUntil(recv, time.Now().Add(time.Minute)) }()
	chunks := (n + waitChunk - 1) / waitChunk
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
	if waitAnyUntil(recv[:10], time.Now().Add(20*time.Millisecond)) {
		t.Fatal("woke with nothing closed")
	}
}
