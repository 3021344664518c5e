// Package membudget is a server-wide budget for memory that outside input
// makes the process hold: request frames being read and handled, and
// decompression buffers of batches being validated. It is a weighted
// semaphore that hands out bytes (or any unit) first come, first served.
//
// A goroutine that must wait stops doing whatever needs the memory: a
// connection stops reading its socket, so TCP pushes back on the client,
// instead of the process growing. Waiters are served in arrival order,
// so a small request from a well-behaved client is answered in turn
// behind the large ones, never starved by a stream of them; except that
// an owner (AcquireAs: a client address) already holding its fair share
// (the capacity divided by the owners holding or waiting) is passed over
// while a waiter of another owner waits, so one client asking first and
// often cannot keep the budget to itself. Stats tells how many wait, for
// how long, and when units were last granted.
//
// Invariants:
//   - 0 <= InUse() <= Capacity().
//   - A request for more than the capacity is clamped to the capacity:
//     it waits for the whole budget and then runs alone. Acquire and
//     Release clamp alike, so the caller releases what it asked for.
//   - A nil *Budget is unbounded: every method is a no-op that succeeds.
//
// Holding part of a budget while waiting for more of the same budget can
// deadlock (every holder waiting for the others); callers acquire what
// they need in one call, and when they hold two budgets they take them in
// one fixed order (request bytes, then decompression).
package membudget
