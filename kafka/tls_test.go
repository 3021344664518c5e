package kafka

import (
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/internal/testcert"
)

// startTLSServer serves the table on an SSL listener with a self-signed
// certificate for 127.0.0.1 and returns the server and a client config
// that trusts it.
func startTLSServer(t *testing.T, cfg ServerConfig) (*testServer, *tls.Config) {
	t.Helper()
	ca := testcert.NewCA(t, "wren test CA")
	cert := ca.TLSCertificate(t, "127.0.0.1")
	logs := newLogRecorder(t)
	cfg.Logger = slog.New(logs)
	cfg.ConnLogLinesPerSecond = 1 << 20
	s, err := newServer(cfg, nil, testTable())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() {
		served <- s.ServeListener(ln, Listener{Name: "SSL", TLS: &tls.Config{Certificates: []tls.Certificate{cert}}})
	}()
	t.Cleanup(func() {
		s.Close()
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("ServeListener returned %v, want ErrServerClosed", err)
		}
	})
	return &testServer{Server: s, addr: ln.Addr().String(), logs: logs}, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}
}

// A TLS client is served; the connection's session carries the listener's
// name.
func TestTLSListenerServes(t *testing.T) {
	s, tc := startTLSServer(t, ServerConfig{})
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: waitTimeout}, "tcp", s.addr, tc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	c := &rawClient{t: t, nc: nc}
	if resp := c.apiVersions(1); resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions over TLS: error %d", resp.ErrorCode)
	}
}

// A client that connects and never sends its ClientHello is closed at the
// handshake deadline, long before the first-request one.
func TestTLSHandshakeDeadline(t *testing.T) {
	s, _ := startTLSServer(t, ServerConfig{TLSHandshakeTimeout: 50 * time.Millisecond, FirstRequestTimeout: time.Hour})
	c := dial(t, s.addr)
	if b := c.expectClosed(); len(b) != 0 {
		t.Errorf("the server sent %d bytes to a silent client", len(b))
	}
}

// Plaintext Kafka on the SSL listener is closed at its first bytes, with
// a log line that names the mistake.
func TestPlaintextOnTLSListener(t *testing.T) {
	s, _ := startTLSServer(t, ServerConfig{})
	c := dial(t, s.addr)
	req := kmsg.NewPtrApiVersionsRequest()
	c.send(requestFrame(req, 1, "plain"))
	c.expectClosed()
	s.logs.waitFor(t, "the plaintext-on-SSL warning", func(r logRecord) bool {
		return strings.HasPrefix(r.msg, ErrPlaintextOnTLS.Error()) && r.attrs["listener"] == "SSL"
	})
}
