package engine

import (
	"errors"
	"fmt"

	"github.com/wren-broker/wren/engine/batch"
)

// TruncateTo removes every batch whose last offset is >= offset: a
// follower whose log diverged from the leader's (KIP-101/279). A batch
// that straddles offset goes whole, so the log end offset may end up below
// offset. The truncation is durable when it returns. Appenders still
// waiting for durability of removed batches get an error.
func (l *Log) TruncateTo(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if err := l.health.check(); err != nil {
		return err
	}
	if err := l.damagedLocked(); err != nil {
		return err
	}
	if err := l.finishDirWorkLocked(); err != nil {
		return err
	}
	if offset >= l.logEndOffset {
		// Nothing to cut but a leader epoch that starts at the log end:
		// a leader that was deposed before it appended anything leaves
		// one (AssignLeaderEpoch), and a follower must not keep it, or
		// the earlier epoch's batches it copies next sit above an entry
		// that claims them for the later epoch, and a later truncation
		// by that entry cuts committed records (as Kafka's truncateTo).
		if !l.epochs.truncateFromEnd(l.logEndOffset) {
			return nil
		}
		if err := l.epochs.flush(); err != nil {
			return l.failErr(err)
		}
		return nil
	}
	if offset <= l.segments[0].baseOffset {
		return l.truncateFullyAndStartAtLocked(offset)
	}
	// Drop whole segments at or above offset.
	i := l.segmentFor(offset)
	// The segment cut becomes the active one: pinned (opened) before
	// anything changes, so a shortage of descriptors changes nothing.
	if err := l.segments[i].pinDirty(l.nowMs()); err != nil {
		return l.failErr(err)
	}
	// Later segments go first, durably, so a crash cannot bring them back
	// beside a truncated segment as if nothing had been removed. A
	// directory sync that runs out of descriptors leaves the rest of the
	// truncation pending (dirWork): the segment is cut only after the
	// sync, by whichever operation comes next.
	if i+1 < len(l.segments) {
		for _, s := range l.segments[i+1:] {
			if err := s.removeFiles(l.fs, l.dir); err != nil {
				return l.failErr(err)
			}
			s.release()
		}
		l.segments = l.segments[:i+1]
		l.dirWork = &dirWork{
			what:  fmt.Sprintf("truncating to %d", offset),
			steps: []func() error{func() error { return l.fs.SyncDir(l.dir) }},
			then:  func() error { return l.truncateActiveLocked(offset) },
		}
		return l.finishDirWorkLocked()
	}
	return l.truncateActiveLocked(offset)
}

// truncateActiveLocked is the end of TruncateTo, once no later segment is
// left: it cuts the active segment at offset. Repeatable.
func (l *Log) truncateActiveLocked(offset int64) error {
	seg := l.active()
	if err := l.truncateSegment(seg, offset); err != nil {
		return l.failErr(err)
	}
	l.setLogEndOffsetLocked(seg.nextOffset)
	if err := l.loadProducerState(); err != nil {
		return l.failErr(err)
	}
	if l.epochs.truncateFromEnd(l.logEndOffset) {
		if err := l.epochs.flush(); err != nil {
			return l.failErr(err)
		}
	}
	l.commit.Reset(l.logEndOffset)
	return l.checkpointAfterTruncateLocked()
}

// checkpointAfterTruncateLocked makes the lowered recovery point durable
// (Log.checkpointOnTruncate).
func (l *Log) checkpointAfterTruncateLocked() error {
	if !l.checkpointOnTruncate || l.health.afterTruncate == nil {
		return nil
	}
	if err := l.health.afterTruncate(); err != nil {
		if isTooManyOpenFiles(err) {
			// The truncation stands; the log takes no append until the
			// lowered recovery point is durable (appendLocked retries).
			l.truncateCheckpointPending = true
		}
		return l.failErr(err)
	}
	l.truncateCheckpointPending = false
	return nil
}

// truncateSegment cuts seg before the first batch whose last offset is >=
// offset, fixes its indexes and in-memory state, and syncs it.
func (l *Log) truncateSegment(seg *segment, offset int64) error {
	end := seg.size.Load()
	bp, ok, err := seg.lookupPosition(offset, end)
	if err != nil {
		return err
	}
	if !ok {
		return nil
	}
	if err := seg.offsetIndex.truncateTo(offset); err != nil {
		return err
	}
	if err := seg.timeIndex.truncateTo(offset); err != nil {
		return err
	}
	if err := seg.log.Truncate(bp.Position); err != nil {
		return err
	}
	seg.size.Store(bp.Position)
	if err := seg.rescanTail(l.opts); err != nil {
		return err
	}
	if err := seg.flush(true); err != nil {
		return err
	}
	// The transaction index is cut once the log's cut is durable: a crash
	// before leaves the index whole beside the whole log; after, entries
	// past the log end, which recovery drops (rebuildTxnIndexes).
	seg.abortedLoaded = false
	return truncateTxnIndex(l.fs, l.dir, seg.baseOffset, offset)
}

