package vfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestFaultEveryOp injects a fault for each operation kind alone and checks
// that exactly that operation fails, with the injected errno. It is what
// keeps SyncData (which Pebble's errorfs skips) from being forgotten.
func TestFaultEveryOp(t *testing.T) {
	calls := []struct {
		op   Op
		call func(fsys FS, f File) error
	}{
		{OpCreate, func(fsys FS, _ File) error { _, err := fsys.Create("/d/new"); return err }},
		{OpOpen, func(fsys FS, _ File) error { _, err := fsys.Open("/d/f"); return err }},
		{OpOpen, func(fsys FS, _ File) error { _, err := fsys.OpenReadWrite("/d/f"); return err }},
		{OpRead, func(_ FS, f File) error { _, err := f.ReadAt(make([]byte, 1), 0); return err }},
		{OpWrite, func(_ FS, f File) error { _, err := f.WriteAt([]byte("x"), 0); return err }},
		{OpSyncData, func(_ FS, f File) error { return f.SyncData() }},
		{OpSync, func(_ FS, f File) error { return f.Sync() }},
		{OpTruncate, func(_ FS, f File) error { return f.Truncate(0) }},
		{OpPreallocate, func(_ FS, f File) error { return f.Preallocate(0, 4096) }},
		{OpClose, func(_ FS, f File) error { return f.Close() }},
		{OpStat, func(fsys FS, _ File) error { _, err := fsys.Stat("/d/f"); return err }},
		{OpStat, func(_ FS, f File) error { _, err := f.Size(); return err }},
		{OpRemove, func(fsys FS, _ File) error { return fsys.Remove("/d/f") }},
		{OpRemove, func(fsys FS, _ File) error { return fsys.RemoveAll("/d/f") }},
		{OpRename, func(fsys FS, _ File) error { return fsys.Rename("/d/f", "/d/g") }},
		{OpMkdir, func(fsys FS, _ File) error { return fsys.MkdirAll("/d/sub", 0o755) }},
		{OpList, func(fsys FS, _ File) error { _, err := fsys.List("/d"); return err }},
		{OpSyncDir, func(fsys FS, _ File) error { return fsys.SyncDir("/d") }},
		{OpLock, func(fsys FS, _ File) error {
			l, err := fsys.Lock("/d/lock")
			if err == nil {
				l.Close()
			}
			return err
		}},
		{OpStatFS, func(fsys FS, _ File) error { _, err := StatFS(fsys, "/d"); return err }},
	}
	covered := Op(0)
	for _, c := range calls {
		covered |= c.op
	}
	if covered != OpAll {
		t.Fatalf("operations without a test: %v", OpAll&^covered)
	}
	setup := func(t *testing.T) (*FaultFS, File) {
		inner := NewMem()
		inner.SetCapacity(1 << 30) // so that StatFS answers
		if err := inner.MkdirAll("/d", 0o755); err != nil {
			t.Fatal(err)
		}
		ffs := NewFaultFS(inner)
		f, err := ffs.Create("/d/f")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("data"), 0); err != nil {
			t.Fatal(err)
		}
		return ffs, f
	}
	for _, c := range calls {
		t.Run(c.op.String(), func(t *testing.T) {
			// Without the fault, the call works.
			ffs, f := setup(t)
			if err := c.call(ffs, f); err != nil {
				t.Fatalf("no fault injected: %v", err)
			}
			// With every other kind failing, it still works.
			ffs, f = setup(t)
			ffs.Inject(Fault{Op: OpAll &^ c.op, Err: syscall.EROFS})
			if err := c.call(ffs, f); err != nil {
				t.Fatalf("a fault on other operations hit %v: %v", c.op, err)
			}
			// With its own kind failing, it fails with the errno.
			ffs, f = setup(t)
			ffs.Inject(Fault{Op: c.op, Err: syscall.EIO})
			err := c.call(ffs, f)
			if !errors.Is(err, syscall.EIO) {
				t.Fatalf("%v = %v, want EIO", c.op, err)
			}
			if !strings.Contains(err.Error(), "/d") {
				t.Fatalf("error %q does not name the path", err)
			}
			if ffs.Fired() != 1 {
				t.Fatalf("Fired() = %d, want 1", ffs.Fired())
			}
		})
	}
}

func TestFaultAfterCountAndRemove(t *testing.T) {
	ffs := NewFaultFS(NewMem())
	f, err := ffs.Create("/seg")
	if err != nil {
		t.Fatal(err)
	}
	remove := ffs.Inject(Fault{Op: OpSyncData | OpSync, Err: syscall.EIO, After: 2, Count: 2})
	var got []bool
	for range 5 {
		got = append(got, errors.Is(f.SyncData(), syscall.EIO))
	}
	if want := []bool{false, false, true, true, false}; !slices.Equal(got, want) {
		t.Fatalf("failures %v, want %v", got, want)
	}

	// Count 0 fails for good, until removed.
	remove()
	remove = ffs.Inject(Fault{Op: OpSync})
	for i := range 3 {
		if err := f.Sync(); !errors.Is(err, syscall.EIO) {
			t.Fatalf("persistent fault, call %d: %v", i, err)
		}
	}
	if err := f.SyncData(); err != nil {
		t.Fatalf("OpSync fault hit SyncData: %v", err)
	}
	remove()
	if err := f.Sync(); err != nil {
		t.Fatalf("after remove: %v", err)
	}
	ffs.Inject(Fault{Op: OpWrite})
	ffs.Clear()
	if _, err := f.WriteAt([]byte("x"), 0); err != nil {
		t.Fatalf("after Clear: %v", err)
	}
	if ffs.Fired() != 5 {
		t.Fatalf("Fired() = %d, want 5", ffs.Fired())
	}
}

