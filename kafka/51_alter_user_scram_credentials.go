package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/security/scram"
)

// AlterUserScramCredentials: v0 (KIP-554)
//
// Behavior:
// * Deletions and upsertions of users' SCRAM credentials, decided by the
//   controller as Kafka's ScramControlManager decides them
//   (cluster.DecideAlterScramCredentials): an upsertion carries the salt,
//   the iterations and the salted password a Kafka client computed; the
//   controller derives StoredKey and ServerKey and commits only those,
//   every accepted change of the request in one metadata entry.
// * Per user: UNSUPPORTED_SASL_MECHANISM for a mechanism other than 1
//   (SCRAM-SHA-256) and 2 (SCRAM-SHA-512); UNACCEPTABLE_CREDENTIAL for an
//   empty user name, iterations below 4096 or above 16384, an empty salt
//   or a salted password not of the hash's size; RESOURCE_NOT_FOUND for
//   the delete of a credential that does not exist; DUPLICATE_RESOURCE
//   for a user named twice in the request, deletions and upsertions
//   together. One result per user, in the order users first appear.
// * Forwarded to the acting controller from any node; the answer waits
//   until the other live nodes show the change, so a Describe on any
//   node sees it.
// * Authorization: ALTER on the cluster, or CLUSTER_AUTHORIZATION_FAILED for
//   every user.

func (s *Server) handleAlterUserScramCredentials(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	var areq cluster.AlterScramRequest
	var users []string
	seen := map[string]bool{}
	note := func(user string) {
		if !seen[user] {
			seen[user] = true
			users = append(users, user)
		}
	}
	for _, d := range r.Deletions {
		areq.Deletions = append(areq.Deletions, cluster.ScramDeletion{User: d.Name, Mechanism: scram.Mechanism(d.Mechanism)})
		note(d.Name)
	}
	for _, u := range r.Upsertions {
		areq.Upsertions = append(areq.Upsertions, cluster.ScramUpsertion{User: u.Name, Mechanism: scram.Mechanism(u.Mechanism),
			Iterations: u.Iterations, Salt: u.Salt, SaltedPassword: u.SaltedPassword})
		note(u.Name)
	}
	var results []cluster.ScramResult
	var err error
	if !s.authorized(req, kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, ClusterResourceName) {
		err = kerr.ClusterAuthorizationFailed
	} else {
		results, err = s.node().Controller.AlterScramCredentials(req.Session.Context(), areq)
	}
	if err != nil {
		// Refused as a whole (not the controller): every user gets it.
		results = nil
		for _, u := range users {
			results = append(results, cluster.ScramResult{User: u, Err: err})
		}
	}
	for _, res := range results {
		rr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		rr.User = res.User
		rr.ErrorCode, rr.ErrorMessage = errorCode(res.Err), kafkaMessage(res.Err)
		resp.Results = append(resp.Results, rr)
	}
	return Respond(resp), nil
}
