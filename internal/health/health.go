package health

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Reasons a cluster is unhealthy, as ClusterHealth.UnhealthyReasons names
// them (rpk's words where rpk has one), in the order Evaluate lists them.
const (
	ReasonNoController = "no_controller"
	// ReasonControllerDown: a controller is named, but it is down (fenced,
	// or not reached by `wren cluster health`).
	ReasonControllerDown = "controller_down"
	ReasonNodesDown      = "nodes_down"
	ReasonLeaderless     = "leaderless_partitions"
	ReasonOfflineLogDirs = "offline_log_dirs"
	// ReasonDamaged: a replica holds damaged data on disk (found by
	// recovery, the scrubber or a read); those offsets are not served
	// from it and its partition takes no appends there until repaired.
	ReasonDamaged = "damaged_partitions"
	// ReasonBelowFloor: a log dir is below its free-space floor, so its
	// node refuses every produce to it.
	ReasonBelowFloor = "log_dirs_below_floor"
	// ReasonStarved: a node's request budget (queued.max.request.bytes,
	// queued.max.requests) has had requests waiting and granted none for
	// a while: that node is not serving the clients that wait.
	ReasonStarved = "request_budget_starved"
)

// Reasons a cluster is degraded, as ClusterHealth.DegradedReasons names
// them. A degraded cluster serves its clients: these are its uplinks to
// a far cluster (package uplink) falling behind, which store and forward
// keeps safe until the local retention runs out. They never make it
// unhealthy: an edge cut off from its center for a day is the case the
// uplink is built for, and its clients are served all along.
const (
	// ReasonUplinkDown: a link has been down (its far side not
	// answering) longer than its node's threshold; a paused link is not
	// down.
	ReasonUplinkDown = "uplink_down"
	// ReasonUplinkRefused: a link refuses a local partition (a far tail
	// it cannot resume from, a far topic without the partition).
	ReasonUplinkRefused = "uplink_partitions_refused"
	// ReasonUplinkBacklogFull: a link's records not yet forwarded on a
	// node passed its max.backlog.bytes: under refuse-writes produce to
	// its topics is refused, under drop-oldest retention deletes them.
	ReasonUplinkBacklogFull = "uplink_backlog_full"
	// ReasonUplinkDropped: retention deleted records a link had not
	// forwarded (drop-oldest past max.backlog.bytes) within the last
	// hour.
	ReasonUplinkDropped = "uplink_records_dropped"
)

// ClusterHealth is the cluster as one observer sees it: a broker answering
// /readyz, /v1/cluster/health, /metrics and DescribeCluster's wren tag from
// its metadata image and what its peers told it about themselves, or `wren
// cluster health` from those answers and what it could reach. Every one of
// them fills in the facts and calls Evaluate, the one definition of
// healthy, so they agree when they hold the same facts.
type ClusterHealth struct {
	Healthy          bool     `json:"is_healthy"`
	UnhealthyReasons []string `json:"unhealthy_reasons"`
	// ControllerID is -1 when no controller is known.
	ControllerID int32 `json:"controller_id"`
	// Nodes lists every voter and every registered broker once, sorted.
	Nodes []int32 `json:"all_nodes"`
	// DownNodes are the nodes that serve no client: fenced, never
	// registered, or (to `wren cluster health`) not answering. Evaluate
	// adds FencedNodes and UnreachableNodes to it.
	DownNodes []int32 `json:"nodes_down"`
	// UnreachableNodes are the nodes `wren cluster health` asked and got
	// no answer from within its per-request timeout; a broker leaves it
	// empty (it answers from what it holds and asks no one).
	UnreachableNodes []int32 `json:"nodes_unreachable"`
	// Partitions are named "topic/partition".
	LeaderlessPartitions      []string `json:"leaderless_partitions"`
	UnderReplicatedPartitions []string `json:"under_replicated_partitions"`
	// OfflineLogDirs are named "node N: dir: error".
	OfflineLogDirs []string `json:"offline_log_dirs"`
	// DamagedPartitions are the replicas holding damaged data on disk.
	DamagedPartitions []DamagedPartition `json:"damaged_partitions"`
	// LogDirsBelowFloor are the log dirs below their free-space floor.
	LogDirsBelowFloor []LogDirBelowFloor `json:"log_dirs_below_floor"`
	// StarvedNodes are the nodes whose request budget is starved.
	StarvedNodes []StarvedNode `json:"request_budget_starved"`
	// Degraded and DegradedReasons judge the facts that do not make the
	// cluster unhealthy (Uplinks): set by Evaluate.
	Degraded        bool     `json:"is_degraded"`
	DegradedReasons []string `json:"degraded_reasons"`
	// Uplinks are the links each node runs (its own facts), by link then
	// node.
	Uplinks []UplinkState `json:"uplinks"`
	// LoadingNodes are the nodes still loading partitions after a start:
	// a node opens its client listener once the partitions it leads are
	// loaded and loads the rest (its follower replicas) behind it, or
	// retries loads that ran out of file descriptors. Listed only: those
	// replicas are out of their ISRs meanwhile, which the
	// under-replicated partitions show.
	LoadingNodes []LoadingNode `json:"nodes_loading"`
	ControlPlane
}

