package kafka

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/internal/membudget"
	"github.com/wren-broker/wren/wire"
)

// readBufferBytes is the reader's buffer: small requests and the size
// prefixes of pipelined ones come out of it, large bodies are read
// straight into their frame. Kept small: it is paid per connection.
const readBufferBytes = 4 << 10

// keptWriteBufferBytes: an encode buffer that grew past this for one large
// response is dropped afterwards rather than pinned for the connection's
// life.
const keptWriteBufferBytes = 1 << 20

// conn is one client connection: a reader goroutine that reads, decodes
// and handles requests in order, and a writer goroutine that completes
// their Pendings and writes the responses in the same order.
type conn struct {
	s   *Server
	nc  net.Conn
	log *slog.Logger
	fr  wire.FrameReader

	// ctx is canceled by close; the Session and every Pending see it.
	ctx    context.Context
	cancel context.CancelFunc

	// queue carries handled requests from the reader to the writer, in
	// order. Its capacity is ServerConfig.MaxInFlightPerConn: when full the
	// reader blocks, stops reading, and TCP pushes back on the client. Only
	// the reader sends, and it closes the queue when it returns; the writer
	// drains it to the end, so the reader's send never blocks forever.
	queue chan queued
	// inflight counts requests queued or being answered.
	inflight atomic.Int32

	closeOnce sync.Once
	// authTimer closes the connection if it has not authenticated by
	// SASLConfig.AuthDeadline; nil without SASL. Atomic: the timer's own
	// goroutine may close the connection before newConn stored it.
	authTimer atomic.Pointer[time.Timer]

	// ip is the client address counted in Server.perIP (when hasIP).
	ip    netip.Addr
	hasIP bool
	// owner is whom the request budgets count this connection's frames
	// against: its client address (boxed once), so that one address
	// cannot hold more than its share while others wait.
	owner any

	// progress is how far the frame being read has come.
	progress wire.FrameProgress
	// lastActive is when a request was last read whole or a response
	// last written (UnixNano), from accept on.
	lastActive atomic.Int64
	// worked: the connection sent a request other than ApiVersions.
	worked atomic.Bool
	// evicted: the Server closed it to make room (guarded by Server.mu).
	evicted bool
	// internal: an InternalListener's connection (internal.go), outside
	// the connection bounds, the request budgets and the quotas.
	internal bool

	// mutedUntil is when the connection's quota throttle ends
	// (UnixNano, 0 never throttled): the reader reads no request before
	// (quota.go).
	mutedUntil atomic.Int64

	// Owned by the reader goroutine.
	sess     Session
	quotas   connQuotas
	clientID string // the last client id, reused while it repeats
	// admitted is the frame size the reader holds of the Server's
	// request budgets, 0 when it holds none. Invariant: the reader holds
	// at most one frame of the budgets at a time.
	admitted int32

	// tls is nc as a TLS connection, nil on a plaintext listener. The
	// reader runs its handshake before reading requests.
	tls *tls.Conn
	// raw is the TCP connection under nc, closed directly: tls.Conn's
	// Close first sends close_notify, which can wait 5 s on a client that
	// stopped reading, and close runs under the Server's lock when it
	// evicts.
	raw net.Conn
	// batch is the layer between tls and raw that gathers a response's
	// TLS records into few large writes (nil on a plaintext listener).
	batch *wire.BatchConn

	// Owned by the writer goroutine.
	wbuf []byte
	// respBytes is the size of the response just written, for the
	// Observer.
	respBytes int64
}

// queued is a handled request waiting for its response.
type queued struct {
	corr int32
	// key and version are what the response must carry: the request's,
	// except the v0 answer to an ApiVersions version we do not serve.
	key, version int16
	// closeAfter, when set, closes the connection for this reason once
	// the response is written (a failed SASL authentication).
	closeAfter error
	// raw: the answer is rawOut as a bare frame, without a response
	// header (a SASL token after SaslHandshake v0); nothing is written
	// when rawOut is nil.
	raw     bool
	rawOut  []byte
	pending Pending
	// read is when the request's frame was read whole and size its bytes
	// with the prefix, for the Observer.
	read time.Time
	size int64
	// quota is the request's client quota use (quota.go): the throttle
	// the reader decided and, for a consumer's Fetch, the limit the
	// writer records the response's bytes against.
	quota quotaUse
}

