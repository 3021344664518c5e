package kafka

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

func listGroupsRequest(version int16) *kmsg.ListGroupsRequest {
	req := kmsg.NewPtrListGroupsRequest()
	req.SetVersion(version)
	return req
}

var listedGroups = []groups.ListedGroup{
	{Group: "a", ProtocolType: "consumer", Type: groups.ClassicGroupType, State: "Stable"},
	{Group: "b", ProtocolType: "consumer", Type: groups.ConsumerGroupType, State: "Reconciling"},
	{Group: "c", ProtocolType: "", Type: groups.ClassicGroupType, State: "Empty"},
}

// listedNames lists the groups of an answer as "name/state/type".
func listedNames(resp *kmsg.ListGroupsResponse) string {
	var out []string
	for _, g := range resp.Groups {
		out = append(out, fmt.Sprintf("%s/%s/%s", g.Group, g.GroupState, g.GroupType))
	}
	return fmt.Sprint(out)
}

// TestListGroups: every group of the coordinator; states from v4 and
// types from v5 on the wire.
func TestListGroups(t *testing.T) {
	for v := int16(0); v <= 5; v++ {
		f, g := groupFixture(t)
		g.listed = listedGroups
		resp := onWire(t, f.do(t, listGroupsRequest(v)).(*kmsg.ListGroupsResponse))
		wantCode(t, fmt.Sprintf("v%d", v), resp.ErrorCode, nil)
		want := "[a// b// c//]"
		switch {
		case v >= 5:
			want = "[a/Stable/classic b/Reconciling/consumer c/Empty/classic]"
		case v == 4:
			want = "[a/Stable/ b/Reconciling/ c/Empty/]"
		}
		if got := listedNames(resp); got != want {
			t.Errorf("v%d: %s, want %s", v, got, want)
		}
		if resp.Groups[0].ProtocolType != "consumer" {
			t.Errorf("v%d: protocol type %q", v, resp.Groups[0].ProtocolType)
		}
	}
}

// TestListGroupsFilters: the state filter (v4) and the type filter (v5)
// match without regard to case; empty means all.
func TestListGroupsFilters(t *testing.T) {
	f, g := groupFixture(t)
	g.listed = listedGroups
	req := listGroupsRequest(5)
	req.StatesFilter = []string{"stable", "EMPTY"}
	if got := listedNames(f.do(t, req).(*kmsg.ListGroupsResponse)); got != "[a/Stable/classic c/Empty/classic]" {
		t.Errorf("states stable, EMPTY: %s", got)
	}
	req.StatesFilter, req.TypesFilter = nil, []string{"Consumer"}
	if got := listedNames(f.do(t, req).(*kmsg.ListGroupsResponse)); got != "[b/Reconciling/consumer]" {
		t.Errorf("type Consumer: %s", got)
	}
}

// TestListGroupsErrors: no coordinator, or one that cannot list, is
// COORDINATOR_NOT_AVAILABLE; a coordinator still loading some partitions
// is COORDINATOR_LOAD_IN_PROGRESS with the groups of the others.
func TestListGroupsErrors(t *testing.T) {
	f, g := groupFixture(t)
	f.node.Groups = nil
	wantCode(t, "no coordinator", f.do(t, listGroupsRequest(5)).(*kmsg.ListGroupsResponse).ErrorCode, kerr.CoordinatorNotAvailable)

	f.node.Groups = g
	g.listErr = errors.New("coordinator closed")
	wantCode(t, "list failed", f.do(t, listGroupsRequest(5)).(*kmsg.ListGroupsResponse).ErrorCode, kerr.CoordinatorNotAvailable)

	g.listErr, g.listed, g.listCode = nil, listedGroups[:1], kerr.CoordinatorLoadInProgress.Code
	resp := f.do(t, listGroupsRequest(5)).(*kmsg.ListGroupsResponse)
	wantCode(t, "loading", resp.ErrorCode, kerr.CoordinatorLoadInProgress)
	if len(resp.Groups) != 1 {
		t.Errorf("loading: %s, want the loaded partitions' group a", listedNames(resp))
	}
}

// TestListGroupsArriving: each node lists its own coordinators' groups;
// while this node's image names it the leader of a __consumer_offsets
// partition its replica has not taken yet, the groups of that partition
// are still to come: COORDINATOR_LOAD_IN_PROGRESS, so the client asks
// again, rather than a list that silently lacks them.
func TestListGroupsArriving(t *testing.T) {
	for _, c := range []struct {
		name    string
		leaders []int32
		replica func(f *seamFixture)
		want    *kerr.Error
	}{
		{"led elsewhere", []int32{2, 3, 2, 3}, func(f *seamFixture) { f.offsetsReplicas(false, 1) }, nil},
		{"led here, loaded", []int32{1, 1, 1, 1}, func(f *seamFixture) { f.offsetsReplicas(true, 1) }, nil},
		{"arriving, no replica yet", []int32{2, 1, 2, 3}, func(*seamFixture) {}, kerr.CoordinatorLoadInProgress},
		{"arriving, replica at the older epoch", []int32{2, 1, 2, 3}, func(f *seamFixture) { f.offsetsReplicas(false, 0) }, kerr.CoordinatorLoadInProgress},
		{"image behind the replica", []int32{2, 1, 2, 3}, func(f *seamFixture) { f.offsetsReplicas(false, 2) }, nil},
	} {
		f, g := groupFixture(t)
		g.listed = listedGroups[:1]
		f.addOffsetsTopic(t, c.leaders...)
		c.replica(f)
		resp := f.do(t, listGroupsRequest(5)).(*kmsg.ListGroupsResponse)
		wantCode(t, c.name, resp.ErrorCode, c.want)
		if len(resp.Groups) != 1 {
			t.Errorf("%s: %s, want the loaded group a", c.name, listedNames(resp))
		}
	}
}
