package quorum

import (
	"context"
	"errors"
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
		n := &testNode{id: id, fs: vfs.NewMem(), hist: hist, voters: voters, seed: uint64(id), tick: stableTick}
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
	// A new controller refuses proposals until it has committed an entry
	// of its epoch (ErrNotCaughtUp), and, slowed down (CI runs this under
	// qemu), one may lose its role between being seen acting and taking
	// the proposal (ErrNotController): nothing was appended, so the
	// proposal is made again, on whichever node acts then.
	propose := func(among []*testNode, data string) (*testNode, int64) {
		t.Helper()
		var c *testNode
		var idx int64
		waitFor(t, "an acting controller to take proposal "+data, 10*time.Second, func() bool {
			if c = acting(among); c == nil {
				return false
			}
			var err error
			idx, err = c.d.Propose(ctx, []byte(data))
			if errors.Is(err, metalog.ErrNotCaughtUp) || errors.Is(err, metalog.ErrNotController) {
				return false
			}
			if err != nil {
				t.Fatal(err)
			}
			return true
		})
		return c, idx
	}
	c, idx := propose(nodes, "a")
	node := func(id election.NodeID) *testNode { return nodes[id-1] }
	// waitApplied waits, on the followers c publishes, until each of ids
	// reports at least index, and checks every report against what the
	// follower applied.
	waitApplied := func(c *testNode, index int64, ids ...election.NodeID) map[election.NodeID]FollowerState {
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
	var followers []*testNode
	for _, n := range nodes {
		if n != c {
			followers = append(followers, n)
		}
	}
	waitApplied(c, idx, followers[0].id, followers[1].id)
	for _, n := range followers {
		if f, _ := n.d.Followers(); len(f) != 0 && acting([]*testNode{n}) == nil {
			t.Errorf("follower %d publishes followers %v", n.id, f)
		}
	}

	// The follower cut off keeps its old report while the other moves on.
	// The controller may change meanwhile (only between the two that can
	// still form a majority): the reports are then the new controller's.
	cut := followers[0]
	net.Isolate(cut.id)
	var live []*testNode
	for _, n := range nodes {
		if n != cut {
			live = append(live, n)
		}
	}
	var before, after map[election.NodeID]FollowerState
	for attempt := 0; ; attempt++ {
		a := acting(live)
		if a != nil {
			before, _ = a.d.Followers()
		}
		ctrl, idx := propose(live, "b")
		if ctrl != a {
			if attempt >= 5 {
				t.Fatalf("the acting controller changed during each of %d attempts", attempt+1)
			}
			continue
		}
		other := live[0]
		if other == ctrl {
			other = live[1]
		}
		after = waitApplied(ctrl, idx, other.id)
		if after[cut.id].Applied != before[cut.id].Applied || after[cut.id].Applied >= idx {
			t.Errorf("cut-off follower %d: applied %d before the cut, %d after; want unchanged, below %d",
				cut.id, before[cut.id].Applied, after[cut.id].Applied, idx)
		}
		return
	}
}

// stableTick is the election tick of tests that follow one controller
// through their checks: long enough that a process slowed down (CI runs
// these under qemu, two architectures at once) misses no heartbeat and
// starts no election meanwhile, which the checks do not expect.
const stableTick = 50 * time.Millisecond
