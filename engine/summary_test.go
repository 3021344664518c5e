package engine

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/wren-broker/wren/internal/vfs"
)

// summaryTestPartitions are the partitions of the clean-stop summary
// tests: each with leader epochs and an idempotent producer.
var summaryTestPartitions = []TopicPartition{{"s", 0}, {"s", 1}, {"s", 2}}

// logBuffer is a slog.Logger's output, safe for the load's goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *logBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *logBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func summaryTestConfig(lb *logBuffer) ManagerConfig {
	cfg := loadTestConfig()
	if lb != nil {
		cfg.Logger = slog.New(slog.NewTextHandler(lb, nil))
	}
	return cfg
}

// partitionState is what the summary stands in for: a log's leader
// epochs and producers, with its offsets.
type partitionState struct {
	leo, lso  int64
	epochs    []EpochEntry
	producers string
}

func stateOf(l *Log) partitionState {
	// A snapshot keeps each producer's last batch (Kafka's layout).
	var ps []string
	for _, e := range l.ProducerStates() {
		b, _ := e.LastBatch()
		ps = append(ps, fmt.Sprintf("%d/%d seq %d at %d", e.ProducerID, e.ProducerEpoch, b.LastSequence, b.LastOffset))
	}
	return partitionState{leo: l.LogEndOffset(), lso: l.LogStartOffset(), epochs: l.LeaderEpochs(),
		producers: strings.Join(ps, ", ")}
}

// makeSummaryDir fills dir with the test partitions, each with two
// leader epochs and producer batches, and stops cleanly. It returns their
// state.
func makeSummaryDir(t *testing.T, fsys vfs.FS, dir string) map[TopicPartition]partitionState {
	t.Helper()
	m, err := OpenManager(fsys, dir, summaryTestConfig(nil))
	mustNotErr(t, err)
	m.UncleanShutdownHandled()
	want := map[TopicPartition]partitionState{}
	for i, tp := range summaryTestPartitions {
		l, err := m.GetOrCreateLog(tp)
		mustNotErr(t, err)
		for e := int32(1); e <= 2; e++ {
			mustNotErr(t, l.AssignLeaderEpoch(e))
			for k := 0; k <= i; k++ {
				_, err := l.Append(makeProducerBatch(t, l, 500+int64(k), int(e), 2, 1000), e)
				mustNotErr(t, err)
			}
		}
		want[tp] = stateOf(l)
	}
	mustNotErr(t, m.Close())
	if _, err := fsys.Stat(dir + "/" + CleanStopSummaryFile); err != nil {
		t.Fatalf("a clean stop left no summary: %v", err)
	}
	return want
}

// reopenSummary opens dir and checks that every partition's state is the
// one the stop left, and that the summary is gone; it returns the number
// of partitions loaded from the summary.
func reopenSummary(t *testing.T, fsys vfs.FS, dir string, cfg ManagerConfig, want map[TopicPartition]partitionState) int {
	t.Helper()
	m, err := OpenManager(fsys, dir, cfg)
	mustNotErr(t, err)
	defer m.Close()
	if !m.HadCleanShutdown() {
		t.Fatal("not a clean restart")
	}
	for tp, w := range want {
		l := m.Log(tp)
		if l == nil {
			t.Fatalf("%s not loaded", tp)
		}
		if got := stateOf(l); !slices.Equal(got.epochs, w.epochs) || got.producers != w.producers || got.leo != w.leo || got.lso != w.lso {
			t.Fatalf("%s after a clean restart: %+v, want %+v", tp, got, w)
		}
		checkProducerStateMatchesReplay(t, l)
	}
	if _, err := fsys.Stat(dir + "/" + CleanStopSummaryFile); err == nil {
		t.Fatal("the summary is still there after the start: the next crash's recovery could take it")
	}
	return m.LoadReport().FromSummary
}

// TestCleanStopSummaryUsed: a clean start after a clean stop takes every
// partition's epochs and producers from the summary, and they are what
// the partitions' own files say (the same start without the summary).
func TestCleanStopSummaryUsed(t *testing.T) {
	mem := vfs.NewMem()
	want := makeSummaryDir(t, mem, "/data")
	if n := reopenSummary(t, mem, "/data", summaryTestConfig(nil), want); n != len(want) {
		t.Fatalf("%d partitions from the summary, want %d", n, len(want))
	}
	// The stop after that start wrote a new one; without it the files
	// say the same.
	mustNotErr(t, mem.Remove("/data/"+CleanStopSummaryFile))
	if n := reopenSummary(t, mem, "/data", summaryTestConfig(nil), want); n != 0 {
		t.Fatalf("%d partitions from a summary that was removed", n)
	}
	// And the one written by the stop of a start without it is used.
	if n := reopenSummary(t, mem, "/data", summaryTestConfig(nil), want); n != len(want) {
		t.Fatalf("%d partitions from the summary, want %d", n, len(want))
	}
}

