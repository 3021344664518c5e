package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// ErrTruncated is the Decoder's error for a body that ends before a field
// it reads: a length or count larger than the bytes left, or a field cut
// short.
var ErrTruncated = errors.New("wire: body truncated")

// Encoder appends the fixed-width big-endian fields of wren's own
// internal bodies (the peer handshake, the metadata quorum's messages):
// integers, one-byte booleans, int16-length strings and int32-length
// byte strings, Kafka's primitive types without the nullable or compact
// forms. Those bodies are not Kafka messages, so kmsg has no schema for
// them; this keeps their one encoding in one place. The layout is part
// of those wire formats: never change it.
//
// A caller starts from the buffer to append to and takes B when done:
//
//	e := wire.Encoder{B: dst}
//	e.Int32(v)
//	return e.B
type Encoder struct {
	// B is the buffer appended to.
	B []byte
}

// Uint8 appends one byte.
func (e *Encoder) Uint8(v uint8) { e.B = append(e.B, v) }

// Int16 appends v big-endian.
func (e *Encoder) Int16(v int16) { e.B = binary.BigEndian.AppendUint16(e.B, uint16(v)) }

// Int32 appends v big-endian.
func (e *Encoder) Int32(v int32) { e.B = binary.BigEndian.AppendUint32(e.B, uint32(v)) }

// Int64 appends v big-endian.
func (e *Encoder) Int64(v int64) { e.B = binary.BigEndian.AppendUint64(e.B, uint64(v)) }

// Uint64 appends v big-endian.
func (e *Encoder) Uint64(v uint64) { e.B = binary.BigEndian.AppendUint64(e.B, v) }

// Bool appends one byte, 1 for true and 0 for false.
func (e *Encoder) Bool(v bool) {
	if v {
		e.Uint8(1)
	} else {
		e.Uint8(0)
	}
}

// String appends s behind its length as an int16. The caller keeps s
// under 32 KiB: a longer one would not read back.
func (e *Encoder) String(s string) { e.Int16(int16(len(s))); e.B = append(e.B, s...) }

// Bytes appends p behind its length as an int32.
func (e *Encoder) Bytes(p []byte) {
	e.Int32(int32(len(p)))
	e.B = append(e.B, p...)
}

// Decoder reads what Encoder writes from a body of outside bytes, every
// read checked against the bytes left. The first error sticks and every
// later read returns the zero value, so a caller reads all its fields
// and checks once, with Finish.
type Decoder struct {
	b   []byte
	err error
}

// NewDecoder returns a Decoder reading b. It does not copy b; the strings
// and byte strings it returns are copies.
func NewDecoder(b []byte) *Decoder { return &Decoder{b: b} }

func (d *Decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.err = ErrTruncated
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

// Uint8 reads one byte.
func (d *Decoder) Uint8() uint8 {
	if p := d.take(1); p != nil {
		return p[0]
	}
	return 0
}

// Int16 reads a big-endian int16.
func (d *Decoder) Int16() int16 {
	if p := d.take(2); p != nil {
		return int16(binary.BigEndian.Uint16(p))
	}
	return 0
}

// Int32 reads a big-endian int32.
func (d *Decoder) Int32() int32 {
	if p := d.take(4); p != nil {
		return int32(binary.BigEndian.Uint32(p))
	}
	return 0
}

// Int64 reads a big-endian int64.
func (d *Decoder) Int64() int64 { return int64(d.Uint64()) }

// Uint64 reads a big-endian uint64.
func (d *Decoder) Uint64() uint64 {
	if p := d.take(8); p != nil {
		return binary.BigEndian.Uint64(p)
	}
	return 0
}

// Bool reads one byte and fails on anything but 0 or 1: a boolean has
// one encoding, so a body decodes to what encodes back to it.
func (d *Decoder) Bool() bool {
	switch d.Uint8() {
	case 0:
		return false
	case 1:
		return true
	}
	d.Fail(errors.New("wire: boolean neither 0 nor 1"))
	return false
}

// String reads an int16-length string. A negative length fails.
func (d *Decoder) String() string { return string(d.take(int(d.Int16()))) }

// Bytes reads an int32-length byte string and returns a copy, empty but
// not nil for a zero length, nil after an error. A negative length fails.
func (d *Decoder) Bytes() []byte {
	p := d.take(int(d.Int32()))
	if p == nil {
		return nil
	}
	return slices.Clone(p)
}

// Remaining is the number of bytes not yet read, for a caller to check a
// count against them before it allocates for the count.
func (d *Decoder) Remaining() int { return len(d.b) }

// Err is the first error, nil while every read has succeeded.
func (d *Decoder) Err() error { return d.err }

// Fail records err as the decoder's error unless one is already there:
// a caller's own check of a field (an unknown type) sticks like the
// decoder's.
func (d *Decoder) Fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// Finish returns the first error, or an error for bytes left unread: a
// body holds exactly one value.
func (d *Decoder) Finish() error {
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("wire: %d trailing bytes", len(d.b))
	}
	return d.err
}
