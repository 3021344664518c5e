package ops

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/wren-broker/wren/internal/health"
)

// Timeouts and limits of the HTTP server: it is for scrapers and probes on
// a small host, not for slow clients or many of them.
const (
	// httpTimeout bounds reading one request head and writing one
	// response.
	httpTimeout = 10 * time.Second
	// idleTimeout bounds the wait for the next request on a kept-alive
	// connection; Prometheus keeps its connection between scrapes.
	idleTimeout = time.Minute
	// maxConnections bounds the connections served at once; further ones
	// wait in the listen backlog.
	maxConnections = 32
	// maxRequestsPerConnection bounds the requests one connection serves
	// before the server closes it.
	maxRequestsPerConnection = 1000
)

// ServerConfig is what the HTTP server serves.
type ServerConfig struct {
	// Metrics is served at /metrics; nil answers 404.
	Metrics *Metrics
	// Ready returns nil when the node is ready to serve clients, else the
	// reason, which /readyz answers with 503.
	Ready func() error
	// Health is the cluster as this node sees it, for /v1/cluster/health;
	// it returns false while the node cannot tell yet (starting).
	Health func() (health.ClusterHealth, bool)
	Logger *slog.Logger
}

// Server is the HTTP server for operators: GET and HEAD of /metrics,
// /livez, /readyz and /v1/cluster/health over HTTP/1.0 and 1.1, with
// keep-alive. It is a small responder of its own rather than net/http,
// which would add about 1.5 MiB to the binary for four fixed paths.
type Server struct {
	cfg  ServerConfig
	ln   net.Listener
	done chan struct{}
	// slots holds a token per connection being served.
	slots chan struct{}

	mu sync.Mutex
	// conns are the connections being served; closed is set by Close.
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Listen binds addr (host:port; port 0 picks a free one) and serves in the
// background until Close.
func Listen(addr string, cfg ServerConfig) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ops: http.listen: %w", err)
	}
	s := &Server{
		cfg:   cfg,
		ln:    ln,
		done:  make(chan struct{}),
		slots: make(chan struct{}, maxConnections),
		conns: map[net.Conn]struct{}{},
	}
	go s.accept()
	return s, nil
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops accepting, lets a response being written finish (each is
// bounded by httpTimeout), drops idle connections and waits for every
// connection's goroutine.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	err := s.ln.Close()
	for c := range s.conns {
		// Wakes a connection waiting for its next request; one writing a
		// response finishes it and then fails its next read.
		c.SetReadDeadline(time.Now())
	}
	s.mu.Unlock()
	<-s.done
	s.wg.Wait()
	return err
}

func (s *Server) accept() {
	defer close(s.done)
	for {
		s.slots <- struct{}{}
		c, err := s.ln.Accept()
		if err != nil {
			<-s.slots
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			s.cfg.Logger.Error("http server stopped", "err", err)
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			<-s.slots
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				c.Close()
				<-s.slots
				s.wg.Done()
			}()
			s.serveConn(c)
		}()
	}
}

// serveConn answers requests on c, one at a time, until the client or
// the server ends the connection.
func (s *Server) serveConn(c net.Conn) {
	r := bufio.NewReaderSize(c, maxLineBytes)
	var out []byte
	for n := 0; n < maxRequestsPerConnection; n++ {
		if n > 0 {
			// Wait for the next request's first byte at leisure, then
			// read its head under httpTimeout.
			c.SetReadDeadline(time.Now().Add(idleTimeout))
			// Close may have set its deadline just before this one
			// replaced it: look after setting, under Close's lock.
			if s.isClosed() {
				return
			}
			if _, err := r.Peek(1); err != nil {
				return
			}
		}
		c.SetReadDeadline(time.Now().Add(httpTimeout))
		if s.isClosed() {
			return
		}
		req, err := parseRequest(r)
		var resp response
		keepAlive := false
		if err != nil {
			var he *httpError
			if !errors.As(err, &he) {
				return // closed, reset or timed out: no one to answer
			}
			s.cfg.Logger.Debug("http: refused a request", "remote", c.RemoteAddr().String(), "err", he.reason)
			resp = plain(he.status, he.reason)
		} else {
			resp = s.route(req)
			keepAlive = req.keepAlive && n+1 < maxRequestsPerConnection && !s.isClosed()
		}
		out = appendResponse(out[:0], resp, req.method == "HEAD", keepAlive, time.Now())
		c.SetWriteDeadline(time.Now().Add(httpTimeout))
		if _, err := c.Write(out); err != nil || !keepAlive {
			if err == nil && resp.status >= 400 {
				lingeringClose(c)
			}
			return
		}
	}
}

// lingeringClose ends the server's side of c and reads what the client
// still sends, for a short while: closing a socket with unread bytes
// resets the connection, and the client could lose the error answer.
func lingeringClose(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	c.SetReadDeadline(time.Now().Add(time.Second))
	io.Copy(io.Discard, io.LimitReader(c, 1<<20))
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// route answers req: GET and HEAD of the four paths; 405 for another
// method on one of them, 404 for any other path.
func (s *Server) route(req request) response {
	var h func() response
	switch req.path {
	case "/metrics":
		h = s.serveMetrics
	case "/livez":
		h = s.serveLive
	case "/readyz":
		h = s.serveReady
	case "/v1/cluster/health":
		h = s.serveHealth
	default:
		return plain(404, "404 page not found")
	}
	if req.method != "GET" && req.method != "HEAD" {
		r := plain(405, "Method Not Allowed")
		r.allow = "GET, HEAD"
		return r
	}
	return h()
}

func (s *Server) serveMetrics() response {
	if s.cfg.Metrics == nil {
		return plain(404, "404 page not found")
	}
	var b bytes.Buffer
	s.cfg.Metrics.WritePrometheus(&b)
	return response{status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: b.Bytes()}
}

func (s *Server) serveLive() response { return plain(200, "ok") }

func (s *Server) serveReady() response {
	if err := s.cfg.Ready(); err != nil {
		return plain(503, err.Error())
	}
	return plain(200, "ok")
}

func (s *Server) serveHealth() response {
	h, ok := s.cfg.Health()
	if !ok {
		return plain(503, "starting: the cluster's state is not known yet")
	}
	body, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return plain(500, err.Error())
	}
	return response{status: 200, contentType: "application/json", body: append(body, '\n')}
}
