package engine

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"github.com/wren-broker/wren/internal/vfs"
)

// Index entry layouts, big-endian, as Kafka's OffsetIndex and TimeIndex.
// Part of the on-disk format; never change.
const (
	// offset index: relative offset int32, file position int32.
	offsetIndexEntrySize = 8
	// time index: timestamp int64, relative offset int32.
	timeIndexEntrySize = 12
)

// index is a sparse, append-only array of fixed-size entries in a file.
// Lookups binary-search the file with positional reads, so closed segments
// hold no index memory; the page cache keeps hot indexes fast.
//
// Appends come from the log's owner under the log lock. Readers run
// concurrently: an entry is written before n is raised, so a reader that
// loads n sees only complete entries.
type index struct {
	f          *handle
	entrySize  int64
	maxEntries int64
	// n counts the entries in the file.
	n atomic.Int64
}

func (x *index) entries() int64 { return x.n.Load() }
func (x *index) full() bool     { return x.n.Load() >= x.maxEntries }

func (x *index) readEntry(i int64, buf []byte) error {
	_, err := x.f.ReadAt(buf[:x.entrySize], i*x.entrySize)
	return err
}

func (x *index) appendEntry(entry []byte) error {
	n := x.n.Load()
	if n >= x.maxEntries {
		panic(fmt.Sprintf("engine: append to full index %s (%d entries)", x.f.Name(), n))
	}
	if _, err := x.f.WriteAt(entry, n*x.entrySize); err != nil {
		return err
	}
	x.n.Store(n + 1)
	return nil
}

// truncateEntries keeps the first n entries.
func (x *index) truncateEntries(n int64) error {
	if err := x.f.Truncate(n * x.entrySize); err != nil {
		return err
	}
	x.n.Store(n)
	return nil
}

// trim cuts the file to its entries: it drops a torn partial entry and any
// space an older wren reserved past them with fallocate.
func (x *index) trim() error { return x.f.Truncate(x.n.Load() * x.entrySize) }

// search returns the largest i in [0,n) with key(i) <= target, or -1.
func (x *index) search(target int64, key func(buf []byte) int64) (int64, []byte, error) {
	buf := make([]byte, x.entrySize)
	found := make([]byte, x.entrySize)
	lo, hi := int64(0), x.n.Load()-1
	at := int64(-1)
	for lo <= hi {
		mid := lo + (hi-lo)/2
		if err := x.readEntry(mid, buf); err != nil {
			return -1, nil, err
		}
		if key(buf) <= target {
			at = mid
			copy(found, buf)
			lo = mid + 1
		} else {
			hi = mid - 1
		}
	}
	return at, found, nil
}

// offsetIndex maps offsets to file positions in one segment. Kafka's
// entries name a batch's last offset and the position where that batch
// starts, so a lookup for target lands on a batch boundary at or before it.
type offsetIndex struct {
	index
	baseOffset int64
	// lastOffset is the newest entry's offset, or baseOffset when empty.
	lastOffset int64
}

// indexPosition is a result of an offset index lookup.
type indexPosition struct {
	Offset   int64
	Position int64
}

func (x *offsetIndex) append(offset, position int64) error {
	rel := offset - x.baseOffset
	if rel < 0 || rel > 1<<31-1 || position > 1<<31-1 {
		panic(fmt.Sprintf("engine: offset index %s: entry offset %d position %d out of range for base %d", x.f.Name(), offset, position, x.baseOffset))
	}
	if x.entries() > 0 && offset <= x.lastOffset {
		panic(fmt.Sprintf("engine: offset index %s: entry offset %d not above last %d", x.f.Name(), offset, x.lastOffset))
	}
	var e [offsetIndexEntrySize]byte
	binary.BigEndian.PutUint32(e[0:], uint32(rel))
	binary.BigEndian.PutUint32(e[4:], uint32(position))
	if err := x.appendEntry(e[:]); err != nil {
		return err
	}
	x.lastOffset = offset
	return nil
}

// lookup returns the largest entry whose offset is <= target, or the
// segment start.
func (x *offsetIndex) lookup(target int64) (indexPosition, error) {
	i, e, err := x.search(target-x.baseOffset, func(b []byte) int64 {
		return int64(int32(binary.BigEndian.Uint32(b[0:])))
	})
	if err != nil || i < 0 {
		return indexPosition{Offset: x.baseOffset}, err
	}
	return indexPosition{
		Offset:   x.baseOffset + int64(int32(binary.BigEndian.Uint32(e[0:]))),
		Position: int64(int32(binary.BigEndian.Uint32(e[4:]))),
	}, nil
}

