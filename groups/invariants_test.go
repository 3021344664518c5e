//go:build invariants

package groups

import (
	"testing"

	"github.com/wren-broker/wren/internal/invariants/invtest"
)

// TestGroupInvariantsFire: with the invariants tag, Ready checks every
// group before it hands out the input's records and answers.
func TestGroupInvariantsFire(t *testing.T) {
	classic := func(t *testing.T) *Coordinator {
		c, err := NewCoordinator(testConfig(), 0, 1, SeededMemberIDs(7))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.CompleteLoad(0); err != nil {
			t.Fatal(err)
		}
		c.Join(JoinRequest{RequestID: 1, Group: "g", ClientID: "a", SessionTimeoutMs: 10000, ProtocolType: "consumer", Protocols: []Protocol{{Name: "range"}}}, 0)
		if rd := c.Ready(); len(rd.Responses) != 1 || rd.Responses[0].Join.ErrorCode != 0 {
			t.Fatalf("join: %+v", rd)
		}
		return c
	}
	t.Run("leader that is no member", func(t *testing.T) {
		c := classic(t)
		c.groups["g"].leaderID = "nobody"
		invtest.MustPanic(t, `group "g" has leader "nobody" and 1 members`, func() { c.Ready() })
	})
	t.Run("join waiters miscounted", func(t *testing.T) {
		c := classic(t)
		c.groups["g"].numAwaitingJoin++
		invtest.MustPanic(t, "0 awaiting join counted as 1", func() { c.Ready() })
	})
	t.Run("partition held by two consumer group members", func(t *testing.T) {
		e := newCGEnv(t, topic("t1", 2))
		for _, id := range []string{"m1", "m2"} {
			if resp := e.send(e.joinRequest(&cgClient{group: "g", id: id, rebalanceTimeoutMs: 5000, topics: []string{"t1"}})); resp.ErrorCode != 0 {
				t.Fatalf("join of %s: %s", id, errName(resp.ErrorCode))
			}
		}
		cg := e.c.groups["g"].consumer
		m1, m2 := cg.members["m1"], cg.members["m2"]
		for k := range m1.assigned {
			m2.assigned[k] = struct{}{}
		}
		invtest.MustPanic(t, "holds partition", func() { e.c.Ready() })
	})
}
