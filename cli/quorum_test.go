package cli

import (
	"bytes"
	"strings"
	"testing"
)

// printQuorum shows how long ago the controller last had a fetch from
// each follower and saw it caught up, "-" for the controller and for what
// it has not seen; JSON carries the ages in milliseconds.
func TestPrintQuorumAges(t *testing.T) {
	q := quorumInfo{Controller: 2, Epoch: 4, HighWatermark: 90, Voters: []voterState{
		{NodeID: 1, Epoch: 4, LogEnd: 88, Lag: 2, Reachable: true, LastFetchAgeMs: 120, LastCaughtUpAgeMs: 1500},
		{NodeID: 2, Epoch: 4, LogEnd: 90, Reachable: true, LastFetchAgeMs: -1, LastCaughtUpAgeMs: -1},
		{NodeID: 3, Epoch: -1, LogEnd: -1, Lag: -1, LastFetchAgeMs: -1, LastCaughtUpAgeMs: -1},
	}}
	var out bytes.Buffer
	if err := printQuorum(&out, formatText, q); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	want := map[string][]string{
		"1":  {"1", "4", "88", "2", "120ms", "ago", "1.5s", "ago", "up"},
		"2*": {"2*", "4", "90", "0", "-", "-", "up"},
		"3":  {"3", "-", "-", "-", "-", "-", "unreachable"},
	}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if w, ok := want[f[0]]; ok {
			if strings.Join(f, " ") != strings.Join(w, " ") {
				t.Errorf("row %q, want %q", strings.Join(f, " "), strings.Join(w, " "))
			}
			delete(want, f[0])
		}
	}
	if len(want) != 0 {
		t.Errorf("rows missing %v in:\n%s", want, out.String())
	}
	out.Reset()
	if err := printQuorum(&out, formatJSON, q); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, `"last_fetch_age_ms": 120`) || !strings.Contains(s, `"last_caught_up_age_ms": 1500`) {
		t.Errorf("JSON without the ages:\n%s", s)
	}
}
