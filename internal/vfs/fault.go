package vfs

import (
	"fmt"
	"io"
	"io/fs"
	"math/bits"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// Op is a set of operation kinds, for Fault.Op. Combine them with |.
type Op uint32

const (
	OpCreate      Op = 1 << iota // FS.Create
	OpOpen                       // FS.Open and FS.OpenReadWrite
	OpRead                       // File.ReadAt
	OpWrite                      // File.WriteAt
	OpSyncData                   // File.SyncData
	OpSync                       // File.Sync
	OpTruncate                   // File.Truncate
	OpPreallocate                // File.Preallocate
	OpClose                      // File.Close
	OpStat                       // FS.Stat and File.Size
	OpRemove                     // FS.Remove and FS.RemoveAll
	OpRename                     // FS.Rename; the path filter sees both names
	OpMkdir                      // FS.MkdirAll
	OpList                       // FS.List
	OpSyncDir                    // FS.SyncDir
	OpLock                       // FS.Lock
	OpStatFS                     // FaultFS.StatFS

	// OpAll matches every operation.
	OpAll = OpStatFS<<1 - 1
)

var opNames = [...]string{
	"create", "open", "read", "write", "syncdata", "sync", "truncate", "preallocate",
	"close", "stat", "remove", "rename", "mkdir", "list", "syncdir", "lock", "statfs",
}

func (o Op) String() string {
	if o == 0 {
		return "none"
	}
	var names []string
	for rest := o; rest != 0; rest &= rest - 1 {
		i := bits.TrailingZeros32(uint32(rest))
		if i < len(opNames) {
			names = append(names, opNames[i])
		} else {
			names = append(names, fmt.Sprintf("op(%d)", i))
		}
	}
	return strings.Join(names, "|")
}

// Fault is one error to inject into a FaultFS.
type Fault struct {
	// Op is the set of operations the fault applies to.
	Op Op
	// Path, if not nil, limits the fault to the paths it accepts: the name
	// given to the FS call, or the name a File was opened with.
	Path func(name string) bool
	// Err is returned instead of running the operation, wrapped like the
	// os package wraps errors (*fs.PathError, *os.LinkError). Use a
	// syscall.Errno (EIO, ENOSPC, ...) so callers can errors.Is it as they
	// would a kernel error. Nil means syscall.EIO.
	Err error
	// After lets the first After matching operations through.
	After int
	// Count is how many matching operations fail after that; 0 means every
	// one, for good.
	Count int
	// ShortWrite, for a write, is how many leading bytes of the buffer reach
	// the file before Err is returned, as when a disk fills in the middle of
	// a write(2): the caller sees n = ShortWrite (at most len(p)) and Err.
	ShortWrite int
}

// FaultFS wraps an FS and makes chosen operations fail. It checks every
// operation kind, SyncData included. Its files do not implement Fder, so
// every read goes through ReadAt, where read faults apply.
//
// A FaultFS is safe for concurrent use.
type FaultFS struct {
	inner FS

	mu     sync.Mutex
	faults []*faultState
	fired  int
}

type faultState struct {
	Fault
	// seen counts the matching operations so far; failed counts those that
	// failed.
	seen, failed int
}

// NewFaultFS returns a FaultFS that passes everything to inner until a
// fault is injected.
func NewFaultFS(inner FS) *FaultFS {
	return &FaultFS{inner: inner}
}

// Inject adds a fault and returns a function that removes it. Faults are
// checked in the order they were injected; every fault counts every
// operation it matches, and the first that fires decides the error.
func (f *FaultFS) Inject(fault Fault) (remove func()) {
	if fault.Op == 0 {
		panic("vfs: Fault.Op is empty")
	}
	if fault.Err == nil {
		fault.Err = syscall.EIO
	}
	st := &faultState{Fault: fault}
	f.mu.Lock()
	f.faults = append(f.faults, st)
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for i, s := range f.faults {
			if s == st {
				f.faults = slices.Delete(f.faults, i, i+1)
				return
			}
		}
	}
}

// Clear removes every fault.
func (f *FaultFS) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = nil
}

// Fired returns how many operations failed with an injected error so far.
func (f *FaultFS) Fired() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fired
}

// check returns the fault that fires for this operation, if any.
func (f *FaultFS) check(op Op, names ...string) *Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	var hit *Fault
	for _, st := range f.faults {
		if st.Op&op == 0 || !st.matches(names) {
			continue
		}
		st.seen++
		if hit != nil || st.seen <= st.After || (st.Count > 0 && st.failed >= st.Count) {
			continue
		}
		st.failed++
		hit = &st.Fault
	}
	if hit != nil {
		f.fired++
	}
	return hit
}

func (st *faultState) matches(names []string) bool {
	if st.Path == nil {
		return true
	}
	for _, n := range names {
		if st.Path(n) {
			return true
		}
	}
	return false
}

// pathErr injects a fault for a one-path operation. sysOp is the name the
// os package would put in the error.
func (f *FaultFS) pathErr(op Op, sysOp, name string) error {
	if flt := f.check(op, name); flt != nil {
		return &fs.PathError{Op: sysOp, Path: name, Err: flt.Err}
	}
	return nil
}

