package peer

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/wire"
)

// Config configures the connection layer of the CONTROLLER listener.
type Config struct {
	ID election.NodeID
	// Voters maps every voter of controller.quorum.voters to its
	// CONTROLLER address, host:port, exactly as the config lists it.
	Voters map[election.NodeID]string
	// ClusterID returns the cluster id this node knows ("" before it has
	// learnt one; a node without one accepts any peer's).
	ClusterID func() string
	// Listener is the bound CONTROLLER listener; the layer accepts on it
	// and closes it on Close.
	Listener net.Listener
	Logger   *slog.Logger
	// MaxFrameBytes bounds a frame either way; 0 means DefaultMaxFrameBytes.
	MaxFrameBytes int
	// QueueMessages bounds the messages waiting for one peer; beyond it
	// new ones are dropped. 0 means 256.
	QueueMessages int
	// DialTimeout bounds a dial and the handshake; 0 means 2 s. A peer
	// connection whose sent bytes stay unacknowledged that long is closed
	// by the kernel (deadPeerAfter), and dialed again.
	DialTimeout time.Duration
	// BackoffMin and BackoffMax bound the wait between reconnects, which
	// doubles from min to max with jitter; 0 means 50 ms and 2 s.
	BackoffMin, BackoffMax time.Duration
	// IdentityCheckInterval is how often the layer dials its own entry of
	// the voters to find another process claiming its id (identity.go);
	// 0 means 10 s.
	IdentityCheckInterval time.Duration
	// OnDuplicate is told, once, that another process holds this node's
	// id, found after the start (Start refuses to start when it is found
	// then). The node must stop. Nil: it is only logged.
	OnDuplicate func(err error)
	// TLS, when set, makes every connection of the layer mutual TLS, and
	// admits a peer only if its certificate names it (tls.go). Nil:
	// plaintext.
	TLS *TLS
}

// MessageHandler receives one frame of the message channel: its api key
// (one of those registered with HandleMessages) and body. It runs on the
// connection's goroutine and must not block; an error (a body that does
// not decode, a sender it may not claim) closes the connection.
type MessageHandler func(from election.NodeID, key int16, body []byte) error

// ReplicaHandler answers a Kafka request that a peer sends on a replica
// connection (DialReplica), decoded with kmsg as the client listener
// decodes its requests; it runs on that connection's goroutine and may
// block (a follower's fetch waits there for data). The answer is the
// response body as chunks, whose file ranges go out with sendfile; its
// Done is called once it is written or dropped. A nil answer closes the
// connection. conn names the connection, unique among this layer's
// replica connections for the life of the process: a client that keeps
// state for one connection (replication's fetch sessions) drops it when
// ReplicaClosed says the connection closed.
type ReplicaHandler func(from election.NodeID, conn uint64, req kmsg.Request) *wire.Body

// ReplicaClosed is told, once, that the replica connection conn from peer
// from closed: no request comes on it again. It runs on that
// connection's goroutine and must not block.
type ReplicaClosed func(from election.NodeID, conn uint64)

// Encoder is a message channel frame's body, encoded by the peer's
// sending goroutine into a buffer it reuses.
type Encoder interface {
	AppendBody(dst []byte) []byte
}

// Bytes is a body that is already encoded.
type Bytes []byte

// AppendBody appends b.
func (b Bytes) AppendBody(dst []byte) []byte { return append(dst, b...) }

