package vfs

import (
	"io"
	"os"
	"sync/atomic"
	"time"
)

// SlowFS wraps an FS and makes every sync slow, as a disk whose flushes
// take long does: File.SyncData, File.Sync and FS.SyncDir each wait the
// delay set with SetSyncDelay before they run. Everything else passes
// through at once. Unlike FaultFS it keeps the inner FS's optional
// abilities: its files are Fders when the inner files are (so sendfile(2)
// still serves reads), and it is a StatFSer when the inner FS is.
//
// It is a measuring tool: the failover script builds wren with the faultfs
// tag to give one node a slow disk. A SlowFS is safe for concurrent use,
// and the delay may change while it is in use.
type SlowFS struct {
	inner FS
	delay atomic.Int64 // nanoseconds
}

// sleep is time.Sleep; tests replace it to see the delays without taking
// them.
var sleep = time.Sleep

// NewSlowFS returns a SlowFS over inner with no delay yet.
func NewSlowFS(inner FS) *SlowFS {
	return &SlowFS{inner: inner}
}

// SetSyncDelay sets how long each later sync waits; zero or less makes
// syncs fast again. A sync already waiting keeps the delay it began with.
func (s *SlowFS) SetSyncDelay(d time.Duration) { s.delay.Store(int64(max(d, 0))) }

// SyncDelay is the delay set now.
func (s *SlowFS) SyncDelay() time.Duration { return time.Duration(s.delay.Load()) }

func (s *SlowFS) wait() {
	if d := s.SyncDelay(); d > 0 {
		sleep(d)
	}
}

func (s *SlowFS) wrap(f File, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	if fd, ok := f.(Fder); ok {
		return &slowFdFile{slowFile: slowFile{File: f, fs: s}, fd: fd}, nil
	}
	return &slowFile{File: f, fs: s}, nil
}

// Create implements FS.
func (s *SlowFS) Create(name string) (File, error) { return s.wrap(s.inner.Create(name)) }

// Open implements FS.
func (s *SlowFS) Open(name string) (File, error) { return s.wrap(s.inner.Open(name)) }

// OpenReadWrite implements FS.
func (s *SlowFS) OpenReadWrite(name string) (File, error) {
	return s.wrap(s.inner.OpenReadWrite(name))
}

// Remove implements FS.
func (s *SlowFS) Remove(name string) error { return s.inner.Remove(name) }

// RemoveAll implements FS.
func (s *SlowFS) RemoveAll(name string) error { return s.inner.RemoveAll(name) }

// Rename implements FS.
func (s *SlowFS) Rename(oldname, newname string) error { return s.inner.Rename(oldname, newname) }

// MkdirAll implements FS.
func (s *SlowFS) MkdirAll(dir string, perm os.FileMode) error { return s.inner.MkdirAll(dir, perm) }

// List implements FS.
func (s *SlowFS) List(dir string) ([]string, error) { return s.inner.List(dir) }

// Stat implements FS.
func (s *SlowFS) Stat(name string) (os.FileInfo, error) { return s.inner.Stat(name) }

// SyncDir implements FS: the delay, then the inner SyncDir.
func (s *SlowFS) SyncDir(dir string) error {
	s.wait()
	return s.inner.SyncDir(dir)
}

// Lock implements FS.
func (s *SlowFS) Lock(name string) (io.Closer, error) { return s.inner.Lock(name) }

// StatFS implements StatFSer when the inner FS does, and returns
// ErrStatFSUnsupported when it does not.
func (s *SlowFS) StatFS(name string) (Space, error) { return StatFS(s.inner, name) }

// slowFile is a File of a SlowFS: its syncs wait the delay first.
type slowFile struct {
	File
	fs *SlowFS
}

func (f *slowFile) SyncData() error {
	f.fs.wait()
	return f.File.SyncData()
}

func (f *slowFile) Sync() error {
	f.fs.wait()
	return f.File.Sync()
}

// slowFdFile is a slowFile whose inner file has a descriptor.
type slowFdFile struct {
	slowFile
	fd Fder
}

func (f *slowFdFile) Fd() uintptr { return f.fd.Fd() }
