package engine

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/wren-broker/wren/internal/vfs"
)

// heapInuse is HeapInuse after two collections, so only live memory
// counts.
func heapInuse() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// idleHeapPerPartition opens n empty partitions on the memory vfs,
// created (fresh) or loaded from disk after a clean stop (loaded), and
// returns the heap they hold per partition, the memory vfs's own files
// included.
func idleHeapPerPartition(t testing.TB, n int, loaded bool) int64 {
	mem := vfs.NewMem()
	cfg := loadTestConfig()
	cfg.Defaults = DefaultOptions()
	m, err := OpenManager(mem, "/data", cfg)
	mustNotErr(t, err)
	m.UncleanShutdownHandled()
	before := heapInuse()
	create := func(m *Manager) {
		for p := 0; p < n; p++ {
			_, err := m.GetOrCreateLog(TopicPartition{fmt.Sprintf("topic%d", p/100), int32(p % 100)})
			mustNotErr(t, err)
		}
	}
	create(m)
	if loaded {
		mustNotErr(t, m.Close())
		before = heapInuse() // the vfs's files stay; the logs go
		m, err = OpenManager(mem, "/data", cfg)
		mustNotErr(t, err)
	}
	after := heapInuse()
	if got := len(m.Logs()); got != n {
		t.Fatalf("%d logs open, want %d", got, n)
	}
	runtime.KeepAlive(mem)
	mustNotErr(t, m.Close())
	return (after - before) / int64(n)
}

// TestIdlePartitionHeap reports the heap an idle partition's log holds,
// and bounds it with room to spare: a regression that gives every
// partition a buffer, a goroutine or a timer while idle fails it.
func TestIdlePartitionHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap: runs GC many times")
	}
	const n = 2000
	fresh := idleHeapPerPartition(t, n, false)
	loaded := idleHeapPerPartition(t, n, true)
	t.Logf("heap per idle partition log: %d B created, %d B loaded after a clean stop (%d partitions, memory vfs files included in created)", fresh, loaded, n)
	const bound = 8 << 10
	if fresh > bound || loaded > bound {
		t.Fatalf("an idle partition's log holds %d B created, %d B loaded; bound %d B", fresh, loaded, bound)
	}
}

// BenchmarkIdlePartitionHeap reports the heap per idle partition log
// as a metric (B/partition) at 1,000 and 10,000 partitions.
func BenchmarkIdlePartitionHeap(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, loaded := range []bool{false, true} {
			b.Run(fmt.Sprintf("partitions=%d/loaded=%v", n, loaded), func(b *testing.B) {
				var per int64
				for range b.N {
					per = idleHeapPerPartition(b, n, loaded)
				}
				b.ReportMetric(float64(per), "B/partition")
			})
		}
	}
}
