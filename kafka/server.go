package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/internal/membudget"
)

// Defaults, Kafka's where Kafka has the knob.
const (
	// DefaultMaxRequestBytes is socket.request.max.bytes, sized for a
	// small host rather than Kafka's 100 MiB: a frame is held whole while
	// it is handled. 8 MiB holds seven batches of the default
	// message.max.bytes in one Produce request.
	DefaultMaxRequestBytes = 8 << 20
	// DefaultQueuedMaxRequestBytes is queued.max.request.bytes: the bytes
	// of request frames all connections together may hold while they are
	// read and handled (Kafka: unbounded).
	DefaultQueuedMaxRequestBytes = 8 << 20
	// DefaultQueuedMaxRequests is queued.max.requests.
	DefaultQueuedMaxRequests = 500
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
	// DefaultFirstRequestTimeout bounds the time from accept to the first
	// complete request: a client opens with ApiVersions at once, so a
	// connection that sends nothing is a port scan or a leak, and must not
	// hold a connection slot for connections.max.idle.ms.
	DefaultFirstRequestTimeout = 10 * time.Second
	// DefaultFrameTimeout bounds the time a frame's body takes to arrive
	// once admitted to the request budget: the clients' own
	// request.timeout.ms default, past which the client has given up on
	// the request anyway.
	DefaultFrameTimeout = 30 * time.Second
	// DefaultBudgetStarvedAfter: requests waiting this long for a request
	// budget that granted nothing meanwhile make the broker starved.
	DefaultBudgetStarvedAfter = 10 * time.Second
	// DefaultWriteTimeout bounds one socket write of a response (or of
	// one chunk of a spliced response).
	DefaultWriteTimeout = 60 * time.Second
	// DefaultTLSHandshakeTimeout bounds a TLS handshake: Kafka's clients
	// finish it in a few round trips.
	DefaultTLSHandshakeTimeout = 10 * time.Second
)

// ServerConfig configures one listener's Server. The zero value of a field
// selects its default.
type ServerConfig struct {
	// ListenerName is the Kafka listener name ("PLAINTEXT"), logged with
	// every connection. The CONTROLLER listener is cluster/quorum's, not a
	// Server's.
	ListenerName string

	// NotControllerRetry is how long a metadata change answered
	// NOT_CONTROLLER on every item is sent again (forward.go): 0 selects
	// 10 s, a negative value never retries.
	NotControllerRetry time.Duration

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
	// SASL, when set, makes the listener authenticate its clients with
	// SaslHandshake and SaslAuthenticate (sasl.go): it implies
	// RequireAuthentication and replaces MaxRequestBytesBeforeAuth with
	// SASL.MaxReceiveSize. Nil serves the SASL keys with
	// ILLEGAL_SASL_STATE, as Kafka does on a listener without SASL.
	SASL *SASLConfig

	// QueuedMaxRequestBytes is queued.max.request.bytes: the most bytes of
	// request frames the Server's connections hold at once, from the size
	// prefix until the handler returns. A connection whose frame does not
	// fit waits (first come, first served) before reading the body: it
	// stops reading its socket and TCP pushes back on the client. A frame
	// larger than the whole budget waits for all of it and is read alone.
	// Negative means unbounded.
	QueuedMaxRequestBytes int64
	// QueuedMaxRequests is queued.max.requests: the most requests read
	// and not yet handled at once, counted like QueuedMaxRequestBytes.
	// Each connection handles its requests in order, so this bounds how
	// many connections are reading or handling a request at one time.
	// Negative means unbounded.
	QueuedMaxRequests int

	// MaxInFlightPerConn bounds the requests of one connection that were
	// handled but not yet answered. When it is reached the reader stops
	// reading: TCP backpressure reaches the client.
	MaxInFlightPerConn int
	// MaxConnections bounds concurrent connections. At the bound a new
	// connection closes an idle one (fairness.go: ApiVersions-only and
	// the largest address's first; an eighth of the slots is kept for
	// addresses with few connections), or is accepted and closed at once
	// when none is idle.
	MaxConnections int
	// MaxConnectionsPerIP bounds concurrent connections from one client
	// address (max.connections.per.ip), except those in
	// MaxConnectionsPerIPOverrides; zero means no per-address bound.
	MaxConnectionsPerIP int
	// MaxConnectionsPerIPOverrides bounds some addresses differently
	// (max.connections.per.ip.overrides); 0 refuses them.
	MaxConnectionsPerIPOverrides map[netip.Addr]int

	// IdleTimeout closes a connection with nothing in flight that sent no
	// request for this long (connections.max.idle.ms).
	IdleTimeout time.Duration
	// FirstRequestTimeout closes a connection whose first request is not
	// read whole within this long after accept. Time spent waiting for
	// QueuedMaxRequestBytes is not counted.
	FirstRequestTimeout time.Duration
	// FrameTimeout closes a connection whose frame body has not arrived
	// whole within this long after it was admitted to the request budget
	// (a slow sender holding a share of the budget), and one whose size
	// prefix stalls this long.
	FrameTimeout time.Duration
	// WriteTimeout closes a connection that does not take a response (or
	// one chunk of a spliced response) within this long.
	WriteTimeout time.Duration
	// TLSHandshakeTimeout closes a connection to a TLS listener whose
	// handshake has not finished within this long after accept (at most
	// FirstRequestTimeout): a client that opens and stalls holds no slot.
	TLSHandshakeTimeout time.Duration
	// BudgetStarvedAfter: a request budget that has had requests waiting
	// and granted none for this long is starved (BudgetStats.Starved).
	BudgetStarvedAfter time.Duration

	// Logger receives connection-level events. Nil discards them.
	Logger *slog.Logger
	// ConnLogLinesPerSecond bounds the log lines about refused and bad
	// connections (DefaultConnLogLinesPerSecond); the rest are counted and
	// the count is logged with the next line let through.
	ConnLogLinesPerSecond int
	// Observer is told about every request and connection, for metrics.
	// Nil observes nothing.
	Observer Observer

	// QuotaWindowNum and QuotaWindowSize are the client quotas' sampling
	// (quota.window.num and quota.window.size.seconds, quota.go): a rate
	// is measured over QuotaWindowNum samples of QuotaWindowSize.
	// Defaults: DefaultQuotaWindowNum, DefaultQuotaWindowSize.
	QuotaWindowNum  int
	QuotaWindowSize time.Duration
}

