package engine

import (
	"testing"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// TestCleanShutdownMarker: a directory reads as cleanly shut down only
// after a completed Close, and a power loss at any time after the next
// open reads as unclean: the marker's removal at open is durable before
// the open returns, its creation at Close before Close returns.
func TestCleanShutdownMarker(t *testing.T) {
	const dir = "/data"
	mem := vfs.NewMem()
	cfg := ManagerConfig{NodeID: 1, ClusterID: "Y2x1c3Rlci1vbmUAAAAAAA", Defaults: DefaultOptions()}
	open := func(fsys vfs.FS) *Manager {
		t.Helper()
		m, err := OpenManager(fsys, dir, cfg)
		mustNotErr(t, err)
		return m
	}

	m := open(mem)
	if m.HadCleanShutdown() {
		t.Fatal("a new directory reads as cleanly shut down")
	}
	m.UncleanShutdownHandled()
	l, err := m.GetOrCreateLog(TopicPartition{"t", 0})
	mustNotErr(t, err)
	_, err = l.Append(makeBatch(t, batch.CompressionNone, 0, 3, 100, 1000), 0)
	mustNotErr(t, err)
	mustNotErr(t, m.Close())

	// A power loss right after Close keeps the marker: it was synced.
	mem = mem.Crash(vfs.CrashOptions{})
	m = open(mem)
	if !m.HadCleanShutdown() {
		t.Fatal("after a completed Close (and a power loss after it) the directory reads as unclean")
	}
	// The process dies without Close: the marker must be gone for good.
	mem = mem.Crash(vfs.CrashOptions{})
	if _, err := mem.Stat(dir + "/" + CleanShutdownFile); err == nil {
		t.Fatalf("%s survived a crash after the open that read it", CleanShutdownFile)
	}
	m = open(mem)
	if m.HadCleanShutdown() {
		t.Fatal("after a crash the directory reads as cleanly shut down")
	}
	// A start that stops before the cluster acted on the crash (a failed
	// start, say) must leave it unclean.
	mustNotErr(t, m.Close())
	m = open(mem)
	if m.HadCleanShutdown() {
		t.Fatal("a Close before UncleanShutdownHandled left the directory reading as cleanly shut down")
	}
	m.UncleanShutdownHandled()
	mustNotErr(t, m.Close())
	m = open(mem)
	defer m.Close()
	if !m.HadCleanShutdown() {
		t.Fatal("a Close after the unclean shutdown was handled does not read as clean")
	}
}
