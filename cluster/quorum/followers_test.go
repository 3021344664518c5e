package quorum

import (
	"context"
	"testing"
	"time"

	"github.com/wren-broker/wren/cluster/metalog"
	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/internal/vfs"
)

// On three drivers over the in-memory network, the acting controller
// publishes what each follower's fetches report it applied: after a
// proposal commits, both followers report it soon, never more than their
// Apply hook was given (a report is what the follower's image shows), and
// a follower cut off keeps its old report while the other moves on. A
// follower publishes nothing.
func TestFollowersApplied(t *testing.T) {
	voters := []election.NodeID{1, 2, 3}
	net := NewMemNetwork()
	hist := &history{entries: map[int64]metalog.Entry{}}
	var nodes []*testNode
	for _, id := range voters {
		n := &testNode{id: id, fs: vfs.NewMem(), hist: hist, voters: voters, seed: uint64(id), tick: 20 * time.Millisecond}
		n.start(t, net)
		nodes = append(nodes, n)
	}
	defer func() {
		for _, n := range nodes {
			n.d.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	waitFor(t, "an acting controller", 10*time.Second, func() bool { return acting(nodes) != nil })
	c := acting(nodes)
	var followers []*testNode
	for _, n := range nodes {
		if n != c {
			followers = append(followers, n)
		}
	}
	node := func(id election.NodeID) *testNode { return nodes[id-1] }

	// waitApplied waits, on the published followers, until each of ids
	// reports at least index, and checks every report against what the
	// follower applied.
	waitApplied := func(index int64, ids ...election.NodeID) map[election.NodeID]FollowerState {
		t.Helper()
		for {
			f, changed := c.d.Followers()
			all := true
			for id, st := range f {
				if got := node(id).applied(); st.Applied > got {
					t.Fatalf("follower %d reported applied %d, but its Apply hook was given up to %d", id, st.Applied, got)
				}
			}
			for _, id := range ids {
				if f[id].Applied < index {
					all = false
				}
			}
			if all {
				return f
			}
			select {
			case <-changed:
			case <-ctx.Done():
				t.Fatalf("followers %v did not report applied %d: %v", ids, index, f)
			}
		}
	}
	idx, err := c.d.Propose(ctx, []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	waitApplied(idx, followers[0].id, followers[1].id)
	for _, n := range followers {
		if f, _ := n.d.Followers(); len(f) != 0 {
			t.Errorf("follower %d publishes followers %v", n.id, f)
		}
	}

	cut, other := followers[0], followers[1]
	net.Isolate(cut.id)
	before, _ := c.d.Followers()
	if idx, err = c.d.Propose(ctx, []byte("b")); err != nil {
		t.Fatal(err)
	}
	after := waitApplied(idx, other.id)
	if after[cut.id].Applied != before[cut.id].Applied || after[cut.id].Applied >= idx {
		t.Errorf("cut-off follower %d: applied %d before the cut, %d after; want unchanged, below %d",
			cut.id, before[cut.id].Applied, after[cut.id].Applied, idx)
	}
}
