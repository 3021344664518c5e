package kafka

import (
	"context"
	"errors"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Hostile clients of the secured listeners, over real sockets.

// heapInUse is the heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestTLSHandshakeFlood: 1,000 connections to a TLS listener that never
// finish the handshake, half silent and half stopping inside their
// ClientHello, are all closed by the handshake deadline; while they are
// open the server holds a bounded amount of memory for each, and it gives
// it back once they are closed.
func TestTLSHandshakeFlood(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 200
	}
	// Long enough for every connection to be open at once, short enough
	// for the test: the deadline, not the client, ends them.
	const handshakeTimeout = 3 * time.Second
	// MaxConnections above n: one address's stalled handshakes are not
	// evicted for room (that defence is fairness_test.go's), so
	// the deadline alone ends them.
	s, _ := startTLSServer(t, ServerConfig{TLSHandshakeTimeout: handshakeTimeout, FirstRequestTimeout: time.Hour, MaxConnections: 4 * n})
	// A TLS handshake record announcing 512 bytes, a ClientHello header
	// announcing 508, and then only a few bytes of it.
	partial := append([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03}, make([]byte, 20)...)

	before := heapInUse()
	conns := make([]net.Conn, n)
	var wg sync.WaitGroup
	var dialErr atomic.Value
	const dialers = 8
	for d := range dialers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := d; i < n; i += dialers {
				nc, err := net.DialTimeout("tcp", s.addr, waitTimeout)
				if err != nil {
					dialErr.Store(err)
					return
				}
				conns[i] = nc
				if i%2 == 1 {
					nc.SetWriteDeadline(time.Now().Add(waitTimeout))
					if _, err := nc.Write(partial); err != nil {
						dialErr.Store(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, nc := range conns {
			if nc != nil {
				nc.Close()
			}
		}
	})
	if err := dialErr.Load(); err != nil {
		t.Fatalf("dial: %v", err)
	}
	// Every connection is open at the server before the first deadline;
	// the heap is measured then.
	peak := 0
	for deadline := time.Now().Add(waitTimeout); time.Now().Before(deadline); {
		c := s.Server.Connections()
		peak = max(peak, c)
		if c == n {
			break
		}
		runtime.Gosched()
	}
	during := heapInUse()
	if peak < n {
		t.Fatalf("at most %d of %d connections were open at once", peak, n)
	}
	// Generous: a goroutine, its stack, the TLS state and a record
	// buffer come to well under this.
	const perConn = 64 << 10
	if grew := int64(during) - int64(before); grew > int64(n)*perConn {
		t.Errorf("the heap grew by %d bytes for %d stalled handshakes, over %d per connection", grew, n, perConn)
	} else {
		t.Logf("heap in use grew by %d bytes for %d stalled handshakes (%d per connection)", grew, n, grew/int64(n))
	}

	// Each is closed by the server, at its deadline.
	for i, nc := range conns {
		nc.SetReadDeadline(time.Now().Add(handshakeTimeout + waitTimeout))
		b := make([]byte, 64)
		_, err := nc.Read(b)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection %d still open past the handshake deadline", i)
		}
		if err == nil {
			t.Fatalf("connection %d: the server sent bytes to a stalled handshake", i)
		}
	}
	for deadline := time.Now().Add(waitTimeout); s.Server.Connections() > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still open at the server", s.Server.Connections())
		}
		runtime.Gosched()
	}
	if after := heapInUse(); after > before+8<<20 {
		t.Errorf("heap in use %d after every connection closed, %d before", after, before)
	}
}

// TestSASLBruteForce: 200 wrong passwords, over PLAIN on the wire and over
// SCRAM with franz-go, a connection each, are all refused, each after the
// failed-authentication delay (counted, not timed); the right password
// then logs in with both.
func TestSASLBruteForce(t *testing.T) {
	var delays atomic.Int64
	ts, _ := saslServer(t, SASLConfig{
		Mechanisms: allMechanisms,
		wait: func(ctx context.Context, d time.Duration) error {
			if d <= 0 {
				t.Errorf("failed-authentication delay %v", d)
			}
			delays.Add(1)
			return nil
		},
	})
	const attempts = 200
	for i := range attempts / 2 {
		c := dial(t, ts.addr)
		c.handshake(1, MechanismPlain)
		resp := c.authenticate(2, 2, plainToken("alice", "guess-"+string(rune('a'+i%26))))
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("PLAIN attempt %d: error %d, want SASL_AUTHENTICATION_FAILED", i, resp.ErrorCode)
		}
		c.expectClosed()
		c.nc.Close()
		if got := delays.Load(); got != int64(i+1) {
			t.Fatalf("after %d failed PLAIN attempts, %d delays", i+1, got)
		}
	}
	for i := range attempts / 2 {
		cl := saslClient(t, ts.addr, mechanism(MechanismScramSHA512, "alice", "guess"))
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		err := cl.Ping(ctx)
		cancel()
		cl.Close()
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("SCRAM attempt %d: %v, want SASL_AUTHENTICATION_FAILED", i, err)
		}
	}
	if got := delays.Load(); got != attempts {
		t.Fatalf("%d delays for %d failed attempts", got, attempts)
	}
	for _, m := range []string{MechanismPlain, MechanismScramSHA512} {
		cl := saslClient(t, ts.addr, mechanism(m, "alice", testUsers["alice"]))
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		if err := cl.Ping(ctx); err != nil {
			t.Fatalf("%s with the right password after the attempts: %v", m, err)
		}
		cancel()
	}
}
