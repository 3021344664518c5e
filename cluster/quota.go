package cluster

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
)

// Client quotas in the metadata (KIP-13, KIP-124, KIP-546): one record
// per entity and key (KindClientQuota, Kafka's QuotaRecord), the image's
// map of them, and the controller's AlterClientQuotas (the rule is
// core_quota.go). Every node enforces them from its own image (package
// kafka's quota.go).

// The entity types and quota keys wren knows, Kafka's names.
const (
	QuotaTypeUser     = "user"
	QuotaTypeClientID = "client-id"

	QuotaProducerByteRate  = "producer_byte_rate"
	QuotaConsumerByteRate  = "consumer_byte_rate"
	QuotaRequestPercentage = "request_percentage"
)

// QuotaKeys are the quota keys, sorted.
var QuotaKeys = []string{QuotaConsumerByteRate, QuotaProducerByteRate, QuotaRequestPercentage}

// QuotaName is one part of a quota entity: absent (Set false), the
// default of its type (Default, Name empty), or a name.
type QuotaName struct {
	Set     bool
	Default bool
	Name    string
}

// Named is a QuotaName of name; DefaultName is the default.
func Named(name string) QuotaName { return QuotaName{Set: true, Name: name} }

// DefaultName is the <default> part of an entity.
func DefaultName() QuotaName { return QuotaName{Set: true, Default: true} }

func (n QuotaName) String() string {
	if n.Default {
		return "<default>"
	}
	return n.Name
}

// QuotaEntity is whom a client quota applies to: a user, a client id,
// or a user's client id, each named or the default. Comparable: the
// image's key.
type QuotaEntity struct {
	User     QuotaName
	ClientID QuotaName
}

// String is the entity as Kafka's path writes it:
// /users/alice/clients/<default>.
func (e QuotaEntity) String() string {
	var b strings.Builder
	if e.User.Set {
		b.WriteString("/users/" + e.User.String())
	}
	if e.ClientID.Set {
		b.WriteString("/clients/" + e.ClientID.String())
	}
	return b.String()
}

// Data is the entity as records and the wire list it: user first.
func (e QuotaEntity) Data() []QuotaEntityData {
	var out []QuotaEntityData
	add := func(typ string, n QuotaName) {
		if !n.Set {
			return
		}
		d := QuotaEntityData{Type: typ}
		if !n.Default {
			name := n.Name
			d.Name = &name
		}
		out = append(out, d)
	}
	add(QuotaTypeUser, e.User)
	add(QuotaTypeClientID, e.ClientID)
	return out
}

// QuotaEntityData is one part of an entity as a record stores it and
// the wire carries it: its type and its name, nil for the default.
type QuotaEntityData struct {
	Type string  `json:"type"`
	Name *string `json:"name"`
}

// ClientQuotaRecord sets Key of Entity to Value, or removes it (Remove).
type ClientQuotaRecord struct {
	Entity []QuotaEntityData `json:"entity"`
	Key    string            `json:"key"`
	Value  float64           `json:"value,omitempty"`
	Remove bool              `json:"remove,omitempty"`
}

// entity parses r's entity.
func (r *ClientQuotaRecord) entity() (QuotaEntity, error) { return ParseQuotaEntity(r.Entity) }

// ParseQuotaEntity checks an entity as Kafka's ClientQuotaControlManager
// does and returns it: at least one part, each type once, user or
// client-id, a name never empty (nil is the default). The errors are
// Kafka's messages.
func ParseQuotaEntity(parts []QuotaEntityData) (QuotaEntity, error) {
	var e QuotaEntity
	if len(parts) == 0 {
		return e, fmt.Errorf("Invalid empty client quota entity")
	}
	for _, p := range parts {
		var n *QuotaName
		switch p.Type {
		case QuotaTypeUser:
			n = &e.User
		case QuotaTypeClientID:
			n = &e.ClientID
		default:
			return e, fmt.Errorf("Unhandled client quota entity type: %s", p.Type)
		}
		if n.Set {
			return e, fmt.Errorf("Invalid empty client quota entity, duplicate entity entry %s", p.Type)
		}
		switch {
		case p.Name == nil:
			*n = DefaultName()
		case *p.Name == "":
			return e, fmt.Errorf("Empty %s not supported", p.Type)
		default:
			*n = Named(*p.Name)
		}
	}
	return e, nil
}

