package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/internal/vfs"
)

// fakeBlocks reserves blocks as the controller does (the next unreserved
// one), and can be taken away: while down, every request fails at once
// with NOT_CONTROLLER, or, with hang set, gets no answer until its
// context ends (a controller that was SIGKILLed but is still the one
// this node knows).
type fakeBlocks struct {
	mu    sync.Mutex
	next  int64
	calls int
	down  bool
	hang  bool
	// repeat, when set, answers with the previous block again once.
	repeat bool
	last   int64
}

func (f *fakeBlocks) AllocateProducerIDs(ctx context.Context, broker int32) (int64, error) {
	f.mu.Lock()
	f.calls++
	down, hang := f.down, f.hang
	if !down {
		first := f.next
		if f.repeat && f.calls > 1 {
			first, f.repeat = f.last, false
		} else {
			f.next += ProducerIDBlockSize
		}
		f.last = first
		f.mu.Unlock()
		return first, nil
	}
	f.mu.Unlock()
	if hang {
		<-ctx.Done()
		return 0, fmt.Errorf("%w: controller did not answer: %w", kerr.RequestTimedOut, ctx.Err())
	}
	return 0, fmt.Errorf("%w: no controller is known", kerr.NotController)
}

func (f *fakeBlocks) set(down, hang bool) {
	f.mu.Lock()
	f.down, f.hang = down, hang
	f.mu.Unlock()
}

func (f *fakeBlocks) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// hasPrefetched says whether m holds a block behind the current one.
func (m *ProducerIDManager) hasPrefetched() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.prefetched >= 0
}

func testManager(t *testing.T, src ProducerIDBlocks) *ProducerIDManager {
	t.Helper()
	m := NewProducerIDManager(src, ProducerIDManagerConfig{Broker: 1, RequestTimeout: 200 * time.Millisecond,
		RetryBackoff: time.Millisecond, MaxRetryBackoff: 5 * time.Millisecond, BlockWait: 50 * time.Millisecond})
	t.Cleanup(func() { m.Close() })
	return m
}

// waitFirstBlock waits, within a deadline, until m holds its first block.
// Next waits only BlockWait for a block and then answers the retriable
// COORDINATOR_LOAD_IN_PROGRESS, as it should; a test that takes ids
// without retrying must not race the first request for a block, which on
// a loaded machine (or before a controller acts) can take longer.
func waitFirstBlock(t *testing.T, m *ProducerIDManager) {
	t.Helper()
	pollUntil(t, "the first block", 10*time.Second, func() bool { return m.Available() > 0 })
}

// takeIDs takes n ids from m, failing on any error, and records each in
// seen, failing on a repeat or an id not above the one before.
func takeIDs(t *testing.T, m *ProducerIDManager, n int, seen map[int64]bool, last *int64) {
	t.Helper()
	for i := 0; i < n; i++ {
		id, err := m.Next(context.Background())
		if err != nil {
			t.Fatalf("id %d of %d: %v", i+1, n, err)
		}
		if seen[id] || id <= *last {
			t.Fatalf("id %d handed out after %d (seen before: %v)", id, *last, seen[id])
		}
		seen[id], *last = true, id
	}
}

// TestProducerIDManagerPrefetch: the first block is asked for at start;
// the next one only once 90% of the current block is used, and it is
// there before the current block runs out, so the ids run on without a
// gap in service.
func TestProducerIDManagerPrefetch(t *testing.T) {
	src := &fakeBlocks{}
	m := testManager(t, src)
	waitFirstBlock(t, m)
	seen, last := map[int64]bool{}, int64(-1)
	takeIDs(t, m, 899, seen, &last)
	if n := src.callCount(); n != 1 {
		t.Fatalf("%d requests for a block with 899 of 1000 ids used, want 1 (the first block)", n)
	}
	if n := m.Available(); n != 101 {
		t.Fatalf("%d ids available with 899 of one block used, want 101", n)
	}
	takeIDs(t, m, 1, seen, &last)
	pollUntil(t, "the next block, asked for at 90% used", 5*time.Second, m.hasPrefetched)
	if n := src.callCount(); n != 2 {
		t.Fatalf("%d requests for a block, want 2", n)
	}
	if n := m.Available(); n != 100+ProducerIDBlockSize {
		t.Fatalf("%d ids available, want the 100 left and the prefetched block", n)
	}
	// The controller goes away: the 100 ids left and the whole
	// prefetched block still come from memory.
	src.set(true, false)
	takeIDs(t, m, 100+ProducerIDBlockSize, seen, &last)
	if last != 2*ProducerIDBlockSize-1 {
		t.Fatalf("last id %d, want %d", last, 2*ProducerIDBlockSize-1)
	}
}

