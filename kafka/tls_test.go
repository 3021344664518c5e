package kafka

import (
	"bytes"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/internal/testcert"
	"github.com/wren-broker/wren/internal/vfs"
	"github.com/wren-broker/wren/wire"
)

// startTLSServer serves ApiVersions and rows on an SSL listener with a
// self-signed certificate for 127.0.0.1 and returns the server and a
// client config that trusts it.
func startTLSServer(t *testing.T, cfg ServerConfig, rows ...apiEntry) (*testServer, *tls.Config) {
	t.Helper()
	ca := testcert.NewCA(t, "wren test CA")
	cert := ca.TLSCertificate(t, "127.0.0.1")
	logs := newLogRecorder(t)
	cfg.Logger = slog.New(logs)
	cfg.ConnLogLinesPerSecond = 1 << 20
	s, err := newServer(cfg, nil, testTable(rows...))
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

// A spliced response over TLS (file ranges copied and encrypted, the
// records gathered into large writes) carries the same bytes as over
// plaintext, pipelined responses stay in order with the kmsg-encoded ones
// between them, which are written outside a batch, and the stream stays in
// step.
func TestTLSSplicedResponse(t *testing.T) {
	f, err := vfs.NewOS().Create(filepath.Join(t.TempDir(), "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	data := make([]byte, 3<<20)
	for i := range data {
		data[i] = byte(i*7 + i>>11)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	chunksFor := func(i int) []Chunk {
		// Sizes that straddle the copy buffer and the batch: a large
		// range at an odd offset, small bytes and ranges between.
		big := int64(1<<20 + 12345*i)
		return []Chunk{
			{Bytes: []byte("head|")},
			{File: wire.FileSlice{File: f, Position: int64(777 * i), Size: big}},
			{Bytes: []byte("|mid|")},
			{File: wire.FileSlice{File: f, Position: 3, Size: int64(5 + 4096*i)}},
			{Bytes: bytes.Repeat([]byte{'t'}, 70000)},
		}
	}
	s, tc := startTLSServer(t, ServerConfig{}, apiEntry{
		Key: kmsg.Fetch, Min: 4, Max: 12, MaxRequestBytes: smallRequestBytes,
		Handle: func(s *Server, req *Request) (Pending, error) {
			return RespondSpliced(&SplicedResponse{Chunks: chunksFor(int(req.Header.CorrelationID))}), nil
		},
	})
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: waitTimeout}, "tcp", s.addr, tc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	c := &rawClient{t: t, nc: nc}
	const fetches = 6
	var frames [][]byte
	for i := range fetches {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 11
		frames = append(frames, requestFrame(req, int32(i), "c"))
		frames = append(frames, requestFrame(kmsg.NewPtrApiVersionsRequest(), int32(100+i), "c"))
	}
	c.send(frames...)
	for i := range fetches {
		want, err := wire.AppendTo(nil, chunksFor(i))
		if err != nil {
			t.Fatal(err)
		}
		corr, body := c.readFrame()
		if corr != int32(i) || !bytes.Equal(body, want) {
			t.Fatalf("fetch %d: correlation id %d, body of %d bytes (want %d), same bytes: %v",
				i, corr, len(body), len(want), bytes.Equal(body, want))
		}
		if corr, resp := c.readResponse(kmsg.ApiVersions, 0); corr != int32(100+i) || resp.(*kmsg.ApiVersionsResponse).ErrorCode != 0 {
			t.Fatalf("ApiVersions after fetch %d: correlation id %d", i, corr)
		}
	}
}