// TestCleanStopSummaryIgnored: a summary that is not provably of the
// stop that left the files is not used, wholly or for the partition
// concerned; the partitions load from their own files.
func TestCleanStopSummaryIgnored(t *testing.T) {
	changed := summaryTestPartitions[1]
	for _, tc := range []struct {
		name string
		// change alters the stopped directory; it returns the state the
		// changed partition must then have, if any.
		change func(t *testing.T, fsys *vfs.MemFS, want map[TopicPartition]partitionState)
		// fromSummary is how many partitions still load from the summary.
		fromSummary int
		// logged is what the log must say, if anything.
		logged string
	}{
		{"marker of another stop", func(t *testing.T, fsys *vfs.MemFS, _ map[TopicPartition]partitionState) {
			// What a start and a clean stop of an older build, or of
			// Kafka, leaves: the same marker, written anew, and the
			// summary it does not know about.
			mustNotErr(t, fsys.Remove("/data/"+CleanShutdownFile))
			mustNotErr(t, vfs.WriteFileAtomic(fsys, "/data/"+CleanShutdownFile, []byte(cleanShutdownContents)))
		}, 0, "another stop"},
		{"recovery-point checkpoint rewritten", func(t *testing.T, fsys *vfs.MemFS, _ map[TopicPartition]partitionState) {
			data, err := vfs.ReadFile(fsys, "/data/"+RecoveryPointCheckpointFile)
			mustNotErr(t, err)
			mustNotErr(t, vfs.WriteFileAtomic(fsys, "/data/"+RecoveryPointCheckpointFile, data))
		}, 0, RecoveryPointCheckpointFile + " changed"},
		{"log-start checkpoint rewritten", func(t *testing.T, fsys *vfs.MemFS, _ map[TopicPartition]partitionState) {
			data, err := vfs.ReadFile(fsys, "/data/"+LogStartOffsetCheckpointFile)
			mustNotErr(t, err)
			mustNotErr(t, vfs.WriteFileAtomic(fsys, "/data/"+LogStartOffsetCheckpointFile, data))
		}, 0, LogStartOffsetCheckpointFile + " changed"},
		{"a partition's leader-epoch checkpoint rewritten", func(t *testing.T, fsys *vfs.MemFS, want map[TopicPartition]partitionState) {
			// As an offline repair might: epoch 2 now starts later. Only
			// the partition's directory stamp tells.
			w := want[changed]
			w.epochs = []EpochEntry{w.epochs[0], {Epoch: 2, StartOffset: w.epochs[1].StartOffset + 1}}
			want[changed] = w
			lines := []string{}
			for _, e := range w.epochs {
				lines = append(lines, fmt.Sprintf("%d %d", e.Epoch, e.StartOffset))
			}
			mustNotErr(t, writeCheckpoint(fsys, "/data/"+changed.String()+"/"+LeaderEpochCheckpointFile, lines))
		}, 2, ""},
		{"a partition's last segment written in place", func(t *testing.T, fsys *vfs.MemFS, _ map[TopicPartition]partitionState) {
			// Same size, same inode, same bytes: only its ctime tells.
			name := segmentFileName("/data/"+changed.String(), 0, logSuffix)
			f, err := fsys.OpenReadWrite(name)
			mustNotErr(t, err)
			b := make([]byte, 1)
			_, err = f.ReadAt(b, 0)
			mustNotErr(t, err)
			_, err = f.WriteAt(b, 0)
			mustNotErr(t, err)
			mustNotErr(t, f.Sync())
			mustNotErr(t, f.Close())
		}, 2, ""},
		{"corrupt body", func(t *testing.T, fsys *vfs.MemFS, _ map[TopicPartition]partitionState) {
			rewriteSummary(t, fsys, func(b []byte) []byte { b[len(b)-3] ^= 0x40; return b })
		}, 0, "CRC mismatch"},
		{"truncated", func(t *testing.T, fsys *vfs.MemFS, _ map[TopicPartition]partitionState) {
			rewriteSummary(t, fsys, func(b []byte) []byte { return b[:len(b)/2] })
		}, 0, "body of"},
		{"empty", func(t *testing.T, fsys *vfs.MemFS, _ map[TopicPartition]partitionState) {
			rewriteSummary(t, fsys, func(b []byte) []byte { return nil })
		}, 0, "not a clean-stop summary"},
		{"newer version", func(t *testing.T, fsys *vfs.MemFS, _ map[TopicPartition]partitionState) {
			rewriteSummary(t, fsys, func(b []byte) []byte { b[len(summaryMagic)+1]++; return b })
		}, 0, "version 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			want := makeSummaryDir(t, mem, "/data")
			tc.change(t, mem, want)
			lb := &logBuffer{}
			if n := reopenSummary(t, mem, "/data", summaryTestConfig(lb), want); n != tc.fromSummary {
				t.Fatalf("%d partitions from the summary, want %d", n, tc.fromSummary)
			}
			if tc.logged != "" && (!strings.Contains(lb.String(), "clean-stop summary ignored") || !strings.Contains(lb.String(), tc.logged)) {
				t.Fatalf("log %q, want the summary ignored for %q", lb.String(), tc.logged)
			}
		})
	}
}

