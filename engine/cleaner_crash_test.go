package engine

import (
	"context"
	"fmt"
	"math/rand"
	randv2 "math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// TestCleanCrash crashes the engine at a random mutating file operation
// of a cleaning run (Manager.RunCleaner: .cleaned files, the swap, the
// cleaner checkpoint) through the crash-simulating FS, with random kinds
// of lost and torn unsynced writes, then reopens and checks that every
// run of segments the cleaner replaces reads back as before the pass or
// as after it, record for record, never a mix; that indexes and producer
// state agree with the log; and that cleaning again reaches the same log
// as a pass that was never interrupted. The workload holds transactions
// too (transactional batches, COMMIT and ABORT markers, some left open):
// a read_committed view of the log (records of aborted transactions
// dropped by the transaction indexes, nothing past the last stable
// offset) keeps every key's latest committed value through the pass, the
// crash and the recovery, and never shows a record of an aborted
// transaction.
//
// WREN_CRASH_ITERATIONS sets the number of crash points (default 300);
// WREN_SEED replays one run.
func TestCleanCrash(t *testing.T) {
	seed := testSeed(t)
	iterations := envInt("WREN_CRASH_ITERATIONS", 300)
	if testing.Short() {
		iterations = 60
	}
	rng := rand.New(rand.NewSource(seed))
	outcomes := map[string]int{}
	for i := 0; i < iterations; i++ {
		iterSeed := rng.Int63()
		outcome := runCleanCrashIteration(t, iterSeed)
		if t.Failed() {
			t.Fatalf("iteration %d (iteration seed %d) failed", i, iterSeed)
		}
		outcomes[outcome]++
	}
	t.Logf("%d crash points: %v", iterations, outcomes)
	if iterations >= 60 && (outcomes["before-clean"] == 0 || outcomes["after-clean"] == 0) {
		t.Fatalf("the crashes never left one of the two states: %v", outcomes)
	}
}

// cleanCrashSetup builds, deterministically from seed, a data directory
// with one compacted log that a first pass already cleaned in part, with
// more appends after it and tombstones due to expire.
type cleanCrashSetup struct {
	fsys    *vfs.MemFS
	eager   bool
	m       *Manager
	l       *Log
	cfg     ManagerConfig
	cleaner CleanerConfig
	clock   *testClock
	// abortedValues are the values of the aborted transactions' records.
	abortedValues map[string]bool
}

var crashTP = TopicPartition{"compacted", 0}

func buildCleanCrash(t *testing.T, seed int64) *cleanCrashSetup {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	eager := rng.Intn(2) == 0
	clock := &testClock{ms: 1_000_000}
	opts := compactOptions(clock)
	// Above the largest batch the workload makes (8 records of up to ~230
	// bytes, uncompressed, plus the header).
	opts.SegmentBytes = int64(2400 + rng.Intn(4000))
	opts.IndexIntervalBytes = int64(rng.Intn(1200))
	opts.DeleteRetentionMs = 500
	opts.MinCleanableDirtyRatio = 0
	s := &cleanCrashSetup{
		fsys:          vfs.NewMem(),
		eager:         eager,
		cfg:           ManagerConfig{ClusterID: "crash", NodeID: 1, Defaults: opts},
		clock:         clock,
		abortedValues: map[string]bool{},
		cleaner: CleanerConfig{
			DedupeBufferBytes: 1 << 20,
			IOBufferBytes:     256 + rng.Intn(8192),
		},
	}
	var fsys vfs.FS = s.fsys
	if eager {
		fsys = eagerDirFS{s.fsys}
	}
	var err error
	if s.m, err = OpenManager(fsys, "/data", s.cfg); err != nil {
		t.Fatal(err)
	}
	if s.l, err = s.m.GetOrCreateLog(crashTP); err != nil {
		t.Fatal(err)
	}
	model := newCompactModel()
	keys := 5 + rng.Intn(40)
	// Transactional producers 300-302: open[pid] holds the values of the
	// producer's open transaction.
	open := map[int64][]string{}
	txnValue := 0
	appendSome := func(n int) {
		for i := 0; i < n; i++ {
			if x := rng.Intn(8); x < 2 {
				pid := 300 + int64(rng.Intn(3))
				if len(open[pid]) > 0 && rng.Intn(3) == 0 {
					commit := rng.Intn(2) == 0
					if _, err := s.l.AppendTxnMarker(TxnMarker{ProducerID: pid, Commit: commit}, 0); err != nil {
						t.Fatal(err)
					}
					if !commit {
						for _, v := range open[pid] {
							s.abortedValues[v] = true
						}
					}
					delete(open, pid)
				} else {
					txnValue++
					v := fmt.Sprintf("tx%d-%d", pid, txnValue)
					appendKeyedTxnBatch(t, s.l, pid, rng, keys, clock.ms, v)
					open[pid] = append(open[pid], v)
				}
			} else if x < 4 {
				appendKeyedProducerBatch(t, s.l, 100+int64(rng.Intn(3)), rng, keys, clock.ms)
			} else {
				model.appendKeyed(t, s.l, rng, keys, clock.ms)
			}
			clock.advance(time.Millisecond)
			if rng.Intn(25) == 0 {
				mustNotErr(t, s.l.Roll())
			}
		}
	}
	appendSome(20 + rng.Intn(60))
	if rng.Intn(3) > 0 {
		// An earlier pass: some segments are clean, some tombstones
		// carry horizons that expire below.
		if _, err := s.m.RunCleaner(context.Background(), s.cleaner, func(l *Log) int64 { return l.LogEndOffset() }); err != nil {
			t.Fatal(err)
		}
		clock.advance(time.Duration(rng.Intn(1000)) * time.Millisecond)
		if rng.Intn(4) > 0 {
			// A second one: markers whose transactions' batches the
			// first removed get delete horizons, which the pass below
			// may find expired.
			if _, err := s.m.RunCleaner(context.Background(), s.cleaner, func(l *Log) int64 { return l.LogEndOffset() }); err != nil {
				t.Fatal(err)
			}
			clock.advance(time.Duration(300+rng.Intn(1000)) * time.Millisecond)
		}
	}
	appendSome(20 + rng.Intn(60))
	return s
}

// appendKeyedTxnBatch appends a transactional producer's next batch: one
// to three keyed records, all of value v.
func appendKeyedTxnBatch(t *testing.T, l *Log, pid int64, rng *rand.Rand, keys int, ts int64, v string) {
	t.Helper()
	seq := int32(0)
	l.mu.Lock()
	if e, ok := l.producers.LastEntry(pid); ok && e.LastSequence() >= 0 {
		seq = e.LastSequence() + 1
	}
	l.mu.Unlock()
	b := batch.NewBuilder(batch.CompressionType(rng.Intn(5)))
	b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.IsTransactional = pid, 0, seq, true
	for i := 0; i < 1+rng.Intn(3); i++ {
		b.Append(batch.Record{Timestamp: ts, Key: []byte(fmt.Sprintf("key-%d", rng.Intn(keys))), Value: []byte(v)})
	}
	raw, err := b.Build()
	mustNotErr(t, err)
	_, err = l.Append(raw, 0)
	mustNotErr(t, err)
}

// committedView is what a read_committed consumer of the whole log sees:
// every record below the last stable offset except those of aborted
// transactions (by the transaction indexes, as Fetch lists them), as the
// latest value of each key ("<tombstone>" for a null one). It fails on a
// record of an aborted transaction that the indexes do not drop.
func committedView(t *testing.T, l *Log, abortedValues map[string]bool) map[string]string {
	t.Helper()
	lso := l.LastStableOffset(l.LogEndOffset())
	aborted, err := l.AbortedTxns(l.LogStartOffset(), lso)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortStableFunc(aborted, func(a, b AbortedTxn) int { return int(a.FirstOffset - b.FirstOffset) })
	ongoing := map[int64]bool{}
	next := 0
	view := map[string]string{}
	for _, b := range batchesOf(t, readUpTo(t, l, lso)) {
		h, err := batch.ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		for next < len(aborted) && aborted[next].FirstOffset <= h.LastOffset() {
			ongoing[aborted[next].ProducerID] = true
			next++
		}
		if h.IsControl() {
			if m, _ := markerOf(b); m != nil && !m.Commit {
				delete(ongoing, h.ProducerID)
			}
			continue
		}
		if h.IsTransactional() && ongoing[h.ProducerID] {
			continue
		}
		err = batch.Records(b, batch.Limits{Origin: batch.AppendOriginReplication}, func(r batch.Record) error {
			if r.Key == nil {
				return nil
			}
			v := "<tombstone>"
			if r.Value != nil {
				v = string(r.Value)
			}
			if abortedValues[v] {
				t.Fatalf("offset %d: a read_committed reader sees %s=%s of an aborted transaction", r.Offset, r.Key, v)
			}
			view[string(r.Key)] = v
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return view
}

// checkCommittedKept: every key's latest committed value before cleaning
// is its latest after (a tombstone may have gone past its horizon).
func checkCommittedKept(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		got, ok := after[k]
		if v == "<tombstone>" && (!ok || got == v) {
			continue
		}
		if got != v {
			t.Fatalf("%s: key %s reads %q (present %v), before cleaning %q", what, k, got, ok, v)
		}
	}
	for k, v := range after {
		if _, ok := before[k]; !ok {
			t.Fatalf("%s: key %s=%s appeared", what, k, v)
		}
	}
}

// appendKeyedProducerBatch appends an idempotent producer's next batch of
// keyed records.
func appendKeyedProducerBatch(t *testing.T, l *Log, pid int64, rng *rand.Rand, keys int, ts int64) {
	t.Helper()
	seq := int32(0)
	l.mu.Lock()
	if e, ok := l.producers.LastEntry(pid); ok && e.LastSequence() >= 0 {
		seq = e.LastSequence() + 1
	}
	l.mu.Unlock()
	b := batch.NewBuilder(batch.CompressionType(rng.Intn(5)))
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, 0, seq
	for i := 0; i < 1+rng.Intn(4); i++ {
		b.Append(batch.Record{Timestamp: ts, Key: []byte(fmt.Sprintf("key-%d", rng.Intn(keys))), Value: []byte(fmt.Sprintf("p%d-%d", pid, seq))})
	}
	raw, err := b.Build()
	mustNotErr(t, err)
	_, err = l.Append(raw, 0)
	mustNotErr(t, err)
}

// eagerDirFS makes every create, rename and remove durable at once, in
// order, as a file system with synchronous metadata (or a journal that
// commits just then) may: crashes then also land between the directory
// operations of one step, which the crash-simulating FS on its own keeps
// all-or-nothing up to the next SyncDir.
type eagerDirFS struct{ *vfs.MemFS }

func (e eagerDirFS) Create(name string) (vfs.File, error) {
	f, err := e.MemFS.Create(name)
	if err == nil {
		err = e.MemFS.SyncDir(parentDir(name))
	}
	return f, err
}

func (e eagerDirFS) Rename(oldname, newname string) error {
	if err := e.MemFS.Rename(oldname, newname); err != nil {
		return err
	}
	return e.MemFS.SyncDir(parentDir(newname))
}

func (e eagerDirFS) Remove(name string) error {
	if err := e.MemFS.Remove(name); err != nil {
		return err
	}
	return e.MemFS.SyncDir(parentDir(name))
}

func (s *cleanCrashSetup) runCleaner() (CleanerStats, error) {
	return s.m.RunCleaner(context.Background(), s.cleaner, func(l *Log) int64 { return l.LogEndOffset() })
}

func runCleanCrashIteration(t *testing.T, seed int64) string {
	// Dry run: the log before and after an uninterrupted pass, and how many
	// mutating operations the pass makes.
	dry := buildCleanCrash(t, seed)
	pre, _ := logRecords(t, dry.l)
	preView := committedView(t, dry.l, dry.abortedValues)
	ops0 := dry.fsys.MutatingOps()
	stats, err := dry.runCleaner()
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	ops := dry.fsys.MutatingOps() - ops0
	post, _ := logRecords(t, dry.l)
	checkCommittedKept(t, "after an uninterrupted pass", preView, committedView(t, dry.l, dry.abortedValues))
	var bounds []int64
	for _, sg := range dry.l.Segments() {
		bounds = append(bounds, sg.BaseOffset)
	}
	leo, lso := dry.l.LogEndOffset(), dry.l.LogStartOffset()
	bounds = append(bounds, leo)
	dry.m.Close()
	if stats.SegmentsWritten == 0 || ops == 0 {
		// Nothing to interrupt.
		return "nothing-to-clean"
	}

	rng := rand.New(rand.NewSource(seed ^ 0x5eed))
	crashOpts := vfs.CrashOptions{Rand: randv2.New(randv2.NewPCG(uint64(seed), 2))}
	switch rng.Intn(4) {
	case 1:
		crashOpts.KeepUnsynced = true
	case 2:
		crashOpts.TearLastWrite = true
	case 3:
		crashOpts.KeepUnsynced, crashOpts.TearLastWrite = true, true
	}
	run := buildCleanCrash(t, seed)
	run.fsys.SetCrashAfter(rng.Int63n(ops), crashOpts)
	if _, err := run.runCleaner(); err == nil {
		t.Fatalf("the pass finished although the FS crashed within its %d operations", ops)
	}
	after := run.fsys.Crash(crashOpts)

	var afterFS vfs.FS = after
	if run.eager {
		afterFS = eagerDirFS{after}
	}
	m, err := OpenManager(afterFS, "/data", run.cfg)
	if err != nil {
		t.Fatalf("reopen after the crash: %v", err)
	}
	defer m.Close()
	l := m.Log(crashTP)
	if l == nil {
		t.Fatal("the partition is gone after the crash")
	}
	if l.LogEndOffset() != leo || l.LogStartOffset() != lso {
		t.Fatalf("log start/end %d/%d after recovery, want %d/%d", l.LogStartOffset(), l.LogEndOffset(), lso, leo)
	}
	got, _ := logRecords(t, l)
	// Run by run (the segments of the cleaned log), the records are all
	// the old ones or all the new ones.
	outcome := ""
	for i := 0; i+1 < len(bounds); i++ {
		lo, hi := bounds[i], bounds[i+1]
		g, b, a := recordsIn(got, lo, hi), recordsIn(pre, lo, hi), recordsIn(post, lo, hi)
		switch {
		case g == a && g == b:
		case g == a:
			outcome += "A"
		case g == b:
			outcome += "B"
		default:
			t.Fatalf("offsets [%d, %d) after recovery hold neither the records before cleaning nor those after:\n got %s\nbefore %s\n after %s", lo, hi, g, b, a)
		}
	}
	checkIndexesAgree(t, l)
	checkProducerStateMatchesReplay(t, l)
	checkCommittedKept(t, "after the crash", preView, committedView(t, l, run.abortedValues))
	names, _ := after.List(l.dir)
	for _, n := range names {
		if len(n) > 8 && (n[len(n)-8:] == ".cleaned" || n[len(n)-5:] == ".swap") {
			t.Fatalf("%s survived recovery", n)
		}
	}
	// Cleaning the recovered log again gives the uninterrupted result.
	cps, err := ReadOffsetCheckpoint(after, "/data/"+CleanerCheckpointFile)
	if err != nil {
		t.Fatalf("cleaner checkpoint after the crash: %v", err)
	}
	if _, err := l.Clean(context.Background(), CleanConfig{UpperBound: l.LogEndOffset(), FirstDirtyOffset: cps[crashTP], DedupeBufferBytes: 1 << 20}); err != nil {
		t.Fatalf("cleaning after recovery: %v", err)
	}
	again, _ := logRecords(t, l)
	if fmt.Sprint(again) != fmt.Sprint(post) {
		t.Fatalf("cleaning after recovery gives\n%v\nan uninterrupted pass\n%v", again, post)
	}
	checkCommittedKept(t, "cleaning after the crash", preView, committedView(t, l, run.abortedValues))
	switch {
	case !slices.Contains([]byte(outcome), 'A'):
		return "before-clean"
	case !slices.Contains([]byte(outcome), 'B'):
		return "after-clean"
	}
	return "runs-mixed"
}

func recordsIn(recs []modelRecord, lo, hi int64) string {
	var s string
	for _, r := range recs {
		if r.offset >= lo && r.offset < hi {
			s += r.String() + " "
		}
	}
	return s
}
