package peer

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/wire"
)

// serveReplica answers a follower's requests on a replica connection, one
// at a time, in order, and tells the client (ReplicaClosed) once it
// serves no more. batch is the layer under c's TLS (nil in plaintext).
func (l *Layer) serveReplica(c net.Conn, batch *wire.BatchConn, fr *wire.FrameReader, from election.NodeID) error {
	conn := l.replicaConns.Add(1)
	if l.onClosed != nil {
		defer l.onClosed(from, conn)
	}
	for {
		frame, err := fr.ReadFrame(int32(l.cfg.MaxFrameBytes), nil, nil)
		if err != nil {
			return err
		}
		l.traffic.replica.count(false, 4+len(frame))
		h, req, err := decodeRequest(frame)
		if err != nil {
			return fmt.Errorf("peer: replica request from node %d: %w", from, err)
		}
		resp := l.onReplica(from, conn, req)
		if resp == nil {
			return fmt.Errorf("peer: node %d sent a replica request it may not (%s v%d)", from, kmsg.NameForKey(h.ApiKey), h.ApiVersion)
		}
		n, err := l.writeReplicaResponse(c, batch, h.CorrelationID, flexibleResponseHeader(req), resp)
		resp.Done()
		if err != nil {
			return err
		}
		l.traffic.replica.count(true, int(n))
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
// written. Over TLS (batch set) sendfile cannot encrypt: file chunks go
// through a buffer, and the records crypto/tls makes of the response, one
// write of at most 16 KiB each, are gathered by batch into writes of
// eight, as the client listener's Fetch responses are.
func (l *Layer) writeReplicaResponse(c net.Conn, batch *wire.BatchConn, correlation int32, flexible bool, resp *wire.Body) (int64, error) {
	size, err := wire.Size(resp.Chunks)
	if err != nil {
		return 0, fmt.Errorf("peer: replica response: %w", err)
	}
	hdr := binary.BigEndian.AppendUint32(make([]byte, 4, 9), uint32(correlation))
	if flexible {
		hdr = append(hdr, 0)
	}
	size += int64(len(hdr) - 4)
	if size > int64(l.cfg.MaxFrameBytes) {
		return 0, fmt.Errorf("peer: replica response of %d bytes over the frame limit", size)
	}
	binary.BigEndian.PutUint32(hdr, uint32(size))
	chunks := append([]wire.Chunk{{Bytes: hdr}}, resp.Chunks...)
	if l.cfg.TLS == nil {
		return wire.Write(c, chunks, l.cfg.DialTimeout)
	}
	if batch == nil {
		return wire.WriteCopy(c, chunks, l.cfg.DialTimeout)
	}
	batch.Batch()
	n, err := wire.WriteCopy(c, chunks, l.cfg.DialTimeout)
	if ferr := batch.Flush(); err == nil {
		err = ferr
	}
	return n, err
}

// ReplicaConn is a follower's connection to a leader's CONTROLLER
// listener, opened with the same handshake as the message channel's (cluster id,
// peer set), carrying Kafka requests and their responses in order. Not
// safe for concurrent use: one fetcher owns it.
type ReplicaConn struct {
	c        net.Conn
	raw      net.Conn // the TCP connection under c (c itself in plaintext)
	fr       wire.FrameReader
	l        *Layer
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
func (l *Layer) DialReplica(to election.NodeID) (*ReplicaConn, error) {
	addr, ok := l.cfg.Voters[to]
	if !ok || to == l.cfg.ID {
		return nil, fmt.Errorf("peer: node %d is not a peer", to)
	}
	raw, c, err := l.dial(to, addr)
	if err != nil {
		return nil, fmt.Errorf("peer: replica connection to node %d at %s: %w", to, addr, err)
	}
	rc := &ReplicaConn{c: c, raw: raw, fr: wire.FrameReader{R: bufio.NewReader(c)}, l: l, clientID: fmt.Sprintf("wren-replica-%d", l.cfg.ID)}
	c.SetDeadline(time.Now().Add(l.cfg.DialTimeout))
	hs := Handshake{ClusterID: l.cfg.ClusterID(), PeerSetHash: l.hash, From: l.cfg.ID, To: to}
	frame := wire.AppendRequestHeader(make([]byte, 4, 64), APIKeyReplicaHandshake, 0, 0, rc.clientID, false)
	frame = AppendHandshake(frame, hs)
	err = wire.WriteFrame(c, frame)
	var resp []byte
	if err == nil {
		l.traffic.handshake.count(true, len(frame))
		resp, err = rc.fr.ReadFrame(int32(l.cfg.MaxFrameBytes), nil, nil)
	}
	if err == nil {
		l.traffic.handshake.count(false, 4+len(resp))
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
		if reason := l.mismatch(hs, theirs); reason != "" {
			err = errors.New(reason)
		}
	}
	if err != nil {
		rc.Close()
		return nil, fmt.Errorf("peer: replica connection to node %d at %s: %w", to, addr, err)
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
	rc.l.traffic.replica.count(true, len(frame))
	resp, err := rc.fr.ReadFrameInto(int32(rc.l.cfg.MaxFrameBytes), rc.buf)
	if err != nil {
		rc.buf = nil
		return nil, err
	}
	if keepReplicaBuffer(resp, len(resp)) {
		rc.buf = resp
	} else {
		rc.buf = nil
	}
	rc.l.traffic.replica.count(false, 4+len(resp))
	if len(resp) < 4 || int32(binary.BigEndian.Uint32(resp)) != rc.corr {
		return nil, fmt.Errorf("peer: replica response out of order")
	}
	body := resp[4:]
	if flexibleResponseHeader(req) {
		// Response header v1: its tagged fields, none of which matter here.
		if body, err = wire.SkipTaggedFields(body); err != nil {
			return nil, fmt.Errorf("peer: replica response header: %w", err)
		}
	}
	return body, nil
}

// Close closes the connection.
func (rc *ReplicaConn) Close() error {
	rc.l.untrack(rc.raw)
	return nil
}
