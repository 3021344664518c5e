package engine

import (
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
