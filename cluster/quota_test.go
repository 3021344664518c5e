package cluster

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func strp(s string) *string { return &s }

// applyQuotaRule runs the rule on im and applies its records through
// their JSON, as a node applies a committed entry.
func applyQuotaRule(t *testing.T, im *Image, alts ...QuotaAlteration) (*Image, []QuotaResult) {
	t.Helper()
	r := DecideAlterClientQuotas(im, RuleConfig{}, alts)
	if len(r.Records) == 0 {
		return im, r.Response
	}
	b, err := json.Marshal(r.Records)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := decodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	next, err := applyRecords(im, im.Offset+1, recs)
	if err != nil {
		t.Fatal(err)
	}
	return next, r.Response
}

func TestClientQuotasSetAndRemove(t *testing.T) {
	alice := []QuotaEntityData{{Type: QuotaTypeUser, Name: strp("alice")}, {Type: QuotaTypeClientID}}
	im, res := applyQuotaRule(t, emptyImage(),
		QuotaAlteration{Entity: alice, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 1024}, {Key: QuotaRequestPercentage, Value: 50.5}}},
		QuotaAlteration{Entity: []QuotaEntityData{{Type: QuotaTypeClientID, Name: strp("c1")}}, Ops: []QuotaOp{{Key: QuotaConsumerByteRate, Value: 2048}}},
	)
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("%+v", r)
		}
	}
	e := QuotaEntity{User: Named("alice"), ClientID: DefaultName()}
	if v, ok := im.ClientQuota(e, QuotaProducerByteRate); !ok || v != 1024 {
		t.Fatalf("producer_byte_rate of %s: %v %v", e, v, ok)
	}
	if got := len(im.QuotaEntities()); got != 2 || !im.HasClientQuotas() {
		t.Fatalf("%d entities", got)
	}
	if s := e.String(); s != "/users/alice/clients/<default>" {
		t.Fatalf("entity path %q", s)
	}

	// The same value writes nothing; removing what is not set neither.
	r := DecideAlterClientQuotas(im, RuleConfig{}, []QuotaAlteration{{Entity: alice, Ops: []QuotaOp{
		{Key: QuotaProducerByteRate, Value: 1024}, {Key: QuotaConsumerByteRate, Remove: true}}}})
	if len(r.Records) != 0 || r.Response[0].Err != nil {
		t.Fatalf("a no-op: %+v", r)
	}

	im, _ = applyQuotaRule(t, im, QuotaAlteration{Entity: alice, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Remove: true}, {Key: QuotaRequestPercentage, Remove: true}}})
	if im.ClientQuotas(e) != nil || len(im.QuotaEntities()) != 1 {
		t.Fatalf("removed quotas remain: %v", im.QuotaEntities())
	}
	// Removing the same again is a broken invariant in a record.
	if _, err := im.apply(im.Offset+1, Record{Kind: KindClientQuota, ClientQuota: &ClientQuotaRecord{Entity: alice, Key: QuotaProducerByteRate, Remove: true}}); err == nil {
		t.Fatal("the removal of a quota not set applied")
	}
}

func TestAlterClientQuotasRefusals(t *testing.T) {
	user := func(n string) []QuotaEntityData { return []QuotaEntityData{{Type: QuotaTypeUser, Name: strp(n)}} }
	for _, tc := range []struct {
		name string
		alt  QuotaAlteration
		msg  string
	}{
		{"empty entity", QuotaAlteration{Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 1}}}, "Invalid empty client quota entity"},
		{"unknown type", QuotaAlteration{Entity: []QuotaEntityData{{Type: "ip", Name: strp("1.2.3.4")}}, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 1}}},
			"Unhandled client quota entity type: ip"},
		{"type twice", QuotaAlteration{Entity: append(user("a"), QuotaEntityData{Type: QuotaTypeUser}), Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 1}}},
			"duplicate entity entry user"},
		{"empty name", QuotaAlteration{Entity: user(""), Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 1}}}, "Empty user not supported"},
		{"unknown key", QuotaAlteration{Entity: user("a"), Ops: []QuotaOp{{Key: "connection_creation_rate", Value: 1}}}, "Invalid configuration key connection_creation_rate"},
		{"key twice", QuotaAlteration{Entity: user("a"), Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 1}, {Key: QuotaProducerByteRate, Value: 2}}}, "Duplicate quota key"},
		{"fraction of a byte", QuotaAlteration{Entity: user("a"), Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 1.5}}}, "must be a Long value"},
		{"zero rate", QuotaAlteration{Entity: user("a"), Ops: []QuotaOp{{Key: QuotaConsumerByteRate, Value: 0}}}, "must be a positive number"},
		{"negative percentage", QuotaAlteration{Entity: user("a"), Ops: []QuotaOp{{Key: QuotaRequestPercentage, Value: -1}}}, "must be a positive number"},
	} {
		// A valid entity beside the refused one still changes.
		ok := QuotaAlteration{Entity: user("ok"), Ops: []QuotaOp{{Key: QuotaRequestPercentage, Value: 0.5}}}
		r := DecideAlterClientQuotas(emptyImage(), RuleConfig{}, []QuotaAlteration{tc.alt, ok})
		if err := r.Response[0].Err; !errors.Is(err, kerr.InvalidRequest) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want INVALID_REQUEST: %s", tc.name, err, tc.msg)
		}
		if r.Response[1].Err != nil || len(r.Records) != 1 || r.Records[0].ClientQuota.Entity[0].Name == nil || *r.Records[0].ClientQuota.Entity[0].Name != "ok" {
			t.Errorf("%s: the valid entity: %+v, records %+v", tc.name, r.Response[1], r.Records)
		}
	}
	// An entity named twice changes nothing, and both get the error.
	r := DecideAlterClientQuotas(emptyImage(), RuleConfig{}, []QuotaAlteration{
		{Entity: user("a"), Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 1}}},
		{Entity: user("a"), Ops: []QuotaOp{{Key: QuotaConsumerByteRate, Value: 1}}}})
	if len(r.Records) != 0 || !errors.Is(r.Response[0].Err, kerr.InvalidRequest) || !errors.Is(r.Response[1].Err, kerr.InvalidRequest) {
		t.Fatalf("an entity twice: %+v", r)
	}
}
