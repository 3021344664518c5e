package ops

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/groups"
	"github.com/wren-broker/wren/groups/coordinator"
	"github.com/wren-broker/wren/internal/health"
	"github.com/wren-broker/wren/replication"
	"github.com/wren-broker/wren/uplink"
)

// Limits on series that grow from outside input.
const (
	// maxAPIKeys bounds the per-API-key slots; every key in the API table
	// is below it.
	maxAPIKeys = 128
	// maxTopicSeries bounds the topics with series of their own; the
	// records of any further topic count under topic="_other".
	maxTopicSeries = 1000
	// maxGroupSeries bounds the consumer groups whose lag one scrape
	// reports.
	maxGroupSeries = 1000
	// groupLagTimeout bounds the time one scrape waits for the group
	// coordinator.
	groupLagTimeout = 2 * time.Second
)

// otherTopic is the label value for topics past maxTopicSeries.
const otherTopic = "_other"

// Histogram buckets, in the unit of the metric's name.
var (
	// requestLatencyBuckets span 100 µs to 13 s: a Produce waits for an
	// fdatasync, a Fetch long poll for up to its MaxWaitMillis.
	requestLatencyBuckets = exponentialBuckets(0.0001, 2, 18)
	// syncLatencyBuckets span 50 µs (NVMe with a write cache) to 1.6 s (an
	// SD card).
	syncLatencyBuckets = exponentialBuckets(0.00005, 2, 16)
	// batchBuckets span 1 to 1024 appends per fdatasync.
	batchBuckets = exponentialBuckets(1, 2, 11)
)

// Metrics is one broker's metrics: a metricSet of its own (so several
// brokers in one process, as in tests, do not share series), the Observer
// the Kafka server reports requests to, the SyncObserver the storage
// engine reports fdatasyncs to, and gauges read from the broker's parts
// at scrape time (Attach).
//
// The request path touches only atomics and a histogram's own mutex: the
// series of an API key are made on its first request and found again by
// indexing an array; a topic's series are found in a sync.Map by the
// topic's name, which the request already holds.
type Metrics struct {
	set *metricSet

	// mu serialises making series.
	mu     sync.Mutex
	apis   [maxAPIKeys]atomic.Pointer[apiMetrics]
	topics sync.Map // topic name -> *topicMetrics
	// topicSeries counts the topics in topics; guarded by mu.
	topicSeries int

	received, sent *counter
	refused        *counter
	// throttled and throttleMs count client quota throttles by quota
	// type (quotaTypes' order); throttleMs counts milliseconds, exposed
	// as seconds.
	throttled, throttleMs [3]*counter
	syncLatency           *histogram
	syncErrors            *counter
	commitBatch           *histogram

	// Where a produce's time went (ProduceDone, replication.Observer).
	produceHandled, produceQueued *histogram
	leaderDurable, acksAllISRWait *histogram
	followerAppend                *histogram

	sources atomic.Pointer[Sources]
}

type apiMetrics struct {
	requests *counter
	latency  *histogram
}

type topicMetrics struct {
	recordsProduced *counter
	bytesProduced   *counter
	bytesFetched    *counter
}

// Sources are the broker's parts that scrape-time gauges read. Any field
// may be nil: its gauges are then left out.
type Sources struct {
	Logs     *engine.Manager
	Replicas *replication.Manager
	Groups   *coordinator.Driver
	// Connections is the number of open client connections.
	Connections func() int
	// RequestBudget is the state of the client listener's request
	// budget and connection slots.
	RequestBudget func() RequestBudgetStats
	// Health is the cluster as this node sees it.
	Health func() health.ClusterHealth
	// Quorum is this node's part in the metadata quorum (false on a
	// single voter).
	Quorum func() (cluster.QuorumStats, bool)
	// ProducerIDsAvailable is how many producer ids the broker holds and
	// can hand out without the controller.
	ProducerIDsAvailable func() int64
	// Uplinks are the running [uplink.NAME] links' states.
	Uplinks func() []uplink.Status
	// Version and Commit label wren_build_info.
	Version, Commit string
}