// LoadingNode is a node with partitions on disk not loaded yet.
type LoadingNode struct {
	Node       int32 `json:"node"`
	Partitions int   `json:"partitions"`
}

// UplinkState is one link ([uplink.NAME]) as one node runs it: that
// node forwards the partitions it leads.
type UplinkState struct {
	Node int32  `json:"node"`
	Link string `json:"link"`
	// Up: the link's session holds its clients and the far side answers.
	// Down: it has not for longer than the node's threshold (the verdict
	// Evaluate reads). Paused: stopped by an operator; neither up nor
	// down.
	Up     bool `json:"up"`
	Down   bool `json:"down"`
	Paused bool `json:"paused"`
	// DownForMs is how long it has been down (0 when up); LastUpMs when
	// the far side last answered (Unix ms, 0: never since start).
	DownForMs int64 `json:"down_for_ms"`
	LastUpMs  int64 `json:"last_up_ms"`
	// LastError ended the last session that failed, at LastErrorMs (Unix
	// ms, 0: none since start).
	LastError   string `json:"last_error"`
	LastErrorMs int64  `json:"last_error_ms"`
	SentRecords int64  `json:"sent_records"`
	SentBytes   int64  `json:"sent_bytes"`
	// RecordsPerSec and BytesPerSec are the send rate over the last 10 s.
	RecordsPerSec float64 `json:"records_per_sec"`
	BytesPerSec   float64 `json:"bytes_per_sec"`
	// The backlog of the partitions this node leads: records and bytes
	// summed, seconds the oldest.
	BacklogRecords    int64   `json:"backlog_records"`
	BacklogBytes      int64   `json:"backlog_bytes"`
	BacklogSeconds    float64 `json:"backlog_seconds"`
	RefusedPartitions int     `json:"refused_partitions"`
	// BacklogFull: the backlog passed the link's max.backlog.bytes on
	// this node. DroppedRecords and DroppedBytes count what retention
	// deleted of it since start (drop-oldest), RecentlyDropped is set
	// when it did within the last hour; RefusedWrites counts the produce
	// partitions refused (refuse-writes).
	BacklogFull     bool  `json:"backlog_full"`
	DroppedRecords  int64 `json:"dropped_records"`
	DroppedBytes    int64 `json:"dropped_bytes"`
	RecentlyDropped bool  `json:"recently_dropped"`
	RefusedWrites   int64 `json:"refused_writes"`
	// Partitions are listed up to MaxUplinkPartitionsListed per node;
	// PartitionsNotListed counts the rest (the node's /metrics has them).
	Partitions          []UplinkPartition `json:"partitions"`
	PartitionsNotListed int               `json:"partitions_not_listed,omitempty"`
}

