package wal

import (
	"errors"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// waitTimeout bounds every wait in these tests; reaching it is a failure.
const waitTimeout = 10 * time.Second

// fakeDisk is a SyncFunc the test drives: each sync reads the write
// position when it starts, announces it on started, and completes only
// when the test sends its result on finish.
type fakeDisk struct {
	mu      sync.Mutex
	written int64
	started chan int64
	finish  chan error
}

func newFakeDisk() *fakeDisk {
	return &fakeDisk{started: make(chan int64), finish: make(chan error)}
}

func (d *fakeDisk) write(pos int64) {
	d.mu.Lock()
	d.written = pos
	d.mu.Unlock()
}

func (d *fakeDisk) sync() (int64, error) {
	d.mu.Lock()
	covered := d.written
	d.mu.Unlock()
	d.started <- covered
	return covered, <-d.finish
}

// expectSyncStart waits for the next sync to start and checks what it covers.
func (d *fakeDisk) expectSyncStart(t *testing.T, covered int64) {
	t.Helper()
	select {
	case got := <-d.started:
		if got != covered {
			t.Fatalf("sync started covering %d, want %d", got, covered)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("no sync started within %v", waitTimeout)
	}
}

func (d *fakeDisk) finishSync(t *testing.T, err error) {
	t.Helper()
	select {
	case d.finish <- err:
	case <-time.After(waitTimeout):
		t.Fatalf("no sync to finish within %v", waitTimeout)
	}
}

// goWait runs g.Wait(pos) in a goroutine; the channel gets its result.
func goWait(g *GroupCommitter, pos int64) <-chan error {
	done := make(chan error, 1)
	go func() { done <- g.Wait(pos) }()
	return done
}

func expectDone(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(waitTimeout):
		t.Fatalf("%s: still waiting after %v", what, waitTimeout)
		return nil
	}
}

func expectNotDone(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s returned (%v) but must still wait", what, err)
	default:
	}
}

// waitForWaiters polls until n calls are parked in g.Wait. A waiter is
// added under g.mu and releases g.mu only in cond.Wait or to run a sync, so
// once n are registered, those not syncing are parked.
func waitForWaiters(t *testing.T, g *GroupCommitter, n int) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		g.mu.Lock()
		got := len(g.waiters)
		g.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters after %v, want %d", got, waitTimeout, n)
		}
		runtime.Gosched()
	}
}

// TestGroupCommitSyncStartedBeforeWriteDoesNotRelease: a sync that began
// before a write cannot make that write durable; its waiter needs the next.
func TestGroupCommitSyncStartedBeforeWriteDoesNotRelease(t *testing.T) {
	d := newFakeDisk()
	g := NewGroupCommitter(0, d.sync)

	d.write(10)
	a := goWait(g, 10)
	d.expectSyncStart(t, 10) // sync 1 is in its fdatasync, covering 10

	d.write(20) // a write that lands while sync 1 runs
	b := goWait(g, 20)
	waitForWaiters(t, g, 2) // b is parked behind sync 1

	d.finishSync(t, nil)
	if err := expectDone(t, a, "waiter at 10"); err != nil {
		t.Fatalf("waiter at 10: %v", err)
	}
	d.expectSyncStart(t, 20) // b had to start sync 2 ...
	expectNotDone(t, b, "waiter at 20 after a sync that began before its write")
	if got := g.Durable(); got != 10 {
		t.Fatalf("Durable = %d while sync 2 runs, want 10", got)
	}
	d.finishSync(t, nil)
	if err := expectDone(t, b, "waiter at 20"); err != nil {
		t.Fatalf("waiter at 20: %v", err)
	}
	if got := g.Syncs(); got != 2 {
		t.Fatalf("Syncs = %d, want 2", got)
	}
}

