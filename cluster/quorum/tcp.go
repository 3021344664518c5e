package quorum

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

	"github.com/wren-broker/wren/cluster/metalog"
	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/wire"
)

// TCPConfig configures the transport on the CONTROLLER listener.
type TCPConfig struct {
	ID election.NodeID
	// Voters maps every voter of controller.quorum.voters to its
	// CONTROLLER address, host:port, exactly as the config lists it.
	Voters map[election.NodeID]string
	// ClusterID returns the cluster id this node knows ("" before it has
	// learnt one; a node without one accepts any peer's).
	ClusterID func() string
	// Listener is the bound CONTROLLER listener; the transport accepts on
	// it and closes it on Close.
	Listener net.Listener
	Logger   *slog.Logger
	// MaxFrameBytes bounds a frame either way; 0 means DefaultMaxFrameBytes.
	MaxFrameBytes int
	// QueueMessages bounds the messages waiting for one peer; beyond it
	// new ones are dropped. 0 means 256.
	QueueMessages int
	// OnApp receives the bodies of APIKeyApp frames (the cluster's broker
	// heartbeats and forwarded controller requests), on the connection's
	// goroutine: it must not block. Nil drops them.
	OnApp func(from election.NodeID, body []byte)
	// OnReplicaRequest answers a Kafka request that a peer sends on a
	// replica connection (DialReplica), decoded with kmsg as the client
	// listener decodes its requests; it runs on that connection's
	// goroutine and may block (a follower's fetch waits there for data).
	// The answer is the response body as chunks, whose file ranges go out
	// with sendfile; its Done is called once it is written or dropped. A
	// nil answer closes the connection. Nil refuses replica connections.
	OnReplicaRequest func(from election.NodeID, req kmsg.Request) *wire.Body
	// DialTimeout bounds a dial and the handshake; 0 means 2 s. A peer
	// connection whose sent bytes stay unacknowledged that long is closed
	// by the kernel (deadPeerAfter), and dialed again.
	DialTimeout time.Duration
	// BackoffMin and BackoffMax bound the wait between reconnects, which
	// doubles from min to max with jitter; 0 means 50 ms and 2 s.
	BackoffMin, BackoffMax time.Duration
	// IdentityCheckInterval is how often the transport dials its own
	// entry of the voters to find another process claiming its id
	// (identity.go); 0 means 10 s.
	IdentityCheckInterval time.Duration
	// OnDuplicate is told, once, that another process holds this node's
	// id, found after the start (NewTCPTransport refuses to start when it
	// is found then). The node must stop. Nil: it is only logged.
	OnDuplicate func(err error)
}

// TCPTransport connects the voters over their CONTROLLER listeners, with
// Kafka framing and the internal keys APIKeyHandshake and APIKeyMessage:
// one outgoing connection per peer (each node sends on the connection it
// dialed and receives on the ones it accepted), reconnected with
// exponential backoff, bounded frames and queues.
type TCPTransport struct {
	cfg      TCPConfig
	log      *slog.Logger
	hash     string
	inbox    chan metalog.Message
	peers    map[election.NodeID]*peer
	stop     chan struct{}
	wg       sync.WaitGroup
	once     sync.Once
	mu       sync.Mutex
	accepted map[election.NodeID]net.Conn // one per peer: a new one replaces the old
	conns    map[net.Conn]bool
	// identityClientID is the client id of this transport's identity
	// checks (identity.go): a handshake from this node's own id with it
	// is this process, not an intruder.
	identityClientID string
	traffic          trafficCounters
}

type peer struct {
	id    election.NodeID
	addr  string
	queue chan outFrame
	// up: the connection to it passed the handshake and has not failed
	// since.
	up atomic.Bool
}

// outFrame is a metalog message or, with app set, an APIKeyApp body.
type outFrame struct {
	m   metalog.Message
	app []byte
}