// CheckQuotaValue checks a quota's value as Kafka's QuotaConfigs define
// them: the byte rates are whole numbers of bytes per second, the
// request percentage a number; all of them positive and finite.
func CheckQuotaValue(key string, v float64) error {
	if !slices.Contains(QuotaKeys, key) {
		return fmt.Errorf("Invalid configuration key %s", key)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return fmt.Errorf("Configuration %s must be a positive number, not %v", key, v)
	}
	if key != QuotaRequestPercentage {
		const epsilon = 1e-6
		if v > math.MaxInt64 || math.Abs(math.Trunc(v+epsilon)-v) > epsilon {
			return fmt.Errorf("Configuration %s must be a Long value", key)
		}
	}
	return nil
}

// applyClientQuota applies r to next (a copy of im). An invalid entity,
// key or value, and the removal of a quota not set, are broken
// invariants: the rule never writes them.
func (next *Image) applyClientQuota(im *Image, offset uint64, r *ClientQuotaRecord) error {
	e, err := r.entity()
	if err != nil {
		return fmt.Errorf("cluster: metadata record %d: client quota entity: %v", offset, err)
	}
	if !r.Remove {
		if err := CheckQuotaValue(r.Key, r.Value); err != nil {
			return fmt.Errorf("cluster: metadata record %d: client quota of %s: %v", offset, e, err)
		}
	}
	all := maps.Clone(im.quotas)
	if all == nil {
		all = map[QuotaEntity]map[string]float64{}
	}
	keys := maps.Clone(all[e])
	if keys == nil {
		keys = map[string]float64{}
	}
	if r.Remove {
		if _, had := keys[r.Key]; !had {
			return fmt.Errorf("cluster: metadata record %d removes the %s of %s, which is not set", offset, r.Key, e)
		}
		delete(keys, r.Key)
	} else {
		keys[r.Key] = r.Value
	}
	if len(keys) == 0 {
		delete(all, e)
	} else {
		all[e] = keys
	}
	next.quotas = all
	return nil
}

// HasClientQuotas reports whether any client quota is set: the
// enforcement's fast path.
func (im *Image) HasClientQuotas() bool { return len(im.quotas) > 0 }

// ClientQuota returns the value of key set for exactly e.
func (im *Image) ClientQuota(e QuotaEntity, key string) (float64, bool) {
	v, ok := im.quotas[e][key]
	return v, ok
}

// ClientQuotas returns the quotas set for exactly e, by key; the map is
// the image's: read it, never change it.
func (im *Image) ClientQuotas(e QuotaEntity) map[string]float64 { return im.quotas[e] }

// QuotaEntities lists the entities with quotas, sorted by their paths.
func (im *Image) QuotaEntities() []QuotaEntity {
	out := slices.Collect(maps.Keys(im.quotas))
	// sort.Slice, not slices.SortFunc: no sort code instantiated for
	// the entity type in the binary.
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// clientQuotaRecords are the image's quotas as the records that make
// them, sorted by entity and key: a snapshot's.
func (im *Image) clientQuotaRecords() []ClientQuotaRecord {
	var out []ClientQuotaRecord
	for _, e := range im.QuotaEntities() {
		for _, k := range slices.Sorted(maps.Keys(im.quotas[e])) {
			out = append(out, ClientQuotaRecord{Entity: e.Data(), Key: k, Value: im.quotas[e][k]})
		}
	}
	return out
}

// AlterClientQuotas sets and removes client quotas (KIP-546), every
// accepted change in one metadata entry (DecideAlterClientQuotas); with
// validateOnly nothing is committed. Each entity gets its result; when
// the entry does not commit, every entity that would have changed gets
// the commit's error.
func (c *Controller) AlterClientQuotas(ctx context.Context, alts []QuotaAlteration, validateOnly bool) ([]QuotaResult, error) {
	var results []QuotaResult
	err := c.change(ctx, func() {
		r := DecideAlterClientQuotas(c.Image(), c.rules(), alts)
		results = r.Response
		if validateOnly {
			return
		}
		if err := commitResult(c.commit, r); err != nil {
			for i := range results {
				if results[i].Err == nil {
					results[i].Err = err
				}
			}
		}
	})
	return results, err
}
