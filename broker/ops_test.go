package broker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/wren-broker/wren/cli"
	"github.com/wren-broker/wren/internal/health"
	"github.com/wren-broker/wren/internal/vfs"
)

// httpGet fetches path from the broker's HTTP server: status and body.
func httpGet(t *testing.T, b *Broker, path string) (int, string) {
	t.Helper()
	c := http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get("http://" + b.HTTPAddr().String() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, string(body)
}

// scrape parses /metrics: series (name with labels, as written) to value.
// Every non-comment line must be "series value", and every family a TYPE
// line names must be one the text format knows.
func scrape(t *testing.T, b *Broker) map[string]float64 {
	t.Helper()
	code, body := httpGet(t, b, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "# TYPE ") {
			f := strings.Fields(line)
			if len(f) != 4 || !map[string]bool{"counter": true, "gauge": true, "histogram": true, "summary": true, "untyped": true}[f[3]] {
				t.Fatalf("/metrics: bad TYPE line %q", line)
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("/metrics: line without a value: %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("/metrics: line %q: %v", line, err)
		}
		if _, dup := out[line[:i]]; dup {
			t.Fatalf("/metrics: series %s written twice", line[:i])
		}
		out[line[:i]] = v
	}
	return out
}

// family sums the series of one metric name, whatever their labels.
func family(m map[string]float64, name string) (sum float64, found bool) {
	for k, v := range m {
		if k == name || strings.HasPrefix(k, name+"{") {
			sum += v
			found = true
		}
	}
	return sum, found
}

// clusterHealthCLI runs `wren cluster health` against b: exit status and
// output.
func clusterHealthCLI(t *testing.T, b *Broker, args ...string) (int, string) {
	var out, errOut bytes.Buffer
	code := cli.Main(context.Background(), cli.Env{Stdout: &out, Stderr: &errOut},
		append([]string{"wren", "cluster", "health", "-b", b.Addr().String(), "--timeout", "30s"}, args...))
	return code, out.String() + errOut.String()
}

// TestOpsEndpoints produces and consumes with franz-go, then checks that
// /metrics names every documented family and that the counters moved by
// what the load did; that /livez, /readyz, /v1/cluster/health and
// `wren cluster health` say healthy; and, once an fdatasync of the log dir
// fails, that /readyz answers 503 with the reason and `wren cluster
// health` exits 1, both from health.ClusterHealth.Evaluate.
func TestOpsEndpoints(t *testing.T) {
	fs := vfs.NewFaultFS(vfs.NewOS())
	dir := t.TempDir()
	b, err := Start(testConfig(t, dir, ""), Options{FS: fs, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ctx := testContext(t)
	before := scrape(t, b)

	if code, body := httpGet(t, b, "/livez"); code != http.StatusOK {
		t.Fatalf("/livez: %d %s", code, body)
	}
	// Start returns with the client listener bound; it is accepting a
	// moment later (a goroutine serves it), and /readyz says so then.
	var code int
	var body string
	pollFor(t, "/readyz ok", 10*time.Second, func() bool {
		code, body = httpGet(t, b, "/readyz")
		return code == http.StatusOK && strings.TrimSpace(body) == "ok"
	})
	code, body = httpGet(t, b, "/v1/cluster/health")
	var h health.ClusterHealth
	if err := json.Unmarshal([]byte(body), &h); code != http.StatusOK || err != nil {
		t.Fatalf("/v1/cluster/health: %d %v %s", code, err, body)
	}
	if !h.Healthy || h.ControllerID != 1 || len(h.Nodes) != 1 || h.Nodes[0] != 1 || len(h.UnhealthyReasons) != 0 {
		t.Fatalf("/v1/cluster/health of a healthy node: %+v", h)
	}
	if code, out := clusterHealthCLI(t, b); code != 0 || !strings.Contains(out, "Healthy:                            true") {
		t.Fatalf("wren cluster health on a healthy node: exit %d\n%s", code, out)
	}

	// Load: 500 records to one partition, a consumer that reads them all,
	// and a group that committed offset 100.
	const records = 500
	cl, adm := newClient(t, b, kgo.DefaultProduceTopic("m"), kgo.ConsumeTopics("m"))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "m"); err != nil {
		t.Fatal(err)
	}
	for i := range records {
		cl.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("record %d", i))}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for got := 0; got < records; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume after %d records: %v", got, err)
		}
		got += fs.NumRecords()
	}
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "m", Partition: 0, At: 100, LeaderEpoch: -1})
	if resp, err := adm.CommitOffsets(ctx, "g", offsets); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}

	after := scrape(t, b)
	for _, name := range []string{
		"wren_build_info", "wren_kafka_requests_total", "wren_kafka_request_latency_seconds_bucket",
		"wren_kafka_received_bytes_total", "wren_kafka_sent_bytes_total", "wren_kafka_records_produced_total",
		"wren_kafka_request_bytes_total", "wren_storage_fdatasync_latency_seconds_bucket",
		"wren_storage_fdatasync_errors_total", "wren_storage_group_commit_batch_appends_bucket",
		"wren_storage_log_partitions", "wren_storage_log_segments", "wren_storage_log_bytes",
		"wren_storage_log_dir_failed", "wren_storage_disk_free_bytes", "wren_storage_disk_total_bytes",
		"wren_kafka_connections_open", "wren_kafka_connections_refused_total", "wren_kafka_consumer_group_lag_sum",
		"wren_kafka_consumer_group_lag_max", "wren_kafka_producer_ids_tracked", "wren_cluster_brokers",
		"wren_cluster_brokers_down", "wren_cluster_controller_id", "wren_cluster_unavailable_partitions",
		"wren_kafka_under_replicated_replicas", "wren_kafka_request_budget_waiting", "wren_kafka_request_frames_too_slow_total",
		"wren_kafka_connections_evicted_total", "wren_cluster_request_budget_starved_nodes",
		"wren_kafka_produce_handled_seconds_bucket", "wren_kafka_produce_queued_seconds_bucket",
		"wren_replication_leader_durable_seconds_bucket", "wren_replication_acks_all_isr_wait_seconds_bucket",
		"wren_replication_follower_append_seconds_bucket", "wren_replication_follower_fetch_expired_total",
		"wren_replication_follower_fetch_failures_total",
		"go_goroutines", "go_gc_duration_seconds", "process_resident_memory_bytes",
	} {
		if _, ok := family(after, name); !ok {
			t.Errorf("/metrics has no %s", name)
		}
	}
	want := map[string]float64{
		`wren_kafka_records_produced_total{topic="m"}`:       records,
		`wren_kafka_consumer_group_lag_sum{group="g"}`:       records - 100,
		`wren_kafka_consumer_group_lag_max{group="g"}`:       records - 100,
		`wren_storage_log_dir_failed{log_dir="` + dir + `"}`: 0,
		`wren_cluster_brokers`:                               1,
		`wren_cluster_unavailable_partitions`:                0,
		`wren_kafka_producer_ids_tracked`:                    1, // franz-go is idempotent by default
	}
	for series, v := range want {
		if got, ok := after[series]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, v)
		}
	}
	moved := []string{
		`wren_kafka_requests_total{request="Produce"}`, `wren_kafka_requests_total{request="Fetch"}`,
		`wren_kafka_request_latency_seconds_count{request="Produce"}`,
		`wren_kafka_request_bytes_total{request="produce",topic="m"}`, `wren_kafka_request_bytes_total{request="consume",topic="m"}`,
		"wren_kafka_received_bytes_total", "wren_kafka_sent_bytes_total",
		"wren_storage_fdatasync_latency_seconds_count", "wren_storage_group_commit_batch_appends_count",
		"wren_storage_group_commit_batch_appends_sum",
		// franz-go produces with acks=all: one replica, its own ISR.
		"wren_kafka_produce_handled_seconds_count", "wren_kafka_produce_queued_seconds_count",
		"wren_replication_leader_durable_seconds_count", "wren_replication_acks_all_isr_wait_seconds_count",
	}
	for _, series := range moved {
		if after[series] <= before[series] {
			t.Errorf("%s did not move under load: %v before, %v after", series, before[series], after[series])
		}
	}
	if got := after[`wren_kafka_request_bytes_total{request="produce",topic="m"}`]; got < float64(records*len("record 0")) {
		t.Errorf("produce bytes of topic m: %v, want at least the values' %d", got, records*len("record 0"))
	}
	if v, _ := family(after, "wren_kafka_connections_open"); v < 1 {
		t.Errorf("wren_kafka_connections_open = %v with a client connected", v)
	}
	if v, _ := family(after, "wren_storage_log_partitions"); v < 1 {
		t.Errorf("wren_storage_log_partitions = %v with topic m created", v)
	}

	// The log dir fails: every check turns unhealthy, for the same reason.
	fs.Inject(vfs.Fault{Op: vfs.OpSyncData, Path: func(name string) bool { return strings.Contains(name, "/m-0/") }})
	// franz-go retries KAFKA_STORAGE_ERROR; one answer is all this needs.
	pc, _ := newClient(t, b, kgo.DefaultProduceTopic("m"), kgo.RecordRetries(1), kgo.DisableIdempotentWrite())
	if err := pc.ProduceSync(ctx, &kgo.Record{Value: []byte("lost")}).FirstErr(); err == nil {
		t.Fatal("a produce with a failing fdatasync was acknowledged")
	}
	code, body = httpGet(t, b, "/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, health.ReasonOfflineLogDirs) {
		t.Fatalf("/readyz with a failed log dir: %d %s", code, body)
	}
	if err := b.Ready(); err == nil || !strings.Contains(body, err.Error()) {
		t.Fatalf("Ready() = %v, /readyz said %q", err, body)
	}
	if code, out := clusterHealthCLI(t, b); code != 1 || !strings.Contains(out, health.ReasonOfflineLogDirs) {
		t.Fatalf("wren cluster health with a failed log dir: exit %d\n%s", code, out)
	}
	code, body = httpGet(t, b, "/v1/cluster/health")
	h = health.ClusterHealth{}
	if err := json.Unmarshal([]byte(body), &h); err != nil || code != http.StatusOK || h.Healthy || len(h.OfflineLogDirs) != 1 {
		t.Fatalf("/v1/cluster/health with a failed log dir: %d %s", code, body)
	}
	if code, _ := httpGet(t, b, "/livez"); code != http.StatusOK {
		t.Fatalf("/livez with a failed log dir: %d; the process still serves", code)
	}
	failed := scrape(t, b)
	if failed[`wren_storage_log_dir_failed{log_dir="`+dir+`"}`] != 1 || failed["wren_storage_fdatasync_errors_total"] < 1 {
		t.Fatalf("after the failure: log_dir_failed %v, fdatasync errors %v",
			failed[`wren_storage_log_dir_failed{log_dir="`+dir+`"}`], failed["wren_storage_fdatasync_errors_total"])
	}
}

