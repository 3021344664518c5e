package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// Disk pressure: a log directory keeps a free-space floor, measured with
// statfs through the vfs seam. Below it, client appends are refused with
// ErrLogDirFull (retriable: KAFKA_STORAGE_ERROR) while retention, the log
// cleaner, checkpoints and internal writes (group offsets) go on, so that
// space can come back and the metadata that tracks it stays writable.
// Writes resume by themselves once free space is back above the floor plus
// a margin (hysteresis).
//
// A write that still meets ENOSPC or EDQUOT (the floor is off, or another
// program filled the disk between two samples) is undone: the files go back
// to their size before the append, and the append fails with ErrNoSpace,
// retriable; the directory stays healthy, since nothing was acknowledged
// and the bytes below are unchanged. A failed fdatasync fails the
// directory whatever its cause (the kernel may have dropped the dirty
// pages); when the cause was ENOSPC or EDQUOT, the directory is recovered
// in place once space is back: every log is cut to its durable offset
// (nothing above it was acknowledged under flush policy ack), the active
// segment's indexes are rebuilt, everything is synced, and the directory
// is healthy again without a restart. Any other cause (EIO) stays fatal
// until a restart.

var (
	// ErrLogDirFull: the log directory's free space is below its floor;
	// client appends are refused until it is back above
	// (KAFKA_STORAGE_ERROR, which clients retry).
	ErrLogDirFull = errors.New("engine: log directory is below its free-space floor")
	// ErrNoSpace: a write met ENOSPC or EDQUOT and was undone; nothing was
	// acknowledged and the directory stays healthy (KAFKA_STORAGE_ERROR,
	// which clients retry).
	ErrNoSpace = errors.New("engine: no space left in the log directory")
)

// FreeSpaceFloor is a log directory's free-space floor
// (log.dir.min.free.bytes and log.dir.min.free.percent). The floor is the
// smaller of the two, so a byte figure sized for a large disk does not
// swallow a small one; either at 0 turns the floor off.
type FreeSpaceFloor struct {
	MinFreeBytes   int64
	MinFreePercent float64
}

// floorBytes is the floor on a file system of total bytes.
func (f FreeSpaceFloor) floorBytes(total int64) int64 {
	if f.MinFreeBytes <= 0 || f.MinFreePercent <= 0 {
		return 0
	}
	return min(f.MinFreeBytes, int64(float64(total)*f.MinFreePercent/100))
}

// resumeBytes is the free space at which refused writes resume: the floor
// plus an eighth, so that a producer freeing and filling the same few
// bytes (retention deleting one segment while a new one fills) does not
// flip the directory between refusing and accepting on every sample.
func resumeBytes(floor int64) int64 { return floor + floor/8 }

// DiskSpace is a log directory's last free-space sample.
type DiskSpace struct {
	Dir        string
	TotalBytes int64
	FreeBytes  int64
	// FloorBytes is the floor on this file system; 0 when off.
	FloorBytes int64
	// ResumeBytes is the free space at which refused writes resume.
	ResumeBytes int64
	// BelowFloor: client appends are refused.
	BelowFloor bool
	SampledAt  time.Time
}

func (s DiskSpace) String() string {
	return fmt.Sprintf("%s has %d bytes free of %d, floor %d; writes resume at %d", s.Dir, s.FreeBytes, s.TotalBytes, s.FloorBytes, s.ResumeBytes)
}

// DiskSpaceEventKind says what a DiskSpaceEvent reports.
type DiskSpaceEventKind int

const (
	// DiskSpaceBelowFloor: free space fell below the floor; client appends
	// are refused from now on.
	DiskSpaceBelowFloor DiskSpaceEventKind = iota + 1
	// DiskSpaceAboveFloor: free space is back above the resume mark;
	// appends are accepted again.
	DiskSpaceAboveFloor
	// DiskSpaceNoSpace: a write met ENOSPC or EDQUOT and was undone (told
	// once until space comes back).
	DiskSpaceNoSpace
	// DiskSpaceDirRecovered: a directory failed by an fdatasync that ran
	// out of space was recovered in place.
	DiskSpaceDirRecovered
	// DiskSpaceRecoveryFailed: the in-place recovery failed; Err says why.
	// The directory stays failed (until a restart if Err is not a lack of
	// space).
	DiskSpaceRecoveryFailed
)