// rescanTail recomputes a segment's in-memory state (next offset, max
// timestamp, bytes since the last index entry) from its indexes and the
// batches after the last offset index entry.
func (s *segment) rescanTail(opts *Options) error {
	s.nextOffset = s.baseOffset
	s.maxTimestamp, s.offsetOfMaxTimestamp = s.timeIndex.lastTimestamp, s.timeIndex.lastOffset
	if s.timeIndex.entries() == 0 {
		s.maxTimestamp, s.offsetOfMaxTimestamp = noTimestamp, s.baseOffset
	}
	s.rollingBasedTimestamp = noTimestamp
	var pos int64
	if s.offsetIndex.entries() > 0 {
		ip, err := s.offsetIndex.lookup(s.offsetIndex.lastOffset)
		if err != nil {
			return err
		}
		pos = ip.Position
	}
	end := s.size.Load()
	hdr := make([]byte, batch.RecordBatchOverhead)
	first := true
	for pos < end {
		h, err := s.readHeader(pos, hdr)
		if err != nil {
			return err
		}
		if first && pos == 0 {
			s.rollingBasedTimestamp = h.MaxTimestamp
		}
		first = false
		if h.MaxTimestamp > s.maxTimestamp {
			s.maxTimestamp, s.offsetOfMaxTimestamp = h.MaxTimestamp, h.LastOffset()
		}
		if h.BaseOffset < s.nextOffset || h.LastOffset() < h.BaseOffset {
			return fmt.Errorf("%w: %s at %d: offset %d does not follow %d", batch.ErrCorrupt, s.log.Name(), pos, h.BaseOffset, s.nextOffset)
		}
		s.nextOffset = h.LastOffset() + 1
		pos += int64(h.Size())
	}
	if pos != end {
		return fmt.Errorf("%w: %s: last batch runs to %d, past the end %d", batch.ErrCorrupt, s.log.Name(), pos, end)
	}
	s.bytesSinceIndexEntry = 0
	if s.offsetIndex.entries() > 0 {
		ip, _ := s.offsetIndex.lookup(s.offsetIndex.lastOffset)
		s.bytesSinceIndexEntry = end - ip.Position
	} else {
		s.bytesSinceIndexEntry = end
	}
	if s.rollingBasedTimestamp == noTimestamp && end > 0 {
		h, err := s.readHeader(0, hdr)
		if err != nil {
			return err
		}
		s.rollingBasedTimestamp = h.MaxTimestamp
	}
	return nil
}

// TruncateFullyAndStartAt deletes every segment and starts an empty log at
// offset: a follower far behind a leader whose log start moved past it.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if err := l.health.check(); err != nil {
		return err
	}
	if err := l.damagedLocked(); err != nil {
		return err
	}
	return l.truncateFullyAndStartAtLocked(offset)
}