func newConn(s *Server, nc net.Conn, l *Listener) *conn {
	ctx, cancel := context.WithCancel(s.ctx)
	raw := nc
	var tc *tls.Conn
	var batch *wire.BatchConn
	if l != nil && l.TLS != nil {
		batch = wire.NewBatchConn(nc)
		tc = tls.Server(batch, l.TLS)
		nc = tc
	}
	c := &conn{
		s:      s,
		nc:     nc,
		log:    connLogger(s, l).With("remote", nc.RemoteAddr().String()),
		ctx:    ctx,
		cancel: cancel,
		queue:  make(chan queued, s.cfg.MaxInFlightPerConn),
	}
	c.fr = wire.FrameReader{
		R:               bufio.NewReaderSize(nc, readBufferBytes),
		SetReadDeadline: nc.SetReadDeadline,
		IdleTimeout:     s.cfg.IdleTimeout,
		FrameTimeout:    s.cfg.FrameTimeout,
		Busy:            func() bool { return c.inflight.Load() > 0 },
		FirstDeadline:   time.Now().Add(s.cfg.FirstRequestTimeout),
		Progress:        &c.progress,
	}
	c.lastActive.Store(time.Now().UnixNano())
	c.sess = Session{
		ListenerName:  s.cfg.ListenerName,
		RemoteAddr:    nc.RemoteAddr(),
		host:          hostOf(nc.RemoteAddr()),
		ctx:           ctx,
		authenticated: !s.cfg.RequireAuthentication,
		listener:      l,
		saslConfig:    s.cfg.SASL,
	}
	if l != nil && l.SASL != nil {
		c.sess.saslConfig = l.SASL
		c.sess.authenticated = false
	}
	if l != nil && l.Name != "" {
		c.sess.ListenerName = l.Name
	}
	c.tls, c.raw, c.batch = tc, raw, batch
	if l != nil && l.internal {
		// Authenticated from the start, as InternalPrincipal: no SASL
		// exchange, so no deadline for one.
		c.internal = true
		c.log = connLogger(s, l).With("remote", "internal")
		c.sess.internal, c.sess.authenticated, c.sess.principal, c.sess.host = true, true, InternalPrincipal, "internal"
		c.sess.saslConfig = nil
		c.sess.authDone.Store(true)
	}
	if sasl := c.sess.saslConfig; sasl != nil {
		c.authTimer.Store(time.AfterFunc(sasl.AuthDeadline, func() {
			if !c.sess.authDone.Load() {
				c.close(fmt.Errorf("%w: %v", ErrAuthenticationTimeout, sasl.AuthDeadline))
			}
		}))
	}
	return c
}

// close ends the connection once; reason is logged (nil when the server
// closes).
func (c *conn) close(reason error) {
	c.closeOnce.Do(func() {
		if t := c.authTimer.Load(); t != nil {
			t.Stop()
		}
		c.cancel()
		c.raw.Close()
		switch {
		case isDisconnect(reason), errors.Is(reason, ErrIdle), errors.Is(reason, context.Canceled):
			c.log.Debug("connection closed", "reason", reason)
		case errors.Is(reason, ErrTLSOnPlaintext), errors.Is(reason, ErrHTTPOnKafka), errors.Is(reason, ErrPlaintextOnTLS):
			// A misconfigured client retries once a second or faster:
			// one line names the mistake, the rest are counted.
			if ok, suppressed := c.s.protoLog.allow(); ok {
				c.log.Warn(reason.Error(), "suppressed", suppressed)
			}
		default:
			// A bad connection: logged, but at a bounded rate.
			if ok, suppressed := c.s.connLog.allow(); ok {
				if suppressed > 0 {
					c.log.Info("closing connection", "err", reason, "suppressed", suppressed)
				} else {
					c.log.Info("closing connection", "err", reason)
				}
			}
		}
	})
}

