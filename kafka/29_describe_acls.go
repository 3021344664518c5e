package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/security/acl"
)

// DescribeAcls: v1-3 (KIP-11, KIP-290)
//
// Behavior:
// * Needs DESCRIBE on the cluster, else a top-level CLUSTER_AUTHORIZATION_FAILED and no ACLs
//   (Kafka's rule).
// * Answers from this node's metadata image, as Kafka's brokers answer
//   from their authorizer's cache: the bindings the filter matches
//   (acl.Filter: ANY for every value, a null name, principal or host for
//   any, pattern type MATCH for the bindings that apply to the named
//   resource), grouped by resource pattern, sorted by resource type,
//   name and pattern type, and within one by principal, host, operation
//   and permission.
// * A filter with an UNKNOWN element (a code Kafka does not know, or 0)
//   is a top-level INVALID_REQUEST, as Kafka refuses it.
// * v0 is not served: Kafka 4 removed it (KIP-896); it knows only
//   LITERAL patterns.

func (s *Server) handleDescribeACLs(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.DescribeACLsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeACLsResponse)
	if !s.authorized(req, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, ClusterResourceName) {
		resp.ErrorCode, resp.ErrorMessage = errorCode(kerr.ClusterAuthorizationFailed), kafkaMessage(kerr.ClusterAuthorizationFailed)
		return Respond(resp), nil
	}
	f := acl.Filter{ResourceType: r.ResourceType, ResourceName: r.ResourceName, PatternType: r.ResourcePatternType,
		Principal: r.Principal, Host: r.Host, Operation: r.Operation, Permission: r.PermissionType}
	if err := f.Validate(); err != nil {
		err = fmt.Errorf("%w: %s", kerr.InvalidRequest, err.Error())
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), kafkaMessage(err)
		return Respond(resp), nil
	}
	var cur *kmsg.DescribeACLsResponseResource
	for _, b := range s.node().Metadata.Image().ACLs() {
		if !f.Matches(b) {
			continue
		}
		if cur == nil || cur.ResourceType != b.ResourceType || cur.ResourceName != b.ResourceName || cur.ResourcePatternType != b.PatternType {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
			resp.Resources = append(resp.Resources, res)
			cur = &resp.Resources[len(resp.Resources)-1]
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host, a.Operation, a.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
		cur.ACLs = append(cur.ACLs, a)
	}
	return Respond(resp), nil
}
