package engine

// Log compaction: Kafka's log cleaner (LogCleaner.scala, Cleaner) for logs
// whose cleanup.policy includes compact.
//
// # What a cleaning pass does
//
// The log is split at two offsets. Below firstDirtyOffset (the log's
// entry in the data directory's cleaner-offset-checkpoint) the log was
// compacted before: the clean part. From there up to
// firstUncleanableOffset lies the dirty part. firstUncleanableOffset is the
// base of the first segment that may not be cleaned: the active segment,
// a segment reaching the high watermark (the caller's upper bound, lowered
// by Manager.RunCleaner to an uplink's cursor where a RetentionHold binds
// the cleaner), or one holding a record younger than min.compaction.lag.ms.
//
//  1. Build the offset map: key hash → latest offset, over the dirty part,
//     as far as the dedupe buffer holds (whole batches; endOffset is where
//     it stopped).
//  2. Group the segments below endOffset (clean and dirty) into runs that
//     fit one segment of segment.bytes, and rewrite each run into one new
//     segment "<base>.log.cleaned" (with indexes) keeping, per batch, the
//     records that are the latest of their key. Every kept record keeps
//     its offset; a batch keeps its baseOffset and lastOffsetDelta, so
//     offsets go missing inside and between batches, never move.
//  3. Swap the new segment in for the run, crash-safely (below).
//
// The next pass starts its dirty part at endOffset.
//
// # Which records stay (Kafka's shouldRetainRecord and checkBatchRetention)
//
//   - A record at or above endOffset: it was not mapped.
//   - A record without a key goes. Kafka refuses such records on
//     compacted topics at produce time; the cleaner drops any that exist.
//   - A record whose key the map holds at a later offset goes.
//   - A tombstone (null value) stays until its batch's delete horizon
//     passes. The horizon is set, in the batch's baseTimestamp with
//     attribute bit 6 (KIP-534), to now + delete.retention.ms by the first
//     pass that keeps the tombstone, so a consumer that started before
//     that pass has at least delete.retention.ms to see the delete.
//   - Transactions (cleaner_txn.go, Kafka's rules): records of aborted
//     transactions go (and are never mapped); a COMMIT or ABORT marker
//     stays while a batch of its transaction does, then gets a delete
//     horizon and goes after it (a producer's last marker, and a run's
//     last batch, stay). Nothing at or past the first unstable offset is
//     cleaned. A segment with a transaction index only starts a run
//     (cleanSeg.aborted), so its index stays with it; the rewritten index
//     keeps the entries of the ABORT markers that stayed for their
//     batches.
//   - A batch left with no records still stays, as an empty batch (header
//     only), when it is its producer's last batch: it carries the
//     sequence and epoch that idempotence needs. It stays too when it is
//     the last batch of a run, so that the new segment ends where the run
//     ended: recovery of an interrupted swap relies on that (below).
//   - A batch whose records all stay and that needs no new horizon is
//     copied byte for byte; any other is re-encoded with the same codec.
//
// # Crash-safe swap (Kafka's replaceSegments, and LogLoader on restart)
//
// The .cleaned files are written and fsynced while appends go on; only
// the swap takes the log lock. Under it the cleaner checks that the run's
// segments are still in the log unchanged (a truncation, retention or a
// close in the meantime aborts the pass: the .cleaned files go, nothing
// changed), then:
//
//  1. renames the new index files, then the new log file, from .cleaned to
//     .swap. The .log.swap is the commit point;
//  2. checks the new segment through the descriptors it wrote with (they
//     follow the files through renames and stay pinned until step 3 is
//     done) and puts it in the log in place of the run;
//  3. fsyncs the directory, deletes the run's other segments' files,
//     renames the .swap files to their final names (the log file last),
//     over the files of the run's first segment, whose base offset the
//     new segment keeps, and fsyncs the directory again.
//
// A shortage of descriptors in step 1 undoes it (the pass aborts); in
// step 3 it leaves the rest of step 3 pending (dirwork.go), finished
// before the log's next change or by the next load, as after a crash.
//
// On open (completeSwaps, before any other recovery), .cleaned files are
// deleted: the old segments are all still there. A .log.swap is
// completed: its batches span [base, next), where next is where the run
// ended because its last batch is always kept; every other .log, .index
// and .timeindex with a base in that range belongs to the run and goes,
// then the .log.swap takes its final name and its indexes are rebuilt by
// a scan. Index .swap files are deleted. So after a crash the log holds,
// run by run, either the old segments or the new one, never a mix.
//
// The cleaner never touches producer snapshots or the leader epoch
// cache: the offsets it keeps are the offsets they describe.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// ErrCleanerBufferTooSmall: the dedupe buffer cannot hold the keys of one
// batch, so the cleaner cannot make progress on the log.
var ErrCleanerBufferTooSmall = errors.New("engine: log cleaner dedupe buffer too small")

// errCleaningAborted: the log changed under the cleaner (truncation,
// retention, close); the pass stops and nothing is lost.
var errCleaningAborted = errors.New("engine: log cleaning aborted")

// defaultCleanerIOBufferBytes is Kafka's log.cleaner.io.buffer.size.
const defaultCleanerIOBufferBytes = 512 << 10