func (f *FaultFS) wrap(file File, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	return &faultFile{fs: f, inner: file}, nil
}

// Create implements FS.
func (f *FaultFS) Create(name string) (File, error) {
	if err := f.pathErr(OpCreate, "open", name); err != nil {
		return nil, err
	}
	return f.wrap(f.inner.Create(name))
}

// Open implements FS.
func (f *FaultFS) Open(name string) (File, error) {
	if err := f.pathErr(OpOpen, "open", name); err != nil {
		return nil, err
	}
	return f.wrap(f.inner.Open(name))
}

// OpenReadWrite implements FS.
func (f *FaultFS) OpenReadWrite(name string) (File, error) {
	if err := f.pathErr(OpOpen, "open", name); err != nil {
		return nil, err
	}
	return f.wrap(f.inner.OpenReadWrite(name))
}

// Remove implements FS.
func (f *FaultFS) Remove(name string) error {
	if err := f.pathErr(OpRemove, "remove", name); err != nil {
		return err
	}
	return f.inner.Remove(name)
}

// RemoveAll implements FS.
func (f *FaultFS) RemoveAll(name string) error {
	if err := f.pathErr(OpRemove, "unlinkat", name); err != nil {
		return err
	}
	return f.inner.RemoveAll(name)
}

// Rename implements FS.
func (f *FaultFS) Rename(oldname, newname string) error {
	if flt := f.check(OpRename, oldname, newname); flt != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: flt.Err}
	}
	return f.inner.Rename(oldname, newname)
}

// MkdirAll implements FS.
func (f *FaultFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := f.pathErr(OpMkdir, "mkdir", dir); err != nil {
		return err
	}
	return f.inner.MkdirAll(dir, perm)
}

// List implements FS.
func (f *FaultFS) List(dir string) ([]string, error) {
	if err := f.pathErr(OpList, "open", dir); err != nil {
		return nil, err
	}
	return f.inner.List(dir)
}

// Stat implements FS.
func (f *FaultFS) Stat(name string) (os.FileInfo, error) {
	if err := f.pathErr(OpStat, "stat", name); err != nil {
		return nil, err
	}
	return f.inner.Stat(name)
}

// SyncDir implements FS.
func (f *FaultFS) SyncDir(dir string) error {
	if err := f.pathErr(OpSyncDir, "sync", dir); err != nil {
		return err
	}
	return f.inner.SyncDir(dir)
}

// Lock implements FS.
func (f *FaultFS) Lock(name string) (io.Closer, error) {
	if err := f.pathErr(OpLock, "flock", name); err != nil {
		return nil, err
	}
	return f.inner.Lock(name)
}

// faultFile wraps a File of the inner FS. It deliberately has no Fd method.
type faultFile struct {
	fs    *FaultFS
	inner File
}

func (ff *faultFile) ReadAt(p []byte, off int64) (int, error) {
	if err := ff.fs.pathErr(OpRead, "read", ff.inner.Name()); err != nil {
		return 0, err
	}
	return ff.inner.ReadAt(p, off)
}

func (ff *faultFile) WriteAt(p []byte, off int64) (int, error) {
	flt := ff.fs.check(OpWrite, ff.inner.Name())
	if flt == nil {
		return ff.inner.WriteAt(p, off)
	}
	n := 0
	if short := min(flt.ShortWrite, len(p)); short > 0 {
		var err error
		if n, err = ff.inner.WriteAt(p[:short], off); err != nil {
			return n, err
		}
	}
	return n, &fs.PathError{Op: "write", Path: ff.inner.Name(), Err: flt.Err}
}

func (ff *faultFile) SyncData() error {
	if err := ff.fs.pathErr(OpSyncData, "fdatasync", ff.inner.Name()); err != nil {
		return err
	}
	return ff.inner.SyncData()
}

func (ff *faultFile) Sync() error {
	if err := ff.fs.pathErr(OpSync, "sync", ff.inner.Name()); err != nil {
		return err
	}
	return ff.inner.Sync()
}

func (ff *faultFile) Truncate(size int64) error {
	if err := ff.fs.pathErr(OpTruncate, "truncate", ff.inner.Name()); err != nil {
		return err
	}
	return ff.inner.Truncate(size)
}

func (ff *faultFile) Preallocate(off, length int64) error {
	if err := ff.fs.pathErr(OpPreallocate, "fallocate", ff.inner.Name()); err != nil {
		return err
	}
	return ff.inner.Preallocate(off, length)
}

func (ff *faultFile) Size() (int64, error) {
	if err := ff.fs.pathErr(OpStat, "stat", ff.inner.Name()); err != nil {
		return 0, err
	}
	return ff.inner.Size()
}

// Close closes the inner file even when it injects an error, as close(2)
// releases the descriptor even when it reports one.
func (ff *faultFile) Close() error {
	injected := ff.fs.pathErr(OpClose, "close", ff.inner.Name())
	err := ff.inner.Close()
	if injected != nil {
		return injected
	}
	return err
}

func (ff *faultFile) Name() string { return ff.inner.Name() }
