package engine

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/engine/producer"
	"github.com/wren-broker/wren/internal/invariants"
	"github.com/wren-broker/wren/wal"
)

// dirHealth is shared by every log of one log directory: after one write or
// fdatasync error in the directory, none of them acknowledges anything
// again (Kafka marks the whole log dir offline).
type dirHealth struct {
	err    atomic.Pointer[error]
	onFail func(error)
	// onSync observes the fdatasyncs of the directory's logs; nil for none.
	onSync SyncObserver
	// recoverable: the failure's cause was a lack of space, so the
	// directory is recovered in place once space is back (diskspace.go).
	recoverable atomic.Bool
	// space samples the directory's free space; nil for a log opened
	// outside a Manager.
	space *diskSpace
	// handles keeps the directory's segment files within its open-file
	// budget; nil (no budget) for a log opened outside a Manager.
	handles *HandleCache
	// options shares the logs' Options values; nil for a log opened
	// outside a Manager (it then has its own).
	options *sharedOptions
	// afterTruncate is the Manager's Checkpoint, for the logs it adopted
	// (Log.checkpointOnTruncate); nil outside a Manager.
	afterTruncate func() error
}

// SyncObserver is told about one group-commit fdatasync: how long it took,
// how many appends were waiting for it (the group-commit batch), and its
// error. It runs on the appender that ran the sync, so it must be cheap.
type SyncObserver func(took time.Duration, appends int, err error)

func (d *dirHealth) fail(err error) {
	e := fmt.Errorf("%w: %w", ErrLogDirFailed, err)
	if d.err.CompareAndSwap(nil, &e) {
		d.recoverable.Store(isNoSpace(err))
		if d.onFail != nil {
			d.onFail(e)
		}
	}
}

// recover marks the directory healthy again after an in-place recovery.
func (d *dirHealth) recover() {
	d.recoverable.Store(false)
	d.err.Store(nil)
}

