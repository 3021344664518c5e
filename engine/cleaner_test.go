package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/engine/producer"
	"github.com/wren-broker/wren/internal/vfs"
)

// kv is a record of a compaction test: nil key or value means null.
type kv struct {
	key, value []byte
}

// modelRecord is a record as the model knows it.
type modelRecord struct {
	offset     int64
	key, value []byte
	ts         int64
}

func (r modelRecord) String() string {
	return fmt.Sprintf("%d:%q=%q@%d", r.offset, r.key, r.value, r.ts)
}

// keyedBatch builds a batch of records with the given keys and values.
func keyedBatch(t tb, codec batch.CompressionType, recs []kv, ts int64) []byte {
	t.Helper()
	b := batch.NewBuilder(codec)
	for i, r := range recs {
		b.Append(batch.Record{Timestamp: ts + int64(i), Key: r.key, Value: r.value,
			Headers: []batch.RecordHeader{{Key: "i", Value: []byte{byte(i)}}}})
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// compactModel is what a compaction test knows: every record appended and
// which of them cleaning has removed, computed without the cleaner's code.
type compactModel struct {
	records []modelRecord
	// batches are the [base, last] offset ranges of the appended batches.
	batches [][2]int64
	removed map[int64]bool
	// horizon holds, for each tombstone a pass kept, its delete horizon.
	horizon map[int64]int64
}

func newCompactModel() *compactModel {
	return &compactModel{removed: map[int64]bool{}, horizon: map[int64]int64{}}
}

// appendKeyed appends one batch of random keyed records (a few tombstones,
// rarely a record without a key) and records it.
func (m *compactModel) appendKeyed(t tb, l *Log, rng *rand.Rand, keys int, ts int64) {
	t.Helper()
	n := 1 + rng.Intn(8)
	recs := make([]kv, n)
	for i := range recs {
		k := []byte(fmt.Sprintf("key-%d", rng.Intn(keys)))
		v := []byte(fmt.Sprintf("v%d-%s", rng.Int63(), strings.Repeat("x", rng.Intn(200))))
		switch x := rng.Intn(100); {
		case x < 12:
			v = nil
		case x < 14:
			k = nil
		}
		recs[i] = kv{k, v}
	}
	m.appendBatch(t, l, keyedBatch(t, batch.CompressionType(rng.Intn(5)), recs, ts), recs, ts)
}

func (m *compactModel) appendBatch(t tb, l *Log, b []byte, recs []kv, ts int64) {
	t.Helper()
	info, err := l.Append(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		m.records = append(m.records, modelRecord{offset: info.FirstOffset + int64(i), key: r.key, value: r.value, ts: ts + int64(i)})
	}
	m.batches = append(m.batches, [2]int64{info.FirstOffset, info.LastOffset})
}

// pass applies a cleaning pass to the model: the records of
// [firstDirty, end) are mapped; below end a record stays if it has a key,
// is the latest of its key among the mapped records (or its key is not
// mapped), and is not a tombstone whose horizon passed. A tombstone kept
// for the first time gets its horizon.
func (m *compactModel) pass(firstDirty, end, nowMs, deleteRetentionMs int64) {
	latest := map[string]int64{}
	for _, r := range m.records {
		if r.offset >= firstDirty && r.offset < end && !m.removed[r.offset] && r.key != nil {
			latest[string(r.key)] = r.offset
		}
	}
	for _, r := range m.records {
		if r.offset >= end || m.removed[r.offset] {
			continue
		}
		keep := r.key != nil
		if l, ok := latest[string(r.key)]; keep && ok && r.offset < l {
			keep = false
		}
		if h, ok := m.horizon[r.offset]; keep && r.value == nil && ok && nowMs >= h {
			keep = false
		}
		if !keep {
			m.removed[r.offset] = true
			continue
		}
		if _, ok := m.horizon[r.offset]; r.value == nil && !ok {
			m.horizon[r.offset] = nowMs + deleteRetentionMs
		}
	}
}

func (m *compactModel) present() []modelRecord {
	var out []modelRecord
	for _, r := range m.records {
		if !m.removed[r.offset] {
			out = append(out, r)
		}
	}
	return out
}

// logRecords reads every record of the log back, and every batch header.
func logRecords(t tb, l *Log) ([]modelRecord, []batch.Header) {
	t.Helper()
	var recs []modelRecord
	var hs []batch.Header
	for _, b := range batchesOf(t, readAll(t, l)) {
		h, err := batch.ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
		err = batch.Records(b, batch.Limits{Origin: batch.AppendOriginReplication}, func(r batch.Record) error {
			recs = append(recs, modelRecord{offset: r.Offset, key: bytes.Clone(r.Key), value: bytes.Clone(r.Value), ts: r.Timestamp})
			return nil
		})
		if err != nil {
			t.Fatalf("batch at %d: %v", h.BaseOffset, err)
		}
	}
	return recs, hs
}

// checkAgainstModel: the log holds exactly the model's records, each at
// its original offset with its original key, value and timestamp, and
// every batch spans the offsets of a batch that was appended.
func checkAgainstModel(t tb, l *Log, m *compactModel) {
	t.Helper()
	got, hs := logRecords(t, l)
	want := m.present()
	if len(got) != len(want) {
		t.Fatalf("log holds %d records, the model %d\n got %v\nwant %v", len(got), len(want), got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.offset != w.offset || !bytes.Equal(g.key, w.key) || !bytes.Equal(g.value, w.value) ||
			(g.key == nil) != (w.key == nil) || (g.value == nil) != (w.value == nil) || g.ts != w.ts {
			t.Fatalf("record %d: log has %v, model %v", i, g, w)
		}
	}
	spans := map[[2]int64]bool{}
	for _, b := range m.batches {
		spans[b] = true
	}
	for _, h := range hs {
		if !spans[[2]int64{h.BaseOffset, h.LastOffset()}] {
			t.Fatalf("batch %d..%d does not span an appended batch's offsets", h.BaseOffset, h.LastOffset())
		}
	}
}

func compactOptions(clock *testClock) Options {
	o := testOptions(clock)
	o.SegmentBytes = 4096
	o.IndexIntervalBytes = 512
	o.CleanupPolicy = CleanupCompact
	o.DeleteRetentionMs = 1000
	return o
}

// TestCleanKeepsLatestPerKey: after each pass exactly the model's records
// remain, at their original offsets, over many segments, many passes and
// appends in between; reads by offset land on the batch holding or
// following every offset, gaps included.
func TestCleanKeepsLatestPerKey(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewSource(seed))
	clock := &testClock{ms: 1_700_000_000_000}
	opts := compactOptions(clock)
	l := openTestLog(t, vfs.NewMem(), opts, OpenOptions{})
	defer l.Close()
	m := newCompactModel()
	firstDirty := int64(0)
	totalCleaned := 0
	for round := 0; round < 8; round++ {
		for i := 0; i < 60; i++ {
			m.appendKeyed(t, l, rng, 40, clock.ms)
			clock.advance(time.Millisecond)
		}
		leo := l.LogEndOffset()
		res, err := l.Clean(context.Background(), CleanConfig{UpperBound: leo, FirstDirtyOffset: firstDirty, DedupeBufferBytes: 1 << 20})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		segs := l.Segments()
		if res.Aborted || res.EndOffset != res.FirstUncleanableOffset || res.EndOffset != segs[len(segs)-1].BaseOffset {
			t.Fatalf("round %d: %+v, active segment at %d", round, res, segs[len(segs)-1].BaseOffset)
		}
		m.pass(res.FirstDirtyOffset, res.EndOffset, clock.ms, opts.DeleteRetentionMs)
		checkAgainstModel(t, l, m)
		checkReadsAcrossGaps(t, l)
		checkIndexesAgree(t, l)
		firstDirty = res.EndOffset
		totalCleaned += res.SegmentsCleaned
		// Time passes between rounds, so some tombstones expire.
		clock.advance(time.Duration(rng.Intn(800)) * time.Millisecond)
	}
	expired := 0
	for off := range m.horizon {
		if m.removed[off] {
			expired++
		}
	}
	if totalCleaned == 0 || len(m.removed) == 0 || expired == 0 {
		t.Fatalf("nothing was compacted: %d segments, %d records removed, %d tombstones with a horizon removed", totalCleaned, len(m.removed), expired)
	}
	// The cleaned log survives a reopen as it is.
	want, _ := logRecords(t, l)
	leo := l.LogEndOffset()
	mustNotErr(t, l.Close())
	l2, _, err := Open(l.fs, l.dir, l.tp, opts, OpenOptions{})
	mustNotErr(t, err)
	defer l2.Close()
	got, _ := logRecords(t, l2)
	if l2.LogEndOffset() != leo || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatal("the compacted log reads back differently after a reopen")
	}
}

// TestCleanSmallDedupeBuffer: a key map too small for the dirty part
// cleans as far as it holds, and passes resumed from EndOffset reach the
// same result as one big pass.
func TestCleanSmallDedupeBuffer(t *testing.T) {
	seed := testSeed(t)
	build := func() (*Log, *compactModel) {
		rng := rand.New(rand.NewSource(seed))
		clock := &testClock{ms: 1_700_000_000_000}
		l := openTestLog(t, vfs.NewMem(), compactOptions(clock), OpenOptions{})
		m := newCompactModel()
		for i := 0; i < 150; i++ {
			m.appendKeyed(t, l, rng, 300, clock.ms)
		}
		mustNotErr(t, l.Roll())
		return l, m
	}
	l, m := build()
	defer l.Close()
	leo := l.LogEndOffset()
	passes := 0
	for dirty := int64(0); dirty < leo; passes++ {
		// 100 slots: 90 keys a pass.
		res, err := l.Clean(context.Background(), CleanConfig{UpperBound: leo, FirstDirtyOffset: dirty, DedupeBufferBytes: 100 * offsetMapEntryBytes})
		mustNotErr(t, err)
		if res.EndOffset <= dirty {
			t.Fatalf("pass %d made no progress from %d: %+v", passes, dirty, res)
		}
		m.pass(res.FirstDirtyOffset, res.EndOffset, 0, compactOptions(nil).DeleteRetentionMs)
		checkAgainstModel(t, l, m)
		dirty = res.EndOffset
	}
	if passes < 3 {
		t.Fatalf("%d passes: the small map held the whole dirty part", passes)
	}
	// One pass with a map that holds everything gives the same records.
	big, bm := build()
	defer big.Close()
	_, err := big.Clean(context.Background(), CleanConfig{UpperBound: leo, DedupeBufferBytes: 1 << 20})
	mustNotErr(t, err)
	bm.pass(0, leo, 0, compactOptions(nil).DeleteRetentionMs)
	checkAgainstModel(t, big, bm)
	a, _ := logRecords(t, l)
	b, _ := logRecords(t, big)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatal("resumed passes and one pass disagree")
	}
	// A map that cannot hold one batch is an error, not a silent no-op.
	tiny := openTestLog(t, vfs.NewMem(), compactOptions(nil), OpenOptions{})
	defer tiny.Close()
	_, err = tiny.Append(keyedBatch(t, batch.CompressionNone, []kv{{[]byte("a"), nil}, {[]byte("b"), nil}, {[]byte("c"), nil}, {[]byte("d"), nil}}, 1), 0)
	mustNotErr(t, err)
	mustNotErr(t, tiny.Roll())
	_, err = tiny.Clean(context.Background(), CleanConfig{UpperBound: tiny.LogEndOffset(), DedupeBufferBytes: 4 * offsetMapEntryBytes})
	if !errors.Is(err, ErrCleanerBufferTooSmall) {
		t.Fatalf("tiny dedupe buffer: %v", err)
	}
}

