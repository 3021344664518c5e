package cli

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// kafka-producer-perf-test's lines (ProducerPerformance.Stats).
var (
	perfTotalRE  = regexp.MustCompile(`^(\d+) records sent, \d+\.\d{6} records/sec \(\d+\.\d{2} MB/sec\), \d+\.\d{2} ms avg latency, \d+\.\d{2} ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99\.9th\.$`)
	perfWindowRE = regexp.MustCompile(`^\d+ records sent, \d+\.\d records/sec \(\d+\.\d{2} MB/sec\), \d+\.\d ms avg latency, \d+\.\d ms max latency\.$`)
	// kafka-consumer-perf-test's final line.
	consumerPerfRE = regexp.MustCompile(`^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}), (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}), (\d+\.\d{4}), (\d+\.\d{4}|Infinity|NaN), (\d+), (\d+\.\d{4}|Infinity|NaN), (\d+), (\d+), (\d+\.\d{4}|Infinity|NaN), (\d+\.\d{4}|Infinity|NaN)$`)
)

const consumerPerfHeader = "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"

func TestPerfProduceConsume(t *testing.T) {
	b := testBrokers(t)
	topic := uniqueTopic(t)
	// The topic does not exist: perf produce creates it with 2 partitions.
	// Small batches (Java's default size) still deliver every record.
	out := mustRun(t, "", "perf", "produce", "--topic", topic, "--num-records", "2000", "--record-size", "100",
		"--throughput", "-1", "--partitions", "2", "--reporting-interval", "10ms",
		"--producer-props", "batch.size=16384,linger.ms=1", "-b", b).stdout
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	m := perfTotalRE.FindStringSubmatch(lines[len(lines)-1])
	if m == nil || m[1] != "2000" {
		t.Fatalf("final line %q does not match Kafka's", lines[len(lines)-1])
	}
	for _, l := range lines[:len(lines)-1] {
		if !perfWindowRE.MatchString(l) {
			t.Errorf("periodic line %q does not match Kafka's", l)
		}
	}
	if got := mustRun(t, "", "offsets", topic, "-b", b).stdout; sumOffsets(t, got) != 2000 {
		t.Errorf("offsets after 2000 records:\n%s", got)
	}

	out = mustRun(t, "", "perf", "consume", "--topic", topic, "--num-records", "2000", "-b", b).stdout
	lines = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 || lines[0] != consumerPerfHeader {
		t.Fatalf("perf consume printed:\n%s", out)
	}
	m = consumerPerfRE.FindStringSubmatch(lines[1])
	if m == nil {
		t.Fatalf("perf consume line %q does not match Kafka's", lines[1])
	}
	// 2000 records of 100 bytes, no keys: 200000 bytes = 0.1907 MiB.
	if m[3] != "0.1907" || m[5] != "2000" || m[7] != "0" {
		t.Errorf("perf consume line %q: want 0.1907 MB, 2000 records, rebalance 0 ms", lines[1])
	}
}

func TestPerfConsumeTimeout(t *testing.T) {
	b := testBrokers(t)
	topic := uniqueTopic(t)
	mustRun(t, "", "topic", "create", topic, "-p", "1", "-r", "1", "-b", b)
	mustRun(t, "a\nb\n", "produce", topic, "-b", b)
	out := mustRun(t, "", "perf", "consume", "--topic", topic, "--messages", "5", "--timeout", "300ms", "--hide-header", "-b", b).stdout
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "WARNING: Exiting before consuming the expected number of messages: timeout (300 ms) exceeded.") {
		t.Fatalf("perf consume past its records printed:\n%s", out)
	}
	if m := consumerPerfRE.FindStringSubmatch(lines[1]); m == nil || m[5] != "2" {
		t.Errorf("final line %q: want 2 records", lines[1])
	}
}

func TestPerfGroupAndDuration(t *testing.T) {
	b := testBrokers(t)
	topic := uniqueTopic(t)
	out := mustRun(t, "", "perf", "produce", "--topic", topic, "--duration", "200ms", "--throughput", "500",
		"--record-size", "10", "--acks", "1", "--compression", "zstd", "--format", "json", "-b", b).stdout
	var total perfTotal
	decodeJSON(t, out, &total)
	// 500 records/s for 0.2 s: about 100, never far above (the throttle).
	if total.Records < 1 || total.Records > 150 {
		t.Errorf("perf produce --duration 200ms --throughput 500 sent %d records", total.Records)
	}
	out = mustRun(t, "", "perf", "consume", "--topic", topic, "--num-records", "1", "--group", topic+"-g",
		"--show-detailed-stats", "-b", b).stdout
	if !strings.HasPrefix(out, "time, threadId, data.consumed.in.MB,") {
		t.Errorf("perf consume --show-detailed-stats header:\n%s", out)
	}
	for _, args := range [][]string{
		{"--num-records", "1", "--duration", "1s"}, // both
		{}, // neither
		{"--num-records", "1", "--record-size", "-1"},
		{"--num-records", "1", "--acks", "2"},
		{"--num-records", "1", "--producer-props", "batch.size=100"},
		{"--num-records", "1", "--producer-props", "acks=all"},
	} {
		mustFail(t, "", append([]string{"perf", "produce", "--topic", topic, "-b", b}, args...)...)
	}
	mustFail(t, "", "perf", "produce", "--num-records", "1", "-b", b) // --topic is required
}