// DiskSpaceEvent is told to ManagerConfig.OnDiskSpace.
type DiskSpaceEvent struct {
	Kind  DiskSpaceEventKind
	Space DiskSpace
	Err   error
	// For DiskSpaceDirRecovered: the logs recovered, the records and
	// bytes above their durable offsets that were cut (never acknowledged
	// under flush policy ack), and how long it took.
	Logs           int
	RecordsDropped int64
	BytesDropped   int64
	Took           time.Duration
}

const (
	// writeBudgetMinBytes bounds how often appends resample near the
	// floor: at most once per this many bytes written.
	writeBudgetMinBytes = 64 << 10
	// refusedResampleInterval is how often refused appends may resample,
	// so a retrying producer notices returning space quickly without a
	// statfs per request.
	refusedResampleInterval = 100 * time.Millisecond
)

// diskSpace samples one log directory's free space. Appends cost an atomic
// add; a statfs runs when the bytes written since the last sample could
// have used half the headroom above the floor, when a refused append finds
// the last sample older than refusedResampleInterval, right after a write
// met ENOSPC, and whenever the Manager's owner calls SampleDiskSpace.
type diskSpace struct {
	fs    vfs.FS
	dir   string
	floor FreeSpaceFloor
	now   func() time.Time
	tell  func(DiskSpaceEvent)
	// recover is the Manager's in-place recovery, run when a sample finds
	// space back and the directory failed for lack of it.
	recover func(DiskSpace)
	health  *dirHealth

	// mu serialises samples.
	mu sync.Mutex
	// unsupported: the FS cannot report free space; the floor is off.
	unsupported atomic.Bool
	below       atomic.Bool
	// noSpaceTold: DiskSpaceNoSpace was told since space was last fine.
	noSpaceTold atomic.Bool
	last        atomic.Pointer[DiskSpace]
	// written counts bytes appended since the last sample; a sample is due
	// when it reaches budget.
	written atomic.Int64
	budget  atomic.Int64
}

func newDiskSpace(fsys vfs.FS, dir string, floor FreeSpaceFloor, now func() time.Time, tell func(DiskSpaceEvent)) *diskSpace {
	if now == nil {
		now = time.Now
	}
	if tell == nil {
		tell = func(DiskSpaceEvent) {}
	}
	return &diskSpace{fs: fsys, dir: dir, floor: floor, now: now, tell: tell}
}

// sample runs statfs and moves the directory across the floor. It returns
// the new sample, or the error of statfs (the last sample stays).
func (d *diskSpace) sample() (DiskSpace, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sampleLocked(true)
}

// sampleLocked samples; with mayRecover it also runs the in-place
// recovery when due, which takes every log's lock: callers that may hold
// one pass false.
func (d *diskSpace) sampleLocked(mayRecover bool) (DiskSpace, error) {
	st, err := vfs.StatFS(d.fs, d.dir)
	if errors.Is(err, vfs.ErrStatFSUnsupported) {
		d.unsupported.Store(true)
		return DiskSpace{Dir: d.dir}, err
	}
	if err != nil {
		return DiskSpace{Dir: d.dir}, err
	}
	floor := d.floor.floorBytes(st.TotalBytes)
	s := DiskSpace{Dir: d.dir, TotalBytes: st.TotalBytes, FreeBytes: st.FreeBytes,
		FloorBytes: floor, ResumeBytes: resumeBytes(floor), SampledAt: d.now()}
	wasBelow := d.below.Load()
	switch {
	case floor > 0 && !wasBelow && s.FreeBytes < floor:
		s.BelowFloor = true
	case wasBelow && s.FreeBytes < s.ResumeBytes && floor > 0:
		s.BelowFloor = true
	}
	d.below.Store(s.BelowFloor)
	d.last.Store(&s)
	d.written.Store(0)
	d.budget.Store(max((s.FreeBytes-floor)/2, writeBudgetMinBytes))
	if s.BelowFloor != wasBelow {
		kind := DiskSpaceAboveFloor
		if s.BelowFloor {
			kind = DiskSpaceBelowFloor
		}
		d.tell(DiskSpaceEvent{Kind: kind, Space: s})
	}
	if s.FreeBytes >= s.ResumeBytes {
		d.noSpaceTold.Store(false)
		// With the floor off, "space is back" still needs some space.
		enough := s.FreeBytes >= max(s.ResumeBytes, writeBudgetMinBytes)
		if mayRecover && enough && d.health != nil && d.health.recoverable.Load() && d.health.check() != nil && d.recover != nil {
			d.recover(s)
		}
	}
	return s, nil
}