// rewriteSummary replaces the summary's bytes with change's, keeping
// the directory otherwise as it is (the summary is the last file the stop
// writes).
func rewriteSummary(t *testing.T, fsys vfs.FS, change func([]byte) []byte) {
	t.Helper()
	name := "/data/" + CleanStopSummaryFile
	b, err := vfs.ReadFile(fsys, name)
	mustNotErr(t, err)
	mustNotErr(t, vfs.WriteFileAtomic(fsys, name, change(b)))
}

// TestCleanStopSummaryWholeSecondCtime: on a file system whose ctimes are
// whole seconds a stop writes no summary, and a start loads from the files.
func TestCleanStopSummaryWholeSecondCtime(t *testing.T) {
	mem := vfs.NewMem()
	mem.SetWholeSecondCtime(true)
	m, err := OpenManager(mem, "/data", summaryTestConfig(nil))
	mustNotErr(t, err)
	m.UncleanShutdownHandled()
	l, err := m.GetOrCreateLog(summaryTestPartitions[0])
	mustNotErr(t, err)
	mustNotErr(t, l.AssignLeaderEpoch(3))
	want := map[TopicPartition]partitionState{summaryTestPartitions[0]: stateOf(l)}
	mustNotErr(t, m.Close())
	if _, err := mem.Stat("/data/" + CleanStopSummaryFile); err == nil {
		t.Fatal("a summary on a file system with whole-second ctimes")
	}
	if n := reopenSummary(t, mem, "/data", summaryTestConfig(nil), want); n != 0 {
		t.Fatalf("%d partitions from the summary, want none", n)
	}
}

// TestCleanStopSummaryNotAfterCrash: a summary left beside no marker (a
// crash after a start, whatever the start did) is never used, and the
// start removes it.
func TestCleanStopSummaryNotAfterCrash(t *testing.T) {
	mem := vfs.NewMem()
	want := makeSummaryDir(t, mem, "/data")
	saved, err := vfs.ReadFile(mem, "/data/"+CleanStopSummaryFile)
	mustNotErr(t, err)
	m, err := OpenManager(mem, "/data", summaryTestConfig(nil))
	mustNotErr(t, err)
	if m.LoadReport().FromSummary != len(want) {
		t.Fatal("summary not used")
	}
	// Power loss while it serves: the marker's and the summary's removal
	// were durable before the loads.
	after := mem.Crash(vfs.CrashOptions{})
	if _, err := after.Stat("/data/" + CleanStopSummaryFile); err == nil {
		t.Fatal("the summary survived a crash after the start that took it")
	}
	// Put it back, as if its removal had been lost: no marker, not used.
	mustNotErr(t, vfs.WriteFileAtomic(after, "/data/"+CleanStopSummaryFile, saved))
	m2, err := OpenManager(after, "/data", summaryTestConfig(nil))
	mustNotErr(t, err)
	defer m2.Close()
	if m2.HadCleanShutdown() || m2.LoadReport().FromSummary != 0 {
		t.Fatalf("after a crash: clean %v, %d from the summary", m2.HadCleanShutdown(), m2.LoadReport().FromSummary)
	}
	for tp, w := range want {
		if got := stateOf(m2.Log(tp)); !slices.Equal(got.epochs, w.epochs) || got.producers != w.producers {
			t.Fatalf("%s after the crash: %+v, want %+v", tp, got, w)
		}
	}
	if _, err := after.Stat("/data/" + CleanStopSummaryFile); err == nil {
		t.Fatal("an unclean start left the summary")
	}
}

// TestCleanStopSummaryCopiedDir: a data directory copied file by file
// (a backup restored, a disk cloned by copy) has new inodes: its summary
// is not used.
func TestCleanStopSummaryCopiedDir(t *testing.T) {
	src := t.TempDir()
	osfs := vfs.NewOS()
	want := makeSummaryDir(t, osfs, src)
	dst := filepath.Join(t.TempDir(), "copy")
	mustNotErr(t, os.CopyFS(dst, os.DirFS(src)))
	lb := &logBuffer{}
	if n := reopenSummary(t, osfs, dst, summaryTestConfig(lb), want); n != 0 {
		t.Fatalf("%d partitions of a copied directory from its summary", n)
	}
	if !strings.Contains(lb.String(), "another stop") {
		t.Fatalf("log %q, want the summary ignored", lb.String())
	}
	// The original is untouched by that and uses its own.
	if n := reopenSummary(t, osfs, src, summaryTestConfig(nil), want); n != len(want) {
		t.Fatalf("%d partitions from the summary, want %d", n, len(want))
	}
}