func (d *dirHealth) check() error {
	if p := d.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Log is one partition's log: a directory of segments in Kafka's format.
//
// Appends are serialised by mu; the fdatasync that makes them durable runs
// outside it, shared by every appender waiting at the time (group commit).
// Reads take mu only to pick a segment and its end, then read without it.
type Log struct {
	// fileDir is the log's directory (l.fs, l.dir) and the budget its
	// segment files open under, shared with their handles.
	*fileDir
	tp TopicPartition
	// opts is shared with the Manager's other logs of the same options
	// (sharedOptions) and never written through: UpdateOptions points it
	// at another value. Read under mu. Set only through setOptionsLocked,
	// which keeps optsView equal to it.
	opts *Options
	// optsView is opts for Options, which takes no lock: it is called for
	// every partition in every replica round.
	optsView atomic.Pointer[Options]
	// clock is opts.Now, kept apart because it never changes: goroutines
	// that read the time need no lock (UpdateOptions replaces opts).
	clock  func() time.Time
	health *dirHealth
	commit *wal.GroupCommitter

	// cleanMu serialises log cleaning passes; never taken under mu (hook
	// for the log cleaner, cleaner.go).
	cleanMu sync.Mutex

	mu sync.Mutex
	// Clean restarts (doc.go). loaded is set by an Open after a clean
	// stop whose load wrote nothing: the directory and last segment as
	// the load found them, and the producer snapshot it read (nil for
	// none); a Close that finds both stamps unchanged has nothing to sync
	// or rewrite. summary is what Close leaves for the clean-stop summary
	// (nil: nothing). Guarded by mu.
	loaded  *loadedState
	summary *partitionSummary
	// segments are sorted by base offset; the last is the active segment.
	// Invariant: len(segments) >= 1.
	segments []*segment
	// Invariant: logStartOffset <= logEndOffset. Set only through
	// setLogStartOffsetLocked, which keeps logStartOffsetView equal to it.
	logStartOffset int64
	// logStartOffsetView is logStartOffset for checkpoint writers, which
	// must never take mu (a truncation checkpoints while holding it), and
	// for LogStartOffset, which takes no lock.
	logStartOffsetView atomic.Int64
	// logEndOffset is set only through setLogEndOffsetLocked, which keeps
	// logEndOffsetView equal to it for LogEndOffset, which takes no lock
	// (it is called for every partition in every replica round). Where
	// both offsets move, they move in the order that keeps
	// logStartOffsetView <= logEndOffsetView at every moment.
	logEndOffset     int64
	logEndOffsetView atomic.Int64
	epochs           *epochCache
	// producers is the idempotent producers' state as of logEndOffset.
	producers *producer.State
	// mayHaveAborted: some segment may have a transaction index (one was
	// listed at load, or written since). While false, read_committed
	// reads look for no aborted transaction. Guarded by mu; never reset.
	mayHaveAborted bool
	// unflushedMessages counts records appended since the last sync, for
	// flush.messages under FlushInterval.
	unflushedMessages int64
	lastFlushMs       int64
	closed            bool
	// damage lists media damage found in the log, sorted by offset. While
	// it is not empty the log takes no appends and no other change, and
	// reads stop before damage[0] (damage.go).
	damage []Damage
	// heldRecoveryPoint is the recovery point a damaged log was opened
	// with: its checkpoint never moves below it (RecoveryPoint). Atomic,
	// so checkpoint writers never take mu.
	heldRecoveryPoint atomic.Int64
	// fence, when set, is the leadership appends with offsets assigned
	// here must match (FenceLeaderAppends): checked where the append
	// commits, under mu, so an append that raced a leadership change never
	// lands as the old leader.
	fence leaderFence
	// checkpointOnTruncate, set by the Manager when it adopts the log,
	// makes the lowered recovery point durable before a truncation returns
	// (health.afterTruncate, the Manager's Checkpoint, called under mu).
	// Without it, a crash after a truncation and a new unsynced append
	// could leave new bytes below a stale recovery point, which recovery
	// would take for media damage instead of a torn tail. A flag here and
	// one function in the directory's health, where every log held the
	// same function.
	checkpointOnTruncate bool
	// truncateCheckpointPending: a truncation's checkpoint failed for a
	// shortage of descriptors; appends wait for it (under mu).
	truncateCheckpointPending bool
	// dirWork is directory work a shortage of descriptors left pending;
	// nil when there is none (dirwork.go).
	dirWork *dirWork
}

// leaderFence is the leadership a leader append must match.
type leaderFence struct {
	set     bool
	leading bool
	epoch   int32
}

// FenceLeaderAppends says whether this replica leads, and at which leader
// epoch. From then on an append that assigns offsets (Append, AppendAsync)
// is refused with ErrFencedLeaderEpoch unless the replica leads at exactly
// the epoch it carries. Without a call, every epoch is accepted (tools and
// tests that own the log outright).
func (l *Log) FenceLeaderAppends(leading bool, epoch int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fence = leaderFence{set: true, leading: leading, epoch: epoch}
}

// AppendInfo describes a completed append.
type AppendInfo struct {
	FirstOffset int64
	LastOffset  int64
	// LogAppendTime is the broker time stamped on the batches, or -1 under
	// CreateTime.
	LogAppendTime int64
	// MaxTimestamp and OffsetOfMaxTimestamp over the appended batches.
	MaxTimestamp         int64
	OffsetOfMaxTimestamp int64
	RecordCount          int64
	Bytes                int64
	LogStartOffset       int64
	// Duplicate: the batch retried one of its producer's last five; nothing
	// was written and the offsets are the original's.
	Duplicate bool
}

// splitBatches validates records (one or more whole batches) and returns
// their headers. It only reads. Leader appends follow the client rules,
// follower appends those of replication (engine/batch.AppendOrigin).
func (l *Log) splitBatches(records []byte, origin batch.AppendOrigin) ([]batch.Summary, error) {
	opts := l.Options()
	if len(records) == 0 {
		return nil, fmt.Errorf("%w: empty record set", batch.ErrCorrupt)
	}
	if int64(len(records)) > opts.SegmentBytes {
		return nil, fmt.Errorf("%w: %d bytes exceed segment.bytes %d", ErrRecordTooLarge, len(records), opts.SegmentBytes)
	}
	lim := batch.Limits{MaxDecompressedBytes: int(opts.MaxDecompressedBytes), Origin: origin, Budget: opts.DecompressionBudget}
	var out []batch.Summary
	for rest := records; len(rest) > 0; {
		h, err := batch.ParseHeader(rest)
		if err != nil {
			return nil, err
		}
		size := int64(h.Size())
		if size > int64(len(rest)) {
			return nil, fmt.Errorf("%w: batch length %d exceeds the %d bytes sent", batch.ErrCorrupt, size, len(rest))
		}
		if size > opts.MaxMessageBytes {
			return nil, fmt.Errorf("%w: batch of %d bytes exceeds max.message.bytes %d", ErrRecordTooLarge, size, opts.MaxMessageBytes)
		}
		s, err := batch.ValidateSummary(rest[:size], lim)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
		rest = rest[size:]
	}
	return out, nil
}

// Append appends records (whole RecordBatch v2 batches, as a Produce
// request carries them) as the leader: it validates every batch, assigns
// offsets from the log end offset by rewriting each baseOffset, stamps
// leaderEpoch, and writes the bytes as they are. It takes ownership of
// records and edits their headers in place. Under FlushAck it returns after
// an fdatasync covering the append.
func (l *Log) Append(records []byte, leaderEpoch int32) (AppendInfo, error) {
	ss, err := l.splitBatches(records, batch.AppendOriginClient)
	if err != nil {
		return AppendInfo{}, err
	}
	return l.append(records, ss, leaderEpoch, true)
}

// AppendAsFollower appends batches that already carry their offsets and
// leader epochs (replicated from the leader). Their first offset must be
// the log end offset.
func (l *Log) AppendAsFollower(records []byte) (AppendInfo, error) {
	ss, err := l.splitBatches(records, batch.AppendOriginReplication)
	if err != nil {
		return AppendInfo{}, err
	}
	return l.append(records, ss, -1, false)
}

// AppendAsync is Append without the wait: it validates, assigns offsets
// and writes, and returns a wait function that blocks until the append is
// as durable as the flush policy promises (an fdatasync under FlushAck).
// The wire layer appends in request order on a connection and waits
// concurrently, so pipelined requests share one fdatasync.
func (l *Log) AppendAsync(records []byte, leaderEpoch int32) (AppendInfo, func() error, error) {
	ss, err := l.splitBatches(records, batch.AppendOriginClient)
	if err != nil {
		return AppendInfo{}, nil, err
	}
	return l.appendNoWait(records, ss, leaderEpoch, true)
}

func (l *Log) append(records []byte, ss []batch.Summary, leaderEpoch int32, assignOffsets bool) (AppendInfo, error) {
	info, wait, err := l.appendNoWait(records, ss, leaderEpoch, assignOffsets)
	if err != nil {
		return AppendInfo{}, err
	}
	if err := wait(); err != nil {
		return AppendInfo{}, err
	}
	return info, nil
}

func (l *Log) appendNoWait(records []byte, ss []batch.Summary, leaderEpoch int32, assignOffsets bool) (AppendInfo, func() error, error) {
	l.mu.Lock()
	info, err := l.appendLocked(records, ss, leaderEpoch, assignOffsets)
	if err != nil {
		l.mu.Unlock()
		return AppendInfo{}, nil, err
	}
	mustSync := l.opts.FlushPolicy == FlushAck
	if !mustSync && !info.Duplicate {
		l.unflushedMessages += info.RecordCount
		mustSync = l.unflushedMessages >= l.opts.FlushIntervalMessages
	}
	if !mustSync {
		l.mu.Unlock()
		return info, func() error { return nil }, nil
	}
	// Register under the lock that orders writes and truncations, so a
	// truncation between here and the wait cannot go unseen. The caller
	// must call the returned function once.
	w := l.commit.Register(info.LastOffset + 1)
	l.mu.Unlock()
	return info, func() error { return l.checkWait(w.Wait()) }, nil
}

func (l *Log) checkWait(err error) error {
	if err != nil {
		if herr := l.health.check(); herr != nil {
			return herr
		}
	}
	return err
}

// WaitDurable blocks until every offset below offset is durable.
func (l *Log) WaitDurable(offset int64) error { return l.waitDurable(offset) }

func (l *Log) appendLocked(records []byte, ss []batch.Summary, leaderEpoch int32, assignOffsets bool) (AppendInfo, error) {
	if l.closed {
		return AppendInfo{}, ErrClosed
	}
	if err := l.health.check(); err != nil {
		return AppendInfo{}, err
	}
	if err := l.damagedLocked(); err != nil {
		return AppendInfo{}, err
	}
	if err := l.finishDirWorkLocked(); err != nil {
		return AppendInfo{}, err
	}
	if l.truncateCheckpointPending {
		if err := l.checkpointAfterTruncateLocked(); err != nil {
			return AppendInfo{}, err
		}
	}
	if f := l.fence; assignOffsets && f.set && (!f.leading || f.epoch != leaderEpoch) {
		return AppendInfo{}, fmt.Errorf("%w: %s: append at leader epoch %d, replica leads=%v at epoch %d", ErrFencedLeaderEpoch, l.tp, leaderEpoch, f.leading, f.epoch)
	}
	now := l.nowMs()
	info := AppendInfo{FirstOffset: l.logEndOffset, LogAppendTime: -1, MaxTimestamp: noTimestamp}
	next := l.logEndOffset
	var at int64
	hs := make([]batch.Header, len(ss))
	for i := range ss {
		h := &ss[i].Header
		b := records[at : at+int64(h.Size())]
		at += int64(h.Size())
		if assignOffsets {
			batch.SetBaseOffset(b, next)
			batch.SetPartitionLeaderEpoch(b, leaderEpoch)
			h.BaseOffset, h.PartitionLeaderEpoch = next, leaderEpoch
			// Kafka trusts the records' timestamps over the header's
			// maxTimestamp (LogValidator) and fixes the header in place.
			ts, tsType := ss[i].MaxRecordTimestamp, batch.CreateTime
			if l.opts.MessageTimestampType == LogAppendTime {
				ts, tsType = now, batch.LogAppendTime
				info.LogAppendTime = now
			}
			if ts != h.MaxTimestamp || tsType != h.TimestampType() {
				if err := batch.SetMaxTimestamp(b, tsType, ts); err != nil {
					return AppendInfo{}, err
				}
				h.MaxTimestamp = ts
			}
		} else if h.BaseOffset < next {
			return AppendInfo{}, fmt.Errorf("%w: batch base offset %d is below the log end offset %d", ErrInvalidOffsets, h.BaseOffset, next)
		} else if i == 0 && h.BaseOffset != next {
			return AppendInfo{}, fmt.Errorf("%w: first batch offset %d is not the log end offset %d", ErrInvalidOffsets, h.BaseOffset, next)
		}
		if h.MaxTimestamp > info.MaxTimestamp {
			info.MaxTimestamp, info.OffsetOfMaxTimestamp = h.MaxTimestamp, h.LastOffset()
		}
		info.RecordCount += int64(h.RecordCount)
		next = h.LastOffset() + 1
		hs[i] = *h
	}
	info.LastOffset = next - 1
	info.Bytes = int64(len(records))

	var plan producerPlan
	if assignOffsets {
		p, dup, err := l.checkProducers(records, hs)
		if err != nil {
			return AppendInfo{}, err
		}
		if dup != nil {
			return AppendInfo{FirstOffset: dup.FirstOffset(), LastOffset: dup.LastOffset, LogAppendTime: -1,
				MaxTimestamp: dup.Timestamp, OffsetOfMaxTimestamp: dup.LastOffset, LogStartOffset: l.logStartOffset, Duplicate: true}, nil
		}
		plan = p
	}

	seg, err := l.maybeRoll(int64(len(records)), hs[0].MaxTimestamp, info.LastOffset, now)
	if err != nil {
		return AppendInfo{}, err
	}
	// The files stay open until a sync covers this write; a shortage of
	// descriptors fails the append here, before anything is written.
	if err := seg.pinDirty(now); err != nil {
		return AppendInfo{}, l.failErr(err)
	}
	// A write that runs out of space is undone back to the mark.
	mark := markSegment(seg)
	pos := seg.size.Load()
	if _, err := seg.log.WriteAt(records, pos); err != nil {
		return AppendInfo{}, l.appendFailed(mark, err)
	}
	if err := seg.indexBatches(hs, pos, l.opts); err != nil {
		return AppendInfo{}, l.appendFailed(mark, err)
	}
	seg.size.Store(pos + int64(len(records)))
	for _, h := range hs {
		if l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset) {
			if err := l.epochs.flush(); err != nil {
				l.epochs.truncateFromEnd(l.logEndOffset)
				return AppendInfo{}, l.appendFailed(mark, err)
			}
		}
	}
	l.health.space.noteWritten(int64(len(records)))
	l.setLogEndOffsetLocked(next)
	var completed []producer.CompletedTxn
	if assignOffsets {
		completed = l.applyProducerPlan(plan)
	} else {
		completed = l.applyFollowerBatches(records, hs)
	}
	if err := l.completedTxnsLocked(seg, completed); err != nil {
		// The marker is written and counted: a transaction index that
		// cannot take its entry fails the directory, like an index write.
		l.fail(err)
		return AppendInfo{}, l.health.check()
	}
	info.LogStartOffset = l.logStartOffset
	if invariants.Enabled {
		l.checkAppendLocked(seg, hs)
	}
	return info, nil
}