// --producer-props takes kafka-producer-perf-test's batching settings and
// refuses anything else with the key in the message.
func TestParsePerfProducerProps(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want perfProducerProps
		err  string
	}{
		{in: nil, want: perfProducerProps{}},
		{in: []string{"batch.size=1000012", "linger.ms=10"}, want: perfProducerProps{batchBytes: 1000012, linger: 10 * time.Millisecond, lingerSet: true}},
		{in: []string{"linger.ms=0"}, want: perfProducerProps{lingerSet: true}},
		{in: []string{"batch.size=16384,linger.ms=5"}, want: perfProducerProps{batchBytes: 16384, linger: 5 * time.Millisecond, lingerSet: true}},
		{in: []string{" batch.size = 512 "}, want: perfProducerProps{batchBytes: 512}},
		{in: []string{"batch.size=511"}, err: "batch.size=511: want bytes in 512..1073741824"},
		{in: []string{"batch.size=1k"}, err: "batch.size=1k"},
		{in: []string{"linger.ms=-1"}, err: "linger.ms=-1: want milliseconds in 0..60000"},
		{in: []string{"linger.ms=60001"}, err: "linger.ms=60001"},
		{in: []string{"batch.size"}, err: `"batch.size": want key=value`},
		{in: []string{"acks=all"}, err: "acks: not a setting perf produce takes"},
	} {
		got, err := parsePerfProducerProps(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.err == "" && got != tc.want:
			t.Errorf("%q: %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// perf produce is idempotent unless told not to be: the partition's leader
// then tracks its producer, which describe --producers shows.
func TestPerfProduceIdempotence(t *testing.T) {
	b := producerStateBrokers(t)
	producers := func(topic string) []producerDescription {
		t.Helper()
		var descs []topicDescription
		decodeJSON(t, mustRun(t, "", "topic", "describe", topic, "--producers", "--format", "json", "-b", b).stdout, &descs)
		if len(descs) != 1 || len(descs[0].Partitions) != 1 {
			t.Fatalf("describe %s: %+v", topic, descs)
		}
		return descs[0].Partitions[0].Producers
	}
	perf := func(topic string, args ...string) {
		t.Helper()
		mustRun(t, "", append([]string{"perf", "produce", "--topic", topic, "--num-records", "50", "--record-size", "10",
			"--partitions", "1", "--format", "json", "-b", b}, args...)...)
	}

	idempotent := uniqueTopic(t) + "-on"
	perf(idempotent) // the default
	if ps := producers(idempotent); len(ps) != 1 || ps[0].LastSequence != 49 {
		t.Errorf("after 50 idempotent records, producers %+v: want one with last sequence 49", ps)
	}
	plain := uniqueTopic(t) + "-off"
	perf(plain, "--idempotence=false")
	if ps := producers(plain); len(ps) != 0 {
		t.Errorf("after --idempotence=false, producers %+v: want none", ps)
	}
	// Kafka refuses enable.idempotence=true with acks other than all.
	r := mustFail(t, "", "perf", "produce", "--topic", plain, "--num-records", "1", "--acks", "1", "--idempotence=true", "-b", b)
	if !strings.Contains(r.stderr, "--idempotence needs --acks all") {
		t.Errorf("--acks 1 --idempotence=true: stderr %q", r.stderr)
	}
}

// The periodic and final lines, from known numbers.
func TestPerfStatsLines(t *testing.T) {
	start := time.Unix(1000, 0)
	s := newPerfStats(start)
	for i := 1; i <= 1000; i++ {
		s.record(time.Duration(i)*time.Millisecond, 1024)
	}
	line, ok := s.window(start.Add(2 * time.Second))
	if want := "1000 records sent, 500.0 records/sec (0.49 MB/sec), 500.5 ms avg latency, 1000.0 ms max latency.\n"; !ok || line != want {
		t.Errorf("window line %q, want %q", line, want)
	}
	if _, ok := s.window(start.Add(3 * time.Second)); ok {
		t.Error("an empty window printed a line")
	}
	got := s.total(start.Add(4 * time.Second)).line()
	// Percentiles are whole ms, within the histogram's 1/64 of the exact
	// 501, 951, 991, 1000 (Kafka: the sorted sample at floor(q*n)).
	want := "1000 records sent, 250.000000 records/sec (0.24 MB/sec), 500.50 ms avg latency, 1000.00 ms max latency, 503 ms 50th, 958 ms 95th, 991 ms 99th, 1000 ms 99.9th.\n"
	if got != want {
		t.Errorf("total line\n got %q\nwant %q", got, want)
	}
}

func sumOffsets(t *testing.T, out string) int64 {
	t.Helper()
	var sum int64
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		i := strings.LastIndexByte(l, ':')
		var n int64
		for _, c := range l[i+1:] {
			n = n*10 + int64(c-'0')
		}
		sum += n
	}
	return sum
}

func TestConsumerPerfTime(t *testing.T) {
	at := time.Date(2024, 1, 2, 3, 4, 5, 678_900_000, time.Local)
	if got, want := consumerPerfTime(at), "2024-01-02 03:04:05:678"; got != want {
		t.Errorf("consumerPerfTime = %q, want %q", got, want)
	}
}
