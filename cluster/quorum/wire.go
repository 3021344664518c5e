package quorum

import (
	"fmt"

	"github.com/wren-broker/wren/cluster/metalog"
	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/peer"
	"github.com/wren-broker/wren/wire"
)

// The api keys of the metadata quorum's frames on the peer layer's
// message channel (package peer, whose own keys are 32000 and 32003).
// They sit far above Kafka's own keys, so no Kafka client or tool ever
// sends one, and a client listener refuses them as it refuses any unknown
// key (it closes the connection). Part of the wire format; never
// renumber.
const (
	// APIKeyMessage carries one metalog message. It is one-way, like a
	// Produce with acks=0: no response.
	APIKeyMessage int16 = 32001
	// APIKeyApp carries a body the transport does not read, for the
	// cluster package: broker heartbeats to the controller and requests
	// forwarded to it, and their answers. One-way, like APIKeyMessage.
	APIKeyApp int16 = 32002
)

// DefaultMaxFrameBytes bounds one frame on a peer connection, either way
// (peer.DefaultMaxFrameBytes).
const DefaultMaxFrameBytes = peer.DefaultMaxFrameBytes

// AppendMessage appends the body of APIKeyMessage. Layout, part of the
// wire format: the metalog message's fields in declaration order, the
// election message's likewise, booleans as one byte, the optional
// snapshot behind a presence byte, entries behind an int32 count.
func AppendMessage(dst []byte, m metalog.Message) []byte {
	e := wire.Encoder{B: dst}
	e.Uint8(uint8(m.Type))
	e.Int32(int32(m.From))
	e.Int32(int32(m.To))
	e.Int32(m.Epoch)
	em := m.Election
	e.Uint8(uint8(em.Type))
	e.Int32(int32(em.From))
	e.Int32(int32(em.To))
	e.Int32(em.Epoch)
	e.Int32(em.Log.Epoch)
	e.Int64(em.Log.Offset)
	e.Bool(em.Reject)
	e.Bool(em.Quiet)
	e.Bool(em.EpochTaken)
	e.Int64(em.LeaseTick)
	e.Uint64(m.Seq)
	e.Int64(m.LastIndex)
	e.Int32(m.LastEpoch)
	e.Int64(m.PrevIndex)
	e.Int32(m.PrevEpoch)
	e.Int32(int32(len(m.Entries)))
	for _, ent := range m.Entries {
		e.Int64(ent.Index)
		e.Int32(ent.Epoch)
		e.Uint8(uint8(ent.Type))
		e.Bytes(ent.Data)
	}
	e.Bool(m.Diverging)
	e.Int64(m.DivergingIndex)
	e.Int32(m.DivergingEpoch)
	e.Bool(m.Snapshot != nil)
	if s := m.Snapshot; s != nil {
		e.Int64(s.Index)
		e.Int32(s.Epoch)
		e.Bytes(s.Data)
	}
	e.Int64(m.Commit)
	return e.B
}

// entryMinBytes is the least an encoded entry takes: a count is checked
// against the bytes left before anything is allocated for it.
const entryMinBytes = 8 + 4 + 1 + 4

// DecodeMessage reads the body of APIKeyMessage. It checks the shape
// (lengths, counts, booleans, known types), not the protocol: the node
// refuses messages that make no sense to it.
func DecodeMessage(b []byte) (metalog.Message, error) {
	d := wire.NewDecoder(b)
	var m metalog.Message
	m.Type = metalog.MsgType(d.Uint8())
	m.From = election.NodeID(d.Int32())
	m.To = election.NodeID(d.Int32())
	m.Epoch = d.Int32()
	em := &m.Election
	em.Type = election.MsgType(d.Uint8())
	em.From = election.NodeID(d.Int32())
	em.To = election.NodeID(d.Int32())
	em.Epoch = d.Int32()
	em.Log.Epoch = d.Int32()
	em.Log.Offset = d.Int64()
	em.Reject = d.Bool()
	em.Quiet = d.Bool()
	em.EpochTaken = d.Bool()
	em.LeaseTick = d.Int64()
	m.Seq = d.Uint64()
	m.LastIndex = d.Int64()
	m.LastEpoch = d.Int32()
	m.PrevIndex = d.Int64()
	m.PrevEpoch = d.Int32()
	n := d.Int32()
	if d.Err() == nil && (n < 0 || int(n) > d.Remaining()/entryMinBytes) {
		return metalog.Message{}, fmt.Errorf("quorum: message: %d entries in %d bytes", n, d.Remaining())
	}
	if n > 0 {
		m.Entries = make([]metalog.Entry, n)
		for i := range m.Entries {
			ent := &m.Entries[i]
			ent.Index = d.Int64()
			ent.Epoch = d.Int32()
			ent.Type = metalog.EntryType(d.Uint8())
			ent.Data = d.Bytes()
			if d.Err() == nil && ent.Type != metalog.EntryRecords && ent.Type != metalog.EntryLeaderChange {
				d.Fail(fmt.Errorf("quorum: entry type %d", ent.Type))
			}
		}
	}
	m.Diverging = d.Bool()
	m.DivergingIndex = d.Int64()
	m.DivergingEpoch = d.Int32()
	if d.Bool() {
		m.Snapshot = &metalog.Snapshot{Index: d.Int64(), Epoch: d.Int32(), Data: d.Bytes()}
	}
	m.Commit = d.Int64()
	if err := d.Finish(); err != nil {
		return metalog.Message{}, fmt.Errorf("quorum: message: %w", err)
	}
	switch {
	case m.Type < metalog.MsgElection || m.Type > metalog.MsgFetchResp:
		return metalog.Message{}, fmt.Errorf("quorum: message type %d", m.Type)
	case m.Type == metalog.MsgElection && (em.Type < election.MsgProbe || em.Type > election.MsgHeartbeatResp):
		return metalog.Message{}, fmt.Errorf("quorum: election message type %d", em.Type)
	}
	return m, nil
}
