package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// txnBatch builds a transactional batch of producer pid.
func txnBatch(t *testing.T, pid int64, seq int32, ts int64, recs ...kv) []byte {
	t.Helper()
	b := batch.NewBuilder(batch.CompressionNone)
	b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.IsTransactional = pid, 0, seq, true
	for _, r := range recs {
		b.Append(batch.Record{Timestamp: ts, Key: r.key, Value: r.value})
	}
	raw, err := b.Build()
	mustNotErr(t, err)
	return raw
}

// logView lists a log's batches: data records as offset:key=value,
// markers as offset:COMMIT or offset:ABORT (+h when they carry a delete
// horizon).
func logView(t *testing.T, l *Log) string {
	t.Helper()
	var out []string
	for _, b := range batchesOf(t, readAll(t, l)) {
		h, err := batch.ParseHeader(b)
		mustNotErr(t, err)
		if h.IsControl() {
			m, err := markerOf(b)
			mustNotErr(t, err)
			s := fmt.Sprintf("%d:?", h.BaseOffset)
			if m != nil {
				s = fmt.Sprintf("%d:%s", h.BaseOffset, map[bool]string{true: "COMMIT", false: "ABORT"}[m.Commit])
			}
			if h.HasDeleteHorizonMs() {
				s += "+h"
			}
			out = append(out, s)
			continue
		}
		err = batch.Records(b, batch.Limits{Origin: batch.AppendOriginReplication}, func(r batch.Record) error {
			out = append(out, fmt.Sprintf("%d:%s=%s", r.Offset, r.Key, r.Value))
			return nil
		})
		mustNotErr(t, err)
	}
	return strings.Join(out, " ")
}

// TestCleanTransactions: Kafka's cleaner rules for transactions. An
// aborted transaction's records go and never shadow a committed record of
// the same key (the old cleaner mapped them: the committed a=1 went and
// the aborted a=2 stayed, so read_committed readers lost a). A marker
// stays while its transaction has records, then gets a delete horizon
// and goes after delete.retention.ms; a producer's last marker stays. The
// transaction index keeps only the entries of markers whose aborted
// batches remain (here producer 700's, whose last batch stays empty for
// its sequence).
func TestCleanTransactions(t *testing.T) {
	clock := &testClock{ms: 1_000_000}
	opts := compactOptions(clock)
	opts.DeleteRetentionMs = 60_000
	l := openTestLog(t, vfs.NewMem(), opts, OpenOptions{})
	defer l.Close()
	app := func(b []byte) {
		t.Helper()
		_, err := l.Append(b, 0)
		mustNotErr(t, err)
	}
	marker := func(pid int64, commit bool) {
		t.Helper()
		_, err := l.AppendTxnMarker(TxnMarker{ProducerID: pid, ProducerEpoch: 0, Commit: commit}, 0)
		mustNotErr(t, err)
	}
	app(keyedBatch(t, batch.CompressionNone, []kv{{[]byte("a"), []byte("1")}}, clock.ms))          // 0
	app(txnBatch(t, 500, 0, clock.ms, kv{[]byte("a"), []byte("2")}, kv{[]byte("b"), []byte("2")})) // 1-2
	marker(500, false)                                                                             // 3
	app(txnBatch(t, 600, 0, clock.ms, kv{[]byte("c"), []byte("3")}))                               // 4
	marker(600, true)                                                                              // 5
	app(txnBatch(t, 600, 1, clock.ms, kv{[]byte("c"), []byte("4")}))                               // 6
	marker(600, true)                                                                              // 7
	app(txnBatch(t, 500, 2, clock.ms, kv{[]byte("d"), []byte("5")}))                               // 8
	marker(500, true)                                                                              // 9
	app(txnBatch(t, 700, 0, clock.ms, kv{[]byte("e"), []byte("6")}))                               // 10
	marker(700, false)                                                                             // 11
	mustNotErr(t, l.Roll())
	app(keyedBatch(t, batch.CompressionNone, []kv{{[]byte("z"), []byte("1")}}, clock.ms)) // 12

	clean := func() CleanResult {
		t.Helper()
		res, err := l.Clean(context.Background(), CleanConfig{UpperBound: l.LogEndOffset(), DedupeBufferBytes: 1 << 16})
		mustNotErr(t, err)
		checkIndexesAgree(t, l)
		checkProducerStateMatchesReplay(t, l)
		if lso := l.LastStableOffset(l.LogEndOffset()); lso != l.LogEndOffset() {
			t.Fatalf("last stable offset %d, log end %d", lso, l.LogEndOffset())
		}
		return res
	}
	aborted := func() string {
		t.Helper()
		a, err := l.AbortedTxns(0, l.LogEndOffset())
		mustNotErr(t, err)
		return fmt.Sprint(a)
	}
	if got := aborted(); got != "[{500 1} {700 10}]" {
		t.Fatalf("aborted transactions before cleaning: %s", got)
	}

	// The aborted records and the overwritten committed c=3 go; the
	// markers at 3 and 5 have no records left: they get a delete horizon,
	// and the ABORT at 3 loses its index entry. Producer 700's aborted
	// batch stays empty (its last), and so do its marker and entry.
	first := clock.ms
	res := clean()
	if got, want := logView(t, l), "0:a=1 3:ABORT+h 5:COMMIT+h 6:c=4 7:COMMIT 8:d=5 9:COMMIT 11:ABORT 12:z=1"; got != want {
		t.Fatalf("after the first pass:\n got %s\nwant %s", got, want)
	}
	if res.NextDeleteHorizonMs != first+opts.DeleteRetentionMs {
		t.Fatalf("next delete horizon %d, want %d", res.NextDeleteHorizonMs, first+opts.DeleteRetentionMs)
	}
	if got := aborted(); got != "[{700 10}]" {
		t.Fatalf("aborted transactions after the first pass: %s", got)
	}
	if _, hs := logRecords(t, l); len(hs) != 10 || hs[7].BaseOffset != 10 || hs[7].RecordCount != 0 {
		t.Fatalf("producer 700's last batch is not kept empty: %+v", hs)
	}

	// Before the horizon the markers stay; at it they go. The producers'
	// last markers (7, 9, 11) stay for good.
	clock.ms = first + opts.DeleteRetentionMs - 1
	clean()
	if got, want := logView(t, l), "0:a=1 3:ABORT+h 5:COMMIT+h 6:c=4 7:COMMIT 8:d=5 9:COMMIT 11:ABORT 12:z=1"; got != want {
		t.Fatalf("before the horizon:\n got %s\nwant %s", got, want)
	}
	clock.ms = first + opts.DeleteRetentionMs
	clean()
	if got, want := logView(t, l), "0:a=1 6:c=4 7:COMMIT 8:d=5 9:COMMIT 11:ABORT 12:z=1"; got != want {
		t.Fatalf("at the horizon:\n got %s\nwant %s", got, want)
	}
	if got := aborted(); got != "[{700 10}]" {
		t.Fatalf("aborted transactions at the end: %s", got)
	}
	// A read_committed reader sees the committed values only.
	rr, _, ab, err := l.ReadCommitted(0, 1<<20, l.LogEndOffset(), true)
	mustNotErr(t, err)
	rr.Release()
	if fmt.Sprint(ab) != "[{700 10}]" {
		t.Fatalf("read_committed lists aborted transactions %v", ab)
	}
}