// UplinkPartition is one local partition of a link on one node.
type UplinkPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Direction is "push" (the local partition forwarded to the far
	// side) or "pull" (a far partition pulled into it; Next, the backlog
	// and the rates then count far offsets and records); "" from a node
	// before pull.topics existed, which pushes only. (The far topic is
	// not carried: the facts a node sends are bounded, and the link's
	// config names it.)
	Direction string `json:"direction,omitempty"`
	// Active: forwarded now; Leader: the node leads it (of several
	// nodes' rows, the leader's counts).
	Active bool `json:"active"`
	Leader bool `json:"leader"`
	// Next is the next local offset to forward, -1 before it is known.
	Next           int64   `json:"next_offset"`
	BacklogRecords int64   `json:"backlog_records"`
	BacklogBytes   int64   `json:"backlog_bytes"`
	BacklogSeconds float64 `json:"backlog_seconds"`
	RecordsPerSec  float64 `json:"records_per_sec"`
	BytesPerSec    float64 `json:"bytes_per_sec"`
	SentRecords    int64   `json:"sent_records"`
	// Error says why the partition is refused ("" if it is not).
	Error string `json:"error,omitempty"`
}

// MaxUplinkPartitionsListed bounds the uplink partitions one node
// reports in its facts, over all its links: the facts a node sends its
// peers are bounded (64 KiB), and 50 partitions with the longest topic
// names and errors stay well within.
const MaxUplinkPartitionsListed = 50

// StarvedNode is a node whose request budget has had requests waiting
// and granted none for a while.
type StarvedNode struct {
	Node int32 `json:"node"`
	// Waiting is the number of requests waiting; OldestWaitMs how long
	// the first of them has waited.
	Waiting      int   `json:"waiting"`
	OldestWaitMs int64 `json:"oldest_wait_ms"`
}

// DamagedPartition is one replica holding damaged data on disk.
type DamagedPartition struct {
	Node      int32  `json:"node"`
	Partition string `json:"partition"`
	// Ranges is how many damaged byte ranges are known in it.
	Ranges int `json:"ranges"`
}

// LogDirBelowFloor is a log dir below its free-space floor (broker
// log.dir.min.free.bytes, log.dir.min.free.percent).
type LogDirBelowFloor struct {
	Node       int32  `json:"node"`
	Dir        string `json:"dir"`
	FreeBytes  int64  `json:"free_bytes"`
	FloorBytes int64  `json:"floor_bytes"`
}

// NodeFacts are what only one node knows about itself: its log dir and
// the damage in its replicas. A broker sends its own to its peers and
// adds theirs to its ClusterHealth (AddNodeFacts).
type NodeFacts struct {
	Node              int32              `json:"node"`
	OfflineLogDirs    []string           `json:"offline_log_dirs,omitempty"`
	DamagedPartitions []DamagedPartition `json:"damaged_partitions,omitempty"`
	LogDirsBelowFloor []LogDirBelowFloor `json:"log_dirs_below_floor,omitempty"`
	// RequestBudgetStarved is set while the node's request budget is
	// starved.
	RequestBudgetStarved *StarvedNode `json:"request_budget_starved,omitempty"`
	// Uplinks are the links the node runs.
	Uplinks []UplinkState `json:"uplinks,omitempty"`
	// PartitionsLoading counts its partitions on disk not loaded yet.
	PartitionsLoading int `json:"partitions_loading,omitempty"`
}

// MaxDamagedListed bounds the damaged replicas one node reports: past it
// the list is cut (the node's own /metrics and `wren storage check` have
// the rest).
const MaxDamagedListed = 100

