//go:build invariants

package replication

import (
	"testing"

	"github.com/wren-broker/wren/internal/invariants/invtest"
)

// mustPanic runs f and fails unless it panics with a message holding
// want.

// TestReplicaCoreInvariantsFire: with the invariants tag, each input of
// the replica core checks the core's state when it ends.
func TestReplicaCoreInvariantsFire(t *testing.T) {
	leader := func() *replicaCore {
		c := newReplicaCore(1, 0)
		c.setMetadata(0, []int32{1, 2, 3}, []int32{1, 2, 3}, 2, 100)
		c.becomeLeader(1, 0, 10, 10)
		return c
	}
	t.Run("durable offset past the log end", func(t *testing.T) {
		c := leader()
		invtest.MustPanic(t, "high watermark 0, local offset 12, log end offset 11", func() { c.localAppend(11, 12) })
	})
	t.Run("high watermark past the durable offset", func(t *testing.T) {
		c := leader()
		c.highWatermark = 11
		invtest.MustPanic(t, "high watermark 11, local offset 10", func() { c.tick(1) })
	})
	t.Run("waiter at the high watermark", func(t *testing.T) {
		c := leader()
		c.highWatermark = 5
		c.waiters = append(c.waiters, waiter{id: 7, offset: 5})
		invtest.MustPanic(t, "waiter 7 for offset 5, at or below its high watermark 5", func() { c.tick(1) })
	})
	t.Run("follower with a pending ISR change", func(t *testing.T) {
		c := leader()
		c.becomeFollower(2)
		c.pending = &ISRChange{ISR: []int32{1, 2}, LeaderEpoch: 1}
		invtest.MustPanic(t, "follows at epoch 2 with pending ISR change", func() { c.localAppend(10, 10) })
	})
	t.Run("sound state", func(t *testing.T) {
		c := leader()
		c.followerFetch(2, 10, 1)
		c.followerFetch(3, 10, 1)
		if r := c.takeReady(); r.HighWatermark != 10 {
			t.Fatalf("high watermark %d, want 10", r.HighWatermark)
		}
	})
}
