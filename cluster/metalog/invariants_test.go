//go:build invariants

package metalog

import (
	"testing"

	"github.com/wren-broker/wren/internal/invariants/invtest"
)

// TestMetalogInvariantsFire: with the invariants tag, every input checks
// the node's state when it ends.
func TestMetalogInvariantsFire(t *testing.T) {
	node := func(t *testing.T) *Node {
		st := stored()
		st.Entries = []Entry{{Index: 1, Epoch: 1}, {Index: 2, Epoch: 1}, {Index: 3, Epoch: 2}}
		st.Hard.Commit = 2
		n, err := NewNode(testConfig(1), st)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	t.Run("commit past the log end", func(t *testing.T) {
		n := node(t)
		n.commit = 4
		invtest.MustPanic(t, "applied 0 (0 done), commit 4, last index 3", n.Tick)
	})
	t.Run("commit behind the disk", func(t *testing.T) {
		n := node(t)
		n.commit = 1
		invtest.MustPanic(t, "commit index 1 is below the persisted 2", n.Tick)
	})
	t.Run("a hole in the log", func(t *testing.T) {
		n := node(t)
		n.log.ents[1].Index = 5
		invtest.MustPanic(t, "holds entry 1/5 at position 1 after snapshot 0/0", n.Tick)
	})
	t.Run("epochs going back", func(t *testing.T) {
		n := node(t)
		n.log.ents[2].Epoch = 0
		invtest.MustPanic(t, "holds entry 0/3 at position 2 after snapshot 0/0, following epoch 1", func() { n.Advance(n.Ready()) })
	})
	// The checks after the first walk only what changed: an entry
	// appended since, and the first entry against a new snapshot.
	t.Run("a hole appended after a check", func(t *testing.T) {
		n := node(t)
		n.Tick()
		n.log.ents = append(n.log.ents, Entry{Index: 5, Epoch: 2})
		invtest.MustPanic(t, "holds entry 2/5 at position 3 after snapshot 0/0, following epoch 2", n.Tick)
	})
	t.Run("epochs going back after a truncation", func(t *testing.T) {
		n := node(t)
		n.Tick()
		n.log.truncateAfter(2)
		n.log.ents = append(n.log.ents, Entry{Index: 3, Epoch: 0})
		invtest.MustPanic(t, "holds entry 0/3 at position 2 after snapshot 0/0, following epoch 1", n.Tick)
	})
	t.Run("a snapshot its first entry does not follow", func(t *testing.T) {
		n := node(t)
		n.Tick()
		n.log.compact(Snapshot{Index: 1, Epoch: 3}, true)
		n.applied, n.appliedDone = 1, 1
		invtest.MustPanic(t, "holds entry 1/2 at position 0 after snapshot 3/1, following epoch 3", n.Tick)
	})
	t.Run("a hole appended after a compaction", func(t *testing.T) {
		n := node(t)
		n.Tick()
		n.log.compact(Snapshot{Index: 1, Epoch: 1}, true)
		n.applied, n.appliedDone = 1, 1
		n.log.ents = append(n.log.ents, Entry{Index: 6, Epoch: 2})
		invtest.MustPanic(t, "holds entry 2/6 at position 2 after snapshot 1/1, following epoch 2", n.Tick)
	})
	t.Run("sound state", func(t *testing.T) {
		n := node(t)
		for range 100 {
			n.Tick()
			n.Advance(n.Ready())
		}
	})
}
