package kafka

import (
	"context"
	"fmt"

	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

// fakeGroups leads the __consumer_offsets partitions of its set.
type fakeGroups struct{ leads map[int32]bool }

func (g *fakeGroups) Submit(context.Context, string, GroupInput) GroupCall { panic("not used") }
func (g *fakeGroups) Partitions() int32                                    { return 4 }
func (g *fakeGroups) Leads(i int32) bool                                   { return g.leads[i] }
func (g *fakeGroups) ListGroups(context.Context) ([]groups.ListedGroup, int16, error) {
	return nil, 0, nil
}

func findCoordinatorRequest(keys ...string) *kmsg.FindCoordinatorRequest {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.SetVersion(4)
	req.CoordinatorKeys = keys
	return req
}

// TestFindCoordinator: this node for the groups whose partition it leads,
// COORDINATOR_NOT_AVAILABLE for the others and when there is no
// coordinator at all.
func TestFindCoordinator(t *testing.T) {
	f := newSeamFixture(t)
	g := "g"
	led := groups.PartitionFor(g, 4)
	var other string
	for i := range 100 {
		if k := fmt.Sprintf("g%d", i); groups.PartitionFor(k, 4) != led {
			other = k
			break
		}
	}
	resp := f.do(t, findCoordinatorRequest(g)).(*kmsg.FindCoordinatorResponse)
	wantCode(t, "no coordinator", resp.Coordinators[0].ErrorCode, kerr.CoordinatorNotAvailable)

	f.node.Groups = &fakeGroups{leads: map[int32]bool{led: true}}
	resp = f.do(t, findCoordinatorRequest(g, other, "")).(*kmsg.FindCoordinatorResponse)
	c := resp.Coordinators[0]
	wantCode(t, g, c.ErrorCode, nil)
	if c.NodeID != 1 || c.Host != "node1.test" || c.Port != 9092 {
		t.Errorf("%s: node %d at %s:%d, want node 1 at node1.test:9092", g, c.NodeID, c.Host, c.Port)
	}
	wantCode(t, other, resp.Coordinators[1].ErrorCode, kerr.CoordinatorNotAvailable)
	wantCode(t, "empty group id", resp.Coordinators[2].ErrorCode, kerr.InvalidRequest)
}