func TestFaultPathFilter(t *testing.T) {
	ffs := NewFaultFS(NewMem())
	ffs.Inject(Fault{
		Op:   OpWrite | OpRename,
		Path: func(name string) bool { return strings.HasSuffix(name, ".index") },
		Err:  syscall.EIO,
	})
	log, _ := ffs.Create("/00000000000000000000.log")
	index, _ := ffs.Create("/00000000000000000000.index")
	if _, err := log.WriteAt([]byte("batch"), 0); err != nil {
		t.Fatalf("write to .log: %v", err)
	}
	if _, err := index.WriteAt([]byte("entry"), 0); !errors.Is(err, syscall.EIO) {
		t.Fatalf("write to .index = %v, want EIO", err)
	}
	// A rename matches on either name.
	if err := ffs.Rename("/00000000000000000000.log", "/x.index"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("rename to .index = %v, want EIO", err)
	}
	var le *os.LinkError
	if err := ffs.Rename("/00000000000000000000.index", "/y"); !errors.As(err, &le) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("rename from .index = %v, want a *os.LinkError with EIO", err)
	}
}

// TestFaultShortWriteENOSPC models a disk filling in the middle of a write,
// on the real file system and in memory: part of the buffer lands, the
// caller gets the count and ENOSPC, as from write(2).
func TestFaultShortWriteENOSPC(t *testing.T) {
	for _, tc := range []struct {
		name  string
		inner FS
		dir   string
	}{
		{"os", Default, t.TempDir()},
		{"mem", NewMem(), "/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ffs := NewFaultFS(tc.inner)
			name := filepath.Join(tc.dir, "seg.log")
			f, err := ffs.Create(name)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, isFder := f.(Fder); isFder {
				t.Fatal("a FaultFS file implements Fder; reads through Fd would bypass read faults")
			}
			ffs.Inject(Fault{Op: OpWrite, Err: syscall.ENOSPC, ShortWrite: 3, Count: 1})
			n, err := f.WriteAt([]byte("abcdefgh"), 0)
			if n != 3 || !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("WriteAt = %d, %v; want 3, ENOSPC", n, err)
			}
			var pe *fs.PathError
			if !errors.As(err, &pe) || pe.Path != name {
				t.Fatalf("error %#v is not a *fs.PathError on %s", err, name)
			}
			got, err := ReadFile(tc.inner, name)
			if err != nil || string(got) != "abc" {
				t.Fatalf("file holds %q, %v; want \"abc\"", got, err)
			}
			// A ShortWrite larger than the buffer writes all of it and
			// still fails, as a write that fills the disk exactly can.
			ffs.Inject(Fault{Op: OpWrite, Err: syscall.ENOSPC, ShortWrite: 100, Count: 1})
			if n, err := f.WriteAt([]byte("XY"), 3); n != 2 || !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("WriteAt = %d, %v; want 2, ENOSPC", n, err)
			}
			// One-shot: space came back.
			if _, err := f.WriteAt([]byte("!"), 5); err != nil {
				t.Fatal(err)
			}
			if got, _ := ReadFile(tc.inner, name); string(got) != "abcXY!" {
				t.Fatalf("file holds %q, want \"abcXY!\"", got)
			}
		})
	}
}

// TestFaultOverMemCrash combines the two test file systems the way the
// engine's tests will: a SyncData that fails leaves the data not durable.
func TestFaultOverMemCrash(t *testing.T) {
	mem := NewMem()
	ffs := NewFaultFS(mem)
	f, err := ffs.Create("/seg")
	if err != nil {
		t.Fatal(err)
	}
	if err := ffs.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("acked"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.SyncData(); err != nil {
		t.Fatal(err)
	}
	ffs.Inject(Fault{Op: OpSyncData, Err: syscall.EIO})
	if _, err := f.WriteAt([]byte("-not-acked"), 5); err != nil {
		t.Fatal(err)
	}
	if err := f.SyncData(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("SyncData = %v, want EIO", err)
	}
	got, err := ReadFile(mem.Crash(CrashOptions{}), "/seg")
	if err != nil || string(got) != "acked" {
		t.Fatalf("after crash %q, %v; want \"acked\"", got, err)
	}
}

func TestOpString(t *testing.T) {
	if got := (OpSyncData | OpSync).String(); got != "syncdata|sync" {
		t.Fatalf("String() = %q", got)
	}
	if got := Op(0).String(); got != "none" {
		t.Fatalf("String() = %q", got)
	}
}