func (c *conn) readLoop() {
	defer c.s.wg.Done()
	defer close(c.queue)
	defer c.releaseAdmitted()
	if c.tls != nil {
		if err := c.handshake(); err != nil {
			c.close(err)
			return
		}
	}
	for {
		if err := c.waitMuted(); err != nil {
			c.close(err)
			return
		}
		checkKey := c.checkKey
		if c.sess.sasl.raw {
			checkKey = nil // a bare SASL token: no api key to check
		}
		frame, err := c.fr.ReadFrame(c.frameLimit(), checkKey, c.admit)
		if err != nil {
			if errors.Is(err, ErrFrameDeadline) {
				c.s.frameDeadlines.Add(1)
			}
			c.close(err)
			return
		}
		c.fr.FirstDeadline = time.Time{}
		read := time.Now()
		c.lastActive.Store(read.UnixNano())
		item, err := c.handleFrame(frame)
		// Handled: what the request still needs is in its Pending, so
		// the frame's share of the budgets goes to the next reader in
		// line (Kafka releases a request's buffer at the same point).
		c.releaseAdmitted()
		if err != nil {
			c.close(err)
			return
		}
		if item.pending == nil {
			if item.closeAfter != nil {
				c.close(item.closeAfter)
				return
			}
			continue
		}
		item.read, item.size = read, int64(len(frame))+4
		c.inflight.Add(1)
		c.queue <- item
		if item.closeAfter != nil {
			// Nothing more is read: the writer answers and closes.
			return
		}
	}
}

// admit waits until the Server's request budgets hold a frame of size
// bytes: meanwhile this connection reads nothing. The wait does not count
// against the first-request deadline.
//
// The budgets are shared fairly: frames are admitted in arrival order,
// except that an address holding its share passes its turn while another
// address waits (membudget.AcquireAs). A frame admitted must then arrive
// whole within FrameTimeout, and sooner while others wait for what it
// holds (Server.watchBudgets).
func (c *conn) admit(size int32) error {
	if c.internal {
		return nil // outside the budgets (internal.go)
	}
	start := time.Now()
	if err := c.s.requests.AcquireAs(c.ctx, c.owner, 1); err != nil {
		return err
	}
	if err := c.s.frameBudget(size).AcquireAs(c.ctx, c.owner, int64(size)); err != nil {
		c.s.requests.ReleaseAs(c.owner, 1)
		return err
	}
	c.admitted = size
	if !c.fr.FirstDeadline.IsZero() {
		c.fr.FirstDeadline = c.fr.FirstDeadline.Add(time.Since(start))
	}
	return nil
}

// releaseAdmitted returns the frame's share of the request budgets, if
// the reader holds one.
func (c *conn) releaseAdmitted() {
	if c.admitted == 0 {
		return
	}
	c.s.frameBudget(c.admitted).ReleaseAs(c.owner, int64(c.admitted))
	c.s.requests.ReleaseAs(c.owner, 1)
	c.admitted = 0
}

// frameBudget is the share of the request budget a frame of size takes.
func (s *Server) frameBudget(size int32) *membudget.Budget {
	if size <= smallFrameBytes {
		return s.smallRequestBytes
	}
	return s.requestBytes
}

func (c *conn) frameLimit() int32 {
	if c.sess.authenticated && !c.sess.sasl.reauth {
		return c.s.cfg.MaxRequestBytes
	}
	if sasl := c.sess.saslConfig; sasl != nil {
		return min(sasl.MaxReceiveSize, c.s.cfg.MaxRequestBytes)
	}
	return c.s.cfg.MaxRequestBytesBeforeAuth
}

