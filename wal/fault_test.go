package wal

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/wren-broker/wren/internal/vfs"
)

// TestFaultsFailTheLog: EIO on write, and ENOSPC and EIO on fdatasync,
// never acknowledge the append, and fail the log for good even once the
// disk works again. Records acknowledged before the fault survive a reopen.
// (ENOSPC on a write fails only the append: TestENOSPCOnWriteFailsOnlyTheAppend.)
func TestFaultsFailTheLog(t *testing.T) {
	type fault struct {
		op         vfs.Op
		err        syscall.Errno
		shortWrite int
	}
	cases := []fault{
		{vfs.OpWrite, syscall.EIO, 0}, {vfs.OpWrite, syscall.EIO, 13},
		{vfs.OpSyncData, syscall.EIO, 0}, {vfs.OpSyncData, syscall.ENOSPC, 0},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%v/%v/short%d", tc.op, tc.err, tc.shortWrite), func(t *testing.T) {
			mem := vfs.NewMem()
			faulty := vfs.NewFaultFS(mem)
			l := mustOpen(t, faulty, "log", Options{})
			appendRange(t, l, 1, 5)

			// One failure only: the disk "recovers" at once, which must not
			// matter.
			faulty.Inject(vfs.Fault{Op: tc.op, Err: tc.err, Count: 1, ShortWrite: tc.shortWrite})
			idx, err := l.Append(testPayload(6))
			if !errors.Is(err, tc.err) || idx != 0 {
				t.Fatalf("Append under fault = %d, %v; want 0, %v", idx, err, tc.err)
			}
			if faulty.Fired() != 1 {
				t.Fatalf("fault fired %d times, want 1", faulty.Fired())
			}
			if !errors.Is(l.Err(), tc.err) {
				t.Fatalf("Err = %v, want the sticky %v", l.Err(), tc.err)
			}
			for _, op := range []func() error{
				func() error { _, err := l.Append([]byte("after")); return err },
				func() error { _, err := l.AppendNoSync([]byte("after")); return err },
				l.Sync,
				func() error { return l.TruncateSuffix(l.FirstIndex()) },
				func() error { return l.TruncatePrefix(3) },
			} {
				if err := op(); !errors.Is(err, tc.err) {
					t.Fatalf("operation on a failed log: %v, want the sticky %v", err, tc.err)
				}
			}
			// Acknowledged records still read.
			for i := uint64(1); i <= 5; i++ {
				if _, err := l.Read(i); err != nil {
					t.Fatalf("Read(%d) on a failed log: %v", i, err)
				}
			}
			l.Close()

			// Recovery keeps every acknowledged record; record 6 may or
			// may not be there, whole or not at all.
			l = mustOpen(t, mem, "log", Options{})
			defer l.Close()
			last := l.LastIndex()
			if last != 5 && last != 6 {
				t.Fatalf("LastIndex after reopen = %d, want 5 or 6", last)
			}
			checkRange(t, l, 1, last)
			appendRange(t, l, last+1, last+1)
		})
	}
}

// TestFaultDuringRoll: the roll's fdatasync of the old segment and the
// new segment's creation are as fatal as an append's own.
func TestFaultDuringRoll(t *testing.T) {
	for _, op := range []vfs.Op{vfs.OpSyncData, vfs.OpCreate, vfs.OpSyncDir} {
		t.Run(op.String(), func(t *testing.T) {
			mem := vfs.NewMem()
			faulty := vfs.NewFaultFS(mem)
			opts := Options{SegmentBytes: 100}
			l := mustOpen(t, faulty, "log", opts)
			appendRange(t, l, 1, 1)
			// Fill the segment without syncing, so the next append rolls
			// and the roll is the first to touch the disk.
			payload := []byte("0123456789")
			for {
				l.mu.RLock()
				full := l.active().size+recordHeaderBytes+int64(len(payload)) > opts.SegmentBytes
				l.mu.RUnlock()
				if full {
					break
				}
				if _, err := l.AppendNoSync(payload); err != nil {
					t.Fatal(err)
				}
			}
			files := len(segmentFiles(t, mem, "log"))
			faulty.Inject(vfs.Fault{Op: op, Err: syscall.EIO})
			if _, err := l.Append(payload); !errors.Is(err, syscall.EIO) {
				t.Fatalf("Append that rolls under a %v fault: %v, want EIO", op, err)
			}
			if op == vfs.OpSyncData && len(segmentFiles(t, mem, "log")) != files {
				t.Fatal("a failed sync of the old segment still created a new one")
			}
			if _, err := l.Append([]byte("x")); !errors.Is(err, syscall.EIO) {
				t.Fatalf("later Append: %v, want the sticky EIO", err)
			}
			l.Close()
		})
	}
}

