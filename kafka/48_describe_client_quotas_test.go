package kafka

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
)

// quotaController makes f's controller decide with the real rule on the
// fixture's image and commit into it (nothing with validate_only).
func quotaController(t *testing.T, f *seamFixture) {
	f.controller.quotas = func(alts []cluster.QuotaAlteration, validateOnly bool) ([]cluster.QuotaResult, error) {
		r := cluster.DecideAlterClientQuotas(f.metadata.image, cluster.RuleConfig{}, alts)
		if !validateOnly {
			f.addRecords(t, r.Records...)
		}
		return r.Response, r.Err
	}
}

// quotaEntry is an AlterClientQuotas entry: entity parts as "type=name"
// ("type=" for the default), ops as key=value (key= removes).
func quotaEntry(entity string, ops ...string) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	for _, part := range strings.Split(entity, ",") {
		typ, name, _ := strings.Cut(part, "=")
		ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
		ent.Type = typ
		if name != "" {
			ent.Name = &name
		}
		e.Entity = append(e.Entity, ent)
	}
	for _, o := range ops {
		k, v, _ := strings.Cut(o, "=")
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key = k
		if v == "" {
			op.Remove = true
		} else {
			fmt.Sscan(v, &op.Value)
		}
		e.Ops = append(e.Ops, op)
	}
	return e
}

func alterQuotas(t *testing.T, f *seamFixture, validateOnly bool, entries ...kmsg.AlterClientQuotasRequestEntry) *kmsg.AlterClientQuotasResponse {
	t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Version = 1
	req.Entries, req.ValidateOnly = entries, validateOnly
	return onWire(t, f.do(t, req).(*kmsg.AlterClientQuotasResponse))
}

// describeQuotas describes with components "type:match" (match "=name"
// exact, "default", "any") and prints the entries as
// "entity{key=value ...}" lines, or the error.
func describeQuotas(t *testing.T, f *seamFixture, strict bool, components ...string) string {
	t.Helper()
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.Version = 1
	req.Strict = strict
	for _, c := range components {
		typ, m, _ := strings.Cut(c, ":")
		comp := kmsg.NewDescribeClientQuotasRequestComponent()
		comp.EntityType = typ
		switch {
		case strings.HasPrefix(m, "="):
			name := m[1:]
			comp.MatchType, comp.Match = quotaMatchExact, &name
		case m == "default":
			comp.MatchType = quotaMatchDefault
		case m == "any":
			comp.MatchType = quotaMatchAny
		case m == "bad-exact":
			comp.MatchType = quotaMatchExact
		default:
			comp.MatchType = 7
		}
		req.Components = append(req.Components, comp)
	}
	resp := onWire(t, f.do(t, req).(*kmsg.DescribeClientQuotasResponse))
	if resp.ErrorCode != 0 {
		return kerr.ErrorForCode(resp.ErrorCode).Error() + ": " + *resp.ErrorMessage
	}
	var lines []string
	for _, e := range resp.Entries {
		var ent []string
		for _, p := range e.Entity {
			name := "<default>"
			if p.Name != nil {
				name = *p.Name
			}
			ent = append(ent, p.Type+"="+name)
		}
		var vals []string
		for _, v := range e.Values {
			vals = append(vals, fmt.Sprintf("%s=%v", v.Key, v.Value))
		}
		lines = append(lines, strings.Join(ent, ",")+"{"+strings.Join(vals, " ")+"}")
	}
	return strings.Join(lines, "\n")
}