// checkAppendLocked panics when an append left the log's offsets out of
// order: its batches' offsets rise within the active segment, which ends
// at the log end offset, and neither the log start offset nor the durable
// offset is past the log end, and the lock-free views of the offsets and
// options agree with what mu guards. It runs under mu at the end of every
// append, in a build with the invariants tag (internal/invariants).
func (l *Log) checkAppendLocked(seg *segment, hs []batch.Header) {
	prev := seg.baseOffset - 1
	for _, h := range hs {
		if h.BaseOffset <= prev || h.LastOffset() < h.BaseOffset {
			panic(fmt.Sprintf("engine: %s: appended batch %d-%d after offset %d in segment %d", l.tp, h.BaseOffset, h.LastOffset(), prev, seg.baseOffset))
		}
		prev = h.LastOffset()
	}
	if seg != l.active() || seg.nextOffset != l.logEndOffset || prev+1 != l.logEndOffset {
		panic(fmt.Sprintf("engine: %s: append ended at %d in segment %d (next offset %d, active %v), log end offset %d",
			l.tp, prev, seg.baseOffset, seg.nextOffset, seg == l.active(), l.logEndOffset))
	}
	if durable := l.commit.Durable(); l.logStartOffset > l.logEndOffset || durable > l.logEndOffset {
		panic(fmt.Sprintf("engine: %s: log start offset %d, durable offset %d, log end offset %d", l.tp, l.logStartOffset, durable, l.logEndOffset))
	}
	// The lock-free getters read the views: they must equal what mu guards.
	if start, end := l.logStartOffsetView.Load(), l.logEndOffsetView.Load(); start != l.logStartOffset || end != l.logEndOffset || l.optsView.Load() != l.opts {
		panic(fmt.Sprintf("engine: %s: log start offset %d, log end offset %d, but the lock-free views say %d and %d (options same: %v)",
			l.tp, l.logStartOffset, l.logEndOffset, start, end, l.optsView.Load() == l.opts))
	}
}

