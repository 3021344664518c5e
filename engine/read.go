package engine

import (
	"errors"
	"fmt"
	"io"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
	"github.com/wren-broker/wren/wire"
)

// ReadResult is the answer to a Read. Its slice stays readable, even if
// retention deletes the segment meanwhile, until Release: the result pins
// the segment's file (its descriptor stays open for the sendfile or copy)
// and holds a reference on the segment.
type ReadResult struct {
	// Slice holds whole batches from one segment, except that the last
	// batch may be cut at maxBytes, as Kafka does; clients drop a partial
	// trailing batch. Size is 0 when there is nothing to read.
	Slice wire.FileSlice
	// FirstOffset is the base offset of the first batch in Slice.
	FirstOffset int64
	seg         *segment
}

// Release lets the segment's files close. Safe to call twice.
func (r *ReadResult) Release() {
	if r.seg != nil {
		r.seg.unpinRead()
		r.seg.release()
		r.seg = nil
	}
}

// Bytes copies the slice out, for callers that cannot sendfile (TLS, tests).
func (r *ReadResult) Bytes() ([]byte, error) {
	buf := make([]byte, r.Slice.Size)
	if r.Slice.Size == 0 {
		return buf, nil
	}
	n, err := r.Slice.File.ReadAt(buf, r.Slice.Position)
	if err == io.EOF && int64(n) == r.Slice.Size {
		err = nil
	}
	return buf[:n], err
}

// Read returns batches starting with the one that holds offset, up to
// maxBytes, and never a batch that reaches maxOffset (the high watermark
// for consumers, the log end offset for followers). With minOneMessage the
// first batch is returned whole even if it is larger than maxBytes
// (KIP-74). An offset outside [LogStartOffset, LogEndOffset] is
// ErrOffsetOutOfRange; offset == maxOffset is an empty result.
func (l *Log) Read(offset, maxBytes, maxOffset int64, minOneMessage bool) (*ReadResult, error) {
	return l.read(offset, maxBytes, maxOffset, minOneMessage, false)
}

// ReadWhole is Read with minOneMessage that returns whole batches only:
// where maxBytes cuts a batch, the slice ends before it. A follower
// appends what its leader sends as it is, and a batch cut short is not a
// batch.
func (l *Log) ReadWhole(offset, maxBytes, maxOffset int64) (*ReadResult, error) {
	return l.read(offset, maxBytes, maxOffset, true, true)
}

func (l *Log) read(offset, maxBytes, maxOffset int64, minOneMessage, whole bool) (*ReadResult, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, ErrClosed
	}
	// A damaged log refuses reads of the offsets its damaged ranges held
	// (not out of range: a consumer would reset), serves the rest, and
	// never returns bytes across a damaged range.
	for _, d := range l.damage {
		if offset >= d.FirstOffset && (d.LastOffset < 0 || offset <= d.LastOffset) && offset >= l.logStartOffset {
			l.mu.Unlock()
			return nil, d.errorf()
		}
		if d.FirstOffset > offset && maxOffset > d.FirstOffset {
			maxOffset = d.FirstOffset
		}
	}
	if offset < l.logStartOffset || offset > l.logEndOffset {
		lso, leo := l.logStartOffset, l.logEndOffset
		l.mu.Unlock()
		return nil, fmt.Errorf("%w: %d not in [%d, %d] for %s", ErrOffsetOutOfRange, offset, lso, leo, l.tp)
	}
	if maxOffset > l.logEndOffset {
		maxOffset = l.logEndOffset
	}
	if offset >= maxOffset {
		l.mu.Unlock()
		return &ReadResult{FirstOffset: offset}, nil
	}
	// Snapshot the segments from the one holding offset; a segment's end is
	// fixed for the read by its size now.
	type candidate struct {
		seg       *segment
		end, next int64
		// skips are the segment's damaged byte ranges: never read, not
		// even for a header.
		skips [][2]int64
	}
	var cands []candidate
	for i := l.segmentFor(offset); i < len(l.segments); i++ {
		s := l.segments[i]
		c := candidate{seg: s, end: s.size.Load(), next: s.nextOffset}
		for _, d := range l.damage {
			if d.Segment == s.baseOffset {
				c.skips = append(c.skips, [2]int64{d.Position, d.End})
			}
		}
		s.acquire()
		cands = append(cands, c)
	}
	// The first segment's files are pinned while it is surely in the log,
	// so a deletion from here on cannot take them; later ones are pinned
	// when the read gets to them (rarely: a gap after compaction), and one
	// deleted by then ends the read there.
	first, err := cands[0].seg.pinRead()
	l.mu.Unlock()
	if err != nil {
		for _, c := range cands {
			c.seg.release()
		}
		return nil, l.readFailed(err)
	}

	var result *ReadResult
	stop := false
	for k, c := range cands {
		f := first
		if k > 0 && !(result != nil || err != nil || stop || c.seg.baseOffset >= maxOffset) {
			var perr error
			if f, perr = c.seg.pinRead(); perr != nil {
				c.seg.release()
				if errors.Is(perr, errHandleDropped) {
					stop = true
				} else {
					err = l.readFailed(perr)
				}
				continue
			}
		} else if k > 0 {
			c.seg.release()
			continue
		}
		if result != nil || err != nil || c.seg.baseOffset >= maxOffset {
			c.seg.unpinRead()
			c.seg.release()
			continue
		}
		result, err = readSegment(c.seg, f, c.end, c.next, offset, maxBytes, maxOffset, minOneMessage, whole, c.skips)
		if result == nil {
			c.seg.unpinRead()
			c.seg.release()
		}
	}
	if err != nil {
		if result != nil {
			result.Release()
		}
		return nil, err
	}
	if result == nil {
		// The offset lies in a gap past the last batch (after compaction,
		// or offset == maxOffset inside a batch).
		return &ReadResult{FirstOffset: offset}, nil
	}
	return result, nil
}

