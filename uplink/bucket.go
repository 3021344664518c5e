package uplink

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// bucket is the token bucket of max.bytes.per.second: records take their
// size in bytes from it before they are handed to the producer, so the
// backlog drains oldest first at the cap instead of queueing inside the
// producer. It holds at most a tenth of a second of bytes, so a link
// idle for a while sends no burst worth counting over a minute. A record
// larger than what the bucket holds is not refused: it takes the bytes
// on credit, and the records after it wait until the debt is repaid.
// Not safe for concurrent use (the session's poll loop is its only user).
type bucket struct {
	rate   float64 // bytes per second
	burst  float64 // the most the bucket holds
	tokens float64 // may be negative: bytes taken on credit
	last   time.Time
	now    func() time.Time
}

// newBucket is a full bucket of bytesPerSecond; now is the clock (a test
// gives its own).
func newBucket(bytesPerSecond int64, now func() time.Time) *bucket {
	b := &bucket{rate: float64(bytesPerSecond), now: now}
	b.burst = max(b.rate/10, 1)
	b.tokens, b.last = b.burst, now()
	return b
}

// take takes n bytes and says how long the caller waits before sending
// them: 0 when the bucket held them.
func (b *bucket) take(n int) time.Duration {
	now := b.now()
	if now.After(b.last) {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
	}
	b.tokens -= float64(n)
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.rate * float64(time.Second))
}

// RecordBytes is what a record costs against max.bytes.per.second: the
// bytes of its key, value, and headers' keys and values (the provenance
// header included), before compression and without the batch framing.
func RecordBytes(r *kgo.Record) int {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}
