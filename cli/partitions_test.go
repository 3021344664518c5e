package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// elect-leader against a one-node wren: every preferred replica leads, so
// each named partition is "not needed" and the command succeeds; an
// unknown partition fails with exit status 1 and the broker's reason.
func TestPartitionsElectLeader(t *testing.T) {
	b := wrenBroker(t, "")
	topic := uniqueTopic(t)
	mustRun(t, "", "topic", "create", topic, "-p", "2", "-r", "1", "-b", b)

	out := mustRun(t, "", "partitions", "elect-leader", topic+"/0", topic+"/1", "-b", b).stdout
	if strings.Count(out, "not needed") != 2 {
		t.Fatalf("elect-leader of two led partitions printed:\n%s", out)
	}
	out = mustRun(t, "", "partitions", "elect-leader", "--all", "--type", "preferred", "-b", b).stdout
	if !strings.Contains(out, "No partition needed an election") {
		t.Fatalf("elect-leader --all printed:\n%s", out)
	}
	res := mustFail(t, "", "partitions", "elect-leader", "--format", "json", topic+"/9", "-b", b)
	var got []electionOutcome
	if err := json.Unmarshal([]byte(res.stdout), &got); err != nil {
		t.Fatalf("json output %q: %v", res.stdout, err)
	}
	if len(got) != 1 || got[0].Result != "failed" || got[0].Partition != 9 || got[0].Error == "" {
		t.Fatalf("elect-leader of a missing partition: %+v", got)
	}
	if !strings.Contains(res.stderr, "UNKNOWN_TOPIC_OR_PARTITION") && !strings.Contains(res.stderr, topic) {
		t.Errorf("stderr does not say why: %q", res.stderr)
	}
	out = mustRun(t, "", "partitions", "elect-leader", "--type", "unclean", topic+"/0", "-b", b).stdout
	if !strings.Contains(out, "not needed") {
		t.Fatalf("unclean election of a led partition printed:\n%s", out)
	}
}

func TestPartitionsElectLeaderUsage(t *testing.T) {
	for _, args := range [][]string{
		{"partitions", "elect-leader"},
		{"partitions", "elect-leader", "--all", "t/0"},
		{"partitions", "elect-leader", "--type", "dirty", "t/0"},
		{"partitions", "elect-leader", "t"},
		{"partitions", "elect-leader", "t/x"},
		{"partitions", "elect-leader", "/0"},
	} {
		res := mustFail(t, "", append(args, "-b", "127.0.0.1:1")...)
		if !strings.Contains(res.stderr, "usage") && !strings.Contains(res.stderr, "want") && !strings.Contains(res.stderr, "must") {
			t.Errorf("%v: stderr %q does not explain the usage error", args, res.stderr)
		}
	}
}