// NewTCPTransport starts accepting on cfg.Listener and connecting to the
// other voters.
func NewTCPTransport(cfg TCPConfig) (*TCPTransport, error) {
	if _, ok := cfg.Voters[cfg.ID]; !ok {
		return nil, fmt.Errorf("quorum: node %d is not among the voters", cfg.ID)
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
	t := &TCPTransport{cfg: cfg, log: cfg.Logger, hash: PeerSetHash(cfg.Voters),
		inbox: make(chan metalog.Message, InboxCapacity), peers: map[election.NodeID]*peer{},
		stop: make(chan struct{}), accepted: map[election.NodeID]net.Conn{}, conns: map[net.Conn]bool{},
		identityClientID: newIdentityClientID(int32(cfg.ID))}
	for id, addr := range cfg.Voters {
		if id != cfg.ID {
			t.peers[id] = &peer{id: id, addr: addr, queue: make(chan outFrame, cfg.QueueMessages)}
		}
	}
	t.wg.Add(1)
	go t.acceptLoop()
	// Before any peer hears from this process under its id: a second
	// process with a running node's id must not even handshake with the
	// others (each accepted handshake replaces the real node's
	// connection).
	if err := t.checkIdentity(); err != nil {
		t.log.Error("metadata quorum: another process holds this node's id; not starting", "node", cfg.ID, "err", err)
		t.Close()
		return nil, err
	}
	for _, p := range t.peers {
		t.wg.Add(1)
		go t.sendLoop(p)
	}
	t.wg.Add(1)
	go t.identityLoop()
	return t, nil
}

// Send queues m for its peer; a full queue or an unknown peer drops it.
func (t *TCPTransport) Send(m metalog.Message) {
	p := t.peers[m.To]
	if p == nil {
		return
	}
	select {
	case p.queue <- outFrame{m: m}:
	default:
	}
}

// SendApp queues an APIKeyApp body for peer to, as Send does: it never
// blocks and drops when the queue is full or the peer unknown.
func (t *TCPTransport) SendApp(to election.NodeID, body []byte) {
	p := t.peers[to]
	if p == nil {
		return
	}
	select {
	case p.queue <- outFrame{app: body}:
	default:
	}
}

// Connected reports whether this node's connection to peer id is up: it
// passed the handshake and has not failed since. A peer that stops, or
// refuses this node, is not connected from the moment its connection
// drops, well before a timeout would say so.
func (t *TCPTransport) Connected(id election.NodeID) bool {
	p := t.peers[id]
	return p != nil && p.up.Load()
}

// Receive is where messages from peers arrive.
func (t *TCPTransport) Receive() <-chan metalog.Message { return t.inbox }

// Stats is what the transport sent and received since it started
// (StatsReporter).
func (t *TCPTransport) Stats() TransportStats { return t.traffic.snapshot() }

// Close closes the listener and every connection and waits for the
// transport's goroutines.
func (t *TCPTransport) Close() error {
	var err error
	t.once.Do(func() {
		close(t.stop)
		err = t.cfg.Listener.Close()
		t.mu.Lock()
		for c := range t.conns {
			c.Close()
		}
		t.mu.Unlock()
		t.wg.Wait()
	})
	return err
}

func (t *TCPTransport) track(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-t.stop:
		return false
	default:
	}
	t.conns[c] = true
	return true
}

func (t *TCPTransport) untrack(c net.Conn) {
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
	c.Close()
}

func (t *TCPTransport) stopped() bool {
	select {
	case <-t.stop:
		return true
	default:
		return false
	}
}

func (t *TCPTransport) clientID() string { return fmt.Sprintf("wren-quorum-%d", t.cfg.ID) }

