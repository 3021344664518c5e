package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wren-broker/wren/internal/health"
)

// TestUplinkMerge: `uplink status` merges the links every broker runs:
// each partition's row is its leader's, a broker's word about a peer is
// ignored for the peer's own, the totals add up, and a --watch look
// says how fast the backlog falls and the time left.
func TestUplinkMerge(t *testing.T) {
	part := func(topic string, p int32, leader bool, next, backlog int64) health.UplinkPartition {
		return health.UplinkPartition{Topic: topic, Partition: p, Leader: leader, Active: leader, Next: next, BacklogRecords: backlog, BacklogBytes: backlog * 10}
	}
	answers := func(backlog0 int64) []brokerAnswer {
		return []brokerAnswer{
			{id: 1, full: true, health: health.ClusterHealth{Uplinks: []health.UplinkState{
				{Node: 1, Link: "c", Up: true, RecordsPerSec: 10, SentRecords: 5, Partitions: []health.UplinkPartition{
					part("t", 0, true, 7, backlog0), part("t", 1, false, 3, 0)}},
				// Node 2 as node 1 last heard it: node 2's answer counts.
				{Node: 2, Link: "c", Down: true, Partitions: []health.UplinkPartition{part("t", 1, true, 1, 99)}},
			}}},
			{id: 2, full: true, health: health.ClusterHealth{Uplinks: []health.UplinkState{
				{Node: 2, Link: "c", Up: true, RecordsPerSec: 5, SentRecords: 2, Partitions: []health.UplinkPartition{
					part("t", 1, true, 9, 20)}},
			}}},
			{id: 3, err: errors.New("no answer")},
		}
	}
	t0 := time.Unix(1_700_000_000, 0)
	r := mergeUplinks(answers(100), t0)
	r.progress(nil)
	if len(r.Links) != 1 || len(r.UnreachableNodes) != 1 || r.UnreachableNodes[0] != 3 {
		t.Fatalf("report %+v", r)
	}
	l := r.Links[0]
	if len(l.Nodes) != 2 || len(l.Partitions) != 2 || l.Partitions[1].Node != 2 || l.Partitions[1].Next != 9 ||
		l.BacklogRecords != 120 || l.BacklogBytes != 1200 || l.SentRecords != 7 || l.RecordsPerSec != 15 || l.TimeLeftSeconds != 8 {
		t.Fatalf("merged link %+v", l)
	}
	next := mergeUplinks(answers(40), t0.Add(2*time.Second))
	next.progress(&r)
	if l := next.Links[0]; l.DrainPerSec != 30 || l.TimeLeftSeconds != 2 {
		t.Fatalf("second look: drain %v/s, time left %v s, want 30 and 2", l.DrainPerSec, l.TimeLeftSeconds)
	}
	var out bytes.Buffer
	printUplinks(&out, next)
	for _, want := range []string{"LINK c: backlog 60 records", "backlog falling 30.0 records/s; time left 2s", "node 2: up", "nodes unreachable"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, out.String())
		}
	}
}

// TestUplinkMergeDirections: a link's pushed and pulled rows of one
// local partition stay apart, each its leader's, and the text names the
// direction.
func TestUplinkMergeDirections(t *testing.T) {
	answers := []brokerAnswer{{id: 1, full: true, health: health.ClusterHealth{Uplinks: []health.UplinkState{
		{Node: 1, Link: "c", Up: true, Partitions: []health.UplinkPartition{
			{Topic: "t", Partition: 0, Direction: "pull", Leader: true, Active: true, Next: 5},
			{Topic: "t", Partition: 0, Direction: "push", Leader: true, Active: true, Next: 9}}},
	}}}}
	r := mergeUplinks(answers, time.Unix(1_700_000_000, 0))
	if len(r.Links) != 1 || len(r.Links[0].Partitions) != 2 || r.Links[0].Partitions[0].Direction != "push" || r.Links[0].Partitions[1].Next != 5 {
		t.Fatalf("merged %+v", r.Links)
	}
	var out bytes.Buffer
	printUplinks(&out, r)
	for _, want := range []string{"DIRECTION", "pull", "pulling", "forwarding"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, out.String())
		}
	}
}
