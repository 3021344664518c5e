package wal

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wren-broker/wren/internal/vfs"
)

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	fsys := vfs.NewOS()
	l := mustOpen(t, fsys, dir, Options{})
	if l.FirstIndex() != 1 || l.LastIndex() != 0 {
		t.Fatalf("new log: [%d, %d], want [1, 0]", l.FirstIndex(), l.LastIndex())
	}
	appendRange(t, l, 1, 50)
	// A batch, with an empty payload in it, takes consecutive indexes.
	last, err := l.Append([]byte("a"), nil, []byte("c"))
	if err != nil || last != 53 {
		t.Fatalf("Append batch = %d, %v; want 53", last, err)
	}
	for i, want := range []string{"a", "", "c"} {
		p, err := l.Read(51 + uint64(i))
		if err != nil || string(p) != want {
			t.Fatalf("Read(%d) = %q, %v; want %q", 51+i, p, err, want)
		}
	}
	if err := l.TruncateSuffix(51); err != nil {
		t.Fatal(err)
	}
	checkRange(t, l, 1, 50)
	if l.DurableIndex() != 50 {
		t.Fatalf("DurableIndex = %d, want 50", l.DurableIndex())
	}
	mustClose(t, l)
}

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	fsys := vfs.NewOS()
	opts := Options{SegmentBytes: 256}
	l := mustOpen(t, fsys, dir, opts)
	appendRange(t, l, 1, 40)
	mustClose(t, l)
	if n := len(segmentFiles(t, fsys, dir)); n < 5 {
		t.Fatalf("%d segment files, want several (rolls at 256 bytes)", n)
	}

	l = mustOpen(t, fsys, dir, opts)
	if r := l.Recovery(); r.TruncatedBytes != 0 || len(r.RemovedFiles) != 0 {
		t.Fatalf("clean reopen repaired something: %+v", r)
	}
	checkRange(t, l, 1, 40)
	appendRange(t, l, 41, 60)
	mustClose(t, l)

	l = mustOpen(t, fsys, dir, opts)
	defer l.Close()
	checkRange(t, l, 1, 60)
}

func TestSegmentsStayWithinSegmentBytes(t *testing.T) {
	fsys := vfs.NewMem()
	l := mustOpen(t, fsys, "log", Options{SegmentBytes: 200, MaxRecordBytes: 1000})
	defer l.Close()
	appendRange(t, l, 1, 30)
	// A record larger than a segment gets a file of its own.
	big := bytes.Repeat([]byte{'x'}, 500)
	if _, err := l.Append(big); err != nil {
		t.Fatal(err)
	}
	appendRange(t, l, 32, 35)
	for _, name := range segmentFiles(t, fsys, "log") {
		size := int64(len(readFile(t, fsys, filepath.Join("log", name))))
		if size > 200 && size != fileHeaderBytes+recordHeaderBytes+500 {
			t.Errorf("%s is %d bytes, over SegmentBytes", name, size)
		}
	}
	if p, err := l.Read(31); err != nil || !bytes.Equal(p, big) {
		t.Fatalf("Read(31): %d bytes, %v", len(p), err)
	}
}

func TestLimitsAndRanges(t *testing.T) {
	fsys := vfs.NewMem()
	if _, err := Open(fsys, "bad", Options{SegmentBytes: 10}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Open with tiny segments: %v, want ErrInvalidOptions", err)
	}
	l := mustOpen(t, fsys, "log", Options{MaxRecordBytes: 100})
	if _, err := l.Append(make([]byte, 101)); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("Append 101 bytes: %v, want ErrRecordTooLarge", err)
	}
	if l.Err() != nil {
		t.Fatalf("a refused record failed the log: %v", l.Err())
	}
	appendRange(t, l, 1, 3)
	for _, i := range []uint64{0, 4, 100} {
		if _, err := l.Read(i); !errors.Is(err, ErrIndexOutOfRange) {
			t.Errorf("Read(%d): %v, want ErrIndexOutOfRange", i, err)
		}
	}
	if err := l.Scan(5, func(uint64, []byte) error { return nil }); !errors.Is(err, ErrIndexOutOfRange) {
		t.Errorf("Scan(5): %v, want ErrIndexOutOfRange", err)
	}
	if err := l.Scan(4, func(uint64, []byte) error { t.Error("Scan(4) visited a record"); return nil }); err != nil {
		t.Errorf("Scan(4): %v", err)
	}
	for _, i := range []uint64{0, 5} {
		if err := l.TruncateSuffix(i); !errors.Is(err, ErrIndexOutOfRange) {
			t.Errorf("TruncateSuffix(%d): %v, want ErrIndexOutOfRange", i, err)
		}
	}
	stop := errors.New("stop")
	n := 0
	if err := l.Scan(1, func(uint64, []byte) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("Scan with an error from fn: %v after %d calls", err, n)
	}
	if _, err := Open(fsys, "log", Options{}); !errors.Is(err, vfs.ErrLocked) {
		t.Errorf("second Open of a locked log: %v, want ErrLocked", err)
	}
	mustClose(t, l)
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := l.Append([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close: %v, want ErrClosed", err)
	}
	if _, err := l.Read(1); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close: %v, want ErrClosed", err)
	}
}