// checkReadsAcrossGaps: Read at every offset of the log returns the first
// batch whose last offset is at or above it (the batch holding it, or the
// next one when compaction removed it), as Fetch needs; a consumer that
// fetches from each batch's next offset sees every batch once.
func checkReadsAcrossGaps(t tb, l *Log) {
	t.Helper()
	_, hs := logRecords(t, l)
	lso, leo := l.LogStartOffset(), l.LogEndOffset()
	j := 0
	for off := lso; off < leo; off++ {
		for j < len(hs) && hs[j].LastOffset() < off {
			j++
		}
		r, err := l.Read(off, 1, leo, true)
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		b, err := r.Bytes()
		r.Release()
		mustNotErr(t, err)
		if j == len(hs) {
			if len(b) != 0 {
				t.Fatalf("read %d past the last batch returned %d bytes", off, len(b))
			}
			continue
		}
		h, err := batch.ParseHeader(b)
		if err != nil || h.BaseOffset != hs[j].BaseOffset || r.FirstOffset != hs[j].BaseOffset {
			t.Fatalf("read %d: got batch %d (first offset %d, %v), want the batch %d..%d", off, h.BaseOffset, r.FirstOffset, err, hs[j].BaseOffset, hs[j].LastOffset())
		}
	}
	// Fetch loop with a small max bytes.
	var seen []int64
	for off := lso; off < leo; {
		b, err := l.ReadBatches(off, 300, leo)
		mustNotErr(t, err)
		if len(b) == 0 {
			break
		}
		for _, bb := range batchesOf(t, b) {
			h, _ := batch.ParseHeader(bb)
			seen = append(seen, h.BaseOffset)
			off = h.LastOffset() + 1
		}
	}
	var want []int64
	for _, h := range hs {
		want = append(want, h.BaseOffset)
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("fetch loop saw batches %v, the log has %v", seen, want)
	}
}

