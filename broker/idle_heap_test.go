package broker

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// nodeLiveHeap is the heap a full collection marks live.
func nodeLiveHeap() int64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// nodeIdlePartitionHeap runs one node in this process with its data in
// dir, creates n idle partitions through a real client (topics of 100,
// one replica, ten topics a CreateTopics request), and returns the live
// heap per partition the node holds with them, created and then after a
// clean restart: the figure that decides whether thousands of idle
// partitions fit a small host's memory. The scrubber is off, so no pass
// is in flight when the heap is measured.
func nodeIdlePartitionHeap(tb testing.TB, dir string, n int) (created, restarted int64) {
	cfg := testConfig(tb, dir, "[storage]\nlog.scrubber.enable = false\n")
	hosted := func(b *Broker) {
		tb.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for len(b.Replicas().Partitions()) < n {
			if time.Now().After(deadline) {
				tb.Fatalf("%d of %d partitions hosted after 2 minutes", len(b.Replicas().Partitions()), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	before := nodeLiveHeap()
	b, err := Start(cfg, Options{Logger: testLogger(tb)})
	if err != nil {
		tb.Fatal(err)
	}
	cl, adm := newClient(tb, b)
	ctx := testContext(tb)
	var names []string
	for i := 0; i*100 < n; i++ {
		names = append(names, fmt.Sprintf("idle%d", i))
	}
	for i := 0; i < len(names); i += 10 {
		resp, err := adm.CreateTopics(ctx, 100, 1, nil, names[i:min(i+10, len(names))]...)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			b.Close()
			tb.Fatal(err)
		}
	}
	cl.Close()
	hosted(b)
	created = (nodeLiveHeap() - before) / int64(n)
	if err := b.Close(); err != nil {
		tb.Fatal(err)
	}

	before = nodeLiveHeap()
	b, err = Start(cfg, Options{Logger: testLogger(tb)})
	if err != nil {
		tb.Fatal(err)
	}
	defer b.Close()
	hosted(b)
	restarted = (nodeLiveHeap() - before) / int64(n)
	return created, restarted
}

// BenchmarkNodeIdlePartitionHeap reports the live heap per idle partition
// of a whole node (B/partition: log, replica, metadata image and log,
// fetch and group state; created, and after a clean restart), at 2,000
// partitions. Run it alone: it reads the process's heap.
func BenchmarkNodeIdlePartitionHeap(b *testing.B) {
	const n = 2000
	var created, restarted int64
	for range b.N {
		created, restarted = nodeIdlePartitionHeap(b, b.TempDir(), n)
	}
	b.ReportMetric(float64(created), "created-B/partition")
	b.ReportMetric(float64(restarted), "restarted-B/partition")
}