// AddNodeFacts puts f into h in place of whatever h held about f.Node.
func (h *ClusterHealth) AddNodeFacts(f NodeFacts) {
	prefix := nodePrefix(f.Node)
	h.OfflineLogDirs = slices.DeleteFunc(h.OfflineLogDirs, func(s string) bool { return strings.HasPrefix(s, prefix) })
	h.DamagedPartitions = slices.DeleteFunc(h.DamagedPartitions, func(d DamagedPartition) bool { return d.Node == f.Node })
	h.LogDirsBelowFloor = slices.DeleteFunc(h.LogDirsBelowFloor, func(d LogDirBelowFloor) bool { return d.Node == f.Node })
	h.StarvedNodes = slices.DeleteFunc(h.StarvedNodes, func(d StarvedNode) bool { return d.Node == f.Node })
	h.Uplinks = slices.DeleteFunc(h.Uplinks, func(u UplinkState) bool { return u.Node == f.Node })
	h.LoadingNodes = slices.DeleteFunc(h.LoadingNodes, func(d LoadingNode) bool { return d.Node == f.Node })
	if f.PartitionsLoading > 0 {
		h.LoadingNodes = append(h.LoadingNodes, LoadingNode{Node: f.Node, Partitions: f.PartitionsLoading})
	}
	for _, u := range f.Uplinks {
		u.Node = f.Node
		h.Uplinks = append(h.Uplinks, u)
	}
	if st := f.RequestBudgetStarved; st != nil {
		d := *st
		d.Node = f.Node
		h.StarvedNodes = append(h.StarvedNodes, d)
	}
	for _, d := range f.OfflineLogDirs {
		if strings.HasPrefix(d, prefix) {
			h.OfflineLogDirs = append(h.OfflineLogDirs, d)
		}
	}
	for i, d := range f.DamagedPartitions {
		if i == MaxDamagedListed {
			break
		}
		d.Node = f.Node
		h.DamagedPartitions = append(h.DamagedPartitions, d)
	}
	for _, d := range f.LogDirsBelowFloor {
		d.Node = f.Node
		h.LogDirsBelowFloor = append(h.LogDirsBelowFloor, d)
	}
}

// OfflineLogDir names a failed log dir as OfflineLogDirs lists it.
func OfflineLogDir(node int32, dir string, err string) string {
	return fmt.Sprintf("%s%s: %s", nodePrefix(node), dir, err)
}

func nodePrefix(node int32) string { return fmt.Sprintf("node %d: ", node) }

