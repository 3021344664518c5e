package vfs

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// Space is what statfs(2) says about the file system holding a path.
type Space struct {
	// TotalBytes is the file system's size (f_blocks * f_frsize).
	TotalBytes int64
	// FreeBytes is the space an unprivileged writer may still use
	// (f_bavail * f_frsize). Blocks reserved for root are left out: a
	// broker running as root could use them, but counting them would let
	// it fill the disk the rest of the host needs.
	FreeBytes int64
}

// StatFSer is the optional ability of an FS to report the free space of
// the file system that holds a path. The OS FS has it; a MemFS has it once
// SetCapacity gave it a size.
type StatFSer interface {
	StatFS(name string) (Space, error)
}

// ErrStatFSUnsupported is returned by StatFS for an FS that cannot report
// free space.
var ErrStatFSUnsupported = errors.New("vfs: file system does not report free space")

// StatFS reports the space of the file system holding name, or
// ErrStatFSUnsupported.
func StatFS(fsys FS, name string) (Space, error) {
	if s, ok := fsys.(StatFSer); ok {
		return s.StatFS(name)
	}
	return Space{}, ErrStatFSUnsupported
}

// StatFS implements StatFSer with statfs(2).
func (osFS) StatFS(name string) (Space, error) {
	var st unix.Statfs_t
	err := ignoringEINTR(func() error { return unix.Statfs(name, &st) })
	if err != nil {
		return Space{}, &os.PathError{Op: "statfs", Path: name, Err: err}
	}
	// Frsize is the unit of the block counts; old kernels leave it zero.
	unit := int64(st.Frsize)
	if unit <= 0 {
		unit = int64(st.Bsize)
	}
	return Space{TotalBytes: int64(st.Blocks) * unit, FreeBytes: int64(st.Bavail) * unit}, nil
}

// SetCapacity gives the MemFS a size: from then on StatFS reports it, and
// a write that would take the data of all files past it fails with ENOSPC
// after writing what fits, as write(2) does on a full disk. Lowering it
// below what the files hold already simulates another program filling the
// disk; raising it simulates space coming back. 0 (the default) means no
// limit, and StatFS then returns ErrStatFSUnsupported.
//
// The space in use is the data of every file reachable by a name. A file
// removed while still open stops counting at once (a real disk frees it at
// the last close), and Preallocate and holes are not counted apart from the
// bytes the file's size spans.
func (m *MemFS) SetCapacity(bytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.capacity = max(bytes, 0)
}

// StatFS implements StatFSer for a MemFS with a capacity.
func (m *MemFS) StatFS(name string) (Space, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.live("statfs", name); err != nil {
		return Space{}, err
	}
	if _, err := m.lookup("statfs", name); err != nil {
		return Space{}, err
	}
	if m.capacity == 0 {
		return Space{}, &fs.PathError{Op: "statfs", Path: name, Err: ErrStatFSUnsupported}
	}
	return Space{TotalBytes: m.capacity, FreeBytes: max(m.capacity-m.usedLocked(), 0)}, nil
}

// usedLocked sums the sizes of the files reachable from the root, each
// inode once. Callers hold m.mu.
func (m *MemFS) usedLocked() int64 {
	seen := map[*memNode]bool{}
	var used int64
	var walk func(n *memNode)
	walk = func(n *memNode) {
		if seen[n] {
			return
		}
		seen[n] = true
		if !n.isDir {
			used += int64(len(n.data))
			return
		}
		for _, c := range n.children {
			walk(c)
		}
	}
	walk(m.root)
	return used
}

// fitLocked returns how many bytes of a write of length n at off into
// node fit under the capacity. Callers hold m.mu for writing.
func (m *MemFS) fitLocked(node *memNode, off int64, n int) int {
	if m.capacity == 0 {
		return n
	}
	grow := off + int64(n) - int64(len(node.data))
	if grow <= 0 {
		return n
	}
	free := m.capacity - m.usedLocked()
	if grow <= free {
		return n
	}
	// The bytes up to the old end overwrite and need no space; past it,
	// only free bytes land (a hole before off counts as used).
	fits := int64(len(node.data)) + max(free, 0) - off
	return int(min(max(fits, 0), int64(n)))
}

// StatFS implements StatFSer by asking the inner FS, unless an OpStatFS
// fault fires.
func (f *FaultFS) StatFS(name string) (Space, error) {
	if err := f.pathErr(OpStatFS, "statfs", name); err != nil {
		return Space{}, err
	}
	return StatFS(f.inner, name)
}

var (
	_ StatFSer = osFS{}
	_ StatFSer = (*MemFS)(nil)
	_ StatFSer = (*FaultFS)(nil)
)
