package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Defaults, Kafka's where Kafka has the knob.
const (
	// DefaultMaxRequestBytes is socket.request.max.bytes.
	DefaultMaxRequestBytes = 104857600
	// DefaultMaxRequestBytesBeforeAuth is sasl.server.max.receive.size:
	// Kafka's cap on frames before authentication (CVE-2022-34917 fix).
	DefaultMaxRequestBytesBeforeAuth = 524288
	// DefaultMaxInFlightPerConn bounds requests read but not yet answered
	// on one connection. franz-go pipelines at most 5 produce requests
	// per connection by default; the rest is headroom.
	DefaultMaxInFlightPerConn = 64
	// DefaultMaxConnections bounds accepted connections per Server (Kafka's
	// max.connections is unbounded; an edge host is not).
	DefaultMaxConnections = 1024
	// DefaultIdleTimeout is connections.max.idle.ms.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultFrameTimeout bounds the wait for the next bytes of a frame
	// that has started.
	DefaultFrameTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds one socket write of a response (or of
	// one chunk of a spliced response).
	DefaultWriteTimeout = 60 * time.Second
)

// ServerConfig configures one listener's Server. The zero value of a field
// selects its default.
type ServerConfig struct {
	// ListenerName is the Kafka listener name ("PLAINTEXT", "CONTROLLER"),
	// logged with every connection.
	ListenerName string
	// ControllerListener serves the internal API keys (apiEntry.Internal):
	// the controller and election messages. A client listener neither
	// advertises nor accepts them.
	ControllerListener bool

	// MaxRequestBytes is socket.request.max.bytes: the largest frame an
	// authenticated connection may send. Keys with a smaller cap in the
	// API table (apiEntry.MaxRequestBytes) are held to that instead.
	MaxRequestBytes int32
	// MaxRequestBytesBeforeAuth caps every frame until the session is
	// authenticated (sasl.server.max.receive.size).
	MaxRequestBytesBeforeAuth int32
	// RequireAuthentication starts every connection unauthenticated: only
	// keys marked BeforeAuth are accepted, with the smaller frame cap,
	// until a handler calls Session.Authenticate. Without it every
	// connection is authenticated from the start.
	RequireAuthentication bool

	// MaxInFlightPerConn bounds the requests of one connection that were
	// handled but not yet answered. When it is reached the reader stops
	// reading: TCP backpressure reaches the client.
	MaxInFlightPerConn int
	// MaxConnections bounds concurrent connections; one more is accepted
	// and closed at once.
	MaxConnections int

	// IdleTimeout closes a connection with nothing in flight that sent no
	// request for this long (connections.max.idle.ms).
	IdleTimeout time.Duration
	// FrameTimeout closes a connection whose frame has started but whose
	// next bytes do not arrive within this long (a slow sender holding a
	// buffer).
	FrameTimeout time.Duration
	// WriteTimeout closes a connection that does not take a response (or
	// one chunk of a spliced response) within this long.
	WriteTimeout time.Duration

	// Logger receives connection-level events. Nil discards them.
	Logger *slog.Logger
	// ConnLogLinesPerSecond bounds the log lines about refused and bad
	// connections (DefaultConnLogLinesPerSecond); the rest are counted and
	// the count is logged with the next line let through.
	ConnLogLinesPerSecond int
	// Observer is told about every request and connection, for metrics.
	// Nil observes nothing.
	Observer Observer
}

func (cfg ServerConfig) withDefaults() (ServerConfig, error) {
	if cfg.MaxRequestBytes == 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.MaxRequestBytesBeforeAuth == 0 {
		cfg.MaxRequestBytesBeforeAuth = min(DefaultMaxRequestBytesBeforeAuth, cfg.MaxRequestBytes)
	}
	if cfg.MaxInFlightPerConn == 0 {
		cfg.MaxInFlightPerConn = DefaultMaxInFlightPerConn
	}
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.FrameTimeout == 0 {
		cfg.FrameTimeout = DefaultFrameTimeout
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ConnLogLinesPerSecond == 0 {
		cfg.ConnLogLinesPerSecond = DefaultConnLogLinesPerSecond
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	switch {
	case cfg.MaxRequestBytes < minFrameBytes:
		return cfg, fmt.Errorf("%w: MaxRequestBytes %d < %d", ErrBadConfig, cfg.MaxRequestBytes, minFrameBytes)
	case cfg.MaxRequestBytesBeforeAuth < minFrameBytes || cfg.MaxRequestBytesBeforeAuth > cfg.MaxRequestBytes:
		return cfg, fmt.Errorf("%w: MaxRequestBytesBeforeAuth %d outside [%d, MaxRequestBytes %d]",
			ErrBadConfig, cfg.MaxRequestBytesBeforeAuth, minFrameBytes, cfg.MaxRequestBytes)
	case cfg.MaxInFlightPerConn < 1:
		return cfg, fmt.Errorf("%w: MaxInFlightPerConn %d < 1", ErrBadConfig, cfg.MaxInFlightPerConn)
	case cfg.ConnLogLinesPerSecond < 1:
		return cfg, fmt.Errorf("%w: ConnLogLinesPerSecond %d < 1", ErrBadConfig, cfg.ConnLogLinesPerSecond)
	case cfg.MaxConnections < 1:
		return cfg, fmt.Errorf("%w: MaxConnections %d < 1", ErrBadConfig, cfg.MaxConnections)
	case cfg.IdleTimeout < 0 || cfg.FrameTimeout < 0 || cfg.WriteTimeout < 0:
		return cfg, fmt.Errorf("%w: negative timeout", ErrBadConfig)
	}
	return cfg, nil
}

// minFrameBytes is the smallest frame cap that still admits an ApiVersions
// request with a long client id.
const minFrameBytes = 1024

// Broker is the broker state that handlers reach through Server.broker:
// metadata, partitions, groups. It is a narrow seam, grown one verb at a
// time by the handlers that need it, so tests can fake it.
type Broker interface{}

// Server accepts Kafka connections on one or more listeners of the same
// kind and dispatches their requests through the API table.
type Server struct {
	cfg    ServerConfig
	broker Broker
	log    *slog.Logger
	apis   apiIndex

	// ctx is canceled by Close; every connection context derives from it.
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	closed    bool
	addr      net.Addr
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	// connLog bounds the lines about refused and bad connections.
	connLog *logLimiter
	// wg counts Serve loops and connection goroutines.
	wg sync.WaitGroup
}

// NewServer returns a Server that serves the API table of apis.go.
func NewServer(cfg ServerConfig, broker Broker) (*Server, error) {
	return newServer(cfg, broker, apiTable[:])
}

// newServer takes the table as an argument so tests can serve handlers of
// their own through the same dispatcher.
func newServer(cfg ServerConfig, broker Broker, table []apiEntry) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	apis := buildAPIIndex(table, cfg.ControllerListener)
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		cfg:       cfg,
		broker:    broker,
		log:       cfg.Logger.With("listener", cfg.ListenerName),
		apis:      apis,
		ctx:       ctx,
		cancel:    cancel,
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[*conn]struct{}),
		connLog:   newLogLimiter(cfg.ConnLogLinesPerSecond, time.Now),
	}, nil
}

