// Package ops is wren's operations side: the HTTP server of http.listen
// (/metrics, /livez, /readyz, /v1/cluster/health), the broker's metrics,
// and the health of the cluster as this node judges it.
//
// # Metrics
//
// Metrics owns a metricSet (registry.go) per broker, so several brokers
// in one process keep their own series. Names carry the wren_ prefix and
// their unit, and follow Redpanda's public names where it has one
// (wren_kafka_request_latency_seconds, wren_kafka_consumer_group_lag_sum,
// wren_storage_disk_free_bytes, ...). The Go runtime's and the process's
// figures (process.go: runtime/metrics, runtime.MemStats, /proc/self)
// keep the go_ and process_ names of the Prometheus and VictoriaMetrics
// Go clients, so their dashboards work. The output is Prometheus' text
// exposition format 0.0.4; the tests parse it strictly and, where it is
// installed, run promtool check metrics over it.
//
// A slow acks=all produce is explained by histograms of its steps:
// wren_kafka_produce_handled_seconds (read to answer written) and
// wren_kafka_produce_queued_seconds (behind earlier answers on its
// connection), from the Kafka server; wren_replication_leader_durable_seconds
// (the leader's append to durable), wren_replication_acks_all_isr_wait_seconds
// (then to the ISR holding it) and wren_replication_follower_append_seconds,
// from the replicas (replication.Observer); with the counters
// wren_replication_follower_fetch_expired_total and
// wren_replication_follower_fetch_failures_total. Each observation is a
// histogram's mutex and no allocation.
//
// # Size
//
// wren ships as one binary with a budget of 15 MiB per architecture
// (.ci/run fails a build over it). net/http, which the server would
// otherwise use, costs about 1.5 MiB, and the metrics library wren used
// before (github.com/VictoriaMetrics/metrics) linked it in for its push
// client. So the registry, the runtime figures and the HTTP server are
// this package's own: a few hundred lines that do what four fixed paths
// need. Do not import net/http, or a package that imports it, outside
// tests.
//
// # HTTP
//
// Server (server.go, http.go) answers GET and HEAD of /metrics, /livez,
// /readyz and /v1/cluster/health over HTTP/1.0 and 1.1: 404 for other
// paths, 405 for other methods, 400, 414, 431 or 505 for what it refuses
// to parse. Every response has a Content-Length. A connection serves its
// requests in order, kept alive as HTTP/1.1 and the client say, up to
// maxRequestsPerConnection. Everything a client sends is bounded: the
// request line and each header line (maxLineBytes), the head
// (maxHeadBytes), the header lines (maxHeaders), the time to send a head
// (httpTimeout) and to send the next one (idleTimeout), the connections
// served at once (maxConnections, more wait in the listen backlog). No
// request body is accepted. FuzzParseRequest fuzzes the parser.
//
// The packages that do the work do not import this one. The Kafka server
// reports to a kafka.Observer and the storage engine to an
// engine.SyncObserver; Metrics implements both. Those calls sit on the
// request path, so they touch only atomics and a histogram's mutex: no
// allocation and no string building once a series exists. Gauges that
// describe state (partitions, segments, bytes and free space per log dir,
// producer ids, group lag, cluster facts) are read from the broker's parts
// when /metrics is scraped (Attach), not maintained on every change.
//
// Every series that grows from outside input is bounded: topics past
// maxTopicSeries count under topic="_other", and one scrape reports at
// most maxGroupSeries groups.
//
// # Health
//
// The one definition of a healthy cluster (ClusterHealth, Evaluate,
// NodeReady) lives in internal/health, a leaf that ops, kafka, cli and
// broker share: only broker and cli import this package (docs/ARCHITECTURE.md,
// the layering rules). This package serves it: /v1/cluster/health as
// JSON, the wren_cluster_ gauges from its counts and its verdict, /readyz
// from NodeReady.
package ops
