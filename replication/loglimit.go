package replication

import (
	"errors"
	"sync"
	"syscall"
	"time"

	"github.com/wren-broker/wren/engine"
)

// followerLogInterval is how often a follower logs one cause of failed
// appends: a full disk or a shortage of file descriptors fails every
// partition on every fetch round, and one line each time buried the log.
// The engine limits its own shortage line the same way.
const followerLogInterval = 10 * time.Second

// causeLimiter lets one log line per cause through per interval and
// counts the ones it holds back, so the next line can say how many.
type causeLimiter struct {
	interval time.Duration
	now      func() time.Time

	mu     sync.Mutex
	causes map[string]*causeLog
}

type causeLog struct {
	last       time.Time
	suppressed int64
}

func newCauseLimiter(interval time.Duration, now func() time.Time) *causeLimiter {
	if now == nil {
		now = time.Now
	}
	return &causeLimiter{interval: interval, now: now, causes: map[string]*causeLog{}}
}

// allow reports whether a line for cause may be logged now, and how many
// lines for it were held back since the last one logged.
func (l *causeLimiter) allow(cause string) (ok bool, suppressed int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	c := l.causes[cause]
	if c == nil {
		// Bounded: causes come from appendFailureCause's fixed set.
		c = &causeLog{}
		l.causes[cause] = c
	} else if now.Sub(c.last) < l.interval {
		c.suppressed++
		return false, 0
	}
	suppressed = c.suppressed
	c.last, c.suppressed = now, 0
	return true, suppressed
}

// appendFailureCause names what failed a follower's append, from a fixed
// set, so a persistent failure counts as one cause however many
// partitions and files it hits.
func appendFailureCause(err error) string {
	switch {
	case errors.Is(err, engine.ErrNoSpace), errors.Is(err, engine.ErrLogDirFull),
		errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "no space"
	case errors.Is(err, engine.ErrTooManyOpenFiles), errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return "too many open files"
	case errors.Is(err, engine.ErrLogDirFailed):
		return "log dir failed"
	case errors.Is(err, engine.ErrRecordTooLarge):
		return "record too large"
	case errors.Is(err, syscall.EIO):
		return "i/o error"
	}
	return "other"
}
