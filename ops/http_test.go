package ops

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wren-broker/wren/internal/health"
)

func parse(s string) (request, error) {
	return parseRequest(bufio.NewReaderSize(strings.NewReader(s), maxLineBytes))
}

func TestParseRequest(t *testing.T) {
	long := strings.Repeat("a", maxLineBytes)
	many := strings.Repeat("X-A: b\r\n", maxHeaders+1)
	big := strings.Repeat("X-A: "+strings.Repeat("b", 2000)+"\r\n", 9)
	for _, tc := range []struct {
		in     string
		want   request
		status int // 0: accepted
	}{
		{"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", request{"GET", "/metrics", 1, true}, 0},
		{"GET /metrics?x=1 HTTP/1.1\nHost: x\n\n", request{"GET", "/metrics", 1, true}, 0},
		{"HEAD /livez HTTP/1.0\r\n\r\n", request{"HEAD", "/livez", 0, false}, 0},
		{"GET /livez HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", request{"GET", "/livez", 0, true}, 0},
		{"GET /livez HTTP/1.1\r\nHost: x\r\nConnection: foo, close\r\n\r\n", request{"GET", "/livez", 1, false}, 0},
		{"GET /livez HTTP/1.1\r\nhost: x\r\nContent-Length: 0\r\n\r\n", request{"GET", "/livez", 1, true}, 0},
		{"POST /livez HTTP/1.1\r\nHost: x\r\n\r\n", request{"POST", "/livez", 1, true}, 0},
		{"GET /livez HTTP/1.1\r\n\r\n", request{}, 400},                                      // no Host
		{"GET /livez HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", request{}, 400},                // two Hosts
		{"GET /livez HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", request{}, 400}, // a body
		{"GET /livez HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", request{}, 400},
		{"GET /livez HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", request{}, 400},
		{"GET /livez HTTP/1.1\r\nHost: x\r\nBad Name: y\r\n\r\n", request{}, 400},
		{"GET /livez HTTP/1.1\r\nHost: x\x01\r\n\r\n", request{}, 400},
		{"GET /livez HTTP/2.0\r\n\r\n", request{}, 505},
		{"GET /livez HTTP/1.1 x\r\n\r\n", request{}, 400},
		{"GET livez HTTP/1.1\r\nHost: x\r\n\r\n", request{}, 400},
		{"GET http://x/livez HTTP/1.1\r\nHost: x\r\n\r\n", request{}, 400},
		{"GET /li\x7fvez HTTP/1.1\r\nHost: x\r\n\r\n", request{}, 400},
		{"G(T / HTTP/1.1\r\nHost: x\r\n\r\n", request{}, 400},
		{"GET\r\n\r\n", request{}, 400},
		{"GET / HTTP/1.1\r\nHost: x\r\n", request{}, 400}, // ends early
		{"GET /" + long + " HTTP/1.1\r\n\r\n", request{}, 414},
		{"GET / HTTP/1.1\r\nHost: x\r\nX-A: " + long + "\r\n\r\n", request{}, 431},
		{"GET / HTTP/1.1\r\nHost: x\r\n" + many + "\r\n", request{}, 431},
		{"GET / HTTP/1.1\r\nHost: x\r\n" + big + "\r\n", request{}, 431},
	} {
		got, err := parse(tc.in)
		name := tc.in[:min(len(tc.in), 40)]
		if tc.status == 0 {
			if err != nil || got != tc.want {
				t.Errorf("%q: %+v, %v; want %+v", name, got, err, tc.want)
			}
			continue
		}
		var he *httpError
		if !errors.As(err, &he) || he.status != tc.status {
			t.Errorf("%q: %+v, %v; want status %d", name, got, err, tc.status)
		}
	}
	if _, err := parse(""); err != io.EOF {
		t.Errorf("empty input: %v, want io.EOF", err)
	}
}