func TestTruncateSuffix(t *testing.T) {
	fsys := vfs.NewMem()
	opts := Options{SegmentBytes: 200}
	l := mustOpen(t, fsys, "log", opts)
	appendRange(t, l, 1, 40)
	files := len(segmentFiles(t, fsys, "log"))

	// Cut inside a segment, then at a segment boundary, then everything.
	if err := l.TruncateSuffix(25); err != nil {
		t.Fatal(err)
	}
	checkRange(t, l, 1, 24)
	if got := len(segmentFiles(t, fsys, "log")); got >= files {
		t.Fatalf("TruncateSuffix kept %d of %d files", got, files)
	}
	appendRange(t, l, 25, 30)
	checkRange(t, l, 1, 30)

	var boundary uint64
	l.mu.RLock()
	boundary = l.segments[1].firstIndex
	l.mu.RUnlock()
	if err := l.TruncateSuffix(boundary); err != nil {
		t.Fatal(err)
	}
	checkRange(t, l, 1, boundary-1)
	mustClose(t, l)

	l = mustOpen(t, fsys, "log", opts)
	checkRange(t, l, 1, boundary-1)
	if err := l.TruncateSuffix(1); err != nil {
		t.Fatal(err)
	}
	checkRange(t, l, 1, 0)
	appendRange(t, l, 1, 3)
	mustClose(t, l)
	l = mustOpen(t, fsys, "log", opts)
	defer l.Close()
	checkRange(t, l, 1, 3)
}

func TestTruncatePrefix(t *testing.T) {
	fsys := vfs.NewMem()
	opts := Options{SegmentBytes: 200}
	l := mustOpen(t, fsys, "log", opts)
	appendRange(t, l, 1, 40)

	if err := l.TruncatePrefix(20); err != nil {
		t.Fatal(err)
	}
	first := l.FirstIndex()
	if first > 20 || first == 1 {
		t.Fatalf("FirstIndex after TruncatePrefix(20) = %d, want in (1, 20]", first)
	}
	checkRange(t, l, first, 40)
	if _, err := l.Read(first - 1); !errors.Is(err, ErrIndexOutOfRange) {
		t.Fatalf("Read below FirstIndex: %v", err)
	}
	// Up to the end: the active segment stays.
	if err := l.TruncatePrefix(41); err != nil {
		t.Fatal(err)
	}
	if got := len(segmentFiles(t, fsys, "log")); got != 1 {
		t.Fatalf("%d files after TruncatePrefix(LastIndex+1), want 1", got)
	}
	mustClose(t, l)

	l = mustOpen(t, fsys, "log", opts)
	first = l.FirstIndex()
	checkRange(t, l, first, 40)
	// Beyond the end: the log restarts there.
	if err := l.TruncatePrefix(1000); err != nil {
		t.Fatal(err)
	}
	checkRange(t, l, 1000, 999)
	appendRange(t, l, 1000, 1010)
	mustClose(t, l)
	l = mustOpen(t, fsys, "log", opts)
	defer l.Close()
	checkRange(t, l, 1000, 1010)
}

