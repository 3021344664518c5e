package vfs

import (
	"io"
	"io/fs"
	"slices"
	"syscall"
)

// memFileBytesMax caps a MemFS file, as a file-size limit would, so a test
// that writes at a garbage offset fails with EFBIG instead of exhausting
// memory. It also keeps lengths inside int on 32-bit ARM.
const memFileBytesMax = 1 << 30

// memFile is an open MemFS file (or directory, from Open).
type memFile struct {
	fs       *MemFS
	node     *memNode
	name     string
	writable bool
	// closed is guarded by fs.mu.
	closed bool
}

// ReadAt and WriteAt check their arguments in the order os.File does: a
// negative offset, then an empty buffer (no system call, so no error even on
// a closed file), then the descriptor.
func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.RLock()
	defer f.fs.mu.RUnlock()
	if err := f.fs.live("read", f.name); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "readat", Path: f.name, Err: errNegativeOffset}
	}
	if len(p) == 0 {
		return 0, nil
	}
	if err := f.check("read"); err != nil {
		return 0, err
	}
	if f.node.isDir {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: syscall.EISDIR}
	}
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.fs.mutate("write", f.name); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "writeat", Path: f.name, Err: errNegativeOffset}
	}
	if len(p) == 0 {
		return 0, nil
	}
	if err := f.checkWritable("write", syscall.EBADF); err != nil {
		return 0, err
	}
	if off > memFileBytesMax-int64(len(p)) {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: syscall.EFBIG}
	}
	if fits := f.fs.fitLocked(f.node, off, len(p)); fits < len(p) {
		// A full disk takes what fits, then refuses the rest (write(2)
		// returns the short count, and the retry of the rest ENOSPC).
		f.node.write(p[:fits], off)
		f.fs.touch(f.node)
		return fits, &fs.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
	}
	f.node.write(p, off)
	f.fs.touch(f.node)
	return len(p), nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.fs.mutate("truncate", f.name); err != nil {
		return err
	}
	// ftruncate(2) on a descriptor not open for writing is EINVAL.
	if err := f.checkWritable("truncate", syscall.EINVAL); err != nil {
		return err
	}
	if size < 0 {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: syscall.EINVAL}
	}
	if size > memFileBytesMax {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: syscall.EFBIG}
	}
	f.node.truncate(size)
	f.fs.touch(f.node)
	return nil
}

func (f *memFile) SyncData() error { return f.sync("fdatasync") }
func (f *memFile) Sync() error     { return f.sync("sync") }

func (f *memFile) sync(op string) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.fs.mutate(op, f.name); err != nil {
		return err
	}
	if err := f.check(op); err != nil {
		return err
	}
	f.node.sync()
	return nil
}

// Preallocate is a no-op: memory needs no reservation. It still reports the
// errors fallocate(2) would.
func (f *memFile) Preallocate(off, length int64) error {
	f.fs.mu.RLock()
	defer f.fs.mu.RUnlock()
	if err := f.fs.live("fallocate", f.name); err != nil {
		return err
	}
	if length <= 0 {
		return nil // as osFile: nothing to reserve, no system call
	}
	if err := f.checkWritable("fallocate", syscall.EBADF); err != nil {
		return err
	}
	if off < 0 {
		return &fs.PathError{Op: "fallocate", Path: f.name, Err: syscall.EINVAL}
	}
	return nil
}

func (f *memFile) Size() (int64, error) {
	f.fs.mu.RLock()
	defer f.fs.mu.RUnlock()
	if err := f.check("stat"); err != nil {
		return 0, err
	}
	return int64(len(f.node.data)), nil
}

func (f *memFile) Name() string { return f.name }

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("close"); err != nil {
		return err
	}
	f.closed = true
	return nil
}

// check fails on a crashed FS or a closed file. Callers hold fs.mu.
func (f *memFile) check(op string) error {
	if err := f.fs.live(op, f.name); err != nil {
		return err
	}
	if f.closed {
		return &fs.PathError{Op: op, Path: f.name, Err: fs.ErrClosed}
	}
	return nil
}

// checkWritable is check plus the error errno for a read-only handle.
func (f *memFile) checkWritable(op string, errno syscall.Errno) error {
	if err := f.check(op); err != nil {
		return err
	}
	if !f.writable {
		return &fs.PathError{Op: op, Path: f.name, Err: errno}
	}
	return nil
}

// write applies a WriteAt and records how to undo it.
func (n *memNode) write(p []byte, off int64) {
	if len(p) == 0 {
		return // pwrite of nothing does not extend the file
	}
	size := int64(len(n.data))
	rec := undoRecord{isWrite: true, offset: off, length: int64(len(p)), sizeBefore: size}
	if off < size {
		rec.replaced = slices.Clone(n.data[off:min(off+int64(len(p)), size)])
	}
	n.undo = append(n.undo, rec)
	n.writeNoUndo(p, off)
}

func (n *memNode) writeNoUndo(p []byte, off int64) {
	if end := off + int64(len(p)); end > int64(len(n.data)) {
		n.resize(end)
	}
	copy(n.data[off:], p)
}

// truncate applies a Truncate and records how to undo it.
func (n *memNode) truncate(size int64) {
	before := int64(len(n.data))
	if size == before {
		return
	}
	rec := undoRecord{offset: size, sizeBefore: before}
	if size < before {
		rec.replaced = slices.Clone(n.data[size:])
	}
	n.undo = append(n.undo, rec)
	n.resize(size)
}

// resize sets the data length; bytes it adds read as zeros, like a hole.
func (n *memNode) resize(size int64) {
	old := int64(len(n.data))
	if size <= old {
		n.data = n.data[:size]
		return
	}
	n.data = slices.Grow(n.data, int(size-old))[:size]
	// The spare capacity may hold bytes of an earlier, longer version.
	clear(n.data[old:])
}

// rollback undoes rec, the newest change still applied to n.data.
func (n *memNode) rollback(rec undoRecord) {
	if rec.isWrite {
		copy(n.data[rec.offset:], rec.replaced)
		n.resize(rec.sizeBefore)
		return
	}
	n.resize(rec.sizeBefore)
	if len(rec.replaced) > 0 { // the truncate shrank the file
		copy(n.data[rec.offset:], rec.replaced)
	}
}