// CleanConfig says how one cleaning pass over a log runs.
type CleanConfig struct {
	// UpperBound: nothing at or above it is cleaned, so a segment reaching
	// it is not touched. The high watermark (Kafka cleans below the last
	// stable offset, which is the high watermark without transactions).
	UpperBound int64
	// FirstDirtyOffset is where the part not yet compacted starts: the
	// log's cleaner-offset-checkpoint entry. Below the log start offset or
	// above the log end offset it is taken as the log start offset.
	FirstDirtyOffset int64
	// DedupeBufferBytes sizes the key map (log.cleaner.dedupe.buffer.size):
	// 24 bytes a key, filled to 90%.
	DedupeBufferBytes int64
	// IOBufferBytes is the read chunk and write buffer size
	// (log.cleaner.io.buffer.size); zero means 512 KiB. A batch larger
	// than it is read whole.
	IOBufferBytes int
	// Throttler caps the pass's reads and writes; nil means no cap.
	Throttler *Throttler

	// offsetMap, when set, is used instead of a map of DedupeBufferBytes
	// (the Manager reuses one across logs and runs).
	offsetMap *offsetMap
}

// CleanResult reports a cleaning pass.
type CleanResult struct {
	// FirstDirtyOffset is where the pass started mapping keys, and
	// FirstUncleanableOffset where the cleanable part ended.
	FirstDirtyOffset       int64
	FirstUncleanableOffset int64
	// EndOffset: the log below it is compacted; the log's next
	// cleaner-offset-checkpoint entry. Below FirstUncleanableOffset when
	// the key map filled up.
	EndOffset int64
	// Aborted: the log changed under the pass (truncation, retention,
	// close, or the context ended) and it stopped. Runs already swapped
	// stay swapped; EndOffset must not be checkpointed.
	Aborted bool
	// SegmentsCleaned old segments were replaced by SegmentsWritten new ones.
	SegmentsCleaned int
	SegmentsWritten int
	BytesRead       int64
	BytesWritten    int64
	// RecordsRead and RecordsRetained count the records of the rewritten
	// segments, before and after.
	RecordsRead     int64
	RecordsRetained int64
	// NextDeleteHorizonMs is the earliest delete horizon among the
	// tombstones kept, or -1: a pass at or after it removes tombstones.
	NextDeleteHorizonMs int64
}

// cleanSeg is a segment the pass may clean, with its extent when the pass
// was planned (inactive segments do not change unless the log removes or
// truncates them, which the swap checks for).
type cleanSeg struct {
	seg  *segment
	size int64
	next int64
	// aborted: the segment has a transaction index (or it could not be
	// read). Such a segment only starts a run, never joins one: the run's
	// new segment takes the first segment's name, and with it that
	// segment's .txnindex, whose markers cleaning keeps.
	aborted bool
}

// cleanPlan is what the pass took from the log under its lock.
type cleanPlan struct {
	segs             []cleanSeg
	firstDirty       int64
	firstUncleanable int64
	nowMs            int64
	opts             Options
	// producerLastOffsets maps each producer the log tracks to the last
	// offset of its last batch: that batch always stays.
	producerLastOffsets map[int64]int64
	// producerEpochs is each tracked producer's epoch: its last marker,
	// when nothing of the producer follows it, stays (cleaner_txn.go).
	producerEpochs map[int64]int16
	// aborted are the transaction index entries of the aborted
	// transactions with batches in the planned segments.
	aborted []abortedTxn
}

func (p *cleanPlan) release() {
	for _, s := range p.segs {
		s.seg.release()
	}
	p.segs = nil
}

// cleanableRangeLocked returns how many leading segments may be cleaned
// (never the active one, none reaching upperBound, none with a record
// younger than min.compaction.lag.ms), the first offset not cleanable, and
// the effective first dirty offset. Called under l.mu.
//
// Transactions in the log: nothing at or past the first unstable offset is
// cleanable (Kafka's cleaner stops at the last stable offset), so an open
// transaction's batches and a marker not yet replicated are never cleaned.
func (l *Log) cleanableRangeLocked(firstDirty, upperBound, nowMs int64) (n int, firstUncleanable, dirty int64) {
	// upperBound is at most the high watermark: markers below it are
	// replicated.
	l.producers.OnHighWatermarkUpdated(upperBound)
	if off, ok := l.producers.FirstUnstableOffset(); ok && off < upperBound {
		upperBound = off
	}
	lag := l.opts.MinCompactionLagMs
	// A damaged log is left as it is until repaired: nothing in it is
	// cleanable (Damage).
	for n < len(l.segments)-1 && len(l.damage) == 0 {
		s := l.segments[n]
		if s.nextOffset > upperBound {
			break
		}
		if lag > 0 && s.largestTimestamp() > nowMs-lag {
			break
		}
		n++
	}
	firstUncleanable = l.segments[n].baseOffset
	if firstDirty < l.logStartOffset || firstDirty > l.logEndOffset {
		firstDirty = l.logStartOffset
	}
	return n, firstUncleanable, firstDirty
}

