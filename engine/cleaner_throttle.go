package engine

import (
	"context"
	"sync"
	"time"
)

// Throttler caps the log cleaner's I/O at a rate in bytes per second
// (Kafka's log.cleaner.io.max.bytes.per.second and its Throttler): the
// cleaner reports the bytes it read or wrote, and once per check interval
// the throttler sleeps long enough to bring the average since the last
// check down to the rate. On a small host the cleaner then cannot starve
// produce and fetch of disk bandwidth.
//
// A Throttler is safe for concurrent use; cleaners sharing one share the
// rate.
type Throttler struct {
	bytesPerSecond float64
	checkInterval  time.Duration
	now            func() time.Time
	sleep          func(context.Context, time.Duration) error

	mu          sync.Mutex
	periodStart time.Time
	observed    int64
}

// throttleCheckInterval is Kafka's Throttler default (300 ms).
const throttleCheckInterval = 300 * time.Millisecond

// NewThrottler returns a throttler for bytesPerSecond; zero or less means
// no limit. now is a monotonic clock and sleep waits or returns early with
// the context's error; nil means the real ones. Tests inject both.
func NewThrottler(bytesPerSecond float64, now func() time.Time, sleep func(context.Context, time.Duration) error) *Throttler {
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = sleepContext
	}
	return &Throttler{bytesPerSecond: bytesPerSecond, checkInterval: throttleCheckInterval, now: now, sleep: sleep, periodStart: now()}
}

func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maybeThrottle records n bytes of I/O and sleeps if the rate is over the
// limit. A nil Throttler does nothing.
func (t *Throttler) maybeThrottle(ctx context.Context, n int64) error {
	if t == nil || t.bytesPerSecond <= 0 || n <= 0 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.observed += n
	elapsed := t.now().Sub(t.periodStart)
	if elapsed <= t.checkInterval {
		return nil
	}
	// The time the observed bytes should have taken at the rate, minus the
	// time they did take.
	want := time.Duration(float64(t.observed) / t.bytesPerSecond * float64(time.Second))
	var err error
	if d := want - elapsed; d > 0 {
		err = t.sleep(ctx, d)
	}
	t.periodStart = t.now()
	t.observed = 0
	return err
}
