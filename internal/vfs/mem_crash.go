package vfs

import (
	"maps"
	"math/rand/v2"
	"slices"
)

// CrashOptions chooses what a simulated power loss keeps beyond the durable
// state. The zero value drops every byte and every directory entry that was
// not synced.
type CrashOptions struct {
	// Rand makes the choices below; it is required when either is set, and
	// the same seed on the same workload gives the same post-crash state.
	Rand *rand.Rand
	// KeepUnsynced keeps, for each file, a random prefix (in write order) of
	// the writes and truncates made since its last sync: disks do persist
	// some dirty pages before power goes.
	KeepUnsynced bool
	// TearLastWrite lets the first unsynced write that is not kept survive
	// in part: a random prefix of its bytes lands (a torn write). Without
	// KeepUnsynced that is the first unsynced write of each file.
	TearLastWrite bool
}

func (o CrashOptions) validate() {
	if (o.KeepUnsynced || o.TearLastWrite) && o.Rand == nil {
		panic("vfs: CrashOptions.Rand is nil but KeepUnsynced or TearLastWrite is set")
	}
}

// crashLocked builds the post-crash FS and kills m. Callers hold m.mu for
// writing.
//
// The cost is proportional to the data: each surviving file's buffer moves
// to the new FS (m is dead and never reads it again) and only its unsynced
// changes are rolled back.
func (m *MemFS) crashLocked(opts CrashOptions) {
	opts.validate()
	next := NewMem()
	next.lastIno, next.clock, next.wholeSecondCtime = m.lastIno, m.clock, m.wholeSecondCtime
	c := crasher{opts: opts, seen: make(map[*memNode]*memNode), fs: next}
	next.root = c.recover(m.root)
	next.capacity = m.capacity
	m.crashState = next
	// Every later operation fails on crashState != nil; drop what the dead
	// FS still references so a long test does not keep two copies alive.
	m.root = newDirNode(0o755)
	clear(m.locks)
}

type crasher struct {
	opts CrashOptions
	// fs is the post-crash FS, whose clock gives a file that lost
	// unsynced changes a new ctime.
	fs *MemFS
	// seen maps old inodes to their recovered copies, so a file reachable by
	// two durable names (a rename whose two directories were not both
	// synced) stays one inode with two links.
	seen map[*memNode]*memNode
}

// recover returns the durable state of old as a new, fully durable node.
// Entries are visited in name order so a seeded Rand replays exactly.
func (c *crasher) recover(old *memNode) *memNode {
	if n, ok := c.seen[old]; ok {
		return n
	}
	if !old.isDir {
		// A file keeps its inode; one that lost unsynced changes gets a
		// new ctime, as its inode may have been written back with them
		// or without them.
		lost := len(old.undo) > 0
		n := &memNode{perm: old.perm, ino: old.ino, ctimeNs: old.ctimeNs, data: c.durableData(old)}
		if lost {
			c.fs.touch(n)
		}
		c.seen[old] = n
		return n
	}
	n := newDirNode(old.perm)
	n.ino, n.ctimeNs = old.ino, old.ctimeNs
	if !maps.Equal(old.children, old.syncedChildren) {
		c.fs.touch(n) // it lost entries, or gained back old ones
	}
	c.seen[old] = n
	for _, name := range slices.Sorted(maps.Keys(old.syncedChildren)) {
		child := old.syncedChildren[name]
		if _, dup := c.seen[child]; dup && child.isDir {
			// A directory moved between two directories that were both
			// synced at the wrong moments would get two parents, or even
			// become its own ancestor. A directory keeps one parent: the
			// first in walk order.
			continue
		}
		n.children[name] = c.recover(child)
	}
	n.syncedChildren = maps.Clone(n.children)
	return n
}

// durableData rolls old's unsynced changes back, keeping a random prefix of
// them if asked, and returns the resulting bytes. It takes old's buffer.
func (c *crasher) durableData(old *memNode) []byte {
	n := &memNode{data: old.data}
	old.data = nil
	keep := 0
	if c.opts.KeepUnsynced {
		keep = c.opts.Rand.IntN(len(old.undo) + 1)
	}
	for i := len(old.undo) - 1; i >= keep; i-- {
		rec := old.undo[i]
		if i == keep && c.opts.TearLastWrite && rec.isWrite {
			// n.data is the state right after this write, so its bytes
			// are still there to keep a prefix of.
			torn := c.opts.Rand.Int64N(rec.length + 1)
			part := slices.Clone(n.data[rec.offset : rec.offset+torn])
			n.rollback(rec)
			n.writeNoUndo(part, rec.offset)
			continue
		}
		n.rollback(rec)
	}
	old.undo = nil
	return n.data
}