// TestCleanTombstoneDeleteRetention: a tombstone outlives the value it
// deletes, carries its delete horizon in its batch (KIP-534), stays until
// delete.retention.ms after the pass that first kept it, and goes with
// the first pass at or after the horizon.
func TestCleanTombstoneDeleteRetention(t *testing.T) {
	clock := &testClock{ms: 1_000_000}
	opts := compactOptions(clock)
	opts.DeleteRetentionMs = 60_000
	l := openTestLog(t, vfs.NewMem(), opts, OpenOptions{})
	defer l.Close()
	app := func(recs ...kv) {
		_, err := l.Append(keyedBatch(t, batch.CompressionNone, recs, clock.ms), 0)
		mustNotErr(t, err)
	}
	app(kv{[]byte("a"), []byte("1")}, kv{[]byte("b"), []byte("1")})
	app(kv{[]byte("a"), nil}, kv{[]byte("c"), []byte("1")})
	mustNotErr(t, l.Roll())
	app(kv{[]byte("d"), []byte("1")})
	clean := func() CleanResult {
		t.Helper()
		res, err := l.Clean(context.Background(), CleanConfig{UpperBound: l.LogEndOffset(), DedupeBufferBytes: 1 << 16})
		mustNotErr(t, err)
		return res
	}
	keysOf := func() string {
		recs, _ := logRecords(t, l)
		var s []string
		for _, r := range recs {
			v := "null"
			if r.value != nil {
				v = string(r.value)
			}
			s = append(s, fmt.Sprintf("%d:%s=%s", r.offset, r.key, v))
		}
		return strings.Join(s, " ")
	}
	first := clock.ms
	res := clean()
	if got := keysOf(); got != "1:b=1 2:a=null 3:c=1 4:d=1" {
		t.Fatalf("after the first pass: %s", got)
	}
	if res.NextDeleteHorizonMs != first+opts.DeleteRetentionMs {
		t.Fatalf("next delete horizon %d, want %d", res.NextDeleteHorizonMs, first+opts.DeleteRetentionMs)
	}
	_, hs := logRecords(t, l)
	if !hs[1].HasDeleteHorizonMs() || hs[1].DeleteHorizonMs() != first+opts.DeleteRetentionMs || hs[0].HasDeleteHorizonMs() {
		t.Fatalf("delete horizons: batch 0 %v, batch 1 %v at %d", hs[0].HasDeleteHorizonMs(), hs[1].HasDeleteHorizonMs(), hs[1].DeleteHorizonMs())
	}
	// Just before the horizon: kept, and the horizon does not move.
	clock.ms = first + opts.DeleteRetentionMs - 1
	clean()
	if got := keysOf(); got != "1:b=1 2:a=null 3:c=1 4:d=1" {
		t.Fatalf("before the horizon: %s", got)
	}
	if _, hs := logRecords(t, l); hs[1].DeleteHorizonMs() != first+opts.DeleteRetentionMs {
		t.Fatalf("horizon moved to %d", hs[1].DeleteHorizonMs())
	}
	clock.ms = first + opts.DeleteRetentionMs
	res = clean()
	if got := keysOf(); got != "1:b=1 3:c=1 4:d=1" {
		t.Fatalf("at the horizon: %s", got)
	}
	if res.NextDeleteHorizonMs != -1 {
		t.Fatalf("no tombstone left, next horizon %d", res.NextDeleteHorizonMs)
	}
	// Record timestamps survived the horizon in baseTimestamp.
	recs, _ := logRecords(t, l)
	if recs[1].ts != first+1 {
		t.Fatalf("record c timestamp %d, want %d", recs[1].ts, first+1)
	}
	checkIndexesAgree(t, l)
}

