package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// RequestHeader is the request header, versions 1 and 2 (Kafka's
// RequestHeader.json). Version 0, without a client id, exists only for
// ControlledShutdown v0, which no table entry serves.
type RequestHeader struct {
	ApiKey        int16
	ApiVersion    int16
	CorrelationID int32
	// ClientID is "" when the client sent null, as in Kafka.
	ClientID string
}

// parseRequestHeader splits a frame into its header and body. flexible
// selects header v2 (tagged fields after the client id), which Kafka uses
// exactly when the request version is flexible. The header's tagged fields
// are skipped after checking them: no tag is defined in header v2 that a
// broker must read. The client id is returned as a slice of frame so the
// caller can reuse the previous string when it repeats.
func parseRequestHeader(frame []byte, flexible bool) (hdr RequestHeader, clientID []byte, body []byte, err error) {
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
		rest, err = skipTaggedFields(rest)
		if err != nil {
			return hdr, nil, nil, fmt.Errorf("%w: %w", ErrMalformedHeader, err)
		}
	}
	return hdr, clientID, rest, nil
}

// skipTaggedFields skips a tagged-field section (KIP-482):
//
//	count:uvarint { tag:uvarint size:uvarint data:[size]byte }
//
// Tags must be strictly increasing, which also refuses duplicates, as the
// KIP requires; each size must fit in what remains. Nothing is allocated.
func skipTaggedFields(b []byte) ([]byte, error) {
	count, n, err := readUvarint(b)
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
		tag, n, err := readUvarint(b)
		if err != nil {
			return nil, fmt.Errorf("tag: %w", err)
		}
		b = b[n:]
		if int64(tag) <= last {
			return nil, fmt.Errorf("tag %d after tag %d: duplicate or out of order", tag, last)
		}
		last = int64(tag)
		size, n, err := readUvarint(b)
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

// errVarint is wrapped by the callers above.
var errVarint = errors.New("kafka: bad unsigned varint")

// readUvarint reads a uint32 unsigned varint: at most 5 bytes, the fifth
// holding only the top 4 bits.
func readUvarint(b []byte) (uint32, int, error) {
	var x uint32
	for i := 0; i < 5; i++ {
		if i == len(b) {
			return 0, 0, fmt.Errorf("%w: truncated", errVarint)
		}
		c := b[i]
		if i == 4 && c > 0x0f {
			return 0, 0, fmt.Errorf("%w: overflows 32 bits", errVarint)
		}
		x |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return x, i + 1, nil
		}
	}
	panic("unreachable: the fifth byte returns or fails above")
}
