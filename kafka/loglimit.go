package kafka

import (
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// DefaultConnLogLinesPerSecond bounds the log lines about refused or bad
// connections: a scanner or a broken client opening thousands of them
// must not fill the disk of a small host with one line each.
const DefaultConnLogLinesPerSecond = 10

// logLimiter lets at most perSecond lines through in each window (one
// second unless made by newLogLimiterWindow) and counts the rest; the next line let through reports that
// count, and Server.Close reports what is left. So every event is either
// logged or counted.
type logLimiter struct {
	perSecond int
	window    time.Duration
	now       func() time.Time

	mu sync.Mutex
	// windowStart and inWindow: lines let through since windowStart.
	windowStart time.Time
	inWindow    int
	suppressed  int64
}

func newLogLimiter(perSecond int, now func() time.Time) *logLimiter {
	return newLogLimiterWindow(perSecond, time.Second, now)
}

// newLogLimiterWindow lets n lines through per window.
func newLogLimiterWindow(n int, window time.Duration, now func() time.Time) *logLimiter {
	return &logLimiter{perSecond: n, window: window, now: now}
}

// allow reports whether to log a line now and, if so, how many lines were
// suppressed since the last one let through.
func (l *logLimiter) allow() (ok bool, suppressed int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if now.Sub(l.windowStart) >= l.window || now.Before(l.windowStart) {
		l.windowStart, l.inWindow = now, 0
	}
	if l.inWindow >= l.perSecond {
		l.suppressed++
		return false, 0
	}
	l.inWindow++
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}

// flush returns and resets the count of suppressed lines.
func (l *logLimiter) flush() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.suppressed
	l.suppressed = 0
	return n
}

// isDisconnect reports whether err is only the client going away: the end
// of the stream between frames, or a reset or broken pipe. Not worth an
// INFO line.
func isDisconnect(err error) bool {
	return err == nil || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
