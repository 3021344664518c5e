package health

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestEvaluate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		h       ClusterHealth
		reasons []string
	}{
		{"healthy", ClusterHealth{ControllerID: 1, Nodes: []int32{1}}, []string{}},
		{"under-replicated is still healthy", ClusterHealth{ControllerID: 1, Nodes: []int32{1, 2},
			UnderReplicatedPartitions: []string{"t/0"}}, []string{}},
		{"no controller", ClusterHealth{ControllerID: -1, Nodes: []int32{1}}, []string{ReasonNoController}},
		{"everything wrong", ClusterHealth{ControllerID: -1, Nodes: []int32{2, 1}, DownNodes: []int32{2},
			LeaderlessPartitions: []string{"t/1", "t/0"}, OfflineLogDirs: []string{"node 1: /d: EIO"}},
			[]string{ReasonNoController, ReasonNodesDown, ReasonLeaderless, ReasonOfflineLogDirs}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.h
			h.Evaluate()
			if !reflect.DeepEqual(h.UnhealthyReasons, tc.reasons) || h.Healthy != (len(tc.reasons) == 0) {
				t.Fatalf("reasons %v healthy %v, want %v", h.UnhealthyReasons, h.Healthy, tc.reasons)
			}
			if (h.Err() == nil) != h.Healthy {
				t.Fatalf("Err() = %v with Healthy %v", h.Err(), h.Healthy)
			}
			for _, r := range tc.reasons {
				if !strings.Contains(h.Err().Error(), r) {
					t.Fatalf("Err() = %v does not name %s", h.Err(), r)
				}
			}
			if h.LeaderlessPartitions == nil || h.DownNodes == nil || h.OfflineLogDirs == nil {
				t.Fatalf("nil lists encode as JSON null: %+v", h)
			}
			if len(h.Nodes) > 1 && h.Nodes[0] > h.Nodes[1] {
				t.Fatalf("nodes not sorted: %v", h.Nodes)
			}
		})
	}
}

// TestEvaluateOneDefinition: fenced and unreachable nodes count as down
// and are listed once among every node; damage and a log dir below its
// floor make the cluster unhealthy with their own reasons; the controller
// down says so.
func TestEvaluateOneDefinition(t *testing.T) {
	for _, tc := range []struct {
		name      string
		h         ClusterHealth
		reasons   []string
		nodes     []int32
		down      []int32
		readyNode int32
		ready     bool
	}{
		{name: "fenced is down, listed once",
			h:       ClusterHealth{ControllerID: 2, Nodes: []int32{2, 1, 1, 3}, ControlPlane: ControlPlane{FencedNodes: []int32{1}}},
			reasons: []string{ReasonNodesDown}, nodes: []int32{1, 2, 3}, down: []int32{1}, readyNode: 1},
		{name: "a peer down leaves this node ready",
			h:       ClusterHealth{ControllerID: 2, Nodes: []int32{1, 2}, DownNodes: []int32{3}},
			reasons: []string{ReasonNodesDown}, nodes: []int32{1, 2, 3}, down: []int32{3}, readyNode: 2, ready: true},
		{name: "unreachable controller",
			h:       ClusterHealth{ControllerID: 3, Nodes: []int32{1, 2, 3}, UnreachableNodes: []int32{3}},
			reasons: []string{ReasonControllerDown, ReasonNodesDown}, nodes: []int32{1, 2, 3}, down: []int32{3}, readyNode: 1, ready: true},
		{name: "damaged replica",
			h: ClusterHealth{ControllerID: 1, Nodes: []int32{1, 2},
				DamagedPartitions: []DamagedPartition{{Node: 2, Partition: "t/0", Ranges: 1}}},
			reasons: []string{ReasonDamaged}, nodes: []int32{1, 2}, down: []int32{}, readyNode: 2, ready: true},
		{name: "below the floor",
			h: ClusterHealth{ControllerID: 1, Nodes: []int32{1, 2},
				LogDirsBelowFloor: []LogDirBelowFloor{{Node: 2, Dir: "/d", FreeBytes: 1, FloorBytes: 2}}},
			reasons: []string{ReasonBelowFloor}, nodes: []int32{1, 2}, down: []int32{}, readyNode: 2, ready: true},
		{name: "own log dir failed",
			h:       ClusterHealth{ControllerID: 1, Nodes: []int32{1, 2}, OfflineLogDirs: []string{OfflineLogDir(2, "/d", "EIO")}},
			reasons: []string{ReasonOfflineLogDirs}, nodes: []int32{1, 2}, down: []int32{}, readyNode: 2},
		{name: "own request budget starved",
			h: ClusterHealth{ControllerID: 1, Nodes: []int32{1, 2},
				StarvedNodes: []StarvedNode{{Node: 2, Waiting: 3, OldestWaitMs: 12000}}},
			reasons: []string{ReasonStarved}, nodes: []int32{1, 2}, down: []int32{}, readyNode: 2},
		{name: "a peer's request budget starved leaves this node ready",
			h: ClusterHealth{ControllerID: 1, Nodes: []int32{1, 2},
				StarvedNodes: []StarvedNode{{Node: 2, Waiting: 3, OldestWaitMs: 12000}}},
			reasons: []string{ReasonStarved}, nodes: []int32{1, 2}, down: []int32{}, readyNode: 1, ready: true},
		{name: "no controller",
			h:       ClusterHealth{ControllerID: -1, Nodes: []int32{1}},
			reasons: []string{ReasonNoController}, nodes: []int32{1}, down: []int32{}, readyNode: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.h
			h.Evaluate()
			if !reflect.DeepEqual(h.UnhealthyReasons, tc.reasons) {
				t.Fatalf("reasons %v, want %v", h.UnhealthyReasons, tc.reasons)
			}
			if !reflect.DeepEqual(h.Nodes, tc.nodes) || !reflect.DeepEqual(h.DownNodes, tc.down) {
				t.Fatalf("nodes %v down %v, want %v and %v", h.Nodes, h.DownNodes, tc.nodes, tc.down)
			}
			err := h.NodeReady(tc.readyNode)
			if (err == nil) != tc.ready {
				t.Fatalf("NodeReady(%d) = %v, want ready %v", tc.readyNode, err, tc.ready)
			}
			for _, r := range tc.reasons {
				if !strings.Contains(h.Err().Error(), r) {
					t.Fatalf("Err() = %v does not name %s", h.Err(), r)
				}
			}
			// Evaluating twice changes nothing.
			again := h
			again.Evaluate()
			if !reflect.DeepEqual(again, h) {
				t.Fatalf("a second Evaluate changed %+v into %+v", h, again)
			}
		})
	}
}