// ControlPlane is what the metadata image knows that Kafka's APIs do not
// carry: wren's DescribeCluster sends it in a tagged field to a client
// that asks (kafka/60_describe_cluster.go), for `wren cluster health`.
// Part of the wire format: add fields, never rename one.
type ControlPlane struct {
	// ControllerEpoch is the acting controller's epoch (0 with one voter).
	ControllerEpoch int32 `json:"controller_epoch"`
	// MetadataOffset is the offset of the last metadata record in the
	// image the facts come from: of several answers, the highest is the
	// freshest.
	MetadataOffset uint64 `json:"metadata_offset"`
	// FencedNodes are registered brokers the controller fenced (silent
	// for broker.session.timeout.ms): they lead nothing and clients do
	// not see them. They count as down.
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

// Evaluate puts the facts in order and sets Healthy and UnhealthyReasons.
// A fenced or unreachable node is down, and a down node is one of Nodes;
// every list is sorted and holds each entry once. A cluster is healthy
// when a controller is known and up, no node is down, every partition has
// a leader, no log dir failed or is below its free-space floor, no
// replica holds damaged data, and no node's request budget is starved. Under-replicated partitions are listed but
// do not make it unhealthy: every partition is still served, and a
// replica catching up after a restart is the cluster working. Degraded
// is judged apart and never touches Healthy: an uplink down longer than
// its node's threshold, or refusing a partition (DegradedReasons).
func (h *ClusterHealth) Evaluate() {
	if h.DataLossLedger == nil {
		h.DataLossLedger = []DataLoss{}
	}
	h.DownNodes = append(append(h.DownNodes, h.FencedNodes...), h.UnreachableNodes...)
	h.Nodes = append(h.Nodes, h.DownNodes...)
	for _, s := range []*[]int32{&h.Nodes, &h.DownNodes, &h.FencedNodes, &h.UnreachableNodes} {
		if *s == nil {
			*s = []int32{}
		}
		slices.Sort(*s)
		*s = slices.Compact(*s)
	}
	for _, s := range []*[]string{&h.LeaderlessPartitions, &h.UnderReplicatedPartitions, &h.OfflineLogDirs} {
		if *s == nil {
			*s = []string{}
		}
		slices.Sort(*s)
		*s = slices.Compact(*s)
	}
	if h.DamagedPartitions == nil {
		h.DamagedPartitions = []DamagedPartition{}
	}
	// sort.Slice, not slices.SortFunc, for these structs: a generic
	// sort instantiates the whole pdqsort family per type, 10 KiB or
	// more of the binary each.
	sort.Slice(h.DamagedPartitions, func(i, j int) bool {
		a, b := &h.DamagedPartitions[i], &h.DamagedPartitions[j]
		return a.Partition < b.Partition || a.Partition == b.Partition && a.Node < b.Node
	})
	h.DamagedPartitions = slices.CompactFunc(h.DamagedPartitions, func(a, b DamagedPartition) bool {
		return a.Node == b.Node && a.Partition == b.Partition
	})
	if h.LogDirsBelowFloor == nil {
		h.LogDirsBelowFloor = []LogDirBelowFloor{}
	}
	sort.Slice(h.LogDirsBelowFloor, func(i, j int) bool {
		a, b := &h.LogDirsBelowFloor[i], &h.LogDirsBelowFloor[j]
		return a.Node < b.Node || a.Node == b.Node && a.Dir < b.Dir
	})
	h.LogDirsBelowFloor = slices.CompactFunc(h.LogDirsBelowFloor, func(a, b LogDirBelowFloor) bool {
		return a.Node == b.Node && a.Dir == b.Dir
	})

	if h.StarvedNodes == nil {
		h.StarvedNodes = []StarvedNode{}
	}
	sort.Slice(h.StarvedNodes, func(i, j int) bool { return h.StarvedNodes[i].Node < h.StarvedNodes[j].Node })
	h.StarvedNodes = slices.CompactFunc(h.StarvedNodes, func(a, b StarvedNode) bool { return a.Node == b.Node })

	if h.LoadingNodes == nil {
		h.LoadingNodes = []LoadingNode{}
	}
	sort.Slice(h.LoadingNodes, func(i, j int) bool { return h.LoadingNodes[i].Node < h.LoadingNodes[j].Node })
	h.LoadingNodes = slices.CompactFunc(h.LoadingNodes, func(a, b LoadingNode) bool { return a.Node == b.Node })

	if h.Uplinks == nil {
		h.Uplinks = []UplinkState{}
	}
	sort.Slice(h.Uplinks, func(i, j int) bool {
		a, b := &h.Uplinks[i], &h.Uplinks[j]
		return a.Link < b.Link || a.Link == b.Link && a.Node < b.Node
	})
	n := 0
	for i := range h.Uplinks {
		if i > 0 && h.Uplinks[i].Link == h.Uplinks[n-1].Link && h.Uplinks[i].Node == h.Uplinks[n-1].Node {
			continue
		}
		h.Uplinks[n] = h.Uplinks[i]
		n++
	}
	h.Uplinks = h.Uplinks[:n]
	h.DegradedReasons = []string{}
	if slices.ContainsFunc(h.Uplinks, func(u UplinkState) bool { return u.Down && !u.Paused }) {
		h.DegradedReasons = append(h.DegradedReasons, ReasonUplinkDown)
	}
	if slices.ContainsFunc(h.Uplinks, func(u UplinkState) bool { return u.RefusedPartitions > 0 }) {
		h.DegradedReasons = append(h.DegradedReasons, ReasonUplinkRefused)
	}
	full, dropped := false, false
	for i := range h.Uplinks {
		full = full || h.Uplinks[i].BacklogFull
		dropped = dropped || h.Uplinks[i].RecentlyDropped
	}
	if full {
		h.DegradedReasons = append(h.DegradedReasons, ReasonUplinkBacklogFull)
	}
	if dropped {
		h.DegradedReasons = append(h.DegradedReasons, ReasonUplinkDropped)
	}
	h.Degraded = len(h.DegradedReasons) > 0

	h.UnhealthyReasons = []string{}
	if h.ControllerID < 0 {
		h.UnhealthyReasons = append(h.UnhealthyReasons, ReasonNoController)
	} else if slices.Contains(h.DownNodes, h.ControllerID) {
		h.UnhealthyReasons = append(h.UnhealthyReasons, ReasonControllerDown)
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
	if len(h.DamagedPartitions) > 0 {
		h.UnhealthyReasons = append(h.UnhealthyReasons, ReasonDamaged)
	}
	if len(h.LogDirsBelowFloor) > 0 {
		h.UnhealthyReasons = append(h.UnhealthyReasons, ReasonBelowFloor)
	}
	if len(h.StarvedNodes) > 0 {
		h.UnhealthyReasons = append(h.UnhealthyReasons, ReasonStarved)
	}
	h.Healthy = len(h.UnhealthyReasons) == 0
}

// NodeReady is /readyz's verdict for node id from the same facts: nil when
// the node can serve clients, else why not. A node cannot serve when no
// controller is known (it cannot learn of changes or lead), when it is
// down (fenced: the controller took its leaderships and clients do not
// see it), when its log dir failed, or when its request budget is starved
// (its clients' requests wait and none is admitted). Each of these also makes the
// cluster unhealthy, so a node is never unready while Evaluate calls the
// cluster healthy. The reverse does not hold: a peer down, a leaderless
// or damaged partition, a log dir below its floor make the cluster
// unhealthy while this node still serves what it can, and taking it out
// of service would not help. Call it after Evaluate. /readyz also needs
// what only the node knows (recovery done, listener bound, metadata
// caught up), which the broker checks first.
func (h *ClusterHealth) NodeReady(id int32) error {
	var why []string
	if h.ControllerID < 0 {
		why = append(why, ReasonNoController+": no controller is known")
	}
	switch {
	case slices.Contains(h.FencedNodes, id):
		why = append(why, fmt.Sprintf("%s: node %d is fenced: the controller has not heard it within broker.session.timeout.ms, so it leads nothing and clients do not see it", ReasonNodesDown, id))
	case slices.Contains(h.DownNodes, id):
		why = append(why, fmt.Sprintf("%s: node %d is down: not registered with the controller", ReasonNodesDown, id))
	}
	prefix := nodePrefix(id)
	for _, d := range h.OfflineLogDirs {
		if strings.HasPrefix(d, prefix) {
			why = append(why, ReasonOfflineLogDirs+": "+d)
		}
	}
	for _, d := range h.StarvedNodes {
		if d.Node == id {
			why = append(why, fmt.Sprintf("%s: %d requests waiting for the request budget, the first for %d ms, and none admitted since", ReasonStarved, d.Waiting, d.OldestWaitMs))
		}
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("not ready: %s", strings.Join(why, "; "))
}

// Err is nil for a healthy cluster, else an error naming every reason with
// its facts.
func (h *ClusterHealth) Err() error {
	if h.Healthy {
		return nil
	}
	var parts []string
	for _, r := range h.UnhealthyReasons {
		switch r {
		case ReasonControllerDown:
			parts = append(parts, fmt.Sprintf("%s %d", r, h.ControllerID))
		case ReasonNodesDown:
			parts = append(parts, fmt.Sprintf("%s %v", r, h.DownNodes))
		case ReasonLeaderless:
			parts = append(parts, fmt.Sprintf("%s %v", r, limitList(h.LeaderlessPartitions)))
		case ReasonOfflineLogDirs:
			parts = append(parts, fmt.Sprintf("%s %v", r, h.OfflineLogDirs))
		case ReasonDamaged:
			var names []string
			for _, d := range h.DamagedPartitions {
				names = append(names, fmt.Sprintf("%s on node %d", d.Partition, d.Node))
			}
			parts = append(parts, fmt.Sprintf("%s %v", r, limitList(names)))
		case ReasonBelowFloor:
			var names []string
			for _, d := range h.LogDirsBelowFloor {
				names = append(names, fmt.Sprintf("node %d: %s (%d bytes free, floor %d)", d.Node, d.Dir, d.FreeBytes, d.FloorBytes))
			}
			parts = append(parts, fmt.Sprintf("%s %v", r, names))
		case ReasonStarved:
			var names []string
			for _, d := range h.StarvedNodes {
				names = append(names, fmt.Sprintf("node %d: %d waiting, the first for %d ms", d.Node, d.Waiting, d.OldestWaitMs))
			}
			parts = append(parts, fmt.Sprintf("%s %v", r, names))
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
