package replication

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/internal/vfs"
)

// ServeReplicaRequest answers the two kmsg requests a follower sends, at
// the versions it sends them, from the replica the connection belongs
// to, and refuses everything else (nil: the transport closes the
// connection).
func TestServeReplicaRequestKinds(t *testing.T) {
	logs, err := engine.OpenManager(vfs.NewMem(), "/data", engine.ManagerConfig{ClusterID: "c", NodeID: 1, Defaults: engine.DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager(1, logs, func(*cluster.Image, string, map[string]string) engine.Options { return engine.DefaultOptions() }, nil)
	id := cluster.NewUUID()
	im, err := cluster.ImageOf(
		cluster.Record{Kind: cluster.KindTopic, Topic: &cluster.TopicRecord{Name: "t", ID: id}},
		cluster.Record{Kind: cluster.KindPartition, Partition: &cluster.PartitionRecord{TopicID: id, Partition: 0,
			Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 0}})
	if err != nil {
		t.Fatal(err)
	}
	m.ApplyImage(nil, im)
	if p := m.Partition(engine.TopicPartition{Topic: "t"}); p == nil || !p.isLeader {
		t.Fatal("t-0 is not led here")
	}

	ofle := func(version int16, replica int32) *kmsg.OffsetForLeaderEpochRequest {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.SetVersion(version)
		req.ReplicaID = replica
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = "t"
		for _, partition := range []int32{0, 9} {
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch = partition, 0
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		return req
	}
	fetch := func(version int16, replica int32) *kmsg.FetchRequest {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(version)
		req.ReplicaID, req.MaxBytes, req.MinBytes = replica, 1<<20, 1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}

	for name, req := range map[string]kmsg.Request{
		"OffsetForLeaderEpoch of another version": ofle(ReplicaOffsetForLeaderEpochVersion+1, 2),
		"OffsetForLeaderEpoch of another replica": ofle(ReplicaOffsetForLeaderEpochVersion, 3),
		"Fetch of another version":                fetch(ReplicaFetchVersion+1, 2),
		"Fetch of another replica":                fetch(ReplicaFetchVersion, 3),
		"Fetch of a consumer":                     fetch(ReplicaFetchVersion, -1),
		"Produce":                                 kmsg.NewPtrProduceRequest(),
	} {
		if body := m.ServeReplicaRequest(2, 0, req); body != nil {
			body.Done()
			t.Errorf("%s: answered, want refused", name)
		}
	}

	req := ofle(ReplicaOffsetForLeaderEpochVersion, 2)
	body := m.ServeReplicaRequest(2, 0, req)
	if body == nil {
		t.Fatal("OffsetForLeaderEpoch from the follower refused")
	}
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	if err := resp.ReadFrom(body.Chunks[0].Bytes); err != nil || len(body.Chunks) != 1 {
		t.Fatalf("OffsetForLeaderEpoch response in %d chunks: %v", len(body.Chunks), err)
	}
	got := resp.Topics[0].Partitions
	if len(got) != 2 || got[0].ErrorCode != 0 || got[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("OffsetForLeaderEpoch answers %+v, want t-0 without error and t-9 unknown", got)
	}

	body = m.ServeReplicaRequest(2, 0, fetch(ReplicaFetchVersion, 2))
	if body == nil {
		t.Fatal("Fetch from the follower refused")
	}
	defer body.Done()
	if f := decodeFetch(t, body.Chunks); f.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("Fetch answered error %d", f.Topics[0].Partitions[0].ErrorCode)
	}
}
