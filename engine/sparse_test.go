package engine

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// allocatedBytes is the disk a file really holds (st_blocks), not its
// apparent size.
func allocatedBytes(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Blocks * 512
}

// TestIndexFilesReserveNoSpace checks on a real file system that a new
// partition's index files hold no disk blocks until entries are written,
// that they then hold about what their entries need, and that a rolled
// segment's indexes are trimmed to their entries, as Kafka's are (its
// DumpLogSegments reads every byte of an index file as entries).
func TestIndexFilesReserveNoSpace(t *testing.T) {
	dir := t.TempDir()
	opts := DefaultOptions()
	opts.SegmentBytes = 256 << 10
	opts.IndexIntervalBytes = 512
	m, err := OpenManager(vfs.NewOS(), dir, ManagerConfig{NodeID: 1, Defaults: opts})
	mustNotErr(t, err)
	defer m.Close()
	var logs []*Log
	for p := int32(0); p < 4; p++ {
		l, err := m.GetOrCreateLog(TopicPartition{"sparse", p})
		mustNotErr(t, err)
		logs = append(logs, l)
	}
	for _, l := range logs {
		for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
			path := segmentFileName(l.dir, 0, suffix)
			if n := allocatedBytes(t, path); n != 0 {
				t.Errorf("%s: a new index holds %d bytes of disk, want 0 (segment.index.bytes is %d)", path, n, opts.SegmentIndexBytes)
			}
		}
	}

	// Enough 1 KiB batches for one roll and a partly filled active segment.
	l := logs[0]
	for i := 0; i < 400; i++ {
		_, err := l.Append(makeBatch(t, batch.CompressionNone, i, 1, 1000, 1_790_000_000_000+int64(i)), 0)
		mustNotErr(t, err)
	}
	segs := l.Segments()
	if len(segs) < 2 {
		t.Fatalf("want a rolled segment, got %d segments", len(segs))
	}
	checkIndexesAgree(t, l)
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, s := range l.segments {
		for _, x := range []*index{&s.offsetIndex.index, &s.timeIndex.index} {
			size, err := x.f.Size()
			mustNotErr(t, err)
			if want := x.entries() * x.entrySize; size != want {
				t.Errorf("%s: %d bytes for %d entries, want %d", x.f.Name(), size, x.entries(), want)
			}
			if x.entries() == 0 && i < len(l.segments)-1 {
				t.Errorf("%s: a rolled segment of %d bytes has no index entries", x.f.Name(), s.size.Load())
			}
			// Entries take a few KiB; the file system allocates whole
			// blocks (and ext4 may keep a small speculative tail).
			if got := allocatedBytes(t, x.f.Name()); got > size+64<<10 {
				t.Errorf("%s: holds %d bytes of disk for %d bytes of entries", x.f.Name(), got, size)
			}
		}
	}
}

// TestIndexAppendENOSPC checks that a full disk met by an index append,
// which can now happen mid-segment, comes back from Append as an error
// that names ENOSPC, not as a panic or a silent loss of the entry.
func TestIndexAppendENOSPC(t *testing.T) {
	ffs := vfs.NewFaultFS(vfs.NewMem())
	opts := testOptions(nil)
	opts.IndexIntervalBytes = 0 // an index entry for every batch
	l := openTestLog(t, ffs, opts, OpenOptions{})
	defer l.Close()
	_, err := l.Append(makeBatch(t, batch.CompressionNone, 0, 2, 100, 1000), 0)
	mustNotErr(t, err)
	ffs.Inject(vfs.Fault{Op: vfs.OpWrite, Err: syscall.ENOSPC, Path: func(name string) bool {
		return strings.HasSuffix(name, indexSuffix)
	}})
	_, err = l.Append(makeBatch(t, batch.CompressionNone, 1, 2, 100, 2000), 0)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append with a full disk under the offset index: %v, want ENOSPC", err)
	}
}