// TestCleanBounds: nothing at or above the upper bound (high watermark)
// is touched, nor the active segment, nor segments younger than
// min.compaction.lag.ms; a log without compact in its policy is left alone.
func TestCleanBounds(t *testing.T) {
	clock := &testClock{ms: 1_000_000}
	opts := compactOptions(clock)
	fsys := vfs.NewMem()
	l := openTestLog(t, fsys, opts, OpenOptions{})
	defer l.Close()
	for i := 0; i < 60; i++ {
		// Every batch overwrites the same two keys.
		_, err := l.Append(keyedBatch(t, batch.CompressionNone, []kv{{[]byte("a"), []byte(fmt.Sprint(i))}, {[]byte("b"), bytes.Repeat([]byte("v"), 300)}}, clock.ms), 0)
		mustNotErr(t, err)
		clock.advance(time.Second)
	}
	segs := l.Segments()
	if len(segs) < 5 {
		t.Fatalf("%d segments", len(segs))
	}
	files := func(from int64) map[string]string {
		out := map[string]string{}
		names, _ := fsys.List(l.dir)
		for _, n := range names {
			if b, ok := parseBase(n, logSuffix); ok && b >= from {
				data, _ := vfs.ReadFile(fsys, l.dir+"/"+n)
				out[n] = string(data)
			}
		}
		return out
	}
	// Upper bound inside the third segment: only the first two may go.
	hw := segs[2].BaseOffset + 1
	before := files(segs[2].BaseOffset)
	res, err := l.Clean(context.Background(), CleanConfig{UpperBound: hw, DedupeBufferBytes: 1 << 16})
	mustNotErr(t, err)
	if res.FirstUncleanableOffset != segs[2].BaseOffset || res.SegmentsCleaned != 2 {
		t.Fatalf("upper bound %d: %+v", hw, res)
	}
	if after := files(segs[2].BaseOffset); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatal("a segment at the upper bound changed")
	}
	// min.compaction.lag.ms: segments whose newest record is younger stay.
	opts.MinCompactionLagMs = clock.ms - segs[3].MaxTimestamp + 1
	mustNotErr(t, l.UpdateOptions(opts))
	res, err = l.Clean(context.Background(), CleanConfig{UpperBound: l.LogEndOffset(), FirstDirtyOffset: res.EndOffset, DedupeBufferBytes: 1 << 16})
	mustNotErr(t, err)
	if res.FirstUncleanableOffset != segs[3].BaseOffset {
		t.Fatalf("min.compaction.lag.ms: cleanable up to %d, want %d (segments %+v)", res.FirstUncleanableOffset, segs[3].BaseOffset, segs)
	}
	// cleanup.policy=delete: no pass.
	opts.CleanupPolicy = CleanupDelete
	mustNotErr(t, l.UpdateOptions(opts))
	before = files(0)
	res, err = l.Clean(context.Background(), CleanConfig{UpperBound: l.LogEndOffset(), DedupeBufferBytes: 1 << 16})
	mustNotErr(t, err)
	if res.SegmentsCleaned != 0 || fmt.Sprint(files(0)) != fmt.Sprint(before) {
		t.Fatalf("delete-only log was cleaned: %+v", res)
	}
}

