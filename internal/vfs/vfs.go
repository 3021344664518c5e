package vfs

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// File is an open file. Reads and writes are positional only: wren never
// relies on a shared file offset, so concurrent readers and one appender can
// use the same handle.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Closer

	// SyncData is fdatasync(2): it returns once every byte written before the
	// call, and the file size, are durable. It does not make the file's
	// directory entry durable; SyncDir on the parent does that.
	SyncData() error
	// Sync is fsync(2): SyncData plus the rest of the inode metadata.
	Sync() error
	// Truncate sets the file size. Like a write, it is durable only after
	// the next SyncData or Sync.
	Truncate(size int64) error
	// Preallocate reserves length bytes at off without changing the file
	// size (fallocate with FALLOC_FL_KEEP_SIZE). Implementations that cannot
	// reserve space treat it as a no-op.
	Preallocate(off, length int64) error
	// Size is the current size of the file, durable or not.
	Size() (int64, error)
	// Name is the path the file was opened with.
	Name() string
}

// Fder is the optional ability of a File that is backed by a kernel file
// descriptor, which sendfile(2) can read from. In-memory files do not have it.
type Fder interface {
	Fd() uintptr
}

// FS is the file-system seam. Every file access in wal and engine goes
// through it, so tests can crash a node and lose exactly the bytes that were
// not synced, or fail a write, read or fdatasync.
type FS interface {
	// Create creates or truncates name for reading and writing.
	Create(name string) (File, error)
	// Open opens an existing file read-only.
	Open(name string) (File, error)
	// OpenReadWrite opens an existing file, or creates it, for reading and
	// writing without truncating it.
	OpenReadWrite(name string) (File, error)
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// RemoveAll removes a directory tree; a missing path is not an error.
	RemoveAll(name string) error
	// Rename atomically replaces newname with oldname. Like Create and
	// Remove, it is durable only after SyncDir on the parent directory.
	Rename(oldname, newname string) error
	// MkdirAll creates a directory and its parents.
	MkdirAll(dir string, perm os.FileMode) error
	// List returns the names (not paths) of a directory's entries, sorted.
	List(dir string) ([]string, error)
	// Stat describes a path.
	Stat(name string) (os.FileInfo, error)
	// SyncDir makes the directory's entries (creates, renames, removes)
	// durable: fsync(2) on the directory.
	SyncDir(dir string) error
	// Lock takes an exclusive advisory lock on name (created if missing),
	// held until the returned Closer is closed. A second Lock on the same
	// name, from this process or another, fails.
	Lock(name string) (io.Closer, error)
}

// ErrLocked is returned by Lock when another holder has the lock.
var ErrLocked = errors.New("vfs: file is locked by another holder")

// WriteFileAtomic replaces name with data crash-safely: write a temporary
// file, fsync it, rename it over name, fsync the directory. After a crash
// name holds either the old or the new contents, never a mix.
func WriteFileAtomic(fs FS, name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := fs.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fs.Rename(tmp, name); err != nil {
		return err
	}
	return fs.SyncDir(dirOf(name))
}

// ReadFile reads a whole file.
func ReadFile(fs FS, name string) ([]byte, error) {
	return ReadFileLimit(fs, name, math.MaxInt64)
}

// ErrTooLarge: a file read by ReadFileLimit is larger than its limit.
var ErrTooLarge = errors.New("over the size limit")

// wholeReader is an FS that reads a small file whole in fewer system
// calls than Open, Size, ReadAt and Close, and without a File: a start
// reads two small files of every partition.
type wholeReader interface {
	readWhole(name string, limit int64) ([]byte, error)
}

// ReadFileLimit reads a whole file of at most limit bytes; a larger one
// is ErrTooLarge, read no further.
func ReadFileLimit(fs FS, name string, limit int64) ([]byte, error) {
	if w, ok := fs.(wholeReader); ok {
		return w.readWhole(name, limit)
	}
	f, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	if size > limit {
		return nil, tooLarge(size, limit)
	}
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !(errors.Is(err, io.EOF) && int64(n) == size) {
		return nil, err
	}
	return buf[:n], nil
}

func tooLarge(size, limit int64) error {
	return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, size, limit)
}

func dirOf(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			if i == 0 {
				return "/"
			}
			return name[:i]
		}
	}
	return "."
}
