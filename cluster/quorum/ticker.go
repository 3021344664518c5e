package quorum

import "time"

// tickCounter turns monotonic time into election ticks. The election's
// lease is a count of ticks, so a node that stalled (SIGSTOP, a long GC or
// fsync pause) must deliver every tick it missed before it acts on
// anything else; otherwise a controller could resume acting on a lease
// that lapsed while it slept (election/doc.go, F06).
type tickCounter struct {
	start     time.Duration // monotonic time of tick 0
	tick      time.Duration
	delivered int64
}

// due returns how many ticks have elapsed at now and were not yet
// delivered, and counts them as delivered.
func (t *tickCounter) due(now time.Duration) int64 {
	total := int64((now - t.start) / t.tick)
	n := total - t.delivered
	if n < 0 {
		n = 0
	}
	t.delivered += n
	return n
}
