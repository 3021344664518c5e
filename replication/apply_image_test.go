package replication

import (
	"fmt"
	"testing"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/internal/vfs"
)

// An image that changes one topic costs a pass over that topic only, not
// over every partition of the node; a change of the dynamic broker
// configs under the topics' own goes over them all again.
func TestApplyImageOnlyChangedTopics(t *testing.T) {
	logs, err := engine.OpenManager(vfs.NewMem(), "/data", engine.ManagerConfig{ClusterID: "c", NodeID: 1, Defaults: engine.DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	m := NewManager(1, logs, func(_ *cluster.Image, topic string, _ map[string]string) engine.Options {
		seen[topic]++
		return engine.DefaultOptions()
	}, nil)
	var recs []cluster.Record
	ids := map[string]cluster.UUID{}
	for i := range 20 {
		name := fmt.Sprintf("t%d", i)
		ids[name] = cluster.NewUUID()
		recs = append(recs, cluster.Record{Kind: cluster.KindTopic, Topic: &cluster.TopicRecord{Name: name, ID: ids[name]}})
		for p := range int32(5) {
			recs = append(recs, cluster.Record{Kind: cluster.KindPartition, Partition: &cluster.PartitionRecord{TopicID: ids[name], Partition: p,
				Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1}})
		}
	}
	first, err := cluster.ImageOf(recs...)
	if err != nil {
		t.Fatal(err)
	}
	m.ApplyImage(nil, first)
	if len(seen) != 20 {
		t.Fatalf("the first image went over %d topics, want 20", len(seen))
	}
	clear(seen)
	// Partition t7-3 shrinks its ISR.
	second, err := first.With(cluster.Record{Kind: cluster.KindPartition, Partition: &cluster.PartitionRecord{TopicID: ids["t7"], Partition: 3,
		Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1, PartitionEpoch: 1}})
	if err != nil {
		t.Fatal(err)
	}
	m.ApplyImage(first, second)
	if len(seen) != 1 || seen["t7"] != 1 {
		t.Fatalf("an ISR change of t7 went over topics %v, want t7 alone", seen)
	}
	if p := m.Partition(engine.TopicPartition{Topic: "t7", Partition: 3}); p == nil || len(p.core.isr) != 2 {
		t.Fatal("t7-3 did not take its new ISR")
	}
	clear(seen)
	v := "2"
	third, err := second.With(cluster.Record{Kind: cluster.KindConfig, Config: &cluster.ConfigRecord{ResourceType: cluster.ResourceBroker, Name: "", Key: "min.insync.replicas", Value: &v}})
	if err != nil {
		t.Fatal(err)
	}
	m.ApplyImage(second, third)
	if len(seen) != 20 {
		t.Fatalf("a cluster-wide config change went over %d topics, want 20", len(seen))
	}
}