func (l *Log) planClean(cfg CleanConfig) (*cleanPlan, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	if err := l.health.check(); err != nil {
		return nil, err
	}
	if err := l.finishDirWorkLocked(); err != nil {
		if isTooManyOpenFiles(err) {
			return nil, errCleaningAborted
		}
		return nil, err
	}
	now := l.nowMs()
	n, firstUncleanable, firstDirty := l.cleanableRangeLocked(cfg.FirstDirtyOffset, cfg.UpperBound, now)
	p := &cleanPlan{
		firstDirty: firstDirty, firstUncleanable: firstUncleanable, nowMs: now, opts: *l.opts,
		producerLastOffsets: map[int64]int64{}, producerEpochs: map[int64]int16{},
	}
	for _, e := range l.producers.Entries() {
		if b, ok := e.LastBatch(); ok {
			p.producerLastOffsets[e.ProducerID] = b.LastOffset
		}
		p.producerEpochs[e.ProducerID] = e.ProducerEpoch
	}
	if n > 0 {
		aborted, err := l.collectAbortedEntriesLocked(l.segments[0].baseOffset, firstUncleanable)
		if err != nil {
			// The aborted transactions decide what goes: without them
			// nothing is cleaned.
			return nil, err
		}
		p.aborted = aborted
	}
	for _, s := range l.segments[:n] {
		aborted := false
		if l.mayHaveAborted {
			entries, err := s.abortedTxnsLocked(l.fileDir)
			aborted = err != nil || len(entries) > 0
		}
		s.acquire()
		p.segs = append(p.segs, cleanSeg{seg: s, size: s.size.Load(), next: s.nextOffset, aborted: aborted})
	}
	return p, nil
}

// Clean runs one cleaning pass (see the comment at the top of this file):
// it compacts the log from its start up to where the key map of the dirty
// part ends, never touching the active segment or anything at or above
// cfg.UpperBound. Appends and reads go on meanwhile; passes on one log are
// serialised. A log whose cleanup.policy does not include compact is left
// alone. The log's clock gives now for delete horizons and the compaction
// lag.
//
// Errors: ErrClosed, the log directory's failure (a write, sync or rename
// error fails it, as appends do), a read or corruption error (runs not yet
// swapped are left as they were), ErrCleanerBufferTooSmall, the context's
// error (with Aborted set).
func (l *Log) Clean(ctx context.Context, cfg CleanConfig) (CleanResult, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	res := CleanResult{NextDeleteHorizonMs: -1}
	if !l.Options().CleanupPolicy.Compact() {
		return res, nil
	}
	p, err := l.planClean(cfg)
	if errors.Is(err, errCleaningAborted) {
		// Directory work of an earlier swap is still pending: tried again
		// at the next pass.
		res.Aborted = true
		return res, nil
	}
	if err != nil {
		return res, err
	}
	defer p.release()
	res.FirstDirtyOffset, res.FirstUncleanableOffset, res.EndOffset = p.firstDirty, p.firstUncleanable, p.firstDirty
	if len(p.segs) == 0 {
		return res, nil
	}
	m := cfg.offsetMap
	if m == nil {
		if m, err = newOffsetMap(cfg.DedupeBufferBytes); err != nil {
			return res, err
		}
	} else {
		m.clear()
	}
	c := &cleaner{log: l, ctx: ctx, cfg: cfg, plan: p, offsets: m, res: &res,
		lim: batch.Limits{MaxDecompressedBytes: int(p.opts.MaxDecompressedBytes), Origin: batch.AppendOriginReplication}}
	if c.cfg.IOBufferBytes <= 0 {
		c.cfg.IOBufferBytes = defaultCleanerIOBufferBytes
	}
	end, err := c.buildOffsetMap()
	if err != nil {
		return res, c.aborted(err)
	}
	c.endOffset = end
	res.EndOffset = max(end, p.firstDirty)
	c.txn = newTxnScan(p.aborted)
	for _, g := range c.groupSegments() {
		if err := c.cleanGroup(g); err != nil {
			return res, c.aborted(err)
		}
		c.done += len(g)
	}
	return res, nil
}

// cleaner is one pass's working state.
type cleaner struct {
	log       *Log
	ctx       context.Context
	cfg       CleanConfig
	plan      *cleanPlan
	offsets   *offsetMap
	res       *CleanResult
	lim       batch.Limits
	endOffset int64
	// txn walks the transactions over the runs, in order
	// (cleaner_txn.go); index collects the entries the run being
	// rewritten keeps in its transaction index.
	txn   *txnScan
	index []abortedTxn

	// done counts the planned segments already cleaned (swapped out or
	// left as they were): plan.segs[done:] must still be in the log.
	done int

	// Scratch buffers, kept across batches and segments.
	keep     []bool
	rewriter batchRewriter
	readBuf  []byte
	batchBuf []byte
}

// aborted turns an error into the pass's outcome: a change of the log
// under the pass is an abort, not a failure.
func (c *cleaner) aborted(err error) error {
	if errors.Is(err, errCleaningAborted) || c.ctx.Err() != nil {
		c.res.Aborted = true
		if cerr := c.ctx.Err(); cerr != nil {
			return cerr
		}
		return nil
	}
	return err
}

// changedUnder reports whether the log was closed, failed or lost one of
// the planned segments: a read error is then the change's doing.
func (c *cleaner) changedUnder() bool {
	l := c.log
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.health.check() != nil {
		return true
	}
	want := c.plan.segs[c.done:]
	i := 0
	for _, s := range l.segments {
		if i < len(want) && s == want[i].seg {
			i++
		}
	}
	return i != len(want)
}

