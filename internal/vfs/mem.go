package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrCrashed is returned by every operation on a MemFS, and on its open
// files, once it has crashed. The post-crash state is a new MemFS.
var ErrCrashed = errors.New("vfs: file system crashed")

// errNegativeOffset mirrors the error os.File gives for a negative offset.
var errNegativeOffset = errors.New("negative offset")

// MemFS is an in-memory FS that can simulate a power loss. It tracks, for
// every file, the bytes that are durable apart from those merely written,
// and for every directory, the entries that are durable apart from the
// current ones; see the package documentation for the exact crash model.
//
// A MemFS is safe for concurrent use. Its files do not implement Fder, and
// hold at most 1 GiB each (beyond that, EFBIG).
type MemFS struct {
	mu sync.RWMutex
	// root is the root directory; paths are resolved from it, and a
	// relative path is taken as relative to it.
	root *memNode
	// locks holds the files locked by Lock, by inode as flock does.
	locks map[*memNode]bool

	// mutatingOps counts mutating operations attempted so far, including the
	// one that crashed the FS.
	mutatingOps int64
	// crashAfter is the number of mutating operations allowed before the
	// crash; negative when no crash is scheduled.
	crashAfter   int64
	crashOptions CrashOptions
	// capacity is the size SetCapacity gave, 0 for no limit; it survives a
	// crash, as the disk does.
	capacity int64
	// crashState is nil while the FS is alive; afterwards it is what the
	// machine finds after the power loss.
	crashState *MemFS

	// lastIno numbers the inodes; clock is the ctime source (a counter
	// that every change moves on, shown as nanoseconds, or as whole
	// seconds under wholeSecondCtime: SetWholeSecondCtime). Both survive
	// a crash, as a disk's inode numbers and the wall clock do.
	lastIno          uint64
	clock            int64
	wholeSecondCtime bool
}

// memCtimeBase is the first ctime a MemFS shows: some moment in 2023.
const memCtimeBase = 1_700_000_000_000_000_000

// SetWholeSecondCtime makes the FS keep ctimes in whole seconds, as some
// file systems do (FileIdentity.WholeSecond).
func (m *MemFS) SetWholeSecondCtime(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.wholeSecondCtime = on
}

// touch sets the ctime of nodes to now: every change to a node's data,
// size, links or name does. Callers hold m.mu for writing.
func (m *MemFS) touch(nodes ...*memNode) {
	m.clock++
	now := int64(memCtimeBase) + m.clock*1_000_003
	if m.wholeSecondCtime {
		now = int64(memCtimeBase) + m.clock*1_000_000_000
	}
	for _, n := range nodes {
		if n != nil {
			n.ctimeNs = now
		}
	}
}

// newNode gives n an inode number and a ctime. Callers hold m.mu for
// writing.
func (m *MemFS) newNode(n *memNode) *memNode {
	m.lastIno++
	n.ino = m.lastIno
	m.touch(n)
	return n
}

// memNode is an inode: a directory or a regular file.
type memNode struct {
	isDir bool
	perm  os.FileMode
	// ino and ctimeNs are the node's identity (FileIdentity).
	ino     uint64
	ctimeNs int64

	// Directories only. children are the current entries; syncedChildren
	// are the entries as of the last SyncDir (or fsync of the directory),
	// which is what survives a crash. A node may be reachable from both
	// maps, under different names, while a rename is not yet durable.
	children       map[string]*memNode
	syncedChildren map[string]*memNode

	// Files only. data is the current contents. undo lists the changes
	// since the last SyncData or Sync, oldest first, each with what it
	// replaced, so the durable contents are data with undo rolled back.
	// Keeping undo records (rather than a second copy of the durable bytes)
	// makes a sync O(1) and an append cost nothing extra.
	data []byte
	undo []undoRecord
}

// undoRecord describes one unsynced change to a file's data.
type undoRecord struct {
	// isWrite tells a WriteAt (offset, length) from a Truncate (offset =
	// the new size).
	isWrite bool
	offset  int64
	length  int64
	// sizeBefore is the file size before the change.
	sizeBefore int64
	// replaced holds the bytes the change overwrote (a write) or cut off (a
	// truncate), starting at offset. It is empty for a pure append.
	replaced []byte
}

