package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Default is the real operating-system file system.
var Default FS = NewOS()

// NewOS returns the real operating-system file system. Its files implement
// Fder. It is stateless; every call returns an equivalent value.
func NewOS() FS { return osFS{} }

type osFS struct{}

func (osFS) Create(name string) (File, error) {
	return openOS(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC)
}

func (osFS) Open(name string) (File, error) {
	return openOS(name, os.O_RDONLY)
}

func (osFS) OpenReadWrite(name string) (File, error) {
	return openOS(name, os.O_RDWR|os.O_CREATE)
}

// openOS opens a regular file with open(2) and wraps the descriptor with
// os.NewFile. os.OpenFile would also try to register the descriptor with
// the runtime's poller, which never takes a regular file: four fcntl(2)
// and a failed epoll_ctl(2) more per open, which a start that opens
// thousands of partitions' files paid for nothing. The file works the
// same: reads and writes of a regular file block either way.
func openOS(name string, flag int) (File, error) {
	var fd int
	err := ignoringEINTR(func() error {
		var err error
		fd, err = syscall.Open(name, flag|syscall.O_CLOEXEC, 0o644)
		return err
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return &osFile{f: os.NewFile(uintptr(fd), name)}, nil
}

// readWhole reads a whole file with open(2), fstat(2), read(2) and
// close(2) on the bare descriptor: no os.File (whose NewFile asks the
// descriptor's flags with a fcntl(2), and which registers a cleanup).
// It reads what fstat said the size was, as ReadFile does: a file that
// grows meanwhile is read up to that size.
func (osFS) readWhole(name string, limit int64) ([]byte, error) {
	var fd int
	err := ignoringEINTR(func() error {
		var err error
		fd, err = syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := ignoringEINTR(func() error { return syscall.Fstat(fd, &st) }); err != nil {
		return nil, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		return nil, &os.PathError{Op: "read", Path: name, Err: syscall.EISDIR}
	}
	if st.Size > limit {
		return nil, &os.PathError{Op: "read", Path: name, Err: tooLarge(st.Size, limit)}
	}
	buf := make([]byte, st.Size)
	n := 0
	for n < len(buf) {
		var m int
		err := ignoringEINTR(func() error {
			var err error
			m, err = syscall.Read(fd, buf[n:])
			return err
		})
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: name, Err: err}
		}
		if m == 0 {
			break // shrunk meanwhile
		}
		n += m
	}
	return buf[:n], nil
}

func (osFS) Remove(name string) error                    { return os.Remove(name) }
func (osFS) RemoveAll(name string) error                 { return os.RemoveAll(name) }
func (osFS) Rename(oldname, newname string) error        { return os.Rename(oldname, newname) }
func (osFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }
func (osFS) Stat(name string) (os.FileInfo, error)       { return os.Stat(name) }

func (osFS) List(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	// fsync on a directory descriptor is what makes its entries durable.
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}

func (osFS) Lock(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	// flock belongs to the open file description, not the process, so a
	// second Lock from this process opens a new description and fails just
	// like one from another process would. fcntl locks would not: they are
	// per process and a second F_SETLK from the same process succeeds.
	err = control(f, func(fd int) error { return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) })
	if err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, name)
		}
		return nil, &os.PathError{Op: "flock", Path: name, Err: err}
	}
	// Closing the descriptor releases the lock.
	return f, nil
}

// osFile is a File over an *os.File. ReadAt and WriteAt are pread and
// pwrite, so the shared file offset is never used.
type osFile struct {
	f *os.File
}

var _ Fder = (*osFile)(nil)

func (o *osFile) ReadAt(p []byte, off int64) (int, error)  { return o.f.ReadAt(p, off) }
func (o *osFile) WriteAt(p []byte, off int64) (int, error) { return o.f.WriteAt(p, off) }
func (o *osFile) Close() error                             { return o.f.Close() }
func (o *osFile) Sync() error                              { return o.f.Sync() }
func (o *osFile) Truncate(size int64) error                { return o.f.Truncate(size) }
func (o *osFile) Name() string                             { return o.f.Name() }
func (o *osFile) Fd() uintptr                              { return o.f.Fd() }

func (o *osFile) SyncData() error {
	err := control(o.f, func(fd int) error { return ignoringEINTR(func() error { return unix.Fdatasync(fd) }) })
	if err != nil {
		return &os.PathError{Op: "fdatasync", Path: o.f.Name(), Err: err}
	}
	return nil
}

func (o *osFile) Preallocate(off, length int64) error {
	if length <= 0 {
		return nil // fallocate rejects a zero length with EINVAL; nothing to reserve.
	}
	err := control(o.f, func(fd int) error {
		return ignoringEINTR(func() error { return unix.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, off, length) })
	})
	switch {
	case err == nil, errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
		// Some file systems (tmpfs on old kernels, some FUSE and network
		// file systems) cannot reserve space; Preallocate is an
		// optimisation, so that is not an error.
		return nil
	default:
		return &os.PathError{Op: "fallocate", Path: o.f.Name(), Err: err}
	}
}

func (o *osFile) Size() (int64, error) {
	fi, err := o.f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// control runs fn on f's descriptor while holding a reference to it, so a
// concurrent Close cannot recycle the descriptor number under fn.
func control(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var opErr error
	if err := rc.Control(func(fd uintptr) { opErr = fn(int(fd)) }); err != nil {
		// Control fails only when the file is closed; report it as the os
		// package does.
		return os.ErrClosed
	}
	return opErr
}

func ignoringEINTR(fn func() error) error {
	for {
		err := fn()
		if err != syscall.EINTR {
			return err
		}
	}
}
