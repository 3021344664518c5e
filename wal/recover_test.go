package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/wren-broker/wren/internal/vfs"
)

// recordSpan returns where record index starts and ends in its file.
func recordSpan(t *testing.T, l *Log, index uint64) (path string, start, end int64) {
	t.Helper()
	l.mu.RLock()
	defer l.mu.RUnlock()
	seg, err := l.locate(index)
	if err != nil {
		t.Fatal(err)
	}
	start, end = seg.span(index)
	return seg.path, start, end
}

// TestTornTail cuts the last file at every byte of its last record: each
// reopen must lose exactly that record, and nothing before it.
func TestTornTail(t *testing.T) {
	dir := t.TempDir()
	fsys := vfs.NewOS()
	opts := Options{SegmentBytes: 1000}
	l := mustOpen(t, fsys, dir, opts)
	appendRange(t, l, 1, 40)
	path, start, end := recordSpan(t, l, 40)
	mustClose(t, l)
	if path != lastSegmentPath(t, fsys, dir) || start == fileHeaderBytes || len(segmentFiles(t, fsys, dir)) < 2 {
		t.Fatalf("record 40 should be in the last of several files, after other records (%s at %d)", path, start)
	}
	whole := readFile(t, fsys, path)

	for cut := start; cut <= end; cut++ {
		writeFile(t, fsys, path, whole[:cut])
		l, err := Open(fsys, dir, opts)
		if err != nil {
			t.Fatalf("cut at %d: Open: %v", cut, err)
		}
		want := uint64(39)
		if cut == end {
			want = 40
		}
		checkRange(t, l, 1, want)
		if got := l.Recovery().TruncatedBytes; got != cut-start && cut != end {
			t.Fatalf("cut at %d: TruncatedBytes %d, want %d", cut, got, cut-start)
		}
		// The log goes on from the cut, and the cut is durable.
		appendRange(t, l, want+1, want+1)
		mustClose(t, l)
		l = mustOpen(t, fsys, dir, opts)
		checkRange(t, l, 1, want+1)
		mustClose(t, l)
	}
}

// TestCorruptLastFile flips a byte in the middle of the last file: recovery
// cannot tell that from a torn write, so it cuts there and reports it.
func TestCorruptLastFile(t *testing.T) {
	fsys := vfs.NewMem()
	opts := Options{SegmentBytes: 400}
	l := mustOpen(t, fsys, "log", opts)
	appendRange(t, l, 1, 20)
	path, start, _ := recordSpan(t, l, 18)
	_, _, end := recordSpan(t, l, 20)
	mustClose(t, l)
	if path != lastSegmentPath(t, fsys, "log") {
		t.Fatal("records 18-20 should be in the last file")
	}
	for _, at := range []int64{start + 2, start + 5, start + recordHeaderBytes + 1} { // length, CRC, payload
		b := readFile(t, fsys, path)
		good := bytes.Clone(b)
		b[at] ^= 0x40
		writeFile(t, fsys, path, b)
		l = mustOpen(t, fsys, "log", opts)
		checkRange(t, l, 1, 17)
		if got := l.Recovery().TruncatedBytes; got != end-start {
			t.Fatalf("flip at %d: TruncatedBytes %d, want %d", at, got, end-start)
		}
		mustClose(t, l)
		writeFile(t, fsys, path, good)
	}
}

// TestZeroFilledTail: zeros after the last record (a hole a crash left)
// must not read as empty records.
func TestZeroFilledTail(t *testing.T) {
	fsys := vfs.NewMem()
	l := mustOpen(t, fsys, "log", Options{})
	appendRange(t, l, 1, 5)
	mustClose(t, l)
	path := lastSegmentPath(t, fsys, "log")
	writeFile(t, fsys, path, append(readFile(t, fsys, path), make([]byte, 64)...))
	l = mustOpen(t, fsys, "log", Options{})
	defer l.Close()
	checkRange(t, l, 1, 5)
	if got := l.Recovery().TruncatedBytes; got != 64 {
		t.Fatalf("TruncatedBytes %d, want 64", got)
	}
}

