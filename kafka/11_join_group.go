package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

// JoinGroup: v0-9
//
// Behavior:
// * The classic protocol of groups.Coordinator: the response waits for
//   the join phase to end (the Pending blocks this connection's later
//   responses meanwhile, as Kafka's does).
// * v0 has no rebalance timeout: the session timeout stands for it.
// * v4+: a new dynamic member gets MEMBER_ID_REQUIRED and its id first
//   (KIP-394).
// * v5+ static membership (group.instance.id), v8+ reason (logged only).
// * Authorization: READ on the group, or GROUP_AUTHORIZATION_FAILED and the
//   coordinator is not asked.
//
// Not implemented:
// * SkipAssignment (v9) is always false: the leader assigns.

func (s *Server) handleJoinGroup(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.JoinGroupRequest)
	jr := groups.JoinRequest{
		Group:                r.Group,
		MemberID:             r.MemberID,
		InstanceID:           derefString(r.InstanceID),
		RequireKnownMemberID: r.Version >= 4,
		ClientID:             req.Header.ClientID,
		ClientHost:           clientHost(req.Session),
		SessionTimeoutMs:     r.SessionTimeoutMillis,
		RebalanceTimeoutMs:   r.RebalanceTimeoutMillis,
		ProtocolType:         r.ProtocolType,
		Reason:               derefString(r.Reason),
	}
	if r.Version == 0 {
		jr.RebalanceTimeoutMs = -1
	}
	for _, p := range r.Protocols {
		jr.Protocols = append(jr.Protocols, groups.Protocol{Name: p.Name, Metadata: p.Metadata})
	}
	call := s.submitGroupAuthorized(req, kmsg.ACLOperationRead, r.Group, func(c GroupCore, id uint64, nowMs int64) {
		jr.RequestID = id
		c.Join(jr, nowMs)
	})
	version, memberID := r.Version, r.MemberID
	return func(ctx context.Context) (Response, error) {
		res, code, err := call.wait(ctx)
		if err != nil {
			return Response{}, err
		}
		jres := res.Join
		if jres == nil {
			jres = &groups.JoinResponse{ErrorCode: code, Generation: -1, MemberID: memberID}
		}
		return Response{Msg: joinGroupResponse(version, jres)}, nil
	}, nil
}

func joinGroupResponse(version int16, j *groups.JoinResponse) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = version
	resp.ErrorCode = j.ErrorCode
	resp.Generation = j.Generation
	resp.LeaderID = j.LeaderID
	resp.MemberID = j.MemberID
	protocol := j.Protocol
	resp.Protocol = &protocol
	if version >= 7 {
		// Nullable from v7: null when no protocol was chosen (an error).
		resp.Protocol = nullableString(j.Protocol)
		resp.ProtocolType = nullableString(j.ProtocolType)
	}
	for _, m := range j.Members {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID = m.MemberID
		rm.InstanceID = nullableString(m.InstanceID)
		rm.ProtocolMetadata = m.Metadata
		resp.Members = append(resp.Members, rm)
	}
	return resp
}
