package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/security/acl"
)

// CreateAcls: v1-3 (KIP-11, KIP-290)
//
// Behavior:
// * Needs ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED on every binding
//   (Kafka's rule).
// * Creates ACL bindings, decided by the controller as Kafka's AclApis
//   and AclControlManager decide them (cluster.DecideCreateACLs), every
//   created binding of the request in one metadata entry. A binding that
//   exists, or comes twice, succeeds without a second copy.
// * Per binding, in the request's order: INVALID_REQUEST with Kafka's
//   message for a binding that may not be stored: an UNKNOWN or ANY
//   resource type, pattern type other than LITERAL and PREFIXED, an ANY
//   or UNKNOWN operation or permission, an empty resource name, a CLUSTER
//   resource not named kafka-cluster, a principal not "Type:name", a host
//   neither "*" nor an IP address (Kafka stores any host string; one that
//   is not an address never matches a client there).
// * Forwarded to the acting controller from any node; the answer waits
//   until the other live nodes show the change, so a DescribeAcls on any
//   node, and every node's authorizer, sees it.
// * v0 is not served: Kafka 4 removed it (KIP-896).

func (s *Server) handleCreateACLs(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.CreateACLsRequest)
	resp := r.ResponseKind().(*kmsg.CreateACLsResponse)
	bindings := make([]acl.Binding, 0, len(r.Creations))
	for _, c := range r.Creations {
		bindings = append(bindings, acl.Binding{ResourceType: c.ResourceType, ResourceName: c.ResourceName, PatternType: c.ResourcePatternType,
			Principal: c.Principal, Host: c.Host, Operation: c.Operation, Permission: c.PermissionType})
	}
	var results []error
	var err error
	if !s.authorized(req, kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, ClusterResourceName) {
		err = kerr.ClusterAuthorizationFailed
	} else {
		results, err = s.node().Controller.CreateACLs(req.Session.Context(), bindings)
	}
	if err != nil {
		// Refused as a whole (not the controller): every binding gets it.
		results = make([]error, len(bindings))
		for i := range results {
			results[i] = err
		}
	}
	for _, err := range results {
		rr := kmsg.NewCreateACLsResponseResult()
		rr.ErrorCode, rr.ErrorMessage = errorCode(err), kafkaMessage(err)
		resp.Results = append(resp.Results, rr)
	}
	return Respond(resp), nil
}
