package engine

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// TestCleanRestartOpensLittle: a clean restart of idle partitions reads
// what must be in place before a partition serves (its leader-epoch
// checkpoint and its producer snapshot) and lists its directory once; its
// segment files are only looked up (stat), never opened: they open on
// first use.
func TestCleanRestartOpensLittle(t *testing.T) {
	const n = 20
	dir := t.TempDir()
	fsys := vfs.NewFaultFS(vfs.NewOS())
	makeIdlePartitions(t, fsys, dir, n)
	ops := countOps(fsys)
	m, err := OpenManager(fsys, dir, benchManagerConfig(DefaultOptions()))
	if err != nil {
		t.Fatal(err)
	}
	got := ops.String()
	defer m.Close()
	if !m.HadCleanShutdown() {
		t.Fatal("not a clean restart")
	}
	if rep := m.LoadReport(); rep.Partitions != n || len(rep.Recovered) != 0 {
		t.Fatalf("load report %+v, want %d partitions and none recovered", rep, n)
	}
	for key, want := range map[string]int{
		"open leader-epoch-checkpoint": n,
		"open *.snapshot":              n,
		"list <partition dir>":         n,
		"stat <partition dir>":         0, // the load lists it; no lookup first
		// The checkpoints the clean stop wrote say what new ones would.
		"create recovery-point-offset-checkpoint.tmp": 0,
		"create log-start-offset-checkpoint.tmp":      0,
		"open *.log":                                  0,
		"open *.index":                                0,
		"open *.timeindex":                            0,
		"create *.log":                                0,
		"stat *.log":                                  n,
		"stat *.index":                                n,
		"stat *.timeindex":                            n,
		"stat damaged-segments":                       0,
		"stat leader-epoch-checkpoint":                n, // the fstat of the open file
		"syncdata *.log":                              0,
		"sync *.index":                                0,
	} {
		if c := ops.get(key); c != want {
			t.Errorf("%s: %d, want %d\nall operations of the open:\n%s", key, c, want, got)
		}
	}
	// The partitions serve as before: an append opens the files.
	l := m.Log(TopicPartition{Topic: "t0", Partition: 3})
	if _, err := l.Append(makeBatch(t, batch.CompressionNone, 0, 1, 100, 1), 1); err != nil {
		t.Fatal(err)
	}
	if got := l.LogEndOffset(); got != 1 {
		t.Fatalf("log end offset %d after one append, want 1", got)
	}
}

// TestCleanRestartStillChecksIndexes: an index file of an idle partition
// that is not empty (its log is) fails the clean-load check on a clean
// restart, as it did when the load opened it, and is rebuilt by a scan.
func TestCleanRestartStillChecksIndexes(t *testing.T) {
	dir := t.TempDir()
	fsys := vfs.NewOS()
	makeIdlePartitions(t, fsys, dir, 2)
	tp := TopicPartition{Topic: "t0", Partition: 1}
	name := fmt.Sprintf("%s/%s/%020d%s", dir, tp, 0, indexSuffix)
	if err := os.WriteFile(name, []byte{0, 0, 0, 0, 0, 0, 0, 9}, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := OpenManager(fsys, dir, benchManagerConfig(DefaultOptions()))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !m.HadCleanShutdown() {
		t.Fatal("not a clean restart")
	}
	if rep := m.LoadReport(); !slices.Contains(rep.Recovered, tp) || len(rep.Recovered) != 1 {
		t.Fatalf("recovered %v, want only %s", rep.Recovered, tp)
	}
	if st, err := os.Stat(name); err != nil || st.Size() != 0 {
		t.Fatalf("index after the restart: %v, %v; want it rebuilt empty", st, err)
	}
}