// NewMem returns an empty in-memory FS.
func NewMem() *MemFS {
	m := &MemFS{
		locks:      make(map[*memNode]bool),
		crashAfter: -1,
	}
	m.root = m.newNode(newDirNode(0o755))
	return m
}

func newDirNode(perm os.FileMode) *memNode {
	return &memNode{isDir: true, perm: perm.Perm(), children: make(map[string]*memNode)}
}

// MutatingOps returns the number of mutating operations (a write, truncate,
// SyncData, Sync, SyncDir, Create, OpenReadWrite, Lock, MkdirAll, Rename,
// Remove or RemoveAll) attempted so far, whether or not they succeeded. A
// test runs its workload once to learn the count, then picks a crash point
// in [0, count] for SetCrashAfter.
func (m *MemFS) MutatingOps() int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.mutatingOps
}

// SetCrashAfter schedules a crash: the next n mutating operations run
// normally, and the one after them crashes the FS instead of running. That
// operation, and every later one of any kind, fails with ErrCrashed, and
// CrashState returns the post-crash FS, built with opts. n = 0 crashes at
// the next mutating operation; a negative n cancels the schedule.
func (m *MemFS) SetCrashAfter(n int64, opts CrashOptions) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n < 0 {
		m.crashAfter = -1
		return
	}
	opts.validate()
	m.crashAfter = m.mutatingOps + n
	m.crashOptions = opts
}

// CrashState returns the FS a machine would find after the crash, or nil if
// this FS has not crashed.
func (m *MemFS) CrashState() *MemFS {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.crashState
}

// Crash simulates a power loss now: this FS and its open files fail every
// later operation with ErrCrashed, and the returned FS holds what survived.
// On an FS that has already crashed it returns the state of that crash and
// ignores opts.
func (m *MemFS) Crash(opts CrashOptions) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.crashState == nil {
		m.crashLocked(opts)
	}
	return m.crashState
}

// mutate is called, with m.mu held for writing, at the start of every
// mutating operation: it counts the operation and fires a scheduled crash.
func (m *MemFS) mutate(op, name string) error {
	if m.crashState != nil {
		return &fs.PathError{Op: op, Path: name, Err: ErrCrashed}
	}
	m.mutatingOps++
	if m.crashAfter >= 0 && m.mutatingOps > m.crashAfter {
		m.crashLocked(m.crashOptions)
		return &fs.PathError{Op: op, Path: name, Err: ErrCrashed}
	}
	return nil
}

// live is called, with m.mu held, at the start of every operation that does
// not mutate.
func (m *MemFS) live(op, name string) error {
	if m.crashState != nil {
		return &fs.PathError{Op: op, Path: name, Err: ErrCrashed}
	}
	return nil
}

// splitPath turns a name into its components from the root. "" names
// nothing; "." and "/" name the root (nil components).
func splitPath(name string) ([]string, bool) {
	if name == "" {
		return nil, false
	}
	clean := path.Clean("/" + name)
	if clean == "/" {
		return nil, true
	}
	return strings.Split(clean[1:], "/"), true
}

// walk resolves components to a node.
func (m *MemFS) walk(parts []string) (*memNode, error) {
	n := m.root
	for _, p := range parts {
		if !n.isDir {
			return nil, syscall.ENOTDIR
		}
		c, ok := n.children[p]
		if !ok {
			return nil, syscall.ENOENT
		}
		n = c
	}
	return n, nil
}

func (m *MemFS) lookup(op, name string) (*memNode, error) {
	parts, ok := splitPath(name)
	if !ok {
		return nil, &fs.PathError{Op: op, Path: name, Err: syscall.ENOENT}
	}
	n, err := m.walk(parts)
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return n, nil
}

// lookupParent resolves the directory holding name's last component. base
// is "" when name is the root.
func (m *MemFS) lookupParent(name string) (dir *memNode, base string, err error) {
	parts, ok := splitPath(name)
	if !ok {
		return nil, "", syscall.ENOENT
	}
	if len(parts) == 0 {
		return nil, "", nil
	}
	dir, err = m.walk(parts[:len(parts)-1])
	if err != nil {
		return nil, "", err
	}
	if !dir.isDir {
		return nil, "", syscall.ENOTDIR
	}
	return dir, parts[len(parts)-1], nil
}

