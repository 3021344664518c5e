package kafka

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

// leaveGroupRequest is one member leaving (MemberID below v3, Members
// from v3, where an administrator may also name a static member by its
// group.instance.id alone).
func leaveGroupRequest(version int16) *kmsg.LeaveGroupRequest {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.SetVersion(version)
	req.Group = "g"
	if version < 3 {
		req.MemberID = "m1"
		return req
	}
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID, m.Reason = "m1", kmsg.StringPtr("closing")
	s := kmsg.NewLeaveGroupRequestMember()
	s.InstanceID = kmsg.StringPtr("i2")
	req.Members = append(req.Members, m, s)
	return req
}

// TestLeaveGroup: v0-2 name one member and answer its error at the top;
// v3+ a batch, each member with its own error; v5 adds a reason.
func TestLeaveGroup(t *testing.T) {
	for v := int16(0); v <= 5; v++ {
		f, g := groupFixture(t)
		g.answer = func(req any) (groups.Response, error) {
			lr := &groups.LeaveResponse{}
			for _, m := range req.(*groups.LeaveRequest).Members {
				code := int16(0)
				if m.InstanceID == "i2" {
					code = kerr.UnknownMemberID.Code
				}
				lr.Members = append(lr.Members, groups.LeaveMemberResult{MemberID: m.MemberID, InstanceID: m.InstanceID, ErrorCode: code})
			}
			if v < 3 {
				lr.Members[0].ErrorCode = kerr.UnknownMemberID.Code
			}
			return groups.Response{Leave: lr}, nil
		}
		resp := onWire(t, f.do(t, leaveGroupRequest(v)).(*kmsg.LeaveGroupResponse))
		lr := lastGroupRequest[groups.LeaveRequest](t, g)
		what := fmt.Sprintf("v%d", v)
		if v < 3 {
			if len(lr.Members) != 1 || lr.Members[0].MemberID != "m1" {
				t.Errorf("%s: coordinator got %+v, want m1", what, lr.Members)
			}
			wantCode(t, what, resp.ErrorCode, kerr.UnknownMemberID)
			continue
		}
		if len(lr.Members) != 2 || lr.Members[1].InstanceID != "i2" || (lr.Members[0].Reason == "closing") != (v >= 5) {
			t.Errorf("%s: coordinator got %+v", what, lr.Members)
		}
		wantCode(t, what+" top level", resp.ErrorCode, nil)
		if len(resp.Members) != 2 {
			t.Fatalf("%s: members %+v", what, resp.Members)
		}
		wantCode(t, what+" m1", resp.Members[0].ErrorCode, nil)
		wantCode(t, what+" i2", resp.Members[1].ErrorCode, kerr.UnknownMemberID)
		if derefString(resp.Members[1].InstanceID) != "i2" || resp.Members[0].InstanceID != nil {
			t.Errorf("%s: instance ids %v %v, want null and i2", what, resp.Members[0].InstanceID, derefString(resp.Members[1].InstanceID))
		}
	}
}

// TestLeaveGroupCoordinatorErrors: at the top level at every version.
func TestLeaveGroupCoordinatorErrors(t *testing.T) {
	for _, v := range []int16{0, 3, 5} {
		for _, c := range groupErrorCodes {
			f, g := groupFixture(t)
			c.setup(t, f, g)
			resp := f.do(t, leaveGroupRequest(v)).(*kmsg.LeaveGroupResponse)
			wantCode(t, fmt.Sprintf("v%d %s", v, c.name), resp.ErrorCode, c.want)
		}
	}
}
