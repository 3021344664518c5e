package kafka

import (
	"fmt"

	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/groups"
)

func findCoordinatorRequest(keys ...string) *kmsg.FindCoordinatorRequest {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.SetVersion(4)
	req.CoordinatorKeys = keys
	return req
}

// groupOn returns a group id whose partition of a 4-partition
// __consumer_offsets is p.
func groupOn(t *testing.T, p int32) string {
	t.Helper()
	for i := range 1000 {
		if k := fmt.Sprintf("g%d", i); groups.PartitionFor(k, 4) == p {
			return k
		}
	}
	t.Fatalf("no group id on partition %d", p)
	return ""
}

// offsetsTopicID is the fake __consumer_offsets topic's id.
var offsetsTopicID = cluster.UUID{9, 9}

// addOffsetsTopic commits a 4-partition __consumer_offsets whose
// partitions are led by leaders, in order.
func (f *seamFixture) addOffsetsTopic(t *testing.T, leaders ...int32) {
	t.Helper()
	records := []cluster.Record{{Kind: cluster.KindTopic, Topic: &cluster.TopicRecord{Name: groups.OffsetsTopic, ID: offsetsTopicID}}}
	for p, l := range leaders {
		replicas := []int32{1, 2, 3}
		isr := replicas
		if l < 0 {
			isr = nil
		}
		records = append(records, cluster.Record{Kind: cluster.KindPartition, Partition: &cluster.PartitionRecord{
			TopicID: offsetsTopicID, Partition: int32(p), Replicas: replicas, ISR: isr, Leader: l, LeaderEpoch: 1}})
	}
	f.addRecords(t, records...)
}

// TestFindCoordinator: any node names the leader of the group's partition
// of __consumer_offsets from its image, wherever that leader is, and
// COORDINATOR_NOT_AVAILABLE only while there is none to name. Whether
// this node runs a coordinator itself does not matter.
func TestFindCoordinator(t *testing.T) {
	f := newSeamFixture(t)
	resp := f.do(t, findCoordinatorRequest("g")).(*kmsg.FindCoordinatorResponse)
	wantCode(t, "no __consumer_offsets yet", resp.Coordinators[0].ErrorCode, kerr.CoordinatorNotAvailable)

	// Partition 0 is led here, 1 by node 2, 2 by nobody, 3 by node 4,
	// which is not a live broker. This node runs no coordinator.
	f.addOffsetsTopic(t, 1, 2, -1, 4)
	keys := []string{groupOn(t, 0), groupOn(t, 1), groupOn(t, 2), groupOn(t, 3), ""}
	resp = f.do(t, findCoordinatorRequest(keys...)).(*kmsg.FindCoordinatorResponse)
	if len(resp.Coordinators) != len(keys) {
		t.Fatalf("%d coordinators for %d keys", len(resp.Coordinators), len(keys))
	}
	for i, want := range []struct {
		id   int32
		host string
	}{{1, "node1.test"}, {2, "node2.test"}} {
		c := resp.Coordinators[i]
		wantCode(t, c.Key, c.ErrorCode, nil)
		if c.Key != keys[i] || c.NodeID != want.id || c.Host != want.host || c.Port != 9092 {
			t.Errorf("%s: node %d at %s:%d, want node %d at %s:9092", c.Key, c.NodeID, c.Host, c.Port, want.id, want.host)
		}
	}
	for i, what := range map[int]string{2: "leaderless partition", 3: "leader not live"} {
		c := resp.Coordinators[i]
		wantCode(t, what, c.ErrorCode, kerr.CoordinatorNotAvailable)
		if c.NodeID != -1 || c.Host != "" || c.Port != -1 {
			t.Errorf("%s: names node %d at %s:%d", what, c.NodeID, c.Host, c.Port)
		}
	}
	wantCode(t, "empty group id", resp.Coordinators[4].ErrorCode, kerr.InvalidRequest)

	// The image names this node, but its replica of the partition
	// follows at a later epoch: the image is stale here, so this node
	// names no one rather than itself. A replica at the image's epoch or
	// an older one follows the image.
	for _, c := range []struct {
		leader bool
		epoch  int32
		want   *kerr.Error
	}{{false, 2, kerr.CoordinatorNotAvailable}, {false, 1, nil}, {false, 0, nil}, {true, 2, nil}} {
		f.partitions.replicas[engine.TopicPartition{Topic: groups.OffsetsTopic, Partition: 0}] = &fakeReplica{leader: c.leader, leaderEpoch: c.epoch}
		r := f.do(t, findCoordinatorRequest(keys[0])).(*kmsg.FindCoordinatorResponse).Coordinators[0]
		wantCode(t, fmt.Sprintf("replica leader=%v at epoch %d", c.leader, c.epoch), r.ErrorCode, c.want)
	}
	delete(f.partitions.replicas, engine.TopicPartition{Topic: groups.OffsetsTopic, Partition: 0})

	// v0-3 answer one key, with the same lookup.
	old := kmsg.NewPtrFindCoordinatorRequest()
	old.SetVersion(2)
	old.CoordinatorKey = keys[1]
	r := f.do(t, old).(*kmsg.FindCoordinatorResponse)
	wantCode(t, "v2", r.ErrorCode, nil)
	if r.NodeID != 2 || r.Host != "node2.test" || r.Port != 9092 {
		t.Errorf("v2: node %d at %s:%d, want node 2 at node2.test:9092", r.NodeID, r.Host, r.Port)
	}
	old.CoordinatorKey = keys[2]
	r = f.do(t, old).(*kmsg.FindCoordinatorResponse)
	wantCode(t, "v2 leaderless", r.ErrorCode, kerr.CoordinatorNotAvailable)
	if r.NodeID != -1 || r.ErrorMessage == nil {
		t.Errorf("v2 leaderless: node %d, message %v", r.NodeID, r.ErrorMessage)
	}
}
