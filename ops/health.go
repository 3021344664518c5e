package ops

import (
	"fmt"
	"sort"
	"strings"
)

// Reasons a cluster is unhealthy, as ClusterHealth.UnhealthyReasons names
// them (rpk's words where rpk has one).
const (
	ReasonNoController   = "no_controller"
	ReasonNodesDown      = "nodes_down"
	ReasonLeaderless     = "leaderless_partitions"
	ReasonOfflineLogDirs = "offline_log_dirs"
)

// ClusterHealth is the cluster as one observer sees it: a broker answering
// /v1/cluster/health and /readyz from its metadata image and log dirs, or
// `wren cluster health` from Metadata and DescribeLogDirs responses. Both
// fill in the facts and call Evaluate, the one definition of healthy, so
// they agree.
type ClusterHealth struct {
	Healthy          bool     `json:"is_healthy"`
	UnhealthyReasons []string `json:"unhealthy_reasons"`
	// ControllerID is -1 when no controller is known.
	ControllerID int32   `json:"controller_id"`
	Nodes        []int32 `json:"all_nodes"`
	DownNodes    []int32 `json:"nodes_down"`
	// Partitions are named "topic/partition".
	LeaderlessPartitions      []string `json:"leaderless_partitions"`
	UnderReplicatedPartitions []string `json:"under_replicated_partitions"`
	// OfflineLogDirs are named "node N: dir: error".
	OfflineLogDirs []string `json:"offline_log_dirs"`
	ControlPlane
}

// ControlPlane is what the metadata image knows that Kafka's APIs do not
// carry: wren's DescribeCluster sends it in a tagged field to a client
// that asks (kafka/60_describe_cluster.go), for `wren cluster health`.
// Part of the wire format: add fields, never rename one.
type ControlPlane struct {
	// ControllerEpoch is the acting controller's epoch (0 with one voter).
	ControllerEpoch int32 `json:"controller_epoch"`
	// FencedNodes are registered brokers the controller fenced (silent
	// for broker.session.timeout.ms): they lead nothing and clients do
	// not see them. Listed, but a serving node stays ready.
	FencedNodes []int32 `json:"nodes_fenced"`
	// DataLossLedger lists the elections that may have lost acknowledged
	// records (unclean elections), oldest first. History: listed, but it
	// does not make the cluster unhealthy.
	DataLossLedger []DataLoss `json:"data_loss_ledger"`
}

// DataLoss is one entry of the data-loss ledger.
type DataLoss struct {
	// MetadataOffset is the metadata log offset that recorded it.
	MetadataOffset uint64  `json:"metadata_offset"`
	Topic          string  `json:"topic"`
	Partition      int32   `json:"partition"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	PreviousLeader int32   `json:"previous_leader"`
	NewLeader      int32   `json:"new_leader"`
	PreviousISR    []int32 `json:"previous_isr"`
	Reason         string  `json:"reason"`
	// [FromOffset, ToOffset) may be lost; -1 when not known.
	FromOffset int64 `json:"from_offset"`
	ToOffset   int64 `json:"to_offset"`
}

// Evaluate sorts the facts and sets Healthy and UnhealthyReasons. A
// cluster is healthy when a controller is known, no node is down, every
// partition has a leader and no log dir failed. Under-replicated
// partitions are listed but do not make it unhealthy: every partition is
// still served, and a load balancer must not take a serving node out
// because a peer lags.
func (h *ClusterHealth) Evaluate() {
	if h.DataLossLedger == nil {
		h.DataLossLedger = []DataLoss{}
	}
	for _, s := range []*[]int32{&h.Nodes, &h.DownNodes, &h.FencedNodes} {
		if *s == nil {
			*s = []int32{}
		}
		sort.Slice(*s, func(i, j int) bool { return (*s)[i] < (*s)[j] })
	}
	for _, s := range []*[]string{&h.LeaderlessPartitions, &h.UnderReplicatedPartitions, &h.OfflineLogDirs} {
		if *s == nil {
			*s = []string{}
		}
		sort.Strings(*s)
	}
	h.UnhealthyReasons = []string{}
	if h.ControllerID < 0 {
		h.UnhealthyReasons = append(h.UnhealthyReasons, ReasonNoController)
	}
	if len(h.DownNodes) > 0 {
		h.UnhealthyReasons = append(h.UnhealthyReasons, ReasonNodesDown)
	}
	if len(h.LeaderlessPartitions) > 0 {
		h.UnhealthyReasons = append(h.UnhealthyReasons, ReasonLeaderless)
	}
	if len(h.OfflineLogDirs) > 0 {
		h.UnhealthyReasons = append(h.UnhealthyReasons, ReasonOfflineLogDirs)
	}
	h.Healthy = len(h.UnhealthyReasons) == 0
}

// Err is nil for a healthy cluster, else an error naming every reason with
// its facts: /readyz's plain-text answer.
func (h *ClusterHealth) Err() error {
	if h.Healthy {
		return nil
	}
	var parts []string
	for _, r := range h.UnhealthyReasons {
		switch r {
		case ReasonNodesDown:
			parts = append(parts, fmt.Sprintf("%s %v", r, h.DownNodes))
		case ReasonLeaderless:
			parts = append(parts, fmt.Sprintf("%s %v", r, limitList(h.LeaderlessPartitions)))
		case ReasonOfflineLogDirs:
			parts = append(parts, fmt.Sprintf("%s %v", r, h.OfflineLogDirs))
		default:
			parts = append(parts, r)
		}
	}
	return fmt.Errorf("unhealthy: %s", strings.Join(parts, "; "))
}

// limitList keeps an error message short when many partitions are listed.
func limitList(s []string) []string {
	const n = 10
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
}

// PartitionName is how ClusterHealth names a partition.
func PartitionName(topic string, partition int32) string {
	return fmt.Sprintf("%s/%d", topic, partition)
}