// sendLoop owns the connection to one peer: dial, handshake, then write
// its queued messages until an error, then back off and dial again.
func (t *TCPTransport) sendLoop(p *peer) {
	defer t.wg.Done()
	backoff := t.cfg.BackoffMin
	var lastErr string
	for !t.stopped() {
		err := t.serveOutgoing(p, func() { backoff = t.cfg.BackoffMin; p.up.Store(true) })
		p.up.Store(false)
		if t.stopped() {
			return
		}
		if msg := err.Error(); msg != lastErr {
			// Once per distinct error: a peer that is down for an hour
			// does not fill the log.
			t.log.Info("metadata quorum: connection to peer lost; reconnecting", "peer", p.id, "addr", p.addr, "err", err)
			lastErr = msg
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		backoff = min(2*backoff, t.cfg.BackoffMax)
		select {
		case <-t.stop:
			return
		case <-time.After(wait):
		}
	}
}

func (t *TCPTransport) serveOutgoing(p *peer, connected func()) error {
	c, err := net.DialTimeout("tcp", p.addr, t.cfg.DialTimeout)
	if err != nil {
		return err
	}
	deadPeerAfter(c, t.cfg.DialTimeout)
	if !t.track(c) {
		c.Close()
		return net.ErrClosed
	}
	defer t.untrack(c)
	c.SetDeadline(time.Now().Add(t.cfg.DialTimeout))
	hs := Handshake{ClusterID: t.cfg.ClusterID(), PeerSetHash: t.hash, From: t.cfg.ID, To: p.id}
	frame := wire.AppendRequestHeader(make([]byte, 4, 64), APIKeyHandshake, 0, 0, t.clientID(), false)
	frame = AppendHandshake(frame, hs)
	if err := wire.WriteFrame(c, frame); err != nil {
		return err
	}
	t.traffic.count(true, TrafficHandshake, len(frame))
	resp, err := readFrame(c, t.cfg.MaxFrameBytes)
	if err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	t.traffic.count(false, TrafficHandshake, 4+len(resp))
	if len(resp) < 4 {
		return errors.New("handshake: short response")
	}
	theirs, err := DecodeHandshake(resp[4:])
	if err != nil {
		return err
	}
	if theirs.ErrorCode != 0 {
		t.log.Error("metadata quorum: peer refused this node", "peer", p.id, "addr", p.addr, "reason", theirs.ErrorMessage)
		return fmt.Errorf("refused: %s", theirs.ErrorMessage)
	}
	if reason := t.mismatch(hs, theirs); reason != "" {
		t.log.Error("metadata quorum: refusing peer", "peer", p.id, "addr", p.addr, "reason", reason)
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
		case <-t.stop:
			return net.ErrClosed
		case <-closed:
			return io.EOF
		case m = <-p.queue:
		}
		for {
			kind := TrafficMetalog
			if m.app != nil {
				kind = TrafficApp
				buf = wire.AppendRequestHeader(buf[:4], APIKeyApp, 0, 0, t.clientID(), false)
				buf = append(buf, m.app...)
			} else {
				buf = wire.AppendRequestHeader(buf[:4], APIKeyMessage, 0, 0, t.clientID(), false)
				buf = AppendMessage(buf, m.m)
			}
			if len(buf)-4 > t.cfg.MaxFrameBytes {
				t.log.Warn("metadata quorum: message over the frame limit dropped", "peer", p.id, "bytes", len(buf))
			} else {
				binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
				c.SetWriteDeadline(time.Now().Add(t.cfg.DialTimeout))
				if _, err := w.Write(buf); err != nil {
					return err
				}
				// Counted once buffered: a frame the flush then fails to
				// write is counted, a rare overstatement on a dying
				// connection.
				t.traffic.count(true, kind, len(buf))
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
func (t *TCPTransport) mismatch(ours, theirs Handshake) string {
	if ours.ClusterID != "" && theirs.ClusterID != "" && ours.ClusterID != theirs.ClusterID {
		return fmt.Sprintf("cluster id mismatch: node %d is in cluster %s, node %d in cluster %s",
			ours.From, ours.ClusterID, theirs.From, theirs.ClusterID)
	}
	if ours.PeerSetHash != theirs.PeerSetHash {
		return fmt.Sprintf("controller.quorum.voters differ: node %d has peer set %s (%s), node %d has peer set %s; list the same voters, in the same way, on every node",
			ours.From, ours.PeerSetHash, describeVoters(t.cfg.Voters), theirs.From, theirs.PeerSetHash)
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

func (t *TCPTransport) acceptLoop() {
	defer t.wg.Done()
	for {
		c, err := t.cfg.Listener.Accept()
		if err != nil {
			if t.stopped() || errors.Is(err, net.ErrClosed) {
				return
			}
			t.log.Warn("metadata quorum: accept failed", "err", err)
			select {
			case <-t.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		deadPeerAfter(c, t.cfg.DialTimeout)
		if !t.track(c) {
			c.Close()
			return
		}
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			defer t.untrack(c)
			if err := t.serveIncoming(c); err != nil && !t.stopped() && !errors.Is(err, io.EOF) {
				t.log.Debug("metadata quorum: peer connection closed", "remote", c.RemoteAddr().String(), "err", err)
			}
		}()
	}
}

func (t *TCPTransport) serveIncoming(c net.Conn) error {
	c.SetDeadline(time.Now().Add(t.cfg.DialTimeout))
	fr := &wire.FrameReader{R: bufio.NewReader(c)}
	frame, err := fr.ReadFrame(int32(t.cfg.MaxFrameBytes), nil, nil)
	if err != nil {
		return err
	}
	h, clientID, body, err := wire.ParseRequestHeader(frame, false)
	if err != nil {
		return err
	}
	h.ClientID = string(clientID)
	if !t.isSelfDial(h.ClientID) {
		// This process's own identity checks are not traffic between
		// peers.
		t.traffic.count(false, TrafficHandshake, 4+len(frame))
	}
	replica := h.ApiKey == APIKeyReplicaHandshake
	if h.ApiKey != APIKeyHandshake && !replica {
		return fmt.Errorf("quorum: first frame has api key %d, not the handshake", h.ApiKey)
	}
	theirs, err := DecodeHandshake(body)
	if err != nil {
		return err
	}
	ours := Handshake{ClusterID: t.cfg.ClusterID(), PeerSetHash: t.hash, From: t.cfg.ID, To: theirs.From}
	if theirs.From == ProbeNodeID && !replica {
		// A tool asking what this listener is (probe.go): say, and close.
		ours.ErrorCode, ours.ErrorMessage = errInconsistentVoterSet, probeMessage
		resp := AppendHandshake(binary.BigEndian.AppendUint32(make([]byte, 4, 64), uint32(h.CorrelationID)), ours)
		t.log.Debug("metadata quorum: answered a probe", "remote", c.RemoteAddr().String())
		if err := wire.WriteFrame(c, resp); err != nil {
			return err
		}
		t.traffic.count(true, TrafficHandshake, len(resp))
		return errProbe
	}
	if theirs.From == t.cfg.ID {
		return t.answerSelf(c, h, ours)
	}
	reason := t.mismatch(ours, theirs)
	switch {
	case reason != "":
		ours.ErrorCode = errInconsistentVoterSet
		if ours.ClusterID != theirs.ClusterID {
			ours.ErrorCode = errInconsistentClusterID
		}
	case theirs.To != t.cfg.ID:
		reason = fmt.Sprintf("node %d dialed node %d at %s, but this is node %d", theirs.From, theirs.To, c.LocalAddr(), t.cfg.ID)
		ours.ErrorCode = errInconsistentVoterSet
	case t.peers[theirs.From] == nil:
		reason = fmt.Sprintf("node %d is not a voter of this node's peer set", theirs.From)
		ours.ErrorCode = errInconsistentVoterSet
	case replica && t.cfg.OnReplicaRequest == nil:
		reason = fmt.Sprintf("node %d does not serve replica connections", t.cfg.ID)
		ours.ErrorCode = errInconsistentVoterSet
	}
	ours.ErrorMessage = reason
	resp := binary.BigEndian.AppendUint32(make([]byte, 4, 64), uint32(h.CorrelationID))
	resp = AppendHandshake(resp, ours)
	if err := wire.WriteFrame(c, resp); err != nil {
		return err
	}
	t.traffic.count(true, TrafficHandshake, len(resp))
	if reason != "" {
		t.log.Error("metadata quorum: refusing peer", "remote", c.RemoteAddr().String(), "reason", reason)
		return errors.New(reason)
	}
	if replica {
		c.SetDeadline(time.Time{})
		return t.serveReplica(c, fr, theirs.From)
	}
	t.mu.Lock()
	if old := t.accepted[theirs.From]; old != nil {
		old.Close() // the peer reconnected; its old connection is dead
	}
	t.accepted[theirs.From] = c
	t.mu.Unlock()
	c.SetDeadline(time.Time{})
	for {
		frame, err := fr.ReadFrame(int32(t.cfg.MaxFrameBytes), nil, nil)
		if err != nil {
			return err
		}
		h, _, body, err := wire.ParseRequestHeader(frame, false)
		if err != nil {
			return err
		}
		t.traffic.count(false, kindOfKey(h.ApiKey), 4+len(frame))
		if h.ApiKey == APIKeyApp {
			if t.cfg.OnApp != nil {
				t.cfg.OnApp(theirs.From, body)
			}
			continue
		}
		if h.ApiKey != APIKeyMessage {
			return fmt.Errorf("quorum: unexpected api key %d from node %d", h.ApiKey, theirs.From)
		}
		m, err := DecodeMessage(body)
		if err != nil {
			return err
		}
		if m.From != theirs.From || m.To != t.cfg.ID {
			return fmt.Errorf("quorum: node %d sent a message from %d to %d", theirs.From, m.From, m.To)
		}
		select {
		case t.inbox <- m:
		default: // the driver is behind: drop, the protocol resends
		}
	}
}

func writeFrame(w io.Writer, frame []byte) error {
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	_, err := w.Write(frame)
	return err
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
		return nil, fmt.Errorf("quorum: frame of %d bytes, limit %d", n, limit)
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

// serveReplica answers a follower's requests on a replica connection, one
// at a time, in order.
func (t *TCPTransport) serveReplica(c net.Conn, fr *wire.FrameReader, from election.NodeID) error {
	for {
		frame, err := fr.ReadFrame(int32(t.cfg.MaxFrameBytes), nil, nil)
		if err != nil {
			return err
		}
		t.traffic.count(false, TrafficReplica, 4+len(frame))
		h, req, err := decodeRequest(frame)
		if err != nil {
			return fmt.Errorf("quorum: replica request from node %d: %w", from, err)
		}
		resp := t.cfg.OnReplicaRequest(from, req)
		if resp == nil {
			return fmt.Errorf("quorum: node %d sent a replica request it may not (%s v%d)", from, kmsg.NameForKey(h.ApiKey), h.ApiVersion)
		}
		n, err := t.writeReplicaResponse(c, h.CorrelationID, flexibleResponseHeader(req), resp)
		resp.Done()
		if err != nil {
			return err
		}
		t.traffic.count(true, TrafficReplica, int(n))
	}
}

// decodeRequest decodes a Kafka request frame with kmsg, as the client
// listener does: the key and version pick the kmsg type, whose version
// says whether the header is flexible.
func decodeRequest(frame []byte) (wire.RequestHeader, kmsg.Request, error) {
	if len(frame) < 4 {
		return wire.RequestHeader{}, nil, fmt.Errorf("%w: frame of %d bytes", wire.ErrMalformedHeader, len(frame))
	}
	key := int16(binary.BigEndian.Uint16(frame))
	req := kmsg.RequestForKey(key)
	if req == nil {
		return wire.RequestHeader{}, nil, fmt.Errorf("unknown api key %d", key)
	}
	req.SetVersion(int16(binary.BigEndian.Uint16(frame[2:])))
	h, _, body, err := wire.ParseRequestHeader(frame, req.IsFlexible())
	if err != nil {
		return h, nil, err
	}
	if err := req.ReadFrom(body); err != nil {
		return h, nil, fmt.Errorf("%s v%d: %w", kmsg.NameForKey(key), h.ApiVersion, err)
	}
	return h, req, nil
}

// flexibleResponseHeader: a flexible request's response header carries a
// tag section, except ApiVersions', which never does (KIP-511).
func flexibleResponseHeader(req kmsg.Request) bool {
	return req.IsFlexible() && req.Key() != int16(kmsg.ApiVersions)
}

// writeReplicaResponse writes one response frame: size, the response
// header (correlation id, and an empty tag section when flexible), then
// the body's chunks (record data with sendfile). It returns the bytes
// written.
func (t *TCPTransport) writeReplicaResponse(c net.Conn, correlation int32, flexible bool, resp *wire.Body) (int64, error) {
	size, err := wire.Size(resp.Chunks)
	if err != nil {
		return 0, fmt.Errorf("quorum: replica response: %w", err)
	}
	hdr := binary.BigEndian.AppendUint32(make([]byte, 4, 9), uint32(correlation))
	if flexible {
		hdr = append(hdr, 0)
	}
	size += int64(len(hdr) - 4)
	if size > int64(t.cfg.MaxFrameBytes) {
		return 0, fmt.Errorf("quorum: replica response of %d bytes over the frame limit", size)
	}
	binary.BigEndian.PutUint32(hdr, uint32(size))
	return wire.Write(c, append([]wire.Chunk{{Bytes: hdr}}, resp.Chunks...), t.cfg.DialTimeout)
}

// ReplicaConn is a follower's connection to a leader's CONTROLLER
// listener, opened with the same handshake as the quorum's (cluster id,
// peer set), carrying Kafka requests and their responses in order. Not
// safe for concurrent use: one fetcher owns it.
type ReplicaConn struct {
	c        net.Conn
	fr       wire.FrameReader
	t        *TCPTransport
	corr     int32
	clientID string
	// buf holds the last response, read into it again by the next
	// RoundTrip (keepReplicaBuffer).
	buf []byte
}

// keepReplicaBuffer says whether a replica connection keeps the buffer
// that held a response of n bytes for the next one: not one over
// maxKeptReplicaBuffer, nor one eight times the size of what it held (an
// idle follower's small answers let a busy spell's buffer go).
func keepReplicaBuffer(buf []byte, n int) bool {
	return cap(buf) <= maxKeptReplicaBuffer && n >= cap(buf)/8
}

// maxKeptReplicaBuffer: above the default replica.fetch.response.max.bytes
// (10 MiB) with room for the batches a fetch returns whole past it.
const maxKeptReplicaBuffer = 16 << 20

// DialReplica opens a replica connection to peer to.
func (t *TCPTransport) DialReplica(to election.NodeID) (*ReplicaConn, error) {
	addr, ok := t.cfg.Voters[to]
	if !ok || to == t.cfg.ID {
		return nil, fmt.Errorf("quorum: node %d is not a peer", to)
	}
	c, err := net.DialTimeout("tcp", addr, t.cfg.DialTimeout)
	if err != nil {
		return nil, err
	}
	deadPeerAfter(c, t.cfg.DialTimeout)
	if !t.track(c) {
		c.Close()
		return nil, net.ErrClosed
	}
	rc := &ReplicaConn{c: c, fr: wire.FrameReader{R: bufio.NewReader(c)}, t: t, clientID: fmt.Sprintf("wren-replica-%d", t.cfg.ID)}
	c.SetDeadline(time.Now().Add(t.cfg.DialTimeout))
	hs := Handshake{ClusterID: t.cfg.ClusterID(), PeerSetHash: t.hash, From: t.cfg.ID, To: to}
	frame := wire.AppendRequestHeader(make([]byte, 4, 64), APIKeyReplicaHandshake, 0, 0, rc.clientID, false)
	frame = AppendHandshake(frame, hs)
	err = wire.WriteFrame(c, frame)
	var resp []byte
	if err == nil {
		t.traffic.count(true, TrafficHandshake, len(frame))
		resp, err = rc.fr.ReadFrame(int32(t.cfg.MaxFrameBytes), nil, nil)
	}
	if err == nil {
		t.traffic.count(false, TrafficHandshake, 4+len(resp))
	}
	if err == nil && len(resp) < 4 {
		err = errors.New("handshake: short response")
	}
	var theirs Handshake
	if err == nil {
		theirs, err = DecodeHandshake(resp[4:])
	}
	if err == nil && theirs.ErrorCode != 0 {
		err = fmt.Errorf("refused: %s", theirs.ErrorMessage)
	}
	if err == nil {
		if reason := t.mismatch(hs, theirs); reason != "" {
			err = errors.New(reason)
		}
	}
	if err != nil {
		rc.Close()
		return nil, fmt.Errorf("quorum: replica connection to node %d at %s: %w", to, addr, err)
	}
	c.SetDeadline(time.Time{})
	return rc, nil
}

// RoundTrip sends one request, encoded by kmsg at its version, and
// returns the response body after the response header, for
// req.ResponseKind() to decode. The body stays valid until the next
// RoundTrip (the next response is read into the same memory). The answer
// must come before deadline.
func (rc *ReplicaConn) RoundTrip(req kmsg.Request, deadline time.Time) ([]byte, error) {
	rc.corr++
	frame := wire.AppendRequestHeader(make([]byte, 4, 256), req.Key(), req.GetVersion(), rc.corr, rc.clientID, req.IsFlexible())
	frame = req.AppendTo(frame)
	rc.c.SetDeadline(deadline)
	if err := wire.WriteFrame(rc.c, frame); err != nil {
		return nil, err
	}
	rc.t.traffic.count(true, TrafficReplica, len(frame))
	resp, err := rc.fr.ReadFrameInto(int32(rc.t.cfg.MaxFrameBytes), rc.buf)
	if err != nil {
		rc.buf = nil
		return nil, err
	}
	if keepReplicaBuffer(resp, len(resp)) {
		rc.buf = resp
	} else {
		rc.buf = nil
	}
	rc.t.traffic.count(false, TrafficReplica, 4+len(resp))
	if len(resp) < 4 || int32(binary.BigEndian.Uint32(resp)) != rc.corr {
		return nil, fmt.Errorf("quorum: replica response out of order")
	}
	body := resp[4:]
	if flexibleResponseHeader(req) {
		// Response header v1: its tagged fields, none of which matter here.
		if body, err = wire.SkipTaggedFields(body); err != nil {
			return nil, fmt.Errorf("quorum: replica response header: %w", err)
		}
	}
	return body, nil
}

// Close closes the connection.
func (rc *ReplicaConn) Close() error {
	rc.t.untrack(rc.c)
	return nil
}
