// Package health is the one definition of a healthy cluster: the facts
// (ClusterHealth, NodeFacts, ControlPlane) and the rules that judge them
// (Evaluate, NodeReady). It is a leaf: plain values and pure functions,
// imported by ops (which serves them over HTTP), kafka (DescribeCluster's
// wren tag carries them), cli (`wren cluster health`) and broker (which
// fills them); cluster carries each node's NodeFacts to its peers as
// opaque bytes. ControlPlane and the JSON of ClusterHealth are part of the
// wire format.
//
// # Facts and verdict
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
// Degraded is judged apart from healthy and never changes it: a node's
// uplinks (UplinkState, in its NodeFacts) down longer than its threshold,
// or refusing a partition, make the cluster degraded (DegradedReasons).
// Nodes still loading partitions after a start (LoadingNodes: the follower
// replicas a node loads behind its open listener, or loads waiting for
// file descriptors) are listed and judged neither way: those replicas
// are out of their ISRs meanwhile, and the under-replicated partitions
// say so.
// An edge cut off from its central cluster serves its clients all along
// and keeps what it must forward in its log; calling it unhealthy would
// take it out of rollouts and alerts meant for a cluster that fails its
// clients. A paused link is neither.
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
package health
