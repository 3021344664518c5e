package engine

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
	"pgregory.net/rapid"
)

func TestAppendReadAcrossRollsAndReopen(t *testing.T) {
	clock := &testClock{ms: 1_700_000_000_000}
	fsys := vfs.NewMem()
	opts := testOptions(clock)
	l := openTestLog(t, fsys, opts, OpenOptions{})
	var want []byte
	for i := 0; i < 200; i++ {
		b := makeBatch(t, batch.CompressionNone, i, 1+i%5, 100+i*7%900, clock.ms)
		info, err := l.Append(b, 3)
		mustNotErr(t, err)
		if info.FirstOffset != int64(len(batchesOf(t, want))) && i == 0 {
			t.Fatalf("first offset %d", info.FirstOffset)
		}
		want = append(want, withOffset(b, info.FirstOffset, 3)...)
		clock.advance(time.Millisecond)
	}
	if n := len(l.Segments()); n < 3 {
		t.Fatalf("expected several segments with 64 KiB segment.bytes, got %d", n)
	}
	if got := readAll(t, l); !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes, wrote %d; differ", len(got), len(want))
	}
	if l.DurableOffset() != l.LogEndOffset() {
		t.Fatalf("flush policy ack: durable %d, log end %d", l.DurableOffset(), l.LogEndOffset())
	}
	leo := l.LogEndOffset()
	mustNotErr(t, l.Close())

	l2, stats, err := Open(fsys, "/data/t-0", TopicPartition{"t", 0}, opts, OpenOptions{RecoveryPoint: leo})
	mustNotErr(t, err)
	defer l2.Close()
	if stats.SegmentsScanned != 0 {
		t.Fatalf("clean reopen at the recovery point scanned %d segments", stats.SegmentsScanned)
	}
	if l2.LogEndOffset() != leo {
		t.Fatalf("reopened log end offset %d, want %d", l2.LogEndOffset(), leo)
	}
	if got := readAll(t, l2); !bytes.Equal(got, want) {
		t.Fatal("reopened log differs")
	}
	if ep := l2.LeaderEpochs(); len(ep) != 1 || ep[0] != (EpochEntry{3, 0}) {
		t.Fatalf("leader epochs %v", ep)
	}
	// Reopen with no recovery point: every segment is scanned, same result.
	mustNotErr(t, l2.Close())
	l3, stats, err := Open(fsys, "/data/t-0", TopicPartition{"t", 0}, opts, OpenOptions{})
	mustNotErr(t, err)
	defer l3.Close()
	if stats.SegmentsScanned != len(l3.Segments()) || stats.TruncatedBytes != 0 {
		t.Fatalf("full recovery stats %+v", stats)
	}
	if got := readAll(t, l3); !bytes.Equal(got, want) {
		t.Fatal("fully recovered log differs")
	}
}

func TestAppendRejectsBadBatches(t *testing.T) {
	l := openTestLog(t, vfs.NewMem(), testOptions(nil), OpenOptions{})
	defer l.Close()
	good := makeBatch(t, batch.CompressionNone, 1, 3, 10, 1000)
	flip := append([]byte(nil), good...)
	flip[len(flip)-1] ^= 1
	magic := append([]byte(nil), good...)
	magic[batch.MagicOffset] = 1
	big := makeBatch(t, batch.CompressionNone, 1, 1, 2<<20, 1000)
	for name, tc := range map[string]struct {
		b    []byte
		want error
	}{
		"crc":       {flip, batch.ErrCRC},
		"magic":     {magic, batch.ErrUnsupportedMagic},
		"truncated": {good[:len(good)-3], batch.ErrCorrupt},
		"trailing":  {append(append([]byte(nil), good...), 1, 2, 3), batch.ErrIncomplete},
		"empty":     {nil, batch.ErrCorrupt},
		"too large": {big, ErrRecordTooLarge},
	} {
		_, err := l.Append(tc.b, 0)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", name, err, tc.want)
		}
	}
	if l.LogEndOffset() != 0 {
		t.Fatalf("rejected batches moved the log end offset to %d", l.LogEndOffset())
	}
}

