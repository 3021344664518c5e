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
	t.Run("sound state", func(t *testing.T) {
		n := node(t)
		for range 100 {
			n.Tick()
			n.Advance(n.Ready())
		}
	})
}
