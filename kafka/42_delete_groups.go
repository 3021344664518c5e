package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

// DeleteGroups: v0-2
//
// Behavior:
// * Each group is deleted by its coordinator: only an Empty (or Dead)
//   group, else NON_EMPTY_GROUP; its offsets and metadata get
//   tombstones, and the answer waits for them to be durable.
// * Authorization: DELETE on each group, or GROUP_AUTHORIZATION_FAILED.

func (s *Server) handleDeleteGroups(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.DeleteGroupsRequest)
	version := r.Version
	names := r.Groups
	calls := make([]groupCall, len(names))
	for i, name := range names {
		calls[i] = s.submitGroupAuthorized(req, kmsg.ACLOperationDelete, name, func(c GroupCore, id uint64, nowMs int64) {
			c.DeleteGroup(groups.DeleteGroupRequest{RequestID: id, Group: name}, nowMs)
		})
	}
	return func(ctx context.Context) (Response, error) {
		resp := kmsg.NewPtrDeleteGroupsResponse()
		resp.Version = version
		for i, call := range calls {
			res, code, err := call.wait(ctx)
			if err != nil {
				return Response{}, err
			}
			if res.Delete != nil {
				code = res.Delete.ErrorCode
			}
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = names[i], code
			resp.Groups = append(resp.Groups, rg)
		}
		return Response{Msg: resp}, nil
	}, nil
}
