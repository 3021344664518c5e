package kafka

import (
	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/internal/health"
)

// Node is the broker state the handlers act on, through the narrow
// interfaces of seam.go: the configuration, the committed metadata image,
// the controller's write requests, this node's partitions, the group
// coordinator and producer ids. The broker package builds it and passes it
// to NewServer; handler tests build one with fakes.
type Node struct {
	Config *config.Config
	// Metadata is the committed image and the quorum's facts.
	Metadata Metadata
	// Controller takes the requests that change metadata, and forwards
	// them to the acting controller.
	Controller ControllerAPI
	// Partitions are this node's replicas.
	Partitions Partitions
	// ProducerIDs hands out idempotent producers' ids.
	ProducerIDs ProducerIDs
	// Groups is the group coordinator; nil means none (the group APIs
	// answer COORDINATOR_NOT_AVAILABLE; FindCoordinator answers from the
	// image all the same).
	Groups GroupCoordinator
	// Txn is the transaction coordinator; nil means none (transactional
	// requests get COORDINATOR_NOT_AVAILABLE).
	Txn TxnCoordinator
	// GroupTxnMarkers writes WriteTxnMarkers' markers on
	// __consumer_offsets partitions; nil answers them
	// COORDINATOR_NOT_AVAILABLE (retriable).
	GroupTxnMarkers GroupTxnMarkers
	// Host and Port are what Metadata and FindCoordinator advertise for
	// this node (the advertised listener, or the bound address).
	Host string
	Port int32
	// Health, if set, is the cluster's health as this node judges it
	// (evaluated), false until it knows: DescribeCluster's wren tag
	// carries it, so `wren cluster health` sees this node's facts.
	// Without it the tag carries ControlPlaneFacts alone.
	Health func() (health.ClusterHealth, bool)
	// Authorizer, if set, returns the Authorizer in force now (ACLs
	// change at run time: it is called once per request); nil, or a nil
	// Authorizer, allows everything (authorize.go).
	Authorizer func() Authorizer
}

// node returns the handlers' view of the broker.
func (s *Server) node() *Node { return s.broker }