// FuzzParseRequest: any bytes give a request or an error, never a panic;
// an accepted request keeps to the limits, and writing it back out parses
// to the same request.
func FuzzParseRequest(f *testing.F) {
	f.Add([]byte("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"))
	f.Add([]byte("HEAD /livez?a=b HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"))
	f.Add([]byte("GET / HTTP/1.1\nHost: x\nContent-Length: 0\nConnection: close\n\n"))
	f.Add([]byte("GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bufio.NewReaderSize(bytes.NewReader(data), maxLineBytes)
		req, err := parseRequest(r)
		if err != nil {
			var he *httpError
			if err != io.EOF && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.As(err, &he) {
				t.Fatalf("error of an unexpected kind: %T %v", err, err)
			}
			if he != nil && statusText[he.status] == "" {
				t.Fatalf("status %d has no reason phrase", he.status)
			}
			return
		}
		consumed := len(data) - r.Buffered() - remaining(r)
		if consumed > maxHeadBytes {
			t.Fatalf("accepted a head of %d bytes", consumed)
		}
		if !isToken(req.method) || !strings.HasPrefix(req.path, "/") || strings.ContainsAny(req.path, " ?\r\n") {
			t.Fatalf("accepted %+v", req)
		}
		conn := "close"
		if req.keepAlive {
			conn = "keep-alive"
		}
		again, err := parse(fmt.Sprintf("%s %s HTTP/1.%d\r\nHost: h\r\nConnection: %s\r\n\r\n", req.method, req.path, req.minor, conn))
		if err != nil || again != req {
			t.Fatalf("%+v written back parsed to %+v, %v", req, again, err)
		}
	})
}

// remaining is what r has not yet pulled from its source.
func remaining(r *bufio.Reader) int {
	n := 0
	for {
		if _, err := r.ReadByte(); err != nil {
			return 0 // everything is counted by Buffered before this call
		}
		n++
	}
}