// TestCorruptionRefused: damage outside the tail of the last file is
// corruption of synced data, and Open must refuse it, changing nothing.
func TestCorruptionRefused(t *testing.T) {
	opts := Options{SegmentBytes: 200}
	setup := func(t *testing.T) (*vfs.MemFS, []string) {
		fsys := vfs.NewMem()
		l := mustOpen(t, fsys, "log", opts)
		appendRange(t, l, 1, 30)
		mustClose(t, l)
		files := segmentFiles(t, fsys, "log")
		if len(files) < 4 {
			t.Fatalf("want at least 4 files, have %d", len(files))
		}
		return fsys, files
	}
	edit := func(t *testing.T, fsys vfs.FS, name string, fn func([]byte) []byte) {
		path := filepath.Join("log", name)
		writeFile(t, fsys, path, fn(readFile(t, fsys, path)))
	}
	cases := []struct {
		name  string
		apply func(t *testing.T, fsys *vfs.MemFS, files []string)
		want  error
	}{
		{"bad record in a middle file", func(t *testing.T, fsys *vfs.MemFS, files []string) {
			edit(t, fsys, files[1], func(b []byte) []byte { b[len(b)-1] ^= 1; return b })
		}, ErrCorrupt},
		{"torn tail of a middle file", func(t *testing.T, fsys *vfs.MemFS, files []string) {
			edit(t, fsys, files[1], func(b []byte) []byte { return b[:len(b)-3] })
		}, ErrCorrupt},
		{"bad header of a middle file", func(t *testing.T, fsys *vfs.MemFS, files []string) {
			edit(t, fsys, files[1], func(b []byte) []byte { b[3] ^= 1; return b })
		}, ErrCorrupt},
		{"missing middle file", func(t *testing.T, fsys *vfs.MemFS, files []string) {
			if err := fsys.Remove(filepath.Join("log", files[1])); err != nil {
				t.Fatal(err)
			}
		}, ErrCorrupt},
		{"header index differs from name", func(t *testing.T, fsys *vfs.MemFS, files []string) {
			first, _ := parseSegmentName(files[1])
			edit(t, fsys, files[1], func(b []byte) []byte { return append(encodeFileHeader(first+1, 0), b[fileHeaderBytes:]...) })
		}, ErrCorrupt},
		{"version changed under its CRC in the first file", func(t *testing.T, fsys *vfs.MemFS, files []string) {
			edit(t, fsys, files[0], func(b []byte) []byte { b[9] = 2; return b })
		}, ErrCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsys, files := setup(t)
			tc.apply(t, fsys, files)
			before := snapshotDir(t, fsys, "log")
			_, err := Open(fsys, "log", opts)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open: %v, want %v", err, tc.want)
			}
			if after := snapshotDir(t, fsys, "log"); !equalSnapshots(before, after) {
				t.Fatal("a refused Open changed the files")
			}
		})
	}
}

func TestUnsupportedVersionRefused(t *testing.T) {
	fsys := vfs.NewMem()
	l := mustOpen(t, fsys, "log", Options{})
	appendRange(t, l, 1, 3)
	mustClose(t, l)
	path := lastSegmentPath(t, fsys, "log")
	b := readFile(t, fsys, path)
	h := make([]byte, fileHeaderBytes)
	copy(h, b)
	h[9] = 2 // version 2, with a correct CRC: a newer format, not damage
	binary.BigEndian.PutUint32(h[20:], crc32.Checksum(h[:20], castagnoli))
	writeFile(t, fsys, path, append(h, b[fileHeaderBytes:]...))
	if _, err := Open(fsys, "log", Options{}); !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatalf("Open: %v, want ErrUnsupportedVersion", err)
	}
}

// TestTornHeaderOfNewestFile: a roll that crashed before the new file's
// header was durable leaves a file with no records; recovery removes it.
func TestTornHeaderOfNewestFile(t *testing.T) {
	fsys := vfs.NewMem()
	opts := Options{SegmentBytes: 200}
	l := mustOpen(t, fsys, "log", opts)
	appendRange(t, l, 1, 10)
	mustClose(t, l)
	torn := filepath.Join("log", segmentName(11))
	writeFile(t, fsys, torn, encodeFileHeader(11, 0)[:7])
	l = mustOpen(t, fsys, "log", opts)
	checkRange(t, l, 1, 10)
	if r := l.Recovery(); len(r.RemovedFiles) != 1 || r.RemovedFiles[0] != torn {
		t.Fatalf("RemovedFiles = %v, want [%s]", r.RemovedFiles, torn)
	}
	appendRange(t, l, 11, 20)
	mustClose(t, l)
	l = mustOpen(t, fsys, "log", opts)
	defer l.Close()
	checkRange(t, l, 1, 20)
}

// TestInterruptedRestart: TruncatePrefix beyond the end crashed after its
// new file became durable but before the old files went.
func TestInterruptedRestart(t *testing.T) {
	fsys := vfs.NewMem()
	opts := Options{SegmentBytes: 200}
	l := mustOpen(t, fsys, "log", opts)
	appendRange(t, l, 1, 30)
	mustClose(t, l)
	old := len(segmentFiles(t, fsys, "log"))
	writeFile(t, fsys, filepath.Join("log", segmentName(500)), encodeFileHeader(500, flagLogStart))
	l = mustOpen(t, fsys, "log", opts)
	defer l.Close()
	checkRange(t, l, 500, 499)
	if got := len(l.Recovery().RemovedFiles); got != old {
		t.Fatalf("removed %d files, want the %d old ones", got, old)
	}
}

// TestReadErrorIsNotATornTail: an EIO while recovery reads the last file
// must fail Open, not cut the file where the read failed.
func TestReadErrorIsNotATornTail(t *testing.T) {
	mem := vfs.NewMem()
	l := mustOpen(t, mem, "log", Options{})
	appendRange(t, l, 1, 10)
	mustClose(t, l)
	before := snapshotDir(t, mem, "log")

	faulty := vfs.NewFaultFS(mem)
	faulty.Inject(vfs.Fault{Op: vfs.OpRead, Err: syscall.EIO, After: 1})
	if _, err := Open(faulty, "log", Options{}); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Open with failing reads: %v, want EIO", err)
	}
	if !equalSnapshots(before, snapshotDir(t, mem, "log")) {
		t.Fatal("a read error changed the files")
	}
	l = mustOpen(t, mem, "log", Options{})
	defer l.Close()
	checkRange(t, l, 1, 10)
}

func snapshotDir(t *testing.T, fsys vfs.FS, dir string) map[string][]byte {
	t.Helper()
	out := make(map[string][]byte)
	for _, name := range segmentFiles(t, fsys, dir) {
		out[name] = readFile(t, fsys, filepath.Join(dir, name))
	}
	return out
}

func equalSnapshots(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}
