package vfs

import (
	"errors"
	"syscall"
	"testing"
)

func TestOSStatFS(t *testing.T) {
	sp, err := StatFS(NewOS(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if sp.TotalBytes <= 0 || sp.FreeBytes < 0 || sp.FreeBytes > sp.TotalBytes {
		t.Fatalf("statfs of a temporary directory: %+v", sp)
	}
	if _, err := StatFS(NewOS(), t.TempDir()+"/missing"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("statfs of a missing path: %v, want ENOENT", err)
	}
}

// TestMemCapacity fills a MemFS with a capacity: StatFS follows the data,
// a write past the capacity lands what fits and fails with ENOSPC, and
// removing a file or raising the capacity gives the space back.
func TestMemCapacity(t *testing.T) {
	m := NewMem()
	if _, err := StatFS(m, "/"); !errors.Is(err, ErrStatFSUnsupported) {
		t.Fatalf("statfs without a capacity: %v, want ErrStatFSUnsupported", err)
	}
	m.SetCapacity(100)
	m.MkdirAll("/d", 0o755)
	a, _ := m.Create("/d/a")
	if _, err := a.WriteAt(make([]byte, 60), 0); err != nil {
		t.Fatal(err)
	}
	if sp, _ := m.StatFS("/d"); sp != (Space{TotalBytes: 100, FreeBytes: 40}) {
		t.Fatalf("after 60 bytes: %+v", sp)
	}
	// Overwriting needs no space.
	if _, err := a.WriteAt(make([]byte, 60), 0); err != nil {
		t.Fatal(err)
	}
	b, _ := m.Create("/d/b")
	n, err := b.WriteAt(make([]byte, 50), 0)
	if n != 40 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write of 50 with 40 free: n=%d err=%v, want 40 and ENOSPC", n, err)
	}
	if _, err := b.WriteAt([]byte{1}, 40); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write to a full FS: %v, want ENOSPC", err)
	}
	if err := m.Remove("/d/a"); err != nil {
		t.Fatal(err)
	}
	if sp, _ := m.StatFS("/"); sp.FreeBytes != 60 {
		t.Fatalf("after removing 60 bytes: %+v", sp)
	}
	m.SetCapacity(30)
	if sp, _ := m.StatFS("/"); sp.FreeBytes != 0 {
		t.Fatalf("capacity below the data: %+v, want 0 free", sp)
	}
	b.SyncData()
	m.SyncDir("/d")
	m.SyncDir("/")
	after := m.Crash(CrashOptions{})
	if sp, err := after.StatFS("/d"); err != nil || sp.TotalBytes != 30 {
		t.Fatalf("capacity after a crash: %+v %v", sp, err)
	}
}

func TestFaultStatFS(t *testing.T) {
	m := NewMem()
	m.SetCapacity(1 << 20)
	f := NewFaultFS(m)
	if sp, err := StatFS(f, "/"); err != nil || sp.FreeBytes != 1<<20 {
		t.Fatalf("through a FaultFS: %+v %v", sp, err)
	}
	f.Inject(Fault{Op: OpStatFS, Err: syscall.EIO, Count: 1})
	if _, err := StatFS(f, "/"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("injected statfs fault: %v", err)
	}
	if _, err := StatFS(NewFaultFS(NewMem()), "/"); !errors.Is(err, ErrStatFSUnsupported) {
		t.Fatalf("inner without a capacity: %v", err)
	}
}