// checkKey runs as soon as a frame's first two bytes are in.
func (c *conn) checkKey(key int16, size int32) error {
	e := c.s.apis.lookup(key)
	switch {
	case e == nil:
		return fmt.Errorf("%w: %d (%s)", ErrUnknownAPIKey, key, kmsg.NameForKey(key))
	case !c.sess.authenticated && !e.BeforeAuth:
		return fmt.Errorf("%w: %s", ErrNotAuthenticated, e.Key.Name())
	case c.sess.sasl.reauth && e.Key != kmsg.SASLAuthenticate:
		// Kafka's re-authentication reads SASL messages alone.
		return fmt.Errorf("%w: %s during re-authentication", ErrNotAuthenticated, e.Key.Name())
	case !c.sess.sasl.expiry.IsZero() && e.Key != kmsg.SASLHandshake && !c.s.now().Before(c.sess.sasl.expiry):
		return fmt.Errorf("%w: %s", ErrSessionExpired, e.Key.Name())
	case e.MaxRequestBytes > 0 && size > e.MaxRequestBytes:
		return fmt.Errorf("%w: %s frame of %d bytes, limit %d", ErrFrameSize, e.Key.Name(), size, e.MaxRequestBytes)
	}
	return nil
}

// dispatch parses, checks and decodes one frame and calls its handler.
// An error closes the connection, as Kafka does for a request it cannot
// parse, an unknown key, or an unsupported version of any key but
// ApiVersions.
func (c *conn) dispatch(frame []byte) (queued, error) {
	if len(frame) < 4 {
		return queued{}, fmt.Errorf("%w: frame of %d bytes", ErrMalformedHeader, len(frame))
	}
	key := int16(binary.BigEndian.Uint16(frame))
	e := c.s.apis.lookup(key)
	if e == nil {
		return queued{}, fmt.Errorf("%w: %d", ErrUnknownAPIKey, key) // checkKey saw it first
	}
	if key != int16(kmsg.ApiVersions) && !c.worked.Load() {
		c.worked.Store(true)
	}
	body := kmsg.RequestForKey(key)
	body.SetVersion(int16(binary.BigEndian.Uint16(frame[2:])))
	hdr, clientID, rest, err := wire.ParseRequestHeader(frame, body.IsFlexible())
	if err != nil {
		return queued{}, fmt.Errorf("%s: %w", e.Key.Name(), err)
	}
	if string(clientID) != c.clientID {
		c.clientID = string(clientID)
	}
	hdr.ClientID = c.clientID

	if v := hdr.ApiVersion; v < e.Min || v > e.Max {
		if e.Key == kmsg.ApiVersions && v > e.Max {
			// KIP-511: the body of a newer version may not parse; answer
			// in v0 with our own range so the client retries.
			c.log.Debug("ApiVersions version above ours, answering in v0", "version", v)
			return queued{corr: hdr.CorrelationID, key: key, version: 0,
				pending: Respond(c.s.apiVersionsTooNew())}, nil
		}
		return queued{}, fmt.Errorf("%w: %s v%d, served v%d-%d", ErrUnsupportedVersion, e.Key.Name(), v, e.Min, e.Max)
	}
	if e.Precheck != nil {
		if err := e.Precheck(hdr.ApiVersion, rest); err != nil {
			return queued{}, fmt.Errorf("%s v%d: %w", e.Key.Name(), hdr.ApiVersion, err)
		}
	}
	if err := body.ReadFrom(rest); err != nil {
		return queued{}, fmt.Errorf("%w: %s v%d: %w", ErrMalformedBody, e.Key.Name(), hdr.ApiVersion, err)
	}
	req := &Request{Header: hdr, Body: body, CompatOnly: hdr.ApiVersion < e.MinServed, Session: &c.sess}
	var start time.Time
	var im *cluster.Image
	if !c.internal {
		im = c.s.quotaImage() // internal connections have no quota
	}
	if im != nil {
		start = c.s.quotas.now()
		if e.Key == kmsg.Fetch {
			req.FetchQuotaBytes = c.fetchQuotaBytes(im, body)
		}
	}
	p, err := c.s.serve(e, req)
	if err != nil {
		return queued{}, fmt.Errorf("%s v%d handler: %w", e.Key.Name(), hdr.ApiVersion, err)
	}
	closeAfter := c.sess.closeAfter
	c.sess.closeAfter = nil
	item := queued{corr: hdr.CorrelationID, key: key, version: hdr.ApiVersion, pending: p, closeAfter: closeAfter}
	if im != nil {
		item.quota = c.quotasAfter(im, key, body, len(frame), c.s.quotas.now().Sub(start))
		if item.quota.throttle > 0 {
			// Muted now, not once answered: a producer's next request
			// waits even while this one waits for its acks.
			c.muteFor(item.quota.throttle)
		}
	}
	return item, nil
}