// Addr is the address of the first listener passed to Serve, nil before.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Serve accepts connections on ln until Close, then returns
// ErrServerClosed. It closes ln when it returns. It may run on several
// listeners at once.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	if s.addr == nil {
		s.addr = ln.Addr()
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		ln.Close()
	}()

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return ErrServerClosed
			}
			if !isTransientAcceptError(err) {
				return fmt.Errorf("kafka: accept on %s: %w", ln.Addr(), err)
			}
			// Out of descriptors and the like: back off as net/http does
			// rather than spin, and log once per streak.
			if backoff == 0 {
				s.log.Warn("accept failing, backing off", "err", err)
				backoff = 5 * time.Millisecond
			} else {
				backoff = min(2*backoff, time.Second)
			}
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
			}
			continue
		}
		backoff = 0
		s.startConn(nc)
	}
}

func isTransientAcceptError(err error) bool {
	if errors.Is(err, net.ErrClosed) {
		return false
	}
	var temp interface{ Temporary() bool }
	var ne net.Error
	return (errors.As(err, &ne) && ne.Timeout()) || (errors.As(err, &temp) && temp.Temporary())
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *Server) startConn(nc net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		nc.Close()
		return
	}
	if len(s.conns) >= s.cfg.MaxConnections {
		s.cfg.Observer.ConnectionRefused()
		if ok, suppressed := s.connLog.allow(); ok {
			s.log.Warn("connection refused: MaxConnections reached",
				"remote", nc.RemoteAddr().String(), "max", s.cfg.MaxConnections, "suppressed", suppressed)
		}
		nc.Close()
		return
	}
	c := newConn(s, nc)
	s.conns[c] = struct{}{}
	s.wg.Add(2)
	go c.readLoop()
	go c.writeLoop()
}

func (s *Server) removeConn(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Close stops accepting, closes every connection (pending responses are
// completed with a canceled context and dropped) and waits until every
// goroutine of the server has returned. It is safe to call more than once
// and from several goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		s.cancel()
		for ln := range s.listeners {
			ln.Close()
		}
		for c := range s.conns {
			c.close(nil)
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
	if n := s.connLog.flush(); n > 0 {
		s.log.Info("log lines about refused or bad connections suppressed", "suppressed", n)
	}
	return nil
}