// Create implements FS.
func (m *MemFS) Create(name string) (File, error) {
	return m.openWritable("open", name, true)
}

// OpenReadWrite implements FS.
func (m *MemFS) OpenReadWrite(name string) (File, error) {
	return m.openWritable("open", name, false)
}

func (m *MemFS) openWritable(op, name string, truncate bool) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.mutate(op, name); err != nil {
		return nil, err
	}
	n, err := m.createLocked(name)
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	if truncate {
		n.truncate(0)
		m.touch(n)
	}
	return &memFile{fs: m, node: n, name: name, writable: true}, nil
}

// createLocked returns the file name, creating it if missing.
func (m *MemFS) createLocked(name string) (*memNode, error) {
	dir, base, err := m.lookupParent(name)
	if err != nil {
		return nil, err
	}
	if dir == nil {
		return nil, syscall.EISDIR
	}
	n, ok := dir.children[base]
	if !ok {
		n = m.newNode(&memNode{perm: 0o644})
		dir.children[base] = n
		m.touch(dir)
	}
	if n.isDir {
		return nil, syscall.EISDIR
	}
	return n, nil
}

// Open implements FS. Like open(2) with O_RDONLY it also opens a directory;
// Sync on such a handle is SyncDir.
func (m *MemFS) Open(name string) (File, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.live("open", name); err != nil {
		return nil, err
	}
	n, err := m.lookup("open", name)
	if err != nil {
		return nil, err
	}
	return &memFile{fs: m, node: n, name: name}, nil
}

// Remove implements FS.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.mutate("remove", name); err != nil {
		return err
	}
	dir, base, err := m.lookupParent(name)
	if err == nil && dir == nil {
		err = syscall.EBUSY // the root
	}
	if err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	n, ok := dir.children[base]
	switch {
	case !ok:
		return &fs.PathError{Op: "remove", Path: name, Err: syscall.ENOENT}
	case n.isDir && len(n.children) > 0:
		return &fs.PathError{Op: "remove", Path: name, Err: syscall.ENOTEMPTY}
	}
	delete(dir.children, base)
	m.touch(dir, n)
	return nil
}

// RemoveAll implements FS. It unlinks only the top entry: the subtree
// becomes unreachable, and the subdirectories' durable entries stay as they
// were, which is what an unsynced rm -r leaves after a crash.
func (m *MemFS) RemoveAll(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.mutate("unlinkat", name); err != nil {
		return err
	}
	dir, base, err := m.lookupParent(name)
	if err == nil && dir == nil {
		err = syscall.EINVAL // os.RemoveAll refuses the root too
	}
	if errors.Is(err, syscall.ENOENT) {
		return nil
	}
	if err != nil {
		return &fs.PathError{Op: "unlinkat", Path: name, Err: err}
	}
	if n, ok := dir.children[base]; ok {
		delete(dir.children, base)
		m.touch(dir, n)
	}
	return nil
}

// Rename implements FS, with os.Rename's rules: replacing an existing
// directory fails with EEXIST, and a directory cannot move into itself.
func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.mutate("rename", oldname); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: ErrCrashed}
	}
	if err := m.renameLocked(oldname, newname); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	return nil
}

// renameLocked checks in the order os.Rename and rename(2) do, so the
// error matches when several apply.
func (m *MemFS) renameLocked(oldname, newname string) error {
	oldParts, ok := splitPath(oldname)
	if !ok {
		return syscall.ENOENT
	}
	newParts, ok := splitPath(newname)
	if !ok {
		return syscall.ENOENT
	}
	// os.Rename refuses to replace a directory before it calls rename(2).
	if target, err := m.walk(newParts); err == nil && target.isDir {
		n, err := m.walk(oldParts)
		if err != nil {
			return err
		}
		if oldname == newname || n != target {
			return syscall.EEXIST
		}
	}
	oldDir, oldBase, err := m.lookupParent(oldname)
	if err != nil {
		return err
	}
	newDir, newBase, err := m.lookupParent(newname)
	if err != nil {
		return err
	}
	if oldDir == nil || newDir == nil {
		return syscall.EBUSY // the root
	}
	n, ok := oldDir.children[oldBase]
	if !ok {
		return syscall.ENOENT
	}
	if len(newParts) > len(oldParts) && slices.Equal(newParts[:len(oldParts)], oldParts) {
		return syscall.EINVAL // into itself
	}
	if existing, ok := newDir.children[newBase]; ok {
		switch {
		case existing == n:
			return nil // rename(2): same file, nothing to do
		case n.isDir && !existing.isDir:
			return syscall.ENOTDIR
		case existing.isDir:
			return syscall.EEXIST // os.Rename's check above already refused it
		}
	}
	existing := newDir.children[newBase]
	delete(oldDir.children, oldBase)
	newDir.children[newBase] = n
	m.touch(oldDir, newDir, n, existing)
	return nil
}