// maybeRoll returns the segment the next append goes to, rolling first
// when Kafka would: the segment is full, its first batch is older than
// segment.ms, an index is full, or offsets would overflow 32-bit relative
// offsets.
func (l *Log) maybeRoll(size, maxTimestamp, lastOffset, now int64) (*segment, error) {
	seg := l.active()
	if seg.empty() {
		return seg, nil
	}
	var waited int64
	if seg.rollingBasedTimestamp != noTimestamp && maxTimestamp != noTimestamp {
		waited = maxTimestamp - seg.rollingBasedTimestamp
	} else {
		waited = now - seg.createdMs
	}
	if seg.size.Load()+size <= l.opts.SegmentBytes &&
		waited < l.opts.SegmentMs &&
		!seg.offsetIndex.full() && !seg.timeIndex.full() &&
		lastOffset-seg.baseOffset <= 1<<31-1 {
		return seg, nil
	}
	return l.roll()
}

// roll closes the active segment (final time index entry, trimmed and
// synced indexes, synced data) and starts a new one at the log end offset.
// The old segment's data is durable when it returns.
func (l *Log) roll() (*segment, error) {
	old := l.active()
	// Pinned first, so a shortage of descriptors stops the roll before it
	// changes anything in the old segment.
	if err := old.pinAll(); err != nil {
		return nil, l.failErr(err)
	}
	defer old.unpinAll()
	if err := old.onBecomeInactive(); err != nil {
		return nil, l.rollFailed(old, err)
	}
	if err := l.writeProducerSnapshot(); err != nil {
		return nil, l.rollFailed(old, err)
	}
	seg, err := createSegment(l.fileDir, l.logEndOffset, l.opts)
	if err != nil {
		return nil, l.rollFailed(old, err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		seg.closeFiles()
		return nil, l.failErr(err)
	}
	l.segments = append(l.segments, seg)
	l.commit.Advance(l.logEndOffset)
	// Everything the old segment holds is synced: its files may close.
	old.unpinDirty()
	return seg, nil
}

// Roll forces a new active segment, if the active one has data.
func (l *Log) Roll() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if l.active().empty() {
		return nil
	}
	if err := l.finishDirWorkLocked(); err != nil {
		return err
	}
	_, err := l.roll()
	return err
}

