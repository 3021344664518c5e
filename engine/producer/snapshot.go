package producer

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"sort"
)

// Kafka's producer snapshot layout (ProducerStateManager, version 1).
// Part of the on-disk format; never change.
const (
	// SnapshotVersion is the only version Kafka has written.
	SnapshotVersion int16 = 1

	snapshotVersionSize = 2
	snapshotCRCSize     = 4
	// snapshotCRCStart is where the CRC-covered bytes begin: the entry
	// count and every entry (Kafka's PRODUCER_ENTRIES_OFFSET).
	snapshotCRCStart = snapshotVersionSize + snapshotCRCSize
	// snapshotHeaderSize is version, CRC and entry count.
	snapshotHeaderSize = snapshotCRCStart + 4
	// snapshotEntrySize: producer id 8, epoch 2, last sequence 4, last
	// offset 8, offset delta 4, timestamp 8, coordinator epoch 4, current
	// transaction first offset 8.
	snapshotEntrySize = 46
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// SnapshotSize is the size in bytes of a snapshot holding n entries.
func SnapshotSize(n int) int { return snapshotHeaderSize + n*snapshotEntrySize }

// AppendSnapshot appends the state in Kafka's snapshot format to dst:
// the contents of the file named by MapEndOffset. Entries go in producer-id
// order, so equal states give equal bytes.
func (s *State) AppendSnapshot(dst []byte) []byte {
	start := len(dst)
	dst = slices.Grow(dst, SnapshotSize(len(s.producers)))
	dst = binary.BigEndian.AppendUint16(dst, uint16(SnapshotVersion))
	dst = binary.BigEndian.AppendUint32(dst, 0) // the CRC, filled in below
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(s.producers)))
	for _, pid := range s.producerIDs() {
		e := &s.producers[pid].Entry
		// Kafka writes an entry without a batch as sequence -1, offset
		// -1, delta 0, and the entry's timestamp either way.
		m := BatchMetadata{LastSequence: -1, LastOffset: -1}
		if last, ok := e.LastBatch(); ok {
			m = last
		}
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.ProducerID))
		dst = binary.BigEndian.AppendUint16(dst, uint16(e.ProducerEpoch))
		dst = binary.BigEndian.AppendUint32(dst, uint32(m.LastSequence))
		dst = binary.BigEndian.AppendUint64(dst, uint64(m.LastOffset))
		dst = binary.BigEndian.AppendUint32(dst, uint32(m.OffsetDelta))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.LastTimestamp))
		dst = binary.BigEndian.AppendUint32(dst, uint32(e.CoordinatorEpoch))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.CurrentTxnFirstOffset))
	}
	snap := dst[start:]
	binary.BigEndian.PutUint32(snap[snapshotVersionSize:], crc32.Checksum(snap[snapshotCRCStart:], castagnoli))
	return dst
}

