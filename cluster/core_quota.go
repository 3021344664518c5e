package cluster

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The client quota rule: AlterClientQuotas (KIP-546).

// QuotaAlteration is one entity's changes in an AlterClientQuotas
// request, its entity as the request names it.
type QuotaAlteration struct {
	Entity []QuotaEntityData
	Ops    []QuotaOp
}

// QuotaOp sets Key to Value, or removes it (Remove).
type QuotaOp struct {
	Key    string
	Value  float64
	Remove bool
}

// QuotaResult is one entity's outcome, the entity as the request named
// it.
type QuotaResult struct {
	Entity []QuotaEntityData
	Err    error
}

// DecideAlterClientQuotas decides an AlterClientQuotas request as
// Kafka's ClientQuotaControlManager does, each entity on its own: an
// entity that is empty, names a type twice, a type other than user and
// client-id, or an empty name, a key named twice, an unknown key, a
// byte rate that is not a whole number, or a value not positive, is
// INVALID_REQUEST with Kafka's message, and none of that entity's
// changes is made. An entity named twice in the request is
// INVALID_REQUEST both times and changes nothing (Kafka answers the
// second with the error but keeps the first's changes: an answer wren
// will not give for a change it made). Setting a key to its value, and
// removing a key not set, write nothing. The changes of every other
// entity are one entry, committed together.
func DecideAlterClientQuotas(im *Image, _ RuleConfig, alts []QuotaAlteration) Result[[]QuotaResult] {
	type item struct {
		res  QuotaResult
		recs []Record
	}
	items := make([]*item, len(alts))
	byEntity := map[string]*item{}
	for i, alt := range alts {
		it := &item{res: QuotaResult{Entity: alt.Entity}}
		items[i] = it
		key := entityKey(alt.Entity)
		if first := byEntity[key]; first != nil {
			dup := fmt.Errorf("%w: Ignoring duplicate entity %s", kerr.InvalidRequest, key)
			first.res.Err, first.recs = dup, nil
			it.res.Err = dup
			continue
		}
		byEntity[key] = it
		it.recs, it.res.Err = decideQuotaEntity(im, alt)
	}
	var r Result[[]QuotaResult]
	for _, it := range items {
		r.Response = append(r.Response, it.res)
		if it.res.Err == nil {
			r.Records = append(r.Records, it.recs...)
		}
	}
	return r
}

func decideQuotaEntity(im *Image, alt QuotaAlteration) ([]Record, error) {
	e, err := ParseQuotaEntity(alt.Entity)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", kerr.InvalidRequest, err.Error())
	}
	seen := map[string]bool{}
	var recs []Record
	for _, op := range alt.Ops {
		if seen[op.Key] {
			return nil, fmt.Errorf("%w: Duplicate quota key %s not updating quota for this entity %s", kerr.InvalidRequest, op.Key, e)
		}
		seen[op.Key] = true
		cur, has := im.ClientQuota(e, op.Key)
		if op.Remove {
			if has {
				recs = append(recs, Record{Kind: KindClientQuota, ClientQuota: &ClientQuotaRecord{Entity: e.Data(), Key: op.Key, Remove: true}})
			}
			continue
		}
		if err := CheckQuotaValue(op.Key, op.Value); err != nil {
			return nil, fmt.Errorf("%w: %s", kerr.InvalidRequest, err.Error())
		}
		if !has || cur != op.Value {
			recs = append(recs, Record{Kind: KindClientQuota, ClientQuota: &ClientQuotaRecord{Entity: e.Data(), Key: op.Key, Value: op.Value}})
		}
	}
	return recs, nil
}

// entityKey names an entity as the request wrote it, parts sorted, for
// finding one named twice.
func entityKey(parts []QuotaEntityData) string {
	var s []string
	for _, p := range parts {
		name := "<default>"
		if p.Name != nil {
			name = "'" + *p.Name + "'"
		}
		s = append(s, p.Type+"="+name)
	}
	slices.Sort(s)
	return "{" + strings.Join(s, ", ") + "}"
}
