package kafka

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

func deleteGroupsRequest(version int16, ids ...string) *kmsg.DeleteGroupsRequest {
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.SetVersion(version)
	req.Groups = ids
	return req
}

// TestDeleteGroups: each group is deleted by its coordinator, with its
// own code (NON_EMPTY_GROUP while members remain), at every version.
func TestDeleteGroups(t *testing.T) {
	for v := int16(0); v <= 2; v++ {
		f, g := groupFixture(t)
		g.answer = func(req any) (groups.Response, error) {
			code := int16(0)
			if req.(*groups.DeleteGroupRequest).Group == "busy" {
				code = kerr.NonEmptyGroup.Code
			}
			return groups.Response{Delete: &groups.DeleteGroupResponse{ErrorCode: code}}, nil
		}
		resp := onWire(t, f.do(t, deleteGroupsRequest(v, "g", "busy")).(*kmsg.DeleteGroupsResponse))
		if fmt.Sprint(g.submitted) != "[g busy]" || len(resp.Groups) != 2 {
			t.Fatalf("v%d: submitted %v, answered %+v", v, g.submitted, resp.Groups)
		}
		wantCode(t, fmt.Sprintf("v%d g", v), resp.Groups[0].ErrorCode, nil)
		wantCode(t, fmt.Sprintf("v%d busy", v), resp.Groups[1].ErrorCode, kerr.NonEmptyGroup)
		if resp.Groups[1].Group != "busy" {
			t.Errorf("v%d: second group answered as %q", v, resp.Groups[1].Group)
		}
	}
}

// TestDeleteGroupsCoordinatorErrors: each group carries its coordinator's
// failure.
func TestDeleteGroupsCoordinatorErrors(t *testing.T) {
	for _, c := range groupErrorCodes {
		f, g := groupFixture(t)
		c.setup(t, f, g)
		wantCode(t, c.name, f.do(t, deleteGroupsRequest(2, "g")).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, c.want)
	}
}
