package engine

import (
	"bytes"
	"testing"
	"time"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

func TestRecoveryRebuildsMissingAndCorruptIndexes(t *testing.T) {
	for name, damage := range map[string]func(fsys vfs.FS, base string){
		"missing offset index": func(fsys vfs.FS, base string) { fsys.Remove(base + indexSuffix) },
		"missing time index":   func(fsys vfs.FS, base string) { fsys.Remove(base + timeIndexSuffix) },
		"odd size": func(fsys vfs.FS, base string) {
			f, _ := fsys.OpenReadWrite(base + indexSuffix)
			sz, _ := f.Size()
			f.Truncate(sz + 3)
			f.Close()
		},
		"entry past the log": func(fsys vfs.FS, base string) {
			f, _ := fsys.OpenReadWrite(base + indexSuffix)
			sz, _ := f.Size()
			f.WriteAt([]byte{0, 0, 0x7f, 0, 0, 1, 0, 0}, sz)
			f.Close()
		},
		"zeroed tail entry": func(fsys vfs.FS, base string) {
			f, _ := fsys.OpenReadWrite(base + timeIndexSuffix)
			sz, _ := f.Size()
			f.WriteAt(make([]byte, 12), sz)
			f.Close()
		},
	} {
		t.Run(name, func(t *testing.T) {
			fsys := vfs.NewMem()
			opts := testOptions(nil)
			opts.SegmentBytes = 8192
			l := openTestLog(t, fsys, opts, OpenOptions{})
			for i := 0; i < 30; i++ {
				_, err := l.Append(makeBatch(t, batch.CompressionNone, i, 3, 400, int64(100+i)), 0)
				mustNotErr(t, err)
			}
			want := readAll(t, l)
			leo := l.LogEndOffset()
			segs := l.Segments()
			mustNotErr(t, l.Close())
			damage(fsys, segmentFileName("/data/t-0", segs[0].BaseOffset, ""))
			l2, stats, err := Open(fsys, "/data/t-0", TopicPartition{"t", 0}, opts, OpenOptions{RecoveryPoint: leo})
			mustNotErr(t, err)
			defer l2.Close()
			if stats.IndexesRebuilt == 0 {
				t.Fatalf("the damaged index was trusted: %+v", stats)
			}
			if got := readAll(t, l2); !bytes.Equal(got, want) || l2.LogEndOffset() != leo {
				t.Fatal("log differs after rebuilding the index")
			}
			checkIndexesAgree(t, l2)
		})
	}
}

func TestSegmentMsRollsByTimestamp(t *testing.T) {
	clock := &testClock{ms: 1_000_000}
	opts := testOptions(clock)
	opts.SegmentMs = 60_000
	l := openTestLog(t, vfs.NewMem(), opts, OpenOptions{})
	defer l.Close()
	_, err := l.Append(makeBatch(t, batch.CompressionNone, 0, 1, 10, clock.ms), 0)
	mustNotErr(t, err)
	// A record 59 s younger than the segment's first stays; one 60 s
	// younger rolls (Kafka measures segment.ms between record timestamps).
	_, err = l.Append(makeBatch(t, batch.CompressionNone, 1, 1, 10, clock.ms+59_999), 0)
	mustNotErr(t, err)
	if n := len(l.Segments()); n != 1 {
		t.Fatalf("rolled early: %d segments", n)
	}
	_, err = l.Append(makeBatch(t, batch.CompressionNone, 2, 1, 10, clock.ms+60_000), 0)
	mustNotErr(t, err)
	if n := len(l.Segments()); n != 2 || l.Segments()[1].BaseOffset != 2 {
		t.Fatalf("segment.ms did not roll: %+v", l.Segments())
	}
	// Without timestamps the wall clock decides.
	clock.advance(2 * time.Minute)
	_, err = l.Append(makeBatch(t, batch.CompressionNone, 3, 1, 10, -1), 0)
	mustNotErr(t, err)
	if n := len(l.Segments()); n != 3 {
		t.Fatalf("segment.ms by the clock did not roll: %d segments", n)
	}
}