func (l *Log) active() *segment { return l.segments[len(l.segments)-1] }

func (l *Log) fail(err error) {
	l.health.fail(fmt.Errorf("%s: %w", l.tp, err))
	l.commit.Fail(l.health.check())
}

// failErr fails the log directory for err and returns the directory's
// error, unless err is a shortage of file descriptors: that fails only the
// operation (ErrTooManyOpenFiles, retriable), which made no change yet
// (operations that change several files pin them all first), and the
// directory stays healthy.
func (l *Log) failErr(err error) error {
	if isTooManyOpenFiles(err) {
		if !errors.Is(err, ErrTooManyOpenFiles) {
			err = fmt.Errorf("%w: %s: %w", ErrTooManyOpenFiles, l.tp, err)
		}
		return err
	}
	l.fail(err)
	return l.health.check()
}

// syncActive is the group committer's sync: fdatasync the active segment,
// covering the log end offset read before it started. A roll between the
// read and the sync already synced the older segment itself.
func (l *Log) syncActive() (int64, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return 0, ErrClosed
	}
	seg, leo := l.active(), l.logEndOffset
	if !seg.dirty {
		// Nothing written since the files were last synced (a dirty pin
		// lasts until then): no descriptor to open for a sync.
		l.mu.Unlock()
		return leo, nil
	}
	seg.acquire()
	// Every append registers its waiter under mu right after writing, so
	// the waiters now are the appends this sync covers.
	appends := 0
	if l.health.onSync != nil {
		appends = l.commit.Waiting()
	}
	l.mu.Unlock()
	defer seg.release()
	start := time.Now()
	err := seg.log.SyncData()
	if l.health.onSync != nil {
		l.health.onSync(time.Since(start), appends, err)
	}
	if err != nil {
		if isTooManyOpenFiles(err) {
			return 0, err
		}
		l.fail(err)
		return 0, err
	}
	l.mu.Lock()
	l.unflushedMessages = 0
	l.lastFlushMs = l.nowMs()
	if seg == l.active() && l.logEndOffset == leo && !seg.indexesDirty {
		// Everything written to the segment is synced (index entries
		// wait for releaseIdle, which fsyncs them): its files may go
		// back to the cache, so partitions written once in a while do
		// not keep descriptors pinned.
		seg.unpinDirty()
	}
	l.mu.Unlock()
	return leo, nil
}

