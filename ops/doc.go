// Package ops is wren's operations side: the HTTP server of http.listen
// (/metrics, /livez, /readyz, /v1/cluster/health), the broker's metrics,
// and the one definition of a healthy cluster.
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
// ClusterHealth holds the facts and Evaluate judges them: the one
// definition of a healthy cluster. The facts: the controller, every node
// (each voter and registered broker once), the nodes down (fenced by the
// controller, never registered, or not answering `wren cluster health`),
// leaderless and under-replicated partitions, failed log dirs, log dirs
// below their free-space floor, replicas holding damaged data. A cluster
// is healthy when a controller is known and up, no node is down, every
// partition has a leader, and no log dir failed or is below its floor and
// no replica is damaged; under-replicated partitions are listed only.
//
// Every surface fills the same facts and calls Evaluate:
//
//   - A broker (broker/ops.go) from what it holds, asking no one: its
//     metadata image for the cluster's facts, its own log dir and engine
//     for its own, and its peers' own facts as they last sent them (every
//     node sends its NodeFacts to its peers once per broker heartbeat;
//     cluster's node facts). It answers at once whatever the controller
//     does. /v1/cluster/health is that ClusterHealth as JSON, the
//     wren_cluster_ metrics are its counts and its verdict
//     (wren_cluster_healthy), and DescribeCluster's wren tag carries it.
//   - `wren cluster health` asks every broker Metadata lists, at once and
//     each within --request-timeout (2 s), for that judgement; takes the
//     cluster's facts from the freshest (highest metadata offset) and each
//     broker's own facts from its own answer; and adds the brokers that
//     did not answer as unreachable, so down. It never waits on a stopped
//     controller: a broker that does not answer is a fact, not a hang.
//
// # Ready versus healthy
//
// /livez answers 200 while the process serves HTTP at all. /readyz asks a
// narrower question than cluster health: can this node serve clients? It
// answers 503 with a plain-text reason while the broker starts (log dirs
// recovering, metadata catching up, this restart not yet registered,
// listener not bound) and, from the same facts as cluster health
// (ClusterHealth.NodeReady), while no controller is known, while this
// node is down (fenced) or while its log dir failed; 200 otherwise. Every
// fact that makes a node unready also makes the cluster unhealthy. The
// reverse does not hold: a peer down, a leaderless or damaged partition,
// a log dir below its floor (this node's included: it still serves reads,
// replicas and groups) leave a running node ready, since taking it out of
// a load balancer or a rollout would not help and, with every node
// judging the cluster, would take them all out at once. Those show in
// /v1/cluster/health, `wren cluster health` and wren_cluster_healthy.
package ops
