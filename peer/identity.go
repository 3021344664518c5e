package peer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"time"

	"github.com/wren-broker/wren/wire"
)

// A node id belongs to one process. A second process started with a
// running node's id (a copied config, a wrong --node-id) would otherwise
// be let in by the other voters' handshakes as that node: what it sends
// counts as the real node's, what they send goes to the real node at its
// address, and the intruder waits for ever, hearing nothing.
//
// So each layer dials its own entry of controller.quorum.voters and
// handshakes as itself, from its id to its id: at start, before it talks
// to any peer, and then every IdentityCheckInterval. The process that
// answers there knows whether the dial is its own: the handshake's client
// id carries a random nonce drawn at the layer's start, which only
// the process that drew it knows (the connection's source address would not do: a proxy
// or a port forward between a node and its voter address changes it, and
// a node would take itself for an intruder). If it is, the id is this
// process's; if another process answers, it refuses the handshake with
// DUPLICATE_BROKER_REGISTRATION and logs an ERROR naming where the
// intruder connects from, and the intruder stops: at start Layer.Start
// fails with ErrDuplicateNodeID, later OnDuplicate is told. A check that
// reaches nobody (the address is not reachable from this host, nobody
// listens there) proves nothing and changes nothing.

// ErrDuplicateNodeID: another process answers at this node's address in
// controller.quorum.voters, and refuses this one's id: it runs as this
// node (or, for another refusal, the address is not this node's).
var ErrDuplicateNodeID = errors.New("peer: node id already in use by another process")

// checkIdentity dials this node's own voter address as itself: nil when
// this process answered, or nobody did; ErrDuplicateNodeID, with where,
// when another process answered.
func (l *Layer) checkIdentity() error {
	addr := l.cfg.Voters[l.cfg.ID]
	// Tracked (by dial), so that Close does not wait out a check that
	// hangs.
	raw, c, err := l.dial(l.cfg.ID, addr)
	if err != nil {
		l.log.Debug("controller listener: identity check reached nobody", "addr", addr, "err", err)
		return nil
	}
	defer l.untrack(raw)
	c.SetDeadline(time.Now().Add(l.cfg.DialTimeout))
	hs := Handshake{ClusterID: l.cfg.ClusterID(), PeerSetHash: l.hash, From: l.cfg.ID, To: l.cfg.ID}
	frame := wire.AppendRequestHeader(make([]byte, 4, 64), APIKeyHandshake, 0, 0, l.identityClientID, false)
	frame = AppendHandshake(frame, hs)
	var theirs Handshake
	err = wire.WriteFrame(c, frame)
	var resp []byte
	if err == nil {
		resp, err = readFrame(c, l.cfg.MaxFrameBytes)
	}
	if err == nil && len(resp) < 4 {
		err = errors.New("short response")
	}
	if err == nil {
		theirs, err = DecodeHandshake(resp[4:])
	}
	if err != nil {
		l.log.Debug("controller listener: identity check got no answer", "addr", addr, "err", err)
		return nil
	}
	switch theirs.ErrorCode {
	case 0:
		return nil
	case errDuplicateNodeID:
		return fmt.Errorf("%w: node id %d is held by the process answering at %s (node %d's entry in controller.quorum.voters), which refused this one: %s; "+
			"stop one of the two, or give this process the id of a voter that is not running (--node-id, WREN_NODE_ID or node.id)",
			ErrDuplicateNodeID, l.cfg.ID, addr, l.cfg.ID, theirs.ErrorMessage)
	}
	// Any other refusal of this node's own id at its own address comes
	// from another process too (this one accepts its own dials): a node of
	// an older version holding the id, or the entry naming another node's
	// address.
	return fmt.Errorf("%w: node %d's entry in controller.quorum.voters, %s, is answered by another process, which refused this one: %s; "+
		"check that entry, and that no other process runs as node %d",
		ErrDuplicateNodeID, l.cfg.ID, addr, theirs.ErrorMessage, l.cfg.ID)
}

// identityLoop repeats the identity check while the layer runs, and
// reports the first duplicate found.
func (l *Layer) identityLoop() {
	defer l.wg.Done()
	tick := time.NewTicker(l.cfg.IdentityCheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		if err := l.checkIdentity(); err != nil && !l.stopped() {
			l.log.Error("controller listener: another process holds this node's id; this process must stop", "node", l.cfg.ID, "err", err)
			if l.cfg.OnDuplicate != nil {
				l.cfg.OnDuplicate(err)
			}
			return
		}
	}
}

// newIdentityClientID is the client id of a layer's identity checks:
// the node id and a random nonce drawn once per layer, so that a
// check that arrives late (after its dialer gave up on a loaded host) is
// still known for this process's own.
func newIdentityClientID(id int32) string {
	return fmt.Sprintf("wren-identity-%d-%016x", id, rand.Uint64())
}

// isSelfDial reports whether a handshake with this client id comes from
// this layer's identity checks.
func (l *Layer) isSelfDial(clientID string) bool {
	return clientID == l.identityClientID
}

// answerSelf answers a handshake that claims this node's own id: accepted
// when it is this process's identity check, refused as a duplicate,
// loudly, when it is not.
func (l *Layer) answerSelf(c net.Conn, h wire.RequestHeader, ours Handshake) error {
	remote := c.RemoteAddr().String()
	own := l.isSelfDial(h.ClientID)
	if !own {
		ours.ErrorCode = errDuplicateNodeID
		ours.ErrorMessage = fmt.Sprintf("node %d is already running here (listening at %s); a second process claiming node id %d connected from %s",
			l.cfg.ID, c.LocalAddr(), l.cfg.ID, remote)
	}
	resp := binary.BigEndian.AppendUint32(make([]byte, 4, 64), uint32(h.CorrelationID))
	resp = AppendHandshake(resp, ours)
	if err := wire.WriteFrame(c, resp); err != nil {
		return err
	}
	if !own {
		l.traffic.handshake.count(true, len(resp))
		l.log.Error("controller listener: refusing a second process that claims this node's id", "node", l.cfg.ID, "remote", remote,
			"reason", ours.ErrorMessage)
		return errors.New(ours.ErrorMessage)
	}
	return nil
}