func (l *Log) waitDurable(offset int64) error {
	l.mu.Lock()
	w := l.commit.Register(offset)
	l.mu.Unlock()
	return l.checkWait(w.Wait())
}

// Flush makes everything appended so far durable.
func (l *Log) Flush() error {
	l.mu.Lock()
	leo := l.logEndOffset
	l.mu.Unlock()
	return l.waitDurable(leo)
}

// releaseIdle lets the active segment's files close (into the handle
// cache, which may evict them) once the log has written nothing for idleMs
// and everything it wrote is durable: the indexes are fsynced first if
// they took entries since their last sync. An idle partition then holds no
// descriptor pinned.
func (l *Log) releaseIdle(now, idleMs int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || len(l.segments) == 0 {
		return nil
	}
	seg := l.active()
	if !seg.dirty || now-seg.lastWriteMs < idleMs || l.commit.Durable() < l.logEndOffset || l.health.check() != nil {
		return nil
	}
	if seg.indexesDirty {
		if err := seg.offsetIndex.f.Sync(); err != nil {
			return l.failErr(err)
		}
		if err := seg.timeIndex.f.Sync(); err != nil {
			return l.failErr(err)
		}
		seg.indexesDirty = false
	}
	seg.unpinDirty()
	return nil
}

// flushIfDue is flush.ms under FlushInterval.
func (l *Log) flushIfDue(now int64) error {
	l.mu.Lock()
	due := l.opts.FlushPolicy == FlushInterval && l.unflushedMessages > 0 && now-l.lastFlushMs >= l.opts.FlushIntervalMs
	l.mu.Unlock()
	if !due {
		return nil
	}
	return l.Flush()
}

// nowMs is the log's clock in milliseconds.
func (l *Log) nowMs() int64 {
	if l.clock == nil {
		return time.Now().UnixMilli()
	}
	return l.clock().UnixMilli()
}

// Options returns the log's current options. It takes no lock: the
// options a log points at are never written through.
func (l *Log) Options() Options { return *l.optsView.Load() }

