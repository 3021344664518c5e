package kafka

import (
	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/groups/coordinator"
	"github.com/wren-broker/wren/replication"
)

// Node is the broker state the handlers act on: the configuration, the
// controller and its metadata image, and this node's partitions. The
// broker package builds it and passes it to NewServer as the Broker.
type Node struct {
	Config     *config.Config
	Controller *cluster.Controller
	Replicas   *replication.Manager
	// ProducerIDs hands out idempotent producers' ids.
	ProducerIDs *cluster.ProducerIDManager
	// Groups is the group coordinator; nil means none (FindCoordinator
	// answers COORDINATOR_NOT_AVAILABLE, the group APIs likewise).
	Groups *coordinator.Driver
	// Host and Port are what Metadata and FindCoordinator advertise for
	// this node (the advertised listener, or the bound address).
	Host string
	Port int32
}

// node returns the handlers' view of the broker.
func (s *Server) node() *Node { return s.broker.(*Node) }