// TestMetricsPerBroker: two brokers in one process keep their own series.
func TestMetricsPerBroker(t *testing.T) {
	b1 := startBroker(t, testConfig(t, t.TempDir(), ""))
	b2 := startBroker(t, testConfig(t, t.TempDir(), ""))
	ctx := testContext(t)
	cl, adm := newClient(t, b1, kgo.DefaultProduceTopic("one"))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "one"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got := scrape(t, b1)[`wren_kafka_records_produced_total{topic="one"}`]; got != 1 {
		t.Fatalf("broker 1 counted %v records of topic one, want 1", got)
	}
	if got, ok := scrape(t, b2)[`wren_kafka_records_produced_total{topic="one"}`]; ok {
		t.Fatalf("broker 2 counted %v records of broker 1's topic", got)
	}
}

// TestHTTPListenTaken: a taken http.listen address fails Start with the
// key's name, and frees what Start opened.
func TestHTTPListenTaken(t *testing.T) {
	b1 := startBroker(t, testConfig(t, t.TempDir(), ""))
	cfg := testConfig(t, t.TempDir(), "")
	cfg.HTTPListen = b1.HTTPAddr().String()
	b2, err := Start(cfg, Options{Logger: testLogger(t)})
	if err == nil {
		b2.Close()
		t.Fatal("Start with a taken http.listen succeeded")
	}
	if !strings.Contains(err.Error(), "http.listen") {
		t.Fatalf("error does not name http.listen: %v", err)
	}
	// Each part once: "broker: ops: ops: http.listen ADDR: listen tcp
	// ADDR: ..." said the component and the address twice.
	if msg := err.Error(); !strings.HasPrefix(msg, "broker: ops: http.listen: listen tcp ") || strings.Count(msg, cfg.HTTPListen) != 1 {
		t.Fatalf("error %q, want \"broker: ops: http.listen: listen tcp %s: ...\"", msg, cfg.HTTPListen)
	}
}

// TestReadyzWhileStartingAndStopping: the HTTP server opens before the log
// dirs are recovered; until Start finishes /livez is 200 and /readyz and
// /v1/cluster/health are 503 with the reason, and so is /readyz once the
// shutdown began.
func TestReadyzWhileStartingAndStopping(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), "")
	s, err := startOps(cfg, Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Get("http://" + s.http.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("/livez"); code != http.StatusOK {
		t.Fatalf("/livez while starting: %d %s", code, body)
	}
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "starting") {
		t.Fatalf("/readyz while starting: %d %s", code, body)
	}
	if code, body := get("/v1/cluster/health"); code != http.StatusServiceUnavailable {
		t.Fatalf("/v1/cluster/health while starting: %d %s", code, body)
	}
	s.phase.Store(phaseStopping)
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "shutting down") {
		t.Fatalf("/readyz while stopping: %d %s", code, body)
	}
}
