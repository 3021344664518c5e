package engine

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// TestRunCleaner: the Manager cleans compacted logs by their dirty ratio,
// max.compaction.lag.ms and due tombstones, keeps
// cleaner-offset-checkpoint in Kafka's format across restarts, never
// cleans a delete-only log, and sets aside a log it cannot read.
func TestRunCleaner(t *testing.T) {
	clock := &testClock{ms: 1_000_000}
	fsys := vfs.NewMem()
	compacted := compactOptions(clock)
	compacted.MinCleanableDirtyRatio = 0.5
	compacted.DeleteRetentionMs = 10_000
	deleteOnly := compactOptions(clock)
	deleteOnly.CleanupPolicy = CleanupDelete
	cfg := ManagerConfig{ClusterID: "c", NodeID: 1, Defaults: deleteOnly, TopicOptions: func(topic string) Options {
		if strings.HasPrefix(topic, "compacted") {
			return compacted
		}
		return deleteOnly
	}}
	m, err := OpenManager(fsys, "/data", cfg)
	mustNotErr(t, err)
	a, err := m.GetOrCreateLog(TopicPartition{"compacted", 0})
	mustNotErr(t, err)
	d, err := m.GetOrCreateLog(TopicPartition{"plain", 0})
	mustNotErr(t, err)
	value := bytes.Repeat([]byte("v"), 200)
	fill := func(l *Log, batches int, tombstone bool) {
		for i := 0; i < batches; i++ {
			v := value
			if tombstone && i == batches-1 {
				v = nil
			}
			_, err := l.Append(keyedBatch(t, batch.CompressionNone, []kv{{[]byte(fmt.Sprint(i % 5)), v}}, clock.ms), 0)
			mustNotErr(t, err)
		}
	}
	hw := func(l *Log) int64 { return l.LogEndOffset() }
	run := func() CleanerStats {
		t.Helper()
		st, err := m.RunCleaner(context.Background(), DefaultCleanerConfig(), hw)
		mustNotErr(t, err)
		return st
	}
	// Nothing to compact yet: no dedupe buffer taken.
	run()
	if m.cleaner.offsetMap != nil {
		t.Fatal("the cleaner took its dedupe buffer with nothing to compact")
	}
	fill(a, 60, true)
	mustNotErr(t, a.Roll())
	fill(d, 60, false)
	plainBefore := readAll(t, d)
	st := run()
	if st.LogsCleaned != 1 || st.SegmentsCleaned == 0 {
		t.Fatalf("first run: %+v", st)
	}
	if !bytes.Equal(readAll(t, d), plainBefore) {
		t.Fatal("a delete-only log was cleaned")
	}
	segs := a.Segments()
	active := segs[len(segs)-1].BaseOffset
	data, err := vfs.ReadFile(fsys, "/data/"+CleanerCheckpointFile)
	mustNotErr(t, err)
	if want := fmt.Sprintf("0\n1\ncompacted 0 %d\n", active); string(data) != want {
		t.Fatalf("cleaner-offset-checkpoint:\n%q\nwant\n%q", data, want)
	}
	// Little new dirt: below the ratio, nothing runs.
	mustNotErr(t, a.Roll())
	fill(a, 1, false)
	mustNotErr(t, a.Roll())
	if st := run(); st.LogsCleaned != 0 {
		t.Fatalf("cleaned below min.cleanable.dirty.ratio: %+v", st)
	}
	// The tombstone's horizon passes: the log is due whatever its ratio,
	// and the tombstone goes.
	clock.advance(11 * time.Second)
	if st := run(); st.LogsCleaned != 1 {
		t.Fatalf("due tombstone: %+v", st)
	}
	recs, _ := logRecords(t, a)
	for _, r := range recs {
		if r.value == nil {
			t.Fatalf("tombstone %v outlived delete.retention.ms", r)
		}
	}
	// max.compaction.lag.ms: old dirt is cleaned though the ratio is low.
	fill(a, 1, false)
	mustNotErr(t, a.Roll())
	if st := run(); st.LogsCleaned != 0 {
		t.Fatalf("cleaned below the ratio: %+v", st)
	}
	compacted.MaxCompactionLagMs = 1000
	mustNotErr(t, a.UpdateOptions(compacted))
	clock.advance(2 * time.Second)
	if st := run(); st.LogsCleaned != 1 {
		t.Fatalf("max.compaction.lag.ms passed: %+v", st)
	}
	// A restart keeps the checkpoint: nothing new, nothing cleaned.
	mustNotErr(t, m.Close())
	m, err = OpenManager(fsys, "/data", cfg)
	mustNotErr(t, err)
	defer m.Close()
	if st := run(); st.LogsCleaned != 0 {
		t.Fatalf("cleaned again after a restart: %+v", st)
	}
	// A corrupt batch in a dirty segment: an error once, then skipped.
	a = m.Log(TopicPartition{"compacted", 0})
	fill(a, 60, false)
	segs = a.Segments()
	victim := segs[len(segs)-2]
	f, err := fsys.OpenReadWrite(segmentFileName(a.dir, victim.BaseOffset, logSuffix))
	mustNotErr(t, err)
	_, err = f.WriteAt([]byte{0xff}, batch.RecordBatchOverhead+3)
	mustNotErr(t, err)
	mustNotErr(t, f.Close())
	if _, err := m.RunCleaner(context.Background(), DefaultCleanerConfig(), hw); err == nil || !strings.Contains(err.Error(), "compacted-0") {
		t.Fatalf("corrupt segment: %v", err)
	}
	if m.Failed() != nil {
		t.Fatalf("a read error failed the directory: %v", m.Failed())
	}
	if st, err := m.RunCleaner(context.Background(), DefaultCleanerConfig(), hw); err != nil || st.LogsCleaned != 0 {
		t.Fatalf("uncleanable log tried again: %+v, %v", st, err)
	}
}