// Layer connects the voters over their CONTROLLER listeners, with Kafka
// framing: one outgoing connection per peer for the message channel (each
// node sends on the connection it dialed and receives on the ones it
// accepted), reconnected with exponential backoff, and replica
// connections dialed on demand; bounded frames and queues.
type Layer struct {
	cfg      Config
	log      *slog.Logger
	hash     string
	peers    map[election.NodeID]*peer
	stop     chan struct{}
	wg       sync.WaitGroup
	once     sync.Once
	started  atomic.Bool
	mu       sync.Mutex
	accepted map[election.NodeID]net.Conn // one per peer: a new one replaces the old
	conns    map[net.Conn]bool
	// onMessage and messageKeys: the message channel's client
	// (HandleMessages); onReplica: the replica connections' client
	// (HandleReplicas). Set before Start, read-only after.
	onMessage   MessageHandler
	messageKeys map[int16]*counters
	onReplica   ReplicaHandler
	onClosed    ReplicaClosed
	// replicaConns numbers the accepted replica connections.
	replicaConns atomic.Uint64
	// identityClientID is the client id of this layer's identity checks
	// (identity.go): a handshake from this node's own id with it is this
	// process, not an intruder.
	identityClientID string
	traffic          trafficCounters
	// refusals rate-limits the log lines of refused peers (tls.go).
	refusals refusalLog
}

type peer struct {
	id    election.NodeID
	addr  string
	queue chan outFrame
	// up: the connection to it passed the handshake and has not failed
	// since.
	up atomic.Bool
}

// outFrame is one frame of the message channel.
type outFrame struct {
	key  int16
	body Encoder
}