func (cfg ServerConfig) withDefaults() (ServerConfig, error) {
	sasl, err := cfg.SASL.withDefaults()
	if err != nil {
		return cfg, err
	}
	cfg.SASL = sasl
	if sasl != nil {
		cfg.RequireAuthentication = true
		if cfg.MaxRequestBytes == 0 {
			cfg.MaxRequestBytes = DefaultMaxRequestBytes
		}
		cfg.MaxRequestBytesBeforeAuth = min(sasl.MaxReceiveSize, cfg.MaxRequestBytes)
	}
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
	if cfg.FirstRequestTimeout == 0 {
		cfg.FirstRequestTimeout = DefaultFirstRequestTimeout
	}
	if cfg.QueuedMaxRequestBytes == 0 {
		cfg.QueuedMaxRequestBytes = DefaultQueuedMaxRequestBytes
	}
	if cfg.QueuedMaxRequests == 0 {
		cfg.QueuedMaxRequests = DefaultQueuedMaxRequests
	}
	if cfg.FrameTimeout == 0 {
		cfg.FrameTimeout = DefaultFrameTimeout
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.TLSHandshakeTimeout == 0 {
		cfg.TLSHandshakeTimeout = DefaultTLSHandshakeTimeout
	}
	cfg.TLSHandshakeTimeout = min(cfg.TLSHandshakeTimeout, cfg.FirstRequestTimeout)
	if cfg.BudgetStarvedAfter == 0 {
		cfg.BudgetStarvedAfter = DefaultBudgetStarvedAfter
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
	if cfg.QuotaWindowNum == 0 {
		cfg.QuotaWindowNum = DefaultQuotaWindowNum
	}
	if cfg.QuotaWindowSize == 0 {
		cfg.QuotaWindowSize = DefaultQuotaWindowSize
	}
	switch {
	case cfg.MaxRequestBytes < minFrameBytes:
		return cfg, fmt.Errorf("%w: MaxRequestBytes %d < %d", ErrBadConfig, cfg.MaxRequestBytes, minFrameBytes)
	case cfg.MaxRequestBytesBeforeAuth < minFrameBytes || cfg.MaxRequestBytesBeforeAuth > cfg.MaxRequestBytes:
		return cfg, fmt.Errorf("%w: MaxRequestBytesBeforeAuth %d outside [%d, MaxRequestBytes %d]",
			ErrBadConfig, cfg.MaxRequestBytesBeforeAuth, minFrameBytes, cfg.MaxRequestBytes)
	case cfg.MaxInFlightPerConn < 1:
		return cfg, fmt.Errorf("%w: MaxInFlightPerConn %d < 1", ErrBadConfig, cfg.MaxInFlightPerConn)
	case cfg.QuotaWindowNum < 1 || cfg.QuotaWindowSize < time.Millisecond:
		return cfg, fmt.Errorf("%w: QuotaWindowNum %d < 1 or QuotaWindowSize %v < 1ms", ErrBadConfig, cfg.QuotaWindowNum, cfg.QuotaWindowSize)
	case cfg.ConnLogLinesPerSecond < 1:
		return cfg, fmt.Errorf("%w: ConnLogLinesPerSecond %d < 1", ErrBadConfig, cfg.ConnLogLinesPerSecond)
	case cfg.MaxConnections < 1:
		return cfg, fmt.Errorf("%w: MaxConnections %d < 1", ErrBadConfig, cfg.MaxConnections)
	case cfg.MaxConnectionsPerIP < 0:
		return cfg, fmt.Errorf("%w: MaxConnectionsPerIP %d < 0", ErrBadConfig, cfg.MaxConnectionsPerIP)
	case cfg.IdleTimeout < 0 || cfg.FrameTimeout < 0 || cfg.WriteTimeout < 0 || cfg.FirstRequestTimeout < 0 || cfg.BudgetStarvedAfter < 0:
		return cfg, fmt.Errorf("%w: negative timeout", ErrBadConfig)
	}
	for addr, n := range cfg.MaxConnectionsPerIPOverrides {
		if n < 0 {
			return cfg, fmt.Errorf("%w: MaxConnectionsPerIPOverrides[%s] %d < 0", ErrBadConfig, addr, n)
		}
	}
	return cfg, nil
}

// smallFrameBytes is the largest frame served from the small-request
// share of the request budget.
const smallFrameBytes = 64 << 10

// minFrameBytes is the smallest frame cap that still admits an ApiVersions
// request with a long client id.
const minFrameBytes = 1024

// Server accepts Kafka connections on one or more listeners of the same
// kind and dispatches their requests through the API table.
type Server struct {
	cfg ServerConfig
	// broker is the state handlers act on (node.go, seam.go); nil for
	// servers of test tables that need none.
	broker *Node
	log    *slog.Logger
	apis   apiIndex

	// ctx is canceled by Close; every connection context derives from it.
	ctx    context.Context
	cancel context.CancelFunc

	// requestBytes and requests are the budgets of QueuedMaxRequestBytes
	// and QueuedMaxRequests (nil: unbounded). smallRequestBytes is the
	// share of frames of at most smallFrameBytes, an eighth of
	// QueuedMaxRequestBytes on top of it: small requests (metadata,
	// fetches, a well-behaved producer's) then never queue behind large
	// ones, which a few clients can keep the main budget full of.
	requestBytes      *membudget.Budget
	smallRequestBytes *membudget.Budget
	requests          *membudget.Budget

	mu        sync.Mutex
	closed    bool
	addr      net.Addr
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	// internal are the InternalListener's connections (internal.go):
	// apart from conns, so that no connection bound counts them and no
	// eviction picks them.
	internal map[*conn]struct{}
	// internalWrite says which topics internal sessions may write
	// (SetInternalWritable); nil: none.
	internalWrite atomic.Pointer[func(topic string) bool]
	// txnGuards are Produce's KIP-890 verifications (txn.go).
	txnGuards txnGuards
	// perIP counts open connections by client address.
	// Invariant: perIP[a] is the number of conns whose ip is a; no zero
	// entries.
	perIP map[netip.Addr]int
	// limits are the connection bounds now in force (SetConnectionLimits).
	limits ConnectionLimits
	// connLog bounds the lines about refused and bad connections.
	connLog *logLimiter
	// protoLog bounds the lines about clients speaking TLS or HTTP to
	// this listener: one a minute.
	protoLog *logLimiter
	// authLog bounds the lines about refused authorizations: one a
	// second, with the count held back (authorize.go).
	authLog *logLimiter
	// budgetLog bounds the WARN about requests waiting for the request
	// budget: one every ten seconds.
	budgetLog *logLimiter
	// watching: the budget watch runs (started by the first Serve).
	watching bool
	// evicting counts connections closed to make room (conn.evicted)
	// that have not yet left conns: they no longer count toward
	// MaxConnections.
	evicting int
	// slowAddrs are the addresses that had a frame closed as too slow,
	// with when (fairness.go).
	slowAddrs map[netip.Addr]time.Time
	// clockSkew is added to the clock that session lifetimes are checked
	// against; tests move it to expire sessions without waiting.
	clockSkew atomic.Int64
	// Counters for BudgetStats.
	preempted, frameDeadlines, evicted atomic.Uint64
	// quotas are the client quotas' rates (quota.go).
	quotas *quotaManager
	// wg counts Serve loops and connection goroutines.
	wg sync.WaitGroup
}

// NewServer returns a Server that serves the API table of apis.go.
func NewServer(cfg ServerConfig, broker *Node) (*Server, error) {
	return newServer(cfg, broker, apiTable[:])
}

// newServer takes the table as an argument so tests can serve handlers of
// their own through the same dispatcher.
func newServer(cfg ServerConfig, broker *Node, table []apiEntry) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	apis := buildAPIIndex(table)
	ctx, cancel := context.WithCancel(context.Background())
	var requestBytes, smallRequestBytes, requests *membudget.Budget
	if cfg.QueuedMaxRequestBytes > 0 {
		requestBytes = membudget.New(cfg.QueuedMaxRequestBytes)
		smallRequestBytes = membudget.New(max(cfg.QueuedMaxRequestBytes/8, smallFrameBytes))
	}
	if cfg.QueuedMaxRequests > 0 {
		requests = membudget.New(int64(cfg.QueuedMaxRequests))
	}
	return &Server{
		requestBytes:      requestBytes,
		smallRequestBytes: smallRequestBytes,
		requests:          requests,
		perIP:             make(map[netip.Addr]int),
		slowAddrs:         make(map[netip.Addr]time.Time),
		limits: ConnectionLimits{
			Max:            cfg.MaxConnections,
			PerIP:          cfg.MaxConnectionsPerIP,
			PerIPOverrides: cfg.MaxConnectionsPerIPOverrides,
		},
		cfg:       cfg,
		broker:    broker,
		log:       cfg.Logger.With("listener", cfg.ListenerName),
		apis:      apis,
		ctx:       ctx,
		cancel:    cancel,
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[*conn]struct{}),
		internal:  make(map[*conn]struct{}),
		connLog:   newLogLimiter(cfg.ConnLogLinesPerSecond, time.Now),
		protoLog:  newLogLimiterWindow(1, time.Minute, time.Now),
		budgetLog: newLogLimiterWindow(1, 10*time.Second, time.Now),
		authLog:   newLogLimiter(1, time.Now),
		quotas:    newQuotaManager(cfg.QuotaWindowNum, cfg.QuotaWindowSize, time.Now),
	}, nil
}

