package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Scan looks at the batch at the start of buf, which holds bytes read from a
// segment at a batch boundary, and tells how big it is. It checks the
// framing and the CRC but does not decompress or walk the records: this is
// the cheap per-batch check of recovery and of reads (Kafka's
// ensureValid).
//
// Outcomes:
//   - nil: buf[:n] is one complete batch whose CRC holds.
//   - ErrIncomplete: buf ends before the batch; n is the size buf must reach
//     to go on (LogOverhead while even the length is missing). At the end
//     of a segment file this is a torn tail; elsewhere, read n bytes. The
//     caller must compare n with the bytes the file still has: a length
//     field pointing past the end of the file is a torn tail too.
//   - ErrCorrupt, ErrUnsupportedMagic, ErrCRC: the bytes are not a valid
//     batch; n is 0.
//
// h is set whenever the header could be read (nil error or ErrIncomplete
// with at least RecordBatchOverhead bytes; also ErrCRC).
func Scan(buf []byte) (n int, h Header, err error) {
	if len(buf) < LogOverhead {
		return LogOverhead, Header{}, fmt.Errorf("%w: %d bytes, the length field ends at %d", ErrIncomplete, len(buf), LogOverhead)
	}
	length := int32(binary.BigEndian.Uint32(buf[LengthOffset:]))
	if err := checkBatchLength(length); err != nil {
		return 0, Header{}, err
	}
	size := int(length) + LogOverhead
	h, err = ParseHeader(buf)
	if err != nil {
		// ErrIncomplete here means fewer than RecordBatchOverhead bytes,
		// and size is at least that.
		if errors.Is(err, ErrIncomplete) {
			return size, Header{}, fmt.Errorf("%w: %d bytes of a %d-byte batch", ErrIncomplete, len(buf), size)
		}
		return 0, Header{}, err
	}
	if size > len(buf) {
		return size, h, fmt.Errorf("%w: %d bytes of a %d-byte batch", ErrIncomplete, len(buf), size)
	}
	if err := checkCRC(buf[:size]); err != nil {
		return 0, h, fmt.Errorf("batch at base offset %d: %w", h.BaseOffset, err)
	}
	return size, h, nil
}
