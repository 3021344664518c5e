package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// offsetMap is the log cleaner's key → latest offset map (Kafka's
// SkimpyOffsetMap): an open-addressing table of key hashes and offsets in
// two flat arrays sized once from the dedupe buffer, so its memory is
// exactly what the operator granted, whatever the keys look like.
//
// Keys are stored as a 128-bit hash, not as themselves, as Kafka does. Two
// keys with the same hash would let the cleaner drop the older one's
// record, so the hash is SHA-256 cut to 128 bits rather than Kafka's MD5:
// keys come from clients, and MD5 collisions can be made to order.
type offsetMap struct {
	// hashes holds slots entries of hashBytes each.
	hashes []byte
	// offsets[i] is the offset stored in slot i, or -1 when it is empty.
	offsets []int64
	slots   int
	// maxEntries is slots times Kafka's dupBufferLoadFactor (0.9):
	// linear probing slows down sharply past it.
	maxEntries int
	// Invariant: entries <= maxEntries.
	entries int
	// latestOffset is the highest offset put, or -1.
	latestOffset int64
}

const (
	// offsetMapHashBytes is the stored hash size.
	offsetMapHashBytes = 16
	// offsetMapEntryBytes is what one slot costs.
	offsetMapEntryBytes = offsetMapHashBytes + 8
)

type keyHash [offsetMapHashBytes]byte

func hashKey(key []byte) keyHash {
	sum := sha256.Sum256(key)
	return keyHash(sum[:offsetMapHashBytes])
}

// newOffsetMap sizes a map to bufferBytes.
func newOffsetMap(bufferBytes int64) (*offsetMap, error) {
	slots := bufferBytes / offsetMapEntryBytes
	if slots < 2 {
		return nil, fmt.Errorf("%w: %d bytes hold fewer than 2 entries", ErrCleanerBufferTooSmall, bufferBytes)
	}
	if slots > 1<<31-1 {
		slots = 1<<31 - 1
	}
	m := &offsetMap{
		hashes:     make([]byte, slots*offsetMapHashBytes),
		offsets:    make([]int64, slots),
		slots:      int(slots),
		maxEntries: int(slots * 9 / 10),
	}
	m.clear()
	return m, nil
}

// clear empties the map for the next log.
func (m *offsetMap) clear() {
	for i := range m.offsets {
		m.offsets[i] = -1
	}
	m.entries = 0
	m.latestOffset = -1
}

// room reports whether n more distinct keys fit.
func (m *offsetMap) room(n int) bool { return m.entries+n <= m.maxEntries }

func (m *offsetMap) start(h *keyHash) int {
	return int(binary.BigEndian.Uint64(h[:8]) % uint64(m.slots))
}

// put stores offset as h's latest. The caller checked room first.
func (m *offsetMap) put(h *keyHash, offset int64) {
	for i := m.start(h); ; i = (i + 1) % m.slots {
		if m.offsets[i] < 0 {
			if m.entries >= m.maxEntries {
				panic(fmt.Sprintf("engine: offset map full at %d entries of %d slots", m.entries, m.slots))
			}
			copy(m.hashes[i*offsetMapHashBytes:], h[:])
			m.offsets[i] = offset
			m.entries++
			break
		}
		if keyHash(m.hashes[i*offsetMapHashBytes:(i+1)*offsetMapHashBytes]) == *h {
			m.offsets[i] = offset
			break
		}
	}
	m.latestOffset = max(m.latestOffset, offset)
}

// get returns h's latest offset.
func (m *offsetMap) get(h *keyHash) (int64, bool) {
	for i, n := m.start(h), 0; n < m.slots; i, n = (i+1)%m.slots, n+1 {
		if m.offsets[i] < 0 {
			return -1, false
		}
		if keyHash(m.hashes[i*offsetMapHashBytes:(i+1)*offsetMapHashBytes]) == *h {
			return m.offsets[i], true
		}
	}
	return -1, false
}
