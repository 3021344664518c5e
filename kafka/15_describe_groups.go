package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

// DescribeGroups: v0-5
//
// Behavior:
// * Each group is asked of its coordinator; the answer follows earlier
//   records through the Ready, so it shows only durable state.
// * A group that does not exist is reported with no error and state
//   "Dead", as Kafka does below v6.
// * Member metadata and assignments are filled in a Stable group only.
// * Authorization: DESCRIBE on each group, or GROUP_AUTHORIZATION_FAILED;
//   its authorized operations (v3+) computed when asked.

func (s *Server) handleDescribeGroups(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.DescribeGroupsRequest)
	version := r.Version
	names := r.Groups
	az := s.authz(req)
	calls := make([]groupCall, len(names))
	for i, name := range names {
		calls[i] = s.submitGroupAuthorized(req, kmsg.ACLOperationDescribe, name, func(c GroupCore, id uint64, _ int64) {
			c.DescribeGroup(groups.DescribeGroupRequest{RequestID: id, Group: name})
		})
	}
	return func(ctx context.Context) (Response, error) {
		resp := kmsg.NewPtrDescribeGroupsResponse()
		resp.Version = version
		for i, call := range calls {
			res, code, err := call.wait(ctx)
			if err != nil {
				return Response{}, err
			}
			d := res.Describe
			if d == nil {
				d = &groups.DescribeGroupResponse{ErrorCode: code, Group: names[i], State: groups.Dead.String()}
			}
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group = names[i]
			rg.ErrorCode = d.ErrorCode
			if rg.ErrorCode == kerr.GroupIDNotFound.Code {
				rg.ErrorCode = 0
			}
			rg.State, rg.ProtocolType, rg.Protocol = d.State, d.ProtocolType, d.Protocol
			if r.IncludeAuthorizedOperations && version >= 3 && rg.ErrorCode != kerr.GroupAuthorizationFailed.Code {
				rg.AuthorizedOperations = az.operations(kmsg.ACLResourceTypeGroup, names[i])
			}
			for _, m := range d.Members {
				rm := kmsg.NewDescribeGroupsResponseGroupMember()
				rm.MemberID, rm.InstanceID = m.MemberID, nullableString(m.InstanceID)
				rm.ClientID, rm.ClientHost = m.ClientID, m.ClientHost
				rm.ProtocolMetadata, rm.MemberAssignment = nonNilBytes(m.Metadata), nonNilBytes(m.Assignment)
				rg.Members = append(rg.Members, rm)
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return Response{Msg: resp}, nil
	}, nil
}

func nonNilBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
