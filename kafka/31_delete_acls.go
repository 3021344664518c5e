package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/security/acl"
)

// DeleteAcls: v1-3 (KIP-11, KIP-290)
//
// Behavior:
// * Needs ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED on every filter
//   (Kafka's rule).
// * Deletes the ACL bindings each filter matches (acl.Filter, as
//   DescribeAcls), decided by the controller as Kafka's AclControlManager
//   decides it (cluster.DecideDeleteACLs): one result per filter, in the
//   request's order, listing the bindings it deleted in DescribeAcls'
//   order; a binding two filters match is listed by both. Every deletion
//   of the request is one metadata entry.
// * A filter with an UNKNOWN element is INVALID_REQUEST (for that filter;
//   the others still delete).
// * Forwarded to the acting controller from any node; the answer waits
//   until the other live nodes show the change.
// * v0 is not served: Kafka 4 removed it (KIP-896).

func (s *Server) handleDeleteACLs(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.DeleteACLsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteACLsResponse)
	filters := make([]acl.Filter, 0, len(r.Filters))
	for _, f := range r.Filters {
		filters = append(filters, acl.Filter{ResourceType: f.ResourceType, ResourceName: f.ResourceName, PatternType: f.ResourcePatternType,
			Principal: f.Principal, Host: f.Host, Operation: f.Operation, Permission: f.PermissionType})
	}
	var results []cluster.DeleteACLsResult
	var err error
	if !s.authorized(req, kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, ClusterResourceName) {
		err = kerr.ClusterAuthorizationFailed
	} else {
		results, err = s.node().Controller.DeleteACLs(req.Session.Context(), filters)
	}
	if err != nil {
		// Refused as a whole (not the controller): every filter gets it.
		results = make([]cluster.DeleteACLsResult, len(filters))
		for i := range results {
			results[i].Err = err
		}
	}
	for _, res := range results {
		rr := kmsg.NewDeleteACLsResponseResult()
		rr.ErrorCode, rr.ErrorMessage = errorCode(res.Err), kafkaMessage(res.Err)
		for _, b := range res.Deleted {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
			m.Principal, m.Host, m.Operation, m.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
			rr.MatchingACLs = append(rr.MatchingACLs, m)
		}
		resp.Results = append(resp.Results, rr)
	}
	return Respond(resp), nil
}