// readSegment reads from one segment; nil when no batch in it qualifies.
// On success the result owns the caller's reference to seg.
func readSegment(seg *segment, f vfs.File, end, next, offset, maxBytes, maxOffset int64, minOneMessage, whole bool, skips [][2]int64) (*ReadResult, error) {
	start, ok, err := seg.lookupPositionSkipping(offset, end, skips)
	if err != nil || !ok {
		return nil, err
	}
	if start.BaseOffset >= maxOffset {
		return nil, nil
	}
	maxPos := end
	for _, r := range skips {
		if r[0] > start.Position && r[0] < maxPos {
			maxPos = r[0]
		}
	}
	if maxOffset < next {
		bp, ok, err := seg.translateOffsetSkipping(maxOffset, start.Position, maxPos, skips)
		if err != nil {
			return nil, err
		}
		if ok {
			maxPos = bp.Position
		}
	}
	if maxPos <= start.Position {
		return nil, nil
	}
	size := maxPos - start.Position
	limit := maxBytes
	if minOneMessage && start.Size > limit {
		limit = start.Size
	}
	if size > limit {
		size = limit
		if whole {
			// Below maxPos every batch boundary is one (the segment's end,
			// a batch at maxOffset, a damaged range's start); a cut one
			// is found by walking the headers.
			var err error
			if size, err = seg.wholeBatchesWithin(start.Position, start.Position+size); err != nil {
				return nil, err
			}
		}
	}
	if size <= 0 {
		return nil, nil
	}
	return &ReadResult{
		Slice:       wire.FileSlice{File: f, Position: start.Position, Size: size},
		FirstOffset: start.BaseOffset,
		seg:         seg,
	}, nil
}

// readFailed names the partition in a read's shortage of descriptors
// (ErrTooManyOpenFiles, retriable); other read errors pass as they are.
func (l *Log) readFailed(err error) error {
	if isTooManyOpenFiles(err) && !errors.Is(err, ErrTooManyOpenFiles) {
		return fmt.Errorf("%w: %s: %w", ErrTooManyOpenFiles, l.tp, err)
	}
	return err
}

// ReadBatches is ReadWhole followed by a copy: for tests and tools.
func (l *Log) ReadBatches(offset, maxBytes, maxOffset int64) ([]byte, error) {
	r, err := l.ReadWhole(offset, maxBytes, maxOffset)
	if err != nil {
		return nil, err
	}
	defer r.Release()
	return r.Bytes()
}

// Special timestamps of ListOffsets. Part of the wire protocol.
const (
	LatestTimestamp   = -1
	EarliestTimestamp = -2
	MaxTimestamp      = -3
)

