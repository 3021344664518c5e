package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
)

// AlterClientQuotas: v0-1 (KIP-546)
//
// Behavior:
// * Needs ALTER_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED
//   for every entity (Kafka's rule).
// * Sets and removes client quotas of entities (a user, a client id, or
//   a user's client id, each named or <default>), decided by the
//   controller as Kafka's ClientQuotaControlManager decides them
//   (cluster.DecideAlterClientQuotas): keys producer_byte_rate and
//   consumer_byte_rate (whole bytes per second) and request_percentage
//   (of one thread's time), every value positive. Every accepted change
//   of the request is one metadata entry; every node enforces it from its
//   image.
// * Per entity: INVALID_REQUEST with Kafka's message for an empty entity,
//   an entity type twice or other than user and client-id, an empty
//   name, an unknown key, a key twice, a fraction of a byte, a value not
//   positive, an entity named twice in the request; that entity changes
//   nothing, the others do. One result per entity, in request order.
// * validate_only decides and answers without committing.
// * Forwarded to the acting controller from any node; the answer waits
//   until the other live nodes show the change, so a Describe on any
//   node sees it.
//
// Not implemented:
// * The ip entity type and connection_creation_rate (KIP-612).

func (s *Server) handleAlterClientQuotas(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.AlterClientQuotasRequest)
	resp := r.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	alts := make([]cluster.QuotaAlteration, 0, len(r.Entries))
	for _, e := range r.Entries {
		var alt cluster.QuotaAlteration
		for _, ent := range e.Entity {
			alt.Entity = append(alt.Entity, cluster.QuotaEntityData{Type: ent.Type, Name: ent.Name})
		}
		for _, op := range e.Ops {
			alt.Ops = append(alt.Ops, cluster.QuotaOp{Key: op.Key, Value: op.Value, Remove: op.Remove})
		}
		alts = append(alts, alt)
	}
	var results []cluster.QuotaResult
	var err error
	if !s.authorized(req, kmsg.ACLOperationAlterConfigs, kmsg.ACLResourceTypeCluster, ClusterResourceName) {
		err = kerr.ClusterAuthorizationFailed
	} else {
		results, err = s.node().Controller.AlterClientQuotas(req.Session.Context(), alts, r.ValidateOnly)
	}
	if err != nil {
		// Refused as a whole (not the controller): every entity gets it.
		results = make([]cluster.QuotaResult, len(alts))
		for i, alt := range alts {
			results[i] = cluster.QuotaResult{Entity: alt.Entity, Err: err}
		}
	}
	for _, res := range results {
		entry := kmsg.NewAlterClientQuotasResponseEntry()
		entry.ErrorCode, entry.ErrorMessage = errorCode(res.Err), kafkaMessage(res.Err)
		for _, d := range res.Entity {
			ent := kmsg.NewAlterClientQuotasResponseEntryEntity()
			ent.Type, ent.Name = d.Type, d.Name
			entry.Entity = append(entry.Entity, ent)
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return Respond(resp), nil
}