func (l *Log) truncateFullyAndStartAtLocked(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: cannot start the log at %d", ErrOffsetOutOfRange, offset)
	}
	if err := l.finishDirWorkLocked(); err != nil {
		return err
	}
	// The new segment's files are created first, under temporary names
	// that recovery deletes, and stay open: once the old segments start
	// to go, nothing needs a new descriptor but the directory syncs, and
	// a shortage there leaves the rest pending (dirWork) with the log
	// empty at offset, never a log without segments. A shortage here
	// changes nothing.
	seg, err := createSegmentPinned(l.fileDir, offset, l.opts, tmpSuffix)
	if err != nil {
		return l.failErr(err)
	}
	old := l.segments
	l.segments = []*segment{seg}
	// Readers see the two offsets without mu: move them in the order
	// that keeps the start at or below the end at every moment.
	if offset > l.logEndOffset {
		l.setLogEndOffsetLocked(offset)
		l.setLogStartOffsetLocked(offset)
	} else {
		l.setLogStartOffsetLocked(offset)
		l.setLogEndOffsetLocked(offset)
	}
	l.epochs.entries = nil
	if l.commit != nil {
		l.commit.Reset(offset)
	}
	w := &dirWork{what: fmt.Sprintf("truncating fully to start at %d", offset), pinned: seg}
	// The old files go, durably, before the new ones take their names, so
	// a crash never leaves old data beside the new start.
	for _, s := range old {
		s.dropHandles()
		base := s.baseOffset
		w.steps = append(w.steps, func() error { return removeSegmentFiles(l.fs, l.dir, base) })
		s.release()
	}
	w.steps = append(w.steps, func() error { return l.fs.SyncDir(l.dir) })
	for _, suffix := range []string{indexSuffix, timeIndexSuffix, logSuffix} {
		w.steps = append(w.steps, func() error {
			return l.fs.Rename(segmentFileName(l.dir, offset, suffix+tmpSuffix), segmentFileName(l.dir, offset, suffix))
		})
	}
	w.steps = append(w.steps, func() error { return l.fs.SyncDir(l.dir) })
	w.then = func() error {
		if err := l.loadProducerState(); err != nil {
			return l.failErr(err)
		}
		if err := l.epochs.flush(); err != nil {
			return l.failErr(err)
		}
		return l.checkpointAfterTruncateLocked()
	}
	l.dirWork = w
	return l.finishDirWorkLocked()
}

// AdvanceLogStartOffset moves the log start offset up to offset
// (DeleteRecords); the caller checks offset <= high watermark. Segments
// wholly below it are deleted. The new start offset is durable only once
// the log directory's log-start-offset checkpoint is written
// (Manager.DeleteRecords does both).
func (l *Log) AdvanceLogStartOffset(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if offset > l.logEndOffset {
		return fmt.Errorf("%w: log start offset %d beyond log end offset %d", ErrOffsetOutOfRange, offset, l.logEndOffset)
	}
	if err := l.damagedLocked(); err != nil {
		return err
	}
	if offset <= l.logStartOffset {
		return nil
	}
	if err := l.finishDirWorkLocked(); err != nil {
		return err
	}
	l.setLogStartOffsetLocked(offset)
	l.producers.OnLogStartOffsetIncremented(offset)
	if l.epochs.truncateFromStart(offset) {
		if err := l.epochs.flush(); err != nil {
			return l.failErr(err)
		}
	}
	_, err := l.deleteSegmentsLocked(func(s, next *segment) bool {
		return next != nil && next.baseOffset <= l.logStartOffset
	}, l.logEndOffset)
	return err
}

// DeleteOldSegments applies retention.ms and retention.bytes and the log
// start offset: whole segments go, oldest first, never one holding data at
// or above highWatermark. It returns how many segments it deleted.
func (l *Log) DeleteOldSegments(highWatermark int64) (int, error) {
	n, _, err := l.deleteOldSegments(highWatermark, nil)
	return n, err
}

// RetentionHold keeps records from retention.ms and retention.bytes: an
// uplink's records not yet forwarded (package uplink). A segment holding
// an offset at or above Offset is kept, unless the log's bytes from the
// first such segment on exceed MaxBytes (a negative MaxBytes never does):
// then the oldest held segments retention would delete go until they do
// not, and the deletion reports them (RetentionDrop). The log start offset
// (DeleteRecords, a leader's start a follower takes) is never held.
//
// With Cleaner set, the log cleaner of a compacted log cleans nothing at
// or above Offset either (Manager.RunCleaner bounds its pass there, as it
// does at the high watermark): compaction would otherwise remove records
// an uplink has not forwarded yet. The broker sets it on a partition it
// leads while the link's backlog is within its budget (MaxBytes
// negative); past the budget under drop-oldest, and on followers, the
// cleaner compacts as usual.
type RetentionHold struct {
	Offset   int64
	MaxBytes int64
	Cleaner  bool
}

// RetentionDrop is what retention deleted past a RetentionHold: the
// offsets [From, To) at or above the hold's offset and the bytes of the
// segments that held them. Zero when nothing held was deleted.
type RetentionDrop struct {
	From, To, Bytes int64
}

// DeleteOldSegmentsHeld is DeleteOldSegments under hold; it also reports
// what it deleted of what the hold kept (past its MaxBytes).
func (l *Log) DeleteOldSegmentsHeld(highWatermark int64, hold RetentionHold) (int, RetentionDrop, error) {
	return l.deleteOldSegments(highWatermark, &hold)
}

