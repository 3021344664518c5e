package kafka

import (
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
)

// DescribeClientQuotas: v0-1 (KIP-546)
//
// Behavior:
// * Needs DESCRIBE_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED
//   and no entries (Kafka's rule).
// * Answers from this node's metadata image, as Kafka's brokers answer
//   from their ClientQuotasImage: every entity with quotas that the
//   filter matches, with its quotas (producer_byte_rate,
//   consumer_byte_rate, request_percentage), entities sorted by their
//   path and quotas by key.
// * The filter's components, one per entity type: match type 0 (exact)
//   matches that name, 1 (default) the type's <default>, 2 (any) any
//   entity with the type, named or default. An entity must have every
//   component's type; with strict it must have no other type.
// * A filter of an empty or unknown type, a type twice, an exact match
//   without a name, a default or any match with one, or an unknown
//   match type, is answered with a top-level error and no entries:
//   INVALID_REQUEST with Kafka's messages, UNSUPPORTED_VERSION for an
//   unknown type or match type (Kafka's codes).
//
// Not implemented:
// * The ip entity type (KIP-612's connection_creation_rate): a filter of
//   it is UNSUPPORTED_VERSION.

// Kafka's filter match types.
const (
	quotaMatchExact   = 0
	quotaMatchDefault = 1
	quotaMatchAny     = 2
)

func (s *Server) handleDescribeClientQuotas(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.DescribeClientQuotasRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	if !s.authorized(req, kmsg.ACLOperationDescribeConfigs, kmsg.ACLResourceTypeCluster, ClusterResourceName) {
		resp.ErrorCode, resp.ErrorMessage = errorCode(kerr.ClusterAuthorizationFailed), kafkaMessage(kerr.ClusterAuthorizationFailed)
		return Respond(resp), nil
	}
	im := s.node().Metadata.Image()
	filter, err := parseQuotaFilter(r.Components)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), kafkaMessage(err)
		return Respond(resp), nil
	}
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	for _, e := range im.QuotaEntities() {
		if !filter.matches(e, r.Strict) {
			continue
		}
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, d := range e.Data() {
			ent := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ent.Type, ent.Name = d.Type, d.Name
			entry.Entity = append(entry.Entity, ent)
		}
		values := im.ClientQuotas(e)
		for _, k := range slices.Sorted(maps.Keys(values)) {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, values[k]
			entry.Values = append(entry.Values, v)
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return Respond(resp), nil
}

// quotaFilter is a parsed DescribeClientQuotas filter: per type, the
// name it must have (exact or default), or only that it is there (any).
type quotaFilter struct {
	parts map[string]quotaFilterPart
}

type quotaFilterPart struct {
	any  bool
	name cluster.QuotaName
}

func parseQuotaFilter(components []kmsg.DescribeClientQuotasRequestComponent) (quotaFilter, error) {
	f := quotaFilter{parts: map[string]quotaFilterPart{}}
	for _, c := range components {
		switch {
		case c.EntityType == "":
			return f, fmt.Errorf("%w: Invalid empty entity type.", kerr.InvalidRequest)
		case f.parts[c.EntityType] != (quotaFilterPart{}):
			return f, fmt.Errorf("%w: Entity type %s cannot appear more than once in the filter.", kerr.InvalidRequest, c.EntityType)
		case c.EntityType != cluster.QuotaTypeUser && c.EntityType != cluster.QuotaTypeClientID:
			return f, fmt.Errorf("%w: Unsupported entity type %s", kerr.UnsupportedVersion, c.EntityType)
		}
		var p quotaFilterPart
		switch c.MatchType {
		case quotaMatchExact:
			if c.Match == nil {
				return f, fmt.Errorf("%w: Request specified MATCH_TYPE_EXACT, but set match string to null.", kerr.InvalidRequest)
			}
			p.name = cluster.Named(*c.Match)
		case quotaMatchDefault:
			if c.Match != nil {
				return f, fmt.Errorf("%w: Request specified MATCH_TYPE_DEFAULT, but also specified a match string.", kerr.InvalidRequest)
			}
			p.name = cluster.DefaultName()
		case quotaMatchAny:
			if c.Match != nil {
				return f, fmt.Errorf("%w: Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.", kerr.InvalidRequest)
			}
			p.any = true
		default:
			return f, fmt.Errorf("%w: Unknown match type %d", kerr.UnsupportedVersion, c.MatchType)
		}
		f.parts[c.EntityType] = p
	}
	return f, nil
}

// matches reports whether e passes the filter.
func (f quotaFilter) matches(e cluster.QuotaEntity, strict bool) bool {
	have := map[string]cluster.QuotaName{}
	if e.User.Set {
		have[cluster.QuotaTypeUser] = e.User
	}
	if e.ClientID.Set {
		have[cluster.QuotaTypeClientID] = e.ClientID
	}
	if strict && len(have) != len(f.parts) {
		return false
	}
	for typ, p := range f.parts {
		n, ok := have[typ]
		if !ok || (!p.any && n != p.name) {
			return false
		}
	}
	return true
}
