package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/engine/producer"
	"github.com/wren-broker/wren/internal/vfs"
)

// makeTxnBatch builds a transactional batch of n records of producer pid.
func makeTxnBatch(t tb, pid int64, epoch int16, seq int32, n int, ts int64) []byte {
	t.Helper()
	b := batch.NewBuilder(batch.CompressionNone)
	b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.IsTransactional = pid, epoch, seq, true
	for i := range n {
		b.Append(batch.Record{Timestamp: ts + int64(i), Value: fmt.Appendf(nil, "p%d-s%d", pid, int(seq)+i)})
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func txnIndexOf(t tb, fsys vfs.FS, dir string, base int64) []abortedTxn {
	t.Helper()
	entries, err := readAbortedTxns(fsys, dir, base)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// openTxns prints the open transactions as the log and a snapshot both
// keep them (a snapshot keeps no start time).
func openTxns(l *Log) string {
	var out []string
	for _, o := range l.OpenTxns() {
		out = append(out, fmt.Sprintf("{%d %d %d %d}", o.ProducerID, o.ProducerEpoch, o.FirstOffset, o.LastTimestamp))
	}
	return "[" + strings.Join(out, " ") + "]"
}

// TestTxnMarkersLSOAndIndex: transactional batches open transactions, a
// marker ends one, the LSO follows the oldest open transaction (and an
// unreplicated marker), an ABORT writes a txnindex entry, fencing refuses
// old epochs, and a follower fed the leader's bytes derives the same
// state and index.
func TestTxnMarkersLSOAndIndex(t *testing.T) {
	clock := &testClock{ms: 1_700_000_000_000}
	fsys := vfs.NewMem()
	opts := testOptions(clock)
	l := openTestLog(t, fsys, opts, OpenOptions{})
	defer l.Close()

	mustAppend := func(b []byte) AppendInfo {
		t.Helper()
		info, err := l.Append(b, 0)
		mustNotErr(t, err)
		return info
	}
	mustAppend(makeBatch(t, batch.CompressionNone, 0, 2, 10, clock.ms)) // 0-1, no producer
	a1 := mustAppend(makeTxnBatch(t, 1, 0, 0, 3, clock.ms))             // 2-4
	b1 := mustAppend(makeTxnBatch(t, 2, 0, 0, 2, clock.ms))             // 5-6
	mustAppend(makeTxnBatch(t, 1, 0, 3, 1, clock.ms))                   // 7
	if a1.FirstOffset != 2 || b1.FirstOffset != 5 {
		t.Fatalf("offsets %d %d", a1.FirstOffset, b1.FirstOffset)
	}
	leo := l.LogEndOffset()
	if got := l.LastStableOffset(leo); got != 2 {
		t.Fatalf("LSO %d, want 2 (producer 1's open transaction)", got)
	}
	if got := l.LastStableOffset(1); got != 1 {
		t.Fatalf("LSO below the high watermark: %d, want 1", got)
	}
	if got := openTxns(l); got != "[{1 0 2 1700000000000} {2 0 5 1700000000001}]" {
		t.Fatalf("open transactions %s", got)
	}
	// A non-transactional batch from producer 1 while its transaction is open.
	nb := batch.NewBuilder(batch.CompressionNone)
	nb.ProducerID, nb.ProducerEpoch, nb.BaseSequence = 1, 0, 4
	nb.Append(batch.Record{Timestamp: clock.ms, Value: []byte("x")})
	raw, _ := nb.Build()
	if _, err := l.Append(raw, 0); !errors.Is(err, producer.ErrInvalidTxnState) {
		t.Fatalf("non-transactional batch inside a transaction: %v", err)
	}

	abort, err := l.AppendTxnMarker(TxnMarker{ProducerID: 1, ProducerEpoch: 0, Commit: false, CoordinatorEpoch: 5}, 0)
	mustNotErr(t, err)
	if abort.FirstOffset != 8 {
		t.Fatalf("marker at %d, want 8", abort.FirstOffset)
	}
	// The marker is not below the high watermark yet: producer 1's
	// transaction still holds the LSO.
	if got := l.LastStableOffset(8); got != 2 {
		t.Fatalf("LSO with the marker unreplicated: %d, want 2", got)
	}
	if got := l.LastStableOffset(9); got != 5 {
		t.Fatalf("LSO after the abort: %d, want 5", got)
	}
	want := []abortedTxn{{ProducerID: 1, FirstOffset: 2, LastOffset: 8, LastStableOffset: 5}}
	if got := txnIndexOf(t, fsys, l.Dir(), 0); !slices.Equal(got, want) {
		t.Fatalf("txnindex %+v, want %+v", got, want)
	}

	// Fencing: a coordinator epoch older than the producer's last marker,
	// then a producer epoch older than the partition's.
	if _, err := l.AppendTxnMarker(TxnMarker{ProducerID: 1, ProducerEpoch: 0, Commit: true, CoordinatorEpoch: 4}, 0); !errors.Is(err, producer.ErrCoordinatorFenced) {
		t.Fatalf("old coordinator epoch: %v", err)
	}
	if _, err := l.AppendTxnMarker(TxnMarker{ProducerID: 2, ProducerEpoch: 1, Commit: true, CoordinatorEpoch: 5}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendTxnMarker(TxnMarker{ProducerID: 2, ProducerEpoch: 0, Commit: false, CoordinatorEpoch: 5}, 0); !errors.Is(err, producer.ErrInvalidProducerEpoch) {
		t.Fatalf("old producer epoch: %v", err)
	}
	if got := l.LastStableOffset(l.LogEndOffset()); got != l.LogEndOffset() {
		t.Fatalf("LSO with no transaction open: %d, want %d", got, l.LogEndOffset())
	}
	// A new transaction of producer 1, left open.
	open := mustAppend(makeTxnBatch(t, 1, 0, 4, 1, clock.ms))
	leo = l.LogEndOffset()
	if got := l.LastStableOffset(leo); got != open.FirstOffset {
		t.Fatalf("LSO %d, want %d", got, open.FirstOffset)
	}

	// A follower fed the leader's bytes derives the same state and index.
	ffs := vfs.NewMem()
	f, _, err := Open(ffs, "/data/t-0", TopicPartition{"t", 0}, opts, OpenOptions{})
	mustNotErr(t, err)
	defer f.Close()
	for _, b := range batchesOf(t, readAll(t, l)) {
		_, err := f.AppendAsFollower(slices.Clone(b))
		mustNotErr(t, err)
	}
	if openTxns(f) != openTxns(l) || f.LastStableOffset(leo) != l.LastStableOffset(leo) {
		t.Fatalf("follower: open %s LSO %d; leader: open %s LSO %d", openTxns(f), f.LastStableOffset(leo), openTxns(l), l.LastStableOffset(leo))
	}
	if got := txnIndexOf(t, ffs, f.Dir(), 0); !slices.Equal(got, want) {
		t.Fatalf("follower txnindex %+v, want %+v", got, want)
	}
	fe, _ := f.producers.LastEntry(1)
	le, _ := l.producers.LastEntry(1)
	if fe.CoordinatorEpoch != 5 || fe != le {
		t.Fatalf("follower entry %+v, leader %+v", fe, le)
	}

	// Truncation below the ABORT marker reopens producer 1's first
	// transaction and drops its index entry.
	mustNotErr(t, f.TruncateTo(8))
	if got := openTxns(f); got != "[{1 0 2 1700000000000} {2 0 5 1700000000001}]" {
		t.Fatalf("after truncation to 8: open %s", got)
	}
	if got := txnIndexOf(t, ffs, f.Dir(), 0); len(got) != 0 {
		t.Fatalf("after truncation to 8: txnindex %+v", got)
	}
	if _, err := ffs.Stat(segmentFileName(f.Dir(), 0, txnIndexSuffix)); err == nil {
		t.Fatal("an empty transaction index file is left")
	}
}

// TestTxnRecovery: after a clean stop and after a crash (no recovery
// point, the index file lost), the open transactions, the LSO and the
// transaction index are what they were; retention removes the index with
// its segment.
func TestTxnRecovery(t *testing.T) {
	clock := &testClock{ms: 1_700_000_000_000}
	fsys := vfs.NewMem()
	opts := testOptions(clock)
	l := openTestLog(t, fsys, opts, OpenOptions{})
	for i := range 20 {
		pid := int64(1 + i%3)
		seq := int32(i / 3 * 2)
		_, err := l.Append(makeTxnBatch(t, pid, 0, seq, 2, clock.ms), 0)
		mustNotErr(t, err)
		if i%4 == 3 {
			_, err := l.AppendTxnMarker(TxnMarker{ProducerID: pid, ProducerEpoch: 0, Commit: i%8 == 3, CoordinatorEpoch: 1}, 0)
			mustNotErr(t, err)
		}
		if i == 10 {
			mustNotErr(t, l.Roll())
		}
	}
	leo := l.LogEndOffset()
	wantOpen, wantLSO := openTxns(l), l.LastStableOffset(leo)
	wantIndex := map[int64][]abortedTxn{}
	for _, s := range l.Segments() {
		wantIndex[s.BaseOffset] = txnIndexOf(t, fsys, l.Dir(), s.BaseOffset)
	}
	if len(wantIndex[0])+len(wantIndex[l.Segments()[1].BaseOffset]) == 0 {
		t.Fatal("no aborted transaction indexed")
	}
	check := func(what string, l *Log) {
		t.Helper()
		if got := openTxns(l); got != wantOpen {
			t.Fatalf("%s: open %s, want %s", what, got, wantOpen)
		}
		if got := l.LastStableOffset(leo); got != wantLSO {
			t.Fatalf("%s: LSO %d, want %d", what, got, wantLSO)
		}
		for base, want := range wantIndex {
			if got := txnIndexOf(t, fsys, l.Dir(), base); !slices.Equal(got, want) {
				t.Fatalf("%s: segment %d txnindex %+v, want %+v", what, base, got, want)
			}
		}
	}
	mustNotErr(t, l.Close())
	l = openTestLog(t, fsys, opts, OpenOptions{RecoveryPoint: leo})
	check("clean reopen", l)
	mustNotErr(t, l.Close())

	// A crash: no recovery point, no snapshot, the index files lost or torn.
	snaps, _ := snapshotOffsets(fsys, l.Dir())
	for _, off := range snaps {
		mustNotErr(t, fsys.Remove(segmentFileName(l.Dir(), off, snapshotSuffix)))
	}
	for base := range wantIndex {
		name := segmentFileName(l.Dir(), base, txnIndexSuffix)
		if base == 0 {
			fsys.Remove(name)
		} else if f, err := fsys.OpenReadWrite(name); err == nil {
			f.WriteAt([]byte{0, 0, 1}, 0) // garbage, and a torn tail
			f.Close()
		}
	}
	l = openTestLog(t, fsys, opts, OpenOptions{})
	check("recovery", l)

	// Retention removes the first segment's index with it.
	mustNotErr(t, l.AdvanceLogStartOffset(l.Segments()[1].BaseOffset))
	if _, err := l.DeleteOldSegments(leo); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Stat(segmentFileName(l.Dir(), 0, txnIndexSuffix)); err == nil {
		t.Fatal("the deleted segment's txnindex is left")
	}
	mustNotErr(t, l.Close())
}

// TestAbortedTxnsAcrossSegments: a transaction that starts in one segment
// and is aborted in a later one is listed for a read of the first; the
// search stops at an entry whose last stable offset reaches the bound, and
// the cache follows a truncation.
func TestAbortedTxnsAcrossSegments(t *testing.T) {
	clock := &testClock{ms: 1_700_000_000_000}
	fsys := vfs.NewMem()
	l := openTestLog(t, fsys, testOptions(clock), OpenOptions{})
	defer l.Close()
	_, err := l.Append(makeTxnBatch(t, 1, 0, 0, 2, clock.ms), 0) // 0-1
	mustNotErr(t, err)
	_, err = l.Append(makeBatch(t, batch.CompressionNone, 0, 2, 10, clock.ms), 0) // 2-3
	mustNotErr(t, err)
	mustNotErr(t, l.Roll())
	_, err = l.AppendTxnMarker(TxnMarker{ProducerID: 1, Commit: false}, 0) // 4
	mustNotErr(t, err)
	_, err = l.Append(makeTxnBatch(t, 2, 0, 0, 1, clock.ms), 0) // 5
	mustNotErr(t, err)
	_, err = l.AppendTxnMarker(TxnMarker{ProducerID: 2, Commit: false}, 0) // 6
	mustNotErr(t, err)
	got, err := l.AbortedTxns(0, 4)
	mustNotErr(t, err)
	if fmt.Sprint(got) != "[{1 0}]" {
		t.Fatalf("aborted in [0, 4): %v", got)
	}
	// Producer 1's entry has last stable offset 5 >= 5: producer 2's
	// abort is not looked at for a read below 5.
	if got, _ := l.AbortedTxns(2, 5); fmt.Sprint(got) != "[{1 0}]" {
		t.Fatalf("aborted in [2, 5): %v", got)
	}
	if got, _ := l.AbortedTxns(0, 7); fmt.Sprint(got) != "[{1 0} {2 5}]" {
		t.Fatalf("aborted in [0, 7): %v", got)
	}
	rr, lso, aborted, err := l.ReadCommitted(0, 1<<20, 7, true)
	mustNotErr(t, err)
	rr.Release()
	if lso != 7 || fmt.Sprint(aborted) != "[{1 0}]" {
		// The read ends with the first segment (offsets 0-3).
		t.Fatalf("ReadCommitted: lso %d aborted %v", lso, aborted)
	}
	mustNotErr(t, l.TruncateTo(6))
	if got, _ := l.AbortedTxns(0, 7); fmt.Sprint(got) != "[{1 0}]" {
		t.Fatalf("after truncation to 6, aborted in [0, 7): %v", got)
	}
	if lso := l.LastStableOffset(6); lso != 5 {
		t.Fatalf("after truncation to 6, LSO %d, want 5", lso)
	}
}

// TestCleanerStopsAtFirstUnstableOffset: no segment holding an open
// transaction's batches, or after them, is cleanable.
func TestCleanerStopsAtFirstUnstableOffset(t *testing.T) {
	clock := &testClock{ms: 1_700_000_000_000}
	opts := testOptions(clock)
	opts.CleanupPolicy = CleanupCompact
	l := openTestLog(t, vfs.NewMem(), opts, OpenOptions{})
	defer l.Close()
	for i := range 3 {
		_, err := l.Append(makeBatch(t, batch.CompressionNone, i, 2, 10, clock.ms), 0)
		mustNotErr(t, err)
		mustNotErr(t, l.Roll())
	}
	_, err := l.Append(makeTxnBatch(t, 1, 0, 0, 2, clock.ms), 0) // 6-7, open
	mustNotErr(t, err)
	mustNotErr(t, l.Roll())
	_, err = l.Append(makeBatch(t, batch.CompressionNone, 9, 2, 10, clock.ms), 0)
	mustNotErr(t, err)
	mustNotErr(t, l.Roll())
	l.mu.Lock()
	n, first, _ := l.cleanableRangeLocked(0, l.logEndOffset, clock.ms)
	l.mu.Unlock()
	if n != 3 || first != 6 {
		t.Fatalf("cleanable: %d segments up to %d, want 3 up to 6 (the open transaction)", n, first)
	}
	_, err = l.AppendTxnMarker(TxnMarker{ProducerID: 1, Commit: true}, 0)
	mustNotErr(t, err)
	mustNotErr(t, l.Roll())
	l.mu.Lock()
	l.producers.OnHighWatermarkUpdated(l.logEndOffset)
	n, _, _ = l.cleanableRangeLocked(0, l.logEndOffset, clock.ms)
	l.mu.Unlock()
	if n != 6 {
		t.Fatalf("cleanable after the commit: %d segments, want 6", n)
	}
}

// TestCleanerKeepsTransactionIndexes: compaction never merges a segment
// with a transaction index into an earlier one, so its index stays beside
// the markers it names, and the markers stay.
func TestCleanerKeepsTransactionIndexes(t *testing.T) {
	clock := &testClock{ms: 1_700_000_000_000}
	opts := testOptions(clock)
	opts.CleanupPolicy = CleanupCompact
	fsys := vfs.NewMem()
	l := openTestLog(t, fsys, opts, OpenOptions{})
	defer l.Close()
	plain := func() {
		t.Helper()
		_, err := l.Append(makeBatch(t, batch.CompressionNone, 0, 3, 10, clock.ms), 0)
		mustNotErr(t, err)
	}
	plain()
	mustNotErr(t, l.Roll())
	plain()
	_, err := l.Append(makeTxnBatch(t, 1, 0, 0, 2, clock.ms), 0)
	mustNotErr(t, err)
	_, err = l.AppendTxnMarker(TxnMarker{ProducerID: 1, Commit: false}, 0)
	mustNotErr(t, err)
	mustNotErr(t, l.Roll())
	plain()
	mustNotErr(t, l.Roll())
	plain()
	segsBefore := l.Segments()
	abortedBase := segsBefore[1].BaseOffset
	before := txnIndexOf(t, fsys, l.Dir(), abortedBase)
	if len(before) != 1 {
		t.Fatalf("txnindex before cleaning: %+v", before)
	}
	leo := l.LogEndOffset()
	res, err := l.Clean(context.Background(), CleanConfig{UpperBound: leo, DedupeBufferBytes: 1 << 20})
	mustNotErr(t, err)
	if res.SegmentsCleaned == 0 {
		t.Fatalf("nothing cleaned: %+v", res)
	}
	var bases []int64
	for _, s := range l.Segments() {
		bases = append(bases, s.BaseOffset)
	}
	if !slices.Contains(bases, abortedBase) {
		t.Fatalf("the segment with the transaction index was merged away: segments %v", bases)
	}
	if got := txnIndexOf(t, fsys, l.Dir(), abortedBase); !slices.Equal(got, before) {
		t.Fatalf("txnindex after cleaning %+v, want %+v", got, before)
	}
	got, err := l.AbortedTxns(0, leo)
	mustNotErr(t, err)
	if fmt.Sprint(got) != fmt.Sprintf("[{1 %d}]", before[0].FirstOffset) {
		t.Fatalf("aborted after cleaning: %v", got)
	}
	// The marker is still in the log.
	b, err := l.ReadBatches(before[0].LastOffset, 1<<20, before[0].LastOffset+1)
	mustNotErr(t, err)
	if h, _ := batch.ParseHeader(b); !h.IsControl() || h.BaseOffset != before[0].LastOffset {
		t.Fatalf("the ABORT marker at %d is gone: %+v", before[0].LastOffset, h)
	}
}