// trySample samples unless another sample is running.
func (d *diskSpace) trySample(mayRecover bool) {
	if d.mu.TryLock() {
		d.sampleLocked(mayRecover)
		d.mu.Unlock()
	}
}

// noteWritten counts appended bytes and samples when they could have used
// half the headroom the last sample saw.
func (d *diskSpace) noteWritten(n int64) {
	if d == nil || d.unsupported.Load() {
		return
	}
	if d.written.Add(n) >= d.budget.Load() {
		d.trySample(false) // under the log's lock
	}
}

// afterNoSpace is told that a write met ENOSPC or EDQUOT: resample at once
// so the floor refuses the next appends before they reach the disk.
func (d *diskSpace) afterNoSpace(err error) {
	if d == nil {
		return
	}
	// Never wait for a sample in progress, nor recover: the caller may
	// hold a log's lock, which an in-place recovery takes.
	d.trySample(false)
	s := DiskSpace{Dir: d.dir}
	if last := d.last.Load(); last != nil {
		s = *last
	}
	if d.noSpaceTold.CompareAndSwap(false, true) {
		d.tell(DiskSpaceEvent{Kind: DiskSpaceNoSpace, Space: s, Err: err})
	}
}

// check returns ErrLogDirFull with the figures while the directory is
// below its floor, resampling first when the last sample is older than
// refusedResampleInterval.
func (d *diskSpace) check() error {
	if d == nil || d.unsupported.Load() {
		return nil
	}
	failedForSpace := d.health != nil && d.health.recoverable.Load() && d.health.check() != nil
	if !d.below.Load() && !failedForSpace {
		return nil
	}
	if last := d.last.Load(); last == nil || d.now().Sub(last.SampledAt) >= refusedResampleInterval {
		d.trySample(true) // callers hold no log lock
	}
	if !d.below.Load() {
		return nil
	}
	if last := d.last.Load(); last != nil {
		return fmt.Errorf("%w: %s", ErrLogDirFull, last)
	}
	return ErrLogDirFull
}

// isNoSpace reports whether err is ENOSPC or EDQUOT.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// isSyncError reports whether err came from fdatasync or fsync (of a file
// or a directory). The os package, MemFS and FaultFS all name these
// operations so in their *fs.PathError. A failed sync is never undone.
func isSyncError(err error) bool {
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Op {
	case "fdatasync", "fsync", "sync":
		return true
	}
	return false
}

// CheckWritable returns nil when the log's directory takes client
// appends: it is healthy and above its free-space floor. Otherwise it
// returns ErrLogDirFailed or ErrLogDirFull with the directory and figures.
// A directory that failed for lack of space and has space again is
// recovered here, so a retrying producer brings writes back.
func (l *Log) CheckWritable() error { return l.health.checkWritable() }

func (d *dirHealth) checkWritable() error {
	spaceErr := d.space.check()
	if err := d.check(); err != nil {
		return err
	}
	return spaceErr
}

// segmentMark is what an append may change in the active segment, so a
// write that ran out of space can be undone.
type segmentMark struct {
	seg                                         *segment
	size                                        int64
	offsetEntries, offsetLast                   int64
	timeEntries, timeLastTimestamp, timeLastOff int64
	nextOffset, maxTimestamp, offsetOfMaxTs     int64
	rollingBasedTimestamp, bytesSinceIndexEntry int64
}