func (l *Log) setOptionsLocked(o *Options) {
	l.opts = o
	l.optsView.Store(o)
}

// UpdateOptions applies changed topic configs (retention, segment size,
// flush policy...) from the next append or retention run on.
func (l *Log) UpdateOptions(o Options) error {
	if err := o.validate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	o.Now = l.opts.Now
	if sameOptions(l.opts, &o) {
		// The image is applied to every partition again and again: the
		// usual call changes nothing and keeps the shared value.
		return nil
	}
	l.setOptionsLocked(l.health.options.get(l.tp.Topic, o))
	return nil
}

// LogEndOffset is the offset the next append gets. It takes no lock.
func (l *Log) LogEndOffset() int64 { return l.logEndOffsetView.Load() }

func (l *Log) setLogEndOffsetLocked(offset int64) {
	l.logEndOffset = offset
	l.logEndOffsetView.Store(offset)
}

func (l *Log) setLogStartOffsetLocked(offset int64) {
	l.logStartOffset = offset
	l.logStartOffsetView.Store(offset)
}

// LogStartOffset is the first offset a reader may fetch. It takes no
// lock.
func (l *Log) LogStartOffset() int64 { return l.logStartOffsetView.Load() }

// DurableOffset is the offset below which every appended byte is on disk.
func (l *Log) DurableOffset() int64 { return l.commit.Durable() }

// RecoveryPoint is the offset below which recovery need not scan. A
// damaged log keeps the one it was opened with, if that was higher.
func (l *Log) RecoveryPoint() int64 {
	return max(l.commit.Durable(), l.heldRecoveryPoint.Load())
}

// TopicPartition names the log.
func (l *Log) TopicPartition() TopicPartition { return l.tp }

// Dir is the log's directory.
func (l *Log) Dir() string { return l.dir }

// Size is the bytes of all segments.
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, s := range l.segments {
		n += s.size.Load()
	}
	return n
}

// SegmentInfo describes one segment, for tools and tests.
type SegmentInfo struct {
	BaseOffset   int64
	NextOffset   int64
	Size         int64
	MaxTimestamp int64
}

// Segments lists the segments, oldest first.
func (l *Log) Segments() []SegmentInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]SegmentInfo, len(l.segments))
	for i, s := range l.segments {
		out[i] = SegmentInfo{BaseOffset: s.baseOffset, NextOffset: s.nextOffset, Size: s.size.Load(), MaxTimestamp: s.maxTimestamp}
	}
	return out
}

// LeaderEpochs returns the leader epoch cache's entries.
func (l *Log) LeaderEpochs() []EpochEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs.snapshot()
}

// AssignLeaderEpoch records that leader epoch starts at the log end
// offset, as Kafka does when a replica becomes leader, so
// OffsetForLeaderEpoch knows the epoch before its first append.
func (l *Log) AssignLeaderEpoch(epoch int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if len(l.damage) > 0 {
		// A damaged log takes no appends, so no epoch starts in it; the
		// epoch is assigned when the repaired log next becomes leader.
		return nil
	}
	if !l.epochs.assign(epoch, l.logEndOffset) {
		return nil
	}
	if err := l.epochs.flush(); err != nil {
		return l.failErr(err)
	}
	return nil
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch for this log.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs.endOffsetFor(epoch, l.logEndOffset)
}

// segmentFor returns the index of the segment holding offset: the last
// segment whose base offset is <= offset.
func (l *Log) segmentFor(offset int64) int {
	i := sort.Search(len(l.segments), func(i int) bool { return l.segments[i].baseOffset > offset })
	if i == 0 {
		return 0
	}
	return i - 1
}

// Close syncs everything, trims the active segment's indexes and closes
// the files. The log end offset becomes the recovery point.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	var errs []error
	pending := false
	if l.health.check() == nil && l.dirWork != nil {
		// Unfinished, it is left to the next load, as a crash at this
		// point would be; the log took no append since.
		if err := l.finishDirWorkLocked(); err != nil {
			errs = append(errs, err)
			pending = true
		}
	}
	if l.health.check() == nil && !pending {
		errs = append(errs, l.closeFilesLocked())
	}
	l.dropDirWorkLocked()
	l.closed = true
	segs := l.segments
	l.mu.Unlock()
	for _, s := range segs {
		s.release()
	}
	return errors.Join(errs...)
}
