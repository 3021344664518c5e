package broker

import (
	"errors"
	"fmt"
	"net"
	"sync/atomic"

	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/internal/buildinfo"
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
		Health:      func() ops.ClusterHealth { h, _ := s.health(); return h },
		Quorum:      b.controller.QuorumStats,
		Version:     build.Version,
		Commit:      build.Commit,

		ProducerIDsAvailable: b.producerIDs.Available,
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
// applied and the client listener accepting, while the cluster as this
// node sees it is healthy (ops.ClusterHealth.Evaluate, the definition
// `wren cluster health` applies too).
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
	if b := s.broker.Load(); !b.server.Listening() {
		return errors.New("the client listener is not accepting connections")
	}
	h, _ := s.health()
	return h.Err()
}

// health is the cluster as this node sees it: from its metadata image and
// its log dir. With one node there is no one to be down.
func (s *opsState) health() (ops.ClusterHealth, bool) {
	b := s.broker.Load()
	if b == nil {
		return ops.ClusterHealth{}, false
	}
	h := ops.ClusterHealth{ControllerID: b.controller.ControllerID(), Nodes: b.controller.Brokers()}
	im := b.controller.Image()
	for _, name := range im.TopicNames() {
		for _, p := range im.Topic(name).Partitions {
			if p.Leader < 0 {
				h.LeaderlessPartitions = append(h.LeaderlessPartitions, ops.PartitionName(name, p.Partition))
			}
			if p.UnderReplicated() {
				h.UnderReplicatedPartitions = append(h.UnderReplicatedPartitions, ops.PartitionName(name, p.Partition))
			}
		}
	}
	if err := b.logs.Failed(); err != nil {
		h.OfflineLogDirs = append(h.OfflineLogDirs, fmt.Sprintf("node %d: %s: %v", b.cfg.NodeID, b.logs.Dir(), err))
	}
	h.ControlPlane = kafka.ControlPlaneFacts(b.controller)
	h.Evaluate()
	return h, true
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
