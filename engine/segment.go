package engine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync/atomic"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// File name suffixes of a segment. Part of the on-disk format; never change.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	snapshotSuffix  = ".snapshot"
	deletedSuffix   = ".deleted"
	cleanedSuffix   = ".cleaned"
	swapSuffix      = ".swap"
)

// segmentFileName is Kafka's 20-digit zero-padded base offset.
func segmentFileName(dir string, baseOffset int64, suffix string) string {
	return fmt.Sprintf("%s/%020d%s", dir, baseOffset, suffix)
}

// segment is one .log file with its two indexes.
//
// Invariant: every batch in the file has BaseOffset >= baseOffset, offsets
// strictly increase, and size is the end of the last complete batch.
type segment struct {
	baseOffset  int64
	log         vfs.File
	offsetIndex *offsetIndex
	timeIndex   *timeIndex

	// size is the byte length of the complete batches in the log file.
	// Written under the log lock, read by readers without it.
	size atomic.Int64

	// Fields below are owned by the log lock.

	// nextOffset is one past the last offset in the segment (baseOffset
	// when empty).
	nextOffset int64
	// maxTimestamp and offsetOfMaxTimestamp: the largest batch max
	// timestamp so far and the last offset of the batch that had it.
	maxTimestamp         int64
	offsetOfMaxTimestamp int64
	// rollingBasedTimestamp is the first batch's max timestamp, which
	// segment.ms measures from; noTimestamp when empty.
	rollingBasedTimestamp int64
	createdMs             int64
	bytesSinceIndexEntry  int64

	// refs counts the log's own reference plus readers in flight; the files
	// close when it reaches zero, so a segment deleted by retention while a
	// sendfile reads it stays readable until the read ends.
	refs atomic.Int32
}

func openSegmentFiles(fsys vfs.FS, dir string, baseOffset int64, opts *Options, create bool) (*segment, error) {
	open := fsys.OpenReadWrite
	if create {
		open = fsys.Create
	}
	logf, err := open(segmentFileName(dir, baseOffset, logSuffix))
	if err != nil {
		return nil, err
	}
	idxf, err := open(segmentFileName(dir, baseOffset, indexSuffix))
	if err != nil {
		logf.Close()
		return nil, err
	}
	tidxf, err := open(segmentFileName(dir, baseOffset, timeIndexSuffix))
	if err != nil {
		logf.Close()
		idxf.Close()
		return nil, err
	}
	s := &segment{
		baseOffset: baseOffset,
		log:        logf,
		offsetIndex: &offsetIndex{
			index:      index{f: idxf, entrySize: offsetIndexEntrySize, maxEntries: opts.SegmentIndexBytes / offsetIndexEntrySize},
			baseOffset: baseOffset, lastOffset: baseOffset,
		},
		timeIndex: &timeIndex{
			index:      index{f: tidxf, entrySize: timeIndexEntrySize, maxEntries: opts.SegmentIndexBytes / timeIndexEntrySize},
			baseOffset: baseOffset, lastTimestamp: noTimestamp, lastOffset: baseOffset,
		},
		nextOffset:            baseOffset,
		maxTimestamp:          noTimestamp,
		offsetOfMaxTimestamp:  baseOffset,
		rollingBasedTimestamp: noTimestamp,
		createdMs:             opts.nowMs(),
	}
	s.refs.Store(1)
	return s, nil
}

// createSegment makes a new empty segment. Its index files start empty
// and grow by one entry per append, so they hold disk blocks only for
// their entries: reserving segment.index.bytes up front, as a fallocate
// would, costs an idle broker 20 MiB per partition (Kafka's preallocated
// index files are sparse, which reserves nothing either). The price is
// that an index append can meet ENOSPC mid-segment; it fails the append
// like a log write does.
func createSegment(fsys vfs.FS, dir string, baseOffset int64, opts *Options) (*segment, error) {
	s, err := openSegmentFiles(fsys, dir, baseOffset, opts, true)
	if err != nil {
		return nil, err
	}
	if opts.Preallocate {
		if err := s.log.Preallocate(0, opts.SegmentBytes); err != nil {
			s.closeFiles()
			return nil, err
		}
	}
	return s, nil
}

func (s *segment) acquire() { s.refs.Add(1) }

func (s *segment) release() {
	if n := s.refs.Add(-1); n == 0 {
		s.closeFiles()
	} else if n < 0 {
		panic(fmt.Sprintf("engine: segment %d released %d times too often", s.baseOffset, -n))
	}
}

func (s *segment) closeFiles() error {
	return errors.Join(s.log.Close(), s.offsetIndex.f.Close(), s.timeIndex.f.Close())
}