// MkdirAll implements FS. Each new directory's entry is durable only after
// SyncDir of its parent.
func (m *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.mutate("mkdir", dir); err != nil {
		return err
	}
	parts, ok := splitPath(dir)
	if !ok {
		return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOENT}
	}
	n := m.root
	for _, p := range parts {
		c, ok := n.children[p]
		if !ok {
			c = m.newNode(newDirNode(perm))
			n.children[p] = c
			m.touch(n)
		}
		if !c.isDir {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		n = c
	}
	return nil
}

// List implements FS.
func (m *MemFS) List(dir string) ([]string, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.live("open", dir); err != nil {
		return nil, err
	}
	n, err := m.lookup("open", dir)
	if err != nil {
		return nil, err
	}
	if !n.isDir {
		return nil, &fs.PathError{Op: "readdirent", Path: dir, Err: syscall.ENOTDIR}
	}
	return slices.Sorted(maps.Keys(n.children)), nil
}

// Stat implements FS.
func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.live("stat", name); err != nil {
		return nil, err
	}
	n, err := m.lookup("stat", name)
	if err != nil {
		return nil, err
	}
	return n.stat(path.Base(path.Clean("/" + name))), nil
}

// SyncDir implements FS. Like fsync(2) on a descriptor, on a regular file it
// syncs the file.
func (m *MemFS) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.mutate("sync", dir); err != nil {
		return err
	}
	n, err := m.lookup("open", dir)
	if err != nil {
		return err
	}
	n.sync()
	return nil
}

// Lock implements FS. Locks belong to the inode, as flock's do, and vanish
// in a crash.
func (m *MemFS) Lock(name string) (io.Closer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.mutate("open", name); err != nil {
		return nil, err
	}
	n, err := m.createLocked(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	if m.locks[n] {
		return nil, fmt.Errorf("%w: %s", ErrLocked, name)
	}
	m.locks[n] = true
	return &memLock{fs: m, node: n, name: name}, nil
}

type memLock struct {
	fs     *MemFS
	node   *memNode
	name   string
	closed bool
}

func (l *memLock) Close() error {
	l.fs.mu.Lock()
	defer l.fs.mu.Unlock()
	if err := l.fs.live("close", l.name); err != nil {
		return err
	}
	if l.closed {
		return &fs.PathError{Op: "close", Path: l.name, Err: fs.ErrClosed}
	}
	l.closed = true
	delete(l.fs.locks, l.node)
	return nil
}

// sync makes a node's current state durable: a file's data, or a
// directory's entries.
func (n *memNode) sync() {
	if n.isDir {
		n.syncedChildren = maps.Clone(n.children)
		return
	}
	// Drop the references to replaced bytes so they can be collected.
	clear(n.undo)
	n.undo = n.undo[:0]
}

func (n *memNode) stat(name string) os.FileInfo {
	fi := &memFileInfo{name: name, mode: n.perm, sys: &memStat{ino: n.ino, ctimeNs: n.ctimeNs}}
	if n.isDir {
		fi.mode |= fs.ModeDir
	} else {
		fi.size = int64(len(n.data))
	}
	return fi
}

type memFileInfo struct {
	name string
	size int64
	mode fs.FileMode
	sys  *memStat
}

// memStat is a MemFS file's identity (IdentityOf).
type memStat struct {
	ino     uint64
	ctimeNs int64
}

func (fi *memFileInfo) Name() string       { return fi.name }
func (fi *memFileInfo) Size() int64        { return fi.size }
func (fi *memFileInfo) Mode() fs.FileMode  { return fi.mode }
func (fi *memFileInfo) ModTime() time.Time { return time.Time{} } // no clock: tests stay deterministic
func (fi *memFileInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi *memFileInfo) Sys() any           { return fi.sys }