// truncateTo removes entries with offset >= offset.
func (x *offsetIndex) truncateTo(offset int64) error {
	i, e, err := x.search(offset-1-x.baseOffset, func(b []byte) int64 {
		return int64(int32(binary.BigEndian.Uint32(b[0:])))
	})
	if err != nil {
		return err
	}
	x.lastOffset = x.baseOffset
	if i >= 0 {
		x.lastOffset = x.baseOffset + int64(int32(binary.BigEndian.Uint32(e[0:])))
	}
	return x.truncateEntries(i + 1)
}

// timeIndex maps timestamps to offsets in one segment: each entry says
// "the largest timestamp so far is T, first reached in the batch ending at
// offset O". Timestamps only grow.
type timeIndex struct {
	index
	baseOffset    int64
	lastTimestamp int64
	lastOffset    int64
}

// timestampOffset is a time index entry.
type timestampOffset struct {
	Timestamp int64
	Offset    int64
}

// noTimestamp is Kafka's RecordBatch.NO_TIMESTAMP.
const noTimestamp = -1

// maybeAppend adds an entry if ts is newer than the last one.
func (x *timeIndex) maybeAppend(ts, offset int64, skipFullCheck bool) error {
	if !skipFullCheck && x.full() {
		return nil
	}
	if x.entries() > 0 && ts <= x.lastTimestamp {
		return nil
	}
	if x.full() {
		return nil
	}
	if x.entries() > 0 && offset < x.lastOffset {
		panic(fmt.Sprintf("engine: time index %s: offset %d below last %d", x.f.Name(), offset, x.lastOffset))
	}
	rel := offset - x.baseOffset
	if rel < 0 || rel > 1<<31-1 {
		panic(fmt.Sprintf("engine: time index %s: offset %d out of range for base %d", x.f.Name(), offset, x.baseOffset))
	}
	var e [timeIndexEntrySize]byte
	binary.BigEndian.PutUint64(e[0:], uint64(ts))
	binary.BigEndian.PutUint32(e[8:], uint32(rel))
	if err := x.appendEntry(e[:]); err != nil {
		return err
	}
	x.lastTimestamp, x.lastOffset = ts, offset
	return nil
}

// lookup returns the largest entry with timestamp <= target, or
// (noTimestamp, baseOffset).
func (x *timeIndex) lookup(target int64) (timestampOffset, error) {
	i, e, err := x.search(target, func(b []byte) int64 { return int64(binary.BigEndian.Uint64(b[0:])) })
	if err != nil || i < 0 {
		return timestampOffset{Timestamp: noTimestamp, Offset: x.baseOffset}, err
	}
	return timestampOffset{
		Timestamp: int64(binary.BigEndian.Uint64(e[0:])),
		Offset:    x.baseOffset + int64(int32(binary.BigEndian.Uint32(e[8:]))),
	}, nil
}

// truncateTo removes entries with offset >= offset.
func (x *timeIndex) truncateTo(offset int64) error {
	buf := make([]byte, timeIndexEntrySize)
	n := x.entries()
	// Offsets are non-decreasing; entries past a truncation point are few.
	for n > 0 {
		if err := x.readEntry(n-1, buf); err != nil {
			return err
		}
		if x.baseOffset+int64(int32(binary.BigEndian.Uint32(buf[8:]))) < offset {
			break
		}
		n--
	}
	if err := x.truncateEntries(n); err != nil {
		return err
	}
	x.lastTimestamp, x.lastOffset = noTimestamp, x.baseOffset
	if n > 0 {
		x.lastTimestamp = int64(binary.BigEndian.Uint64(buf[0:]))
		x.lastOffset = x.baseOffset + int64(int32(binary.BigEndian.Uint32(buf[8:])))
	}
	return nil
}

// loadEntries reads a whole index file for a sanity check; n is the number
// of whole entries. A size that is not a multiple of the entry size is
// corrupt.
func loadEntries(f vfs.File, entrySize int64) ([]byte, int64, error) {
	size, err := f.Size()
	if err != nil {
		return nil, 0, err
	}
	if size%entrySize != 0 {
		return nil, 0, fmt.Errorf("%w: %s: size %d is not a multiple of %d", ErrCorruptIndex, f.Name(), size, entrySize)
	}
	buf := make([]byte, size)
	if size > 0 {
		if _, err := f.ReadAt(buf, 0); err != nil {
			return nil, 0, err
		}
	}
	return buf, size / entrySize, nil
}
