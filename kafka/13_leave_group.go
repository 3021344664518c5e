package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

// LeaveGroup: v0-5
//
// Behavior:
// * v0-2: one member; its error is the top-level error.
// * v3+: a batch of members (KIP-345), each with its own error; an
//   administrator may name a static member by group.instance.id alone.
// * v5+: a reason per member (informational).
// * Authorization: READ on the group, or GROUP_AUTHORIZATION_FAILED.

func (s *Server) handleLeaveGroup(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.LeaveGroupRequest)
	lr := groups.LeaveRequest{Group: r.Group}
	if r.Version < 3 {
		lr.Members = []groups.LeavingMember{{MemberID: r.MemberID}}
	}
	for _, m := range r.Members {
		lr.Members = append(lr.Members, groups.LeavingMember{
			MemberID: m.MemberID, InstanceID: derefString(m.InstanceID), Reason: derefString(m.Reason),
		})
	}
	call := s.submitGroupAuthorized(req, kmsg.ACLOperationRead, r.Group, func(c GroupCore, id uint64, nowMs int64) {
		lr.RequestID = id
		c.Leave(lr, nowMs)
	})
	version := r.Version
	return func(ctx context.Context) (Response, error) {
		res, code, err := call.wait(ctx)
		if err != nil {
			return Response{}, err
		}
		lres := res.Leave
		if lres == nil {
			lres = &groups.LeaveResponse{ErrorCode: code}
		}
		resp := kmsg.NewPtrLeaveGroupResponse()
		resp.Version = version
		resp.ErrorCode = lres.ErrorCode
		if version < 3 {
			if resp.ErrorCode == 0 && len(lres.Members) == 1 {
				resp.ErrorCode = lres.Members[0].ErrorCode
			}
			return Response{Msg: resp}, nil
		}
		for _, m := range lres.Members {
			rm := kmsg.NewLeaveGroupResponseMember()
			rm.MemberID = m.MemberID
			rm.InstanceID = nullableString(m.InstanceID)
			rm.ErrorCode = m.ErrorCode
			resp.Members = append(resp.Members, rm)
		}
		return Response{Msg: resp}, nil
	}, nil
}
