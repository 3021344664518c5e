package kafka

import (
	"encoding/binary"
	"fmt"

	"github.com/wren-broker/wren/wire"
)

// maxProduceEntries bounds topics + partitions in one Produce request, and
// maxProduceTags its tagged fields. Produce is the one key allowed frames up
// to socket.request.max.bytes, and kmsg decodes a frame dense with empty
// entries to ~20-36x its size (TestDecodeAmplification), distinct unknown
// tags to ~160 bytes each (a map entry). With these bounds the decoded
// structure stays under ~8 MiB whatever the frame size, and the record
// bytes, which kmsg aliases rather than copies, cost nothing more. Kafka
// has no such limits; no real producer comes near them (65536 partitions
// of this broker in one request; Produce defines no tagged fields).
const (
	maxProduceEntries = 1 << 16
	maxProduceTags    = 1 << 10
)

// precheckProduce walks a Produce body without allocating and refuses it
// when it holds more than maxProduceEntries entries. It reads exactly what
// kmsg reads (kmsg's ProduceRequest.readFrom, v0-13), so a body kmsg would
// accept with few entries passes; anything it cannot walk is left for kmsg
// to reject. FuzzProducePrecheck cross-checks the counts against kmsg.
func precheckProduce(version int16, body []byte) error {
	w := walkProduce(version, body)
	if w.entries > maxProduceEntries || w.tags > maxProduceTags {
		return fmt.Errorf("%w: %d topics and partitions (limit %d), %d tagged fields (limit %d)",
			ErrTooManyEntries, w.entries, maxProduceEntries, w.tags, maxProduceTags)
	}
	return nil
}

func walkProduce(version int16, body []byte) shapeWalker {
	w := shapeWalker{b: body, flexible: version >= 9}
	if version >= 3 {
		w.skipString() // transactional_id, nullable
	}
	w.skip(2 + 4) // acks, timeout_ms
	topics := w.arrayLen()
	w.count(topics)
	for range max(topics, 0) {
		if w.bad {
			break
		}
		if version >= 13 {
			w.skip(16) // topic_id
		} else {
			w.skipString()
		}
		partitions := w.arrayLen()
		w.count(partitions)
		for range max(partitions, 0) {
			if w.bad {
				break
			}
			w.skip(4) // partition_index
			w.skipBytes()
			w.skipTags()
		}
		w.skipTags()
	}
	w.skipTags()
	return w
}

// shapeWalker skips over Kafka primitives, counting entries. On a short or
// malformed body it stops (bad) and reports what it counted so far: the
// decoder then refuses the body.
type shapeWalker struct {
	b        []byte
	flexible bool
	bad      bool
	// entries counts topics and partitions, tags tagged fields.
	entries int64
	tags    int64
}

func (w *shapeWalker) count(n int32) {
	if n > 0 {
		w.entries += int64(n)
	}
	if w.entries > maxProduceEntries {
		w.stop() // no need to walk further
	}
}

func (w *shapeWalker) stop() { w.bad, w.b = true, nil }

func (w *shapeWalker) skip(n int) {
	if w.bad || n < 0 || n > len(w.b) {
		w.stop()
		return
	}
	w.b = w.b[n:]
}

func (w *shapeWalker) uvarint() uint32 {
	if w.bad {
		return 0
	}
	v, n, err := wire.ReadUvarint(w.b)
	if err != nil {
		w.stop()
		return 0
	}
	w.b = w.b[n:]
	return v
}

func (w *shapeWalker) int16() int16 {
	if w.bad || len(w.b) < 2 {
		w.stop()
		return 0
	}
	v := int16(binary.BigEndian.Uint16(w.b))
	w.b = w.b[2:]
	return v
}

func (w *shapeWalker) int32() int32 {
	if w.bad || len(w.b) < 4 {
		w.stop()
		return 0
	}
	v := int32(binary.BigEndian.Uint32(w.b))
	w.b = w.b[4:]
	return v
}

// The length readers below compute exactly as kmsg's readString,
// readNullableBytes and readArrayLen do, wrap-arounds included: a compact
// array length is int32(uvarint)-1, so a uvarint of 2^31 or more is a
// negative count (an empty array), while string and bytes lengths use int.
// -1 is null.

func (w *shapeWalker) skipString() {
	var l int
	if w.flexible {
		l = int(w.uvarint()) - 1
	} else {
		l = int(w.int16())
	}
	if l > 0 {
		w.skip(l)
	}
}

func (w *shapeWalker) skipBytes() {
	var l int
	if w.flexible {
		l = int(w.uvarint()) - 1
	} else {
		l = int(w.int32())
	}
	if l > 0 {
		w.skip(l)
	}
}

func (w *shapeWalker) arrayLen() int32 {
	var l int32
	if w.flexible {
		l = int32(w.uvarint()) - 1
	} else {
		l = w.int32()
	}
	if w.bad || int64(l) > int64(len(w.b)) {
		// kmsg refuses a count that cannot fit; so do we, before looping.
		w.stop()
		return 0
	}
	return l
}

func (w *shapeWalker) skipTags() {
	if !w.flexible {
		return
	}
	n := w.uvarint()
	if w.bad || int64(n) > int64(len(w.b)) {
		w.stop()
		return
	}
	w.tags += int64(n)
	if w.tags > maxProduceTags {
		w.stop()
		return
	}
	for range n {
		w.uvarint() // tag
		w.skip(int(w.uvarint()))
		if w.bad {
			return
		}
	}
}
