package quorum

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/wren-broker/wren/cluster/metalog"
	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/peer"
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

var errShort = errors.New("quorum: message truncated")

type encoder struct{ b []byte }

func (e *encoder) u8(v uint8)   { e.b = append(e.b, v) }
func (e *encoder) i16(v int16)  { e.b = binary.BigEndian.AppendUint16(e.b, uint16(v)) }
func (e *encoder) i32(v int32)  { e.b = binary.BigEndian.AppendUint32(e.b, uint32(v)) }
func (e *encoder) i64(v int64)  { e.b = binary.BigEndian.AppendUint64(e.b, uint64(v)) }
func (e *encoder) u64(v uint64) { e.b = binary.BigEndian.AppendUint64(e.b, v) }
func (e *encoder) bool(v bool) {
	if v {
		e.u8(1)
	} else {
		e.u8(0)
	}
}
func (e *encoder) str(s string) { e.i16(int16(len(s))); e.b = append(e.b, s...) }
func (e *encoder) bytes(p []byte) {
	e.i32(int32(len(p)))
	e.b = append(e.b, p...)
}

// decoder reads a body; the first error sticks, so a caller checks once.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.err = errShort
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) u8() uint8 {
	if p := d.take(1); p != nil {
		return p[0]
	}
	return 0
}
func (d *decoder) i16() int16 {
	if p := d.take(2); p != nil {
		return int16(binary.BigEndian.Uint16(p))
	}
	return 0
}
func (d *decoder) i32() int32 {
	if p := d.take(4); p != nil {
		return int32(binary.BigEndian.Uint32(p))
	}
	return 0
}
func (d *decoder) i64() int64 { return int64(d.u64()) }
func (d *decoder) u64() uint64 {
	if p := d.take(8); p != nil {
		return binary.BigEndian.Uint64(p)
	}
	return 0
}
func (d *decoder) bool() bool {
	switch d.u8() {
	case 0:
		return false
	case 1:
		return true
	}
	if d.err == nil {
		d.err = errors.New("quorum: boolean neither 0 nor 1")
	}
	return false
}
func (d *decoder) str() string { return string(d.take(int(d.i16()))) }
func (d *decoder) bytes() []byte {
	n := d.i32()
	p := d.take(int(n))
	if p == nil {
		return nil
	}
	return slices.Clone(p)
}

// finish fails on trailing bytes: a body is exactly one message.
func (d *decoder) finish() error {
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("quorum: %d trailing bytes", len(d.b))
	}
	return d.err
}

// AppendMessage appends the body of APIKeyMessage. Layout, part of the
// wire format: the metalog message's fields in declaration order, the
// election message's likewise, booleans as one byte, the optional
// snapshot behind a presence byte, entries behind an int32 count.
func AppendMessage(dst []byte, m metalog.Message) []byte {
	e := encoder{b: dst}
	e.u8(uint8(m.Type))
	e.i32(int32(m.From))
	e.i32(int32(m.To))
	e.i32(m.Epoch)
	em := m.Election
	e.u8(uint8(em.Type))
	e.i32(int32(em.From))
	e.i32(int32(em.To))
	e.i32(em.Epoch)
	e.i32(em.Log.Epoch)
	e.i64(em.Log.Offset)
	e.bool(em.Reject)
	e.bool(em.Quiet)
	e.bool(em.EpochTaken)
	e.i64(em.LeaseTick)
	e.u64(m.Seq)
	e.i64(m.LastIndex)
	e.i32(m.LastEpoch)
	e.i64(m.PrevIndex)
	e.i32(m.PrevEpoch)
	e.i32(int32(len(m.Entries)))
	for _, ent := range m.Entries {
		e.i64(ent.Index)
		e.i32(ent.Epoch)
		e.u8(uint8(ent.Type))
		e.bytes(ent.Data)
	}
	e.bool(m.Diverging)
	e.i64(m.DivergingIndex)
	e.i32(m.DivergingEpoch)
	e.bool(m.Snapshot != nil)
	if s := m.Snapshot; s != nil {
		e.i64(s.Index)
		e.i32(s.Epoch)
		e.bytes(s.Data)
	}
	e.i64(m.Commit)
	return e.b
}

// entryMinBytes is the least an encoded entry takes: a count is checked
// against the bytes left before anything is allocated for it.
const entryMinBytes = 8 + 4 + 1 + 4

// DecodeMessage reads the body of APIKeyMessage. It checks the shape
// (lengths, counts, booleans, known types), not the protocol: the node
// refuses messages that make no sense to it.
func DecodeMessage(b []byte) (metalog.Message, error) {
	d := decoder{b: b}
	var m metalog.Message
	m.Type = metalog.MsgType(d.u8())
	m.From = election.NodeID(d.i32())
	m.To = election.NodeID(d.i32())
	m.Epoch = d.i32()
	em := &m.Election
	em.Type = election.MsgType(d.u8())
	em.From = election.NodeID(d.i32())
	em.To = election.NodeID(d.i32())
	em.Epoch = d.i32()
	em.Log.Epoch = d.i32()
	em.Log.Offset = d.i64()
	em.Reject = d.bool()
	em.Quiet = d.bool()
	em.EpochTaken = d.bool()
	em.LeaseTick = d.i64()
	m.Seq = d.u64()
	m.LastIndex = d.i64()
	m.LastEpoch = d.i32()
	m.PrevIndex = d.i64()
	m.PrevEpoch = d.i32()
	n := d.i32()
	if d.err == nil && (n < 0 || int(n) > len(d.b)/entryMinBytes) {
		return metalog.Message{}, fmt.Errorf("quorum: message: %d entries in %d bytes", n, len(d.b))
	}
	if n > 0 {
		m.Entries = make([]metalog.Entry, n)
		for i := range m.Entries {
			ent := &m.Entries[i]
			ent.Index = d.i64()
			ent.Epoch = d.i32()
			ent.Type = metalog.EntryType(d.u8())
			ent.Data = d.bytes()
			if d.err == nil && ent.Type != metalog.EntryRecords && ent.Type != metalog.EntryLeaderChange {
				d.err = fmt.Errorf("quorum: entry type %d", ent.Type)
			}
		}
	}
	m.Diverging = d.bool()
	m.DivergingIndex = d.i64()
	m.DivergingEpoch = d.i32()
	if d.bool() {
		m.Snapshot = &metalog.Snapshot{Index: d.i64(), Epoch: d.i32(), Data: d.bytes()}
	}
	m.Commit = d.i64()
	if err := d.finish(); err != nil {
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
