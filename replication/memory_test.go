package replication

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/internal/vfs"
)

// idleReplicaHeap hosts n idle partitions (leader, one replica) and
// returns the heap per partition that the replicas hold on top of their
// logs (the logs are opened first and not counted; the leader epoch
// checkpoint each new leader writes is, with the memory vfs's files), and
// that of the logs and the image.
func idleReplicaHeap(t testing.TB, n int) (replica, image int64) {
	heap := func() int64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapInuse)
	}
	logs, err := engine.OpenManager(vfs.NewMem(), "/data", engine.ManagerConfig{ClusterID: "c", NodeID: 1, Defaults: engine.DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	before := heap()
	var recs []cluster.Record
	for topic := 0; topic*100 < n; topic++ {
		id := cluster.NewUUID()
		name := fmt.Sprintf("topic%d", topic)
		recs = append(recs, cluster.Record{Kind: cluster.KindTopic, Topic: &cluster.TopicRecord{Name: name, ID: id}})
		for p := int32(0); p < 100; p++ {
			recs = append(recs, cluster.Record{Kind: cluster.KindPartition, Partition: &cluster.PartitionRecord{TopicID: id, Partition: p,
				Replicas: []int32{1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 1}})
			if _, err := logs.GetOrCreateLog(engine.TopicPartition{Topic: name, Partition: p}); err != nil {
				t.Fatal(err)
			}
		}
	}
	im, err := cluster.ImageOf(recs...)
	if err != nil {
		t.Fatal(err)
	}
	recs = nil
	withImage := heap()
	m := NewManager(1, logs, func(*cluster.Image, string, map[string]string) engine.Options { return engine.DefaultOptions() }, nil)
	logsAndImage := heap()
	m.ApplyImage(nil, im)
	after := heap()
	runtime.KeepAlive(m)
	runtime.KeepAlive(im)
	return (after - logsAndImage) / int64(n), (withImage - before) / int64(n)
}

// TestIdleReplicaHeap reports the heap an idle hosted partition's
// replica holds beside its log, and bounds it with room to spare.
func TestIdleReplicaHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap: runs GC many times")
	}
	replica, withLogs := idleReplicaHeap(t, 2000)
	t.Logf("heap per idle partition: %d B replica (replication.Partition and its core); %d B log and image (memory vfs files included)", replica, withLogs)
	if replica > 4<<10 {
		t.Fatalf("an idle replica holds %d B beside its log; bound 4 KiB", replica)
	}
}
