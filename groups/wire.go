package groups

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The primitives of Kafka's message encoding that the KIP-848 records
// need and kmsg does not offer for them: big-endian integers, int16-length
// strings (record keys, never flexible) and the flexible encoding of their
// values (KIP-482): compact strings and arrays whose length is an unsigned
// varint holding length+1 (0 is null), and a tagged-field section closing
// every struct.
//
// The reader reads outside bytes: every length is checked against what
// remains before anything is allocated, and the first error sticks, so a
// decoder reads every field and checks once at the end.

var (
	errWireTruncated = errors.New("groups: truncated")
	errWireNull      = errors.New("groups: null in a non-nullable field")
	errWireVarint    = errors.New("groups: malformed unsigned varint")
	errWireTags      = errors.New("groups: malformed tagged fields")
	errWireTrailing  = errors.New("groups: trailing bytes")
)

// maxUvarintLen is the longest unsigned varint Kafka reads: 5 bytes hold
// an unsigned 32-bit value.
const maxUvarintLen = 5

func appendInt8(b []byte, v int8) []byte   { return append(b, byte(v)) }
func appendInt16(b []byte, v int16) []byte { return binary.BigEndian.AppendUint16(b, uint16(v)) }
func appendInt32(b []byte, v int32) []byte { return binary.BigEndian.AppendUint32(b, uint32(v)) }
func appendInt64(b []byte, v int64) []byte { return binary.BigEndian.AppendUint64(b, uint64(v)) }

func appendUvarint(b []byte, v uint32) []byte { return binary.AppendUvarint(b, uint64(v)) }

// appendKeyString writes a non-flexible string: int16 length, bytes. Keys
// hold group and member ids, which arrive in int16-length request fields,
// so a longer one is a bug upstream.
func appendKeyString(b []byte, s string) []byte {
	if len(s) > math.MaxInt16 {
		panic(fmt.Sprintf("groups: key string of %d bytes", len(s)))
	}
	return append(appendInt16(b, int16(len(s))), s...)
}

// appendCompactString writes a non-nullable compact string.
func appendCompactString(b []byte, s string) []byte {
	b = appendCompactLen(b, len(s))
	return append(b, s...)
}

// appendCompactNullableString writes "" as null, as the records' nullable
// fields mean it.
func appendCompactNullableString(b []byte, s string) []byte {
	if s == "" {
		return append(b, 0)
	}
	return appendCompactString(b, s)
}

// appendCompactLen writes a non-null compact length.
func appendCompactLen(b []byte, n int) []byte {
	if n < 0 || uint64(n) >= math.MaxUint32 {
		panic(fmt.Sprintf("groups: compact length %d", n))
	}
	return appendUvarint(b, uint32(n)+1)
}

func appendCompactInt32s(b []byte, vs []int32) []byte {
	b = appendCompactLen(b, len(vs))
	for _, v := range vs {
		b = appendInt32(b, v)
	}
	return b
}

// appendNoTags closes a struct with an empty tagged-field section.
func appendNoTags(b []byte) []byte { return append(b, 0) }

// flexReader reads Kafka-encoded fields from b; the first error sticks and
// every later read returns zero values.
type flexReader struct {
	b   []byte
	err error
}

