package kafka

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

func syncGroupRequest(version int16) *kmsg.SyncGroupRequest {
	req := kmsg.NewPtrSyncGroupRequest()
	req.SetVersion(version)
	req.Group, req.Generation, req.MemberID = "g", 3, "m1"
	req.InstanceID = kmsg.StringPtr("i1")
	req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = "m1", []byte{7}
	req.GroupAssignment = append(req.GroupAssignment, a)
	return req
}

// TestSyncGroup: the leader's assignments reach the coordinator;
// group.instance.id from v3, protocol type and name from v5, which are
// echoed back from v5 only.
func TestSyncGroup(t *testing.T) {
	for v := int16(0); v <= 5; v++ {
		f, g := groupFixture(t)
		g.answer = func(any) (groups.Response, error) {
			return groups.Response{Sync: &groups.SyncResponse{ProtocolType: "consumer", Protocol: "range", Assignment: []byte{7}}}, nil
		}
		resp := onWire(t, f.do(t, syncGroupRequest(v)).(*kmsg.SyncGroupResponse))
		sr := lastGroupRequest[groups.SyncRequest](t, g)
		what := fmt.Sprintf("v%d", v)
		if sr.Group != "g" || sr.Generation != 3 || sr.MemberID != "m1" || len(sr.Assignments) != 1 || string(sr.Assignments[0].Assignment) != "\x07" {
			t.Errorf("%s: coordinator got %+v", what, sr)
		}
		if (sr.InstanceID == "i1") != (v >= 3) || (sr.Protocol == "range") != (v >= 5) || (sr.ProtocolType == "consumer") != (v >= 5) {
			t.Errorf("%s: instance %q protocol %q/%q", what, sr.InstanceID, sr.ProtocolType, sr.Protocol)
		}
		wantCode(t, what, resp.ErrorCode, nil)
		if string(resp.MemberAssignment) != "\x07" {
			t.Errorf("%s: assignment %v", what, resp.MemberAssignment)
		}
		if (derefString(resp.Protocol) == "range") != (v >= 5) || (derefString(resp.ProtocolType) == "consumer") != (v >= 5) {
			t.Errorf("%s: echoed %q/%q, want them from v5", what, derefString(resp.ProtocolType), derefString(resp.Protocol))
		}
	}
}

// TestSyncGroupErrors: the coordinator's failures and its own codes are
// the response's, with an empty (never null) assignment.
func TestSyncGroupErrors(t *testing.T) {
	for _, c := range groupErrorCodes {
		f, g := groupFixture(t)
		c.setup(t, f, g)
		resp := f.do(t, syncGroupRequest(5)).(*kmsg.SyncGroupResponse)
		wantCode(t, c.name, resp.ErrorCode, arrivingAnswer(c, false))
		if resp.MemberAssignment == nil || len(resp.MemberAssignment) != 0 {
			t.Errorf("%s: assignment %v, want empty", c.name, resp.MemberAssignment)
		}
	}
	f, g := groupFixture(t)
	g.answer = func(any) (groups.Response, error) {
		return groups.Response{Sync: &groups.SyncResponse{ErrorCode: kerr.RebalanceInProgress.Code}}, nil
	}
	wantCode(t, "rebalance", f.do(t, syncGroupRequest(5)).(*kmsg.SyncGroupResponse).ErrorCode, kerr.RebalanceInProgress)
}
