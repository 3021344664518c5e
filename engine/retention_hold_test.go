package engine

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// TestRetentionHold: retention.bytes deletes nothing holding an offset at
// or above the hold's offset while the held bytes are within MaxBytes;
// past it the oldest held segments go, reported as dropped; a negative
// MaxBytes never gives way; the log start offset is never held.
func TestRetentionHold(t *testing.T) {
	clock := &testClock{ms: 10_000_000}
	opts := testOptions(clock)
	opts.SegmentBytes = 4096
	l := openTestLog(t, vfs.NewMem(), opts, OpenOptions{})
	defer l.Close()
	for i := 0; i < 30; i++ {
		_, err := l.Append(makeBatch(t, batch.CompressionNone, i, 1, 1000, clock.ms), 0)
		mustNotErr(t, err)
		clock.advance(time.Second)
	}
	leo := l.LogEndOffset()
	segs := l.Segments()
	if len(segs) < 6 {
		t.Fatalf("want at least 6 segments, got %d", len(segs))
	}
	setOptions(l, func(o *Options) { o.RetentionBytes = 4096 })

	// Held from the third segment on, with no budget limit: only the two
	// segments wholly below the hold go.
	hold := RetentionHold{Offset: segs[2].BaseOffset, MaxBytes: -1}
	n, drop, err := l.DeleteOldSegmentsHeld(leo, hold)
	mustNotErr(t, err)
	if n != 2 || drop != (RetentionDrop{}) || l.LogStartOffset() != segs[2].BaseOffset {
		t.Fatalf("deleted %d, drop %+v, start %d; want 2, none, %d", n, drop, l.LogStartOffset(), segs[2].BaseOffset)
	}
	// A hold inside a segment keeps that segment.
	hold = RetentionHold{Offset: segs[3].BaseOffset + 1, MaxBytes: -1}
	n, drop, err = l.DeleteOldSegmentsHeld(leo, hold)
	mustNotErr(t, err)
	if n != 1 || drop != (RetentionDrop{}) || l.LogStartOffset() != segs[3].BaseOffset {
		t.Fatalf("deleted %d, drop %+v, start %d; want 1, none, %d", n, drop, l.LogStartOffset(), segs[3].BaseOffset)
	}
	// Within budget nothing held goes.
	size := l.Size()
	n, _, err = l.DeleteOldSegmentsHeld(leo, RetentionHold{Offset: 0, MaxBytes: size})
	mustNotErr(t, err)
	if n != 0 || l.Size() != size {
		t.Fatalf("deleted %d within the budget", n)
	}
	// Past it, the oldest held segments go until the held bytes fit, and
	// are reported.
	budget := size - segs[3].Size - 1
	n, drop, err = l.DeleteOldSegmentsHeld(leo, RetentionHold{Offset: 0, MaxBytes: budget})
	mustNotErr(t, err)
	want := RetentionDrop{From: segs[3].BaseOffset, To: segs[5].BaseOffset, Bytes: segs[3].Size + segs[4].Size}
	if n != 2 || drop != want || l.Size() > budget {
		t.Fatalf("deleted %d, drop %+v, size %d; want 2, %+v, at most %d", n, drop, l.Size(), want, budget)
	}
	// The log start offset is never held.
	mustNotErr(t, l.AdvanceLogStartOffset(segs[6].BaseOffset))
	if l.Segments()[0].BaseOffset != segs[6].BaseOffset {
		t.Fatalf("first segment %d after advancing the start to %d", l.Segments()[0].BaseOffset, segs[6].BaseOffset)
	}
	// Without a hold, retention.bytes applies as before.
	size = l.Size()
	n, err = l.DeleteOldSegments(leo)
	mustNotErr(t, err)
	if n == 0 || l.Size() >= size {
		t.Fatalf("unheld retention deleted %d, left %d bytes", n, l.Size())
	}
}