func TestScanWhileAppending(t *testing.T) {
	fsys := vfs.NewMem()
	l := mustOpen(t, fsys, "log", Options{SegmentBytes: 4096})
	defer l.Close()
	// Enough records that Scan needs several chunks and segments.
	payload := bytes.Repeat([]byte{'p'}, 1000)
	for range 300 {
		if _, err := l.AppendNoSync(payload); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	// fn may append: Scan holds no lock while it runs.
	n := 0
	err := l.Scan(1, func(i uint64, p []byte) error {
		n++
		if !bytes.Equal(p, payload) {
			return fmt.Errorf("record %d differs", i)
		}
		if i%100 == 0 {
			_, err := l.Append(payload)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 300 {
		t.Fatalf("Scan visited %d records, want at least 300", n)
	}
}

// TestConcurrentAppendsGetDistinctIndexes checks that concurrent appenders
// each get their own indexes and read back their own bytes.
func TestConcurrentAppendsGetDistinctIndexes(t *testing.T) {
	fsys := vfs.NewMem()
	l := mustOpen(t, fsys, "log", Options{SegmentBytes: 1024})
	defer l.Close()
	const writers, each = 8, 50
	var mu sync.Mutex
	got := make(map[uint64]string)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				p := fmt.Sprintf("w%d-%d", w, i)
				idx, err := l.Append([]byte(p+"-a"), []byte(p+"-b"))
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				got[idx-1], got[idx] = p+"-a", p+"-b"
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(got) != writers*each*2 || l.LastIndex() != writers*each*2 {
		t.Fatalf("%d distinct indexes, LastIndex %d; want %d", len(got), l.LastIndex(), writers*each*2)
	}
	for idx, want := range got {
		p, err := l.Read(idx)
		if err != nil || string(p) != want {
			t.Fatalf("Read(%d) = %q, %v; want %q", idx, p, err, want)
		}
	}
}

// TestAppendRacingTruncateSuffix runs appenders against a truncator. Each
// append returns nil or ErrTruncated; an acknowledged record reads back
// unless a truncation at or below it finished after the append began; the
// log that results survives a reopen unchanged.
func TestAppendRacingTruncateSuffix(t *testing.T) {
	fsys := vfs.NewMem()
	opts := Options{SegmentBytes: 300}
	l := mustOpen(t, fsys, "log", opts)
	var clock atomic.Int64
	type acked struct {
		index   uint64
		payload string
		start   int64
	}
	type truncation struct {
		index uint64
		end   int64
	}
	var mu sync.Mutex
	var acks []acked
	var truncs []truncation
	truncatedErrs := 0
	var wg, appenders sync.WaitGroup
	var done atomic.Bool
	for w := range 4 {
		appenders.Go(func() {
			for i := range 100 {
				p := fmt.Sprintf("w%d-%d", w, i)
				start := clock.Add(1)
				idx, err := l.Append([]byte(p))
				mu.Lock()
				switch {
				case err == nil:
					acks = append(acks, acked{idx, p, start})
				case errors.Is(err, ErrTruncated):
					truncatedErrs++
				default:
					t.Errorf("Append: %v", err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Go(func() {
		for i := 0; !done.Load(); i++ {
			runtime.Gosched()
			first, last := l.FirstIndex(), l.LastIndex()
			idx := last + 1 - min(last+1-first, uint64(i%3))
			if err := l.TruncateSuffix(idx); err != nil {
				t.Errorf("TruncateSuffix(%d): %v", idx, err)
				return
			}
			end := clock.Add(1)
			mu.Lock()
			truncs = append(truncs, truncation{idx, end})
			mu.Unlock()
		}
	})
	finished := make(chan struct{})
	go func() { appenders.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(waitTimeout):
		t.Fatalf("appenders still running after %v: an append waits for records a truncation removed", waitTimeout)
	}
	done.Store(true)
	wg.Wait()
	t.Logf("%d acknowledged, %d ErrTruncated, %d truncations", len(acks), truncatedErrs, len(truncs))
	for _, a := range acks {
		p, err := l.Read(a.index)
		if err == nil && string(p) == a.payload {
			continue
		}
		explained := false
		for _, tr := range truncs {
			if tr.index <= a.index && tr.end > a.start {
				explained = true
				break
			}
		}
		if !explained {
			t.Fatalf("acknowledged record %d %q reads %q, %v, and no later truncation removed it", a.index, a.payload, p, err)
		}
	}
	var before []string
	if err := l.Scan(l.FirstIndex(), func(_ uint64, p []byte) error { before = append(before, string(p)); return nil }); err != nil {
		t.Fatal(err)
	}
	mustClose(t, l)
	l = mustOpen(t, fsys, "log", opts)
	defer l.Close()
	var after []string
	if err := l.Scan(l.FirstIndex(), func(_ uint64, p []byte) error { after = append(after, string(p)); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(before, after) {
		t.Fatalf("reopen changed the log: %d records before, %d after", len(before), len(after))
	}
}
