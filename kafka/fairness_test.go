package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/wire"
)

// paddedAPIVersions is an ApiVersions v4 request padded to size bytes
// (the size prefix included): bytes after a decoded body are ignored, so it
// is answered like any other, from the budget its size selects.
func paddedAPIVersions(corr int32, size int) []byte {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 4
	req.ClientSoftwareName, req.ClientSoftwareVersion = "wren-test", "1.0"
	f := requestFrame(req, corr, "test")
	f = append(f, make([]byte, size-len(f))...)
	binary.BigEndian.PutUint32(f, uint32(len(f)-4))
	return f
}

// dialFrom dials addr from a local loopback address of its own, so the
// server sees another client address.
func dialFrom(t *testing.T, local, addr string) *rawClient {
	t.Helper()
	d := net.Dialer{Timeout: waitTimeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Skipf("cannot dial from %s: %v", local, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc}
}

// TestFrameDeadlineIsWholeFrame: a body trickled one byte at a time, each
// arriving well within FrameTimeout of the last, is still closed once the
// whole frame has taken FrameTimeout, and its share of the request budget
// comes back. (Before, every read re-armed the timeout, so it never
// fired.)
func TestFrameDeadlineIsWholeFrame(t *testing.T) {
	const frameTimeout = 400 * time.Millisecond
	ts := startServer(t, ServerConfig{FrameTimeout: frameTimeout}, testTable())
	c := dial(t, ts.addr)
	c.apiVersions(1)
	f := paddedAPIVersions(2, 100<<10)
	c.send(f[:8])
	start := time.Now()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(frameTimeout / 8) // pacing a slow sender, not waiting for a condition
		defer t.Stop()
		for i := 8; i < len(f); i++ {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			if _, err := c.nc.Write(f[i : i+1]); err != nil {
				return
			}
		}
	}()
	c.expectClosed()
	took := time.Since(start)
	ts.logs.waitClosedWith(t, ErrFrameDeadline)
	if took > frameTimeout+time.Second {
		t.Fatalf("a trickled frame closed after %v, FrameTimeout %v", took, frameTimeout)
	}
	if st := ts.BudgetStats(); st.FrameDeadlines != 1 {
		t.Fatalf("frame deadlines counted %d, want 1", st.FrameDeadlines)
	}
	deadline := time.Now().Add(waitTimeout)
	for {
		if inUse, _, _ := ts.RequestMemory(); inUse == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the closed frame's reservation was not returned")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSlowFrameYieldsBudget: a frame that holds the whole request budget
// and trickles its body is closed soon after another client's request
// waits for the budget, long before FrameTimeout, and the waiting request
// is answered.
func TestSlowFrameYieldsBudget(t *testing.T) {
	ts := startServer(t, ServerConfig{QueuedMaxRequestBytes: 200 << 10, FrameTimeout: time.Minute}, testTable())
	slow := dialFrom(t, "127.0.0.2", ts.addr)
	slow.apiVersions(1)
	big := paddedAPIVersions(2, 190<<10)
	slow.send(big[:100]) // admitted: holds the budget; the rest never comes
	deadline := time.Now().Add(waitTimeout)
	for {
		if inUse, _, _ := ts.RequestMemory(); inUse > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow frame was never admitted")
		}
		time.Sleep(10 * time.Millisecond)
	}

	good := dial(t, ts.addr)
	good.apiVersions(1)
	start := time.Now()
	good.send(paddedAPIVersions(7, 100<<10))
	if corr, _ := good.readResponse(kmsg.ApiVersions, 4); corr != 7 {
		t.Fatalf("correlation id %d, want 7", corr)
	}
	waited := time.Since(start)
	slow.expectClosed()
	ts.logs.waitClosedWith(t, ErrFrameTooSlow)
	t.Logf("the waiting request was answered after %v", waited)
	if limit := slowFrameGrace + 2*time.Second; waited > limit {
		t.Fatalf("the waiting request was answered after %v, want within %v", waited, limit)
	}
	if st := ts.BudgetStats(); st.Preempted != 1 || st.Waited == 0 {
		t.Fatalf("budget stats %+v: want 1 preempted and a wait counted", st)
	}
}

// TestSlotsGoToNewAddresses: with every slot taken by connections from one
// address that sent nothing but ApiVersions, a client from another
// address is served: the idlest of them is closed for it. A connection
// that works is not closed while idle ApiVersions-only ones remain.
func TestSlotsGoToNewAddresses(t *testing.T) {
	const max = 8
	ts := startServer(t, ServerConfig{MaxConnections: max}, testTable(metadataRow(func(_ *Server, req *Request) (Pending, error) {
		return Respond(metadataResponse(req)), nil
	})))
	worker := dialFrom(t, "127.0.0.2", ts.addr)
	worker.send(requestFrame(metadataRequest(12), 1, "w"))
	worker.readResponse(kmsg.Metadata, 12)
	reserved := max / reservedSlotsDivisor
	for i := 0; i < max-reserved-1; i++ {
		dialFrom(t, "127.0.0.2", ts.addr).apiVersions(1)
	}
	// The address has taken every slot but those kept for addresses with
	// few connections: its next connection finds nothing idle long
	// enough to close, and is refused.
	dialFrom(t, "127.0.0.2", ts.addr).expectClosed()
	// A new address takes a kept slot at once.
	dialFrom(t, "127.0.0.3", ts.addr).apiVersions(1)

	// Now every slot is taken: another new address is served once the
	// ApiVersions-only connections have been silent for
	// evictIdleUnworked, by closing one of the largest address.
	deadline := time.Now().Add(waitTimeout)
	for {
		c := dial(t, ts.addr)
		c.nc.SetDeadline(time.Now().Add(waitTimeout))
		c.send(requestFrame(kmsg.NewPtrApiVersionsRequest(), 1, "new"))
		var size [4]byte
		if _, err := c.nc.Read(size[:]); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a client from a new address was never served")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := ts.logs.waitClosedWith(t, ErrEvicted); !strings.Contains(fmt.Sprint(r.attrs["remote"]), "127.0.0.2:") {
		t.Fatalf("evicted %s, want a connection of 127.0.0.2", r.attrs["remote"])
	}
	// The working connection still works.
	worker.send(requestFrame(metadataRequest(12), 2, "w"))
	worker.readResponse(kmsg.Metadata, 12)
	if st := ts.BudgetStats(); st.Evicted == 0 {
		t.Fatalf("no eviction counted: %+v", st)
	}
}

// TestForeignProtocolNamed: a TLS handshake or an HTTP request on the
// listener closes the connection with an error that says so, logged once
// however often the client tries, instead of a frame size out of range.
func TestForeignProtocolNamed(t *testing.T) {
	ts := startServer(t, ServerConfig{}, testTable())
	hello := []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03}
	for range 5 {
		c := dial(t, ts.addr)
		c.send(hello)
		c.expectClosed()
	}
	c := dial(t, ts.addr)
	c.send([]byte("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"))
	c.expectClosed()
	ts.logs.waitFor(t, "the TLS line", func(r logRecord) bool {
		return strings.Contains(r.msg, "TLS handshake received on a plaintext listener")
	})
	if n := ts.logs.count(func(r logRecord) bool { return errors.Is(r.err(), ErrFrameSize) }); n != 0 {
		t.Fatalf("%d lines of frame size out of range", n)
	}
	// Give the other closes time to be logged if they were going to be.
	c = dial(t, ts.addr)
	c.apiVersions(1)
	if n := ts.logs.count(func(r logRecord) bool {
		return strings.Contains(r.msg, "TLS handshake") || strings.Contains(r.msg, "HTTP request")
	}); n != 1 {
		t.Fatalf("%d lines about the foreign protocol, want 1 a minute", n)
	}
	if err := wire.ForeignProtocol([4]byte{'G', 'E', 'T', ' '}); !errors.Is(err, ErrHTTPOnKafka) {
		t.Fatalf("GET: %v", err)
	}
	if err := wire.ForeignProtocol([4]byte{0, 0, 0, 9}); err != nil {
		t.Fatalf("a frame size: %v", err)
	}
}