func markSegment(s *segment) segmentMark {
	return segmentMark{seg: s, size: s.size.Load(),
		offsetEntries: s.offsetIndex.entries(), offsetLast: s.offsetIndex.lastOffset,
		timeEntries: s.timeIndex.entries(), timeLastTimestamp: s.timeIndex.lastTimestamp, timeLastOff: s.timeIndex.lastOffset,
		nextOffset: s.nextOffset, maxTimestamp: s.maxTimestamp, offsetOfMaxTs: s.offsetOfMaxTimestamp,
		rollingBasedTimestamp: s.rollingBasedTimestamp, bytesSinceIndexEntry: s.bytesSinceIndexEntry}
}

// restore cuts the segment's files back to the mark and resets its state.
// Files already at the mark's size are left alone: a truncate to the same
// size would give back space reserved by preallocation.
func (m segmentMark) restore() error {
	s := m.seg
	if err := truncateIfLonger(s.log, m.size); err != nil {
		return err
	}
	s.size.Store(m.size)
	for _, x := range []struct {
		idx *index
		n   int64
	}{{&s.offsetIndex.index, m.offsetEntries}, {&s.timeIndex.index, m.timeEntries}} {
		if err := truncateIfLonger(x.idx.f, x.n*x.idx.entrySize); err != nil {
			return err
		}
		x.idx.n.Store(x.n)
	}
	s.offsetIndex.lastOffset = m.offsetLast
	s.timeIndex.lastTimestamp, s.timeIndex.lastOffset = m.timeLastTimestamp, m.timeLastOff
	s.nextOffset, s.maxTimestamp, s.offsetOfMaxTimestamp = m.nextOffset, m.maxTimestamp, m.offsetOfMaxTs
	s.rollingBasedTimestamp, s.bytesSinceIndexEntry = m.rollingBasedTimestamp, m.bytesSinceIndexEntry
	return nil
}

func truncateIfLonger(f vfs.File, size int64) error {
	cur, err := f.Size()
	if err != nil {
		return err
	}
	if cur == size {
		return nil
	}
	return f.Truncate(size)
}

// appendFailed handles an error of an append's write: ENOSPC or EDQUOT
// from a write, or a shortage of descriptors (a leader epoch checkpoint
// that could not be created), is undone and fails only this append;
// anything else (and any failed sync) fails the directory.
func (l *Log) appendFailed(m segmentMark, err error) error {
	if !(isNoSpace(err) || isTooManyOpenFiles(err)) || isSyncError(err) {
		l.fail(err)
		return l.health.check()
	}
	if rerr := m.restore(); rerr != nil {
		l.fail(fmt.Errorf("undoing a write that failed: %w (after %w)", rerr, err))
		return l.health.check()
	}
	if isTooManyOpenFiles(err) {
		return l.failErr(err)
	}
	return l.noSpace(err)
}

// rollFailed handles an error of a roll: the old segment stays active
// (its indexes trimmed, which appends extend again) and the files of the
// new one go, unless a sync failed.
func (l *Log) rollFailed(old *segment, err error) error {
	if !(isNoSpace(err) || isTooManyOpenFiles(err)) || isSyncError(err) {
		l.fail(err)
		return l.health.check()
	}
	// A final time index entry may have landed in part.
	for _, x := range []*index{&old.offsetIndex.index, &old.timeIndex.index} {
		if rerr := truncateIfLonger(x.f, x.entries()*x.entrySize); rerr != nil {
			l.fail(fmt.Errorf("undoing a roll that failed: %w (after %w)", rerr, err))
			return l.health.check()
		}
	}
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		l.fs.Remove(segmentFileName(l.dir, l.logEndOffset, suffix))
	}
	if isTooManyOpenFiles(err) {
		return l.failErr(err)
	}
	return l.noSpace(err)
}

func (l *Log) noSpace(err error) error {
	l.health.space.afterNoSpace(err)
	return fmt.Errorf("%w: %s: %w", ErrNoSpace, l.tp, err)
}

// logRecovery is what recoverAfterNoSpace did to one log.
type logRecovery struct {
	recordsDropped, bytesDropped int64
}