// TestGroupCommitCoalesces: waiters that arrive while a sync runs share one
// next sync, whatever their number.
func TestGroupCommitCoalesces(t *testing.T) {
	const n = 50
	d := newFakeDisk()
	g := NewGroupCommitter(0, d.sync)
	d.write(1)
	first := goWait(g, 1)
	d.expectSyncStart(t, 1)
	var rest []<-chan error
	for i := int64(2); i <= n; i++ {
		d.write(i)
		rest = append(rest, goWait(g, i))
	}
	waitForWaiters(t, g, n)
	d.finishSync(t, nil)
	d.expectSyncStart(t, n)
	d.finishSync(t, nil)
	if err := expectDone(t, first, "first waiter"); err != nil {
		t.Fatal(err)
	}
	for i, done := range rest {
		if err := expectDone(t, done, "waiter"); err != nil {
			t.Fatalf("waiter %d: %v", i+2, err)
		}
	}
	if got := g.Syncs(); got != 2 {
		t.Fatalf("%d waiters cost %d syncs, want 2", n, got)
	}
}

func TestGroupCommitStickyError(t *testing.T) {
	calls := 0
	g := NewGroupCommitter(0, func() (int64, error) {
		calls++
		if calls == 1 {
			return 0, syscall.EIO
		}
		return 100, nil
	})
	err := g.Wait(1)
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("Wait after a failed sync: %v, want EIO", err)
	}
	// Nothing is durable again: no retry, no Advance, not even positions
	// that were durable before.
	if err2 := g.Wait(1); !errors.Is(err2, syscall.EIO) || calls != 1 {
		t.Fatalf("second Wait: %v after %d syncs, want the sticky error and no retry", err2, calls)
	}
	if err2 := g.Wait(0); !errors.Is(err2, syscall.EIO) {
		t.Fatalf("Wait(0): %v, want the sticky error", err2)
	}
	g.Advance(50)
	if got := g.Durable(); got != 0 {
		t.Fatalf("Advance after failure moved Durable to %d", got)
	}
	g.Fail(errors.New("later"))
	if !errors.Is(g.Err(), syscall.EIO) {
		t.Fatalf("Err = %v, want the first error", g.Err())
	}
}

// TestGroupCommitFailDuringSync: a write error reported while a sync runs
// wins over that sync's success, and over its failure.
func TestGroupCommitFailDuringSync(t *testing.T) {
	for _, syncErr := range []error{nil, syscall.EIO} {
		d := newFakeDisk()
		g := NewGroupCommitter(0, d.sync)
		d.write(5)
		w := goWait(g, 5)
		d.expectSyncStart(t, 5)
		writeErr := errors.New("write: no space")
		g.Fail(writeErr)
		d.finishSync(t, syncErr)
		if err := expectDone(t, w, "waiter"); err != writeErr {
			t.Fatalf("sync result %v: waiter got %v, want the write error", syncErr, err)
		}
		if g.Err() != writeErr || g.Durable() != 0 {
			t.Fatalf("sync result %v: Err %v, Durable %d", syncErr, g.Err(), g.Durable())
		}
	}
}

func TestGroupCommitAdvanceNeverGoesBackwards(t *testing.T) {
	d := newFakeDisk()
	g := NewGroupCommitter(5, d.sync)
	g.Advance(3)
	if got := g.Durable(); got != 5 {
		t.Fatalf("Advance(3) from 5: Durable = %d", got)
	}
	g.Advance(30)
	if got := g.Durable(); got != 30 {
		t.Fatalf("Advance(30): Durable = %d", got)
	}
	// A sync that reports less than what is durable does not lower it.
	d.write(40)
	w := goWait(g, 40)
	d.expectSyncStart(t, 40)
	g.Advance(45)
	d.finishSync(t, nil)
	if err := expectDone(t, w, "waiter"); err != nil {
		t.Fatal(err)
	}
	if got := g.Durable(); got != 45 {
		t.Fatalf("sync covering 40 after Advance(45): Durable = %d", got)
	}
	// An Advance during a sync covers a waiter that sync falls short of.
	w = goWait(g, 60)
	d.expectSyncStart(t, 40)
	g.Advance(60)
	d.finishSync(t, nil)
	if err := expectDone(t, w, "waiter at 60"); err != nil {
		t.Fatal(err)
	}
}