// TestBudgetStarved: while a request holds the budget in a handler that
// does not return, a request waiting for it makes the budget starved once
// BudgetStarvedAfter passes with nothing granted, and a WARN says requests
// wait once one has waited a second; when the handler
// returns, the waiting request is served and the budget is no longer
// starved.
func TestBudgetStarved(t *testing.T) {
	release := make(gate)
	var entered = make(chan struct{}, 1)
	ts := startServer(t, ServerConfig{QueuedMaxRequestBytes: 100 << 10, BudgetStarvedAfter: 200 * time.Millisecond},
		testTable(metadataRow(func(_ *Server, req *Request) (Pending, error) {
			entered <- struct{}{}
			<-release
			return Respond(metadataResponse(req)), nil
		})))
	holder := dial(t, ts.addr)
	f := requestFrame(metadataRequest(12), 1, "h")
	f = append(f, make([]byte, 90<<10)...)
	binary.BigEndian.PutUint32(f, uint32(len(f)-4))
	holder.send(f)
	recv(t, entered, "the handler holding the budget")

	waiter := dialFrom(t, "127.0.0.2", ts.addr)
	waiter.send(paddedAPIVersions(3, 90<<10))
	deadline := time.Now().Add(waitTimeout)
	for !ts.BudgetStats().Starved {
		if time.Now().After(deadline) {
			t.Fatalf("not starved: %+v", ts.BudgetStats())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st := ts.BudgetStats(); st.Waiting != 1 || st.OldestWait < 200*time.Millisecond {
		t.Fatalf("starved with %+v: want 1 waiting for at least 200ms", st)
	}
	// A wait of a second is warned about.
	ts.logs.waitFor(t, "the WARN about requests waiting", func(r logRecord) bool {
		return r.level == slog.LevelWarn && strings.HasPrefix(r.msg, "requests waiting for the request budget")
	})
	close(release)
	holder.readResponse(kmsg.Metadata, 12)
	if corr, _ := waiter.readResponse(kmsg.ApiVersions, 4); corr != 3 {
		t.Fatalf("correlation id %d, want 3", corr)
	}
	if st := ts.BudgetStats(); st.Starved || st.Waiting != 0 {
		t.Fatalf("after the handler returned: %+v", st)
	}
}