// DecodeSnapshot reads a snapshot written by AppendSnapshot or by Kafka.
// offset is the one in the file's name; it becomes the state's
// MapEndOffset, where replay of the log continues. Each producer gets the
// one batch the snapshot holds (none if its last offset is -1). Expired
// producers are kept: call RemoveExpired after loading, as Kafka does.
//
// b is checked for size (at most SnapshotSize(opts.MaxProducers)) before
// anything is allocated, then for version and CRC-32C before any entry is
// read. Errors: ErrSnapshotTooLarge, ErrCorruptSnapshot.
func DecodeSnapshot(b []byte, offset int64, opts Options) (*State, error) {
	if maxBytes := SnapshotSize(opts.maxProducers()); len(b) > maxBytes {
		return nil, fmt.Errorf("%w: %d bytes, a snapshot of %d producers has at most %d",
			ErrSnapshotTooLarge, len(b), opts.maxProducers(), maxBytes)
	}
	if offset < 0 {
		return nil, fmt.Errorf("%w: negative snapshot offset %d", ErrCorruptSnapshot, offset)
	}
	if len(b) < snapshotHeaderSize {
		return nil, fmt.Errorf("%w: %d bytes, the header alone is %d", ErrCorruptSnapshot, len(b), snapshotHeaderSize)
	}
	if v := int16(binary.BigEndian.Uint16(b)); v != SnapshotVersion {
		return nil, fmt.Errorf("%w: unknown version %d", ErrCorruptSnapshot, v)
	}
	stored := binary.BigEndian.Uint32(b[snapshotVersionSize:])
	if computed := crc32.Checksum(b[snapshotCRCStart:], castagnoli); stored != computed {
		return nil, fmt.Errorf("%w: stored CRC %#08x, computed %#08x", ErrCorruptSnapshot, stored, computed)
	}
	count := int32(binary.BigEndian.Uint32(b[snapshotCRCStart:]))
	body := b[snapshotHeaderSize:]
	// The count must account for every remaining byte exactly: this also
	// bounds the map below by len(b), never by the claimed count.
	if count < 0 || int64(count)*snapshotEntrySize != int64(len(body)) {
		return nil, fmt.Errorf("%w: %d entries claimed, %d bytes of entries", ErrCorruptSnapshot, count, len(body))
	}
	s := &State{opts: opts, mapEndOffset: offset}
	if count > 0 {
		s.producers = make(map[int64]*node, count)
	}
	for i := range int(count) {
		p := body[i*snapshotEntrySize : (i+1)*snapshotEntrySize]
		e := &node{Entry: *newEntry(int64(binary.BigEndian.Uint64(p[0:])))}
		e.ProducerEpoch = int16(binary.BigEndian.Uint16(p[8:]))
		lastSeq := int32(binary.BigEndian.Uint32(p[10:]))
		lastOffset := int64(binary.BigEndian.Uint64(p[14:]))
		offsetDelta := int32(binary.BigEndian.Uint32(p[22:]))
		e.LastTimestamp = int64(binary.BigEndian.Uint64(p[26:]))
		e.CoordinatorEpoch = int32(binary.BigEndian.Uint32(p[34:]))
		e.CurrentTxnFirstOffset = int64(binary.BigEndian.Uint64(p[38:]))
		if e.ProducerID < 0 {
			return nil, fmt.Errorf("%w: entry %d has producer id %d", ErrCorruptSnapshot, i, e.ProducerID)
		}
		if e.CurrentTxnFirstOffset < 0 {
			e.CurrentTxnFirstOffset = -1 // Kafka reads any negative as "none"
		}
		if lastOffset >= 0 {
			if lastSeq < 0 || offsetDelta < 0 || int64(offsetDelta) > lastOffset {
				return nil, fmt.Errorf("%w: producer %d: last sequence %d, last offset %d, offset delta %d",
					ErrCorruptSnapshot, e.ProducerID, lastSeq, lastOffset, offsetDelta)
			}
			e.addBatch(BatchMetadata{LastSequence: lastSeq, LastOffset: lastOffset,
				OffsetDelta: offsetDelta, Timestamp: e.LastTimestamp})
		}
		s.producers[e.ProducerID] = e // a repeated id: the last wins, as in Kafka
	}
	// The file does not keep the recency order; the producers that wrote
	// longest ago go first.
	order := make([]*node, 0, len(s.producers))
	for _, n := range s.producers {
		order = append(order, n)
		if n.CurrentTxnFirstOffset >= 0 {
			s.ongoing = append(s.ongoing, ongoingTxn{producerID: n.ProducerID, firstOffset: n.CurrentTxnFirstOffset, startTimestamp: n.LastTimestamp})
		}
	}
	// Open transactions, by first offset; two cannot start at one offset.
	// sort.Slice, not slices.SortFunc: a snapshot load, and a generic sort
	// of this struct instantiates pdqsort anew (docs/ARCHITECTURE.md,
	// "Binary size").
	sort.Slice(s.ongoing, func(i, j int) bool { return s.ongoing[i].firstOffset < s.ongoing[j].firstOffset })
	for i, t := range s.ongoing {
		if i > 0 && s.ongoing[i-1].firstOffset == t.firstOffset {
			return nil, fmt.Errorf("%w: producers %d and %d: open transactions both at offset %d",
				ErrCorruptSnapshot, s.ongoing[i-1].producerID, t.producerID, t.firstOffset)
		}
	}
	slices.SortFunc(order, func(a, b *node) int {
		if c := cmp.Compare(a.LastTimestamp, b.LastTimestamp); c != 0 {
			return c
		}
		return cmp.Compare(a.ProducerID, b.ProducerID)
	})
	for _, n := range order {
		s.pushNewest(n)
	}
	return s, nil
}