func TestAppendEachCodecReadsBackRecords(t *testing.T) {
	l := openTestLog(t, vfs.NewMem(), testOptions(nil), OpenOptions{})
	defer l.Close()
	codecs := []batch.CompressionType{batch.CompressionNone, batch.CompressionGzip, batch.CompressionSnappy, batch.CompressionLZ4, batch.CompressionZstd}
	for i, c := range codecs {
		if _, err := l.Append(makeBatch(t, c, i, 50, 200, 5000), 0); err != nil {
			t.Fatalf("%v: %v", c, err)
		}
	}
	all := readAll(t, l)
	var n int
	for i, b := range batchesOf(t, all) {
		h, err := batch.ParseHeader(b)
		mustNotErr(t, err)
		if h.CompressionType() != codecs[i] {
			t.Fatalf("batch %d codec %v, want %v", i, h.CompressionType(), codecs[i])
		}
		j := 0
		err = batch.Records(b, batch.Limits{Origin: batch.AppendOriginReplication}, func(r batch.Record) error {
			if r.Offset != int64(n) || !bytes.HasPrefix(r.Value, []byte(fmt.Sprintf("b%d-r%d|", i, j))) {
				t.Fatalf("record %d: offset %d value %q", n, r.Offset, r.Value[:10])
			}
			n++
			j++
			return nil
		})
		mustNotErr(t, err)
	}
	if n != 250 {
		t.Fatalf("read %d records, want 250", n)
	}
}

// TestIndexLookupsMatchBruteForce is a property test: for random batch
// sizes, index intervals and segment sizes, Read at every offset starts at
// the batch a linear scan finds, and OffsetForTimestamp agrees with a
// linear scan over records.
func TestIndexLookupsMatchBruteForce(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		clock := &testClock{ms: 1_000_000}
		opts := testOptions(clock)
		opts.IndexIntervalBytes = int64(rapid.IntRange(0, 4096).Draw(rt, "indexInterval"))
		opts.SegmentBytes = int64(rapid.IntRange(8192, 32768).Draw(rt, "segmentBytes"))
		l := openTestLog(rt, vfs.NewMem(), opts, OpenOptions{})
		defer l.Close()
		type rec struct{ offset, ts int64 }
		var recs []rec
		var batches []batchPosition
		nb := rapid.IntRange(1, 60).Draw(rt, "batches")
		for i := 0; i < nb; i++ {
			n := rapid.IntRange(1, 8).Draw(rt, "records")
			size := rapid.IntRange(0, 600).Draw(rt, "valueSize")
			ts := clock.ms + int64(rapid.IntRange(-50, 100).Draw(rt, "tsJitter"))
			b := makeBatch(rt, batch.CompressionNone, i, n, size, ts)
			info, err := l.Append(b, 0)
			if err != nil {
				rt.Fatal(err)
			}
			for j := 0; j < n; j++ {
				recs = append(recs, rec{info.FirstOffset + int64(j), ts + int64(j)})
			}
			batches = append(batches, batchPosition{BaseOffset: info.FirstOffset, LastOffset: info.LastOffset})
			clock.advance(time.Duration(rapid.IntRange(0, 20).Draw(rt, "step")) * time.Millisecond)
		}
		leo := l.LogEndOffset()
		for off := int64(0); off < leo; off++ {
			r, err := l.Read(off, 1, leo, true)
			if err != nil {
				rt.Fatal(err)
			}
			// Brute force: the batch whose range holds off.
			var want int64 = -1
			for _, b := range batches {
				if b.BaseOffset <= off && off <= b.LastOffset {
					want = b.BaseOffset
				}
			}
			if r.FirstOffset != want {
				rt.Fatalf("Read(%d) starts at batch %d, want %d", off, r.FirstOffset, want)
			}
			got, err := r.Bytes()
			r.Release()
			if err != nil {
				rt.Fatal(err)
			}
			if n, h, err := batch.Scan(got); err != nil || n != len(got) || h.BaseOffset != want {
				rt.Fatalf("Read(%d) with minOneMessage: %d bytes, %v, base %d", off, len(got), err, h.BaseOffset)
			}
		}
		// Reading with an upper bound never returns a batch at or past it.
		hw := int64(rapid.IntRange(0, int(leo)).Draw(rt, "hw"))
		if hw > 0 {
			b, err := l.ReadBatches(0, 1<<30, hw)
			if err != nil {
				rt.Fatal(err)
			}
			last, _ := lastOffsetIn(b)
			for _, bp := range batches {
				if bp.LastOffset < hw && bp.LastOffset > last && bp.BaseOffset >= l.Segments()[len(l.Segments())-1].BaseOffset {
					// Only the segment holding offset 0 is read at once.
				}
			}
			if last >= hw {
				rt.Fatalf("read up to %d returned offset %d", hw, last)
			}
		}
		for probe := 0; probe < 20; probe++ {
			target := clock.ms - 200 + int64(rapid.IntRange(0, 400).Draw(rt, "target"))
			off, ts, _, found, err := l.OffsetForTimestamp(target)
			if err != nil {
				rt.Fatal(err)
			}
			var wantOff, wantTs int64 = -1, -1
			for _, r := range recs {
				if r.ts >= target {
					wantOff, wantTs = r.offset, r.ts
					break
				}
			}
			if (wantOff >= 0) != found || (found && (off != wantOff || ts != wantTs)) {
				rt.Fatalf("OffsetForTimestamp(%d) = (%d, %d, %v), brute force (%d, %d)", target, off, ts, found, wantOff, wantTs)
			}
		}
	})
}

