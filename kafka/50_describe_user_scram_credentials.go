package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeUserScramCredentials: v0 (KIP-554)
//
// Behavior:
// * Answers from this node's metadata image, as Kafka's brokers answer
//   from their metadata cache: for each user named, the mechanisms it
//   has a credential for (1 SCRAM-SHA-256, 2 SCRAM-SHA-512) and each one's
//   iterations; never a salt or key. Users null or empty: every user with
//   a credential, sorted by name.
// * A user without credentials is RESOURCE_NOT_FOUND, a user named twice
//   DUPLICATE_RESOURCE (one result for it), with Kafka's messages.
// * Authorization: DESCRIBE on the cluster, or CLUSTER_AUTHORIZATION_FAILED.

func (s *Server) handleDescribeUserScramCredentials(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if !s.authorized(req, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, ClusterResourceName) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return Respond(resp), nil
	}
	im := s.node().Metadata.Image()
	var users []string
	count := map[string]int{}
	if len(r.Users) == 0 {
		users = im.ScramUsers()
	} else {
		for _, u := range r.Users {
			if count[u.Name] == 0 {
				users = append(users, u.Name)
			}
			count[u.Name]++
		}
	}
	for _, user := range users {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = user
		var err error
		infos := im.ScramInfos(user)
		switch {
		case count[user] > 1:
			err = fmt.Errorf("%w: Cannot describe SCRAM credentials for the same user twice in a single request: %s", kerr.DuplicateResource, user)
		case len(infos) == 0:
			err = fmt.Errorf("%w: Attempt to describe a user credential that does not exist: %s", kerr.ResourceNotFound, user)
		default:
			for _, info := range infos {
				ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				ci.Mechanism, ci.Iterations = int8(info.Mechanism), info.Iterations
				res.CredentialInfos = append(res.CredentialInfos, ci)
			}
		}
		res.ErrorCode, res.ErrorMessage = errorCode(err), kafkaMessage(err)
		resp.Results = append(resp.Results, res)
	}
	return Respond(resp), nil
}