// OffsetForTimestamp answers ListOffsets for a timestamp: the first record
// whose timestamp is >= ts, and that record's timestamp; found is false
// when no record qualifies. Special values: LatestTimestamp (the log end
// offset), EarliestTimestamp (the log start offset), MaxTimestamp (the
// record with the largest timestamp).
func (l *Log) OffsetForTimestamp(ts int64) (offset, timestamp int64, leaderEpoch int32, found bool, err error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return 0, 0, 0, false, ErrClosed
	}
	lso, leo := l.logStartOffset, l.logEndOffset
	epochAt := func(off int64) int32 {
		e := int32(-1)
		for _, ent := range l.epochs.entries {
			if ent.StartOffset <= off {
				e = ent.Epoch
			}
		}
		return e
	}
	switch ts {
	case LatestTimestamp:
		e := epochAt(leo)
		l.mu.Unlock()
		return leo, -1, e, true, nil
	case EarliestTimestamp:
		e := epochAt(lso)
		l.mu.Unlock()
		return lso, -1, e, true, nil
	case MaxTimestamp:
		if err := l.damagedLocked(); err != nil {
			l.mu.Unlock()
			return 0, 0, 0, false, err
		}
		var best *segment
		for _, s := range l.segments {
			if s.maxTimestamp != noTimestamp && (best == nil || s.maxTimestamp > best.maxTimestamp) {
				best = s
			}
		}
		if best == nil {
			l.mu.Unlock()
			return -1, -1, -1, false, nil
		}
		ts, off := best.maxTimestamp, best.offsetOfMaxTimestamp
		e := epochAt(off)
		best.acquire()
		end := best.size.Load()
		_, perr := best.pinRead()
		l.mu.Unlock()
		if perr != nil {
			best.release()
			return 0, 0, 0, false, l.readFailed(perr)
		}
		defer best.release()
		defer best.unpinRead()
		// offsetOfMaxTimestamp is the batch's last offset; Kafka answers
		// with the record that has the timestamp.
		o, t, ok, err := best.findRecordByTimestamp(ts, off, end, lso)
		if err != nil || !ok {
			return off, ts, e, err == nil, err
		}
		return o, t, e, true, nil
	}
	if ts < 0 {
		l.mu.Unlock()
		return 0, 0, 0, false, fmt.Errorf("engine: invalid timestamp %d", ts)
	}
	if err := l.damagedLocked(); err != nil {
		// A search by time could walk into the damaged bytes.
		l.mu.Unlock()
		return 0, 0, 0, false, err
	}
	var cands []*segment
	for _, s := range l.segments {
		if s.maxTimestamp >= ts {
			s.acquire()
			cands = append(cands, s)
		}
	}
	ends := make([]int64, len(cands))
	for i, s := range cands {
		ends[i] = s.size.Load()
	}
	l.mu.Unlock()
	defer func() {
		for _, s := range cands {
			s.release()
		}
	}()
	for i, s := range cands {
		to, err := s.timeIndex.lookup(ts)
		if errors.Is(err, errHandleDropped) {
			continue // deleted since: its offsets are gone
		}
		if err != nil {
			return 0, 0, 0, false, l.readFailed(err)
		}
		o, t, ok, err := s.findRecordByTimestamp(ts, to.Offset, ends[i], lso)
		if errors.Is(err, errHandleDropped) {
			continue
		}
		if err != nil {
			return 0, 0, 0, false, l.readFailed(err)
		}
		if ok {
			l.mu.Lock()
			e := epochAt(o)
			l.mu.Unlock()
			return o, t, e, true, nil
		}
	}
	return -1, -1, -1, false, nil
}

// findRecordByTimestamp scans batches from the one holding startOffset for
// the first record at or after minOffset whose timestamp is >= ts.
func (s *segment) findRecordByTimestamp(ts, startOffset, end, minOffset int64) (int64, int64, bool, error) {
	ip, err := s.offsetIndex.lookup(startOffset)
	if err != nil {
		return 0, 0, false, err
	}
	hdr := make([]byte, batch.RecordBatchOverhead)
	for pos := ip.Position; pos < end; {
		h, err := s.readHeader(pos, hdr)
		if err != nil {
			return 0, 0, false, err
		}
		size := int64(h.Size())
		if h.MaxTimestamp >= ts && h.LastOffset() >= minOffset {
			buf := make([]byte, size)
			if _, err := s.log.ReadAt(buf, pos); err != nil {
				return 0, 0, false, err
			}
			var found bool
			var off, t int64
			err := batch.Records(buf, batch.Limits{MaxDecompressedBytes: maxDecompressedRead, Origin: batch.AppendOriginReplication}, func(r batch.Record) error {
				if !found && r.Offset >= minOffset && r.Timestamp >= ts {
					found, off, t = true, r.Offset, r.Timestamp
				}
				return nil
			})
			if err != nil {
				return 0, 0, false, fmt.Errorf("engine: %s at %d: %w", s.log.Name(), pos, err)
			}
			if found {
				return off, t, true, nil
			}
		}
		pos += size
	}
	return 0, 0, false, nil
}

// maxDecompressedRead caps decompression when the engine itself reads
// records back (timestamp lookups). Batches were capped on append already.
const maxDecompressedRead = 256 << 20
