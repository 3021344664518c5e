package kafka

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAPITable checks the production table: it builds, its ApiVersions
// list is sorted and matches the rows, and it keeps the minimums that
// librdkafka 2.0 needs to enable compression and the v2 record format.
func TestAPITable(t *testing.T) {
	x := buildAPIIndex(apiTable[:])
	if len(x.versions) != len(apiTable) {
		t.Fatalf("%d advertised keys for %d rows", len(x.versions), len(apiTable))
	}
	for i, v := range x.versions {
		if i > 0 && x.versions[i-1].ApiKey >= v.ApiKey {
			t.Fatalf("ApiVersions list not sorted at %d: %v", i, x.versions)
		}
		e := x.lookup(v.ApiKey)
		if e == nil || e.Min != v.MinVersion || e.Max != v.MaxVersion {
			t.Fatalf("advertised %+v does not match row %+v", v, e)
		}
	}
	if e := x.lookup(int16(kmsg.Produce)); e != nil && (e.Min != 0 || e.MinServed != 3 || e.Precheck == nil) {
		t.Errorf("Produce row: Min %d MinServed %d Precheck set %v; want 0, 3, true", e.Min, e.MinServed, e.Precheck != nil)
	}
	if e := x.lookup(int16(kmsg.Fetch)); e != nil && e.Min > 4 {
		t.Errorf("Fetch advertised from v%d: librdkafka needs v4 or lower for record batch v2", e.Min)
	}
	if e := x.lookup(int16(kmsg.FindCoordinator)); e != nil && e.Min != 0 {
		t.Errorf("FindCoordinator advertised from v%d: librdkafka needs v0 to enable lz4", e.Min)
	}
	for _, e := range apiTable {
		if e.MaxRequestBytes == 0 && e.Precheck == nil {
			t.Errorf("%s has neither a frame cap of its own nor a Precheck (see TestDecodeAmplification)", e.Key.Name())
		}
	}
}

// TestAPITableRejectsBadRows: a broken row is a programming error caught
// when the server is built.
func TestAPITableRejectsBadRows(t *testing.T) {
	h := func(*Server, *Request) (Pending, error) { return nil, nil }
	av := apiVersionsRow()
	cases := map[string][]apiEntry{
		"duplicate key":       {av, av},
		"unknown key":         {av, {Key: 30000, Handle: h}},
		"max above kmsg":      {av, {Key: kmsg.Metadata, Max: 1000, Handle: h}},
		"min above max":       {av, {Key: kmsg.Metadata, Min: 3, Max: 2, Handle: h}},
		"negative min":        {av, {Key: kmsg.Metadata, Min: -1, Max: 2, Handle: h}},
		"min served past max": {av, {Key: kmsg.Metadata, Max: 2, MinServed: 3, Handle: h}},
		"negative cap":        {av, {Key: kmsg.Metadata, Max: 2, MaxRequestBytes: -1, Handle: h}},
		"no handler":          {av, {Key: kmsg.Metadata, Max: 2}},
		"no ApiVersions":      {{Key: kmsg.Metadata, Max: 2, Handle: h}},
	}
	for name, table := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				v := recover()
				if v == nil || !strings.HasPrefix(fmt.Sprint(v), "kafka: api table") {
					t.Fatalf("recovered %v, want a panic naming the table", v)
				}
			}()
			buildAPIIndex(table)
		})
	}
}