// TestGroupCommitReset: a truncation to 10 releases the waiter at 5 (its
// write survived and is durable), fails the waiter at 15 with ErrTruncated,
// and the sync that was running across it must not count: its position
// names bytes that are gone.
func TestGroupCommitReset(t *testing.T) {
	d := newFakeDisk()
	g := NewGroupCommitter(0, d.sync)
	d.write(15)
	low := goWait(g, 5)
	d.expectSyncStart(t, 15)
	high := goWait(g, 15)
	waitForWaiters(t, g, 2)

	g.Reset(10)
	if err := expectDone(t, high, "waiter above the truncation"); !errors.Is(err, ErrTruncated) {
		t.Fatalf("waiter above the truncation: %v, want ErrTruncated", err)
	}
	d.finishSync(t, nil) // stale: covered 15 from before the Reset
	if err := expectDone(t, low, "waiter below the truncation"); err != nil {
		t.Fatalf("waiter below the truncation: %v", err)
	}
	if got := g.Durable(); got != 10 {
		t.Fatalf("Durable = %d after a stale sync, want 10", got)
	}
	// New writes at the truncated positions need a sync of their own.
	d.write(12)
	w := goWait(g, 12)
	d.expectSyncStart(t, 12)
	expectNotDone(t, w, "waiter on rewritten positions")
	d.finishSync(t, nil)
	if err := expectDone(t, w, "waiter on rewritten positions"); err != nil {
		t.Fatal(err)
	}
}

// TestGroupCommitRegisterSeesLaterReset: a write registered before a
// truncation removed it fails with ErrTruncated, even though its Wait
// starts after the Reset; it must not wait for positions that no longer
// exist, nor be released by new bytes written there.
func TestGroupCommitRegisterSeesLaterReset(t *testing.T) {
	var mu sync.Mutex
	written, syncs := int64(5), 0
	g := NewGroupCommitter(0, func() (int64, error) {
		mu.Lock()
		defer mu.Unlock()
		syncs++
		if syncs > 100 {
			return 0, errors.New("waiter spins: it waits for truncated positions")
		}
		return written, nil
	})
	w := g.Register(5)
	g.Reset(3)
	mu.Lock()
	written = 6 // someone else's bytes now fill positions 4-6
	mu.Unlock()
	if err := w.Wait(); !errors.Is(err, ErrTruncated) {
		t.Fatalf("Wait after a Reset below the registered write: %v, want ErrTruncated", err)
	}
	// A waiter registered after the Reset is unaffected by it.
	if err := g.Register(6).Wait(); err != nil {
		t.Fatalf("waiter registered after the Reset: %v", err)
	}
}

// TestGroupCommitRecover: after a failed sync, Recover (the owner cut the
// log back to the durable position) clears the sticky error; a write
// registered above that position gets the reason given, never a success,
// and new writes become durable by syncs of their own.
func TestGroupCommitRecover(t *testing.T) {
	var mu sync.Mutex
	written, fail := int64(5), true
	g := NewGroupCommitter(5, func() (int64, error) {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return 0, syscall.ENOSPC
		}
		return written, nil
	})
	mu.Lock()
	written = 9
	mu.Unlock()
	pending := g.Register(9)
	if err := g.Wait(8); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Wait across the failed sync: %v", err)
	}
	why := errors.New("cut: out of space")
	mu.Lock()
	fail, written = false, 5
	mu.Unlock()
	g.Recover(5, why)
	if err := pending.Wait(); err != why {
		t.Fatalf("write registered above the recovery point: %v, want %v", err, why)
	}
	if g.Err() != nil || g.Durable() != 5 {
		t.Fatalf("after Recover: Err %v Durable %d", g.Err(), g.Durable())
	}
	mu.Lock()
	written = 7
	mu.Unlock()
	if err := g.Wait(7); err != nil || g.Durable() != 7 {
		t.Fatalf("new write after Recover: %v, Durable %d", err, g.Durable())
	}
}