// TestRecoveryCompletesInterruptedSwap crashes right after the commit
// point of a swap (.log.swap durable, old segments not yet removed) and
// right before it (index .swap files and the .log.cleaned), with every
// directory operation durable at once, and checks Kafka's recovery rules:
// the swap is completed; .cleaned and index .swap files are deleted.
func TestRecoveryCompletesInterruptedSwap(t *testing.T) {
	build := func(fsys vfs.FS) *Log {
		clock := &testClock{ms: 1_000_000}
		l := openTestLog(t, fsys, compactOptions(clock), OpenOptions{})
		for i := 0; i < 40; i++ {
			_, err := l.Append(keyedBatch(t, batch.CompressionNone, []kv{{[]byte(fmt.Sprint(i % 3)), bytes.Repeat([]byte("v"), 300)}}, clock.ms), 0)
			mustNotErr(t, err)
		}
		return l
	}
	// Count the operations up to the commit rename of the first run.
	mem := vfs.NewMem()
	probe := &renameProbe{FS: eagerDirFS{mem}, mem: mem}
	l := build(probe)
	before, _ := logRecords(t, l)
	start := mem.MutatingOps()
	res, err := l.Clean(context.Background(), CleanConfig{UpperBound: l.LogEndOffset(), DedupeBufferBytes: 1 << 16})
	mustNotErr(t, err)
	if res.SegmentsCleaned < 2 || probe.commitOp == 0 {
		t.Fatalf("setup: %+v, commit at op %d", res, probe.commitOp)
	}
	after, _ := logRecords(t, l)
	l.Close()
	for _, tc := range []struct {
		name       string
		crashAfter int64
		pending    string
		want       []modelRecord
	}{
		{"after the commit", probe.commitOp - start, ".log.swap", nil},
		{"before the commit", probe.beforeCommitOp - start, ".log.cleaned", before},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			l := build(eagerDirFS{mem})
			mem.SetCrashAfter(tc.crashAfter, vfs.CrashOptions{})
			if _, err := l.Clean(context.Background(), CleanConfig{UpperBound: l.LogEndOffset(), DedupeBufferBytes: 1 << 16}); err == nil {
				t.Fatal("the pass did not crash")
			}
			crashed := mem.Crash(vfs.CrashOptions{})
			names, _ := crashed.List("/data/t-0")
			if !strings.Contains(strings.Join(names, " "), tc.pending) {
				t.Fatalf("crash left no %s file: %v", tc.pending, names)
			}
			l2 := openTestLog(t, crashed, compactOptions(nil), OpenOptions{})
			defer l2.Close()
			got, _ := logRecords(t, l2)
			want := tc.want
			if want == nil {
				// The first run is swapped in; later runs are not cleaned.
				first := l2.Segments()[0]
				want = append(recordsBelow(after, first.NextOffset), recordsFrom(before, first.NextOffset)...)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("after recovery (files %v):\n got %v\nwant %v", names, got, want)
			}
			checkIndexesAgree(t, l2)
			names, _ = crashed.List("/data/t-0")
			for _, n := range names {
				if strings.HasSuffix(n, swapSuffix) || strings.HasSuffix(n, cleanedSuffix) {
					t.Fatalf("%s survived recovery", n)
				}
			}
		})
	}
}

// renameProbe notes the mutating-operation counts just before the first
// commit rename (.log.cleaned to .log.swap) and once it is durable.
type renameProbe struct {
	vfs.FS
	mem                      *vfs.MemFS
	beforeCommitOp, commitOp int64
}

func (p *renameProbe) Rename(oldname, newname string) error {
	commit := p.commitOp == 0 && strings.HasSuffix(newname, logSuffix+swapSuffix)
	if commit {
		p.beforeCommitOp = p.mem.MutatingOps()
	}
	err := p.FS.Rename(oldname, newname)
	if commit {
		p.commitOp = p.mem.MutatingOps()
	}
	return err
}

func recordsBelow(recs []modelRecord, off int64) []modelRecord {
	var out []modelRecord
	for _, r := range recs {
		if r.offset < off {
			out = append(out, r)
		}
	}
	return out
}

func recordsFrom(recs []modelRecord, off int64) []modelRecord {
	var out []modelRecord
	for _, r := range recs {
		if r.offset >= off {
			out = append(out, r)
		}
	}
	return out
}
