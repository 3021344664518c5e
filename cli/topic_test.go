package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
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
	if usingKfake() {
		// kfake lists transactional producers only: none here.
		plain := mustRun(t, "", "topic", "describe", topic, "-b", b).stdout
		if out := mustRun(t, "", "topic", "describe", topic, "--producers", "-b", b).stdout; out != plain {
			t.Errorf("describe --producers with no producers printed\n%s\nwant\n%s", out, plain)
		}
	}
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

	before := len(parts)
	r = mustRun(t, "", "topic", "add-partitions", topic, "--total", "5", "-b", b)
	summary, parts = describeLines(t, b, topic)
	if m := describeSummaryRE.FindStringSubmatch(summary); m == nil || m[2] != "5" || len(parts) != 5 {
		t.Errorf("after add-partitions --total 5 (from %d): summary %q with %d partition lines", before, summary, len(parts))
	}
	if want := "Topic " + topic + " now has 5 partitions.\n"; r.stdout != want {
		t.Errorf("add-partitions --total printed %q, want %q", r.stdout, want)
	}
	// --add counts from what the topic has, as rpk's -n does.
	r = mustRun(t, "", "topic", "add-partitions", topic, "--add", "2", "-b", b)
	if want := "Topic " + topic + " now has 7 partitions.\n"; r.stdout != want {
		t.Errorf("add-partitions --add 2 printed %q, want %q", r.stdout, want)
	}
	// Fewer partitions than now is refused by the broker.
	mustFail(t, "", "topic", "add-partitions", topic, "--total", "2", "-b", b)
	// The ambiguous -n, both flags, and neither are refused before any
	// request, with exit status 2.
	for _, args := range [][]string{{"-n", "9"}, {"--total", "9", "--add", "1"}, {}} {
		r := run(t, "", append([]string{"topic", "add-partitions", topic, "-b", b}, args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, "--total N") {
			t.Errorf("add-partitions %v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	if summary, _ := describeLines(t, b, topic); !strings.Contains(summary, "PartitionCount: 7\t") {
		t.Errorf("a refused add-partitions changed the topic: %q", summary)
	}

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
		{"topic", "add-partitions", "t"},          // --total or --add is required
	} {
		r := mustFail(t, "", append(args, "-b", "127.0.0.1:1")...)
		if r.stderr == "" {
			t.Errorf("wren %s: no message on stderr", strings.Join(args, " "))
		}
	}
}

// describeProducerRE is a --producers line: kafka-transactions
// describe-producers' columns after the topic and partition.
var describeProducerRE = regexp.MustCompile(`^\tTopic: (\S+)\tPartition: (\d+)\tProducerId: (\d+)\tProducerEpoch: (\d+)\tLatestCoordinatorEpoch: (-?\d+)\tLastSequence: (-?\d+)\tLastTimestamp: (\d+)\tCurrentTransactionStartOffset: (\d+|None)$`)

// An idempotent producer's state, as the partition leader tracks it, shows
// under describe --producers. kfake does not track idempotent producers,
// so this runs against a real broker.
func TestTopicDescribeProducers(t *testing.T) {
	b := producerStateBrokers(t)
	topic := uniqueTopic(t)
	mustRun(t, "", "topic", "create", topic, "-p", "2", "-r", "1", "-b", b)

	// Five records to partition 0 only, idempotent (kgo's default).
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(b, ",")...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before := time.Now().UnixMilli()
	var records []*kgo.Record
	for i := range 5 {
		records = append(records, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprint(i))})
	}
	if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatalf("producer id: %v", err)
	}

	// Without --producers: the usual summary and partition lines only.
	if _, parts := describeLines(t, b, topic); len(parts) != 2 {
		t.Errorf("describe without --producers printed %d lines after the summary, want 2:\n%s", len(parts), strings.Join(parts, "\n"))
	}
	out := mustRun(t, "", "topic", "describe", topic, "--producers", "-b", b).stdout
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 4 || !describeSummaryRE.MatchString(lines[0]) ||
		!describePartRE.MatchString(lines[1]) || !describePartRE.MatchString(lines[2]) {
		t.Fatalf("describe --producers: want summary, 2 partition lines, 1 producer line:\n%s", out)
	}
	m := describeProducerRE.FindStringSubmatch(lines[3])
	if m == nil {
		t.Fatalf("producer line %q does not match describe-producers' columns", lines[3])
	}
	want := []string{topic, "0", fmt.Sprint(pid), fmt.Sprint(epoch), "-1", "4"}
	if !slices.Equal(m[1:7], want) || m[8] != "None" {
		t.Errorf("producer line %q: want topic, partition, id, epoch, coordinator epoch, last sequence %q and no transaction", lines[3], want)
	}
	if ts, _ := strconv.ParseInt(m[7], 10, 64); ts < before-60_000 || ts > time.Now().UnixMilli()+60_000 {
		t.Errorf("producer line %q: LastTimestamp %d is not about now (%d)", lines[3], ts, before)
	}

	// JSON: every partition has its list, empty if no one produced to it.
	out = mustRun(t, "", "topic", "describe", topic, "--producers", "--format", "json", "-b", b).stdout
	var descs []topicDescription
	decodeJSON(t, out, &descs)
	if len(descs) != 1 || len(descs[0].Partitions) != 2 {
		t.Fatalf("describe --producers --format json: %s", out)
	}
	p0, p1 := descs[0].Partitions[0], descs[0].Partitions[1]
	if len(p0.Producers) != 1 || p0.Producers[0].ProducerID != pid || p0.Producers[0].LastSequence != 4 ||
		p0.Producers[0].CurrentTransactionStartOffset != nil {
		t.Errorf("partition 0 producers %+v: want one, id %d, last sequence 4, no transaction", p0.Producers, pid)
	}
	if p1.Producers == nil || len(p1.Producers) != 0 {
		t.Errorf("partition 1 producers %#v: want an empty list", p1.Producers)
	}
	if out := mustRun(t, "", "topic", "describe", topic, "--format", "json", "-b", b).stdout; strings.Contains(out, `"producers"`) {
		t.Errorf("describe --format json without --producers lists producers:\n%s", out)
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

// The broker lists __consumer_offsets flagged internal; topic list and
// describe hide it unless --include-internal, and refuse both flags.
func TestTopicListInternal(t *testing.T) {
	b := wrenBroker(t, "")
	topic := uniqueTopic(t)
	mustRun(t, "", "topic", "create", topic, "-p", "1", "-r", "1", "-b", b)

	for _, args := range [][]string{{"topic", "list"}, {"topic", "list", "--exclude-internal"}} {
		out := mustRun(t, "", append(args, "-b", b)...).stdout
		if !containsLine(out, topic) || containsLine(out, "__consumer_offsets") {
			t.Errorf("wren %s: want %s and no __consumer_offsets:\n%s", strings.Join(args, " "), topic, out)
		}
	}
	for _, flag := range []string{"--include-internal", "-i"} {
		out := mustRun(t, "", "topic", "list", flag, "-b", b).stdout
		if !containsLine(out, topic) || !containsLine(out, "__consumer_offsets") {
			t.Errorf("wren topic list %s: want %s and __consumer_offsets:\n%s", flag, topic, out)
		}
	}
	var listed []listedTopic
	decodeJSON(t, mustRun(t, "", "topic", "list", "-i", "--format", "json", "-b", b).stdout, &listed)
	internal := map[string]bool{}
	for _, l := range listed {
		internal[l.Topic] = l.Internal
	}
	if !internal["__consumer_offsets"] || internal[topic] {
		t.Errorf("topic list -i --format json: internal flags %v", internal)
	}

	desc := mustRun(t, "", "topic", "describe", "-b", b).stdout
	if strings.Contains(desc, "__consumer_offsets") || !strings.Contains(desc, "Topic: "+topic+"\t") {
		t.Errorf("topic describe (all): want %s without __consumer_offsets:\n%s", topic, desc)
	}
	desc = mustRun(t, "", "topic", "describe", "--include-internal", "-b", b).stdout
	if !strings.Contains(desc, "Topic: __consumer_offsets\t") {
		t.Errorf("topic describe --include-internal: no __consumer_offsets:\n%s", desc)
	}
	r := mustFail(t, "", "topic", "list", "--include-internal", "--exclude-internal", "-b", b)
	if !strings.Contains(r.stderr, "contradict") {
		t.Errorf("both flags: stderr %q", r.stderr)
	}
}
