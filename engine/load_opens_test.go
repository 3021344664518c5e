package engine

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// TestCleanRestartOpensLittle: a clean restart of idle partitions lists
// each partition's directory once and looks up (stat) the directory and
// its segment files; their leader epochs and producer snapshot come from
// the clean-stop summary, one file for the directory, so no file of a
// partition is opened. Without the summary (removed here) each partition's
// leader-epoch checkpoint and producer snapshot are read, as before.
func TestCleanRestartOpensLittle(t *testing.T) {
	const n = 20
	for _, withSummary := range []bool{true, false} {
		t.Run(fmt.Sprintf("summary=%v", withSummary), func(t *testing.T) {
			dir := t.TempDir()
			fsys := vfs.NewFaultFS(vfs.NewOS())
			makeIdlePartitions(t, fsys, dir, n)
			if !withSummary {
				if err := os.Remove(dir + "/" + CleanStopSummaryFile); err != nil {
					t.Fatal(err)
				}
			}
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
			fromSummary, removed := 0, 0
			perFile, dirStats, logStats := n, n, 2*n
			if withSummary {
				fromSummary, perFile, removed = n, 0, 1
			}
			if rep := m.LoadReport(); rep.Partitions != n || len(rep.Recovered) != 0 || rep.FromSummary != fromSummary {
				t.Fatalf("load report %+v, want %d partitions, none recovered, %d from the summary", rep, n, fromSummary)
			}
			for key, want := range map[string]int{
				"open leader-epoch-checkpoint": perFile,
				// Empty partitions: a stop writes them no snapshot.
				"open *.snapshot":      0,
				"list <partition dir>": n,
				// With the summary, the directory's stamp proves its files
				// unchanged since the stop.
				"stat <partition dir>": dirStats,
				// The checkpoints the clean stop wrote say what new ones would.
				"create recovery-point-offset-checkpoint.tmp": 0,
				"create log-start-offset-checkpoint.tmp":      0,
				"open *.log":                                  0,
				"open *.index":                                0,
				"open *.timeindex":                            0,
				"create *.log":                                0,
				"stat *.log":                                  logStats, // and the last segment's stamp
				"stat *.index":                                n,
				"stat *.timeindex":                            n,
				"stat damaged-segments":                       0,
				"stat leader-epoch-checkpoint":                perFile, // the fstat of the open file
				"syncdata *.log":                              0,
				"sync *.index":                                0,
				"remove " + CleanStopSummaryFile:              removed,
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
		})
	}
}

// TestCleanStopAfterCleanStartTouchesNothing: a clean stop of partitions
// that a clean start loaded and that took nothing since opens, syncs and
// writes none of their files (it looks them up: the summary's stamps); the
// one partition written since is synced and its snapshot written. Each
// start after it uses the summary again.
func TestCleanStopAfterCleanStartTouchesNothing(t *testing.T) {
	const n = 20
	dir := t.TempDir()
	fsys := vfs.NewFaultFS(vfs.NewOS())
	makeIdlePartitions(t, fsys, dir, n)
	for round := range 3 {
		m, err := OpenManager(fsys, dir, benchManagerConfig(DefaultOptions()))
		if err != nil {
			t.Fatal(err)
		}
		if rep := m.LoadReport(); rep.FromSummary != n {
			t.Fatalf("round %d: %d partitions from the summary, want %d", round, rep.FromSummary, n)
		}
		written := round == 1
		if written {
			l := m.Log(TopicPartition{Topic: "t0", Partition: 3})
			if _, err := l.Append(makeBatch(t, batch.CompressionNone, 0, 1, 100, 1), 1); err != nil {
				t.Fatal(err)
			}
		}
		ops := countOps(fsys)
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		got := ops.String()
		touched := 0
		if written {
			touched = 1
		}
		for key, want := range map[string]int{
			"open *.log":                              0,
			"open *.index":                            0,
			"open *.timeindex":                        0,
			"open *.snapshot":                         touched, // the written one looks for its new snapshot
			"syncdata *.log":                          touched,
			"sync *.index":                            touched,
			"sync *.timeindex":                        touched,
			"create *.snapshot.tmp":                   touched,
			"create leader-epoch-checkpoint.tmp":      0,
			"stat <partition dir>":                    n + touched, // the untouched check, and the written one's stamp for the summary
			"create " + CleanStopSummaryFile + ".tmp": 1,
		} {
			if c := ops.get(key); c != want {
				t.Errorf("round %d: %s: %d, want %d\nall operations of the stop:\n%s", round, key, c, want, got)
			}
		}
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
