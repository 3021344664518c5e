package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

// SyncGroup: v0-5
//
// Behavior:
// * The leader's request carries every member's assignment; each
//   member's response waits for it (groups.Coordinator.Sync), and for the
//   group's metadata record to be durable.
// * v5+: protocol type and name are checked against the group's
//   (INCONSISTENT_GROUP_PROTOCOL) and echoed back.
// * Authorization: READ on the group, or GROUP_AUTHORIZATION_FAILED.

func (s *Server) handleSyncGroup(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.SyncGroupRequest)
	sr := groups.SyncRequest{
		Group:        r.Group,
		Generation:   r.Generation,
		MemberID:     r.MemberID,
		InstanceID:   derefString(r.InstanceID),
		ProtocolType: derefString(r.ProtocolType),
		Protocol:     derefString(r.Protocol),
	}
	for _, a := range r.GroupAssignment {
		sr.Assignments = append(sr.Assignments, groups.MemberAssignment{MemberID: a.MemberID, Assignment: a.MemberAssignment})
	}
	call := s.submitGroupAuthorized(req, kmsg.ACLOperationRead, r.Group, func(c GroupCore, id uint64, nowMs int64) {
		sr.RequestID = id
		c.Sync(sr, nowMs)
	})
	version := r.Version
	return func(ctx context.Context) (Response, error) {
		res, code, err := call.wait(ctx)
		if err != nil {
			return Response{}, err
		}
		sres := res.Sync
		if sres == nil {
			if code == kerr.CoordinatorLoadInProgress.Code {
				// A coordinator arriving here (groups.go) answers as
				// one loading does: the rebalance in flight is lost,
				// rejoin at once.
				code = kerr.RebalanceInProgress.Code
			}
			sres = &groups.SyncResponse{ErrorCode: code}
		}
		resp := kmsg.NewPtrSyncGroupResponse()
		resp.Version = version
		resp.ErrorCode = sres.ErrorCode
		resp.MemberAssignment = sres.Assignment
		if resp.MemberAssignment == nil {
			resp.MemberAssignment = []byte{}
		}
		if version >= 5 {
			resp.ProtocolType = nullableString(sres.ProtocolType)
			resp.Protocol = nullableString(sres.Protocol)
		}
		return Response{Msg: resp}, nil
	}, nil
}