// NewMetrics returns an empty Metrics.
func NewMetrics() *Metrics {
	m := &Metrics{set: newMetricSet()}
	m.received = m.set.counter("wren_kafka_received_bytes_total", "", "bytes of Kafka requests received")
	m.sent = m.set.counter("wren_kafka_sent_bytes_total", "", "bytes of Kafka responses sent")
	m.refused = m.set.counter("wren_kafka_connections_refused_total", "", "client connections refused at the connection limit")
	for i, q := range quotaTypes {
		m.throttled[i] = m.set.counter("wren_kafka_quota_throttled_responses_total", "quota="+quote(q),
			"responses throttled by a client quota, by the quota type that decided the throttle")
		m.throttleMs[i] = m.set.scaledCounter("wren_kafka_quota_throttle_seconds_total", "quota="+quote(q),
			"throttle time given to clients over a quota (throttle_time_ms, the connection muted as long), by quota type", 0.001)
	}
	m.syncLatency = m.set.histogram("wren_storage_fdatasync_latency_seconds", "", "time one group-commit fdatasync took", syncLatencyBuckets)
	m.syncErrors = m.set.counter("wren_storage_fdatasync_errors_total", "", "group-commit fdatasyncs that failed")
	m.commitBatch = m.set.histogram("wren_storage_group_commit_batch_appends", "", "appends made durable by one fdatasync", batchBuckets)
	m.produceHandled = m.set.histogram("wren_kafka_produce_handled_seconds", "",
		"time from reading a Produce request to writing its answer (acks=0: to its appends being durable)", requestLatencyBuckets)
	m.produceQueued = m.set.histogram("wren_kafka_produce_queued_seconds", "",
		"time a Produce request waited, after it was read, for the answers before it on its connection to be written", requestLatencyBuckets)
	m.leaderDurable = m.set.histogram("wren_replication_leader_durable_seconds", "",
		"time from a leader's append to its being durable (fdatasync under log.flush.policy ack, group commit included)", syncLatencyBuckets)
	m.acksAllISRWait = m.set.histogram("wren_replication_acks_all_isr_wait_seconds", "",
		"time an acks=all append waited for the ISR: from the later of its being durable on the leader and its answer being awaited, to the high watermark passing it", requestLatencyBuckets)
	m.followerAppend = m.set.histogram("wren_replication_follower_append_seconds", "",
		"time a follower took to append one partition's records from a fetch response (durably under log.flush.policy ack)", syncLatencyBuckets)
	return m
}

// ProduceDone implements kafka.ProduceObserver.
func (m *Metrics) ProduceDone(queued, handled time.Duration) {
	m.produceQueued.Observe(queued.Seconds())
	m.produceHandled.Observe(handled.Seconds())
}

// LeaderDurable implements replication.Observer.
func (m *Metrics) LeaderDurable(d time.Duration) { m.leaderDurable.Observe(d.Seconds()) }

// AcksAllISRWait implements replication.Observer.
func (m *Metrics) AcksAllISRWait(d time.Duration) { m.acksAllISRWait.Observe(d.Seconds()) }

// FollowerAppend implements replication.Observer.
func (m *Metrics) FollowerAppend(d time.Duration) { m.followerAppend.Observe(d.Seconds()) }

// Attach sets the parts that scrape-time gauges read, once the broker has
// them.
func (m *Metrics) Attach(src Sources) { m.sources.Store(&src) }

// WritePrometheus writes every metric in Prometheus' text format (0.0.4),
// the Go runtime's and the process's (RSS, goroutines, GC, file
// descriptors, CPU time) included.
func (m *Metrics) WritePrometheus(w io.Writer) {
	bw := bufio.NewWriter(w)
	m.set.write(bw)
	m.writeScraped(bw)
	writeGoMetrics(bw)
	writeProcessMetrics(bw)
	bw.Flush()
}

// RequestDone implements kafka.Observer.
func (m *Metrics) RequestDone(key int16, requestBytes, responseBytes int64, took time.Duration) {
	m.received.Add(requestBytes)
	m.sent.Add(responseBytes)
	if key < 0 || int(key) >= maxAPIKeys {
		return
	}
	a := m.apis[key].Load()
	if a == nil {
		a = m.makeAPI(key)
	}
	a.requests.Inc()
	a.latency.Observe(took.Seconds())
}

func (m *Metrics) makeAPI(key int16) *apiMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a := m.apis[key].Load(); a != nil {
		return a
	}
	label := quote(kmsg.NameForKey(key))
	a := &apiMetrics{
		requests: m.set.counter("wren_kafka_requests_total", "request="+label, "Kafka requests served, by API"),
		latency: m.set.histogram("wren_kafka_request_latency_seconds", "request="+label,
			"time from reading a Kafka request to writing its response, by API", requestLatencyBuckets),
	}
	m.apis[key].Store(a)
	return a
}

