package cli

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kversion"
)

// describeLines runs topic describe and splits its output into the
// summary line and the partition lines.
func describeLines(t *testing.T, b, topic string) (summary string, partitions []string) {
	t.Helper()
	out := mustRun(t, "", "topic", "describe", topic, "-b", b).stdout
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	return lines[0], lines[1:]
}

// Kafka 4's kafka-topics --describe layout, field by field.
var (
	describeSummaryRE = regexp.MustCompile(`^Topic: (\S+)\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: (\d+)\tReplicationFactor: (\d+)\tConfigs: (.*)$`)
	describePartRE    = regexp.MustCompile(`^\tTopic: (\S+)\tPartition: (\d+)\tLeader: (\d+|none)\tReplicas: ([\d,]+)\tIsr: ([\d,]*)\tElr: ([\d,]*|N/A)\tLastKnownElr: ([\d,]*|N/A)$`)
)

func TestTopicLifecycle(t *testing.T) {
	b := testBrokers(t)
	topic := uniqueTopic(t)

	// Flags after the topic name, as with kafka-topics and rpk.
	r := mustRun(t, "", "topic", "create", topic, "-p", "3", "-r", "1", "-c", "cleanup.policy=compact", "-b", b)
	if want := "Created topic " + topic + ".\n"; r.stdout != want {
		t.Fatalf("create printed %q, want %q", r.stdout, want)
	}
	r = mustFail(t, "", "topic", "create", topic, "-b", b)
	if !strings.Contains(r.stderr, "TOPIC_ALREADY_EXISTS") {
		t.Errorf("second create: stderr %q does not name TOPIC_ALREADY_EXISTS", r.stderr)
	}
	if r := mustRun(t, "", "topic", "create", topic, "--if-not-exists", "-b", b); r.stdout != "" {
		t.Errorf("create --if-not-exists of an existing topic printed %q", r.stdout)
	}

	if list := mustRun(t, "", "topic", "list", "-b", b).stdout; !containsLine(list, topic) {
		t.Fatalf("topic list %q lacks %s", list, topic)
	}

	summary, parts := describeLines(t, b, topic)
	m := describeSummaryRE.FindStringSubmatch(summary)
	if m == nil {
		t.Fatalf("describe summary %q does not match Kafka's layout", summary)
	}
	if m[1] != topic || m[2] != "3" || m[3] != "1" || !strings.Contains(m[4], "cleanup.policy=compact") {
		t.Errorf("describe summary %q: want topic %s, 3 partitions, RF 1, cleanup.policy=compact", summary, topic)
	}
	if len(parts) != 3 {
		t.Fatalf("describe printed %d partition lines, want 3:\n%s", len(parts), strings.Join(parts, "\n"))
	}
	for i, line := range parts {
		pm := describePartRE.FindStringSubmatch(line)
		if pm == nil {
			t.Fatalf("partition line %q does not match Kafka's layout", line)
		}
		if pm[1] != topic || pm[2] != fmt.Sprint(i) {
			t.Errorf("partition line %d is %q", i, line)
		}
		if strings.Count(pm[4], ",") != 0 {
			t.Errorf("partition line %q: want one replica", line)
		}
	}

	r = mustRun(t, "", "topic", "alter-config", topic, "--set", "retention.ms=1000", "--delete", "cleanup.policy", "-b", b)
	if want := "Completed updating config for topic " + topic + ".\n"; r.stdout != want {
		t.Errorf("alter-config printed %q, want %q", r.stdout, want)
	}
	summary, _ = describeLines(t, b, topic)
	if !strings.Contains(summary, "retention.ms=1000") || strings.Contains(summary, "cleanup.policy") {
		t.Errorf("after alter-config, summary %q: want retention.ms=1000 and no cleanup.policy", summary)
	}

	mustRun(t, "", "topic", "add-partitions", topic, "-n", "5", "-b", b)
	summary, parts = describeLines(t, b, topic)
	if m := describeSummaryRE.FindStringSubmatch(summary); m == nil || m[2] != "5" || len(parts) != 5 {
		t.Errorf("after add-partitions -n 5: summary %q with %d partition lines", summary, len(parts))
	}
	// Fewer partitions than now is refused by the broker.
	mustFail(t, "", "topic", "add-partitions", topic, "-n", "2", "-b", b)

	r = mustRun(t, "", "topic", "delete", topic, "-b", b)
	if want := "Deleted topic " + topic + ".\n"; r.stdout != want {
		t.Errorf("delete printed %q, want %q", r.stdout, want)
	}
	if list := mustRun(t, "", "topic", "list", "-b", b).stdout; containsLine(list, topic) {
		t.Errorf("topic list %q still has %s after delete", list, topic)
	}
	r = mustFail(t, "", "topic", "describe", topic, "-b", b)
	if !strings.Contains(r.stderr, "unknown topic") {
		t.Errorf("describe of a deleted topic: stderr %q", r.stderr)
	}
}