// TestNodeReadyImpliesHealthy cross-checks the two verdicts over random
// facts: a node that is not ready (for a reason in the facts) always
// comes with an unhealthy cluster, and a healthy cluster has every node
// ready.
func TestNodeReadyImpliesHealthy(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	pick := func() []int32 {
		var s []int32
		for id := int32(1); id <= 3; id++ {
			if rng.IntN(4) == 0 {
				s = append(s, id)
			}
		}
		return s
	}
	for i := 0; i < 2000; i++ {
		h := ClusterHealth{ControllerID: int32(rng.IntN(5)) - 1, Nodes: pick(), DownNodes: pick(), UnreachableNodes: pick(),
			ControlPlane: ControlPlane{FencedNodes: pick()}}
		for _, id := range pick() {
			h.OfflineLogDirs = append(h.OfflineLogDirs, OfflineLogDir(id, "/d", "EIO"))
		}
		for _, id := range pick() {
			h.DamagedPartitions = append(h.DamagedPartitions, DamagedPartition{Node: id, Partition: "t/0"})
		}
		for _, id := range pick() {
			h.AddNodeFacts(NodeFacts{Node: id, RequestBudgetStarved: &StarvedNode{Waiting: 1}})
		}
		h.Evaluate()
		for id := int32(1); id <= 3; id++ {
			if err := h.NodeReady(id); err != nil && h.Healthy {
				t.Fatalf("seed %d: node %d not ready (%v) while the cluster is healthy: %+v", seed, id, err, h)
			}
		}
		if !slices.IsSorted(h.Nodes) || len(slices.Compact(slices.Clone(h.Nodes))) != len(h.Nodes) {
			t.Fatalf("seed %d: nodes %v not sorted and unique", seed, h.Nodes)
		}
		for _, id := range h.DownNodes {
			if !slices.Contains(h.Nodes, id) {
				t.Fatalf("seed %d: down node %d not among the nodes %v", seed, id, h.Nodes)
			}
		}
	}
}

