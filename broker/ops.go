package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"sync/atomic"
	"time"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/internal/buildinfo"
	"github.com/wren-broker/wren/internal/health"
	"github.com/wren-broker/wren/kafka"
	"github.com/wren-broker/wren/ops"
)

// Phases of a broker's life, as /readyz tells them.
const (
	phaseStarting int32 = iota
	phaseServing
	phaseStopping
)

// opsState is the broker's operations side: its metrics, its readiness
// and the HTTP server of http.listen. The HTTP server opens before the log
// dirs are recovered, so that /livez answers and /readyz says why it is
// not ready yet during a long recovery.
type opsState struct {
	metrics *ops.Metrics
	// http is nil when http.listen is empty.
	http  *ops.Server
	phase atomic.Int32
	// broker is set once Start has built every part.
	broker atomic.Pointer[Broker]
}

// startOps makes the metrics and binds http.listen.
func startOps(cfg *config.Config, o Options) (*opsState, error) {
	s := &opsState{metrics: ops.NewMetrics()}
	if cfg.HTTPListen == "" {
		return s, nil
	}
	srv, err := ops.Listen(cfg.HTTPListen, ops.ServerConfig{
		Metrics: s.metrics,
		Ready:   s.ready,
		Health:  s.health,
		Logger:  o.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	s.http = srv
	return s, nil
}

// serving is called at the end of Start: every part is up and the client
// listener accepts.
func (s *opsState) serving(b *Broker) {
	build := buildinfo.Get()
	s.metrics.Attach(ops.Sources{
		Logs:        b.logs,
		Replicas:    b.replicas,
		Groups:      b.groups,
		Connections: b.server.Connections,
		RequestBudget: func() ops.RequestBudgetStats {
			st := b.server.BudgetStats()
			return ops.RequestBudgetStats{Waiting: st.Waiting, OldestWait: st.OldestWait, Waited: st.Waited,
				Preempted: st.Preempted, FrameDeadlines: st.FrameDeadlines, Evicted: st.Evicted}
		},
		Health:  func() health.ClusterHealth { h, _ := s.health(); return h },
		Quorum:  b.controller.QuorumStats,
		Uplinks: b.UplinkStatus,
		Version: build.Version,
		Commit:  build.Commit,

		ProducerIDsAvailable: b.producerIDs.Available,
	})
	b.controller.SetNodeFacts(func() []byte {
		body, _ := json.Marshal(b.nodeFacts())
		return body
	})
	s.broker.Store(b)
	s.phase.Store(phaseServing)
}

func (s *opsState) close() error {
	if s.http == nil {
		return nil
	}
	return s.http.Close()
}

// ready is /readyz: nil once the log dirs are recovered, the metadata
// caught up, this incarnation registered and the client listener
// accepting, while this node can serve by the facts of its cluster health
// (health.ClusterHealth.NodeReady: a controller known, this node not fenced,
// its log dir not failed). A peer down or a partition in trouble makes the
// cluster unhealthy (/v1/cluster/health), not this node unready.
func (s *opsState) ready() error {
	switch s.phase.Load() {
	case phaseStarting:
		return errors.New("starting: recovering the log dirs, loading the metadata log, binding the client listener")
	case phaseStopping:
		return errors.New("shutting down")
	}
	if reason := s.broker.Load().catchUpStatus(); reason != "" {
		return errors.New(reason)
	}
	b := s.broker.Load()
	if !b.server.Listening() {
		return errors.New("the client listener is not accepting connections")
	}
	h, _ := s.health()
	return h.NodeReady(b.cfg.NodeID)
}

// health is the cluster as this node sees it, from what it holds: its
// metadata image, its own log dir, and the facts its peers last sent
// about themselves (cluster.Controller.PeerNodeFacts). It asks no one, so
// it answers at once whatever the controller or the peers do.
func (s *opsState) health() (health.ClusterHealth, bool) {
	b := s.broker.Load()
	if b == nil {
		return health.ClusterHealth{}, false
	}
	h := clusterHealthOf(b.controller, b.cfg.NodeID)
	for id, body := range b.controller.PeerNodeFacts(time.Duration(b.cfg.BrokerSessionTimeoutMs) * time.Millisecond) {
		var f health.NodeFacts
		if json.Unmarshal(body, &f) == nil && f.Node == id {
			h.AddNodeFacts(f)
		}
	}
	h.AddNodeFacts(b.nodeFacts())
	h.Evaluate()
	return h, true
}

// clusterHealthOf fills the facts the metadata image holds. On a quorum
// the nodes are the voters and the registered brokers; one that is fenced
// or never registered is down. With one voter, the voter is the cluster.
func clusterHealthOf(c *cluster.Controller, self int32) health.ClusterHealth {
	h := health.ClusterHealth{ControllerID: c.ControllerID(), ControlPlane: kafka.ControlPlaneFacts(c)}
	im := c.Image()
	_, quorum := c.QuorumStats()
	h.Nodes = append(h.Nodes, c.Voters()...)
	for _, id := range c.Voters() {
		if _, ok := im.Broker(id); !ok && quorum {
			h.DownNodes = append(h.DownNodes, id)
		}
	}
	for _, r := range im.Brokers() {
		h.Nodes = append(h.Nodes, r.ID)
	}
	for _, name := range im.TopicNames() {
		for _, p := range im.Topic(name).Partitions {
			if p.Leader < 0 {
				h.LeaderlessPartitions = append(h.LeaderlessPartitions, health.PartitionName(name, p.Partition))
			}
			if p.UnderReplicated() {
				h.UnderReplicatedPartitions = append(h.UnderReplicatedPartitions, health.PartitionName(name, p.Partition))
			}
		}
	}
	return h
}

// nodeFacts are this node's own: its log dir failed or below its
// free-space floor, its replicas holding damaged data (found by
// recovery, the scrubber or a read), its request budget starved, and
// its uplinks' states.
func (b *Broker) nodeFacts() health.NodeFacts {
	f := health.NodeFacts{Node: b.cfg.NodeID, Uplinks: b.uplinkFacts(), PartitionsLoading: b.logs.PendingCount()}
	if st := b.server.BudgetStats(); st.Starved {
		f.RequestBudgetStarved = &health.StarvedNode{Node: b.cfg.NodeID, Waiting: st.Waiting, OldestWaitMs: st.OldestWait.Milliseconds()}
	}
	if err := b.logs.Failed(); err != nil {
		f.OfflineLogDirs = append(f.OfflineLogDirs, health.OfflineLogDir(b.cfg.NodeID, b.logs.Dir(), err.Error()))
	}
	if sp, ok := b.logs.DiskSpace(); ok && sp.BelowFloor {
		f.LogDirsBelowFloor = append(f.LogDirsBelowFloor, health.LogDirBelowFloor{Node: b.cfg.NodeID, Dir: sp.Dir, FreeBytes: sp.FreeBytes, FloorBytes: sp.FloorBytes})
	}
	ranges := map[engine.TopicPartition]int{}
	for _, d := range b.logs.Damaged() {
		ranges[d.TopicPartition]++
	}
	for tp, n := range ranges {
		f.DamagedPartitions = append(f.DamagedPartitions, health.DamagedPartition{Node: b.cfg.NodeID, Partition: health.PartitionName(tp.Topic, tp.Partition), Ranges: n})
	}
	// sort.Slice, not slices.SortFunc: per health probe, and a generic sort
	// of this struct would instantiate pdqsort for it (9 KiB).
	dp := f.DamagedPartitions
	sort.Slice(dp, func(i, j int) bool { return dp[i].Partition < dp[j].Partition })
	if len(f.DamagedPartitions) > health.MaxDamagedListed {
		f.DamagedPartitions = f.DamagedPartitions[:health.MaxDamagedListed]
	}
	return f
}

// HTTPAddr is the bound address of http.listen, nil when it is empty.
func (b *Broker) HTTPAddr() net.Addr {
	if b.ops.http == nil {
		return nil
	}
	return b.ops.http.Addr()
}

// Ready is /readyz's verdict: nil when ready, else the reason.
func (b *Broker) Ready() error { return b.ops.ready() }

// The metrics count the Kafka server's refused authorizations
// (wren_authorization_denials_total) and SASL authentications.
var (
	_ kafka.AuthzObserver = (*ops.Metrics)(nil)
	_ kafka.AuthObserver  = (*ops.Metrics)(nil)
)