func TestTopicJSON(t *testing.T) {
	b := testBrokers(t)
	topic := uniqueTopic(t)
	var created []createdTopic
	decodeJSON(t, mustRun(t, "", "topic", "create", topic, "-p", "2", "-r", "1", "--format", "json", "-b", b).stdout, &created)
	if len(created) != 1 || created[0].Topic != topic || created[0].Partitions != 2 || created[0].ReplicationFactor != 1 {
		t.Errorf("create --format json: %+v", created)
	}

	var descs []topicDescription
	decodeJSON(t, mustRun(t, "", "topic", "describe", topic, "--format", "json", "-b", b).stdout, &descs)
	if len(descs) != 1 || descs[0].PartitionCount != 2 || len(descs[0].Partitions) != 2 || descs[0].Configs == nil {
		t.Fatalf("describe --format json: %+v", descs)
	}
	if descs[0].TopicID != created[0].TopicID {
		t.Errorf("describe topic id %q, create said %q", descs[0].TopicID, created[0].TopicID)
	}

	var listed []listedTopic
	decodeJSON(t, mustRun(t, "", "topic", "list", "--format", "json", "-b", b).stdout, &listed)
	found := false
	for _, l := range listed {
		found = found || (l.Topic == topic && l.Partitions == 2)
	}
	if !found {
		t.Errorf("list --format json lacks %s with 2 partitions: %+v", topic, listed)
	}
}

func TestTopicUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"topic", "create"},                       // no topic
		{"topic", "create", "t", "-p", "0"},       // zero partitions
		{"topic", "create", "t", "-c", "novalue"}, // config without =
		{"topic", "alter-config", "t"},            // nothing to alter
		{"topic", "list", "--format", "yaml"},     // unknown format
		{"topic", "add-partitions", "t"},          // -n is required
	} {
		r := mustFail(t, "", append(args, "-b", "127.0.0.1:1")...)
		if r.stderr == "" {
			t.Errorf("wren %s: no message on stderr", strings.Join(args, " "))
		}
	}
}

func containsLine(out, line string) bool {
	for _, l := range strings.Split(out, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

func decodeJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("output is not the JSON expected: %v\n%s", err, s)
	}
}

// A broker without DescribeTopicPartitions (Kafka before 3.8, or a wren
// that does not serve it): describe falls back to Metadata and prints the
// eligible leader replicas as N/A, as Kafka's tool does.
func TestTopicDescribeMetadataFallback(t *testing.T) {
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(75, -1) // no DescribeTopicPartitions
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.MaxVersions(vs))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := strings.Join(c.ListenAddrs(), ",")
	mustRun(t, "", "topic", "create", "fallback", "-p", "2", "-r", "1", "-b", b)
	summary, parts := describeLines(t, b, "fallback")
	if m := describeSummaryRE.FindStringSubmatch(summary); m == nil || m[2] != "2" {
		t.Fatalf("summary %q", summary)
	}
	for _, p := range parts {
		if m := describePartRE.FindStringSubmatch(p); m == nil || m[6] != "N/A" || m[7] != "N/A" {
			t.Errorf("partition line %q: want Kafka's layout with Elr: N/A and LastKnownElr: N/A", p)
		}
	}
	mustFail(t, "", "topic", "describe", "missing", "-b", b)
}