func TestTimeIndexAnswersFirstRecordAtOrAfter(t *testing.T) {
	// Timestamps that go backwards inside the log: Kafka's answer is the
	// first record (by offset) with timestamp >= target.
	l := openTestLog(t, vfs.NewMem(), testOptions(nil), OpenOptions{})
	defer l.Close()
	for i, ts := range []int64{100, 300, 200, 500, 400} {
		_, err := l.Append(makeBatch(t, batch.CompressionNone, i, 1, 10, ts), 0)
		mustNotErr(t, err)
	}
	for _, tc := range []struct{ target, off, ts int64 }{
		{50, 0, 100}, {100, 0, 100}, {150, 1, 300}, {250, 1, 300}, {350, 3, 500}, {500, 3, 500},
	} {
		off, ts, _, found, err := l.OffsetForTimestamp(tc.target)
		if err != nil || !found || off != tc.off || ts != tc.ts {
			t.Errorf("OffsetForTimestamp(%d) = (%d, %d, %v, %v), want (%d, %d)", tc.target, off, ts, found, err, tc.off, tc.ts)
		}
	}
	if _, _, _, found, _ := l.OffsetForTimestamp(501); found {
		t.Error("found a record after the largest timestamp")
	}
	off, ts, _, found, err := l.OffsetForTimestamp(MaxTimestamp)
	if err != nil || !found || off != 3 || ts != 500 {
		t.Errorf("max timestamp: (%d, %d, %v, %v)", off, ts, found, err)
	}
	if off, _, _, _, _ := l.OffsetForTimestamp(LatestTimestamp); off != 5 {
		t.Errorf("latest: %d", off)
	}
	if off, _, _, _, _ := l.OffsetForTimestamp(EarliestTimestamp); off != 0 {
		t.Errorf("earliest: %d", off)
	}
}