func (l *Log) deleteOldSegments(highWatermark int64, hold *RetentionHold) (int, RetentionDrop, error) {
	var drop RetentionDrop
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, drop, ErrClosed
	}
	if err := l.health.check(); err != nil {
		return 0, drop, err
	}
	if len(l.damage) > 0 {
		// A damaged log changes only by an operator's repair: retention
		// could delete the evidence, or the only good copy before it.
		return 0, drop, nil
	}
	// Transactions in the log: no segment goes past the first unstable
	// offset, so an open transaction keeps its first batch, and a replay
	// of the log from its first segment finds it (txn.go). Markers the high
	// watermark passed no longer count.
	l.producers.OnHighWatermarkUpdated(highWatermark)
	if off, ok := l.producers.FirstUnstableOffset(); ok && off < highWatermark {
		highWatermark = off
	}
	now := l.nowMs()
	var total, held int64
	for i, s := range l.segments {
		sz := s.size.Load()
		total += sz
		if hold != nil && (i+1 == len(l.segments) || l.segments[i+1].baseOffset > hold.Offset) {
			held += sz
		}
	}
	// Hook for the log cleaner: under cleanup.policy=compact alone only
	// the log start offset deletes segments, as in Kafka's
	// UnifiedLog.deleteOldSegments.
	retain := l.opts.CleanupPolicy.Delete()
	excess := int64(-1)
	if retain && l.opts.RetentionBytes >= 0 {
		excess = total - l.opts.RetentionBytes
	}
	n, err := l.deleteSegmentsLocked(func(s, next *segment) bool {
		if next != nil && next.baseOffset <= l.logStartOffset {
			return true
		}
		byTime := retain && l.opts.RetentionMs >= 0 && now-s.largestTimestamp() > l.opts.RetentionMs
		byBytes := excess >= 0 && excess-s.size.Load() >= 0
		if !byTime && !byBytes {
			return false
		}
		if hold != nil && (next == nil || next.baseOffset > hold.Offset) {
			// Held: it goes only while the held bytes are over budget.
			if hold.MaxBytes < 0 || held <= hold.MaxBytes {
				return false
			}
			held -= s.size.Load()
			if drop.To == 0 {
				drop.From = max(s.baseOffset, hold.Offset, l.logStartOffset)
			}
			drop.To = l.logEndOffset
			if next != nil {
				drop.To = next.baseOffset
			}
			drop.Bytes += s.size.Load()
		}
		if !byTime {
			excess -= s.size.Load()
		}
		return true
	}, highWatermark)
	if n == 0 || drop.To <= drop.From {
		// A segment the predicate passed may still have been kept by the
		// high watermark: nothing of it was deleted.
		drop = RetentionDrop{}
	}
	return n, drop, err
}

// deleteSegmentsLocked deletes the oldest segments while shouldDelete says
// so, stopping at the first it keeps. A segment goes only if everything in
// it is below upperBound. Deleting the active segment rolls first, so the
// log always has one.
func (l *Log) deleteSegmentsLocked(shouldDelete func(s, next *segment) bool, upperBound int64) (int, error) {
	if err := l.finishDirWorkLocked(); err != nil {
		return 0, err
	}
	n := 0
	for n < len(l.segments) {
		s := l.segments[n]
		var next *segment
		if n+1 < len(l.segments) {
			next = l.segments[n+1]
		}
		if next == nil {
			if s.empty() || upperBound < l.logEndOffset || !shouldDelete(s, nil) {
				break
			}
		} else if upperBound < next.baseOffset || !shouldDelete(s, next) {
			break
		}
		n++
	}
	if n == 0 {
		return 0, nil
	}
	if n == len(l.segments) {
		if _, err := l.roll(); err != nil {
			return 0, err
		}
	}
	doomed := l.segments[:n]
	l.segments = append([]*segment(nil), l.segments[n:]...)
	if first := l.segments[0].baseOffset; first > l.logStartOffset {
		l.setLogStartOffsetLocked(first)
		l.producers.OnLogStartOffsetIncremented(first)
		if l.epochs.truncateFromStart(first) {
			if err := l.epochs.flush(); err != nil {
				return 0, l.failErr(err)
			}
		}
	}
	var errs []error
	for _, s := range doomed {
		if err := s.removeFiles(l.fs, l.dir); err != nil {
			errs = append(errs, err)
		}
		s.release()
	}
	if err := errors.Join(errs...); err != nil {
		return n, l.failErr(err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return n, l.failErr(err)
	}
	return n, nil
}
