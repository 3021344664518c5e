package cli

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestOffsets(t *testing.T) {
	b := testBrokers(t)
	topic := uniqueTopic(t)
	mustRun(t, "", "topic", "create", topic, "-p", "2", "-r", "1", "-b", b)
	before := time.Now().UnixMilli()
	mustRun(t, "a\nb\nc\nd\ne\n", "produce", topic, "--partition", "0", "-b", b)

	for _, tc := range []struct {
		time string
		want string
	}{
		{"-1", topic + ":0:5\n" + topic + ":1:0\n"},
		{"latest", topic + ":0:5\n" + topic + ":1:0\n"},
		{"-2", topic + ":0:0\n" + topic + ":1:0\n"},
		{"earliest", topic + ":0:0\n" + topic + ":1:0\n"},
		// The first offset at or after a time before any record is 0.
		{strconv.FormatInt(before-60_000, 10), topic + ":0:0\n" + topic + ":1:0\n"},
	} {
		if out := mustRun(t, "", "offsets", topic, "--time", tc.time, "-b", b).stdout; out != tc.want {
			t.Errorf("offsets --time %s printed %q, want %q", tc.time, out, tc.want)
		}
	}
	var listed []listedOffset
	decodeJSON(t, mustRun(t, "", "offsets", topic, "--format", "json", "-b", b).stdout, &listed)
	if len(listed) != 2 || listed[0].Partition != 0 || listed[0].Offset != 5 || listed[1].Offset != 0 {
		t.Errorf("offsets --format json: %+v", listed)
	}
	r := mustFail(t, "", "offsets", topic+"-missing", "-b", b)
	if !strings.Contains(r.stderr, "unknown topic") {
		t.Errorf("offsets of a missing topic: stderr %q", r.stderr)
	}
	mustFail(t, "", "offsets", topic, "--time", "-7", "-b", b)
	mustFail(t, "", "offsets", topic, "--time", "yesterday", "-b", b)
}

// rpk cluster info's layout.
var brokerLineRE = regexp.MustCompile(`^(\d+)(\*?)\s+(\S+)\s+(\d+)\s*(\S*)\s*$`)

func TestClusterInfo(t *testing.T) {
	b := testBrokers(t)
	out := mustRun(t, "", "cluster", "info", "-b", b).stdout
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) < 7 || lines[0] != "CLUSTER" || lines[1] != "=======" || lines[2] == "" ||
		lines[3] != "" || lines[4] != "BROKERS" || lines[5] != "=======" || !strings.HasPrefix(lines[6], "ID") {
		t.Fatalf("cluster info layout:\n%s", out)
	}
	if usingKfake() && lines[2] != "wren-test-cluster" {
		t.Errorf("cluster id %q, want wren-test-cluster", lines[2])
	}
	controllers := 0
	for _, l := range lines[7:] {
		m := brokerLineRE.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("broker line %q does not match", l)
		}
		if m[2] == "*" {
			controllers++
		}
	}
	if controllers != 1 {
		t.Errorf("%d brokers marked controller, want 1:\n%s", controllers, out)
	}

	var info clusterInfo
	decodeJSON(t, mustRun(t, "", "cluster", "info", "--format", "json", "-b", b).stdout, &info)
	if len(info.Brokers) != len(lines)-7 || info.ClusterID != lines[2] {
		t.Errorf("cluster info --format json %+v disagrees with the text:\n%s", info, out)
	}
	if usingKfake() && len(info.Brokers) != 3 {
		t.Errorf("kfake cluster has %d brokers, want 3", len(info.Brokers))
	}
}

func TestBootstrapFromEnv(t *testing.T) {
	b := testBrokers(t)
	t.Setenv("WREN_BROKERS", b)
	mustRun(t, "", "cluster", "info")
	// --brokers is an alias of --bootstrap-server.
	t.Setenv("WREN_BROKERS", "")
	mustRun(t, "", "cluster", "info", "--brokers", b)
}