// TestAlterAndDescribeClientQuotas: changes reach the image through the
// rule, each entity with its result; Describe's filters match exact
// names, defaults and any name, strictly or not, as Kafka's
// ClientQuotasImage does.
func TestAlterAndDescribeClientQuotas(t *testing.T) {
	f := newSeamFixture(t)
	quotaController(t, f)
	resp := alterQuotas(t, f, false,
		quotaEntry("user=alice", "producer_byte_rate=1000"),
		quotaEntry("user=alice,client-id=c1", "consumer_byte_rate=2000"),
		quotaEntry("user=,client-id=", "request_percentage=25.5"),
		quotaEntry("client-id=c1", "producer_byte_rate=300"),
		quotaEntry("client-id=", "producer_byte_rate=400"),
		quotaEntry("user=bob", "producer_byte_rate=0"),
		quotaEntry("ip=1.2.3.4", "producer_byte_rate=1"))
	want := []*kerr.Error{nil, nil, nil, nil, nil, kerr.InvalidRequest, kerr.InvalidRequest}
	if len(resp.Entries) != len(want) {
		t.Fatalf("%d entries, want %d", len(resp.Entries), len(want))
	}
	for i, e := range resp.Entries {
		wantCode(t, fmt.Sprint("entry ", i), e.ErrorCode, want[i])
	}
	if e := resp.Entries[5].Entity[0]; e.Type != "user" || *e.Name != "bob" {
		t.Errorf("the refused entity is answered as %+v", e)
	}
	wantMessage(t, "ip", resp.Entries[6].ErrorMessage, "Unhandled client quota entity type: ip")

	for _, tc := range []struct {
		strict     bool
		components []string
		want       string
	}{
		{false, nil, "client-id=<default>{producer_byte_rate=400}\nclient-id=c1{producer_byte_rate=300}\n" +
			"user=<default>,client-id=<default>{request_percentage=25.5}\nuser=alice{producer_byte_rate=1000}\nuser=alice,client-id=c1{consumer_byte_rate=2000}"},
		{true, nil, ""},
		{false, []string{"user:=alice"}, "user=alice{producer_byte_rate=1000}\nuser=alice,client-id=c1{consumer_byte_rate=2000}"},
		{true, []string{"user:=alice"}, "user=alice{producer_byte_rate=1000}"},
		{false, []string{"user:default"}, "user=<default>,client-id=<default>{request_percentage=25.5}"},
		{true, []string{"client-id:any"}, "client-id=<default>{producer_byte_rate=400}\nclient-id=c1{producer_byte_rate=300}"},
		{false, []string{"client-id:=c1"}, "client-id=c1{producer_byte_rate=300}\nuser=alice,client-id=c1{consumer_byte_rate=2000}"},
		{true, []string{"user:any", "client-id:default"}, "user=<default>,client-id=<default>{request_percentage=25.5}"},
		{false, []string{"user:=nobody"}, ""},
		{false, []string{"user:any", "user:default"}, "INVALID_REQUEST: This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details.: Entity type user cannot appear more than once in the filter."},
		{false, []string{"user:bad-exact"}, "INVALID_REQUEST: This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details.: Request specified MATCH_TYPE_EXACT, but set match string to null."},
		{false, []string{":any"}, "INVALID_REQUEST: This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details.: Invalid empty entity type."},
		{false, []string{"ip:any"}, "UNSUPPORTED_VERSION: The version of API is not supported.: Unsupported entity type ip"},
		{false, []string{"user:?"}, "UNSUPPORTED_VERSION: The version of API is not supported.: Unknown match type 7"},
	} {
		if got := describeQuotas(t, f, tc.strict, tc.components...); got != tc.want {
			t.Errorf("describe strict=%v %v:\n got %s\nwant %s", tc.strict, tc.components, got, tc.want)
		}
	}

	// validate_only answers without changing; removal empties an entity.
	resp = alterQuotas(t, f, true, quotaEntry("user=carol", "producer_byte_rate=5"))
	wantCode(t, "validate only", resp.Entries[0].ErrorCode, nil)
	resp = alterQuotas(t, f, false, quotaEntry("user=alice", "producer_byte_rate="))
	wantCode(t, "remove", resp.Entries[0].ErrorCode, nil)
	if got := describeQuotas(t, f, false, "user:any"); got != "user=<default>,client-id=<default>{request_percentage=25.5}\nuser=alice,client-id=c1{consumer_byte_rate=2000}" {
		t.Errorf("after validate-only carol and removing alice's rate:\n%s", got)
	}
}

// TestAlterClientQuotasNotController: refused as a whole, every entity
// gets NOT_CONTROLLER.
func TestAlterClientQuotasNotController(t *testing.T) {
	f := newSeamFixture(t)
	f.controller.notController = true
	resp := alterQuotas(t, f, false, quotaEntry("user=a", "producer_byte_rate=1"), quotaEntry("client-id=b", "request_percentage=1"))
	if len(resp.Entries) != 2 {
		t.Fatalf("%+v", resp.Entries)
	}
	for _, e := range resp.Entries {
		wantCode(t, e.Entity[0].Type, e.ErrorCode, kerr.NotController)
	}
}
