package wal

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/wren-broker/wren/internal/vfs"
)

// testPayload is a payload that names its index, with a length that varies.
func testPayload(i uint64) []byte {
	p := fmt.Appendf(nil, "record-%d|", i)
	for j := uint64(0); j < i%37; j++ {
		p = append(p, byte('a'+j%26))
	}
	return p
}

func mustOpen(t testing.TB, fsys vfs.FS, dir string, opts Options) *Log {
	t.Helper()
	l, err := Open(fsys, dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return l
}

func mustClose(t testing.TB, l *Log) {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// appendRange appends testPayload(i) for i in [from, to], one record per
// call, checking the index each gets.
func appendRange(t testing.TB, l *Log, from, to uint64) {
	t.Helper()
	for i := from; i <= to; i++ {
		got, err := l.Append(testPayload(i))
		if err != nil {
			t.Fatalf("Append(%d): %v", i, err)
		}
		if got != i {
			t.Fatalf("Append got index %d, want %d", got, i)
		}
	}
}

// checkRange checks the log holds exactly testPayload(i) for i in
// [first, last], by Read and by Scan.
func checkRange(t testing.TB, l *Log, first, last uint64) {
	t.Helper()
	if got := l.FirstIndex(); got != first {
		t.Fatalf("FirstIndex = %d, want %d", got, first)
	}
	if got := l.LastIndex(); got != last {
		t.Fatalf("LastIndex = %d, want %d", got, last)
	}
	for i := first; i <= last; i++ {
		p, err := l.Read(i)
		if err != nil {
			t.Fatalf("Read(%d): %v", i, err)
		}
		if !bytes.Equal(p, testPayload(i)) {
			t.Fatalf("Read(%d) = %q, want %q", i, p, testPayload(i))
		}
	}
	next := first
	err := l.Scan(first, func(i uint64, p []byte) error {
		if i != next {
			return fmt.Errorf("Scan visited %d, want %d", i, next)
		}
		if !bytes.Equal(p, testPayload(i)) {
			return fmt.Errorf("Scan(%d) = %q, want %q", i, p, testPayload(i))
		}
		next++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if next != last+1 {
		t.Fatalf("Scan stopped at %d, want %d", next, last+1)
	}
}

// segmentFiles lists the segment file names of dir.
func segmentFiles(t testing.TB, fsys vfs.FS, dir string) []string {
	t.Helper()
	names, err := fsys.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var segs []string
	for _, n := range names {
		if _, ok := parseSegmentName(n); ok {
			segs = append(segs, n)
		}
	}
	return segs
}

// readFile and writeFile edit a file behind the log's back, as damage would.
func readFile(t testing.TB, fsys vfs.FS, path string) []byte {
	t.Helper()
	b, err := vfs.ReadFile(fsys, path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t testing.TB, fsys vfs.FS, path string, b []byte) {
	t.Helper()
	f, err := fsys.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func lastSegmentPath(t testing.TB, fsys vfs.FS, dir string) string {
	t.Helper()
	segs := segmentFiles(t, fsys, dir)
	if len(segs) == 0 {
		t.Fatal("no segment files")
	}
	return filepath.Join(dir, segs[len(segs)-1])
}