// TestTxnScanKeepsMarkersOfBatches: the walk's rules in isolation. A
// marker stays while a batch of its producer since the producer's last
// marker stays, even one the transaction indexes do not name (an
// ABORT marker without its entry would otherwise go and leave its
// transaction looking open); an ABORT marker whose aborted batches stay
// keeps its index entry; a marker with no batch left before it may go.
func TestTxnScanKeepsMarkersOfBatches(t *testing.T) {
	hdr := func(base int64, pid int64, txn bool) batch.Header {
		b := batch.NewBuilder(batch.CompressionNone)
		b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.IsTransactional = pid, 0, 0, txn
		b.Append(batch.Record{Key: []byte("k"), Value: []byte("v")})
		raw, err := b.Build()
		mustNotErr(t, err)
		h, err := batch.ParseHeader(raw)
		mustNotErr(t, err)
		h.BaseOffset = base
		return h
	}
	abort, commit := &batch.EndTxnMarker{}, &batch.EndTxnMarker{Commit: true}
	entry := abortedTxn{ProducerID: 2, FirstOffset: 2, LastOffset: 3, LastStableOffset: 2}
	s := newTxnScan([]abortedTxn{entry})
	walk := func(h batch.Header, stays bool) bool {
		aborted := s.onBatch(h)
		if stays {
			s.retained(h)
		}
		return aborted
	}
	if walk(hdr(0, 1, true), true) {
		t.Fatal("producer 1's batch at 0 is not aborted")
	}
	// Producer 1 aborted, but no index entry says so.
	if d, e := s.onMarker(hdr(1, 1, true), abort); d || e != nil {
		t.Fatalf("ABORT of producer 1 after its batch: discardable %v, entry %v", d, e)
	}
	if !walk(hdr(2, 2, true), true) {
		t.Fatal("producer 2's batch at 2 is aborted")
	}
	if d, e := s.onMarker(hdr(3, 2, true), abort); d || e == nil || *e != entry {
		t.Fatalf("ABORT of producer 2 after its batch: discardable %v, entry %v", d, e)
	}
	if d, _ := s.onMarker(hdr(4, 2, true), commit); !d {
		t.Fatal("a COMMIT with no batch before it must be discardable")
	}
	if d, _ := s.onMarker(hdr(5, 3, true), abort); !d {
		t.Fatal("an ABORT with no batch before it must be discardable")
	}
	if walk(hdr(6, 2, true), true) {
		t.Fatal("producer 2's batch at 6 starts a new transaction, not aborted")
	}
	if d, _ := s.onMarker(hdr(7, 2, true), commit); d {
		t.Fatal("a COMMIT after a batch that stays must stay")
	}
	// A transaction whose batches this pass removed: its marker may go.
	walk(hdr(8, 2, true), false)
	if d, _ := s.onMarker(hdr(9, 2, true), commit); !d {
		t.Fatal("a COMMIT whose batches all went must be discardable")
	}
}