// TestAddNodeFacts: a node's facts replace what was held about it, and
// leave the other nodes' alone.
func TestAddNodeFacts(t *testing.T) {
	h := ClusterHealth{OfflineLogDirs: []string{OfflineLogDir(1, "/a", "EIO"), OfflineLogDir(2, "/b", "EIO")},
		DamagedPartitions: []DamagedPartition{{Node: 2, Partition: "t/0"}, {Node: 1, Partition: "t/1"}},
		LogDirsBelowFloor: []LogDirBelowFloor{{Node: 2, Dir: "/b"}},
		StarvedNodes:      []StarvedNode{{Node: 2, Waiting: 1}},
		LoadingNodes:      []LoadingNode{{Node: 2, Partitions: 40}}}
	h.AddNodeFacts(NodeFacts{Node: 3, RequestBudgetStarved: &StarvedNode{Waiting: 5}, PartitionsLoading: 7})
	h.AddNodeFacts(NodeFacts{Node: 2, DamagedPartitions: []DamagedPartition{{Partition: "u/3"}}})
	h.Evaluate()
	if !reflect.DeepEqual(h.LoadingNodes, []LoadingNode{{Node: 3, Partitions: 7}}) {
		t.Fatalf("loading after node 3's and node 2's facts: %+v", h.LoadingNodes)
	}
	for _, r := range append(h.UnhealthyReasons, h.DegradedReasons...) {
		if strings.Contains(r, "load") {
			t.Fatalf("a node loading partitions judged: %v, degraded %v", h.UnhealthyReasons, h.DegradedReasons)
		}
	}
	if !reflect.DeepEqual(h.StarvedNodes, []StarvedNode{{Node: 3, Waiting: 5}}) {
		t.Fatalf("starved after node 3's and node 2's facts: %+v", h.StarvedNodes)
	}
	if !reflect.DeepEqual(h.OfflineLogDirs, []string{OfflineLogDir(1, "/a", "EIO")}) || len(h.LogDirsBelowFloor) != 0 ||
		!reflect.DeepEqual(h.DamagedPartitions, []DamagedPartition{{Node: 1, Partition: "t/1"}, {Node: 2, Partition: "u/3"}}) {
		t.Fatalf("after node 2's facts: %+v", h)
	}
}

// TestUplinkDegraded: a link down past its node's threshold, or refusing
// a partition, makes the cluster degraded and leaves it healthy; a
// paused link does neither; a node's facts replace what was held about
// its links.
func TestUplinkDegraded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		links   []UplinkState
		reasons []string
	}{
		{"no links", nil, []string{}},
		{"up", []UplinkState{{Link: "c", Up: true}}, []string{}},
		{"down under the threshold", []UplinkState{{Link: "c", DownForMs: 500}}, []string{}},
		{"paused", []UplinkState{{Link: "c", Paused: true, Down: true}}, []string{}},
		{"down", []UplinkState{{Link: "c", Down: true}}, []string{ReasonUplinkDown}},
		{"refused and down", []UplinkState{{Link: "c", Up: true, RefusedPartitions: 1}, {Link: "d", Down: true}},
			[]string{ReasonUplinkDown, ReasonUplinkRefused}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := ClusterHealth{ControllerID: 1, Nodes: []int32{1}}
			h.AddNodeFacts(NodeFacts{Node: 1, Uplinks: tc.links})
			h.Evaluate()
			if !h.Healthy || !reflect.DeepEqual(h.DegradedReasons, tc.reasons) || h.Degraded != (len(tc.reasons) > 0) {
				t.Fatalf("healthy %v degraded %v %v, want healthy and %v", h.Healthy, h.Degraded, h.DegradedReasons, tc.reasons)
			}
			if len(h.Uplinks) != len(tc.links) || h.Uplinks == nil {
				t.Fatalf("uplinks %+v", h.Uplinks)
			}
		})
	}
	h := ClusterHealth{ControllerID: 1, Nodes: []int32{1, 2}}
	h.AddNodeFacts(NodeFacts{Node: 2, Uplinks: []UplinkState{{Link: "c", Down: true}}})
	h.AddNodeFacts(NodeFacts{Node: 1, Uplinks: []UplinkState{{Link: "c", Up: true}}})
	h.AddNodeFacts(NodeFacts{Node: 2, Uplinks: []UplinkState{{Link: "c", Up: true}}})
	h.Evaluate()
	if h.Degraded || len(h.Uplinks) != 2 || h.Uplinks[0].Node != 1 || h.Uplinks[1].Node != 2 {
		t.Fatalf("after node 2's fresh facts: degraded %v, uplinks %+v", h.Degraded, h.Uplinks)
	}
}
