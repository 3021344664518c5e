package peer

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/wire"
)

// ProbeNodeID is the sender of a probe handshake: no node, but a tool
// asking whether an address is a CONTROLLER listener (the admin CLI, when
// a client pointed at one fails). The listener answers with its node id
// and closes; it logs the probe at DEBUG only, since it is no peer's
// mistake.
const ProbeNodeID election.NodeID = -1

// probeMessage is the answer's ErrorMessage.
const probeMessage = "this is a CONTROLLER listener, for the cluster's own nodes: clients use the client listener"

// Probe asks addr whether it is a CONTROLLER listener: it sends a probe
// handshake and reads the answer within ctx (and at most 2 s). ok is true,
// with the listener's node id, only when a handshake comes back; a client
// listener closes the connection on the unknown key, and anything else
// answers something else or nothing.
func Probe(ctx context.Context, addr string) (node election.NodeID, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, false
	}
	defer c.Close()
	if deadline, ok := ctx.Deadline(); ok {
		c.SetDeadline(deadline)
	}
	frame := wire.AppendRequestHeader(make([]byte, 4, 64), APIKeyHandshake, 0, 0, "wren-probe", false)
	frame = AppendHandshake(frame, Handshake{From: ProbeNodeID})
	if err := wire.WriteFrame(c, frame); err != nil {
		return 0, false
	}
	resp, err := readFrame(c, 1<<16)
	if err != nil || len(resp) < 4 {
		return 0, false
	}
	h, err := DecodeHandshake(resp[4:])
	if err != nil {
		return 0, false
	}
	return h.From, true
}

// errProbe ends a probe's connection on the listener's side.
var errProbe = errors.New("peer: answered a probe")