// TestCleanKeepsProducerState: the last batch of each producer stays
// (empty when compaction removed all its records), so the producer state
// rebuilt from the compacted log alone still knows every producer's last
// sequence: the next batch is accepted and a retry of the last one is
// recognised.
func TestCleanKeepsProducerState(t *testing.T) {
	clock := &testClock{ms: 1_000_000}
	opts := compactOptions(clock)
	fsys := vfs.NewMem()
	l := openTestLog(t, fsys, opts, OpenOptions{})
	pb := func(pid int64, seq int32, recs ...kv) []byte {
		b := batch.NewBuilder(batch.CompressionNone)
		b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, 0, seq
		for _, r := range recs {
			b.Append(batch.Record{Timestamp: clock.ms, Key: r.key, Value: r.value})
		}
		out, err := b.Build()
		mustNotErr(t, err)
		return out
	}
	app := func(b []byte) AppendInfo {
		info, err := l.Append(b, 0)
		mustNotErr(t, err)
		return info
	}
	x := func(k string) kv { return kv{[]byte(k), []byte("v")} }
	app(pb(7, 0, x("a"), x("b")))
	p7last := app(pb(7, 2, x("a"), x("b")))
	p8last := app(pb(8, 0, x("c")))
	app(keyedBatch(t, batch.CompressionNone, []kv{x("a"), x("b"), x("c")}, clock.ms))
	mustNotErr(t, l.Roll())
	app(keyedBatch(t, batch.CompressionNone, []kv{x("z")}, clock.ms))
	before := l.ProducerStates()
	res, err := l.Clean(context.Background(), CleanConfig{UpperBound: l.LogEndOffset(), DedupeBufferBytes: 1 << 16})
	mustNotErr(t, err)
	if res.SegmentsCleaned == 0 {
		t.Fatalf("nothing cleaned: %+v", res)
	}
	recs, hs := logRecords(t, l)
	if len(recs) != 4 {
		t.Fatalf("records after cleaning: %v", recs)
	}
	// Producer 7's first batch is gone; its last and producer 8's stay, empty.
	var empties []string
	for _, h := range hs {
		if h.HasProducerID() {
			empties = append(empties, fmt.Sprintf("%d:%d..%d/%d", h.ProducerID, h.BaseOffset, h.LastOffset(), h.RecordCount))
		}
	}
	want := []string{fmt.Sprintf("7:%d..%d/0", p7last.FirstOffset, p7last.LastOffset), fmt.Sprintf("8:%d..%d/0", p8last.FirstOffset, p8last.LastOffset)}
	if !slices.Equal(empties, want) {
		t.Fatalf("producer batches after cleaning %v, want %v", empties, want)
	}
	// Rebuild the producer state from the log alone: no snapshots.
	mustNotErr(t, l.Close())
	offs, err := snapshotOffsets(fsys, l.dir)
	mustNotErr(t, err)
	for _, o := range offs {
		mustNotErr(t, fsys.Remove(segmentFileName(l.dir, o, snapshotSuffix)))
	}
	l, _, err = Open(fsys, l.dir, l.tp, opts, OpenOptions{})
	mustNotErr(t, err)
	defer l.Close()
	after := l.ProducerStates()
	if len(after) != len(before) {
		t.Fatalf("producers before %d, after %d", len(before), len(after))
	}
	for i := range before {
		bl, _ := before[i].LastBatch()
		al, _ := after[i].LastBatch()
		if before[i].ProducerID != after[i].ProducerID || bl.LastSequence != al.LastSequence || bl.LastOffset != al.LastOffset {
			t.Fatalf("producer %d: before %+v, after %+v", before[i].ProducerID, bl, al)
		}
	}
	// A retry of producer 7's last batch is a duplicate; its next is fine.
	dup, err := l.Append(pb(7, 2, x("a"), x("b")), 0)
	mustNotErr(t, err)
	if !dup.Duplicate || dup.FirstOffset != p7last.FirstOffset {
		t.Fatalf("retry after cleaning: %+v", dup)
	}
	if _, err := l.Append(pb(7, 4, x("a")), 0); err != nil {
		t.Fatalf("next batch after cleaning: %v", err)
	}
	if _, err := l.Append(pb(8, 5, x("a")), 0); !errors.Is(err, producer.ErrOutOfOrderSequence) {
		t.Fatalf("gap after cleaning: %v", err)
	}
}

