package kafka

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/wire"
)

// refusalCounter is an Observer that counts refused connections.
type refusalCounter struct {
	nopObserver
	refused atomic.Int64
}

func (o *refusalCounter) ConnectionRefused() { o.refused.Add(1) }

// poll waits for cond, failing with what after waitTimeout.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// paddedMetadata is a Metadata request frame padded to exactly size body
// bytes (bytes after a decoded body are ignored), split into its first
// part and the rest.
func paddedMetadata(t *testing.T, corr int32, size int) (head, rest []byte) {
	t.Helper()
	body := requestFrame(metadataRequest(12), corr, "big")[4:]
	if len(body) > size {
		t.Fatalf("padding %d bytes to %d", len(body), size)
	}
	f := frame(body, make([]byte, size-len(body)))
	return f[:4+len(body)], f[4+len(body):]
}

// TestOversizeFrameRefusedBeforeBody: a size prefix above
// socket.request.max.bytes closes the connection without reading the body
// or taking any of the request budget; the close is logged.
func TestOversizeFrameRefusedBeforeBody(t *testing.T) {
	ts := startServer(t, ServerConfig{MaxRequestBytes: 64 << 10}, testTable())
	c := dial(t, ts.addr)
	c.send(binary.BigEndian.AppendUint32(nil, 50<<20), []byte{0, 3})
	c.expectClosed()
	ts.logs.waitClosedWith(t, ErrFrameSize)
	if _, peak, _ := ts.RequestMemory(); peak != 0 {
		t.Fatalf("an oversize frame took %d bytes of the request budget", peak)
	}
	dial(t, ts.addr).apiVersions(1) // the server still serves
}

// TestRequestBudgetBackpressure: while one connection holds the whole
// request budget with a frame it is still sending, another connection's
// small request waits (its reader stops) and is answered once the first
// frame is read and handled; nothing is held afterwards.
func TestRequestBudgetBackpressure(t *testing.T) {
	const budget = 256 << 10
	ts := startServer(t, ServerConfig{MaxRequestBytes: budget, QueuedMaxRequestBytes: budget},
		testTable(metadataRow(func(s *Server, req *Request) (Pending, error) {
			return Respond(metadataResponse(req)), nil
		})))
	big := dial(t, ts.addr)
	head, rest := paddedMetadata(t, 1, budget)
	big.send(head)
	poll(t, "the large frame to take the budget", func() bool { inUse, _, _ := ts.RequestMemory(); return inUse == budget })

	// A frame above smallFrameBytes waits for the main budget.
	small := dial(t, ts.addr)
	smallHead, smallRest := paddedMetadata(t, 2, smallFrameBytes+1)
	small.send(smallHead, smallRest)
	poll(t, "the small request to wait for the budget", func() bool { return ts.requestBytes.Waiting() == 1 })
	// A small request has its own share: it is answered meanwhile.
	tiny := dial(t, ts.addr)
	tiny.send(requestFrame(metadataRequest(12), 3, "tiny"))
	if corr, _ := tiny.readResponse(kmsg.Metadata, 12); corr != 3 {
		t.Fatalf("tiny request: correlation id %d", corr)
	}

	big.send(rest)
	if corr, _ := big.readResponse(kmsg.Metadata, 12); corr != 1 {
		t.Fatalf("large request: correlation id %d", corr)
	}
	if corr, _ := small.readResponse(kmsg.Metadata, 12); corr != 2 {
		t.Fatalf("small request: correlation id %d", corr)
	}
	inUse, peak, capacity := ts.RequestMemory()
	if inUse != 0 || peak > capacity {
		t.Fatalf("request budget: %d in use after both answers, peak %d of %d", inUse, peak, capacity)
	}
}

// TestQueuedMaxRequests: with one request slot, a second connection's
// request waits until the first connection's request is handled.
func TestQueuedMaxRequests(t *testing.T) {
	ts := startServer(t, ServerConfig{QueuedMaxRequests: 1}, testTable(metadataRow(func(s *Server, req *Request) (Pending, error) {
		return Respond(metadataResponse(req)), nil
	})))
	first := dial(t, ts.addr)
	head, rest := paddedMetadata(t, 1, 4096)
	first.send(head)
	poll(t, "the first request to take the slot", func() bool { return ts.requests.InUse() == 1 })
	second := dial(t, ts.addr)
	second.send(requestFrame(metadataRequest(12), 2, "second"))
	poll(t, "the second request to wait for a slot", func() bool { return ts.requests.Waiting() == 1 })
	first.send(rest)
	if corr, _ := first.readResponse(kmsg.Metadata, 12); corr != 1 {
		t.Fatalf("first: correlation id %d", corr)
	}
	if corr, _ := second.readResponse(kmsg.Metadata, 12); corr != 2 {
		t.Fatalf("second: correlation id %d", corr)
	}
}

