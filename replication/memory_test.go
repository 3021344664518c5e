package replication

import (
	"fmt"
	"runtime"
	"runtime/metrics"
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

// liveHeap is the heap marked live by a full collection.
func liveHeap() int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// restartedPartitionHeap creates n empty partitions (topics of 100, one
// replica, led here), then opens them again as a restarted node does: the
// metadata image, the logs loaded from their directories under an
// open-file budget, the replicas hosted. It returns the live heap per
// partition held by each of the three: what a node of many idle
// partitions pays for every one. The files are in memory (created before
// the measurement starts), under a data directory of a usual length, so
// the paths a partition holds cost what they would on a disk.
func restartedPartitionHeap(tb testing.TB, n int) (image, logs, replicas int64) {
	fsys, dir := vfs.NewMem(), "/var/lib/wren/data"
	cfg := engine.ManagerConfig{ClusterID: "c", NodeID: 1, Defaults: engine.DefaultOptions(), OpenFilesMax: 256}
	m, err := engine.OpenManager(fsys, dir, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	records := func() []cluster.Record {
		var recs []cluster.Record
		for topic := 0; topic*100 < n; topic++ {
			id := cluster.NewUUID()
			recs = append(recs, cluster.Record{Kind: cluster.KindTopic, Topic: &cluster.TopicRecord{Name: fmt.Sprintf("topic%d", topic), ID: id}})
			for p := int32(0); p < 100 && topic*100+int(p) < n; p++ {
				recs = append(recs, cluster.Record{Kind: cluster.KindPartition, Partition: &cluster.PartitionRecord{TopicID: id, Partition: p,
					Replicas: []int32{1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 1}})
			}
		}
		return recs
	}
	for p := range n {
		if _, err := m.GetOrCreateLog(engine.TopicPartition{Topic: fmt.Sprintf("topic%d", p/100), Partition: int32(p % 100)}); err != nil {
			tb.Fatal(err)
		}
	}
	if err := m.Close(); err != nil {
		tb.Fatal(err)
	}

	start := liveHeap()
	im, err := cluster.ImageOf(records()...)
	if err != nil {
		tb.Fatal(err)
	}
	withImage := liveHeap()
	m, err = engine.OpenManager(fsys, dir, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	defer m.Close()
	if got := len(m.Logs()); got != n {
		tb.Fatalf("%d logs loaded, want %d", got, n)
	}
	withLogs := liveHeap()
	r := NewManager(1, m, func(*cluster.Image, string, map[string]string) engine.Options { return engine.DefaultOptions() }, nil)
	r.ApplyImage(nil, im)
	if got := len(r.Partitions()); got != n {
		tb.Fatalf("%d partitions hosted, want %d", got, n)
	}
	after := liveHeap()
	runtime.KeepAlive(r)
	runtime.KeepAlive(im)
	per := func(b int64) int64 { return b / int64(n) }
	return per(withImage - start), per(withLogs - withImage), per(after - withLogs)
}

// TestRestartedPartitionHeap logs the live heap a restarted node holds
// per idle partition (log, image entry, replica) and bounds the sum with
// some room: a regression that gives every idle partition a buffer, a
// channel, a goroutine or a timer fails it. Measured at 2,000 partitions:
// 2.9 KiB before the idle structures were made lazy, 2.3 KiB before the
// handles shared their directory and a Partition made its waits lazily,
// 2.0 KiB after.
func TestRestartedPartitionHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 2,000 partitions on disk and measures the heap")
	}
	const n = 2000
	image, logs, replicas := restartedPartitionHeap(t, n)
	total := logs + image + replicas
	t.Logf("live heap per idle partition after a restart: %d B (log %d B, image %d B, replica %d B; %d partitions)", total, logs, image, replicas, n)
	const bound = 5 << 9 // 2.5 KiB
	if total > bound {
		t.Fatalf("an idle partition holds %d B after a restart (log %d B, image %d B, replica %d B); bound %d B", total, logs, image, replicas, bound)
	}
}

// BenchmarkRestartedPartitionHeap reports the live heap per idle partition
// of a restarted node (B/partition) and its parts, at 2,000 partitions.
func BenchmarkRestartedPartitionHeap(b *testing.B) {
	var logs, image, replicas int64
	for range b.N {
		image, logs, replicas = restartedPartitionHeap(b, 2000)
	}
	b.ReportMetric(float64(logs+image+replicas), "B/partition")
	b.ReportMetric(float64(logs), "log-B/partition")
	b.ReportMetric(float64(image), "image-B/partition")
	b.ReportMetric(float64(replicas), "replica-B/partition")
}