// now is the clock of session lifetimes.
func (s *Server) now() time.Time {
	return time.Now().Add(time.Duration(s.clockSkew.Load()))
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
	return s.serveListener(ln, nil)
}

// ServeListener is Serve for one of several client listeners: its
// connections take l's name and advertised address, and speak TLS when
// l.TLS is set.
func (s *Server) ServeListener(ln net.Listener, l Listener) error {
	sasl, err := l.SASL.withDefaults()
	if err != nil {
		ln.Close()
		return fmt.Errorf("kafka: listener %s: %w", l.Name, err)
	}
	l.SASL = sasl
	return s.serveListener(ln, &l)
}

func (s *Server) serveListener(ln net.Listener, l *Listener) error {
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
	if !s.watching {
		s.watching = true
		s.wg.Add(1)
		go s.watchBudgets()
	}
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
		s.startConn(nc, l)
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

func (s *Server) startConn(nc net.Conn, l *Listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		nc.Close()
		return
	}
	ip, hasIP := remoteIP(nc)
	reason, limit := s.refuseLocked(ip, hasIP)
	if reason == "" && s.needsSlotLocked(ip, hasIP) {
		if victim := s.pickVictimLocked(ip, hasIP, time.Now()); victim != nil {
			victim.evicted = true
			s.evicting++
			s.evicted.Add(1)
			victim.close(ErrEvicted)
		} else {
			reason, limit = "max.connections reached", s.limits.Max
		}
	}
	if reason != "" {
		s.cfg.Observer.ConnectionRefused()
		if ok, suppressed := s.connLog.allow(); ok {
			s.log.Warn("connection refused: "+reason,
				"remote", nc.RemoteAddr().String(), "max", limit, "suppressed", suppressed)
		}
		nc.Close()
		return
	}
	c := newConn(s, nc, l)
	if hasIP {
		c.ip, c.hasIP, c.owner = ip, true, ip
		s.perIP[ip]++
	}
	s.conns[c] = struct{}{}
	s.wg.Add(2)
	go c.readLoop()
	go c.writeLoop()
}

