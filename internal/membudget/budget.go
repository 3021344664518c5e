package membudget

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"
)

// Budget is a weighted semaphore served in arrival order, fairly between
// owners.
type Budget struct {
	capacity int64

	mu    sync.Mutex
	inUse int64
	// waiters holds *waiter in arrival order.
	waiters list.List
	// held is what each owner named in AcquireAs holds now.
	// Invariant: no zero entries; the sum is at most inUse.
	held map[any]int64
	// peak is the most ever in use at once, for tests and metrics.
	peak int64
	// waited counts the acquisitions that had to wait.
	waited uint64
	// lastGrant is when units were last taken (zero before the first).
	lastGrant time.Time
}

type waiter struct {
	n     int64
	owner any
	since time.Time
	ready chan struct{} // closed when granted
}

// New returns a budget of capacity units. capacity must be positive.
func New(capacity int64) *Budget {
	if capacity <= 0 {
		panic(fmt.Sprintf("membudget: capacity %d must be positive", capacity))
	}
	return &Budget{capacity: capacity}
}

// Capacity is the budget's size; 0 for a nil (unbounded) budget.
func (b *Budget) Capacity() int64 {
	if b == nil {
		return 0
	}
	return b.capacity
}

func (b *Budget) clamp(n int64) int64 {
	switch {
	case n < 0:
		panic(fmt.Sprintf("membudget: negative amount %d", n))
	case n > b.capacity:
		return b.capacity
	}
	return n
}

// Acquire takes n units, waiting in arrival order until they are free or
// ctx ends (then it returns ctx's error and holds nothing).
func (b *Budget) Acquire(ctx context.Context, n int64) error {
	return b.AcquireAs(ctx, nil, n)
}

// AcquireAs is Acquire on behalf of owner (a comparable value, nil for
// none), who must release with ReleaseAs. While waiters of another owner
// wait, an owner that already holds its fair share (the capacity divided
// by the owners holding or waiting) is passed over: one client cannot
// keep the budget to itself by asking first and often.
func (b *Budget) AcquireAs(ctx context.Context, owner any, n int64) error {
	if b == nil {
		return nil
	}
	n = b.clamp(n)
	b.mu.Lock()
	if b.waiters.Len() == 0 && b.inUse+n <= b.capacity {
		b.take(owner, n)
		b.mu.Unlock()
		return nil
	}
	w := &waiter{n: n, owner: owner, since: time.Now(), ready: make(chan struct{})}
	elem := b.waiters.PushBack(w)
	b.waited++
	// An owner over its share at the head may be passed over for this one.
	b.notifyLocked()
	b.mu.Unlock()

	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		select {
		case <-w.ready:
			// Granted while ctx ended: give it back.
			b.put(owner, n)
			b.notifyLocked()
		default:
			b.waiters.Remove(elem)
			// The next waiter may fit now that this one is gone.
			b.notifyLocked()
		}
		b.mu.Unlock()
		return ctx.Err()
	}
}

// TryAcquire takes n units if they are free now and nobody waits.
func (b *Budget) TryAcquire(n int64) bool {
	if b == nil {
		return true
	}
	n = b.clamp(n)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.waiters.Len() == 0 && b.inUse+n <= b.capacity {
		b.take(nil, n)
		return true
	}
	return false
}

// Release returns n units taken by Acquire or TryAcquire.
func (b *Budget) Release(n int64) { b.ReleaseAs(nil, n) }

// ReleaseAs returns n units taken by AcquireAs for owner.
func (b *Budget) ReleaseAs(owner any, n int64) {
	if b == nil {
		return
	}
	n = b.clamp(n)
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.inUse {
		panic(fmt.Sprintf("membudget: releasing %d with %d in use", n, b.inUse))
	}
	b.put(owner, n)
	b.notifyLocked()
}

