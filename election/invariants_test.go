//go:build invariants

package election

import (
	"testing"

	"github.com/wren-broker/wren/internal/invariants/invtest"
)

// TestElectionInvariantsFire: with the invariants tag, Tick and Step
// check the node's state when they end.
func TestElectionInvariantsFire(t *testing.T) {
	node := func(t *testing.T) *Node {
		n, err := NewNode(testConfig(1), HardState{Epoch: 5, VotedFor: 2})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	t.Run("epoch behind the disk", func(t *testing.T) {
		n := node(t)
		n.epoch = 4
		invtest.MustPanic(t, "holds epoch 4, vote 2, behind the persisted epoch 5, vote 2", n.Tick)
	})
	t.Run("second vote in a persisted epoch", func(t *testing.T) {
		n := node(t)
		n.votedFor = 3
		invtest.MustPanic(t, "holds epoch 5, vote 3, behind the persisted epoch 5, vote 2", func() {
			_ = n.Step(Message{Type: MsgHeartbeat, From: 2, To: 1, Epoch: 5})
		})
	})
	t.Run("controller that did not vote for itself", func(t *testing.T) {
		n := node(t)
		n.epoch, n.votedFor = 6, 2
		n.becomeController()
		invtest.MustPanic(t, "is controller of epoch 6 with controller 1, vote 2", n.Tick)
	})
	t.Run("sound state", func(t *testing.T) {
		n := node(t)
		for range 100 {
			n.Tick()
		}
	})
}