// refuseLocked says why a connection from ip must be refused, with the
// bound it would pass, or "" to accept it.
func (s *Server) refuseLocked(ip netip.Addr, hasIP bool) (reason string, limit int) {
	if !hasIP {
		return "", 0
	}
	if n, ok := s.limits.PerIPOverrides[ip]; ok {
		if s.perIP[ip] >= n {
			return "max.connections.per.ip.overrides reached for this address", n
		}
		return "", 0
	}
	if s.limits.PerIP > 0 && s.perIP[ip] >= s.limits.PerIP {
		return "max.connections.per.ip reached for this address", s.limits.PerIP
	}
	return "", 0
}

// remoteIP is the connection's client address, without an IPv4-in-IPv6
// prefix, so that 127.0.0.1 and ::ffff:127.0.0.1 count as one client.
func remoteIP(nc net.Conn) (netip.Addr, bool) {
	tcp, ok := nc.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return netip.Addr{}, false
	}
	ip, ok := netip.AddrFromSlice(tcp.IP)
	return ip.Unmap(), ok
}

// ConnectionLimits are the bounds on open connections: max.connections,
// max.connections.per.ip and max.connections.per.ip.overrides.
type ConnectionLimits struct {
	Max            int
	PerIP          int // 0: no per-address bound
	PerIPOverrides map[netip.Addr]int
}

