package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/engine/producer"
	"github.com/wren-broker/wren/internal/vfs"
)

// Producer state (idempotence) lives beside the segments as Kafka's
// %020d.snapshot files: the state as of that offset. A snapshot is written
// at every segment roll and at a clean close; recovery loads the newest one
// at or below the log end offset and replays the batches after it. The log
// is the truth: a missing or corrupt snapshot only means a longer replay.

// snapshotsKept is how many snapshot files a log keeps; older ones go.
const snapshotsKept = 3

// snapshotOffsets lists the offsets of the snapshot files in dir, sorted.
func snapshotOffsets(fsys vfs.FS, dir string) ([]int64, error) {
	names, err := fsys.List(dir)
	if err != nil {
		return nil, err
	}
	return snapshotOffsetsIn(names), nil
}

// snapshotOffsetsIn is snapshotOffsets of a directory listing.
func snapshotOffsetsIn(names []string) []int64 {
	var out []int64
	for _, n := range names {
		if off, ok := parseBase(n, snapshotSuffix); ok {
			out = append(out, off)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// loadProducerState rebuilds the state for the log as it is now: from the
// newest usable snapshot at or below the log end offset (and not below the
// first segment, whose batches replay must be able to read), plus a replay
// of every batch after it. Snapshots above the log end offset (left by a
// truncation) are deleted.
func (l *Log) loadProducerState() error { return l.loadProducerStateStats(nil) }

// loadProducerStateStats is loadProducerState reporting to stats (nil
// for none) which snapshot it started from and how much it replayed.
func (l *Log) loadProducerStateStats(stats *RecoveryStats) error {
	return l.loadProducerStateFrom(nil, stats)
}

// loadProducerStateFrom is loadProducerStateStats given the directory's
// current listing (nil: list it), which Open has already.
func (l *Log) loadProducerStateFrom(names []string, stats *RecoveryStats) error {
	_, err := l.loadProducerStateSummary(names, stats, nil)
	return err
}

// loadProducerStateSummary is loadProducerStateFrom taking the snapshot
// that sum (a clean-stop summary's part checked against the directory)
// holds instead of reading its file. It returns the snapshot used, and
// whether it removed snapshots above the log end.
func (l *Log) loadProducerStateSummary(names []string, stats *RecoveryStats, sum *partitionSummary) (usedSnapshot, error) {
	var used usedSnapshot
	opts := producer.Options{}
	if names == nil {
		var err error
		if names, err = l.fs.List(l.dir); err != nil {
			return used, err
		}
	}
	offsets := snapshotOffsetsIn(names)
	for _, n := range names {
		if strings.HasSuffix(n, txnIndexSuffix) {
			l.mayHaveAborted = true
			break
		}
	}
	var st *producer.State
	removed := false
	for i := len(offsets) - 1; i >= 0; i-- {
		off := offsets[i]
		name := segmentFileName(l.dir, off, snapshotSuffix)
		if off > l.logEndOffset {
			if err := l.fs.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return used, err
			}
			removed = true
			continue
		}
		if st != nil || off < l.segments[0].baseOffset {
			continue
		}
		var data []byte
		var err error
		if sum != nil && off == sum.SnapshotOffset {
			data = sum.Snapshot
		} else {
			data, err = vfs.ReadFile(l.fs, name)
		}
		if isOutOfFiles(err) {
			// Not a damaged snapshot: the load is retried (load.go).
			return used, err
		}
		if err == nil {
			st, err = producer.DecodeSnapshot(data, off, opts)
		}
		if err != nil {
			st = nil // fall back to an older snapshot or a full replay
		} else {
			used.offset, used.data = off, data
		}
	}
	used.removed = removed
	if removed {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return used, err
		}
	}
	snapshotUsed := st != nil
	if st == nil {
		st = producer.New(opts)
		st.OnLogStartOffsetIncremented(l.segments[0].baseOffset)
	}
	from := st.MapEndOffset()
	rebuilt := map[*segment][]abortedTxn{}
	replayed, err := l.replayProducerStateTxns(st, from, func(s *segment, c producer.CompletedTxn) error {
		if c.Aborted {
			rebuilt[s] = append(rebuilt[s], abortedTxn{ProducerID: c.ProducerID, FirstOffset: c.FirstOffset,
				LastOffset: c.LastOffset, LastStableOffset: c.LastStableOffset})
		}
		return nil
	})
	if err != nil {
		return used, err
	}
	if err := l.rebuildTxnIndexes(from, rebuilt, names); err != nil {
		return used, err
	}
	if stats != nil {
		stats.ProducerBatchesReplayed = replayed
		if snapshotUsed {
			stats.ProducerSnapshotOffset = from
		}
	}
	l.producers = st
	return used, nil
}

// usedSnapshot says which snapshot a load started from (data nil: none)
// and whether it removed any.
type usedSnapshot struct {
	offset  int64
	data    []byte
	removed bool
}

// replayProducerState applies every batch at or after from to st, and
// says how many it read. Damaged ranges are stepped over.
//
// onCompleted, if not nil, is told of every transaction a marker in segment
// s completed (recovery rebuilds transaction indexes with it).
func (l *Log) replayProducerState(st *producer.State, from int64) (int64, error) {
	return l.replayProducerStateTxns(st, from, nil)
}

func (l *Log) replayProducerStateTxns(st *producer.State, from int64, onCompleted func(*segment, producer.CompletedTxn) error) (int64, error) {
	var replayed int64
	hdr := make([]byte, batch.RecordBatchOverhead)
	for i := l.segmentFor(from); i < len(l.segments); i++ {
		s := l.segments[i]
		if s.nextOffset <= from {
			continue
		}
		var pos int64
		if from > s.baseOffset {
			ip, err := s.offsetIndex.lookup(from)
			if err != nil {
				return replayed, err
			}
			pos = ip.Position
		}
		end := s.size.Load()
		for pos < end {
			if next := l.skipDamage(s, pos); next != pos {
				pos = next
				continue
			}
			h, err := s.readHeader(pos, hdr)
			if err != nil {
				return replayed, fmt.Errorf("engine: replaying producer state from %s at %d: %w", s.log.Name(), pos, err)
			}
			if h.BaseOffset >= from && h.BaseOffset >= st.MapEndOffset() {
				if h.IsControl() && h.HasProducerID() {
					m, err := s.readMarker(pos, h)
					if err != nil {
						return replayed, fmt.Errorf("engine: replaying producer state from %s at %d: %w", s.log.Name(), pos, err)
					}
					if c, ok := st.ApplyControl(h, m); ok && onCompleted != nil {
						if err := onCompleted(s, c); err != nil {
							return replayed, err
						}
					}
				} else {
					st.Apply(h)
				}
				replayed++
			}
			pos += int64(h.Size())
		}
	}
	return replayed, nil
}

// writeProducerSnapshot writes the state as of the log end offset and
// drops old snapshots. Called under l.mu.
func (l *Log) writeProducerSnapshot() error {
	_, _, _, err := l.writeProducerSnapshotMemo(nil)
	return err
}

// writeProducerSnapshotMemo is writeProducerSnapshot, returning the
// snapshot's offset and bytes, and whether it changed the directory. memo, if not nil, is a snapshot known to
// be on disk as it says (a clean load read it, and the directory has not
// changed since): the same snapshot is not even read back.
func (l *Log) writeProducerSnapshotMemo(memo *loadedState) (int64, []byte, bool, error) {
	if l.producers.MapEndOffset() < l.logEndOffset {
		l.producers.OnLogStartOffsetIncremented(l.logEndOffset)
	}
	off := l.producers.MapEndOffset()
	name := segmentFileName(l.dir, off, snapshotSuffix)
	data := l.producers.AppendSnapshot(nil)
	if memo != nil && memo.snapshot != nil && memo.snapshotOffset == off && bytes.Equal(memo.snapshot, data) {
		return off, data, false, nil
	}
	if off == 0 && l.producers.Len() == 0 {
		// An empty log (offset 0 is its end): a load without a snapshot
		// replays nothing and finds this state, so no file is written,
		// as Kafka writes none (its snapshot waits for an offset past
		// the last one). The first clean stop after creating 10,000
		// partitions wrote 10,000 of them, each a new inode, a page of
		// cache, two fsyncs and a rename, all charged to a small memory
		// cgroup at once.
		return off, data, false, nil
	}
	if old, err := vfs.ReadFile(l.fs, name); err == nil && bytes.Equal(old, data) {
		// An idle partition's clean close finds the snapshot it loaded:
		// rewriting it would cost two fsyncs and a rename per partition
		// at every stop. Were the file not durable yet, a crash would
		// only mean a longer replay.
		return off, data, false, nil
	}
	if err := vfs.WriteFileAtomic(l.fs, name, data); err != nil {
		return 0, nil, true, err
	}
	offsets, err := snapshotOffsets(l.fs, l.dir)
	if err != nil {
		return 0, nil, true, err
	}
	for len(offsets) > snapshotsKept {
		if err := l.fs.Remove(segmentFileName(l.dir, offsets[0], snapshotSuffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, nil, true, err
		}
		offsets = offsets[1:]
	}
	return off, data, true, nil
}

// readMarker reads the control batch with header h at pos and returns
// its transaction marker, or nil when it holds none (compaction emptied
// it, or another control type).
func (s *segment) readMarker(pos int64, h batch.Header) (*batch.EndTxnMarker, error) {
	buf := make([]byte, h.Size())
	if _, err := s.log.ReadAt(buf, pos); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return markerOf(buf)
}

// markerOf returns the transaction marker of b, one control batch, or nil
// when it holds none.
func markerOf(b []byte) (*batch.EndTxnMarker, error) {
	m, err := batch.ReadEndTxnMarker(b, batch.Limits{})
	if errors.Is(err, batch.ErrNotEndTxnMarker) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// batchBytes returns the bytes of each batch of records, whose headers are
// hs, in order.
func batchBytes(records []byte, hs []batch.Header, i int) []byte {
	var at int
	for j := 0; j < i; j++ {
		at += hs[j].Size()
	}
	return records[at : at+hs[i].Size()]
}

// producerPlan is what a leader append does to the producer state once
// its write succeeded.
type producerPlan struct {
	// replace is the state to install (several batches, checked on a copy).
	replace *producer.State
	// commit are the checked batches to record (one batch, checked on the
	// live state, which nothing changes before the commit: l.mu is held).
	commit []producer.AppendInfo
	// completed are the transactions the markers of replace completed.
	completed []producer.CompletedTxn
}

// checkProducers runs the idempotence checks of a leader append over its
// batches (offsets assigned). It returns the plan to apply after the
// write, or the original of a retried batch to answer with. Several
// batches are tried on a copy so a rejection leaves the state untouched.
func (l *Log) checkProducers(records []byte, hs []batch.Header) (producerPlan, *producer.BatchMetadata, error) {
	if len(hs) == 1 && hs[0].IsControl() {
		// A transaction marker (AppendTxnMarker; clients may not write
		// control batches).
		info, err := checkMarker(l.producers, records, hs[0])
		if err != nil {
			return producerPlan{}, nil, err
		}
		return producerPlan{commit: []producer.AppendInfo{info}}, nil, nil
	}
	if len(hs) == 1 {
		info, err := l.producers.Check(hs[0])
		if err != nil {
			return producerPlan{}, nil, err
		}
		if info.Duplicate {
			return producerPlan{}, &info.Original, nil
		}
		return producerPlan{commit: []producer.AppendInfo{info}}, nil, nil
	}
	var plan producerPlan
	st := l.producers.Clone()
	for i, h := range hs {
		if h.IsControl() {
			info, err := checkMarker(st, batchBytes(records, hs, i), h)
			if err != nil {
				return producerPlan{}, nil, err
			}
			c, _ := st.Commit(info)
			plan.completed = append(plan.completed, c)
			continue
		}
		info, err := st.Check(h)
		if err != nil {
			return producerPlan{}, nil, err
		}
		if info.Duplicate {
			return producerPlan{}, nil, fmt.Errorf("%w: a retried batch of producer %d arrived with %d others in one request",
				producer.ErrOutOfOrderSequence, h.ProducerID, len(hs)-1)
		}
		st.Commit(info)
	}
	plan.replace = st
	return plan, nil, nil
}

// checkMarker checks a leader's control batch b (header h) against st.
func checkMarker(st *producer.State, b []byte, h batch.Header) (producer.AppendInfo, error) {
	m, err := markerOf(b)
	if err != nil {
		return producer.AppendInfo{}, err
	}
	if m == nil || !h.HasProducerID() {
		return producer.AppendInfo{}, fmt.Errorf("%w: a leader's control batch at offset %d is no transaction marker with a producer id",
			batch.ErrInvalidRecord, h.BaseOffset)
	}
	return st.CheckMarker(h, *m)
}

// applyProducerPlan records a leader append's batches in the producer
// state, and returns the transactions its markers completed.
func (l *Log) applyProducerPlan(plan producerPlan) []producer.CompletedTxn {
	if plan.replace != nil {
		l.producers = plan.replace
		return plan.completed
	}
	var completed []producer.CompletedTxn
	for _, info := range plan.commit {
		if c, ok := l.producers.Commit(info); ok {
			completed = append(completed, c)
		}
	}
	return completed
}

// applyFollowerBatches records batches already in some log (a follower's
// append) in the producer state, reading the markers of control batches
// from records, and returns the transactions the markers completed.
func (l *Log) applyFollowerBatches(records []byte, hs []batch.Header) []producer.CompletedTxn {
	var completed []producer.CompletedTxn
	var at int
	for _, h := range hs {
		b := records[at : at+h.Size()]
		at += h.Size()
		if !h.IsControl() || !h.HasProducerID() {
			l.producers.Apply(h)
			continue
		}
		// The batch passed validation: an error here is one of a marker's
		// own fields, which leaves the batch without a marker, as Kafka's
		// replay of an unreadable control record would not.
		m, _ := markerOf(b)
		if c, ok := l.producers.ApplyControl(h, m); ok {
			completed = append(completed, c)
		}
	}
	return completed
}

// ProducerStates returns the idempotent producers this partition tracks,
// for DescribeProducers.
func (l *Log) ProducerStates() []producer.Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.producers.Entries()
}

// ProducerState returns a copy of one producer's state in this
// partition, ok false when the partition does not track it.
func (l *Log) ProducerState(producerID int64) (producer.Entry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.producers.LastEntry(producerID)
}

// RemoveExpiredProducers forgets producers idle for expirationMs
// (producer.id.expiration.ms).
func (l *Log) RemoveExpiredProducers(expirationMs int64) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.producers.RemoveExpired(l.nowMs(), expirationMs)
}
