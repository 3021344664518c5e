package ops

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wren-broker/wren/internal/health"
)

// exposition is /metrics parsed: each family's type and its samples,
// series (name with labels, as written) to value.
type exposition struct {
	types   map[string]string
	samples map[string]float64
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelPair  = regexp.MustCompile(`^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)`)
)

// parseExposition parses Prometheus' text format 0.0.4 strictly: every
// family has one HELP and one TYPE line before its samples, every sample
// belongs to the family of the TYPE line before it (with the suffixes of
// its type), names and labels are well formed and escaped, no series is
// written twice, and a histogram's buckets rise to le="+Inf", which
// equals its _count when it has one.
func parseExposition(text string) (exposition, error) {
	e := exposition{types: map[string]string{}, samples: map[string]float64{}}
	family, typ := "", ""
	helped := map[string]bool{}
	type bucketState struct {
		le, count float64
		inf       bool
	}
	buckets := map[string]*bucketState{} // histogram series labels without le
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		fail := func(format string, args ...any) (exposition, error) {
			return e, fmt.Errorf("line %d %q: %s", n, line, fmt.Sprintf(format, args...))
		}
		if strings.HasPrefix(line, "# HELP ") {
			name, help, _ := strings.Cut(line[len("# HELP "):], " ")
			if !metricName.MatchString(name) || helped[name] || strings.Contains(help, `\`) {
				return fail("bad or repeated HELP")
			}
			helped[name] = true
			continue
		}
		if strings.HasPrefix(line, "# TYPE ") {
			f := strings.Split(line[len("# TYPE "):], " ")
			if len(f) != 2 || !helped[f[0]] || e.types[f[0]] != "" {
				return fail("TYPE without HELP, repeated, or malformed")
			}
			switch f[1] {
			case "counter", "gauge", "histogram", "summary", "untyped":
			default:
				return fail("unknown type")
			}
			family, typ = f[0], f[1]
			e.types[family] = typ
			continue
		}
		if line == "" || line[0] == '#' {
			return fail("a comment or blank line the server does not write")
		}
		// Label values may hold spaces; the value follows the last one.
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return fail("no value")
		}
		series, value := line[:i], line[i+1:]
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return fail("value: %v", err)
		}
		name, labels := series, ""
		if i := strings.IndexByte(series, '{'); i >= 0 {
			if !strings.HasSuffix(series, "}") {
				return fail("unclosed labels")
			}
			name, labels = series[:i], series[i+1:len(series)-1]
		}
		if !metricName.MatchString(name) {
			return fail("bad metric name")
		}
		seen := map[string]bool{}
		le, rest := "", []string{}
		for l := labels; l != ""; {
			m := labelPair.FindStringSubmatch(l)
			if m == nil || seen[m[1]] {
				return fail("bad or repeated label at %q", l)
			}
			seen[m[1]] = true
			if m[1] == "le" {
				le = m[2]
			} else {
				rest = append(rest, m[1]+"="+m[2])
			}
			l = l[len(m[0]):]
			if m[3] == "," && l == "" {
				return fail("trailing comma")
			}
		}
		suffix, ok := strings.CutPrefix(name, family)
		allowed := map[string][]string{"histogram": {"_bucket", "_sum", "_count"}, "summary": {"", "_sum", "_count"}}[typ]
		if allowed == nil {
			allowed = []string{""}
		}
		if !ok || !contains(allowed, suffix) {
			return fail("not a sample of family %s (%s)", family, typ)
		}
		if _, dup := e.samples[series]; dup {
			return fail("series written twice")
		}
		e.samples[series] = v
		if typ != "histogram" {
			continue
		}
		key := family + "{" + strings.Join(rest, ",") + "}"
		b := buckets[key]
		if b == nil {
			b = &bucketState{le: math.Inf(-1)}
			buckets[key] = b
		}
		switch suffix {
		case "_bucket":
			bound, err := strconv.ParseFloat(le, 64)
			if err != nil || bound <= b.le || v < b.count || b.inf {
				return fail("bucket bounds must rise, counts not fall, nothing after +Inf")
			}
			b.le, b.count, b.inf = bound, v, math.IsInf(bound, 1)
		case "_count":
			if !b.inf || v != b.count {
				return fail("_count %v differs from the +Inf bucket %v", v, b.count)
			}
		}
	}
	for key, b := range buckets {
		if !b.inf {
			return e, fmt.Errorf("histogram %s has no +Inf bucket", key)
		}
	}
	return e, sc.Err()
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestMetricsExposition: what the request path and the storage engine
// report comes out as valid text exposition with the values put in;
// awkward topic names come out escaped; the Go runtime's and the
// process's figures are there.
func TestMetricsExposition(t *testing.T) {
	m := NewMetrics()
	produce, fetch := int16(0), int16(1)
	for i, took := range []time.Duration{50 * time.Microsecond, 3 * time.Millisecond, 20 * time.Second} {
		m.RequestDone(produce, 100, 10, took)
		if i == 0 {
			m.RequestDone(fetch, 50, 5000, took)
		}
	}
	m.RequestDone(-1, 7, 0, 0) // an unknown key counts bytes only
	odd := "q\"uo\\te\nnewline ü"
	m.Produced(odd, 3, 300)
	m.Produced("plain", 1, 10)
	m.Fetched("plain", 40)
	m.ObserveSync(time.Millisecond, 4, nil)
	m.ObserveSync(0, 0, fmt.Errorf("EIO"))
	m.ConnectionRefused()
	m.AuthorizationDenied("topic")
	m.AuthorizationDenied("topic")
	m.AuthorizationDenied("cluster")
	m.Attach(Sources{
		Version: "v1.2.3", Commit: "abc",
		Connections:          func() int { return 2 },
		ProducerIDsAvailable: func() int64 { return 1042 },
		RequestBudget: func() RequestBudgetStats {
			return RequestBudgetStats{Waiting: 3, OldestWait: 1500 * time.Millisecond, Waited: 40, Preempted: 5, FrameDeadlines: 6, Evicted: 7}
		},
		Health: func() health.ClusterHealth {
			h := health.ClusterHealth{ControllerID: 3, Nodes: []int32{1, 2, 3}, DownNodes: []int32{2},
				DamagedPartitions: []health.DamagedPartition{{Node: 1, Partition: "t/0"}, {Node: 3, Partition: "t/0"}},
				LogDirsBelowFloor: []health.LogDirBelowFloor{{Node: 3, Dir: "/d"}}, ControlPlane: health.ControlPlane{FencedNodes: []int32{1}},
				StarvedNodes: []health.StarvedNode{{Node: 2, Waiting: 3}}}
			h.Evaluate()
			return h
		},
	})
	var b bytes.Buffer
	m.WritePrometheus(&b)
	e, err := parseExposition(b.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	want := map[string]float64{
		`wren_kafka_requests_total{request="Produce"}`:                                   3,
		`wren_kafka_requests_total{request="Fetch"}`:                                     1,
		`wren_authorization_denials_total{resource_type="topic"}`:                        2,
		`wren_authorization_denials_total{resource_type="cluster"}`:                      1,
		`wren_kafka_request_latency_seconds_bucket{request="Produce",le="0.0001"}`:       1,
		`wren_kafka_request_latency_seconds_bucket{request="Produce",le="0.0032"}`:       2,
		`wren_kafka_request_latency_seconds_bucket{request="Produce",le="13.1072"}`:      2,
		`wren_kafka_request_latency_seconds_bucket{request="Produce",le="+Inf"}`:         3,
		`wren_kafka_request_latency_seconds_count{request="Produce"}`:                    3,
		`wren_kafka_received_bytes_total`:                                                357,
		`wren_kafka_sent_bytes_total`:                                                    5030,
		`wren_kafka_records_produced_total{topic="q\"uo\\te\nnewline ü"}`:                3,
		`wren_kafka_request_bytes_total{request="produce",topic="q\"uo\\te\nnewline ü"}`: 300,
		`wren_kafka_request_bytes_total{request="consume",topic="plain"}`:                40,
		`wren_storage_fdatasync_errors_total`:                                            1,
		`wren_storage_fdatasync_latency_seconds_count`:                                   1,
		`wren_storage_group_commit_batch_appends_bucket{le="4"}`:                         1,
		`wren_storage_group_commit_batch_appends_bucket{le="2"}`:                         0,
		`wren_storage_group_commit_batch_appends_sum`:                                    4,
		`wren_kafka_connections_refused_total`:                                           1,
		`wren_kafka_connections_open`:                                                    2,
		`wren_build_info{version="v1.2.3",commit="abc"}`:                                 1,
		`wren_cluster_brokers`:                                                           3,
		`wren_cluster_brokers_down`:                                                      2,
		`wren_cluster_brokers_fenced`:                                                    1,
		`wren_cluster_healthy`:                                                           0,
		`wren_cluster_damaged_partitions`:                                                2,
		`wren_cluster_log_dirs_below_free_space_floor`:                                   1,
		`wren_cluster_offline_log_dirs`:                                                  0,
		`wren_cluster_controller_id`:                                                     3,
		`wren_producer_ids_available`:                                                    1042,
		`wren_kafka_request_budget_waiting`:                                              3,
		`wren_kafka_request_budget_oldest_wait_seconds`:                                  1.5,
		`wren_kafka_request_budget_waited_total`:                                         40,
		`wren_kafka_request_frames_too_slow_total`:                                       5,
		`wren_kafka_request_frame_deadlines_total`:                                       6,
		`wren_kafka_connections_evicted_total`:                                           7,
		`wren_cluster_request_budget_starved_nodes`:                                      1,
	}
	for series, v := range want {
		if got, ok := e.samples[series]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, v)
		}
	}
	if got := e.samples[`wren_kafka_request_latency_seconds_sum{request="Produce"}`]; math.Abs(got-20.00305) > 1e-9 {
		t.Errorf("Produce latency sum %v, want 20.00305", got)
	}
	for name, typ := range map[string]string{
		"go_goroutines": "gauge", "go_gc_duration_seconds": "summary", "go_memstats_heap_alloc_bytes": "gauge",
		"go_gc_cpu_seconds_total": "counter", "go_sched_latencies_seconds": "histogram", "go_info": "gauge",
		"process_resident_memory_bytes": "gauge", "process_cpu_seconds_total": "counter", "process_open_fds": "gauge",
		"process_max_fds": "gauge", "process_start_time_seconds": "gauge", "process_virtual_memory_bytes": "gauge",
	} {
		if e.types[name] != typ {
			t.Errorf("%s has type %q, want %q", name, e.types[name], typ)
		}
	}
	if v := e.samples["go_goroutines"]; v < 1 {
		t.Errorf("go_goroutines = %v", v)
	}
	if v := e.samples["process_resident_memory_bytes"]; v < 1<<20 {
		t.Errorf("process_resident_memory_bytes = %v, below 1 MiB", v)
	}
	if v := e.samples["process_open_fds"]; v < 3 {
		t.Errorf("process_open_fds = %v", v)
	}
	if v := e.samples["process_start_time_seconds"]; math.Abs(v-float64(time.Now().Unix())) > 24*3600 {
		t.Errorf("process_start_time_seconds = %v, more than a day from now", v)
	}
	promtoolCheck(t, b.Bytes())
}

// legacyLint are promtool's complaints about names kept for dashboards
// made for the Prometheus and VictoriaMetrics Go clients.
var legacyLint = []string{
	`go_cgo_calls_count counter metrics should have "_total" suffix`,
	`go_cgo_calls_count non-histogram and non-summary metrics should not have "_count" suffix`,
	`go_cpu_count non-histogram and non-summary metrics should not have "_count" suffix`,
	`go_gc_forced_count counter metrics should have "_total" suffix`,
	`go_gc_forced_count non-histogram and non-summary metrics should not have "_count" suffix`,
}

// promtoolCheck runs Prometheus' own `promtool check metrics` over text
// when promtool is installed (CI installs it): it must parse, and lint
// nothing but legacyLint.
func promtoolCheck(t *testing.T, text []byte) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Log("promtool not installed: the exposition is checked by parseExposition only")
		return
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	out, err := cmd.CombinedOutput()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line != "" && !contains(legacyLint, line) {
			t.Errorf("promtool check metrics: %s (%v)", line, err)
		}
	}
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 3) {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestParseExpositionRejects: the parser the other tests lean on refuses
// what the format forbids.
func TestParseExpositionRejects(t *testing.T) {
	good := "# HELP a_total x\n# TYPE a_total counter\na_total{l=\"v\"} 1\n"
	if _, err := parseExposition(good); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		"a_total 1\n", // no TYPE
		"# HELP a_total x\n# TYPE a_total counter\na_total 1\na_total 2\n",
		"# HELP a_total x\n# TYPE a_total counter\na_total{l=\"v\\x\"} 1\n",
		"# HELP a_total x\n# TYPE a_total counter\na_total{l=\"v\",} 1\n",
		"# HELP a_total x\n# TYPE a_total counter\nb_total 1\n",
		"# HELP a_total x\n# TYPE a_total counter\na_total one\n",
		"# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_count 2\n",
		"# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_count 3\n",
		"# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\n",
	} {
		if _, err := parseExposition(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"topic.a-b_c": `"topic.a-b_c"`,
		`g"1`:         `"g\"1"`,
		`a\b`:         `"a\\b"`,
		"x\ny":        `"x\ny"`,
		"grüße":       `"grüße"`,
	} {
		if got := quote(in); got != want {
			t.Errorf("quote(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestTopicSeriesBounded: topics past maxTopicSeries share one series.
func TestTopicSeriesBounded(t *testing.T) {
	m := NewMetrics()
	for i := range maxTopicSeries + 10 {
		m.Produced(fmt.Sprintf("t%d", i), 1, 1)
	}
	var b strings.Builder
	m.WritePrometheus(&b)
	n := strings.Count(b.String(), "wren_kafka_records_produced_total{")
	if n != maxTopicSeries+1 {
		t.Fatalf("%d topic series, want %d and one %s", n, maxTopicSeries+1, otherTopic)
	}
	if !strings.Contains(b.String(), `wren_kafka_records_produced_total{topic="_other"} 10`) {
		t.Fatalf("the 10 topics past the limit are not counted under %s", otherTopic)
	}
}

// TestMetricsProduceLatency: the histograms of where a produce's time
// went take each observation in its bucket, and cost no allocation (they
// are on the append, fetch and answer paths).
func TestMetricsProduceLatency(t *testing.T) {
	m := NewMetrics()
	m.ProduceDone(2*time.Millisecond, 30*time.Millisecond)
	m.ProduceDone(0, 150*time.Microsecond)
	m.LeaderDurable(80 * time.Microsecond)
	m.AcksAllISRWait(5 * time.Millisecond)
	m.FollowerAppend(3 * time.Second)
	var b bytes.Buffer
	m.WritePrometheus(&b)
	e, err := parseExposition(b.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	for series, v := range map[string]float64{
		`wren_kafka_produce_handled_seconds_count`:                       2,
		`wren_kafka_produce_handled_seconds_bucket{le="0.0002"}`:         1,
		`wren_kafka_produce_handled_seconds_bucket{le="0.0256"}`:         1,
		`wren_kafka_produce_handled_seconds_bucket{le="0.0512"}`:         2,
		`wren_kafka_produce_queued_seconds_bucket{le="0.0001"}`:          1,
		`wren_kafka_produce_queued_seconds_bucket{le="0.0032"}`:          2,
		`wren_replication_leader_durable_seconds_bucket{le="0.0001"}`:    1,
		`wren_replication_leader_durable_seconds_bucket{le="5e-05"}`:     0,
		`wren_replication_acks_all_isr_wait_seconds_bucket{le="0.0064"}`: 1,
		`wren_replication_acks_all_isr_wait_seconds_bucket{le="0.0032"}`: 0,
		`wren_replication_follower_append_seconds_bucket{le="+Inf"}`:     1,
		`wren_replication_follower_append_seconds_bucket{le="1.6384"}`:   0,
		`wren_replication_follower_append_seconds_count`:                 1,
	} {
		if got, ok := e.samples[series]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, v)
		}
	}
	for name, observe := range map[string]func(){
		"ProduceDone":    func() { m.ProduceDone(time.Millisecond, 2*time.Millisecond) },
		"LeaderDurable":  func() { m.LeaderDurable(time.Millisecond) },
		"AcksAllISRWait": func() { m.AcksAllISRWait(time.Millisecond) },
		"FollowerAppend": func() { m.FollowerAppend(time.Millisecond) },
	} {
		if n := testing.AllocsPerRun(100, observe); n != 0 {
			t.Errorf("%s allocates %v times per observation", name, n)
		}
	}
	promtoolCheck(t, b.Bytes())
}