// TestConcurrentAppendersAllFail: every appender waiting on a failing
// fdatasync gets the error; none is acknowledged.
func TestConcurrentAppendersAllFail(t *testing.T) {
	mem := vfs.NewMem()
	faulty := vfs.NewFaultFS(mem)
	l := mustOpen(t, faulty, "log", Options{})
	defer l.Close()
	faulty.Inject(vfs.Fault{Op: vfs.OpSyncData, Err: syscall.EIO})
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := 0
	for w := range 16 {
		wg.Go(func() {
			for i := range 5 {
				if _, err := l.Append(fmt.Appendf(nil, "w%d-%d", w, i)); err == nil {
					mu.Lock()
					acked++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if acked != 0 {
		t.Fatalf("%d appends acknowledged with every fdatasync failing", acked)
	}
}

// TestTruncateFaultFailsTheLog: a failed cut leaves the file in an unknown
// state, so the log must stop.
func TestTruncateFaultFailsTheLog(t *testing.T) {
	mem := vfs.NewMem()
	faulty := vfs.NewFaultFS(mem)
	l := mustOpen(t, faulty, "log", Options{})
	defer l.Close()
	appendRange(t, l, 1, 10)
	faulty.Inject(vfs.Fault{Op: vfs.OpTruncate, Err: syscall.EIO, Count: 1})
	if err := l.TruncateSuffix(5); !errors.Is(err, syscall.EIO) {
		t.Fatalf("TruncateSuffix under fault: %v", err)
	}
	if _, err := l.Append([]byte("x")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Append after a failed truncation: %v, want the sticky EIO", err)
	}
}

// gatedFS holds every fdatasync while its gate is closed, so a test can
// pile appenders up behind one sync.
type gatedFS struct {
	vfs.FS
	mu   sync.Mutex
	gate chan struct{} // nil when open
}

type gatedFile struct {
	vfs.File
	fs *gatedFS
}

func (g *gatedFS) close() {
	g.mu.Lock()
	g.gate = make(chan struct{})
	g.mu.Unlock()
}

func (g *gatedFS) open() {
	g.mu.Lock()
	close(g.gate)
	g.gate = nil
	g.mu.Unlock()
}

func (g *gatedFS) Create(name string) (vfs.File, error) {
	f, err := g.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return gatedFile{f, g}, nil
}

func (g *gatedFS) OpenReadWrite(name string) (vfs.File, error) {
	f, err := g.FS.OpenReadWrite(name)
	if err != nil {
		return nil, err
	}
	return gatedFile{f, g}, nil
}

func (f gatedFile) SyncData() error {
	f.fs.mu.Lock()
	gate := f.fs.gate
	f.fs.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return f.File.SyncData()
}

// TestAppendersShareSyncs: N appenders that arrive while one fdatasync runs
// cost two fdatasyncs in all, not N.
func TestAppendersShareSyncs(t *testing.T) {
	const n = 64
	gfs := &gatedFS{FS: vfs.NewMem()}
	l := mustOpen(t, gfs, "log", Options{})
	defer l.Close()
	before := l.Syncs()
	gfs.close()
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := l.Append(fmt.Appendf(nil, "appender %d", i))
			errs <- err
		}()
	}
	waitForWaiters(t, l.commit, n)
	gfs.open()
	for range n {
		if err := expectDone(t, errs, "appender"); err != nil {
			t.Fatal(err)
		}
	}
	syncs := l.Syncs() - before
	t.Logf("%d concurrent appends, %d fdatasyncs", n, syncs)
	if syncs > 2 {
		t.Fatalf("%d concurrent appends cost %d fdatasyncs, want at most 2", n, syncs)
	}
	if l.LastIndex() != n || l.DurableIndex() != n {
		t.Fatalf("LastIndex %d, DurableIndex %d, want %d", l.LastIndex(), l.DurableIndex(), n)
	}
	var seen []string
	if err := l.Scan(1, func(_ uint64, p []byte) error { seen = append(seen, string(p)); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != n || !strings.HasPrefix(seen[0], "appender ") {
		t.Fatalf("read back %d records", len(seen))
	}
}

// TestENOSPCOnWriteFailsOnlyTheAppend: a full disk on the write of an
// append (whole or short) fails that append alone: the file is cut back,
// the log stays healthy, the next append takes the same index, and after
// a crash every acknowledged record is there and nothing of the refused one.
func TestENOSPCOnWriteFailsOnlyTheAppend(t *testing.T) {
	for _, short := range []int{0, 13} {
		t.Run(fmt.Sprintf("short%d", short), func(t *testing.T) {
			mem := vfs.NewMem()
			faulty := vfs.NewFaultFS(mem)
			l := mustOpen(t, faulty, "log", Options{})
			appendRange(t, l, 1, 5)
			faulty.Inject(vfs.Fault{Op: vfs.OpWrite, Err: syscall.ENOSPC, Count: 1, ShortWrite: short})
			if idx, err := l.Append([]byte("refused")); !errors.Is(err, syscall.ENOSPC) || idx != 0 {
				t.Fatalf("Append on a full disk = %d, %v; want 0, ENOSPC", idx, err)
			}
			if l.Err() != nil {
				t.Fatalf("a full disk on a write failed the log: %v", l.Err())
			}
			appendRange(t, l, 6, 7)
			after := mem.Crash(vfs.CrashOptions{})
			l2 := mustOpen(t, after, "log", Options{})
			defer l2.Close()
			if l2.LastIndex() != 7 {
				t.Fatalf("LastIndex after a crash = %d, want 7", l2.LastIndex())
			}
			checkRange(t, l2, 1, 7)
		})
	}
}