// TestManagerRetentionHold: RunRetention asks the hook for the holds once
// a pass, applies them to the partitions named, leaves the others to
// retention alone, and reports what it deleted past a hold's budget.
func TestManagerRetentionHold(t *testing.T) {
	opts := testOptions(nil)
	opts.SegmentBytes = 4096
	opts.RetentionBytes = 4096
	m, err := OpenManager(vfs.NewMem(), "/data", ManagerConfig{ClusterID: "hold", NodeID: 1, Defaults: opts})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	held, free := TopicPartition{"held", 0}, TopicPartition{"free", 0}
	for _, tp := range []TopicPartition{held, free} {
		l, err := m.GetOrCreateLog(tp)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 40; i++ {
			_, err := l.Append(makeBatch(t, batch.CompressionNone, i, 1, 300, int64(1000+i)), 0)
			mustNotErr(t, err)
		}
	}
	budget := int64(-1)
	asked := 0
	var drops []RetentionDrop
	m.SetRetentionHold(func() map[TopicPartition]RetentionHold {
		asked++
		return map[TopicPartition]RetentionHold{held: {Offset: 0, MaxBytes: budget}}
	}, func(tp TopicPartition, d RetentionDrop) {
		if tp != held {
			t.Errorf("a drop reported for %s", tp)
		}
		drops = append(drops, d)
	})
	hw := func(l *Log) int64 { return l.LogEndOffset() }
	if _, err := m.RunRetention(hw); err != nil {
		t.Fatal(err)
	}
	if s := m.Log(held).LogStartOffset(); s != 0 || asked != 1 || len(drops) != 0 {
		t.Fatalf("held log starts at %d after a pass (asked %d, drops %v)", s, asked, drops)
	}
	if m.Log(free).LogStartOffset() == 0 {
		t.Fatal("retention deleted nothing of the log no hold names")
	}
	// Past the budget: the oldest held segments go, reported.
	budget = 2 * 4096
	if _, err := m.RunRetention(hw); err != nil {
		t.Fatal(err)
	}
	s := m.Log(held).LogStartOffset()
	if s == 0 || len(drops) != 1 || drops[0].From != 0 || drops[0].To != s || drops[0].Bytes <= 0 {
		t.Fatalf("held log starts at %d, drops %+v", s, drops)
	}
	// Without the hook, retention alone.
	m.SetRetentionHold(nil, nil)
	if _, err := m.RunRetention(hw); err != nil {
		t.Fatal(err)
	}
	if m.Log(held).Size() > 2*4096 {
		t.Fatalf("held log keeps %d bytes with the hold off", m.Log(held).Size())
	}
}

// TestCleanerHold: a hold with Cleaner set bounds the log cleaner as the
// high watermark does: after a pass every record at or past the hold's
// offset is still in the log (an uplink has not forwarded it), while the
// log below it is compacted. A hold without Cleaner (a follower's, or a
// leader's past its budget under drop-oldest) leaves the cleaner alone.
func TestCleanerHold(t *testing.T) {
	clock := &testClock{ms: 1_000_000}
	opts := compactOptions(clock)
	opts.MinCleanableDirtyRatio = 0.01
	m, err := OpenManager(vfs.NewMem(), "/data", ManagerConfig{ClusterID: "hold", NodeID: 1, Defaults: opts})
	mustNotErr(t, err)
	defer m.Close()
	tp := TopicPartition{"compacted", 0}
	l, err := m.GetOrCreateLog(tp)
	mustNotErr(t, err)
	value := bytes.Repeat([]byte("v"), 200)
	for i := 0; i < 120; i++ {
		_, err := l.Append(keyedBatch(t, batch.CompressionNone, []kv{{[]byte(fmt.Sprint(i % 5)), value}}, clock.ms), 0)
		mustNotErr(t, err)
	}
	mustNotErr(t, l.Roll())
	segs := l.Segments()
	if len(segs) < 6 {
		t.Fatalf("%d segments, want at least 6", len(segs))
	}
	// The link's cursor, in the middle of a segment half way through.
	cursor := segs[len(segs)/2].BaseOffset + 2
	before, _ := logRecords(t, l)
	var want []modelRecord
	for _, r := range before {
		if r.offset >= cursor {
			want = append(want, r)
		}
	}
	hold := RetentionHold{Offset: cursor, MaxBytes: -1, Cleaner: true}
	m.SetRetentionHold(func() map[TopicPartition]RetentionHold {
		return map[TopicPartition]RetentionHold{tp: hold}
	}, nil)
	hw := func(l *Log) int64 { return l.LogEndOffset() }
	st, err := m.RunCleaner(context.Background(), DefaultCleanerConfig(), hw)
	mustNotErr(t, err)
	if st.LogsCleaned != 1 || st.SegmentsCleaned == 0 {
		t.Fatalf("nothing below the hold was cleaned: %+v", st)
	}
	after, _ := logRecords(t, l)
	var kept []modelRecord
	below := 0
	for _, r := range after {
		if r.offset >= cursor {
			kept = append(kept, r)
		} else {
			below++
		}
	}
	if len(kept) != len(want) {
		t.Fatalf("the cleaner removed records at or past the hold's offset %d: %d of %d left", cursor, len(kept), len(want))
	}
	for i := range want {
		if kept[i].offset != want[i].offset || !bytes.Equal(kept[i].key, want[i].key) {
			t.Fatalf("record %d: %v, want %v", i, kept[i], want[i])
		}
	}
	if below >= int(cursor) {
		t.Fatalf("%d records below the hold's offset %d: nothing compacted", below, cursor)
	}
	// The hold no longer binds the cleaner (past the budget, or a
	// follower's): the rest is compacted, latest per key.
	hold.Cleaner = false
	_, err = m.RunCleaner(context.Background(), DefaultCleanerConfig(), hw)
	mustNotErr(t, err)
	after, _ = logRecords(t, l)
	for _, r := range after {
		if r.offset >= cursor && r.offset < segs[len(segs)-1].BaseOffset-5 {
			t.Fatalf("record %v, superseded, outlived a pass without the cleaner hold", r)
		}
	}
}