// handleFrame handles one frame: a request, or a bare SASL token while
// the session expects one.
func (c *conn) handleFrame(frame []byte) (queued, error) {
	if c.sess.sasl.raw {
		return c.s.saslRawToken(&c.sess, frame), nil
	}
	return c.dispatchSafely(frame)
}

// dispatchSafely is dispatch with a recover around decoding and the
// handler. It is the last line of defence, not a check: a bug in a handler
// or in the decoder closes this connection instead of the broker.
func (c *conn) dispatchSafely(frame []byte) (item queued, err error) {
	defer func() {
		if v := recover(); v != nil {
			key := int16(binary.BigEndian.Uint16(frame)) // readFrame returns >= 2 bytes
			c.log.Error("request panic", "api", kmsg.NameForKey(key), "panic", v, "stack", string(debug.Stack()))
			item, err = queued{}, fmt.Errorf("%w: %s: %v", ErrHandlerPanic, kmsg.NameForKey(key), v)
		}
	}()
	return c.dispatch(frame)
}

func (c *conn) writeLoop() {
	defer c.s.wg.Done()
	defer c.s.removeConn(c)
	po, _ := c.s.cfg.Observer.(ProduceObserver)
	for item := range c.queue {
		c.respBytes = 0
		var picked time.Time
		if po != nil && item.key == int16(kmsg.Produce) {
			// The answers before it are written: from here on it
			// waits for its own appends.
			picked = time.Now()
		}
		if err := c.complete(item); err != nil {
			c.close(err)
		} else if item.closeAfter != nil {
			c.close(item.closeAfter)
		}
		took := time.Since(item.read)
		c.s.cfg.Observer.RequestDone(item.key, item.size, c.respBytes, took)
		if !picked.IsZero() {
			po.ProduceDone(max(picked.Sub(item.read), 0), took)
		}
		c.lastActive.Store(time.Now().UnixNano())
		c.inflight.Add(-1)
	}
}

// complete waits for one Pending and writes its response, or drops it if
// the connection is closing. Spliced responses are released either way.
func (c *conn) complete(item queued) (err error) {
	var resp Response
	defer func() {
		if v := recover(); v != nil {
			c.log.Error("pending response panic", "api", kmsg.NameForKey(item.key), "version", item.version,
				"panic", v, "stack", string(debug.Stack()))
			err = fmt.Errorf("%w: %s v%d response: %v", ErrHandlerPanic, kmsg.NameForKey(item.key), item.version, v)
		}
		resp.Spliced.Done()
	}()
	resp, err = item.pending(c.ctx)
	if err != nil {
		return fmt.Errorf("%s v%d response: %w", kmsg.NameForKey(item.key), item.version, err)
	}
	if c.ctx.Err() != nil {
		return nil // closing: drop
	}
	if item.raw {
		if item.rawOut == nil {
			return nil
		}
		return c.writeRaw(item.rawOut)
	}
	switch {
	case resp.Msg != nil && resp.Spliced != nil:
		return fmt.Errorf("%w: %s v%d: both Msg and Spliced set", ErrBadResponse, kmsg.NameForKey(item.key), item.version)
	case resp.Msg != nil:
		if t, ok := resp.Msg.(kmsg.ThrottleResponse); ok && item.quota.throttle > 0 {
			if cur, _ := t.Throttle(); int64(cur) < item.quota.throttle.Milliseconds() {
				resp.Msg.(kmsg.SetThrottleResponse).SetThrottle(int32(item.quota.throttle.Milliseconds()))
			}
		}
		err = c.writeMsg(item, resp.Msg)
	case resp.Spliced != nil:
		err = c.writeSpliced(&item, resp.Spliced, resp.Sent)
	}
	if err == nil {
		c.throttled(item.quota.typ, item.quota.throttle)
	}
	return err
}

// responseHeader appends size (filled in later), correlation id and, for a
// flexible response header, the empty tag section. ApiVersions' response
// header is never flexible, whatever the version: a client must read it
// before knowing what the broker speaks.
func responseHeader(dst []byte, item queued, flexible bool) []byte {
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(item.corr))
	if flexible && item.key != int16(kmsg.ApiVersions) {
		dst = append(dst, 0)
	}
	return dst
}