// recoverAfterNoSpace brings a log of a directory that failed for lack of
// space back in place: everything above its durable offset is cut (never
// acknowledged under flush policy ack), the active segment's indexes are
// rebuilt from its batches (index pages whose writeback failed may be
// gone), everything is synced, and the group committer forgets its error.
// Appenders still waiting for cut writes get cause.
func (l *Log) recoverAfterNoSpace(cause error) (logRecovery, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return logRecovery{}, nil
	}
	durable := l.commit.Durable()
	seg := l.active()
	// A roll syncs the old segment before the new one takes appends, so
	// the durable offset lies in the active segment.
	if durable < seg.baseOffset || durable > l.logEndOffset {
		return logRecovery{}, fmt.Errorf("engine: %s: durable offset %d outside the active segment [%d, %d]", l.tp, durable, seg.baseOffset, l.logEndOffset)
	}
	r := logRecovery{recordsDropped: l.logEndOffset - durable}
	if len(l.damage) > 0 && r.recordsDropped == 0 {
		// A damaged log takes no appends: nothing unsynced to cut, and a
		// rebuild would read into the damaged bytes.
		l.commit.Recover(durable, cause)
		return r, nil
	}
	sizeBefore := seg.size.Load()
	if err := rebuildSegmentTo(seg, durable, l.opts); err != nil {
		return r, err
	}
	r.bytesDropped = sizeBefore - seg.size.Load()
	for _, f := range []vfs.File{seg.offsetIndex.f, seg.timeIndex.f} {
		if err := syncRetryingStale(f.Sync); err != nil {
			return r, err
		}
	}
	if err := syncRetryingStale(seg.log.SyncData); err != nil {
		return r, err
	}
	if r.recordsDropped > 0 {
		l.setLogEndOffsetLocked(durable)
		if l.epochs.truncateFromEnd(durable) {
			if err := l.epochs.flush(); err != nil {
				return r, err
			}
		}
		if err := l.loadProducerState(); err != nil {
			return r, err
		}
	}
	l.unflushedMessages = 0
	l.commit.Recover(durable, cause)
	return r, nil
}

// syncRetryingStale syncs once more after a lack-of-space error: Linux
// reports a writeback error on the next fsync of every open file
// description that predates it, so the first sync after the cut may report
// the failure of pages that were above the durable offset and are gone.
// Only a second failure is news.
func syncRetryingStale(sync func() error) error {
	err := sync()
	if err != nil && isNoSpace(err) {
		err = sync()
	}
	return err
}

// rebuildSegmentTo scans seg's batch headers from the start up to offset
// end (which must be a batch boundary), rebuilding both indexes and the
// in-memory state, and cuts the file there. Only bytes below end are read:
// they were synced, while pages above may have been dropped.
func rebuildSegmentTo(s *segment, end int64, opts *Options) error {
	for _, x := range []*index{&s.offsetIndex.index, &s.timeIndex.index} {
		if err := x.truncateEntries(0); err != nil {
			return err
		}
	}
	s.offsetIndex.lastOffset = s.baseOffset
	s.timeIndex.lastTimestamp, s.timeIndex.lastOffset = noTimestamp, s.baseOffset
	s.nextOffset, s.maxTimestamp, s.offsetOfMaxTimestamp = s.baseOffset, noTimestamp, s.baseOffset
	s.rollingBasedTimestamp, s.bytesSinceIndexEntry = noTimestamp, 0
	hdr := make([]byte, batch.RecordBatchOverhead)
	var pos int64
	for s.nextOffset < end {
		h, err := s.readHeader(pos, hdr)
		if err != nil {
			return fmt.Errorf("engine: %s at %d, below the durable offset %d: %w", s.log.Name(), pos, end, err)
		}
		if h.BaseOffset < s.nextOffset || h.LastOffset() >= end {
			return fmt.Errorf("%w: %s at %d: batch [%d, %d] does not continue %d up to the durable offset %d",
				batch.ErrCorrupt, s.log.Name(), pos, h.BaseOffset, h.LastOffset(), s.nextOffset, end)
		}
		if err := s.indexBatches([]batch.Header{h}, pos, opts); err != nil {
			return err
		}
		pos += int64(h.Size())
	}
	if err := truncateIfLonger(s.log, pos); err != nil {
		return err
	}
	s.size.Store(pos)
	return nil
}

