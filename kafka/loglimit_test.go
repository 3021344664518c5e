package kafka

import (
	"log/slog"
	"net"
	"testing"
	"time"
)

func TestLogLimiter(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newLogLimiter(3, func() time.Time { return now })
	let := 0
	for range 10 {
		if ok, s := l.allow(); ok {
			let++
			if s != 0 {
				t.Fatalf("first window reports %d suppressed", s)
			}
		}
	}
	if let != 3 {
		t.Fatalf("%d of 10 lines let through in one second, want 3", let)
	}
	now = now.Add(999 * time.Millisecond)
	if ok, _ := l.allow(); ok {
		t.Fatal("a line let through before the window ended")
	}
	now = now.Add(time.Millisecond)
	if ok, s := l.allow(); !ok || s != 8 {
		t.Fatalf("first line of the next window: ok %v, suppressed %d, want 8", ok, s)
	}
	if ok, s := l.allow(); !ok || s != 0 {
		t.Fatalf("second line of the window: ok %v, suppressed %d, want 0", ok, s)
	}
	l.allow()
	l.allow() // suppressed
	if n := l.flush(); n != 1 {
		t.Fatalf("flush: %d, want 1", n)
	}
	if n := l.flush(); n != 0 {
		t.Fatalf("second flush: %d, want 0", n)
	}
	// A clock that steps back starts a new window rather than stalling.
	now = now.Add(-time.Hour)
	if ok, _ := l.allow(); !ok {
		t.Fatal("no line let through after the clock stepped back")
	}
}

// TestBadConnectionLogsBounded opens 300 connections that each send a bad
// frame. At most connLogLinesPerSecond lines per second are written, and
// every bad connection is either logged or counted in a "suppressed"
// figure, the last of them when the server closes.
func TestBadConnectionLogsBounded(t *testing.T) {
	const bad = 300
	ts := startServer(t, ServerConfig{ConnLogLinesPerSecond: DefaultConnLogLinesPerSecond}, testTable())
	start := time.Now()
	for range bad {
		c := dial(t, ts.addr)
		c.send([]byte{0xff, 0xff, 0xff, 0xff}) // size -1
		c.expectClosed()
	}
	elapsed := time.Since(start)
	ts.Close()
	lines, counted := 0, int64(0)
	ts.logs.st.mu.Lock()
	for _, r := range ts.logs.st.recs {
		if r.msg == "closing connection" {
			lines++
		}
		if s, ok := r.attrs["suppressed"].(int64); ok {
			counted += s
		}
	}
	ts.logs.st.mu.Unlock()
	if max := DefaultConnLogLinesPerSecond * (int(elapsed/time.Second) + 2); lines > max {
		t.Fatalf("%d lines for %d bad connections in %v, want at most %d", lines, bad, elapsed, max)
	}
	if int64(lines)+counted != bad {
		t.Fatalf("%d lines + %d suppressed = %d, want every one of the %d bad connections", lines, counted, int64(lines)+counted, bad)
	}
}

// TestDisconnectIsNotInfo: a client that closes between requests, or
// resets its connection, is a DEBUG event.
func TestDisconnectIsNotInfo(t *testing.T) {
	ts := startServer(t, ServerConfig{}, testTable())
	c := dial(t, ts.addr)
	c.apiVersions(1)
	c.nc.Close()
	reset := dial(t, ts.addr)
	reset.apiVersions(2)
	reset.nc.(*net.TCPConn).SetLinger(0) // close sends RST
	reset.nc.Close()
	for i := range 2 {
		ts.logs.waitAfter(t, "a connection closed", i, func(r logRecord) bool { return r.msg == "connection closed" })
	}
	ts.Close()
	if n := ts.logs.count(func(r logRecord) bool { return r.level >= slog.LevelInfo }); n != 0 {
		t.Fatalf("%d INFO or worse lines for clients that went away", n)
	}
}
