package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

// Heartbeat: v0-4
//
// Behavior:
// * Keeps the member's session alive; REBALANCE_IN_PROGRESS tells it to
//   rejoin (groups.Coordinator.Heartbeat).
// * v3+: static members name their group.instance.id.
// * Authorization: READ on the group, or GROUP_AUTHORIZATION_FAILED.

func (s *Server) handleHeartbeat(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.HeartbeatRequest)
	hr := groups.HeartbeatRequest{
		Group:      r.Group,
		Generation: r.Generation,
		MemberID:   r.MemberID,
		InstanceID: derefString(r.InstanceID),
	}
	call := s.submitGroupAuthorized(req, kmsg.ACLOperationRead, r.Group, func(c GroupCore, id uint64, nowMs int64) {
		hr.RequestID = id
		c.Heartbeat(hr, nowMs)
	})
	version := r.Version
	return func(ctx context.Context) (Response, error) {
		res, code, err := call.wait(ctx)
		if err != nil {
			return Response{}, err
		}
		resp := kmsg.NewPtrHeartbeatResponse()
		resp.Version = version
		resp.ErrorCode = code
		if code == kerr.CoordinatorLoadInProgress.Code {
			// A coordinator arriving here (groups.go) answers as one
			// loading does, as Kafka's: the session is not known yet,
			// keep the member calm.
			resp.ErrorCode = 0
		}
		if res.Heartbeat != nil {
			resp.ErrorCode = res.Heartbeat.ErrorCode
		}
		return Response{Msg: resp}, nil
	}, nil
}