// TestCleanMergesSmallSegments: runs of small segments become one segment
// of at most segment.bytes, with indexes that agree with it.
func TestCleanMergesSmallSegments(t *testing.T) {
	clock := &testClock{ms: 1_000_000}
	opts := compactOptions(clock)
	opts.SegmentBytes = 16 << 10
	l := openTestLog(t, vfs.NewMem(), opts, OpenOptions{})
	defer l.Close()
	rng := rand.New(rand.NewSource(1))
	m := newCompactModel()
	for i := 0; i < 120; i++ {
		m.appendKeyed(t, l, rng, 1000, clock.ms)
		if i%4 == 3 {
			mustNotErr(t, l.Roll())
		}
	}
	mustNotErr(t, l.Roll())
	n := len(l.Segments())
	res, err := l.Clean(context.Background(), CleanConfig{UpperBound: l.LogEndOffset(), DedupeBufferBytes: 1 << 20})
	mustNotErr(t, err)
	m.pass(0, res.EndOffset, clock.ms, opts.DeleteRetentionMs)
	checkAgainstModel(t, l, m)
	checkIndexesAgree(t, l)
	segs := l.Segments()
	if res.SegmentsWritten >= res.SegmentsCleaned || len(segs) != n-res.SegmentsCleaned+res.SegmentsWritten || len(segs) >= n/2 {
		t.Fatalf("%d segments became %d: %+v", n, len(segs), res)
	}
	for _, s := range segs {
		if s.Size > opts.SegmentBytes {
			t.Fatalf("merged segment %d has %d bytes, over segment.bytes", s.BaseOffset, s.Size)
		}
	}
	// A second pass with nothing dirty rewrites nothing.
	res2, err := l.Clean(context.Background(), CleanConfig{UpperBound: l.LogEndOffset(), FirstDirtyOffset: res.EndOffset, DedupeBufferBytes: 1 << 20})
	mustNotErr(t, err)
	if res2.SegmentsWritten != 0 {
		t.Fatalf("idle pass rewrote %d segments", res2.SegmentsWritten)
	}
}

// hookFS calls onCreate before creating a file whose name has the suffix.
type hookFS struct {
	vfs.FS
	suffix   string
	onCreate func()
}

func (h *hookFS) Create(name string) (vfs.File, error) {
	if h.onCreate != nil && strings.HasSuffix(name, h.suffix) {
		f := h.onCreate
		h.onCreate = nil
		f()
	}
	return h.FS.Create(name)
}