// SASLAuthentication implements kafka.AuthObserver: authentications by
// listener, mechanism ("" when the client failed before choosing one), and
// result, re-authentications (KIP-368) apart. The labels take few values:
// the configured listeners and the served mechanisms.
func (m *Metrics) SASLAuthentication(listener, mechanism string, ok, reauth bool) {
	result := "failure"
	if ok {
		result = "success"
	}
	name, help := "wren_sasl_authentications_total", "SASL authentications, by listener, mechanism and result"
	if reauth {
		name, help = "wren_sasl_reauthentications_total", "SASL re-authentications (KIP-368), by listener, mechanism and result"
	}
	m.set.counter(name, "listener="+quote(listener)+",mechanism="+quote(mechanism)+",result="+quote(result), help).Inc()
}

// AuthorizationDenied implements kafka.AuthzObserver: refused
// authorizations, by resource type (a handful of values).
func (m *Metrics) AuthorizationDenied(resourceType string) {
	m.set.counter("wren_authorization_denials_total", "resource_type="+quote(resourceType),
		"requests or items of requests refused by the authorizer, by resource type").Inc()
}

// quotaTypes are the client quota types kafka.QuotaObserver names.
var quotaTypes = [...]string{"produce", "fetch", "request"}

// Throttled implements kafka.QuotaObserver.
func (m *Metrics) Throttled(quota string, throttle time.Duration) {
	for i, q := range quotaTypes {
		if q == quota {
			m.throttled[i].Inc()
			m.throttleMs[i].Add(throttle.Milliseconds())
			return
		}
	}
}

// TLSHandshakeFailed implements kafka.TLSObserver: failed TLS handshakes
// by listener and reason (timeout, not_tls, closed, refused), a few
// values each.
func (m *Metrics) TLSHandshakeFailed(listener, reason string) {
	m.set.counter("wren_tls_handshake_failures_total", "listener="+quote(listener)+",reason="+quote(reason),
		"TLS handshakes that failed on the SSL and SASL_SSL listeners, by listener and reason").Inc()
}

// ConnectionRefused implements kafka.Observer.
func (m *Metrics) ConnectionRefused() { m.refused.Inc() }

// Produced implements kafka.Observer.
func (m *Metrics) Produced(topic string, records, bytes int64) {
	t := m.topic(topic)
	t.recordsProduced.Add(records)
	t.bytesProduced.Add(bytes)
}

// Fetched implements kafka.Observer.
func (m *Metrics) Fetched(topic string, bytes int64) {
	m.topic(topic).bytesFetched.Add(bytes)
}