// TestMaxConnectionsPerIP: the bound per address, an override for one
// address, and new bounds put in force at run time; every refusal is
// counted and logged.
func TestMaxConnectionsPerIP(t *testing.T) {
	obs := &refusalCounter{}
	ts := startServer(t, ServerConfig{MaxConnectionsPerIP: 2, Observer: obs}, testTable())
	a, b := dial(t, ts.addr), dial(t, ts.addr)
	a.apiVersions(1)
	b.apiVersions(1)
	dial(t, ts.addr).expectClosed()
	ts.logs.waitFor(t, "of the per-address refusal", func(r logRecord) bool {
		return r.msg == "connection refused: max.connections.per.ip reached for this address"
	})
	if n := obs.refused.Load(); n != 1 {
		t.Fatalf("%d refusals counted, want 1", n)
	}

	loopback := netip.MustParseAddr("127.0.0.1")
	if err := ts.SetConnectionLimits(ConnectionLimits{Max: 100, PerIP: 1, PerIPOverrides: map[netip.Addr]int{loopback: 3}}); err != nil {
		t.Fatal(err)
	}
	dial(t, ts.addr).apiVersions(1) // the third, under the override
	dial(t, ts.addr).expectClosed() // the fourth
	ts.logs.waitFor(t, "of the override refusal", func(r logRecord) bool {
		return r.msg == "connection refused: max.connections.per.ip.overrides reached for this address"
	})
	if n := obs.refused.Load(); n != 2 {
		t.Fatalf("%d refusals counted, want 2", n)
	}
	// Closing one frees its slot for the address.
	a.nc.Close()
	poll(t, "the server to drop the closed connection", func() bool { return ts.Connections() == 2 })
	dial(t, ts.addr).apiVersions(2)
}

// TestFirstRequestTimeout: a connection that sends nothing is closed after
// the first-request timeout, well before the idle timeout, and the close is
// logged (a port scan or a leak); one that sent its first request is then
// held to the idle timeout only.
func TestFirstRequestTimeout(t *testing.T) {
	const first = 100 * time.Millisecond
	ts := startServer(t, ServerConfig{FirstRequestTimeout: first, IdleTimeout: time.Hour}, testTable())
	// The clock starts before the dial: the server's deadline runs from its
	// accept, which can come before dial returns here.
	start := time.Now()
	silent := dial(t, ts.addr)
	silent.expectClosed()
	if d := time.Since(start); d < first {
		t.Fatalf("closed after %v, before the first-request timeout %v", d, first)
	}
	ts.logs.waitClosedWith(t, ErrFirstRequestTimeout)

	talker := dial(t, ts.addr)
	talker.apiVersions(1)
	// Several first-request periods later the connection is still open
	// (a read timeout here, not EOF).
	talker.nc.SetReadDeadline(time.Now().Add(4 * first))
	var b [1]byte
	if _, err := talker.nc.Read(b[:]); !wire.IsTimeout(err) {
		t.Fatalf("connection that spoke: read returned %v, want a timeout (still open)", err)
	}
	talker.apiVersions(2)
}

// TestFirstRequestStalledFrame: a first frame that starts but does not
// finish within the first-request timeout is closed too, however often
// single bytes arrive.
func TestFirstRequestStalledFrame(t *testing.T) {
	const first = 150 * time.Millisecond
	ts := startServer(t, ServerConfig{FirstRequestTimeout: first}, testTable())
	c := dial(t, ts.addr)
	f := requestFrame(kmsg.NewPtrApiVersionsRequest(), 1, "slow")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < len(f)-1; i++ {
			if _, err := c.nc.Write(f[i : i+1]); err != nil {
				return
			}
			time.Sleep(first / 10) // pacing a slow sender, not waiting for a condition
		}
	}()
	c.expectClosed()
	<-done
	if err := ts.logs.waitFor(t, "the stalled first frame", func(r logRecord) bool {
		return errors.Is(r.err(), ErrFrameStalled) || errors.Is(r.err(), ErrFrameDeadline) || errors.Is(r.err(), ErrFirstRequestTimeout)
	}).err(); err == nil {
		t.Fatal("no close reason")
	}
}