// newDiskSpace sets up the directory's free-space sampling and takes a
// first sample, so a broker started on a full disk refuses writes at once.
func (m *Manager) newDiskSpace() *diskSpace {
	d := newDiskSpace(m.fs, m.dir, m.cfg.FreeSpaceFloor, m.cfg.Defaults.Now, m.cfg.OnDiskSpace)
	d.health = m.health
	d.recover = m.recoverNoSpace
	d.sample() // before any log opens: nothing to recover
	return d
}

// SampleDiskSpace measures the directory's free space now (statfs), moves
// it across the floor, and recovers a directory that failed for lack of
// space if space is back. The owner calls it periodically; appends
// resample by themselves as they use up the headroom. It returns
// vfs.ErrStatFSUnsupported when the FS cannot tell (the floor is then off).
func (m *Manager) SampleDiskSpace() (DiskSpace, error) { return m.health.space.sample() }

// DiskSpace returns the last free-space sample; ok is false before the
// first one succeeded.
func (m *Manager) DiskSpace() (s DiskSpace, ok bool) {
	if p := m.health.space.last.Load(); p != nil {
		return *p, true
	}
	return DiskSpace{}, false
}

// CheckWritable returns nil when the directory takes new logs and client
// appends: it is healthy and above its free-space floor. Otherwise it
// returns ErrLogDirFailed or ErrLogDirFull, with the directory and figures.
func (m *Manager) CheckWritable() error { return m.health.checkWritable() }

// recoverNoSpace recovers, in place, a directory that failed because an
// fdatasync ran out of space, now that s shows space back. It runs inside
// a sample (so one at a time). Any failure leaves the directory failed;
// one that is not a lack of space leaves it failed until a restart.
func (m *Manager) recoverNoSpace(s DiskSpace) {
	cause := m.health.check()
	if cause == nil || !m.health.recoverable.Load() {
		return
	}
	start := time.Now()
	ev := DiskSpaceEvent{Kind: DiskSpaceDirRecovered, Space: s}
	waitErr := fmt.Errorf("%w: %s: the write was not durable when the directory ran out of space", ErrNoSpace, m.dir)
	for _, l := range m.Logs() {
		r, err := l.recoverAfterNoSpace(waitErr)
		if err != nil {
			if !isNoSpace(err) && !isTooManyOpenFiles(err) {
				m.health.recoverable.Store(false)
			}
			m.health.space.tell(DiskSpaceEvent{Kind: DiskSpaceRecoveryFailed, Space: s,
				Err: fmt.Errorf("engine: recovering %s after %w: %w", l.tp, cause, err)})
			return
		}
		ev.Logs++
		ev.RecordsDropped += r.recordsDropped
		ev.BytesDropped += r.bytesDropped
	}
	m.health.recover()
	if err := m.Checkpoint(); err != nil {
		ev.Err = err
	}
	ev.Took = time.Since(start)
	m.health.space.tell(ev)
}

// checkpointFailed handles a failed checkpoint write. A checkpoint is
// replaced by a synced temporary file renamed over it, so one that ran out
// of space left the old file whole: the next interval tries again, and
// meanwhile recovery would only scan more. Any other error fails the
// directory.
func (m *Manager) checkpointFailed(err error) error {
	if isTooManyOpenFiles(err) {
		// As a full disk: the old file is whole (or renamed over and
		// synced with the next one); the next interval tries again.
		if !errors.Is(err, ErrTooManyOpenFiles) {
			err = fmt.Errorf("%w: %s: %w", ErrTooManyOpenFiles, m.dir, err)
		}
		return err
	}
	if isNoSpace(err) {
		m.health.space.afterNoSpace(err)
		return fmt.Errorf("%w: %s: %w", ErrNoSpace, m.dir, err)
	}
	m.health.fail(err)
	return m.health.check()
}