// TestProducerIDManagerControllerAway: with both blocks used up while the
// controller is away, Next answers a retriable error (never an id it
// does not hold), and the requests for a block go on until the
// controller is back; then ids continue above every id handed out.
func TestProducerIDManagerControllerAway(t *testing.T) {
	for _, hang := range []bool{false, true} {
		t.Run(fmt.Sprintf("hang=%v", hang), func(t *testing.T) {
			src := &fakeBlocks{}
			m := testManager(t, src)
			waitFirstBlock(t, m)
			seen, last := map[int64]bool{}, int64(-1)
			takeIDs(t, m, 900, seen, &last)
			pollUntil(t, "the prefetched block", 5*time.Second, m.hasPrefetched)
			src.set(true, hang)
			takeIDs(t, m, 100+ProducerIDBlockSize, seen, &last)
			calls := src.callCount()
			for i := 0; i < 3; i++ {
				id, err := m.Next(context.Background())
				if err == nil {
					t.Fatalf("id %d handed out with every block used up and the controller away", id)
				}
				if !errors.Is(err, kerr.CoordinatorLoadInProgress) || !kerr.IsRetriable(err) {
					t.Fatalf("no block: %v, want the retriable COORDINATOR_LOAD_IN_PROGRESS", err)
				}
			}
			pollUntil(t, "more requests for a block while the controller is away", 5*time.Second, func() bool {
				return src.callCount() > calls+1
			})
			src.set(false, false)
			// A request that hung may still be waiting out its timeout:
			// retry as a client does.
			pollUntil(t, "an id once the controller is back", 5*time.Second, func() bool {
				_, err := m.Next(context.Background())
				if err != nil && !errors.Is(err, kerr.CoordinatorLoadInProgress) {
					t.Fatal(err)
				}
				return err == nil
			})
			takeIDs(t, m, 10, seen, &last)
			if last < 2*ProducerIDBlockSize {
				t.Fatalf("id %d after the controller came back, want one of a new block (from %d)", last, 2*ProducerIDBlockSize)
			}
		})
	}
}

// TestProducerIDManagerRefusesOldBlock: a block that does not start above
// every block held (an answer that could only repeat ids) is refused, and
// another is asked for.
func TestProducerIDManagerRefusesOldBlock(t *testing.T) {
	src := &fakeBlocks{repeat: true}
	m := testManager(t, src)
	waitFirstBlock(t, m)
	seen, last := map[int64]bool{}, int64(-1)
	// Each later block is waited for before the current one runs out:
	// the second comes only after a refusal and another request, which
	// on a loaded machine can take longer than BlockWait.
	takeIDs(t, m, 900, seen, &last)
	pollUntil(t, "the second block, after the repeated one was refused", 5*time.Second, m.hasPrefetched)
	takeIDs(t, m, ProducerIDBlockSize, seen, &last)
	pollUntil(t, "the third block", 5*time.Second, m.hasPrefetched)
	takeIDs(t, m, 110, seen, &last)
	if n := src.callCount(); n < 4 {
		t.Fatalf("%d requests for a block, want at least 4 (one answer refused)", n)
	}
}

