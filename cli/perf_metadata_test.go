package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

var perfMetadataRE = regexp.MustCompile(`^CreateTopics to node 1 \(the controller\): 5 topics, round trip p50 \d+\.\d{3} ms, p99 \d+\.\d{3} ms, max \d+\.\d{3} ms$`)

// perf metadata against a one-node wren broker (its own controller):
// the line of figures, the same in JSON, and the topics deleted after.
func TestPerfMetadata(t *testing.T) {
	b := wrenBroker(t, "")
	prefix := uniqueTopic(t) + "-"
	out := mustRun(t, "", "perf", "metadata", "--topics", "5", "-r", "1", "--prefix", prefix, "-b", b).stdout
	if !perfMetadataRE.MatchString(strings.TrimSuffix(out, "\n")) {
		t.Errorf("perf metadata printed %q", out)
	}
	if list := mustRun(t, "", "topic", "list", "-b", b).stdout; strings.Contains(list, prefix) {
		t.Errorf("the topics were not deleted:\n%s", list)
	}

	out = mustRun(t, "", "perf", "metadata", "--topics", "5", "-r", "1", "--prefix", prefix, "--keep", "--format", "json", "-b", b).stdout
	var r perfMetadataResult
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Node != 1 || r.Controller != 1 || r.Topics != 5 || r.P50Ms <= 0 || r.P99Ms < r.P50Ms || r.MaxMs < r.P99Ms {
		t.Errorf("perf metadata --format json printed %q (%v), want node and controller 1, 5 topics, 0 < p50 <= p99 <= max", out, err)
	}
	if list := mustRun(t, "", "topic", "list", "-b", b).stdout; strings.Count(list, prefix) != 5 {
		t.Errorf("--keep: want the 5 topics listed:\n%s", list)
	}

	if res := mustFail(t, "", "perf", "metadata", "--topics", "0", "-b", b); !strings.Contains(res.stderr, "--topics 0: want 1 to 10000") {
		t.Errorf("--topics 0: stderr %q", res.stderr)
	}
}
