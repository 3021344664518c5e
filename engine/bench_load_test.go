package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wren-broker/wren/internal/vfs"
)

// opCounter counts the file-system operations that pass a FaultFS, by
// kind and by the kind of file they touch (its suffix or base name).
type opCounter struct {
	mu sync.Mutex
	n  map[string]int
}

// countOps makes every operation on fsys counted in c (through faults
// whose path filter counts and never fires).
func countOps(fsys *vfs.FaultFS) *opCounter {
	c := &opCounter{n: map[string]int{}}
	for op := vfs.OpCreate; op <= vfs.OpStatFS; op <<= 1 {
		name := op.String()
		fsys.Inject(vfs.Fault{Op: op, Path: func(p string) bool {
			c.mu.Lock()
			c.n[name+" "+fileKind(p)]++
			c.mu.Unlock()
			return false
		}})
	}
	return c
}

// fileKind names the kind of file a path is: a segment file's suffix, or
// the base name of anything else.
func fileKind(p string) string {
	base := filepath.Base(p)
	if _, err := ParseTopicPartitionDir(base); err == nil {
		return "<partition dir>"
	}
	if len(base) > 20 && strings.Trim(base[:20], "0123456789") == "" {
		return "*" + base[20:]
	}
	return base
}

func (c *opCounter) reset() {
	c.mu.Lock()
	c.n = map[string]int{}
	c.mu.Unlock()
}

func (c *opCounter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

func (c *opCounter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := 0
	for _, v := range c.n {
		t += v
	}
	return t
}

func (c *opCounter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.n))
	for k := range c.n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d\n", k, c.n[k])
	}
	return b.String()
}

// makeIdlePartitions creates n idle partitions in dir, each led once
// (an epoch checkpoint, as a broker's leadership leaves), and closes the
// Manager cleanly.
func makeIdlePartitions(tb testing.TB, fsys vfs.FS, dir string, n int) {
	tb.Helper()
	m, err := OpenManager(fsys, dir, benchManagerConfig(DefaultOptions()))
	if err != nil {
		tb.Fatal(err)
	}
	m.UncleanShutdownHandled()
	for i := range n {
		l, err := m.GetOrCreateLog(TopicPartition{Topic: fmt.Sprintf("t%d", i/100), Partition: int32(i % 100)})
		if err != nil {
			tb.Fatal(err)
		}
		if err := l.AssignLeaderEpoch(1); err != nil {
			tb.Fatal(err)
		}
	}
	if err := m.Close(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkOpenIdlePartitions is a clean restart of a data directory of
// idle partitions on a real disk: the time to open the Manager, and the
// file-system operations it made, per partition. fs=counted counts the
// operations through a FaultFS; fs=os opens on the bare operating-system
// file system, whose small files are read on the bare descriptor
// (vfs.ReadFileLimit), as a broker's are.
func BenchmarkOpenIdlePartitions(b *testing.B) {
	for _, n := range []int{1000} {
		for _, kind := range []string{"counted", "os"} {
			b.Run(fmt.Sprintf("partitions=%d/fs=%s", n, kind), func(b *testing.B) {
				dir := b.TempDir()
				var fsys vfs.FS = vfs.NewOS()
				var ops *opCounter
				if kind == "counted" {
					ffs := vfs.NewFaultFS(vfs.NewOS())
					ops, fsys = countOps(ffs), ffs
				}
				makeIdlePartitions(b, fsys, dir, n)
				var open, load time.Duration
				total, stopTotal := 0, 0
				last := ""
				b.ResetTimer()
				for range b.N {
					if ops != nil {
						ops.reset()
					}
					started := time.Now()
					m, err := OpenManager(fsys, dir, benchManagerConfig(DefaultOptions()))
					if err != nil {
						b.Fatal(err)
					}
					open += time.Since(started)
					load += m.LoadReport().Duration
					if ops != nil {
						total += ops.total()
						last = ops.String()
					}
					if !m.HadCleanShutdown() {
						b.Fatal("not a clean restart")
					}
					b.StopTimer()
					if ops != nil {
						ops.reset()
					}
					if err := m.Close(); err != nil {
						b.Fatal(err)
					}
					if ops != nil {
						stopTotal += ops.total()
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(open.Nanoseconds())/float64(b.N*n), "ns/partition")
				b.ReportMetric(float64(load.Nanoseconds())/float64(b.N*n), "load-ns/partition")
				if ops != nil {
					b.ReportMetric(float64(total)/float64(b.N*n), "fsops/partition")
					// The clean stop after it (the next start's summary).
					b.ReportMetric(float64(stopTotal)/float64(b.N*n), "stop-fsops/partition")
					b.Logf("last open:\n%s", last)
				}
			})
		}
	}
}

// TestOpenIdleForTrace is a harness for a system-call trace of a clean
// restart, run by hand: with WREN_TRACE_DIR set it fills that directory
// with 1,000 idle partitions when it is empty, else opens it and closes
// it again, statting the paths "<dir>/open-begin" and "<dir>/open-end"
// (missing) around the open so that a trace can be cut there.
func TestOpenIdleForTrace(t *testing.T) {
	dir := os.Getenv("WREN_TRACE_DIR")
	if dir == "" {
		t.Skip("WREN_TRACE_DIR not set")
	}
	fsys := vfs.NewOS()
	if _, err := os.Stat(dir + "/meta.properties"); err != nil {
		makeIdlePartitions(t, fsys, dir, 1000)
		return
	}
	os.Stat(dir + "/open-begin")
	m, err := OpenManager(fsys, dir, benchManagerConfig(DefaultOptions()))
	os.Stat(dir + "/open-end")
	if err != nil {
		t.Fatal(err)
	}
	if !m.HadCleanShutdown() {
		t.Fatal("not a clean restart")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}