// TestProducerIDManagerNextWaitsForFirstBlock: a request that comes
// before the first block gets an id as soon as the block arrives, within
// BlockWait; ctx ends the wait early with the retriable error.
func TestProducerIDManagerNextWaitsForFirstBlock(t *testing.T) {
	src := &fakeBlocks{down: true}
	m := NewProducerIDManager(src, ProducerIDManagerConfig{Broker: 1, RetryBackoff: time.Millisecond, MaxRetryBackoff: 2 * time.Millisecond,
		BlockWait: time.Minute})
	defer m.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Next(ctx); !errors.Is(err, kerr.CoordinatorLoadInProgress) {
		t.Fatalf("cancelled wait: %v, want COORDINATOR_LOAD_IN_PROGRESS", err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := m.Next(context.Background())
		got <- err
	}()
	src.set(false, false)
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Next still waiting 10 s after the controller came back")
	}
	m.Close()
	if _, err := m.Next(context.Background()); !errors.Is(err, ErrProducerIDManagerClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// TestProducerIDManagerRestart: over the one-voter controller, a manager
// that takes part of its block, holds the next one prefetched and then
// crashes with the node leaves every id of both blocks behind: the
// restarted node's manager starts above them all.
func TestProducerIDManagerRestart(t *testing.T) {
	fsys := vfs.NewMem()
	c := open(t, fsys)
	m := testManager(t, c)
	waitFirstBlock(t, m)
	seen, last := map[int64]bool{}, int64(-1)
	takeIDs(t, m, 950, seen, &last)
	pollUntil(t, "the prefetched block", 5*time.Second, m.hasPrefetched)
	m.Close()
	c.Close()
	for restart := 0; restart < 2; restart++ {
		c = open(t, fsys.Crash(vfs.CrashOptions{}))
		m = testManager(t, c)
		waitFirstBlock(t, m)
		last := int64(-1)
		takeIDs(t, m, 5, seen, &last)
		if first := last - 4; first < int64(2+restart)*ProducerIDBlockSize {
			t.Fatalf("restart %d: ids from %d, inside a block an earlier process held", restart+1, first)
		}
		m.Close()
		c.Close()
	}
}

// TestProducerIDManagersAcrossControllers: three quorum nodes, each
// broker with its manager. The ids they hand out never repeat, through
// the SIGKILL-like stop of the acting controller (its manager's ids
// included) and the new controller's blocks; a broker holding ids keeps
// answering while the new controller is elected.
func TestProducerIDManagersAcrossControllers(t *testing.T) {
	voters, nodes := listenQuorumNodes(t, 3)
	managers := map[int32]*ProducerIDManager{}
	for _, n := range nodes {
		startQuorumNode(t, n, voters)
		managers[n.id] = NewProducerIDManager(n.c, ProducerIDManagerConfig{Broker: n.id, RequestTimeout: time.Second,
			RetryBackoff: 5 * time.Millisecond, MaxRetryBackoff: 50 * time.Millisecond, BlockWait: 100 * time.Millisecond})
	}
	defer func() {
		for _, n := range nodes {
			managers[n.id].Close()
			n.c.Close()
		}
	}()
	seen := map[int64]int32{}
	take := func(id int32, n int) {
		t.Helper()
		m := managers[id]
		deadline := time.Now().Add(20 * time.Second)
		for got := 0; got < n; {
			pid, err := m.Next(context.Background())
			if err != nil {
				if !kerr.IsRetriable(err) || time.Now().After(deadline) {
					t.Fatalf("broker %d: %v", id, err)
				}
				continue
			}
			if by, ok := seen[pid]; ok {
				t.Fatalf("producer id %d handed out twice: by broker %d and by broker %d", pid, by, id)
			}
			seen[pid] = id
			got++
		}
	}
	for _, n := range nodes {
		take(n.id, 950)
	}
	var ctrl *quorumNode
	pollUntil(t, "an acting controller", 10*time.Second, func() bool {
		for _, n := range nodes {
			if n.c.Acting() {
				ctrl = n
				return true
			}
		}
		return false
	})
	// Each broker holds ids: wait until every one has its next block.
	pollUntil(t, "every broker's prefetched block", 10*time.Second, func() bool {
		for _, m := range managers {
			if !m.hasPrefetched() {
				return false
			}
		}
		return true
	})
	managers[ctrl.id].Close()
	ctrl.c.Close()
	var live []*quorumNode
	for _, n := range nodes {
		if n != ctrl {
			live = append(live, n)
		}
	}
	// While a new controller is elected the live brokers answer at once.
	for _, n := range live {
		start := time.Now()
		take(n.id, 100)
		if d := time.Since(start); d > time.Second {
			t.Errorf("broker %d took %v for 100 ids it held", n.id, d)
		}
	}
	pollUntil(t, "a new acting controller", 20*time.Second, func() bool {
		for _, n := range live {
			if n.c.Acting() {
				return true
			}
		}
		return false
	})
	// Through several blocks from the new controller.
	for _, n := range live {
		take(n.id, 3*ProducerIDBlockSize)
	}
}
