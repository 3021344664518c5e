package wal

import (
	"fmt"
	"sync"
)

// SyncFunc makes durable everything written so far and reports the position
// it covered. It must read the position before it starts the fdatasync, so
// that the position never claims bytes written after the sync began.
type SyncFunc func() (covered int64, err error)

// GroupCommitter coalesces fdatasync calls. Appenders write, then call Wait
// with the position their write ends at; the first waiter runs one sync, and
// every waiter whose position that sync covered returns with it. Waiters that
// arrive while a sync runs share the next one. So N concurrent appenders cost
// about two fdatasyncs, not N.
//
// Positions are opaque and monotonic: byte positions for wal, offsets for a
// partition log.
//
// An error is sticky: after a failed sync no position is ever reported
// durable again, because after a failed fdatasync the kernel may have dropped
// the dirty pages and a retry that succeeds proves nothing.
type GroupCommitter struct {
	sync SyncFunc

	mu      sync.Mutex
	cond    *sync.Cond
	running bool
	// Invariant: durable only grows.
	durable int64
	err     error
	syncs   int64
}

// NewGroupCommitter returns a committer whose durable position starts at
// durable (what recovery found on disk).
func NewGroupCommitter(durable int64, syncFn SyncFunc) *GroupCommitter {
	g := &GroupCommitter{sync: syncFn, durable: durable}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// Wait returns nil once a completed sync covers pos, or the sticky error.
func (g *GroupCommitter) Wait(pos int64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for {
		if g.err != nil {
			return g.err
		}
		if g.durable >= pos {
			return nil
		}
		if !g.running {
			g.running = true
			g.mu.Unlock()
			covered, err := g.sync()
			g.mu.Lock()
			g.running = false
			g.syncs++
			if err != nil {
				g.err = fmt.Errorf("wal: fdatasync failed, nothing further is durable: %w", err)
			} else if covered > g.durable {
				g.durable = covered
			}
			g.cond.Broadcast()
			continue
		}
		g.cond.Wait()
	}
}

// Advance records that pos is durable without a sync of the committer's own,
// for example after a segment roll synced the old file. It never moves the
// durable position backwards.
func (g *GroupCommitter) Advance(pos int64) {
	g.mu.Lock()
	if g.err == nil && pos > g.durable {
		g.durable = pos
		g.cond.Broadcast()
	}
	g.mu.Unlock()
}

// Reset sets the durable position after a truncation moved the end of the
// log backwards. Only the owner of the log calls it, with writes excluded.
func (g *GroupCommitter) Reset(pos int64) {
	g.mu.Lock()
	g.durable = pos
	g.mu.Unlock()
}

// Fail makes err sticky, for a write error seen by the appender.
func (g *GroupCommitter) Fail(err error) {
	g.mu.Lock()
	if g.err == nil {
		g.err = err
	}
	g.cond.Broadcast()
	g.mu.Unlock()
}

// Durable is the highest position a completed sync covered.
func (g *GroupCommitter) Durable() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.durable
}

// Err is the sticky error, or nil.
func (g *GroupCommitter) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// Syncs counts completed sync calls, for tests and metrics.
func (g *GroupCommitter) Syncs() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.syncs
}