// readError wraps a read failure, or reports an abort when the log
// changed under the pass.
func (c *cleaner) readError(s *segment, err error) error {
	if c.changedUnder() || errors.Is(err, errHandleDropped) || isTooManyOpenFiles(err) {
		return errCleaningAborted
	}
	return fmt.Errorf("engine: log cleaner reading %s: %w", s.log.Name(), err)
}

// buildOffsetMap maps every keyed record of the dirty part, segment by
// segment, until the map is full. It returns the offset where mapping
// stopped: firstUncleanable, or the base of the first batch that did not
// fit.
func (c *cleaner) buildOffsetMap() (int64, error) {
	p := c.plan
	if p.firstDirty >= p.firstUncleanable {
		return p.firstUncleanable, nil
	}
	mapped := false
	// The aborted transactions the walk from firstDirty meets: their
	// batches are not mapped.
	var aborted []abortedTxn
	for _, a := range p.aborted {
		if a.LastOffset >= p.firstDirty {
			aborted = append(aborted, a)
		}
	}
	scan := newTxnScan(aborted)
	for _, s := range p.segs {
		if s.next <= p.firstDirty {
			continue
		}
		var start int64
		if p.firstDirty > s.seg.baseOffset {
			ip, err := s.seg.offsetIndex.lookup(p.firstDirty)
			if err != nil {
				return 0, c.readError(s.seg, err)
			}
			start = ip.Position
		}
		r := c.newReader(s, start)
		for {
			h, b, _, err := r.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return 0, c.readError(s.seg, err)
			}
			if h.LastOffset() < p.firstDirty {
				continue
			}
			if h.IsControl() {
				m, err := markerOf(b)
				if err != nil {
					return 0, c.readError(s.seg, err)
				}
				scan.onMarker(h, m)
				continue
			}
			if scan.onBatch(h) {
				// An aborted transaction's: never maps a key, so it
				// never shadows a committed record.
				continue
			}
			if !c.offsets.room(int(h.RecordCount)) {
				if !mapped {
					return 0, fmt.Errorf("%w: the batch at %d of %s has %d records, the map holds %d keys",
						ErrCleanerBufferTooSmall, h.BaseOffset, c.log.tp, h.RecordCount, c.offsets.maxEntries)
				}
				return h.BaseOffset, nil
			}
			err = batch.Records(b, c.lim, func(rec batch.Record) error {
				if rec.Offset >= p.firstDirty && rec.Key != nil {
					hk := hashKey(rec.Key)
					c.offsets.put(&hk, rec.Offset)
				}
				return nil
			})
			if err != nil {
				return 0, c.readError(s.seg, err)
			}
			mapped = true
			if err := c.ctx.Err(); err != nil {
				return 0, err
			}
		}
	}
	return p.firstUncleanable, nil
}

// groupSegments splits the segments below endOffset into runs that fit in
// one segment (Kafka's groupSegmentsBySize): their bytes and index entries
// within segment.bytes and segment.index.bytes, their offsets within the
// 32-bit relative offsets of one segment.
func (c *cleaner) groupSegments() [][]cleanSeg {
	opts := &c.plan.opts
	maxEntriesOffset := opts.SegmentIndexBytes / offsetIndexEntrySize
	maxEntriesTime := opts.SegmentIndexBytes / timeIndexEntrySize
	var segs []cleanSeg
	for _, s := range c.plan.segs {
		if s.seg.baseOffset < c.endOffset {
			segs = append(segs, s)
		}
	}
	var groups [][]cleanSeg
	for len(segs) > 0 {
		g := segs[:1]
		size := segs[0].size
		offsetEntries := segs[0].seg.offsetIndex.entries()
		timeEntries := segs[0].seg.timeIndex.entries()
		for len(g) < len(segs) {
			n := segs[len(g)]
			if n.aborted || size+n.size > opts.SegmentBytes ||
				offsetEntries+n.seg.offsetIndex.entries() > maxEntriesOffset ||
				timeEntries+n.seg.timeIndex.entries() > maxEntriesTime ||
				n.next-1-g[0].seg.baseOffset > math.MaxInt32 {
				break
			}
			size += n.size
			offsetEntries += n.seg.offsetIndex.entries()
			timeEntries += n.seg.timeIndex.entries()
			g = segs[:len(g)+1]
		}
		groups = append(groups, g)
		segs = segs[len(g):]
	}
	return groups
}