func (c *conn) writeMsg(item queued, msg kmsg.Response) error {
	if msg.Key() != item.key || msg.GetVersion() != item.version {
		return fmt.Errorf("%w: %s v%d answered with %s v%d", ErrBadResponse,
			kmsg.NameForKey(item.key), item.version, kmsg.NameForKey(msg.Key()), msg.GetVersion())
	}
	b := responseHeader(c.wbuf[:0], item, msg.IsFlexible())
	b = msg.AppendTo(b)
	if len(b)-4 > math.MaxInt32 {
		return fmt.Errorf("%w: %s v%d of %d bytes", ErrResponseTooLarge, kmsg.NameForKey(item.key), item.version, len(b)-4)
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.WriteTimeout))
	n, err := c.nc.Write(b)
	c.respBytes = int64(n)
	if cap(b) <= keptWriteBufferBytes {
		c.wbuf = b
	} else {
		c.wbuf = nil
	}
	if err != nil {
		return fmt.Errorf("kafka: writing %s response: %w", kmsg.NameForKey(item.key), err)
	}
	return nil
}

// writeSpliced writes the header, then each chunk (wire.Write: runs of
// byte chunks in one writev, file chunks with sendfile), calling sending
// (if set) just before. A throttled consumer Fetch is written empty
// instead, without calling sending: see throttleFetch.
func (c *conn) writeSpliced(item *queued, sr *SplicedResponse, sending func()) error {
	name := kmsg.NameForKey(item.key)
	proto := kmsg.ResponseForKey(item.key)
	proto.SetVersion(item.version)
	var hb [9]byte
	hdr := responseHeader(hb[:0], *item, proto.IsFlexible())
	body, err := wire.Size(sr.Chunks)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadResponse, name, err)
	}
	total := int64(len(hdr)-4) + body
	if total > math.MaxInt32 {
		return fmt.Errorf("%w: spliced %s of %d bytes", ErrResponseTooLarge, name, total)
	}
	body0 := sr.Chunks
	emptied := false
	if item.key == int16(kmsg.Fetch) && c.throttleFetch(item, total+4) {
		emptied = true
		body0 = wire.EncodeFetchResponse(item.version, int32(item.quota.throttle.Milliseconds()), 0, 0, nil)
		n, _ := wire.Size(body0)
		total = int64(len(hdr)-4) + n
	}
	binary.BigEndian.PutUint32(hdr, uint32(total))
	chunks := append([]Chunk{{Bytes: hdr}}, body0...)
	if q := item.quota; !emptied && q.throttle > 0 && item.version >= 1 && len(body0) > 0 && body0[0].File.File == nil && len(body0[0].Bytes) >= 4 {
		// Sent with its records and a throttle (see throttleFetch): the
		// throttle goes into throttle_time_ms, the body's first field (a
		// chunk of its own: the body's bytes are not this writer's to
		// change).
		ms := binary.BigEndian.AppendUint32(nil, uint32(q.throttle.Milliseconds()))
		chunks = append([]Chunk{{Bytes: hdr}, {Bytes: ms}, {Bytes: body0[0].Bytes[4:]}}, body0[1:]...)
	}
	if sending != nil && !emptied {
		sending()
	}
	if c.tls != nil {
		// sendfile(2) cannot encrypt: file chunks go through a buffer,
		// and the records crypto/tls makes of it, one write each, are
		// gathered into few large writes.
		c.batch.Batch()
		_, err = wire.WriteCopy(c.nc, chunks, c.s.cfg.WriteTimeout)
		if ferr := c.batch.Flush(); err == nil {
			err = ferr
		}
	} else {
		_, err = wire.Write(c.nc, chunks, c.s.cfg.WriteTimeout)
	}
	if err != nil {
		// Part of the frame may be out: the stream is unusable.
		return fmt.Errorf("kafka: writing %s response: %w", name, err)
	}
	c.respBytes = total + 4
	return nil
}

