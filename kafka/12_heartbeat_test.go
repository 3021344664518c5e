package kafka

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

func heartbeatRequest(version int16) *kmsg.HeartbeatRequest {
	req := kmsg.NewPtrHeartbeatRequest()
	req.SetVersion(version)
	req.Group, req.Generation, req.MemberID, req.InstanceID = "g", 3, "m1", kmsg.StringPtr("i1")
	return req
}

// TestHeartbeat: the member's generation reaches the coordinator (its
// group.instance.id from v3), and its code is the answer at every
// version: REBALANCE_IN_PROGRESS tells the member to rejoin.
func TestHeartbeat(t *testing.T) {
	for v := int16(0); v <= 4; v++ {
		f, g := groupFixture(t)
		g.answer = func(any) (groups.Response, error) {
			return groups.Response{Heartbeat: &groups.HeartbeatResponse{ErrorCode: kerr.RebalanceInProgress.Code}}, nil
		}
		resp := onWire(t, f.do(t, heartbeatRequest(v)).(*kmsg.HeartbeatResponse))
		hr := lastGroupRequest[groups.HeartbeatRequest](t, g)
		if hr.Group != "g" || hr.Generation != 3 || hr.MemberID != "m1" || (hr.InstanceID == "i1") != (v >= 3) {
			t.Errorf("v%d: coordinator got %+v", v, hr)
		}
		wantCode(t, fmt.Sprintf("v%d", v), resp.ErrorCode, kerr.RebalanceInProgress)
	}
}

// TestHeartbeatCoordinatorErrors: NOT_COORDINATOR and friends make the
// member look the coordinator up again.
func TestHeartbeatCoordinatorErrors(t *testing.T) {
	for _, c := range groupErrorCodes {
		f, g := groupFixture(t)
		c.setup(t, f, g)
		wantCode(t, c.name, f.do(t, heartbeatRequest(4)).(*kmsg.HeartbeatResponse).ErrorCode, arrivingAnswer(c, true))
	}
}