// cleanGroup rewrites one run of segments into a .cleaned segment and
// swaps it in.
func (c *cleaner) cleanGroup(g []cleanSeg) error {
	l := c.log
	base := g[0].seg.baseOffset
	last := -1 // the run's last segment with data: its last batch stays
	for i, s := range g {
		if s.size > 0 {
			last = i
		}
	}
	if last < 0 {
		return nil
	}
	c.index = c.index[:0]
	out, err := createCleanedSegment(l.fs, l.dir, base, &c.plan.opts)
	if err != nil {
		removeCleanedFiles(l.fs, l.dir, base)
		return c.writeError(err)
	}
	w := &cleanedWriter{seg: out, opts: &c.plan.opts, bufferBytes: c.cfg.IOBufferBytes, throttle: c.throttle}
	changed := len(g) > 1
	discard := func() {
		out.closeFiles()
		removeCleanedFiles(l.fs, l.dir, base)
	}
	for i, s := range g[:last+1] {
		r := c.newReader(s, 0)
		for {
			h, b, pos, err := r.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				discard()
				return c.readError(s.seg, err)
			}
			isLast := i == last && pos+int64(h.Size()) == s.size
			ch, err := c.filterBatch(w, h, b, isLast)
			if err != nil {
				discard()
				if errors.Is(err, errWrite) {
					return c.writeError(err)
				}
				return c.readError(s.seg, err)
			}
			changed = changed || ch
			if err := c.ctx.Err(); err != nil {
				discard()
				return err
			}
		}
	}
	if !changed {
		// One segment, byte for byte the same: nothing to swap.
		discard()
		return nil
	}
	if err := w.finish(); err != nil {
		discard()
		return c.writeError(err)
	}
	next := out.nextOffset
	if err := out.closeFiles(); err != nil {
		removeCleanedFiles(l.fs, l.dir, base)
		return c.writeError(err)
	}
	c.res.BytesWritten += w.pos
	return c.swap(g, base, next)
}

// errWrite marks a failed write of the .cleaned files.
var errWrite = errors.New("engine: log cleaner write")

// writeError fails the log directory for a failed write, sync or rename,
// as an append would, unless the log changed under the pass (a deleted
// partition's directory is gone, for one).
func (c *cleaner) writeError(err error) error {
	if c.changedUnder() {
		return errCleaningAborted
	}
	if isTooManyOpenFiles(err) {
		// Not a disk error: the log is untouched and the pass is tried
		// again later.
		return errCleaningAborted
	}
	if isNoSpace(err) {
		// Only the pass's own .cleaned files, removed by the caller, saw
		// the error, a failed sync included: the log is untouched. The
		// pass is tried again later, when retention may have freed space.
		c.log.health.space.afterNoSpace(err)
		return errCleaningAborted
	}
	c.log.fail(err)
	return c.log.health.check()
}

func (c *cleaner) throttle(n int64) error {
	return c.cfg.Throttler.maybeThrottle(c.ctx, n)
}