// TestCleanAbortsWhenTheLogChanges: a truncation or retention during a
// pass makes it stop without swapping anything in; the .cleaned files go
// and the log reads as the change left it.
func TestCleanAbortsWhenTheLogChanges(t *testing.T) {
	for _, change := range []string{"truncate", "delete-records", "close"} {
		t.Run(change, func(t *testing.T) {
			clock := &testClock{ms: 1_000_000}
			opts := compactOptions(clock)
			mem := vfs.NewMem()
			fsys := &hookFS{FS: mem, suffix: logSuffix + cleanedSuffix}
			l := openTestLog(t, fsys, opts, OpenOptions{})
			defer l.Close()
			rng := rand.New(rand.NewSource(2))
			m := newCompactModel()
			for i := 0; i < 80; i++ {
				m.appendKeyed(t, l, rng, 20, clock.ms)
			}
			segs := l.Segments()
			fsys.onCreate = func() {
				switch change {
				case "truncate":
					mustNotErr(t, l.TruncateTo(segs[1].BaseOffset))
				case "delete-records":
					mustNotErr(t, l.AdvanceLogStartOffset(segs[1].BaseOffset))
				case "close":
					mustNotErr(t, l.Close())
				}
			}
			res, err := l.Clean(context.Background(), CleanConfig{UpperBound: segs[len(segs)-1].BaseOffset, DedupeBufferBytes: 1 << 16})
			if err != nil || !res.Aborted || res.SegmentsWritten != 0 {
				t.Fatalf("pass under %s: %+v, %v", change, res, err)
			}
			names, _ := mem.List(l.dir)
			for _, n := range names {
				if strings.HasSuffix(n, cleanedSuffix) || strings.HasSuffix(n, swapSuffix) {
					t.Fatalf("%s left behind", n)
				}
			}
			if change == "close" {
				return
			}
			var want string
			recs, _ := logRecords(t, l)
			for _, r := range recs {
				want += r.String()
			}
			var model string
			for _, r := range m.records {
				if r.offset >= l.LogStartOffset() && r.offset < l.LogEndOffset() {
					model += r.String()
				}
			}
			if want != model {
				t.Fatal("the log lost or changed records in an aborted pass")
			}
			checkIndexesAgree(t, l)
		})
	}
}

// TestCleanCompactedRetention: cleanup.policy=compact ignores retention.ms
// and retention.bytes; compact,delete applies them.
func TestCleanCompactedRetention(t *testing.T) {
	for _, policy := range []CleanupPolicy{CleanupCompact, CleanupCompactDelete} {
		t.Run(policy.String(), func(t *testing.T) {
			clock := &testClock{ms: 1_000_000}
			opts := compactOptions(clock)
			opts.CleanupPolicy = policy
			opts.RetentionMs = 10_000
			opts.RetentionBytes = 4096
			l := openTestLog(t, vfs.NewMem(), opts, OpenOptions{})
			defer l.Close()
			for i := 0; i < 40; i++ {
				_, err := l.Append(keyedBatch(t, batch.CompressionNone, []kv{{[]byte(fmt.Sprint(i)), bytes.Repeat([]byte("v"), 300)}}, clock.ms), 0)
				mustNotErr(t, err)
			}
			clock.advance(time.Minute)
			n, err := l.DeleteOldSegments(l.LogEndOffset())
			mustNotErr(t, err)
			if policy.Delete() != (n > 0) {
				t.Fatalf("%s: retention deleted %d segments", policy, n)
			}
		})
	}
}

func TestParseCleanupPolicy(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want CleanupPolicy
		err  bool
	}{
		{[]string{"delete"}, CleanupDelete, false},
		{[]string{"compact"}, CleanupCompact, false},
		{[]string{"compact", "delete"}, CleanupCompactDelete, false},
		{[]string{"delete", " compact"}, CleanupCompactDelete, false},
		{nil, 0, true},
		{[]string{"shred"}, 0, true},
	} {
		got, err := ParseCleanupPolicy(tc.in)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("ParseCleanupPolicy(%q) = %v, %v", tc.in, got, err)
		}
		if !tc.err && got.String() != strings.Join(map[CleanupPolicy][]string{CleanupDelete: {"delete"}, CleanupCompact: {"compact"}, CleanupCompactDelete: {"compact", "delete"}}[got], ",") {
			t.Errorf("%v.String() = %q", got, got.String())
		}
	}
	o := DefaultOptions()
	o.MinCleanableDirtyRatio = 1.5
	if err := o.validate(); err == nil {
		t.Error("min.cleanable.dirty.ratio 1.5 accepted")
	}
	o = DefaultOptions()
	o.MinCompactionLagMs, o.MaxCompactionLagMs = 10, 5
	if err := o.validate(); err == nil {
		t.Error("min.compaction.lag.ms above max accepted")
	}
}

