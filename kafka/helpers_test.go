package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// waitTimeout bounds every wait in these tests; nothing should come near it.
const waitTimeout = 10 * time.Second

// logRecord is one captured log line.
type logRecord struct {
	level slog.Level
	msg   string
	attrs map[string]any
}

func (r logRecord) err() error {
	e, _ := r.attrs["err"].(error)
	if e == nil {
		e, _ = r.attrs["reason"].(error)
	}
	return e
}

// logRecorder is a slog.Handler that keeps every record for assertions and
// echoes them to the test output.
type logRecorder struct {
	st    *logState
	attrs []slog.Attr
}

type logState struct {
	t       testing.TB
	mu      sync.Mutex
	recs    []logRecord
	changed chan struct{} // closed and replaced on every record
}

func newLogRecorder(t testing.TB) *logRecorder {
	return &logRecorder{st: &logState{t: t, changed: make(chan struct{})}}
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) WithGroup(string) slog.Handler            { return h }
func (h *logRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	return &logRecorder{st: h.st, attrs: append(slices.Clone(h.attrs), as...)}
}

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{level: r.Level, msg: r.Message, attrs: make(map[string]any)}
	var sb strings.Builder
	add := func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.Any()
		if a.Key != "stack" {
			fmt.Fprintf(&sb, " %s=%v", a.Key, a.Value.Any())
		}
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	h.st.mu.Lock()
	h.st.recs = append(h.st.recs, rec)
	close(h.st.changed)
	h.st.changed = make(chan struct{})
	h.st.mu.Unlock()
	h.st.t.Logf("log %s %s%s", r.Level, r.Message, sb.String())
	return nil
}

// waitFor returns the first record, past or future, that matches.
func (h *logRecorder) waitFor(t testing.TB, what string, match func(logRecord) bool) logRecord {
	t.Helper()
	return h.waitAfter(t, what, 0, match)
}

// waitAfter returns the first matching record after the skip first ones.
// match runs with the recorder locked.
func (h *logRecorder) waitAfter(t testing.TB, what string, skip int, match func(logRecord) bool) logRecord {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		h.st.mu.Lock()
		seen := 0
		for _, r := range h.st.recs {
			if match(r) {
				if seen == skip {
					h.st.mu.Unlock()
					return r
				}
				seen++
			}
		}
		changed := h.st.changed
		h.st.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("no log record %s within %v", what, waitTimeout)
		}
	}
}

// waitClosedWith waits for the log of a connection closed because of target.
func (h *logRecorder) waitClosedWith(t testing.TB, target error) logRecord {
	t.Helper()
	return h.waitFor(t, fmt.Sprintf("closing a connection with %q", target), func(r logRecord) bool {
		return r.msg == "closing connection" && errors.Is(r.err(), target)
	})
}

func (h *logRecorder) count(match func(logRecord) bool) int {
	h.st.mu.Lock()
	defer h.st.mu.Unlock()
	n := 0
	for _, r := range h.st.recs {
		if match(r) {
			n++
		}
	}
	return n
}

// testServer runs a Server on a random loopback port until the test ends.
type testServer struct {
	*Server
	addr string
	logs *logRecorder
}

func startServer(t testing.TB, cfg ServerConfig, table []apiEntry) *testServer {
	t.Helper()
	logs := newLogRecorder(t)
	cfg.Logger = slog.New(logs)
	if cfg.ConnLogLinesPerSecond == 0 {
		// Tests wait for the log line of each bad connection they make.
		cfg.ConnLogLinesPerSecond = 1 << 20
	}
	s, err := newServer(cfg, nil, table)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return &testServer{Server: s, addr: ln.Addr().String(), logs: logs}
}

// apiVersionsRow is the production ApiVersions row, for test tables.
func apiVersionsRow() apiEntry {
	for _, e := range apiTable {
		if e.Key == kmsg.ApiVersions {
			return e
		}
	}
	panic("no ApiVersions row")
}

func testTable(rows ...apiEntry) []apiEntry {
	return append([]apiEntry{apiVersionsRow()}, rows...)
}

