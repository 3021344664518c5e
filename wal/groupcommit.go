package wal

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// ErrTruncated is returned to a waiter whose write a truncation removed
// before the waiter saw it durable.
var ErrTruncated = errors.New("wal: write truncated before it became durable")

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
// Positions are opaque and grow with every write: record indexes for wal,
// offsets for a partition log. Only a truncation (Reset) moves them back.
//
// An error is sticky: after a failed sync no position is ever reported
// durable again, because after a failed fdatasync the kernel may have dropped
// the dirty pages and a retry that succeeds proves nothing.
type GroupCommitter struct {
	sync SyncFunc

	mu sync.Mutex
	// cond wakes waiters when a sync ends or the position moves; made
	// by the first Wait that must wait (wait), so an idle partition's
	// committer holds none. Used only under mu.
	cond    *sync.Cond
	running bool
	// durable is written under mu and read without it (Durable, called
	// for every partition in every replica round, takes no lock).
	// Invariant: durable only grows, except by Reset and Recover.
	durable atomic.Int64
	// gen counts Resets, so that a sync that was running across one does
	// not apply a position from before the truncation.
	gen uint64
	// waiters are the calls in Wait, so that Reset can mark those whose
	// write it removed. Bounded by the number of concurrent callers; nil
	// until the first, so an idle partition's committer holds no map.
	waiters map[*Waiter]struct{}
	err     error
	syncs   int64
}

// Waiter is one write waiting to become durable, from Register until its
// Wait returns.
type Waiter struct {
	g   *GroupCommitter
	pos int64
	// truncated is set by a Reset below pos: the write is gone, and a later
	// sync of new bytes at the same positions must not release it.
	// Guarded by g.mu.
	truncated bool
	// truncatedErr, if set, is what Wait returns for a truncation instead
	// of ErrTruncated (Recover says why the write went).
	truncatedErr error
}

// NewGroupCommitter returns a committer whose durable position starts at
// durable (what recovery found on disk).
func NewGroupCommitter(durable int64, syncFn SyncFunc) *GroupCommitter {
	g := &GroupCommitter{sync: syncFn}
	g.durable.Store(durable)
	return g
}

// Wait returns nil once a completed sync covers pos, the sticky error, or
// ErrTruncated if a Reset below pos removed the write first. It is
// Register(pos).Wait(); a caller whose log can be truncated should
// Register instead, under the lock that orders its writes and truncations.
func (g *GroupCommitter) Wait(pos int64) error {
	return g.Register(pos).Wait()
}

// Register enrolls a write that ends at pos, so that every later Reset
// below pos marks it truncated. Call it under the lock that orders writes
// and truncations, right after the write: a Reset between the write and
// the registration would go unseen, and the waiter would then wait for
// positions that no longer exist, or be released by someone else's bytes
// written there later. The caller must call Wait on the result.
func (g *GroupCommitter) Register(pos int64) *Waiter {
	w := &Waiter{g: g, pos: pos}
	g.mu.Lock()
	if g.waiters == nil {
		g.waiters = make(map[*Waiter]struct{})
	}
	g.waiters[w] = struct{}{}
	g.mu.Unlock()
	return w
}

// Wait returns nil once a completed sync covers the registered position,
// the sticky error, or ErrTruncated if a Reset below the position removed
// the write first. Call it once.
func (w *Waiter) Wait() error {
	g := w.g
	g.mu.Lock()
	defer g.mu.Unlock()
	defer delete(g.waiters, w)
	pos := w.pos
	for {
		if g.err != nil {
			return g.err
		}
		if w.truncated {
			if w.truncatedErr != nil {
				return w.truncatedErr
			}
			return ErrTruncated
		}
		if g.durable.Load() >= pos {
			return nil
		}
		if !g.running {
			g.running = true
			startGen := g.gen
			g.mu.Unlock()
			covered, err := g.sync()
			g.mu.Lock()
			g.running = false
			g.syncs++
			if err != nil {
				// The first error stays: a Fail during the sync (a
				// write error, a close) explains the failure better.
				if g.err == nil {
					g.err = fmt.Errorf("wal: fdatasync failed, nothing further is durable: %w", err)
				}
			} else if g.err == nil && covered > g.durable.Load() && g.gen == startGen {
				// A Reset during the sync means covered may name
				// positions that were truncated away: drop it.
				g.durable.Store(covered)
			}
			g.broadcast()
			continue
		}
		g.wait()
	}
}

// wait waits for the next broadcast, under mu.
func (g *GroupCommitter) wait() {
	if g.cond == nil {
		g.cond = sync.NewCond(&g.mu)
	}
	g.cond.Wait()
}

// broadcast wakes every waiter, under mu. Without a cond nobody has
// waited yet, so nobody needs waking.
func (g *GroupCommitter) broadcast() {
	if g.cond != nil {
		g.cond.Broadcast()
	}
}

// Advance records that pos is durable without a sync of the committer's own,
// for example after a segment roll synced the old file. It never moves the
// durable position backwards.
func (g *GroupCommitter) Advance(pos int64) {
	g.mu.Lock()
	if g.err == nil && pos > g.durable.Load() {
		g.durable.Store(pos)
		g.broadcast()
	}
	g.mu.Unlock()
}

// Reset sets the durable position after a truncation moved the end of the
// log back to pos, with writes excluded by the log's owner. The owner
// asserts that everything up to pos is durable (it synced the file it cut).
// Waiters above pos get ErrTruncated: their writes are gone, and a later
// sync of new bytes at the same positions must not release them. Waiters at
// or below pos are released, since their writes survived and are durable.
func (g *GroupCommitter) Reset(pos int64) {
	g.mu.Lock()
	g.durable.Store(pos)
	g.gen++
	for w := range g.waiters {
		if w.pos > pos {
			w.truncated = true
		}
	}
	g.broadcast()
	g.mu.Unlock()
}

// Recover clears the sticky error after the owner has cut the log back
// to pos, the durable position, and synced what it kept: the one case in
// which writing on after a failed fdatasync is sound, because every byte
// the failed sync may have lost lay above pos and is gone. Waiters above
// pos get why (err, or ErrTruncated if err is nil); those at or below are
// released.
func (g *GroupCommitter) Recover(pos int64, err error) {
	g.mu.Lock()
	g.err = nil
	g.durable.Store(pos)
	g.gen++
	for w := range g.waiters {
		if w.pos > pos {
			w.truncated, w.truncatedErr = true, err
		}
	}
	g.broadcast()
	g.mu.Unlock()
}

// Fail makes err sticky, for a write error seen by the appender.
func (g *GroupCommitter) Fail(err error) {
	g.mu.Lock()
	if g.err == nil {
		g.err = err
	}
	g.broadcast()
	g.mu.Unlock()
}

// Durable is the highest position a completed sync covered. It takes no
// lock: every change is one store, made under mu.
func (g *GroupCommitter) Durable() int64 { return g.durable.Load() }

// Err is the sticky error, or nil.
func (g *GroupCommitter) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// Waiting is the number of writes registered and not yet returned from
// Wait: the batch the next sync would release, for metrics.
func (g *GroupCommitter) Waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.waiters)
}

// Syncs counts completed sync calls, for tests and metrics.
func (g *GroupCommitter) Syncs() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.syncs
}