// TestCleanConcurrentAppendsAndReads: passes run while a producer appends
// and a consumer fetches from the start over and over; every fetch sees
// whole, valid batches in offset order, and after the last pass the log
// equals the model (run with -race).
func TestCleanConcurrentAppendsAndReads(t *testing.T) {
	seed := testSeed(t)
	clock := &testClock{ms: 1_000_000}
	opts := compactOptions(clock)
	opts.Now = nil // the clock is read by three goroutines; timestamps come from the batches
	opts.DeleteRetentionMs = 3600_000
	l := openTestLog(t, vfs.NewMem(), opts, OpenOptions{})
	defer l.Close()
	m := newCompactModel()
	done := make(chan struct{})
	appendErr := make(chan error, 1)
	go func() {
		defer close(done)
		rng := rand.New(rand.NewSource(seed))
		at := goroutineTB{appendErr}
		for i := 0; i < 400; i++ {
			m.appendKeyed(at, l, rng, 30, 1000+int64(i))
		}
	}()
	readErr := make(chan error, 1)
	stopReads := make(chan struct{})
	go func() {
		defer close(readErr)
		for {
			select {
			case <-stopReads:
				return
			default:
			}
			last := int64(-1)
			for off, leo := l.LogStartOffset(), l.LogEndOffset(); off < leo; {
				b, err := l.ReadBatches(off, 2000, leo)
				if err != nil {
					readErr <- fmt.Errorf("read %d: %w", off, err)
					return
				}
				if len(b) == 0 {
					break
				}
				for len(b) > 0 {
					n, h, err := batch.Scan(b)
					if err == nil {
						_, err = batch.Validate(b[:n], batch.Limits{Origin: batch.AppendOriginReplication})
					}
					if err != nil || h.BaseOffset <= last {
						readErr <- fmt.Errorf("read %d: batch %d after %d: %v", off, h.BaseOffset, last, err)
						return
					}
					last = h.LastOffset()
					off = last + 1
					b = b[n:]
				}
			}
		}
	}()
	type pass struct{ firstDirty, end int64 }
	var passes []pass
	dirty := int64(0)
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		res, err := l.Clean(context.Background(), CleanConfig{UpperBound: l.LogEndOffset(), FirstDirtyOffset: dirty, DedupeBufferBytes: 1 << 20})
		mustNotErr(t, err)
		if res.Aborted {
			t.Fatalf("pass aborted with no truncation: %+v", res)
		}
		passes = append(passes, pass{res.FirstDirtyOffset, res.EndOffset})
		dirty = res.EndOffset
	}
	close(stopReads)
	if err := <-readErr; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-appendErr:
		t.Fatal(err)
	default:
	}
	for _, p := range passes {
		m.pass(p.firstDirty, p.end, 0, opts.DeleteRetentionMs)
	}
	checkAgainstModel(t, l, m)
	checkIndexesAgree(t, l)
	if len(passes) < 2 {
		t.Fatalf("only %d passes ran", len(passes))
	}
}

// goroutineTB lets helpers that fail through tb run on another goroutine:
// the failure goes to a channel and the goroutine exits.
type goroutineTB struct{ errs chan<- error }

func (g goroutineTB) Helper() {}
func (g goroutineTB) Fatal(args ...any) {
	g.errs <- errors.New(fmt.Sprint(args...))
	runtime.Goexit()
}
func (g goroutineTB) Fatalf(format string, args ...any) {
	g.errs <- fmt.Errorf(format, args...)
	runtime.Goexit()
}

// TestCleanLogAppendTime: a rewritten LogAppendTime batch keeps its type
// and the broker's timestamp on every record, tombstone horizon or not.
func TestCleanLogAppendTime(t *testing.T) {
	clock := &testClock{ms: 5_000_000}
	opts := compactOptions(clock)
	opts.MessageTimestampType = LogAppendTime
	l := openTestLog(t, vfs.NewMem(), opts, OpenOptions{})
	defer l.Close()
	appendAt := map[int64]int64{}
	for i := 0; i < 6; i++ {
		recs := []kv{{[]byte("a"), []byte(fmt.Sprint(i))}, {[]byte(fmt.Sprint("k", i)), nil}, {[]byte("b"), []byte(fmt.Sprint(i))}}
		info, err := l.Append(keyedBatch(t, batch.CompressionZstd, recs, 1), 0)
		mustNotErr(t, err)
		for o := info.FirstOffset; o <= info.LastOffset; o++ {
			appendAt[o] = clock.ms
		}
		clock.advance(time.Second)
	}
	mustNotErr(t, l.Roll())
	_, err := l.Clean(context.Background(), CleanConfig{UpperBound: l.LogEndOffset(), DedupeBufferBytes: 1 << 16})
	mustNotErr(t, err)
	recs, hs := logRecords(t, l)
	if len(recs) != 8 {
		t.Fatalf("records after cleaning: %v", recs)
	}
	for _, r := range recs {
		if r.ts != appendAt[r.offset] {
			t.Fatalf("record %v: timestamp %d, appended at %d", r, r.ts, appendAt[r.offset])
		}
	}
	for _, h := range hs {
		if h.TimestampType() != batch.LogAppendTime || h.CompressionType() != batch.CompressionZstd || !h.HasDeleteHorizonMs() {
			t.Fatalf("batch %d: %v %v horizon %v", h.BaseOffset, h.TimestampType(), h.CompressionType(), h.HasDeleteHorizonMs())
		}
	}
	checkIndexesAgree(t, l)
}
