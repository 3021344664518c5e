package membudget

import (
	"container/list"
	"context"
	"fmt"
	"sync"
)

// Budget is a weighted semaphore served in arrival order.
type Budget struct {
	capacity int64

	mu    sync.Mutex
	inUse int64
	// waiters holds *waiter in arrival order.
	waiters list.List
	// peak is the most ever in use at once, for tests and metrics.
	peak int64
}

type waiter struct {
	n     int64
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
	if b == nil {
		return nil
	}
	n = b.clamp(n)
	b.mu.Lock()
	if b.waiters.Len() == 0 && b.inUse+n <= b.capacity {
		b.take(n)
		b.mu.Unlock()
		return nil
	}
	w := &waiter{n: n, ready: make(chan struct{})}
	elem := b.waiters.PushBack(w)
	b.mu.Unlock()

	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		select {
		case <-w.ready:
			// Granted while ctx ended: give it back.
			b.inUse -= n
			b.notifyLocked()
		default:
			front := b.waiters.Front() == elem
			b.waiters.Remove(elem)
			if front {
				// The next waiter may fit now that this one is gone.
				b.notifyLocked()
			}
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
		b.take(n)
		return true
	}
	return false
}

// Release returns n units taken by Acquire or TryAcquire.
func (b *Budget) Release(n int64) {
	if b == nil {
		return
	}
	n = b.clamp(n)
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.inUse {
		panic(fmt.Sprintf("membudget: releasing %d with %d in use", n, b.inUse))
	}
	b.inUse -= n
	b.notifyLocked()
}

func (b *Budget) take(n int64) {
	b.inUse += n
	b.peak = max(b.peak, b.inUse)
}

// notifyLocked grants waiters in order while the first one fits.
func (b *Budget) notifyLocked() {
	for {
		front := b.waiters.Front()
		if front == nil {
			return
		}
		w := front.Value.(*waiter)
		if b.inUse+w.n > b.capacity {
			return
		}
		b.take(w.n)
		b.waiters.Remove(front)
		close(w.ready)
	}
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
