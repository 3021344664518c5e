package kafka

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

func describeGroupsRequest(version int16, ids ...string) *kmsg.DescribeGroupsRequest {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.SetVersion(version)
	req.Groups = ids
	return req
}

// TestDescribeGroups: each group is asked of its coordinator; a group
// that does not exist is Dead with no error (as Kafka below v6); members
// carry metadata and assignment, never null; group.instance.id from v4.
func TestDescribeGroups(t *testing.T) {
	for v := int16(0); v <= 5; v++ {
		f, g := groupFixture(t)
		g.answer = func(req any) (groups.Response, error) {
			dr := req.(*groups.DescribeGroupRequest)
			if dr.Group != "g" {
				return emptyGroupResponse(req) // GROUP_ID_NOT_FOUND
			}
			return groups.Response{Describe: &groups.DescribeGroupResponse{Group: "g", State: "Stable", ProtocolType: "consumer", Protocol: "range",
				Members: []groups.DescribedMember{
					{MemberID: "m1", InstanceID: "i1", ClientID: "c1", ClientHost: "/192.0.2.7", Metadata: []byte{1}, Assignment: []byte{2}},
					{MemberID: "m2", ClientID: "c2"},
				}}}, nil
		}
		raw := f.do(t, describeGroupsRequest(v, "g", "none")).(*kmsg.DescribeGroupsResponse)
		resp := onWire(t, raw)
		what := fmt.Sprintf("v%d", v)
		if fmt.Sprint(g.submitted) != "[g none]" || len(resp.Groups) != 2 {
			t.Fatalf("%s: submitted %v, answered %+v", what, g.submitted, resp.Groups)
		}
		rg := resp.Groups[0]
		wantCode(t, what+" g", rg.ErrorCode, nil)
		if rg.Group != "g" || rg.State != "Stable" || rg.ProtocolType != "consumer" || rg.Protocol != "range" || len(rg.Members) != 2 {
			t.Errorf("%s: g %+v", what, rg)
		}
		m := rg.Members[0]
		if m.MemberID != "m1" || m.ClientID != "c1" || m.ClientHost != "/192.0.2.7" || string(m.ProtocolMetadata) != "\x01" || string(m.MemberAssignment) != "\x02" {
			t.Errorf("%s: member %+v", what, m)
		}
		if (derefString(m.InstanceID) == "i1") != (v >= 4) {
			t.Errorf("%s: instance %q, want it from v4", what, derefString(m.InstanceID))
		}
		if m2 := raw.Groups[0].Members[1]; m2.ProtocolMetadata == nil || m2.MemberAssignment == nil {
			t.Errorf("%s: m2's metadata %v assignment %v, want empty, not null", what, m2.ProtocolMetadata, m2.MemberAssignment)
		}
		none := resp.Groups[1]
		wantCode(t, what+" none", none.ErrorCode, nil)
		if none.Group != "none" || none.State != "Dead" {
			t.Errorf("%s: a missing group %+v, want Dead", what, none)
		}
		if v >= 3 && rg.AuthorizedOperations != -2147483648 {
			t.Errorf("%s: authorized operations %d, want not computed", what, rg.AuthorizedOperations)
		}
	}
}

// TestDescribeGroupsCoordinatorErrors: each group carries its
// coordinator's failure, with state Dead.
func TestDescribeGroupsCoordinatorErrors(t *testing.T) {
	for _, c := range groupErrorCodes {
		f, g := groupFixture(t)
		c.setup(t, f, g)
		resp := f.do(t, describeGroupsRequest(5, "g")).(*kmsg.DescribeGroupsResponse)
		wantCode(t, c.name, resp.Groups[0].ErrorCode, c.want)
		if resp.Groups[0].Group != "g" || resp.Groups[0].State != "Dead" {
			t.Errorf("%s: %+v", c.name, resp.Groups[0])
		}
	}
}