// New returns the layer for cfg; it accepts and dials nothing before
// Start, so that its clients register first.
func New(cfg Config) (*Layer, error) {
	if _, ok := cfg.Voters[cfg.ID]; !ok {
		return nil, fmt.Errorf("peer: node %d is not among the voters", cfg.ID)
	}
	if cfg.Listener == nil {
		return nil, errors.New("peer: no listener")
	}
	if cfg.MaxFrameBytes <= 0 {
		cfg.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if cfg.QueueMessages <= 0 {
		cfg.QueueMessages = 256
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 2 * time.Second
	}
	if cfg.BackoffMin <= 0 {
		cfg.BackoffMin = 50 * time.Millisecond
	}
	if cfg.BackoffMax <= 0 {
		cfg.BackoffMax = 2 * time.Second
	}
	if cfg.IdentityCheckInterval <= 0 {
		cfg.IdentityCheckInterval = 10 * time.Second
	}
	if cfg.ClusterID == nil {
		cfg.ClusterID = func() string { return "" }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	l := &Layer{cfg: cfg, log: cfg.Logger, hash: PeerSetHash(cfg.Voters),
		peers: map[election.NodeID]*peer{}, messageKeys: map[int16]*counters{},
		stop: make(chan struct{}), accepted: map[election.NodeID]net.Conn{}, conns: map[net.Conn]bool{},
		identityClientID: newIdentityClientID(int32(cfg.ID))}
	for id, addr := range cfg.Voters {
		if id != cfg.ID {
			l.peers[id] = &peer{id: id, addr: addr, queue: make(chan outFrame, cfg.QueueMessages)}
		}
	}
	return l, nil
}

// HandleMessages makes h the message channel's client: the frames with
// the api keys keys, one-way, that peers send on the connections they
// dialed (Send). A frame with another key closes its connection. Called
// before Start.
func (l *Layer) HandleMessages(keys []int16, h MessageHandler) {
	if l.started.Load() {
		panic("peer: HandleMessages after Start")
	}
	for _, k := range keys {
		if k == APIKeyHandshake || k == APIKeyReplicaHandshake {
			panic(fmt.Sprintf("peer: api key %d is the layer's own", k))
		}
		l.messageKeys[k] = &counters{}
	}
	l.onMessage = h
}

// HandleReplicas makes h the replica connections' client: it answers the
// requests peers send on the replica connections they open (DialReplica).
// Without it replica connections are refused. closed, if not nil, is
// told when each of them closes. Called before Start.
func (l *Layer) HandleReplicas(h ReplicaHandler, closed ReplicaClosed) {
	if l.started.Load() {
		panic("peer: HandleReplicas after Start")
	}
	l.onReplica, l.onClosed = h, closed
}

// Start accepts on the listener and connects to the other voters. It
// fails, closing the layer, with ErrDuplicateNodeID when another process
// answers as this node.
func (l *Layer) Start() error {
	if l.started.Swap(true) {
		return errors.New("peer: started twice")
	}
	l.wg.Add(1)
	go l.acceptLoop()
	// Before any peer hears from this process under its id: a second
	// process with a running node's id must not even handshake with the
	// others (each accepted handshake replaces the real node's
	// connection).
	if err := l.checkIdentity(); err != nil {
		l.log.Error("controller listener: another process holds this node's id; not starting", "node", l.cfg.ID, "err", err)
		l.Close()
		return err
	}
	for _, p := range l.peers {
		l.wg.Add(1)
		go l.sendLoop(p)
	}
	l.wg.Add(1)
	go l.identityLoop()
	return nil
}

// ID is this node's id.
func (l *Layer) ID() election.NodeID { return l.cfg.ID }

// MaxFrameBytes is the bound of a frame either way.
func (l *Layer) MaxFrameBytes() int { return l.cfg.MaxFrameBytes }

// Send queues a message channel frame with api key key (one registered
// with HandleMessages) for peer to; a full queue, an unknown peer or a key
// not registered drops it. It never blocks.
func (l *Layer) Send(to election.NodeID, key int16, body Encoder) {
	p := l.peers[to]
	if p == nil || l.messageKeys[key] == nil {
		return
	}
	select {
	case p.queue <- outFrame{key: key, body: body}:
	default:
	}
}

// Connected reports whether this node's connection to peer id is up: it
// passed the handshake and has not failed since. A peer that stops, or
// refuses this node, is not connected from the moment its connection
// drops, well before a timeout would say so.
func (l *Layer) Connected(id election.NodeID) bool {
	p := l.peers[id]
	return p != nil && p.up.Load()
}

// Stats is what the layer sent and received since it started.
func (l *Layer) Stats() Stats { return l.traffic.snapshot(l.messageKeys) }

// Close closes the listener and every connection, replica connections
// included, and waits for the layer's goroutines.
func (l *Layer) Close() error {
	var err error
	l.once.Do(func() {
		close(l.stop)
		err = l.cfg.Listener.Close()
		l.mu.Lock()
		for c := range l.conns {
			c.Close()
		}
		l.mu.Unlock()
		l.wg.Wait()
	})
	return err
}

func (l *Layer) track(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.stop:
		return false
	default:
	}
	l.conns[c] = true
	return true
}

func (l *Layer) untrack(c net.Conn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
	c.Close()
}

func (l *Layer) stopped() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

// clientID is the client id of the message channel's frames: wren-quorum-N,
// as when the layer was the metadata quorum's own, so the bytes on the
// wire are unchanged.
func (l *Layer) clientID() string { return fmt.Sprintf("wren-quorum-%d", l.cfg.ID) }

// sendLoop owns the connection to one peer: dial, handshake, then write
// its queued messages until an error, then back off and dial again.
func (l *Layer) sendLoop(p *peer) {
	defer l.wg.Done()
	backoff := l.cfg.BackoffMin
	var lastErr string
	for !l.stopped() {
		err := l.serveOutgoing(p, func() { backoff = l.cfg.BackoffMin; p.up.Store(true) })
		p.up.Store(false)
		if l.stopped() {
			return
		}
		if msg := err.Error(); msg != lastErr {
			// Once per distinct error: a peer that is down for an hour
			// does not fill the log.
			var idErr *IdentityError
			if errors.As(err, &idErr) {
				l.log.Error("controller listener: refusing peer: it is not the voter it must be; reconnecting", "peer", p.id, "addr", p.addr, "err", err)
			} else {
				l.log.Info("controller listener: connection to peer lost; reconnecting", "peer", p.id, "addr", p.addr, "err", err)
			}
			lastErr = msg
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		backoff = min(2*backoff, l.cfg.BackoffMax)
		select {
		case <-l.stop:
			return
		case <-time.After(wait):
		}
	}
}

func (l *Layer) serveOutgoing(p *peer, connected func()) error {
	raw, c, err := l.dial(p.id, p.addr)
	if err != nil {
		return err
	}
	defer l.untrack(raw)
	c.SetDeadline(time.Now().Add(l.cfg.DialTimeout))
	hs := Handshake{ClusterID: l.cfg.ClusterID(), PeerSetHash: l.hash, From: l.cfg.ID, To: p.id}
	frame := wire.AppendRequestHeader(make([]byte, 4, 64), APIKeyHandshake, 0, 0, l.clientID(), false)
	frame = AppendHandshake(frame, hs)
	if err := wire.WriteFrame(c, frame); err != nil {
		return err
	}
	l.traffic.handshake.count(true, len(frame))
	resp, err := readFrame(c, l.cfg.MaxFrameBytes)
	if err != nil {
		if refusedByTLS(err) {
			// TLS 1.3 ends the client's handshake before the server has
			// checked its certificate: a refusal comes as an alert here.
			return &IdentityError{Node: p.id, Err: fmt.Errorf("node %d at %s refused this node's certificate (its CA or its names): %w", p.id, p.addr, err)}
		}
		return fmt.Errorf("handshake: %w", err)
	}
	l.traffic.handshake.count(false, 4+len(resp))
	if len(resp) < 4 {
		return errors.New("handshake: short response")
	}
	theirs, err := DecodeHandshake(resp[4:])
	if err != nil {
		return err
	}
	if theirs.ErrorCode != 0 {
		l.log.Error("controller listener: peer refused this node", "peer", p.id, "addr", p.addr, "reason", theirs.ErrorMessage)
		return fmt.Errorf("refused: %s", theirs.ErrorMessage)
	}
	if reason := l.mismatch(hs, theirs); reason != "" {
		l.log.Error("controller listener: refusing peer", "peer", p.id, "addr", p.addr, "reason", reason)
		return errors.New(reason)
	}
	c.SetDeadline(time.Time{})
	connected()
	// A reader that notices the peer closing, so the writer does not wait
	// for its next message to find out.
	closed := make(chan struct{})
	go func() {
		io.Copy(io.Discard, c)
		close(closed)
	}()
	w := bufio.NewWriter(c)
	buf := make([]byte, 0, 4096)
	for {
		var m outFrame
		select {
		case <-l.stop:
			return net.ErrClosed
		case <-closed:
			return io.EOF
		case m = <-p.queue:
		}
		for {
			buf = wire.AppendRequestHeader(buf[:4], m.key, 0, 0, l.clientID(), false)
			buf = m.body.AppendBody(buf)
			if len(buf)-4 > l.cfg.MaxFrameBytes {
				l.log.Warn("controller listener: message over the frame limit dropped", "peer", p.id, "bytes", len(buf))
			} else {
				binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
				c.SetWriteDeadline(time.Now().Add(l.cfg.DialTimeout))
				if _, err := w.Write(buf); err != nil {
					return err
				}
				// Counted once buffered: a frame the flush then fails to
				// write is counted, a rare overstatement on a dying
				// connection.
				l.messageKeys[m.key].count(true, len(buf))
			}
			// Batch what is queued into one write.
			select {
			case m = <-p.queue:
				continue
			default:
			}
			break
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
}

// mismatch says why two handshakes cannot talk, naming both sides.
func (l *Layer) mismatch(ours, theirs Handshake) string {
	if ours.ClusterID != "" && theirs.ClusterID != "" && ours.ClusterID != theirs.ClusterID {
		return fmt.Sprintf("cluster id mismatch: node %d is in cluster %s, node %d in cluster %s",
			ours.From, ours.ClusterID, theirs.From, theirs.ClusterID)
	}
	if ours.PeerSetHash != theirs.PeerSetHash {
		return fmt.Sprintf("controller.quorum.voters differ: node %d has peer set %s (%s), node %d has peer set %s; list the same voters, in the same way, on every node",
			ours.From, ours.PeerSetHash, describeVoters(l.cfg.Voters), theirs.From, theirs.PeerSetHash)
	}
	return ""
}

func describeVoters(v map[election.NodeID]string) string {
	ids := slices.Sorted(maps.Keys(v))
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("%d@%s", id, v[id])
	}
	return strings.Join(parts, ",")
}

func (l *Layer) acceptLoop() {
	defer l.wg.Done()
	for {
		c, err := l.cfg.Listener.Accept()
		if err != nil {
			if l.stopped() || errors.Is(err, net.ErrClosed) {
				return
			}
			l.log.Warn("controller listener: accept failed", "err", err)
			select {
			case <-l.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		deadPeerAfter(c, l.cfg.DialTimeout)
		if !l.track(c) {
			c.Close()
			return
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer l.untrack(c)
			if err := l.serveIncoming(c); err != nil && !l.stopped() && !errors.Is(err, io.EOF) {
				l.log.Debug("controller listener: peer connection closed", "remote", c.RemoteAddr().String(), "err", err)
			}
		}()
	}
}

// serveIncoming serves one accepted connection; raw is the TCP
// connection (the TLS one, when the layer speaks TLS, runs over it).
func (l *Layer) serveIncoming(raw net.Conn) error {
	c, cert, batch, plain, err := l.accept(raw)
	if err != nil {
		return err
	}
	c.SetDeadline(time.Now().Add(l.cfg.DialTimeout))
	fr := &wire.FrameReader{R: bufio.NewReader(c)}
	frame, err := fr.ReadFrame(int32(l.cfg.MaxFrameBytes), nil, nil)
	if err != nil {
		return err
	}
	h, clientID, body, err := wire.ParseRequestHeader(frame, false)
	if err != nil {
		return err
	}
	h.ClientID = string(clientID)
	if !l.isSelfDial(h.ClientID) {
		// This process's own identity checks are not traffic between
		// peers.
		l.traffic.handshake.count(false, 4+len(frame))
	}
	replica := h.ApiKey == APIKeyReplicaHandshake
	if h.ApiKey != APIKeyHandshake && !replica {
		return fmt.Errorf("peer: first frame has api key %d, not the handshake", h.ApiKey)
	}
	theirs, err := DecodeHandshake(body)
	if err != nil {
		return err
	}
	ours := Handshake{ClusterID: l.cfg.ClusterID(), PeerSetHash: l.hash, From: l.cfg.ID, To: theirs.From}
	if theirs.From == ProbeNodeID && !replica {
		// A tool asking what this listener is (probe.go): say, and close.
		ours.ErrorCode, ours.ErrorMessage = errInconsistentVoterSet, probeMessage
		resp := AppendHandshake(binary.BigEndian.AppendUint32(make([]byte, 4, 64), uint32(h.CorrelationID)), ours)
		l.log.Debug("controller listener: answered a probe", "remote", c.RemoteAddr().String())
		if err := wire.WriteFrame(c, resp); err != nil {
			return err
		}
		l.traffic.handshake.count(true, len(resp))
		return errProbe
	}
	if theirs.From == l.cfg.ID {
		if reason := l.checkAccepted(cert, plain, theirs.From); reason != "" {
			return l.refuse(raw, c, h, ours, errClusterAuthorizationFailed, reason)
		}
		return l.answerSelf(c, h, ours)
	}
	reason := l.mismatch(ours, theirs)
	tlsReason := ""
	if reason == "" {
		tlsReason = l.checkAccepted(cert, plain, theirs.From)
	}
	switch {
	case tlsReason != "":
		return l.refuse(raw, c, h, ours, errClusterAuthorizationFailed, tlsReason)
	case reason != "":
		ours.ErrorCode = errInconsistentVoterSet
		if ours.ClusterID != theirs.ClusterID {
			ours.ErrorCode = errInconsistentClusterID
		}
	case theirs.To != l.cfg.ID:
		reason = fmt.Sprintf("node %d dialed node %d at %s, but this is node %d", theirs.From, theirs.To, c.LocalAddr(), l.cfg.ID)
		ours.ErrorCode = errInconsistentVoterSet
	case l.peers[theirs.From] == nil:
		reason = fmt.Sprintf("node %d is not a voter of this node's peer set", theirs.From)
		ours.ErrorCode = errInconsistentVoterSet
	case replica && l.onReplica == nil:
		reason = fmt.Sprintf("node %d does not serve replica connections", l.cfg.ID)
		ours.ErrorCode = errInconsistentVoterSet
	}
	ours.ErrorMessage = reason
	resp := binary.BigEndian.AppendUint32(make([]byte, 4, 64), uint32(h.CorrelationID))
	resp = AppendHandshake(resp, ours)
	if err := wire.WriteFrame(c, resp); err != nil {
		return err
	}
	l.traffic.handshake.count(true, len(resp))
	if reason != "" {
		l.log.Error("controller listener: refusing peer", "remote", c.RemoteAddr().String(), "reason", reason)
		return errors.New(reason)
	}
	if replica {
		c.SetDeadline(time.Time{})
		return l.serveReplica(c, batch, fr, theirs.From)
	}
	l.mu.Lock()
	if old := l.accepted[theirs.From]; old != nil {
		old.Close() // the peer reconnected; its old connection is dead
	}
	l.accepted[theirs.From] = raw
	l.mu.Unlock()
	c.SetDeadline(time.Time{})
	for {
		frame, err := fr.ReadFrame(int32(l.cfg.MaxFrameBytes), nil, nil)
		if err != nil {
			return err
		}
		h, _, body, err := wire.ParseRequestHeader(frame, false)
		if err != nil {
			return err
		}
		c := l.messageKeys[h.ApiKey]
		if c == nil {
			return fmt.Errorf("peer: unexpected api key %d from node %d", h.ApiKey, theirs.From)
		}
		c.count(false, 4+len(frame))
		if l.onMessage != nil {
			if err := l.onMessage(theirs.From, h.ApiKey, body); err != nil {
				return err
			}
		}
	}
}

// refuse answers a handshake with code and reason, logs the refusal
// (rate-limited) and returns the error that ends the connection.
func (l *Layer) refuse(raw, c net.Conn, h wire.RequestHeader, ours Handshake, code int16, reason string) error {
	ours.ErrorCode, ours.ErrorMessage = code, reason
	resp := binary.BigEndian.AppendUint32(make([]byte, 4, 64), uint32(h.CorrelationID))
	resp = AppendHandshake(resp, ours)
	if err := wire.WriteFrame(c, resp); err == nil {
		l.traffic.handshake.count(true, len(resp))
	}
	l.refused(raw, reason, reason)
	return errors.New(reason)
}

// readFrame reads one size-prefixed frame of at most limit bytes.
func readFrame(r io.Reader, limit int) ([]byte, error) {
	return readFrameInto(r, limit, nil)
}

// readFrameInto is readFrame into buf's memory when the frame fits there
// (a follower's connection reads every fetch response into one buffer
// instead of a fresh one that the kernel must fault in and the garbage
// collector must clear: at 100 MB/s that cost more CPU than the copy).
func readFrameInto(r io.Reader, limit int, buf []byte) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n <= 0 || int(n) > limit {
		return nil, fmt.Errorf("peer: frame of %d bytes, limit %d", n, limit)
	}
	if int(n) <= cap(buf) {
		buf = buf[:n]
		_, err := io.ReadFull(r, buf)
		return buf, err
	}
	// Memory follows the bytes that arrive, not the size announced.
	if int(n) <= 64<<10 {
		buf := make([]byte, n)
		_, err := io.ReadFull(r, buf)
		return buf, err
	}
	// The buffer grows fourfold as the bytes arrive, to exactly the
	// frame's size at the last step: io.ReadAll grew from 512 bytes by
	// small steps, copying and clearing a multi-MB replica fetch response
	// many times over. Memory stays within four times what arrived.
	buf = make([]byte, 0, 64<<10)
	for len(buf) < int(n) {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(4*cap(buf), int(n)))
			copy(grown, buf)
			buf = grown
		}
		m, err := io.ReadFull(r, buf[len(buf):min(cap(buf), int(n))])
		buf = buf[:len(buf)+m]
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return buf, err
		}
	}
	return buf, nil
}