func (b *Budget) take(owner any, n int64) {
	b.inUse += n
	b.peak = max(b.peak, b.inUse)
	b.lastGrant = time.Now()
	if owner != nil {
		if b.held == nil {
			b.held = make(map[any]int64)
		}
		b.held[owner] += n
	}
}

func (b *Budget) put(owner any, n int64) {
	b.inUse -= n
	if owner == nil {
		return
	}
	h := b.held[owner]
	if n > h {
		panic(fmt.Sprintf("membudget: owner releasing %d holds %d", n, h))
	}
	if h == n {
		delete(b.held, owner)
	} else {
		b.held[owner] = h - n
	}
}

// notifyLocked grants waiters in arrival order while the first one fits,
// except that a waiter whose owner would pass its fair share is passed
// over while a waiter of another owner waits. A waiter that does not fit
// stops the scan, so a large request is never starved by small ones.
func (b *Budget) notifyLocked() {
	for {
		var grant *list.Element
		var sh *shares
		for e := b.waiters.Front(); e != nil; e = e.Next() {
			w := e.Value.(*waiter)
			if w.owner != nil && b.held[w.owner] > 0 {
				if sh == nil {
					sh = b.sharesLocked()
				}
				if sh.over(w, b.held[w.owner]) {
					continue
				}
			}
			if b.inUse+w.n <= b.capacity {
				grant = e
			}
			break
		}
		if grant == nil {
			return
		}
		w := grant.Value.(*waiter)
		b.take(w.owner, w.n)
		b.waiters.Remove(grant)
		close(w.ready)
	}
}

// shares is what fairness needs to know of one moment: the owners
// holding or waiting, and the owners waiting.
type shares struct {
	capacity int64
	owners   int
	waiting  map[any]int
}

func (b *Budget) sharesLocked() *shares {
	sh := &shares{capacity: b.capacity, waiting: make(map[any]int)}
	for e := b.waiters.Front(); e != nil; e = e.Next() {
		sh.waiting[e.Value.(*waiter).owner]++
	}
	sh.owners = len(b.held)
	for o := range sh.waiting {
		if _, ok := b.held[o]; !ok && o != nil {
			sh.owners++
		}
	}
	return sh
}

// over reports whether granting w, whose owner holds held, would give the
// owner more than its fair share while a waiter of another owner waits.
// An owner that holds nothing is never over its share, so a request
// larger than the share is served in its turn.
func (sh *shares) over(w *waiter, held int64) bool {
	if held == 0 || len(sh.waiting) < 2 && sh.waiting[w.owner] > 0 {
		return false // nobody else waits
	}
	return held+w.n > sh.capacity/int64(max(sh.owners, 1))
}

// InUse is the amount held now.
func (b *Budget) InUse() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inUse
}

// Peak is the most held at once since New.
func (b *Budget) Peak() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}

// Waiting is the number of goroutines waiting in Acquire.
func (b *Budget) Waiting() int {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiters.Len()
}

// Stats is a budget's state at one moment.
type Stats struct {
	InUse, Peak, Capacity int64
	// Waiting is the number of acquisitions waiting now; OldestWait the
	// time the first of them has waited.
	Waiting    int
	OldestWait time.Duration
	// Waited counts the acquisitions that ever had to wait.
	Waited uint64
	// SinceGrant is the time since units were last taken (0 before the
	// first).
	SinceGrant time.Duration
}

// Stats returns the budget's state now; the zero Stats for a nil budget.
func (b *Budget) Stats() Stats {
	if b == nil {
		return Stats{}
	}
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	st := Stats{InUse: b.inUse, Peak: b.peak, Capacity: b.capacity, Waiting: b.waiters.Len(), Waited: b.waited}
	if f := b.waiters.Front(); f != nil {
		st.OldestWait = now.Sub(f.Value.(*waiter).since)
	}
	if !b.lastGrant.IsZero() {
		st.SinceGrant = now.Sub(b.lastGrant)
	}
	return st
}
