package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrMalformedHeader: the request header cannot be parsed.
var ErrMalformedHeader = errors.New("wire: malformed request header")

// RequestHeader is the request header, versions 1 and 2 (Kafka's
// RequestHeader.json). Version 0, without a client id, exists only for
// ControlledShutdown v0, which nothing here serves.
type RequestHeader struct {
	ApiKey        int16
	ApiVersion    int16
	CorrelationID int32
	// ClientID is "" when the client sent null, as in Kafka.
	ClientID string
}

// ParseRequestHeader splits a frame into its header and body. flexible
// selects header v2 (tagged fields after the client id), which Kafka uses
// exactly when the request version is flexible. The header's tagged fields
// are skipped after checking them: no tag is defined in header v2 that a
// broker must read. The client id is returned as a slice of frame, and
// left out of hdr, so the caller can reuse the previous string when it
// repeats. Every error wraps ErrMalformedHeader.
func ParseRequestHeader(frame []byte, flexible bool) (hdr RequestHeader, clientID []byte, body []byte, err error) {
	// api_key:int16 api_version:int16 correlation_id:int32 client_id:nullable string(int16 length)
	if len(frame) < 10 {
		return hdr, nil, nil, fmt.Errorf("%w: %d bytes", ErrMalformedHeader, len(frame))
	}
	hdr.ApiKey = int16(binary.BigEndian.Uint16(frame[0:]))
	hdr.ApiVersion = int16(binary.BigEndian.Uint16(frame[2:]))
	hdr.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	l := int16(binary.BigEndian.Uint16(frame[8:]))
	rest := frame[10:]
	switch {
	case l == -1: // null
	case l < -1 || int(l) > len(rest):
		return hdr, nil, nil, fmt.Errorf("%w: client id length %d with %d bytes left", ErrMalformedHeader, l, len(rest))
	default:
		clientID, rest = rest[:l], rest[l:]
	}
	if flexible {
		rest, err = SkipTaggedFields(rest)
		if err != nil {
			return hdr, nil, nil, fmt.Errorf("%w: %w", ErrMalformedHeader, err)
		}
	}
	return hdr, clientID, rest, nil
}

// AppendRequestHeader appends a request header to dst: v1 (api key, api
// version, correlation id, client id), and v2's empty tagged-field
// section when flexible.
func AppendRequestHeader(dst []byte, key, version int16, correlationID int32, clientID string, flexible bool) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(key))
	dst = binary.BigEndian.AppendUint16(dst, uint16(version))
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(clientID)))
	dst = append(dst, clientID...)
	if flexible {
		dst = append(dst, 0)
	}
	return dst
}

// SkipTaggedFields skips a tagged-field section (KIP-482):
//
//	count:uvarint { tag:uvarint size:uvarint data:[size]byte }
//
// Tags must be strictly increasing, which also refuses duplicates, as the
// KIP requires; each size must fit in what remains. Nothing is allocated.
func SkipTaggedFields(b []byte) ([]byte, error) {
	count, n, err := ReadUvarint(b)
	if err != nil {
		return nil, fmt.Errorf("tagged field count: %w", err)
	}
	b = b[n:]
	// A field takes at least 2 bytes (tag and size): a count that cannot
	// fit is refused before any loop runs.
	if uint64(count) > uint64(len(b))/2 {
		return nil, fmt.Errorf("tagged field count %d with %d bytes left", count, len(b))
	}
	last := int64(-1)
	for range count {
		tag, n, err := ReadUvarint(b)
		if err != nil {
			return nil, fmt.Errorf("tag: %w", err)
		}
		b = b[n:]
		if int64(tag) <= last {
			return nil, fmt.Errorf("tag %d after tag %d: duplicate or out of order", tag, last)
		}
		last = int64(tag)
		size, n, err := ReadUvarint(b)
		if err != nil {
			return nil, fmt.Errorf("tag %d size: %w", tag, err)
		}
		b = b[n:]
		if uint64(size) > uint64(len(b)) {
			return nil, fmt.Errorf("tag %d size %d with %d bytes left", tag, size, len(b))
		}
		b = b[size:]
	}
	return b, nil
}

// ErrVarint: an unsigned varint that is cut short or overflows 32 bits.
var ErrVarint = errors.New("wire: bad unsigned varint")

// ReadUvarint reads a uint32 unsigned varint: at most 5 bytes, the fifth
// holding only the top 4 bits. It returns the value and the bytes read.
func ReadUvarint(b []byte) (uint32, int, error) {
	var x uint32
	for i := 0; i < 5; i++ {
		if i == len(b) {
			return 0, 0, fmt.Errorf("%w: truncated", ErrVarint)
		}
		c := b[i]
		if i == 4 && c > 0x0f {
			return 0, 0, fmt.Errorf("%w: overflows 32 bits", ErrVarint)
		}
		x |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return x, i + 1, nil
		}
	}
	panic("unreachable: the fifth byte returns or fails above")
}