func TestGroupCommitSharesFdatasync(t *testing.T) {
	l := openTestLog(t, vfs.NewMem(), testOptions(nil), OpenOptions{})
	defer l.Close()
	const writers, each = 16, 20
	b := makeBatch(t, batch.CompressionNone, 0, 1, 100, 1)
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		go func() {
			for i := 0; i < each; i++ {
				if _, err := l.Append(append([]byte(nil), b...), 0); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for w := 0; w < writers; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if l.LogEndOffset() != writers*each || l.DurableOffset() != writers*each {
		t.Fatalf("log end %d durable %d", l.LogEndOffset(), l.DurableOffset())
	}
	syncs := l.commit.Syncs()
	t.Logf("%d appends, %d fdatasyncs", writers*each, syncs)
	if syncs > writers*each {
		t.Fatalf("more fdatasyncs (%d) than appends", syncs)
	}
}

func TestFlushIntervalPolicy(t *testing.T) {
	clock := &testClock{ms: 1}
	opts := testOptions(clock)
	opts.FlushPolicy = FlushInterval
	opts.FlushIntervalMessages = 10
	opts.FlushIntervalMs = 1000
	l := openTestLog(t, vfs.NewMem(), opts, OpenOptions{})
	defer l.Close()
	for i := 0; i < 9; i++ {
		_, err := l.Append(makeBatch(t, batch.CompressionNone, i, 1, 10, 1), 0)
		mustNotErr(t, err)
	}
	if l.DurableOffset() != 0 {
		t.Fatalf("interval policy synced after 9 messages: durable %d", l.DurableOffset())
	}
	_, err := l.Append(makeBatch(t, batch.CompressionNone, 9, 1, 10, 1), 0)
	mustNotErr(t, err)
	if l.DurableOffset() != 10 {
		t.Fatalf("flush.messages=10 did not sync: durable %d", l.DurableOffset())
	}
	_, err = l.Append(makeBatch(t, batch.CompressionNone, 10, 1, 10, 1), 0)
	mustNotErr(t, err)
	mustNotErr(t, l.flushIfDue(clock.ms+999))
	if l.DurableOffset() != 10 {
		t.Fatal("flush.ms synced early")
	}
	mustNotErr(t, l.flushIfDue(clock.ms+1000))
	if l.DurableOffset() != 11 {
		t.Fatalf("flush.ms did not sync: durable %d", l.DurableOffset())
	}
}

// A leader deposed before it appended anything leaves an epoch entry at
// its log end. As a follower it truncates at (or above) its log end, and
// that must drop the entry: otherwise the older epoch's batches it copies
// next sit under the later entry, and its next truncation by epoch cuts
// committed records (found by the replication simulator, seed 1924 of
// TestReplicationSim).
func TestTruncateAtLogEndDropsEmptyEpoch(t *testing.T) {
	fsys := vfs.NewMem()
	l := openTestLog(t, fsys, testOptions(nil), OpenOptions{})
	_, err := l.Append(makeBatch(t, batch.CompressionNone, 0, 2, 10, 1000), 0)
	mustNotErr(t, err)
	mustNotErr(t, l.AssignLeaderEpoch(1))
	if ep := l.LeaderEpochs(); len(ep) != 2 || ep[1] != (EpochEntry{1, 2}) {
		t.Fatalf("epochs after becoming leader: %v", ep)
	}
	mustNotErr(t, l.TruncateTo(l.LogEndOffset()))
	if ep := l.LeaderEpochs(); len(ep) != 1 || ep[0] != (EpochEntry{0, 0}) {
		t.Fatalf("epochs after truncating at the log end: %v, want only epoch 0", ep)
	}
	if e, off := l.EndOffsetForEpoch(0); e != 0 || off != 2 {
		t.Fatalf("EndOffsetForEpoch(0) = %d, %d, want 0, 2", e, off)
	}
	// Durably: the checkpoint was rewritten.
	mustNotErr(t, l.Close())
	l = openTestLog(t, fsys.Crash(vfs.CrashOptions{}), testOptions(nil), OpenOptions{})
	if ep := l.LeaderEpochs(); len(ep) != 1 {
		t.Fatalf("epochs after a crash: %v, want only epoch 0", ep)
	}
}

func TestTruncateTo(t *testing.T) {
	fsys := vfs.NewMem()
	opts := testOptions(nil)
	opts.SegmentBytes = 4096
	l := openTestLog(t, fsys, opts, OpenOptions{})
	var batches [][]byte
	for i := 0; i < 40; i++ {
		epoch := int32(i / 10)
		b := makeBatch(t, batch.CompressionNone, i, 2, 300, int64(1000+i))
		info, err := l.Append(b, epoch)
		mustNotErr(t, err)
		batches = append(batches, withOffset(b, info.FirstOffset, epoch))
	}
	if len(l.Segments()) < 4 {
		t.Fatalf("want several segments, got %d", len(l.Segments()))
	}
	// Offset 31 is inside batch 15 (offsets 30, 31): the whole batch goes.
	mustNotErr(t, l.TruncateTo(31))
	if l.LogEndOffset() != 30 {
		t.Fatalf("log end after truncateTo(31): %d", l.LogEndOffset())
	}
	if got := readAll(t, l); !bytes.Equal(got, bytes.Join(batches[:15], nil)) {
		t.Fatal("truncated log differs")
	}
	if ep := l.LeaderEpochs(); len(ep) != 2 || ep[1] != (EpochEntry{1, 20}) {
		t.Fatalf("epochs after truncation: %v", ep)
	}
	if e, off := l.EndOffsetForEpoch(1); e != 1 || off != 30 {
		t.Fatalf("EndOffsetForEpoch(1) = %d, %d", e, off)
	}
	// Appending continues from the new end, and survives a reopen.
	b := makeBatch(t, batch.CompressionNone, 99, 3, 50, 5000)
	info, err := l.Append(b, 7)
	mustNotErr(t, err)
	if info.FirstOffset != 30 {
		t.Fatalf("append after truncation at %d", info.FirstOffset)
	}
	want := append(bytes.Join(batches[:15], nil), withOffset(b, 30, 7)...)
	mustNotErr(t, l.Close())
	l2 := openTestLog(t, fsys, opts, OpenOptions{})
	defer l2.Close()
	if got := readAll(t, l2); !bytes.Equal(got, want) {
		t.Fatal("reopened truncated log differs")
	}
	// Truncating below the first segment empties the log at that offset.
	mustNotErr(t, l2.TruncateFullyAndStartAt(100))
	if l2.LogStartOffset() != 100 || l2.LogEndOffset() != 100 || len(l2.Segments()) != 1 {
		t.Fatalf("after TruncateFullyAndStartAt: start %d end %d segments %d", l2.LogStartOffset(), l2.LogEndOffset(), len(l2.Segments()))
	}
}

func TestFollowerAppendKeepsOffsets(t *testing.T) {
	leader := openTestLog(t, vfs.NewMem(), testOptions(nil), OpenOptions{})
	defer leader.Close()
	for i := 0; i < 10; i++ {
		_, err := leader.Append(makeBatch(t, batch.CompressionLZ4, i, 4, 100, 1), int32(i/3))
		mustNotErr(t, err)
	}
	data := readAll(t, leader)
	follower := openTestLog(t, vfs.NewMem(), testOptions(nil), OpenOptions{})
	defer follower.Close()
	_, err := follower.AppendAsFollower(append([]byte(nil), data...))
	mustNotErr(t, err)
	if got := readAll(t, follower); !bytes.Equal(got, data) {
		t.Fatal("follower log differs from the leader's")
	}
	if a, b := leader.LeaderEpochs(), follower.LeaderEpochs(); !equalEpochs(a, b) {
		t.Fatalf("epochs: leader %v follower %v", a, b)
	}
	// A gap or an overlap is refused.
	if _, err := follower.AppendAsFollower(withOffset(makeBatch(t, batch.CompressionNone, 1, 1, 1, 1), 41, 3)); !errors.Is(err, ErrInvalidOffsets) {
		t.Fatalf("gap: %v", err)
	}
	if _, err := follower.AppendAsFollower(withOffset(makeBatch(t, batch.CompressionNone, 1, 1, 1, 1), 39, 3)); !errors.Is(err, ErrInvalidOffsets) {
		t.Fatalf("overlap: %v", err)
	}
}

func TestRetention(t *testing.T) {
	clock := &testClock{ms: 10_000_000}
	opts := testOptions(clock)
	opts.SegmentBytes = 4096
	fsys := vfs.NewMem()
	l := openTestLog(t, fsys, opts, OpenOptions{})
	defer l.Close()
	for i := 0; i < 30; i++ {
		_, err := l.Append(makeBatch(t, batch.CompressionNone, i, 1, 1000, clock.ms), 0)
		mustNotErr(t, err)
		clock.advance(time.Second)
	}
	segs := l.Segments()
	leo := l.LogEndOffset()
	// Nothing is old enough yet.
	setOptions(l, func(o *Options) { o.RetentionMs = 3600_000 })
	if n, err := l.DeleteOldSegments(leo); err != nil || n != 0 {
		t.Fatalf("retention deleted %d (%v) with nothing expired", n, err)
	}
	// Time: segments whose newest record is over 10 s old go.
	setOptions(l, func(o *Options) { o.RetentionMs = 10_000 })
	n, err := l.DeleteOldSegments(leo)
	mustNotErr(t, err)
	var want int
	for _, s := range segs {
		if clock.ms-s.MaxTimestamp > 10_000 {
			want++
		}
	}
	if n != want || n == 0 {
		t.Fatalf("time retention deleted %d segments, want %d", n, want)
	}
	if l.LogStartOffset() != l.Segments()[0].BaseOffset {
		t.Fatalf("log start %d, first segment %d", l.LogStartOffset(), l.Segments()[0].BaseOffset)
	}
	if _, err := l.Read(0, 100, leo, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the log start: %v", err)
	}
	// The high watermark holds back deletion.
	setOptions(l, func(o *Options) { o.RetentionMs = 0 })
	clock.advance(time.Hour)
	hwSeg := l.Segments()[1]
	n, err = l.DeleteOldSegments(hwSeg.BaseOffset)
	mustNotErr(t, err)
	if n != 1 || l.Segments()[0].BaseOffset != hwSeg.BaseOffset {
		t.Fatalf("deleted %d segments past the high watermark", n)
	}
	// Size: keep at most 3 segments' worth.
	setOptions(l, func(o *Options) { o.RetentionMs = -1 })
	setOptions(l, func(o *Options) { o.RetentionBytes = 3 * 4096 })
	_, err = l.DeleteOldSegments(leo)
	mustNotErr(t, err)
	if l.Size() > 3*4096 {
		t.Fatalf("size retention left %d bytes", l.Size())
	}
	// Everything expired: the active segment goes too, after a roll.
	setOptions(l, func(o *Options) { o.RetentionBytes = 0 })
	_, err = l.DeleteOldSegments(leo)
	mustNotErr(t, err)
	if l.LogStartOffset() != leo || l.LogEndOffset() != leo || l.Size() != 0 {
		t.Fatalf("after deleting all: start %d end %d size %d", l.LogStartOffset(), l.LogEndOffset(), l.Size())
	}
	names, _ := fsys.List("/data/t-0")
	for _, n := range names {
		if n != LeaderEpochCheckpointFile && !bytes.HasPrefix([]byte(n), []byte("00000000000000000030")) {
			t.Errorf("file %s left behind", n)
		}
	}
}

func TestAdvanceLogStartOffset(t *testing.T) {
	opts := testOptions(nil)
	opts.SegmentBytes = 4096
	l := openTestLog(t, vfs.NewMem(), opts, OpenOptions{})
	defer l.Close()
	for i := 0; i < 20; i++ {
		_, err := l.Append(makeBatch(t, batch.CompressionNone, i, 2, 500, 1), 0)
		mustNotErr(t, err)
	}
	mustNotErr(t, l.AdvanceLogStartOffset(21))
	if l.LogStartOffset() != 21 {
		t.Fatalf("log start %d", l.LogStartOffset())
	}
	if l.Segments()[0].BaseOffset > 21 || l.Segments()[0].NextOffset <= 21 {
		t.Fatalf("first segment %+v does not hold offset 21", l.Segments()[0])
	}
	if _, err := l.Read(20, 100, 40, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the start: %v", err)
	}
	r, err := l.Read(21, 100, 40, true)
	mustNotErr(t, err)
	if r.FirstOffset != 20 {
		// The batch holding 21 starts at 20; clients skip offsets below
		// their fetch offset.
		t.Fatalf("first batch %d", r.FirstOffset)
	}
	r.Release()
	if err := l.AdvanceLogStartOffset(41); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("advance beyond the end: %v", err)
	}
}

func TestRandomWorkloadAgainstModel(t *testing.T) {
	// A seeded random mix of appends, truncations, retention and reopens
	// on the OS file system, checked against a model of the log.
	seed := testSeed(t)
	rng := rand.New(rand.NewSource(seed))
	dir := t.TempDir()
	fsys := vfs.NewOS()
	opts := testOptions(nil)
	opts.SegmentBytes = 8192
	// The log start offset lives in the data directory's checkpoint, which
	// the Manager writes; here the test carries it across reopens.
	var logStartOffset int64
	open := func() *Log {
		l, _, err := Open(fsys, dir+"/t-0", TopicPartition{"t", 0}, opts, OpenOptions{LogStartOffset: logStartOffset})
		mustNotErr(t, err)
		return l
	}
	l := open()
	var model [][]byte // batches as stored, in order
	for step := 0; step < 400; step++ {
		op := rng.Intn(20)
		if testing.Verbose() {
			t.Logf("step %d op %d model %d batches leo %d", step, op, len(model), l.LogEndOffset())
		}
		switch {
		case op < 15:
			b := makeBatch(t, batch.CompressionType(rng.Intn(5)), step, 1+rng.Intn(4), rng.Intn(700), int64(step))
			info, err := l.Append(b, int32(step/50))
			mustNotErr(t, err)
			model = append(model, withOffset(b, info.FirstOffset, int32(step/50)))
		case op < 17 && len(model) > 0:
			k := rng.Intn(len(model))
			h, _ := batch.ParseHeader(model[k])
			mustNotErr(t, l.TruncateTo(h.BaseOffset))
			model = model[:k]
		case op < 18:
			logStartOffset = l.LogStartOffset()
			mustNotErr(t, l.Close())
			l = open()
		default:
			if len(model) > 2 {
				h, _ := batch.ParseHeader(model[len(model)/2])
				mustNotErr(t, l.AdvanceLogStartOffset(h.BaseOffset))
				model = model[len(model)/2:]
			}
		}
		if step%25 == 0 || step == 399 {
			got := readAll(t, l)
			if !bytes.Equal(got, bytes.Join(model, nil)) {
				t.Fatalf("step %d: log differs from model (%d vs %d bytes)", step, len(got), len(bytes.Join(model, nil)))
			}
		}
	}
	mustNotErr(t, l.Close())
}

// ReadWhole never ends inside a batch: where maxBytes cuts one, the slice
// stops before it; a first batch larger than maxBytes comes whole
// (KIP-74). Read, for consumers, cuts at maxBytes as Kafka does.
func TestReadWholeStopsBeforeACutBatch(t *testing.T) {
	l := openTestLog(t, vfs.NewMem(), testOptions(nil), OpenOptions{})
	defer l.Close()
	var sizes []int64
	for i := 0; i < 6; i++ {
		b := makeBatch(t, batch.CompressionNone, i, 3, 100+50*i, 1000)
		sizes = append(sizes, int64(len(b)))
		if _, err := l.Append(b, 0); err != nil {
			t.Fatal(err)
		}
	}
	leo := l.LogEndOffset()
	sum := func(n int) (s int64) {
		for _, x := range sizes[:n] {
			s += x
		}
		return s
	}
	for _, c := range []struct {
		maxBytes int64
		want     int64
	}{
		{1, sum(1)},            // one batch, whole, though larger
		{sum(1) + 1, sum(1)},   // the second does not fit
		{sum(2), sum(2)},       // ends exactly at a batch
		{sum(4) - 1, sum(3)},   // the fourth is cut: left out
		{sum(6) + 100, sum(6)}, // all of it
	} {
		r, err := l.ReadWhole(0, c.maxBytes, leo)
		if err != nil {
			t.Fatal(err)
		}
		if r.Slice.Size != c.want {
			t.Errorf("ReadWhole(maxBytes %d) = %d bytes, want %d", c.maxBytes, r.Slice.Size, c.want)
		}
		r.Release()
		r, err = l.Read(0, c.maxBytes, leo, true)
		if err != nil {
			t.Fatal(err)
		}
		if want := min(max(c.maxBytes, sizes[0]), sum(6)); r.Slice.Size != want {
			t.Errorf("Read(maxBytes %d) = %d bytes, want %d (cut as Kafka cuts)", c.maxBytes, r.Slice.Size, want)
		}
		r.Release()
	}
}