func (m *Metrics) topic(name string) *topicMetrics {
	if t, ok := m.topics.Load(name); ok {
		return t.(*topicMetrics)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.topics.Load(name); ok {
		return t.(*topicMetrics)
	}
	label := name
	if m.topicSeries >= maxTopicSeries {
		label = otherTopic
		if t, ok := m.topics.Load(otherTopic); ok {
			return t.(*topicMetrics)
		}
	}
	q := quote(label)
	t := &topicMetrics{
		recordsProduced: m.set.counter("wren_kafka_records_produced_total", "topic="+q, "records produced, by topic"),
		bytesProduced:   m.set.counter("wren_kafka_request_bytes_total", `request="produce",topic=`+q, "record batch bytes produced and fetched, by topic"),
		bytesFetched:    m.set.counter("wren_kafka_request_bytes_total", `request="consume",topic=`+q, "record batch bytes produced and fetched, by topic"),
	}
	m.topics.Store(label, t)
	m.topicSeries++
	return t
}

// ObserveSync is an engine.SyncObserver: one group-commit fdatasync.
func (m *Metrics) ObserveSync(took time.Duration, appends int, err error) {
	if err != nil {
		m.syncErrors.Inc()
		return
	}
	m.syncLatency.Observe(took.Seconds())
	m.commitBatch.Observe(float64(appends))
}

// writeScraped writes the gauges read from the broker's parts at scrape
// time.
func (m *Metrics) writeScraped(w io.Writer) {
	src := m.sources.Load()
	if src == nil {
		return
	}
	if src.Version != "" {
		writeFamily(w, "wren_build_info", "gauge", "the running build: 1, labelled with its version and commit")
		fmt.Fprintf(w, "wren_build_info{version=%s,commit=%s} 1\n", quote(src.Version), quote(src.Commit))
	}
	if src.Connections != nil {
		writeFamily(w, "wren_kafka_connections_open", "gauge", "open client connections")
		fmt.Fprintf(w, "wren_kafka_connections_open %d\n", src.Connections())
	}
	if src.RequestBudget != nil {
		writeRequestBudget(w, src.RequestBudget())
	}
	if src.Logs != nil {
		writeLogDir(w, src.Logs)
	}
	if src.Health != nil {
		writeClusterHealth(w, src.Health())
	}
	if src.Replicas != nil {
		writeReplicationThrottle(w, src.Replicas)
		writeReplicaFetches(w, src.Replicas)
	}
	if src.Groups != nil && src.Replicas != nil {
		writeGroupLag(w, src.Groups, src.Replicas)
	}
	if src.Quorum != nil {
		if st, ok := src.Quorum(); ok {
			writeQuorum(w, st)
		}
	}
	if src.Uplinks != nil {
		writeUplinks(w, src.Uplinks())
	}
	if src.ProducerIDsAvailable != nil {
		writeFamily(w, "wren_producer_ids_available", "gauge", "producer ids this broker holds and can hand out without the controller")
		fmt.Fprintf(w, "wren_producer_ids_available %d\n", src.ProducerIDsAvailable())
	}
}

// RequestBudgetStats is the state of the client listener's request budget
// (queued.max.request.bytes, queued.max.requests) and connection slots.
type RequestBudgetStats struct {
	// Waiting requests now, and how long the first has waited.
	Waiting    int
	OldestWait time.Duration
	// Counters: requests that had to wait; frames closed for holding the
	// budget too slowly while others waited; frames not complete within
	// their deadline; idle connections closed to make room.
	Waited, Preempted, FrameDeadlines, Evicted uint64
}

func writeRequestBudget(w io.Writer, st RequestBudgetStats) {
	writeFamily(w, "wren_kafka_request_budget_waiting", "gauge", "requests waiting for the request budget (queued.max.request.bytes, queued.max.requests)")
	fmt.Fprintf(w, "wren_kafka_request_budget_waiting %d\n", st.Waiting)
	writeFamily(w, "wren_kafka_request_budget_oldest_wait_seconds", "gauge", "how long the first request waiting for the request budget has waited")
	fmt.Fprintf(w, "wren_kafka_request_budget_oldest_wait_seconds %g\n", st.OldestWait.Seconds())
	for _, c := range []struct {
		name, help string
		v          uint64
	}{
		{"wren_kafka_request_budget_waited_total", "requests that had to wait for the request budget", st.Waited},
		{"wren_kafka_request_frames_too_slow_total", "connections closed because their frame held the request budget too slowly while other requests waited", st.Preempted},
		{"wren_kafka_request_frame_deadlines_total", "connections closed because a frame did not arrive whole within its deadline", st.FrameDeadlines},
		{"wren_kafka_connections_evicted_total", "idle connections closed near max.connections to make room for new ones", st.Evicted},
	} {
		writeFamily(w, c.name, "counter", c.help)
		fmt.Fprintf(w, "%s %d\n", c.name, c.v)
	}
}

// writeClusterHealth writes the wren_cluster_ gauges from the same
// health.ClusterHealth that /v1/cluster/health answers with, after Evaluate: the
// counts of its lists and its verdict.
func writeClusterHealth(w io.Writer, h health.ClusterHealth) {
	healthy := 0
	if h.Healthy {
		healthy = 1
	}
	for _, g := range []struct {
		name, help string
		v          int
	}{
		{"wren_cluster_healthy", "1 when the cluster is healthy as /v1/cluster/health judges it, else 0", healthy},
		{"wren_cluster_brokers", "brokers in the cluster: every voter and registered broker", len(h.Nodes)},
		{"wren_cluster_brokers_down", "brokers down: fenced or never registered", len(h.DownNodes)},
		{"wren_cluster_brokers_fenced", "brokers the controller fenced", len(h.FencedNodes)},
		{"wren_cluster_controller_id", "node id of the controller, -1 when none is known", int(h.ControllerID)},
		{"wren_cluster_unavailable_partitions", "partitions without a leader", len(h.LeaderlessPartitions)},
		{"wren_cluster_offline_log_dirs", "log dirs that failed, on every node", len(h.OfflineLogDirs)},
		{"wren_cluster_damaged_partitions", "replicas holding damaged data on disk, on every node", len(h.DamagedPartitions)},
		{"wren_cluster_log_dirs_below_free_space_floor", "log dirs below their free-space floor, on every node", len(h.LogDirsBelowFloor)},
		{"wren_cluster_nodes_loading_partitions", "nodes with partitions on disk not loaded yet (loading after the start, or waiting for file descriptors)", len(h.LoadingNodes)},
		{"wren_cluster_request_budget_starved_nodes", "nodes whose request budget has had requests waiting and admitted none for a while", len(h.StarvedNodes)},
		{"wren_kafka_under_replicated_replicas", "partitions whose ISR is smaller than their replica set (during a reassignment, than the original replicas)", len(h.UnderReplicatedPartitions)},
	} {
		writeFamily(w, g.name, "gauge", g.help)
		fmt.Fprintf(w, "%s %d\n", g.name, g.v)
	}
}

// writeReplicationThrottle writes the replication throttle's rates and
// counters (KIP-73), by side: what this broker serves as leader, and what
// it fetches as follower.
func writeReplicationThrottle(w io.Writer, replicas *replication.Manager) {
	leader, follower := replicas.ReplicationThrottleStats()
	sides := []struct {
		name string
		st   replication.ThrottleStats
	}{{"leader", leader}, {"follower", follower}}
	writeFamily(w, "wren_replication_throttle_rate_bytes_per_second", "gauge", "the replication throttle's rate (leader.replication.throttled.rate, follower.replication.throttled.rate); -1 when none")
	for _, s := range sides {
		rate := s.st.Rate
		if rate == replication.Unthrottled {
			rate = -1
		}
		fmt.Fprintf(w, "wren_replication_throttle_rate_bytes_per_second{side=%q} %d\n", s.name, rate)
	}
	writeFamily(w, "wren_replication_throttled_bytes_total", "counter", "bytes of throttled partitions served to followers (leader) or fetched (follower), which count toward the rate")
	for _, s := range sides {
		fmt.Fprintf(w, "wren_replication_throttled_bytes_total{side=%q} %d\n", s.name, s.st.Bytes)
	}
	writeFamily(w, "wren_replication_throttle_held_total", "counter", "partition fetches of replicas outside the ISR held back because the throttle's rate was used up")
	for _, s := range sides {
		fmt.Fprintf(w, "wren_replication_throttle_held_total{side=%q} %d\n", s.name, s.st.Held)
	}
}

// writeReplicaFetches writes what followers' Fetches asked of this node
// as leader: how many, how many were incremental in a fetch session
// (KIP-227), how many partitions they named (an idle follower in a
// session names none), and the sessions open.
func writeReplicaFetches(w io.Writer, replicas *replication.Manager) {
	st := replicas.ReplicaFetchStats()
	for _, c := range []struct {
		name, typ, help string
		v               int64
	}{
		{"wren_replication_follower_fetches_total", "counter", "follower Fetches this node served as leader", st.Requests},
		{"wren_replication_follower_fetches_incremental_total", "counter", "follower Fetches in a fetch session that named only what changed", st.Incremental},
		{"wren_replication_follower_fetch_partitions_total", "counter", "partitions the follower Fetches named", st.Partitions},
		{"wren_replication_fetch_sessions", "gauge", "followers' fetch sessions open with this node as leader", int64(st.Sessions)},
		{"wren_replication_follower_fetch_expired_total", "counter", "follower Fetches this node, as leader, held for their whole wait and answered at its end without records", st.Expired},
		{"wren_replication_follower_fetch_failures_total", "counter", "this node's fetch rounds, as follower, that failed (leader unreachable, connection closed, response refused or undecodable); each waits out replica.fetch.backoff.ms", st.FetchFailures},
	} {
		writeFamily(w, c.name, c.typ, c.help)
		fmt.Fprintf(w, "%s %d\n", c.name, c.v)
	}
}

// writeUplinks writes each link's records and bytes sent, send rate,
// state and last session error time, and each of its partitions'
// backlog (records, bytes, seconds), send rate and refusal. Labels are
// the link and the local topic and partition only.
func writeUplinks(w io.Writer, links []uplink.Status) {
	if len(links) == 0 {
		return
	}
	now := time.Now()
	unix := func(t time.Time) float64 {
		if t.IsZero() {
			return 0
		}
		return float64(t.UnixMilli()) / 1000
	}
	one := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	for _, f := range []struct {
		name, typ, help string
		v               func(*uplink.Status) float64
	}{
		{"wren_uplink_sent_records_total", "counter", "records the far cluster acknowledged, by link, since start",
			func(l *uplink.Status) float64 { return float64(l.Sent) }},
		{"wren_uplink_sent_bytes_total", "counter", "bytes (keys, values, headers) of the records the far cluster acknowledged, by link, since start",
			func(l *uplink.Status) float64 { return float64(l.SentBytes) }},
		{"wren_uplink_send_rate_records", "gauge", "records per second the far cluster acknowledged over the last 10 s",
			func(l *uplink.Status) float64 { return l.RecordsPerSec }},
		{"wren_uplink_send_rate_bytes", "gauge", "bytes per second (keys, values, headers) the far cluster acknowledged over the last 10 s",
			func(l *uplink.Status) float64 { return l.BytesPerSec }},
		{"wren_uplink_dropped_records_total", "counter",
			"records retention deleted before the link forwarded them (max.backlog.bytes, drop-oldest), since start",
			func(l *uplink.Status) float64 { return float64(l.Dropped) }},
		{"wren_uplink_up", "gauge", "1 while the link's session holds its clients and the far cluster answers",
			func(l *uplink.Status) float64 { return one(l.Up) }},
		{"wren_uplink_paused", "gauge", "1 while the link is paused (wren uplink pause): it forwards nothing and is not down",
			func(l *uplink.Status) float64 { return one(l.Paused) }},
		{"wren_uplink_down_seconds", "gauge", "how long the link has been down (0 when up): since the far cluster last answered, or since start",
			func(l *uplink.Status) float64 { return l.DownFor(now).Seconds() }},
		{"wren_uplink_last_up_timestamp_seconds", "gauge", "when the far cluster last answered the link (0: never since start)",
			func(l *uplink.Status) float64 { return unix(l.LastUp) }},
		{"wren_uplink_last_error_timestamp_seconds", "gauge",
			"when the link's last session ended with an error (0: none since start); the error is in the log and the status",
			func(l *uplink.Status) float64 { return unix(l.LastErrorAt) }},
	} {
		writeFamily(w, f.name, f.typ, f.help)
		for i := range links {
			fmt.Fprintf(w, "%s{link=%s} %s\n", f.name, quote(links[i].Name), strconv.FormatFloat(f.v(&links[i]), 'f', -1, 64))
		}
	}
	for _, f := range []struct {
		name, help string
		v          func(*uplink.PartitionStatus) float64
	}{
		{"wren_uplink_backlog_records",
			"records of a local partition this node leads not yet acknowledged by the far cluster (high watermark less the next offset); " +
				"direction=\"pull\": far records not yet written to the local partition (the far high watermark last fetched less the next far offset)",
			func(p *uplink.PartitionStatus) float64 { return float64(p.Backlog) }},
		{"wren_uplink_backlog_bytes", "local log bytes (as stored) from the link's cursor to the high watermark of a partition this node leads",
			func(p *uplink.PartitionStatus) float64 { return float64(p.BacklogBytes) }},
		{"wren_uplink_backlog_seconds", "age of the oldest record of a partition this node leads not yet forwarded, from its timestamp (0 when caught up)",
			func(p *uplink.PartitionStatus) float64 { return p.BacklogSeconds }},
		{"wren_uplink_partition_send_rate_records", "records per second of the partition the far cluster acknowledged over the last 10 s",
			func(p *uplink.PartitionStatus) float64 { return p.RecordsPerSec }},
		{"wren_uplink_partition_send_rate_bytes", "bytes per second of the partition the far cluster acknowledged over the last 10 s",
			func(p *uplink.PartitionStatus) float64 { return p.BytesPerSec }},
		{"wren_uplink_partition_refused",
			"1 for a local partition the link refuses to forward, or (direction=\"pull\") to pull into (its reason is in the log and the status: a tail it cannot resume from, a topic without the partition, a loop)",
			func(p *uplink.PartitionStatus) float64 { return one(p.Err != "") }},
	} {
		writeFamily(w, f.name, "gauge", f.help)
		for i := range links {
			for j := range links[i].Partitions {
				p := &links[i].Partitions[j]
				fmt.Fprintf(w, "%s{link=%s,topic=%s,partition=\"%d\",direction=%s} %s\n", f.name, quote(links[i].Name), quote(p.Topic), p.Partition,
					quote(p.Direction), strconv.FormatFloat(f.v(p), 'f', -1, 64))
			}
		}
	}
}

// quote is a Prometheus label value in its quotes: backslash, double
// quote and newline escaped, everything else (UTF-8 included) as is.
func quote(v string) string {
	return `"` + labelEscaper.Replace(v) + `"`
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// writeLogDir writes the per-log-dir gauges: partitions, segments, bytes,
// producer ids, whether the directory failed, and its file system's
// free and total bytes.
func writeLogDir(w io.Writer, logs *engine.Manager) {
	var partitions, segments, bytes, producers int
	for _, l := range logs.Logs() {
		partitions++
		ss := l.Segments()
		segments += len(ss)
		for _, s := range ss {
			bytes += int(s.Size)
		}
		producers += len(l.ProducerStates())
	}
	dir := quote(logs.Dir())
	failed := 0
	if logs.Failed() != nil {
		failed = 1
	}
	writeFamily(w, "wren_storage_log_partitions", "gauge", "partition logs in the log dir")
	fmt.Fprintf(w, "wren_storage_log_partitions{log_dir=%s} %d\n", dir, partitions)
	writeFamily(w, "wren_storage_log_segments", "gauge", "segments in the log dir")
	fmt.Fprintf(w, "wren_storage_log_segments{log_dir=%s} %d\n", dir, segments)
	writeFamily(w, "wren_storage_log_bytes", "gauge", "bytes of segment files in the log dir")
	fmt.Fprintf(w, "wren_storage_log_bytes{log_dir=%s} %d\n", dir, bytes)
	writeFamily(w, "wren_storage_log_dir_failed", "gauge", "1 once a write or fdatasync in the log dir failed")
	fmt.Fprintf(w, "wren_storage_log_dir_failed{log_dir=%s} %d\n", dir, failed)
	writeOpenTxns(w, logs, dir)
	var damagedPartitions, damagedRanges int
	for _, l := range logs.Logs() {
		if d := l.Damage(); len(d) > 0 {
			damagedPartitions++
			damagedRanges += len(d)
		}
	}
	writeFamily(w, "wren_storage_damaged_partitions", "gauge", "partitions holding damaged data on disk: offline for those offsets and for appends until repaired (wren storage check)")
	fmt.Fprintf(w, "wren_storage_damaged_partitions{log_dir=%s} %d\n", dir, damagedPartitions)
	writeFamily(w, "wren_storage_damaged_ranges", "gauge", "damaged byte ranges known in the log dir's partitions")
	fmt.Fprintf(w, "wren_storage_damaged_ranges{log_dir=%s} %d\n", dir, damagedRanges)
	passes, scrubbed, found := logs.ScrubTotals()
	writeFamily(w, "wren_storage_scrubber_passes_total", "counter", "scrubber passes completed over the log dir")
	fmt.Fprintf(w, "wren_storage_scrubber_passes_total{log_dir=%s} %d\n", dir, passes)
	writeFamily(w, "wren_storage_scrubber_read_bytes_total", "counter", "bytes the scrubber read and checked")
	fmt.Fprintf(w, "wren_storage_scrubber_read_bytes_total{log_dir=%s} %d\n", dir, scrubbed)
	writeFamily(w, "wren_storage_scrubber_damage_found_total", "counter", "damaged ranges the scrubber found")
	fmt.Fprintf(w, "wren_storage_scrubber_damage_found_total{log_dir=%s} %d\n", dir, found)
	if sp, ok := logs.DiskSpace(); ok {
		below := 0
		if sp.BelowFloor {
			below = 1
		}
		writeFamily(w, "wren_storage_below_free_space_floor", "gauge", "1 while the log dir is below its free-space floor and produce is refused")
		fmt.Fprintf(w, "wren_storage_below_free_space_floor{log_dir=%s} %d\n", dir, below)
		writeFamily(w, "wren_storage_free_space_floor_bytes", "gauge", "the log dir's free-space floor (log.dir.min.free.bytes and .percent, the smaller)")
		fmt.Fprintf(w, "wren_storage_free_space_floor_bytes{log_dir=%s} %d\n", dir, sp.FloorBytes)
	}
	if hs := logs.HandleStats(); hs.Budget > 0 {
		writeFamily(w, "wren_storage_open_files", "gauge", "segment and index files open now (descriptors held by the handle cache and by operations in flight)")
		fmt.Fprintf(w, "wren_storage_open_files{log_dir=%s} %d\n", dir, hs.Open)
		writeFamily(w, "wren_storage_open_files_budget", "gauge", "log.open.files.max: the most segment and index files kept open")
		fmt.Fprintf(w, "wren_storage_open_files_budget{log_dir=%s} %d\n", dir, hs.Budget)
		writeFamily(w, "wren_storage_open_file_evictions_total", "counter", "idle segment and index files closed to stay within the budget")
		fmt.Fprintf(w, "wren_storage_open_file_evictions_total{log_dir=%s} %d\n", dir, hs.Evictions)
		writeFamily(w, "wren_storage_open_file_reopens_total", "counter", "segment and index files opened again after being closed")
		fmt.Fprintf(w, "wren_storage_open_file_reopens_total{log_dir=%s} %d\n", dir, hs.Reopens)
		writeFamily(w, "wren_storage_open_file_shortages_total", "counter", "operations refused for want of a file descriptor (EMFILE, ENFILE, or the budget all in use); retriable")
		fmt.Fprintf(w, "wren_storage_open_file_shortages_total{log_dir=%s} %d\n", dir, hs.Shortages)
	}
	writeFamily(w, "wren_kafka_producer_ids_tracked", "gauge", "idempotent producers' states kept, summed over partitions")
	fmt.Fprintf(w, "wren_kafka_producer_ids_tracked %d\n", producers)
	var st unix.Statfs_t
	if err := unix.Statfs(logs.Dir(), &st); err == nil {
		// Field widths differ between architectures (int32 block size on
		// armv7): widen before multiplying.
		writeFamily(w, "wren_storage_disk_free_bytes", "gauge", "bytes an unprivileged writer may still use on the log dir's file system")
		fmt.Fprintf(w, "wren_storage_disk_free_bytes{log_dir=%s} %d\n", dir, uint64(st.Bavail)*uint64(st.Bsize))
		writeFamily(w, "wren_storage_disk_total_bytes", "gauge", "size of the log dir's file system")
		fmt.Fprintf(w, "wren_storage_disk_total_bytes{log_dir=%s} %d\n", dir, uint64(st.Blocks)*uint64(st.Bsize))
	}
}

// writeGroupLag writes each consumer group's lag: the sum (and maximum)
// over its committed partitions of high watermark minus committed offset.
// It asks the group coordinator, so a scrape waits at most
// groupLagTimeout for it.
func writeGroupLag(w io.Writer, d *coordinator.Driver, replicas *replication.Manager) {
	ctx, cancel := context.WithTimeout(context.Background(), groupLagTimeout)
	defer cancel()
	listed, _, err := d.ListGroups(ctx)
	if err != nil || len(listed) == 0 {
		return
	}
	if len(listed) > maxGroupSeries {
		listed = listed[:maxGroupSeries]
	}
	type lag struct {
		group    string
		sum, max int64
	}
	var lags []lag
	for _, g := range listed {
		group := g.Group
		res, err := d.Submit(ctx, group, func(c *groups.Coordinator, id uint64, _ int64) {
			c.FetchOffsets(groups.FetchOffsetsRequest{RequestID: id, Group: group})
		}).Wait(ctx)
		if err != nil || res.Fetch == nil {
			continue
		}
		l := lag{group: group}
		for _, o := range res.Fetch.Offsets {
			p := replicas.Partition(engine.TopicPartition{Topic: o.Topic, Partition: o.Partition})
			if p == nil || o.Offset < 0 {
				continue
			}
			n := max(0, p.HighWatermark()-o.Offset)
			l.sum += n
			l.max = max(l.max, n)
		}
		lags = append(lags, l)
	}
	if len(lags) == 0 {
		return
	}
	writeFamily(w, "wren_kafka_consumer_group_lag_sum", "gauge", "sum over the group's committed partitions of high watermark minus committed offset")
	for _, l := range lags {
		fmt.Fprintf(w, "wren_kafka_consumer_group_lag_sum{group=%s} %d\n", quote(l.group), l.sum)
	}
	writeFamily(w, "wren_kafka_consumer_group_lag_max", "gauge", "largest lag of one of the group's committed partitions")
	for _, l := range lags {
		fmt.Fprintf(w, "wren_kafka_consumer_group_lag_max{group=%s} %d\n", quote(l.group), l.max)
	}
}

// writeOpenTxns writes the open transactions of the log dir's partitions,
// and, for each partition holding one, the age of its oldest (the hanging
// transaction alarm): now less the max timestamp of the transaction's
// first batch (after a restart, of its producer's last batch before the
// snapshot), never below 0.
func writeOpenTxns(w io.Writer, logs *engine.Manager, dir string) {
	type oldest struct {
		tp  engine.TopicPartition
		age float64
	}
	var open int
	var ages []oldest
	now := time.Now().UnixMilli()
	for _, l := range logs.Logs() {
		txns := l.OpenTxns()
		open += len(txns)
		if len(txns) == 0 {
			continue
		}
		start := txns[0].StartTimestamp
		for _, t := range txns[1:] {
			start = min(start, t.StartTimestamp)
		}
		ages = append(ages, oldest{l.TopicPartition(), float64(max(now-start, 0)) / 1000})
	}
	writeFamily(w, "wren_storage_open_transactions", "gauge", "transactions open (begun, no marker yet) in the log dir's partitions")
	fmt.Fprintf(w, "wren_storage_open_transactions{log_dir=%s} %d\n", dir, open)
	if len(ages) == 0 {
		return
	}
	writeFamily(w, "wren_storage_oldest_open_transaction_age_seconds", "gauge",
		"age of a partition's oldest open transaction, from its first batch's timestamp (only partitions with one)")
	for _, a := range ages {
		fmt.Fprintf(w, "wren_storage_oldest_open_transaction_age_seconds{topic=%s,partition=\"%d\"} %g\n", quote(a.tp.Topic), a.tp.Partition, a.age)
	}
}
