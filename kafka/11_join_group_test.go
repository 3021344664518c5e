package kafka

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

func joinGroupRequest(version int16, member string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.SetVersion(version)
	req.Group, req.MemberID, req.ProtocolType = "g", member, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 30000
	req.InstanceID, req.Reason = kmsg.StringPtr("i1"), kmsg.StringPtr("starting")
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{1, 2}
	req.Protocols = append(req.Protocols, p)
	return req
}

// TestJoinGroupRequestByVersion: what reaches the coordinator at each
// version: no rebalance timeout in v0 (the session timeout stands for
// it), KIP-394's member id round from v4, group.instance.id from v5, the
// reason from v8; the client's id and address always.
func TestJoinGroupRequestByVersion(t *testing.T) {
	for v := int16(0); v <= 9; v++ {
		f, g := groupFixture(t)
		f.do(t, joinGroupRequest(v, ""))
		jr := lastGroupRequest[groups.JoinRequest](t, g)
		what := fmt.Sprintf("v%d", v)
		if jr.Group != "g" || g.submitted[0] != "g" || jr.ProtocolType != "consumer" || jr.SessionTimeoutMs != 10000 ||
			len(jr.Protocols) != 1 || jr.Protocols[0].Name != "range" || string(jr.Protocols[0].Metadata) != "\x01\x02" {
			t.Errorf("%s: %+v", what, jr)
		}
		if jr.ClientID != "test" || jr.ClientHost != "/192.0.2.7" {
			t.Errorf("%s: client %q at %q, want test at /192.0.2.7", what, jr.ClientID, jr.ClientHost)
		}
		if want := map[bool]int32{true: -1, false: 30000}[v == 0]; jr.RebalanceTimeoutMs != want {
			t.Errorf("%s: rebalance timeout %d, want %d", what, jr.RebalanceTimeoutMs, want)
		}
		if jr.RequireKnownMemberID != (v >= 4) {
			t.Errorf("%s: require known member id %v", what, jr.RequireKnownMemberID)
		}
		if (jr.InstanceID == "i1") != (v >= 5) || (jr.Reason == "starting") != (v >= 8) {
			t.Errorf("%s: instance %q reason %q", what, jr.InstanceID, jr.Reason)
		}
	}
}

// TestJoinGroupResponse: the leader's answer carries the members; the
// protocol is nullable from v7 (null on an error), a string before.
func TestJoinGroupResponse(t *testing.T) {
	for _, v := range []int16{0, 6, 7, 9} {
		f, g := groupFixture(t)
		g.answer = func(req any) (groups.Response, error) {
			jr := req.(*groups.JoinRequest)
			return groups.Response{RequestID: jr.RequestID, Join: &groups.JoinResponse{Generation: 3, ProtocolType: "consumer", Protocol: "range",
				LeaderID: "m1", MemberID: "m1", Members: []groups.JoinMember{{MemberID: "m1", InstanceID: "i1", Metadata: []byte{9}}}}}, nil
		}
		resp := onWire(t, f.do(t, joinGroupRequest(v, "m1")).(*kmsg.JoinGroupResponse))
		wantCode(t, fmt.Sprintf("v%d", v), resp.ErrorCode, nil)
		if resp.Generation != 3 || resp.LeaderID != "m1" || resp.MemberID != "m1" || derefString(resp.Protocol) != "range" {
			t.Errorf("v%d: %+v", v, resp)
		}
		if len(resp.Members) != 1 || resp.Members[0].MemberID != "m1" || string(resp.Members[0].ProtocolMetadata) != "\x09" {
			t.Errorf("v%d: members %+v", v, resp.Members)
		}
		if wantType := v >= 7; (derefString(resp.ProtocolType) == "consumer") != wantType {
			t.Errorf("v%d: protocol type %q, want it from v7", v, derefString(resp.ProtocolType))
		}
		if wantInstance := v >= 5; (derefString(resp.Members[0].InstanceID) == "i1") != wantInstance {
			t.Errorf("v%d: member instance %q, want it from v5", v, derefString(resp.Members[0].InstanceID))
		}

		// An error: no protocol chosen, null from v7, "" before.
		g.answer = func(req any) (groups.Response, error) {
			return groups.Response{Join: &groups.JoinResponse{ErrorCode: kerr.MemberIDRequired.Code, Generation: -1, MemberID: "new-id"}}, nil
		}
		resp = onWire(t, f.do(t, joinGroupRequest(v, "")).(*kmsg.JoinGroupResponse))
		wantCode(t, fmt.Sprintf("v%d member id required", v), resp.ErrorCode, kerr.MemberIDRequired)
		if resp.MemberID != "new-id" {
			t.Errorf("v%d: member id %q, want new-id", v, resp.MemberID)
		}
		if v >= 7 && resp.Protocol != nil {
			t.Errorf("v%d: protocol %q on an error, want null", v, *resp.Protocol)
		}
		if v < 7 && (resp.Protocol == nil || *resp.Protocol != "") {
			t.Errorf("v%d: protocol %v on an error, want \"\"", v, resp.Protocol)
		}
	}
}

// TestJoinGroupCoordinatorErrors: the coordinator's absence, move, close
// and load are the response's code; the member keeps its id.
func TestJoinGroupCoordinatorErrors(t *testing.T) {
	for _, c := range groupErrorCodes {
		f, g := groupFixture(t)
		c.setup(t, f, g)
		resp := f.do(t, joinGroupRequest(9, "m1")).(*kmsg.JoinGroupResponse)
		wantCode(t, c.name, resp.ErrorCode, c.want)
		if resp.Generation != -1 || resp.MemberID != "m1" {
			t.Errorf("%s: generation %d member %q, want -1 and m1", c.name, resp.Generation, resp.MemberID)
		}
	}
}