// SetConnectionLimits puts new connection bounds in force, as Kafka
// applies a dynamic max.connections: they govern the connections accepted
// from now on; connections already open are not closed.
func (s *Server) SetConnectionLimits(l ConnectionLimits) error {
	if l.Max < 1 || l.PerIP < 0 {
		return fmt.Errorf("%w: connection limits %d, %d per address", ErrBadConfig, l.Max, l.PerIP)
	}
	for addr, n := range l.PerIPOverrides {
		if n < 0 {
			return fmt.Errorf("%w: connection limit %d for %s", ErrBadConfig, n, addr)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits = l
	return nil
}

func (s *Server) removeConn(c *conn) {
	s.mu.Lock()
	if c.internal {
		delete(s.internal, c)
		s.mu.Unlock()
		return
	}
	delete(s.conns, c)
	if c.evicted {
		s.evicting--
	}
	if c.hasIP {
		if s.perIP[c.ip]--; s.perIP[c.ip] == 0 {
			delete(s.perIP, c.ip)
		}
	}
	s.mu.Unlock()
}

// RequestMemory reports the request-bytes budget (queued.max.request.bytes):
// the bytes held now, the most ever held, and the capacity (0 when
// unbounded).
func (s *Server) RequestMemory() (inUse, peak, capacity int64) {
	return s.requestBytes.InUse(), s.requestBytes.Peak(), s.requestBytes.Capacity()
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
		for c := range s.internal {
			c.close(nil)
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
	if n := s.connLog.flush(); n > 0 {
		s.log.Info("log lines about refused or bad connections suppressed", "suppressed", n)
	}
	if n := s.authLog.flush(); n > 0 {
		s.log.Info("log lines about refused authorizations suppressed", "suppressed", n)
	}
	return nil
}

// quotaImage is the image to enforce client quotas from, nil when no
// quota is set (or no image is there yet): then nothing is recorded.
func (s *Server) quotaImage() *cluster.Image {
	n := s.node()
	if n == nil || n.Metadata == nil {
		return nil
	}
	im := n.Metadata.Image()
	if im == nil || !im.HasClientQuotas() {
		return nil
	}
	return im
}