// filterBatch writes what stays of one batch; changed reports that the
// output differs from the input.
func (c *cleaner) filterBatch(w *cleanedWriter, h batch.Header, b []byte, isLast bool) (changed bool, err error) {
	c.res.RecordsRead += int64(h.RecordCount)
	if h.IsControl() {
		return c.filterMarker(w, h, b, isLast)
	}
	now := c.plan.nowMs
	// Records of an aborted transaction all go.
	abortedTxn := c.txn.onBatch(h)
	c.keep = c.keep[:0]
	kept, tombstones := 0, 0
	err = batch.Records(b, c.lim, func(r batch.Record) error {
		k := !abortedTxn && c.shouldRetain(h, &r, now)
		c.keep = append(c.keep, k)
		if k {
			kept++
			if r.Value == nil {
				tombstones++
			}
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	c.res.RecordsRetained += int64(kept)
	horizon := h.DeleteHorizonMs()
	setHorizon := tombstones > 0 && !h.HasDeleteHorizonMs()
	if setHorizon {
		horizon = satAdd(now, c.plan.opts.DeleteRetentionMs)
	}
	if tombstones > 0 && (c.res.NextDeleteHorizonMs < 0 || horizon < c.res.NextDeleteHorizonMs) {
		c.res.NextDeleteHorizonMs = horizon
	}
	switch {
	case kept == int(h.RecordCount) && !setHorizon:
		c.txn.retained(h)
		return false, w.append(b, h)
	case kept == 0:
		last, isProducers := c.plan.producerLastOffsets[h.ProducerID]
		if (h.HasProducerID() && isProducers && last == h.LastOffset()) || isLast {
			c.txn.retained(h)
			eb := appendEmptyBatch(c.batchBuf[:0], h)
			c.batchBuf = eb
			eh, _ := batch.ParseHeader(eb)
			return true, w.append(eb, eh)
		}
		return true, nil
	}
	c.txn.retained(h)
	out, nh, err := c.rewriter.appendRetained(c.batchBuf[:0], b, h, c.keep, horizon, c.lim)
	if err != nil {
		return false, err
	}
	c.batchBuf = out
	return true, w.append(out, nh)
}

// filterMarker writes what stays of a control batch (cleaner_txn.go): a
// marker whose transaction still has batches stays as it is; one that may
// go first gets a delete horizon, and goes in a pass after it, unless it
// is the run's last batch or its producer's last marker.
func (c *cleaner) filterMarker(w *cleanedWriter, h batch.Header, b []byte, isLast bool) (changed bool, err error) {
	m, err := markerOf(b)
	if err != nil {
		return false, err
	}
	discardable, entry := c.txn.onMarker(h, m)
	if entry != nil {
		c.index = append(c.index, *entry)
	}
	keepAsIs := func() (bool, error) {
		c.res.RecordsRetained += int64(h.RecordCount)
		return false, w.append(b, h)
	}
	if !discardable || isLast || c.producersLastMarker(h) {
		return keepAsIs()
	}
	now := c.plan.nowMs
	switch {
	case h.RecordCount == 0:
		// Nothing left to see in it.
		return true, nil
	case h.HasDeleteHorizonMs() && now >= h.DeleteHorizonMs():
		return true, nil
	case h.HasDeleteHorizonMs():
		c.noteHorizon(h.DeleteHorizonMs())
		return keepAsIs()
	}
	horizon := satAdd(now, c.plan.opts.DeleteRetentionMs)
	c.noteHorizon(horizon)
	c.keep = c.keep[:0]
	for range h.RecordCount {
		c.keep = append(c.keep, true)
	}
	out, nh, err := c.rewriter.appendRetained(c.batchBuf[:0], b, h, c.keep, horizon, c.lim)
	if err != nil {
		return false, err
	}
	c.batchBuf = out
	c.res.RecordsRetained += int64(h.RecordCount)
	return true, w.append(out, nh)
}

// noteHorizon keeps the earliest delete horizon of the pass.
func (c *cleaner) noteHorizon(horizon int64) {
	if c.res.NextDeleteHorizonMs < 0 || horizon < c.res.NextDeleteHorizonMs {
		c.res.NextDeleteHorizonMs = horizon
	}
}

// producersLastMarker reports whether the control batch h is its
// producer's last write: the producer's epoch, and no data batch of it
// after (Kafka keeps it: it carries the epoch that fences zombies).
func (c *cleaner) producersLastMarker(h batch.Header) bool {
	if !h.HasProducerID() {
		return false
	}
	epoch, ok := c.plan.producerEpochs[h.ProducerID]
	if !ok || epoch != h.ProducerEpoch {
		return false
	}
	last, hasData := c.plan.producerLastOffsets[h.ProducerID]
	return !hasData || last < h.BaseOffset
}

// shouldRetain is Kafka's Cleaner.shouldRetainRecord.
func (c *cleaner) shouldRetain(h batch.Header, r *batch.Record, nowMs int64) bool {
	if r.Offset >= c.endOffset {
		return true
	}
	if r.Key == nil {
		return false
	}
	hk := hashKey(r.Key)
	if latest, ok := c.offsets.get(&hk); ok && r.Offset < latest {
		return false
	}
	if r.Value == nil && h.HasDeleteHorizonMs() && nowMs >= h.DeleteHorizonMs() {
		return false
	}
	return true
}

// satAdd is a + b for b >= 0, capped at math.MaxInt64.
func satAdd(a, b int64) int64 {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}

// swap puts the .cleaned segment at base in the log in place of the run g,
// the first of the planned segments not cleaned yet (see the comment at
// the top of the file for the order and why).
func (c *cleaner) swap(g []cleanSeg, base, next int64) error {
	l := c.log
	l.mu.Lock()
	defer l.mu.Unlock()
	abort := func() error {
		removeCleanedFiles(l.fs, l.dir, base)
		return errCleaningAborted
	}
	if l.closed || l.dirWork != nil {
		// Closed, or another change's directory work is pending: that
		// change replaced the run, or comes first.
		return abort()
	}
	if err := l.health.check(); err != nil {
		removeCleanedFiles(l.fs, l.dir, base)
		return err
	}
	// Not only the run must be as planned: the records that made the map
	// must all be there still, or a record could go for one a truncation
	// removed. They lie in the planned segments not cleaned yet, which
	// start with the run.
	rest := c.plan.segs[c.done:]
	if rest[0].seg != g[0].seg {
		panic(fmt.Sprintf("engine: cleaner swapping run at %d, next planned segment is %d", base, rest[0].seg.baseOffset))
	}
	at := -1
	for i, s := range l.segments {
		if s == g[0].seg {
			at = i
			break
		}
	}
	if at < 0 || at+len(rest) >= len(l.segments) {
		return abort()
	}
	for j, s := range rest {
		cur := l.segments[at+j]
		if cur != s.seg || cur.size.Load() != s.size || cur.nextOffset != s.next {
			return abort()
		}
	}
	// The new segment's files are opened now, by their .cleaned names (a
	// descriptor follows its file through the renames), and stay pinned
	// until it is checked: past the commit point no open can fail for want
	// of a descriptor, where failing would leave the log half swapped.
	var hs [3]*handle
	for i, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		cleaned := segmentFileName(l.dir, base, suffix+cleanedSuffix)
		h, err := adoptHandlePinned(l.fileDir, base, suffix,
			func(string) (vfs.File, error) { return l.fs.OpenReadWrite(cleaned) })
		if err != nil {
			for _, g := range hs[:i] {
				g.release()
				g.drop()
			}
			if isTooManyOpenFiles(err) {
				return abort()
			}
			// As writeError, under the lock it takes: the log is untouched.
			removeCleanedFiles(l.fs, l.dir, base)
			if isNoSpace(err) {
				l.health.space.afterNoSpace(err)
				return errCleaningAborted
			}
			l.fail(err)
			return l.health.check()
		}
		hs[i] = h
	}
	seg := newSegment(hs, base, &c.plan.opts)
	// undo takes back what the commit renamed, before the commit point:
	// the old segments are all there, and recovery deletes index .swap
	// files anyway.
	undo := func(err error) error {
		seg.unpinAll()
		seg.closeFiles()
		for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
			l.fs.Remove(segmentFileName(l.dir, base, suffix+swapSuffix))
		}
		removeCleanedFiles(l.fs, l.dir, base)
		if isTooManyOpenFiles(err) {
			return errCleaningAborted
		}
		l.fail(fmt.Errorf("engine: log cleaner swapping in segment %d: %w", base, err))
		return l.health.check()
	}
	// 1. Commit: the .log.swap. A rename that fails did not happen.
	for _, suffix := range []string{indexSuffix, timeIndexSuffix, logSuffix} {
		if err := l.fs.Rename(segmentFileName(l.dir, base, suffix+cleanedSuffix), segmentFileName(l.dir, base, suffix+swapSuffix)); err != nil {
			return undo(err)
		}
	}
	// 2. The new segment, read back through its pinned descriptors and
	// checked as recovery would, takes the run's place in the log.
	if err := seg.loadClean(&c.plan.opts, next); err != nil {
		seg.unpinAll()
		seg.closeFiles()
		l.fail(fmt.Errorf("engine: log cleaner swapping in segment %d: %w", base, err))
		return l.health.check()
	}
	segs := make([]*segment, 0, len(l.segments)-len(g)+1)
	segs = append(segs, l.segments[:at]...)
	segs = append(segs, seg)
	segs = append(segs, l.segments[at+len(g):]...)
	l.segments = segs
	for _, s := range g {
		// The run's files are renamed over or removed below: never
		// reopened by name (readers keep what they pinned).
		s.seg.dropHandles()
		s.seg.release()
	}
	c.res.SegmentsCleaned += len(g)
	c.res.SegmentsWritten++
	// 3. Complete: the .log.swap made durable, the run's other segments'
	// files removed, the .swap files renamed to their final names (the
	// log file last), over the files of the run's first segment, whose
	// base offset the new segment keeps, and the directory synced. The
	// new segment's files stay pinned until then. A shortage of
	// descriptors (a directory sync opens the directory) leaves the rest
	// pending: the next change to the log, or the next load
	// (completeSwaps), finishes it.
	w := &dirWork{what: fmt.Sprintf("engine: log cleaner swapping in segment %d", base), pinned: seg}
	w.steps = append(w.steps, func() error { return l.fs.SyncDir(l.dir) })
	for _, s := range g[1:] {
		old := s.seg.baseOffset
		w.steps = append(w.steps, func() error { return removeSegmentDataFiles(l.fs, l.dir, old) })
	}
	for _, suffix := range []string{indexSuffix, timeIndexSuffix, logSuffix} {
		w.steps = append(w.steps, func() error {
			return l.fs.Rename(segmentFileName(l.dir, base, suffix+swapSuffix), segmentFileName(l.dir, base, suffix))
		})
	}
	w.steps = append(w.steps, func() error { return l.fs.SyncDir(l.dir) })
	l.dirWork = w
	if err := l.finishDirWorkLocked(); err != nil {
		if isTooManyOpenFiles(err) {
			return errCleaningAborted
		}
		return err
	}
	if g[0].aborted {
		// The run's transaction index (only its first segment may have
		// one) keeps the entries of the ABORT markers that stayed because
		// their transactions' batches did. Written once the new segment
		// is in place: an entry left over by a crash before this names
		// records that are gone, which a read_committed reader skips
		// anyway; one missing would show aborted records.
		seg.abortedLoaded = false
		if err := setTxnIndex(l.fs, l.dir, base, c.index); err != nil {
			l.fail(fmt.Errorf("engine: log cleaner writing the transaction index of segment %d: %w", base, err))
			return l.health.check()
		}
	}
	return nil
}

// removeSegmentDataFiles deletes a segment's .log and indexes, leaving
// any producer snapshot of the same offset: cleaning keeps the offsets
// that snapshots describe.
func removeSegmentDataFiles(fsys vfs.FS, dir string, base int64) error {
	var errs []error
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if err := fsys.Remove(segmentFileName(dir, base, suffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeCleanedFiles deletes an abandoned pass's .cleaned files. Errors
// are ignored: recovery deletes .cleaned files anyway.
func removeCleanedFiles(fsys vfs.FS, dir string, base int64) {
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		fsys.Remove(segmentFileName(dir, base, suffix+cleanedSuffix))
	}
}

// createCleanedSegment creates the .cleaned files of a new segment. Its
// indexes are not preallocated: it is written once and never appended to.
func createCleanedSegment(fsys vfs.FS, dir string, base int64, opts *Options) (*segment, error) {
	// Outside the open-file budget: a pass writes one segment at a time,
	// three descriptors of the fixed reserve (log.open.files.max's doc).
	at := &fileDir{fs: fsys, dir: dir}
	var hs [3]*handle
	for i, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		h, err := adoptHandle(at, base, suffix+cleanedSuffix, fsys.Create)
		if err != nil {
			for _, g := range hs[:i] {
				g.drop()
			}
			return nil, err
		}
		hs[i] = h
	}
	return newSegment(hs, base, opts), nil
}

// cleanedWriter appends batches to a .cleaned segment through a buffer,
// indexing them as an append would.
type cleanedWriter struct {
	seg         *segment
	opts        *Options
	bufferBytes int
	throttle    func(int64) error
	buf         []byte
	// flushed bytes are in the file; pos is the end including buf.
	flushed, pos int64
}

func (w *cleanedWriter) append(b []byte, h batch.Header) error {
	if w.pos+int64(len(b)) > segmentBytesMax {
		return fmt.Errorf("%w: cleaned segment %d would pass %d bytes", errWrite, w.seg.baseOffset, int64(segmentBytesMax))
	}
	if h.LastOffset()-w.seg.baseOffset > math.MaxInt32 {
		panic(fmt.Sprintf("engine: cleaned segment %d: batch ending at %d out of relative offset range", w.seg.baseOffset, h.LastOffset()))
	}
	if err := w.seg.indexCleanedBatch(h, w.pos, w.opts); err != nil {
		return fmt.Errorf("%w: %w", errWrite, err)
	}
	w.buf = append(w.buf, b...)
	w.pos += int64(len(b))
	if len(w.buf) >= w.bufferBytes {
		return w.flush()
	}
	return nil
}

func (w *cleanedWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	if _, err := w.seg.log.WriteAt(w.buf, w.flushed); err != nil {
		return fmt.Errorf("%w: %w", errWrite, err)
	}
	n := int64(len(w.buf))
	w.flushed += n
	w.buf = w.buf[:0]
	return w.throttle(n)
}

// finish writes what is buffered, adds the final time index entry, trims
// and syncs the indexes and syncs the log file.
func (w *cleanedWriter) finish() error {
	if err := w.flush(); err != nil {
		return err
	}
	w.seg.size.Store(w.pos)
	if err := w.seg.onBecomeInactive(); err != nil {
		return fmt.Errorf("%w: %w", errWrite, err)
	}
	return nil
}

// indexCleanedBatch is indexBatches for one batch of a cleaned segment,
// except that a full offset index stops taking entries instead of rolling:
// a run of merged segments may have more batches than one index holds,
// and a sparser index only makes lookups scan further.
func (s *segment) indexCleanedBatch(h batch.Header, pos int64, opts *Options) error {
	last := h.LastOffset()
	if pos == 0 {
		s.rollingBasedTimestamp = h.MaxTimestamp
	}
	if h.MaxTimestamp > s.maxTimestamp {
		s.maxTimestamp, s.offsetOfMaxTimestamp = h.MaxTimestamp, last
	}
	if s.bytesSinceIndexEntry > opts.IndexIntervalBytes && !s.offsetIndex.full() {
		if err := s.offsetIndex.append(last, pos); err != nil {
			return err
		}
		if err := s.timeIndex.maybeAppend(s.maxTimestamp, s.offsetOfMaxTimestamp, false); err != nil {
			return err
		}
		s.bytesSinceIndexEntry = 0
	}
	s.bytesSinceIndexEntry += int64(h.Size())
	s.nextOffset = last + 1
	return nil
}

// segmentReader reads the batches of a segment in chunks.
type segmentReader struct {
	c    *cleaner
	f    vfs.File
	end  int64
	pos  int64 // file position of the next batch
	buf  []byte
	at   int64 // file position of buf[0]
	size int   // chunk size
}

// newReader reads s from position start; one reader at a time, as it
// shares the cleaner's read buffer.
func (c *cleaner) newReader(s cleanSeg, start int64) *segmentReader {
	return &segmentReader{c: c, f: s.seg.log, end: s.size, pos: start, at: start, size: c.cfg.IOBufferBytes, buf: c.readBuf[:0]}
}

// next returns the next batch, CRC-checked, and its position; the bytes
// are valid until the following call. io.EOF at the end.
func (r *segmentReader) next() (batch.Header, []byte, int64, error) {
	if r.pos >= r.end {
		return batch.Header{}, nil, 0, io.EOF
	}
	for {
		off := int(r.pos - r.at)
		n, h, err := batch.Scan(r.buf[off:])
		if err == nil {
			pos := r.pos
			r.pos += int64(n)
			return h, r.buf[off : off+n], pos, nil
		}
		if !errors.Is(err, batch.ErrIncomplete) {
			return batch.Header{}, nil, 0, fmt.Errorf("at %d: %w", r.pos, err)
		}
		// Refill from r.pos with at least the n bytes the batch needs, up
		// to a bound: a corrupt length must not make the cleaner allocate
		// a segment's worth. Every batch passed max.message.bytes on
		// append (Kafka's cleaner fails the same way past it).
		if limit := max(r.c.plan.opts.MaxMessageBytes, int64(r.size)); int64(n) > limit {
			return batch.Header{}, nil, 0, fmt.Errorf("%w: batch at %d is %d bytes, over max.message.bytes %d", ErrRecordTooLarge, r.pos, n, r.c.plan.opts.MaxMessageBytes)
		}
		want := int64(max(n, r.size))
		if avail := r.end - r.pos; want > avail {
			if int64(n) > avail {
				return batch.Header{}, nil, 0, fmt.Errorf("%w: batch at %d needs %d bytes, the segment has %d left", batch.ErrCorrupt, r.pos, n, avail)
			}
			want = avail
		}
		if int64(cap(r.buf)) < want {
			r.buf = make([]byte, want)
			r.c.readBuf = r.buf
		}
		r.buf = r.buf[:want]
		// A short read means the file shrank under the cleaner.
		if got, err := r.f.ReadAt(r.buf, r.pos); int64(got) < want {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return batch.Header{}, nil, 0, fmt.Errorf("reading %d bytes at %d: %w", want, r.pos, err)
		}
		r.at = r.pos
		r.c.res.BytesRead += want
		if err := r.c.throttle(want); err != nil {
			return batch.Header{}, nil, 0, err
		}
	}
}
