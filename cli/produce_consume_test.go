package cli

import (
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestProduceConsumeRoundTrip(t *testing.T) {
	b := testBrokers(t)
	topic := uniqueTopic(t)
	mustRun(t, "", "topic", "create", topic, "-p", "1", "-r", "1", "-b", b)

	// -K splits at the first separator; the rest of the line is the value.
	in := "k1:v1\nk2:v:2\n:empty-key\nk4:\n"
	r := mustRun(t, in, "produce", topic, "-K", ":", "-H", "src=test", "-H", "eq=a=b", "-b", b)
	if !strings.HasPrefix(r.stderr, "Produced 4 records (") {
		t.Errorf("produce summary %q", r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("produce wrote %q to stdout", r.stdout)
	}

	// Default format: the value, one per line.
	r = mustRun(t, "", "consume", topic, "-n", "4", "-b", b)
	if want := "v1\nv:2\nempty-key\n\n"; r.stdout != want {
		t.Errorf("consume printed %q, want %q", r.stdout, want)
	}

	r = mustRun(t, "", "consume", topic, "-n", "4", "-f", `%t|%p|%o|%k|%v|%h|%K|%V\n`, "-b", b)
	want := strings.Join([]string{
		topic + "|0|0|k1|v1|src=test,eq=a=b|2|2",
		topic + "|0|1|k2|v:2|src=test,eq=a=b|2|3",
		topic + "|0|2||empty-key|src=test,eq=a=b|0|9",
		topic + "|0|3|k4||src=test,eq=a=b|2|0",
	}, "\n") + "\n"
	if r.stdout != want {
		t.Errorf("consume -f printed:\n%s\nwant:\n%s", r.stdout, want)
	}

	// Offsets: exact, relative to the end, relative to the start.
	for _, tc := range []struct{ offset, want string }{
		{"2", "2 3\n"},
		{"-1", "3\n"},
		{"+1", "1 2 3\n"},
		{"@0", "0 1 2 3\n"},
		{"start", "0 1 2 3\n"},
	} {
		n := strconv.Itoa(strings.Count(tc.want, " ") + 1)
		r := mustRun(t, "", "consume", topic, "-o", tc.offset, "-n", n, "-f", `%o `, "-b", b)
		if got := strings.TrimSpace(r.stdout) + "\n"; got != tc.want {
			t.Errorf("consume -o %s printed offsets %q, want %q", tc.offset, got, tc.want)
		}
	}

	// --json: one object per line, null key distinct from empty.
	mustRun(t, "plain\n", "produce", topic, "-b", b)
	r = mustRun(t, "", "consume", topic, "-o", "4", "-n", "1", "--json", "-b", b)
	var jr jsonRecord
	decodeJSON(t, r.stdout, &jr)
	if jr.Topic != topic || jr.Offset != 4 || jr.Key != nil || jr.Value == nil || *jr.Value != "plain" || len(jr.Headers) != 0 || jr.Timestamp <= 0 {
		t.Errorf("consume --json: %+v", jr)
	}
	r = mustRun(t, "", "consume", topic, "-o", "2", "-n", "1", "--format", "json", "-b", b)
	decodeJSON(t, r.stdout, &jr)
	if jr.Key == nil || *jr.Key != "" || len(jr.Headers) != 2 || jr.Headers[1].Key != "eq" || *jr.Headers[1].Value != "a=b" {
		t.Errorf("consume --format json of the empty-key record: %+v", jr)
	}
}

func TestProducePartitionKeyCompression(t *testing.T) {
	b := testBrokers(t)
	topic := uniqueTopic(t)
	mustRun(t, "", "topic", "create", topic, "-p", "3", "-r", "1", "-b", b)
	codecs := []string{"none", "gzip", "snappy", "lz4", "zstd"}
	for _, z := range codecs {
		mustRun(t, z+"-a\n"+z+"-b\n", "produce", topic, "--partition", "2", "-k", "fixed", "-z", z, "--acks", "1", "-b", b)
	}
	r := mustRun(t, "", "consume", topic, "--partition", "2", "-n", strconv.Itoa(2*len(codecs)), "-f", `%p %k %v\n`, "-b", b)
	var want strings.Builder
	for _, z := range codecs {
		want.WriteString("2 fixed " + z + "-a\n2 fixed " + z + "-b\n")
	}
	if r.stdout != want.String() {
		t.Errorf("consume --partition 2 printed:\n%s\nwant:\n%s", r.stdout, want.String())
	}
	if out := mustRun(t, "", "offsets", topic, "-b", b).stdout; out != topic+":0:0\n"+topic+":1:0\n"+topic+":2:10\n" {
		t.Errorf("offsets after producing to partition 2 only: %q", out)
	}
}

func TestConsumeGroupResumes(t *testing.T) {
	b := testBrokers(t)
	topic := uniqueTopic(t)
	mustRun(t, "", "topic", "create", topic, "-p", "1", "-r", "1", "-b", b)
	mustRun(t, "a\nb\nc\n", "produce", topic, "-b", b)
	group := topic + "-group"
	if out := mustRun(t, "", "consume", topic, "-g", group, "-n", "2", "-b", b).stdout; out != "a\nb\n" {
		t.Fatalf("first group consume printed %q", out)
	}
	// The group committed offset 2: the next member starts at "c".
	if out := mustRun(t, "", "consume", topic, "-g", group, "-n", "1", "-b", b).stdout; out != "c\n" {
		t.Errorf("second group consume printed %q, want %q", out, "c\n")
	}
}

func TestProduceErrors(t *testing.T) {
	b := testBrokers(t)
	topic := uniqueTopic(t)
	mustRun(t, "", "topic", "create", topic, "-p", "1", "-r", "1", "-b", b)

	r := mustFail(t, "k:v\nno-separator\n", "produce", topic, "-K", ":", "-b", b)
	if !strings.Contains(r.stderr, "line 2 has no key separator") {
		t.Errorf("stderr %q does not name the line without a separator", r.stderr)
	}
	r = mustFail(t, strings.Repeat("x", 100)+"\n", "produce", topic, "--max-message-bytes", "10", "-b", b)
	if !strings.Contains(r.stderr, "longer than --max-message-bytes") {
		t.Errorf("stderr %q does not name the long line", r.stderr)
	}
	// A line of exactly --max-message-bytes is fine.
	mustRun(t, "0123456789\n", "produce", topic, "--max-message-bytes", "10", "-b", b)
	for _, args := range [][]string{
		{"-z", "brotli"}, {"--acks", "2"}, {"-H", "novalue"}, {"-k", "k", "-K", ":"},
	} {
		mustFail(t, "x\n", append([]string{"produce", topic, "-b", b}, args...)...)
	}
	// The record before the bad line was produced.
	out := mustRun(t, "", "consume", topic, "-n", "1", "-f", `%k=%v\n`, "-b", b).stdout
	if out != "k=v\n" {
		t.Errorf("consume after the failed produce printed %q", out)
	}
}

func TestParseOffset(t *testing.T) {
	good := []string{"start", "oldest", "end", "newest", "0", "42", "-5", "+5", "@0", "@1700000000000"}
	for _, s := range good {
		if _, err := parseOffset(s); err != nil {
			t.Errorf("parseOffset(%q): %v", s, err)
		}
	}
	bad := []string{"", "x", "@", "@x", "@-1", "1.5", "--1"}
	for _, s := range bad {
		if _, err := parseOffset(s); err == nil {
			t.Errorf("parseOffset(%q) accepted", s)
		}
	}
}

func TestParseRecordFormat(t *testing.T) {
	bad := []string{"%", `\`, "%x", `\q`}
	for _, s := range bad {
		if _, err := parseRecordFormat(s); err == nil {
			t.Errorf("parseRecordFormat(%q) accepted", s)
		}
	}
	f, err := parseRecordFormat(`100%% %k\t%v\\n\r\n`)
	if err != nil {
		t.Fatal(err)
	}
	got := string(f.append(nil, testRecord()))
	if want := "100% key\tval\\n\r\n"; got != want {
		t.Errorf("format printed %q, want %q", got, want)
	}
}

func testRecord() *kgo.Record {
	return &kgo.Record{Topic: "t", Key: []byte("key"), Value: []byte("val")}
}

// A missing topic is an error at once, not a minute of retries (produce)
// or an endless wait (consume).
func TestProduceConsumeUnknownTopic(t *testing.T) {
	b := testBrokers(t)
	topic := uniqueTopic(t)
	for _, args := range [][]string{{"produce", topic}, {"consume", topic}} {
		r := mustFail(t, "x\n", append(args, "-b", b)...)
		if !strings.Contains(r.stderr, "unknown topic") {
			t.Errorf("wren %s on a missing topic: stderr %q", args[0], r.stderr)
		}
	}
}