func startServer(t *testing.T, cfg ServerConfig) *Server {
	t.Helper()
	if cfg.Ready == nil {
		cfg.Ready = func() error { return nil }
	}
	if cfg.Health == nil {
		cfg.Health = func() (health.ClusterHealth, bool) {
			h := health.ClusterHealth{ControllerID: 1, Nodes: []int32{1}}
			h.Evaluate()
			return h, true
		}
	}
	s, err := Listen("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestServerWithNetHTTPClient: Go's own client, keeping its connection
// alive between requests, gets the answers net/http's server gave.
func TestServerWithNetHTTPClient(t *testing.T) {
	m := NewMetrics()
	s := startServer(t, ServerConfig{Metrics: m, Ready: func() error { return errors.New("not yet") }})
	base := "http://" + s.Addr().String()
	var dials atomic.Int32
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	c := &http.Client{Timeout: 30 * time.Second, Transport: tr}
	for _, tc := range []struct {
		method, path string
		status       int
		ctype, body  string
	}{
		{"GET", "/livez", 200, "text/plain; charset=utf-8", "ok\n"},
		{"HEAD", "/livez", 200, "text/plain; charset=utf-8", ""},
		{"GET", "/readyz", 503, "text/plain; charset=utf-8", "not yet\n"},
		{"GET", "/v1/cluster/health", 200, "application/json", `"is_healthy": true`},
		{"GET", "/metrics", 200, "text/plain; version=0.0.4; charset=utf-8", "# TYPE wren_kafka_received_bytes_total counter"},
		{"GET", "/nope", 404, "text/plain; charset=utf-8", "404 page not found\n"},
		{"POST", "/metrics", 405, "text/plain; charset=utf-8", "Method Not Allowed\n"},
	} {
		req, _ := http.NewRequest(tc.method, base+tc.path, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != tc.ctype || !strings.Contains(string(body), tc.body) {
			t.Errorf("%s %s: %d %q %q; want %d %q containing %q", tc.method, tc.path,
				resp.StatusCode, resp.Header.Get("Content-Type"), body, tc.status, tc.ctype, tc.body)
		}
		if tc.status == 405 && resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("405 without Allow: GET, HEAD: %q", resp.Header.Get("Allow"))
		}
		if tc.method == "HEAD" && resp.ContentLength != int64(len("ok\n")) {
			t.Errorf("HEAD /livez: Content-Length %d, want the GET body's %d", resp.ContentLength, len("ok\n"))
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("the client dialled %d connections, want 1 kept alive", n)
	}
}

// rawRequest writes req on a new connection and reads until the server
// closes it.
func rawRequest(t *testing.T, s *Server, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("%q: %v after %q", req[:min(len(req), 40)], err, out)
	}
	return string(out)
}

func TestServerKeepAliveAndRefusals(t *testing.T) {
	s := startServer(t, ServerConfig{})
	// Two requests in one write: both answered, in order, then the
	// connection closes after the one that asked for it.
	out := rawRequest(t, s, "GET /livez HTTP/1.1\r\nHost: x\r\n\r\nHEAD /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if strings.Count(out, "HTTP/1.1 200 OK\r\n") != 2 || !strings.HasSuffix(out, "Connection: close\r\n\r\n") ||
		!strings.Contains(out, "Connection: keep-alive\r\n\r\nok\n") {
		t.Fatalf("two pipelined requests: %q", out)
	}
	for req, status := range map[string]string{
		"GET /livez HTTP/1.0\r\n\r\n": "HTTP/1.1 200 OK\r\n",
		"garbage\r\n\r\n":             "HTTP/1.1 400 Bad Request\r\n",
		"GET /livez HTTP/1.1\r\n\r\n": "HTTP/1.1 400 Bad Request\r\n",
		"GET /" + strings.Repeat("a", maxLineBytes) + " HTTP/1.1\r\n":     "HTTP/1.1 414 URI Too Long\r\n",
		"GET / HTTP/1.1\r\n" + strings.Repeat("A: b\r\n", 100) + "\r\n":   "HTTP/1.1 431 Request Header Fields Too Large\r\n",
		"DELETE /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n": "HTTP/1.1 405 Method Not Allowed\r\n",
	} {
		out := rawRequest(t, s, req)
		if !strings.HasPrefix(out, status) || !strings.Contains(out, "Connection: close\r\n") {
			t.Errorf("%q: %q, want %q and the connection closed", req[:min(len(req), 30)], out, status)
		}
	}
}

// TestServerBoundsConnections: with every slot taken, a further connection
// waits in the backlog and is served once a slot frees.
func TestServerBoundsConnections(t *testing.T) {
	s := startServer(t, ServerConfig{})
	var held []net.Conn
	for range maxConnections {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// A keep-alive request, answered, holds the slot.
		io.WriteString(c, "GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	extra, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	io.WriteString(extra, "GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	extra.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, err := extra.Read(make([]byte, 1)); n != 0 || !errors.Is(err, errTimeout(err)) {
		t.Fatalf("a connection past %d was served at once: %d bytes, %v", maxConnections, n, err)
	}
	held[0].Close()
	extra.SetReadDeadline(time.Now().Add(30 * time.Second))
	out, err := io.ReadAll(extra)
	if err != nil || !strings.HasPrefix(string(out), "HTTP/1.1 200 OK") {
		t.Fatalf("after a slot freed: %q, %v", out, err)
	}
}

// errTimeout returns err when it is a timeout, else a sentinel that
// matches nothing.
func errTimeout(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return err
	}
	return errors.New("not a timeout")
}

// TestServerCloseWithIdleConnections: Close returns while a client keeps
// an idle connection open, and the client sees it closed.
func TestServerCloseWithIdleConnections(t *testing.T) {
	s, err := Listen("127.0.0.1:0", ServerConfig{Ready: func() error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
	r := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("%q %v", line, err)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return within 30 s with an idle connection open")
	}
	if _, err := io.ReadAll(r); err != nil {
		t.Fatalf("the idle connection was not closed cleanly: %v", err)
	}
}