func (r *flexReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// take returns the next n bytes, or nil after an error.
func (r *flexReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.fail(fmt.Errorf("%w: need %d bytes, have %d", errWireTruncated, n, len(r.b)))
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *flexReader) int8() int8 {
	if b := r.take(1); b != nil {
		return int8(b[0])
	}
	return 0
}

func (r *flexReader) int16() int16 {
	if b := r.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *flexReader) int32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *flexReader) int64() int64 {
	if b := r.take(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

func (r *flexReader) uuid() (id [16]byte) {
	if b := r.take(16); b != nil {
		copy(id[:], b)
	}
	return id
}

// uvarint reads an unsigned varint of at most 5 bytes that fits 32 bits,
// as Kafka's ByteUtils.readUnsignedVarint does.
func (r *flexReader) uvarint() uint32 {
	if r.err != nil {
		return 0
	}
	var v uint64
	for i := range maxUvarintLen {
		if i >= len(r.b) {
			r.fail(fmt.Errorf("%w: varint", errWireTruncated))
			return 0
		}
		c := r.b[i]
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if v > math.MaxUint32 {
				break
			}
			r.b = r.b[i+1:]
			return uint32(v)
		}
	}
	r.fail(errWireVarint)
	return 0
}

// keyString reads a non-nullable int16-length string.
func (r *flexReader) keyString() string {
	n := r.int16()
	if n < 0 {
		r.fail(errWireNull)
		return ""
	}
	return string(r.take(int(n)))
}

// compactLen reads a compact length: -1 for null, else a count bounded by
// the bytes that remain, each element taking at least minSize of them, so
// a caller may allocate that many.
func (r *flexReader) compactLen(minSize int) int {
	v := r.uvarint()
	if r.err != nil {
		return 0
	}
	if v == 0 {
		return -1
	}
	// Compared as uint64: on a 32-bit target int(v-1) may be negative.
	n := uint64(v - 1)
	if minSize > 0 && n > uint64(len(r.b)/minSize) || n > math.MaxInt32 {
		r.fail(fmt.Errorf("%w: %d elements of at least %d bytes, %d bytes left", errWireTruncated, n, minSize, len(r.b)))
		return 0
	}
	return int(n)
}

func (r *flexReader) compactString() string {
	n := r.compactLen(1)
	if n < 0 {
		r.fail(errWireNull)
		return ""
	}
	return string(r.take(n))
}

// compactNullableString reads null as "".
func (r *flexReader) compactNullableString() string {
	n := r.compactLen(1)
	if n < 0 {
		return ""
	}
	return string(r.take(n))
}

// compactArrayLen reads a non-nullable array's element count.
func (r *flexReader) compactArrayLen(minSize int) int {
	n := r.compactLen(minSize)
	if n < 0 {
		r.fail(errWireNull)
		return 0
	}
	return n
}

func (r *flexReader) compactInt32s() []int32 {
	n := r.compactArrayLen(4)
	if r.err != nil || n == 0 {
		return nil
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = r.int32()
	}
	return out
}

func (r *flexReader) compactStrings() []string {
	n := r.compactArrayLen(1)
	if r.err != nil || n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.compactString()
	}
	return out
}

// tags reads a struct's tagged-field section, handing each field's tag
// and bytes to known (nil skips them all); known ignores tags it does not
// know, so fields added by a newer Kafka are skipped. Tags
// must ascend, as Kafka writes them: a repeated tag would leave a field's
// value ambiguous.
func (r *flexReader) tags(known func(tag uint32, data []byte) error) {
	n := r.tagCount()
	last := int64(-1)
	for range n {
		tag := r.uvarint()
		size := r.uvarint()
		if r.err != nil {
			return
		}
		if int64(tag) <= last {
			r.fail(fmt.Errorf("%w: tag %d after %d", errWireTags, tag, last))
			return
		}
		last = int64(tag)
		data := r.take(int(size))
		if r.err != nil || known == nil {
			continue
		}
		if err := known(tag, data); err != nil {
			r.fail(fmt.Errorf("%w: tag %d: %w", errWireTags, tag, err))
		}
	}
}

// tagCount reads the number of tagged fields (a plain unsigned varint,
// not length+1), bounded by the remaining bytes: each field
// takes at least two (tag and size).
func (r *flexReader) tagCount() int {
	v := r.uvarint()
	if r.err != nil {
		return 0
	}
	if uint64(v) > uint64(len(r.b)/2) {
		r.fail(fmt.Errorf("%w: %d tagged fields in %d bytes", errWireTags, v, len(r.b)))
		return 0
	}
	return int(v)
}

// done returns the first error, or errWireTrailing if bytes remain.
func (r *flexReader) done() error {
	if r.err != nil {
		return r.err
	}
	if len(r.b) > 0 {
		return fmt.Errorf("%w: %d", errWireTrailing, len(r.b))
	}
	return nil
}
