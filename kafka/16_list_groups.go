package kafka

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListGroups: v0-5
//
// Behavior:
// * Lists the groups of every coordinator this node runs, sorted by id
//   within each __consumer_offsets partition.
// * v4+: a state filter (case-insensitive, as Kafka); empty means all.
// * v5+: a type filter (classic, consumer; case-insensitive) and each
//   group's type.
// * Each node lists the groups of the coordinators it runs, as in Kafka:
//   a client lists a cluster's groups by asking every broker.
// * COORDINATOR_LOAD_IN_PROGRESS while a coordinator loads, with the
//   groups of the others (Kafka drops those too; clients retry either
//   way). That includes a partition this node's image names it the leader
//   of before its replica took the leadership (groups.go).
// * COORDINATOR_NOT_AVAILABLE when this node runs no coordinator, as
//   Kafka's while it is not active.
// * Unlike the other group reads, the list may show groups whose records
//   are not durable yet (groups.Coordinator.ListGroups).
// * Authorization: every group with DESCRIBE on the cluster, else only the
//   groups the principal may DESCRIBE, as Kafka.

func (s *Server) handleListGroups(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.ListGroupsRequest)
	version := r.Version
	filter := r.StatesFilter
	types := r.TypesFilter
	d := s.node().Groups
	az := s.authz(req)
	// As Kafka: every group with DESCRIBE on the cluster, else those the
	// principal may DESCRIBE, without a log line for the others.
	everyGroup := az.check(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, ClusterResourceName)
	return func(ctx context.Context) (Response, error) {
		resp := kmsg.NewPtrListGroupsResponse()
		resp.Version = version
		if d == nil {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return Response{Msg: resp}, nil
		}
		gs, code, err := d.ListGroups(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return Response{}, err
			}
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return Response{Msg: resp}, nil
		}
		if code == 0 && s.arrivingOffsetsPartitions() {
			code = kerr.CoordinatorLoadInProgress.Code
		}
		resp.ErrorCode = code
		var visible []bool
		if !everyGroup {
			names := make([]string, len(gs))
			for i, g := range gs {
				names[i] = g.Group
			}
			visible = az.checkAll(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, names)
		}
		for i, g := range gs {
			state := g.State
			if len(filter) > 0 && !containsFold(filter, state) || len(types) > 0 && !containsFold(types, g.Type) {
				continue
			}
			if !everyGroup && !visible[i] {
				continue
			}
			rg := kmsg.NewListGroupsResponseGroup()
			rg.Group, rg.ProtocolType, rg.GroupState, rg.GroupType = g.Group, g.ProtocolType, state, g.Type
			resp.Groups = append(resp.Groups, rg)
		}
		return Response{Msg: resp}, nil
	}, nil
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