// throttleFetch decides a consumer Fetch's quota, as Kafka's
// handleFetchRequest: the response's bytes (frame, the size prefix
// included) are counted against its consumer_byte_rate; when that or
// the request percentage (decided at dispatch) calls for a throttle,
// the bytes are taken back out, since the records are not sent, and it
// reports true: the response goes out empty, with the throttle in
// throttle_time_ms, and the connection is muted for it.
func (c *conn) throttleFetch(item *queued, frameBytes int64) bool {
	q := &item.quota
	if q.fetch != nil {
		if t := c.s.quotas.record(q.fetch, float64(frameBytes), time.Duration(c.s.quotas.window.full())); t > 0 && t >= q.throttle {
			q.throttle, q.typ = t, quotaFetch
		}
		if q.throttle > 0 && float64(frameBytes) > c.s.quotas.windowBytes(q.fetch) {
			// Larger than the quota lets through in a window even with
			// nothing else counted (a record batch past the bound, which
			// a fetch always returns whole, KIP-74): Kafka would answer
			// it empty every time, and the consumer would never move.
			// It goes out with its records and its throttle instead.
			return false
		}
		if q.throttle > 0 {
			c.s.quotas.unrecord(q.fetch, float64(frameBytes))
		}
	}
	// Fetch v0 has no throttle_time_ms (wren serves v4 and later).
	return q.throttle > 0 && item.version >= 1
}

// handshake runs the TLS handshake within TLSHandshakeTimeout. A client
// that speaks plaintext Kafka to a TLS listener fails it at its first five
// bytes: crypto/tls reads records of at most 16 KiB plus overhead and
// refuses a first record that is not a handshake, so a size prefix
// misread as a record length costs no allocation (Kafka's KAFKA-4090).
func (c *conn) handshake() error {
	deadline := time.Now().Add(c.s.cfg.TLSHandshakeTimeout)
	c.nc.SetDeadline(deadline)
	ctx, cancel := context.WithDeadline(c.ctx, deadline)
	defer cancel()
	if err := c.tls.HandshakeContext(ctx); err != nil {
		var rh tls.RecordHeaderError
		var ne net.Error
		reason := "refused"
		switch {
		case errors.As(err, &rh):
			reason, err = "not_tls", fmt.Errorf("%w: %v", ErrPlaintextOnTLS, err)
		case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
			reason, err = "timeout", fmt.Errorf("kafka: TLS handshake: %w", err)
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET):
			reason, err = "closed", fmt.Errorf("kafka: TLS handshake: %w", err)
		default:
			err = fmt.Errorf("kafka: TLS handshake: %w", err)
		}
		if o, is := c.s.cfg.Observer.(TLSObserver); is {
			o.TLSHandshakeFailed(c.sess.ListenerName, reason)
		}
		return err
	}
	c.nc.SetDeadline(time.Time{})
	st := c.tls.ConnectionState()
	c.sess.tlsState = &st
	if len(st.PeerCertificates) > 0 && c.sess.saslConfig == nil {
		p, err := certPrincipal(st.PeerCertificates[0], c.sess.listener)
		if err != nil {
			return fmt.Errorf("kafka: TLS client certificate: %w", err)
		}
		c.sess.principal = p
	}
	return nil
}

// connLogger is the Server's logger, naming the connection's listener
// when it is not the Server's own.
func connLogger(s *Server, l *Listener) *slog.Logger {
	if l == nil || l.Name == "" || l.Name == s.cfg.ListenerName {
		return s.log
	}
	return s.cfg.Logger.With("listener", l.Name)
}

// writeRaw writes b as a bare frame: its size, then b (a SASL token after
// SaslHandshake v0).
func (c *conn) writeRaw(b []byte) error {
	buf := binary.BigEndian.AppendUint32(c.wbuf[:0], uint32(len(b)))
	buf = append(buf, b...)
	c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.WriteTimeout))
	n, err := c.nc.Write(buf)
	c.respBytes = int64(n)
	if cap(buf) <= keptWriteBufferBytes {
		c.wbuf = buf
	}
	if err != nil {
		return fmt.Errorf("kafka: writing a SASL token: %w", err)
	}
	return nil
}
