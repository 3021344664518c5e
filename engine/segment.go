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
	// tmpSuffix marks a file not yet in the log: recovery deletes it.
	tmpSuffix = ".tmp"
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
	baseOffset int64
	// log and the indexes' files are handles: open only while the
	// HandleCache keeps them or an operation pins them (handles.go).
	log         *handle
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

	// dirty: the log pins all three handles because they hold writes that
	// no sync has covered yet (the log's since its last fdatasync, the
	// indexes' since their last fsync). A file is never closed with such
	// writes: a later sync through a new descriptor need not report an
	// error the kernel met writing them back. Owned by the log lock;
	// cleared by a roll (which syncs everything), by a group-commit sync
	// that covers every write when no index entry waits for an fsync
	// (syncActive), and by releaseIdle.
	dirty bool
	// indexesDirty: index entries were written since the indexes' last
	// fsync. Owned by the log lock.
	indexesDirty bool
	// lastWriteMs is when the log last wrote to the segment.
	lastWriteMs int64
	// aborted caches the segment's transaction index entries once read
	// (abortedLoaded), for read_committed reads. Owned by the log lock;
	// every write of the file resets abortedLoaded.
	aborted       []abortedTxn
	abortedLoaded bool

	// refs counts the log's own reference plus readers in flight; the
	// handles are dropped when it reaches zero. A reader pins the handles
	// it reads (pinRead) while the segment is still in the log, so a
	// segment deleted by retention while a sendfile reads it stays readable
	// until the read ends.
	refs atomic.Int32
}

// openSegmentFiles makes the segment's handles; the files open on their
// first use. With create, the files are created (truncated) now.
func openSegmentFiles(fsys vfs.FS, dir string, baseOffset int64, opts *Options, create bool) (*segment, error) {
	return openSegmentHandles(&fileDir{fs: fsys, dir: dir}, baseOffset, opts, create)
}

func openSegmentHandles(at *fileDir, baseOffset int64, opts *Options, create bool) (*segment, error) {
	var hs [3]*handle
	for i, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if !create {
			hs[i] = newHandle(at, baseOffset, suffix)
			continue
		}
		h, err := adoptHandle(at, baseOffset, suffix, at.fs.Create)
		if err != nil {
			for _, g := range hs[:i] {
				g.drop()
			}
			return nil, err
		}
		hs[i] = h
	}
	return newSegment(hs, baseOffset, opts), nil
}

func newSegment(hs [3]*handle, baseOffset int64, opts *Options) *segment {
	s := &segment{
		baseOffset: baseOffset,
		log:        hs[0],
		offsetIndex: &offsetIndex{
			index:      index{f: hs[1], entrySize: offsetIndexEntrySize, maxEntries: opts.SegmentIndexBytes / offsetIndexEntrySize},
			baseOffset: baseOffset, lastOffset: baseOffset,
		},
		timeIndex: &timeIndex{
			index:      index{f: hs[2], entrySize: timeIndexEntrySize, maxEntries: opts.SegmentIndexBytes / timeIndexEntrySize},
			baseOffset: baseOffset, lastTimestamp: noTimestamp, lastOffset: baseOffset,
		},
		nextOffset:            baseOffset,
		maxTimestamp:          noTimestamp,
		offsetOfMaxTimestamp:  baseOffset,
		rollingBasedTimestamp: noTimestamp,
		createdMs:             opts.nowMs(),
	}
	s.refs.Store(1)
	return s
}