// removeFiles deletes the segment's files (and its producer snapshot, if
// any). Open handles stay readable until released.
func (s *segment) removeFiles(fsys vfs.FS, dir string) error {
	var errs []error
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, snapshotSuffix} {
		if err := fsys.Remove(segmentFileName(dir, s.baseOffset, suffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s *segment) empty() bool { return s.size.Load() == 0 }

// largestTimestamp is what time retention measures a segment by.
func (s *segment) largestTimestamp() int64 {
	if s.maxTimestamp != noTimestamp {
		return s.maxTimestamp
	}
	return s.createdMs
}

// appendBatches records batches just written at position pos of the log
// file in the indexes, as Kafka's LogSegment.append does: an index entry
// (the batch's last offset, the batch's start position) whenever more than
// index.interval.bytes were written since the last one.
func (s *segment) indexBatches(hs []batch.Header, pos int64, opts *Options) error {
	for _, h := range hs {
		last := h.LastOffset()
		if pos == 0 {
			s.rollingBasedTimestamp = h.MaxTimestamp
		}
		if h.MaxTimestamp > s.maxTimestamp {
			s.maxTimestamp, s.offsetOfMaxTimestamp = h.MaxTimestamp, last
		}
		if s.bytesSinceIndexEntry > opts.IndexIntervalBytes {
			if err := s.offsetIndex.append(last, pos); err != nil {
				return err
			}
			if err := s.timeIndex.maybeAppend(s.maxTimestamp, s.offsetOfMaxTimestamp, false); err != nil {
				return err
			}
			s.bytesSinceIndexEntry = 0
		}
		n := int64(h.Size())
		pos += n
		s.bytesSinceIndexEntry += n
		s.nextOffset = last + 1
	}
	return nil
}

// onBecomeInactive finishes a segment that is being rolled: the final time
// index entry, indexes trimmed to their entries, everything fsynced.
func (s *segment) onBecomeInactive() error {
	if !s.empty() {
		if err := s.timeIndex.maybeAppend(s.maxTimestamp, s.offsetOfMaxTimestamp, true); err != nil {
			return err
		}
	}
	// Give back space reserved by preallocate beyond the data.
	if err := s.log.Truncate(s.size.Load()); err != nil {
		return err
	}
	return s.flush(true)
}

// flush makes the log file durable and, with indexes, trims and syncs them.
func (s *segment) flush(indexes bool) error {
	if indexes {
		if err := s.offsetIndex.trim(); err != nil {
			return err
		}
		if err := s.timeIndex.trim(); err != nil {
			return err
		}
		if err := s.offsetIndex.f.Sync(); err != nil {
			return err
		}
		if err := s.timeIndex.f.Sync(); err != nil {
			return err
		}
	}
	return s.log.SyncData()
}

// readHeader reads the batch header at pos.
func (s *segment) readHeader(pos int64, buf []byte) (batch.Header, error) {
	if _, err := s.log.ReadAt(buf[:batch.RecordBatchOverhead], pos); err != nil {
		if errors.Is(err, io.EOF) {
			return batch.Header{}, io.ErrUnexpectedEOF
		}
		return batch.Header{}, err
	}
	return batch.ParseHeader(buf[:batch.RecordBatchOverhead])
}

// wholeBatchesWithin returns the length of the whole batches from from
// (a batch's start) that end at or before to, walking their headers; at
// least the first batch's.
func (s *segment) wholeBatchesWithin(from, to int64) (int64, error) {
	buf := make([]byte, batch.RecordBatchOverhead)
	pos := from
	for {
		h, err := s.readHeader(pos, buf)
		if err != nil {
			return 0, fmt.Errorf("engine: %s at %d: %w", s.log.Name(), pos, err)
		}
		size := int64(h.Size())
		if pos+size > to && pos > from {
			return pos - from, nil
		}
		pos += size
		if pos >= to {
			return pos - from, nil
		}
	}
}

// batchPosition is where a batch sits in the segment.
type batchPosition struct {
	Position   int64
	BaseOffset int64
	LastOffset int64
	Size       int64
	// MaxTimestamp of the batch.
	MaxTimestamp int64
}

// translateOffset finds the first batch at or after startPos, below end,
// whose last offset is >= offset (Kafka's LogSegment.translateOffset). ok
// is false when no batch below end qualifies.
func (s *segment) translateOffset(offset, startPos, end int64) (bp batchPosition, ok bool, err error) {
	return s.translateOffsetSkipping(offset, startPos, end, nil)
}

// translateOffsetSkipping is translateOffset stepping over damaged byte
// ranges ({start, end} pairs, sorted): a scan never reads a header there.
func (s *segment) translateOffsetSkipping(offset, startPos, end int64, skips [][2]int64) (bp batchPosition, ok bool, err error) {
	buf := make([]byte, batch.RecordBatchOverhead)
	pos := startPos
	for pos < end {
		if next := skipPast(skips, pos); next != pos {
			pos = next
			continue
		}
		h, err := s.readHeader(pos, buf)
		if err != nil {
			return batchPosition{}, false, fmt.Errorf("engine: %s at %d: %w", s.log.Name(), pos, err)
		}
		size := int64(h.Size())
		if h.LastOffset() >= offset {
			return batchPosition{Position: pos, BaseOffset: h.BaseOffset, LastOffset: h.LastOffset(), Size: size, MaxTimestamp: h.MaxTimestamp}, true, nil
		}
		pos += size
	}
	return batchPosition{}, false, nil
}

// lookupPosition is translateOffset from the index's starting point.
func (s *segment) lookupPosition(offset, end int64) (batchPosition, bool, error) {
	return s.lookupPositionSkipping(offset, end, nil)
}

func (s *segment) lookupPositionSkipping(offset, end int64, skips [][2]int64) (batchPosition, bool, error) {
	ip, err := s.offsetIndex.lookup(offset)
	if err != nil {
		return batchPosition{}, false, err
	}
	return s.translateOffsetSkipping(offset, ip.Position, end, skips)
}

// skipPast returns the end of the skipped range that starts at or covers
// pos, or pos.
func skipPast(skips [][2]int64, pos int64) int64 {
	for _, r := range skips {
		if pos >= r[0] && pos < r[1] {
			return r[1]
		}
	}
	return pos
}