// rawClient speaks the wire protocol by hand, to send what no client would.
type rawClient struct {
	t  testing.TB
	nc net.Conn
}

func dial(t testing.TB, addr string) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc}
}

func (c *rawClient) send(chunks ...[]byte) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(waitTimeout))
	for _, b := range chunks {
		if _, err := c.nc.Write(b); err != nil {
			c.t.Fatalf("write: %v", err)
		}
	}
}

// readFrame reads one response frame: correlation id and the rest.
func (c *rawClient) readFrame() (int32, []byte) {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(waitTimeout))
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		c.t.Fatalf("reading response size: %v", err)
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 64<<20 {
		c.t.Fatalf("response size %d", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(c.nc, b); err != nil {
		c.t.Fatalf("reading response: %v", err)
	}
	return int32(binary.BigEndian.Uint32(b)), b[4:]
}

// readResponse reads a response to key at version into a kmsg response.
func (c *rawClient) readResponse(key kmsg.Key, version int16) (int32, kmsg.Response) {
	c.t.Helper()
	corr, b := c.readFrame()
	resp := kmsg.ResponseForKey(int16(key))
	resp.SetVersion(version)
	if resp.IsFlexible() && key != kmsg.ApiVersions {
		if len(b) == 0 || b[0] != 0 {
			c.t.Fatalf("%s v%d: flexible response header without an empty tag section", key.Name(), version)
		}
		b = b[1:]
	}
	if err := resp.ReadFrom(b); err != nil {
		c.t.Fatalf("decoding %s v%d response: %v", key.Name(), version, err)
	}
	return corr, resp
}

// expectClosed reads until the server closes the connection. Responses to
// earlier requests may come first; they are returned.
func (c *rawClient) expectClosed() []byte {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(waitTimeout))
	b, err := io.ReadAll(c.nc)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatalf("connection still open after %v", waitTimeout)
	}
	return b
}

// apiVersions does one ApiVersions v4 round trip: the connection works.
func (c *rawClient) apiVersions(corr int32) *kmsg.ApiVersionsResponse {
	c.t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 4
	req.ClientSoftwareName, req.ClientSoftwareVersion = "wren-test", "1.0"
	c.send(requestFrame(req, corr, "test"))
	got, resp := c.readResponse(kmsg.ApiVersions, 4)
	if got != corr {
		c.t.Fatalf("correlation id %d, want %d", got, corr)
	}
	r := resp.(*kmsg.ApiVersionsResponse)
	if r.ErrorCode != 0 {
		c.t.Fatalf("ApiVersions error code %d", r.ErrorCode)
	}
	return r
}

// requestFrame encodes req with a v1/v2 request header and size prefix.
func requestFrame(req kmsg.Request, corr int32, clientID string) []byte {
	b := make([]byte, 4, 64)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// frame prefixes payload with its size.
func frame(payload ...[]byte) []byte {
	var b []byte
	for _, p := range payload {
		b = append(b, p...)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// header encodes a request header by hand: key, version, correlation id,
// client id (len -1 for null), then the tag section if given.
func header(key kmsg.Key, version int16, corr int32, clientID string, tags []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	return append(b, tags...)
}

// gate is a test-controlled event a Pending waits for.
type gate chan struct{}

func (g gate) wait(ctx context.Context) error {
	select {
	case <-g:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// recv receives from ch within waitTimeout.
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitTimeout):
		t.Fatalf("no %s within %v", what, waitTimeout)
		panic("unreachable")
	}
}

// metadataRow serves Metadata with handle, v0-12, for test tables.
func metadataRow(handle handlerFunc) apiEntry {
	return apiEntry{Key: kmsg.Metadata, Min: 0, Max: 12, MaxRequestBytes: smallRequestBytes, Handle: handle}
}

func metadataResponse(req *Request) *kmsg.MetadataResponse {
	return req.Body.(*kmsg.MetadataRequest).ResponseKind().(*kmsg.MetadataResponse)
}

func metadataRequest(version int16) *kmsg.MetadataRequest {
	r := kmsg.NewPtrMetadataRequest()
	r.Version = version
	return r
}