// createSegment makes a new empty segment. Its index files start empty
// and grow by one entry per append, so they hold disk blocks only for
// their entries: reserving segment.index.bytes up front, as a fallocate
// would, costs an idle broker 20 MiB per partition (Kafka's preallocated
// index files are sparse, which reserves nothing either). The price is
// that an index append can meet ENOSPC mid-segment; it fails the append
// like a log write does.
func createSegment(at *fileDir, baseOffset int64, opts *Options) (*segment, error) {
	s, err := openSegmentHandles(at, baseOffset, opts, true)
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

// createSegmentPinned makes a new empty segment whose files are created
// under their names plus suffix (renamed later, by the caller) and stay
// pinned, all three, until unpinAll: a descriptor follows its file
// through a rename, and a pinned handle never reopens by name. On error
// nothing is left behind.
func createSegmentPinned(at *fileDir, baseOffset int64, opts *Options, suffix string) (*segment, error) {
	fsys, dir := at.fs, at.dir
	var hs [3]*handle
	undo := func(n int) {
		for i, h := range hs[:n] {
			h.release()
			h.drop()
			fsys.Remove(segmentFileName(dir, baseOffset, []string{logSuffix, indexSuffix, timeIndexSuffix}[i]+suffix))
		}
	}
	for i, final := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		name := segmentFileName(dir, baseOffset, final+suffix)
		h, err := adoptHandlePinned(at, baseOffset, final, func(string) (vfs.File, error) { return fsys.Create(name) })
		if err != nil {
			undo(i)
			return nil, err
		}
		hs[i] = h
	}
	s := newSegment(hs, baseOffset, opts)
	if opts.Preallocate {
		if err := s.log.Preallocate(0, opts.SegmentBytes); err != nil {
			undo(3)
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

// closeFiles drops the segment's handles: each file closes at its last
// release, at once if nothing pins it.
func (s *segment) closeFiles() error {
	s.unpinDirty()
	for _, h := range s.handles() {
		h.drop()
	}
	return nil
}

func (s *segment) handles() [3]*handle {
	return [3]*handle{s.log, s.offsetIndex.f, s.timeIndex.f}
}

// pinAll pins the three handles, opening what is closed; on error nothing
// stays pinned. Operations that change several files pin them all first,
// so a shortage of descriptors fails them before any change.
func (s *segment) pinAll() error {
	hs := s.handles()
	for i, h := range hs {
		if _, err := h.acquire(); err != nil {
			for _, g := range hs[:i] {
				g.release()
			}
			return err
		}
	}
	return nil
}

func (s *segment) unpinAll() {
	for _, h := range s.handles() {
		h.release()
	}
}

// pinRead pins what a read uses: the log and its offset index.
func (s *segment) pinRead() (vfs.File, error) {
	f, err := s.log.acquire()
	if err != nil {
		return nil, err
	}
	if _, err := s.offsetIndex.f.acquire(); err != nil {
		s.log.release()
		return nil, err
	}
	return f, nil
}

func (s *segment) unpinRead() {
	s.offsetIndex.f.release()
	s.log.release()
}

// pinDirty keeps the files open until the writes about to be made are
// synced (segment.dirty). Called under the log lock before a write.
func (s *segment) pinDirty(nowMs int64) error {
	if !s.dirty {
		if err := s.pinAll(); err != nil {
			return err
		}
		s.dirty = true
	}
	s.lastWriteMs = nowMs
	return nil
}

// unpinDirty lets the files close once everything written is synced.
func (s *segment) unpinDirty() {
	if s.dirty {
		s.dirty = false
		s.unpinAll()
	}
}

// removeFiles deletes the segment's files (and its producer snapshot, if
// any). Open handles stay readable until released.
func (s *segment) removeFiles(fsys vfs.FS, dir string) error {
	// Never opened again: a reopen would recreate the file.
	s.dropHandles()
	return removeSegmentFiles(fsys, dir, s.baseOffset)
}

// dropHandles ends the segment's handles: never opened again; open files
// stay readable until released.
func (s *segment) dropHandles() {
	for _, h := range s.handles() {
		h.drop()
	}
}

// removeSegmentFiles deletes the files of the segment at base (with its
// transaction index and producer snapshot, if any); files already gone are
// no error.
func removeSegmentFiles(fsys vfs.FS, dir string, base int64) error {
	var errs []error
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix, snapshotSuffix} {
		if err := fsys.Remove(segmentFileName(dir, base, suffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
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
			s.indexesDirty = true
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
		s.indexesDirty = false
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
