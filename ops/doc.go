// Package ops is wren's operations side: the HTTP server of http.listen
// (/metrics, /livez, /readyz, /v1/cluster/health), the broker's metrics,
// and the one definition of a healthy cluster.
//
// # Metrics
//
// Metrics owns a metrics.Set (github.com/VictoriaMetrics/metrics, chosen
// for its size: about 0.7 MiB of binary against 2.5 MiB for the Prometheus
// client) per broker, never the library's package-level set, so several
// brokers in one process keep their own series. Names carry the wren_
// prefix and their unit, and follow Redpanda's public names where it has
// one (wren_kafka_request_latency_seconds, wren_kafka_consumer_group_lag_sum,
// wren_storage_disk_free_bytes, ...).
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
// ClusterHealth holds the facts (controller, nodes, nodes down, leaderless
// and under-replicated partitions, offline log dirs) and Evaluate judges
// them. A broker fills them from its metadata image and log dirs for
// /readyz and /v1/cluster/health; `wren cluster health` fills them from
// Metadata and DescribeLogDirs responses. Both then call Evaluate, so the
// command and the probe cannot disagree about what healthy means.
//
// /livez answers 200 while the process serves HTTP at all. /readyz answers
// 200 only once the broker started (log dirs recovered, metadata applied,
// client listener accepting) and while the cluster is healthy, and 503
// with a plain-text reason otherwise: a load balancer or a service
// manager can act on the status alone.
package ops
