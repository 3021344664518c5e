package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	randv2 "math/rand/v2"
	"slices"
	"testing"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/engine/producer"
	"github.com/wren-broker/wren/internal/vfs"
)

// TestCrashRecovery crashes the engine at random mutating file operations
// through the crash-simulating FS, across appends, segment rolls,
// truncation, DeleteRecords, retention and checkpoints, then reopens and
// checks: every append acknowledged under flush policy ack reads back byte
// for byte, nothing that was never written or that a completed truncation
// removed is served, and the indexes agree with the log.
//
// WREN_CRASH_ITERATIONS sets the number of crash points (default 1000);
// WREN_SEED replays one run.
func TestCrashRecovery(t *testing.T) {
	seed := testSeed(t)
	iterations := envInt("WREN_CRASH_ITERATIONS", 1000)
	if testing.Short() {
		iterations = 100
	}
	rng := rand.New(rand.NewSource(seed))
	modes := map[string]int{}
	ops := map[string]int{}
	var current string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("failed in %s", current)
		}
	})
	for i := 0; i < iterations; i++ {
		iterSeed := rng.Int63()
		current = fmt.Sprintf("iteration %d (iteration seed %d)", i, iterSeed)
		mode := runCrashIteration(t, iterSeed, ops)
		modes[mode]++
		if t.Failed() {
			t.Fatalf("iteration %d (iteration seed %d) failed", i, iterSeed)
		}
	}
	t.Logf("%d crash points: %v; operations completed before the crashes: %v", iterations, modes, ops)
	if ops["roll"] == 0 || ops["truncate"] == 0 || ops["retention-deleted-segment"] == 0 || ops["acked-append"] == 0 ||
		ops["clean-restart"] == 0 || ops["start-from-summary"] == 0 || ops["crash-in-clean-stop"] == 0 || ops["crash-in-clean-start"] == 0 ||
		ops["txn-marker"] == 0 {
		t.Fatalf("the workload missed an operation kind: %v", ops)
	}
}

// crashModel is what the workload knows: the batches it wrote, in log
// order, and which of them were acknowledged.
type crashModel struct {
	batches []modelBatch
	// durableLogStartOffset: a checkpoint holding it completed.
	durableLogStartOffset int64
	// pendingTruncate >= 0: a truncation to that offset was cut by the crash.
	pendingTruncate int64
	// hwFloor is the highest high watermark retention or DeleteRecords
	// was given: a replica never truncates a transaction marker below
	// it (only an unclean election could), and the transaction it ended
	// may have lost its batches to retention since.
	hwFloor int64
}

type modelBatch struct {
	base, last int64
	// bytes is nil for a transaction marker, whose bytes the engine builds
	// (with its clock): it is checked by its header and marker.
	bytes []byte
	acked bool
	// txnPID is the producer of a transactional batch or marker, 0 for
	// other batches; marker is "COMMIT" or "ABORT" for a marker.
	txnPID int64
	marker string
}

func runCrashIteration(t *testing.T, seed int64, ops map[string]int) string {
	rng := rand.New(rand.NewSource(seed))
	fsys := vfs.NewMem()
	opts := testOptions(nil)
	opts.SegmentBytes = int64(2048 + rng.Intn(6000))
	opts.IndexIntervalBytes = int64(rng.Intn(1500))
	opts.RetentionMs = -1
	cfg := ManagerConfig{ClusterID: "crash", NodeID: 1, Defaults: opts}
	tp := TopicPartition{"t", 0}

	crashOpts := vfs.CrashOptions{Rand: randv2.New(randv2.NewPCG(uint64(seed), 1))}
	mode := "drop-unsynced"
	switch rng.Intn(4) {
	case 1:
		crashOpts.KeepUnsynced, mode = true, "keep-some-unsynced"
	case 2:
		crashOpts.TearLastWrite, mode = true, "torn-write"
	case 3:
		crashOpts.KeepUnsynced, crashOpts.TearLastWrite, mode = true, true, "keep-and-tear"
	}
	m, err := OpenManager(fsys, "/data", cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The cluster took note of the (first) start: a clean stop leaves
	// the marker and the clean-stop summary.
	m.UncleanShutdownHandled()
	l, err := m.GetOrCreateLog(tp)
	if err != nil {
		t.Fatal(err)
	}
	// An idle partition beside it: a clean stop and start leave it
	// untouched, its leader epoch and producer state only in the summary
	// as well as its files.
	idle, err := m.GetOrCreateLog(crashIdleTP)
	if err != nil {
		t.Fatal(err)
	}
	mustNotErr(t, idle.AssignLeaderEpoch(7))
	_, err = idle.Append(makeProducerBatch(t, idle, 77, 0, 2, 1000), 7)
	mustNotErr(t, err)
	// Crash somewhere in the next few hundred mutating operations.
	fsys.SetCrashAfter(int64(rng.Intn(400)), crashOpts)
	model := &crashModel{pendingTruncate: -1}
	crashed := false
	segments := 1
	for step := 0; step < 120 && !crashed; step++ {
		op := rng.Intn(100)

		switch {
		case op < 5:
			// A transaction marker for one of the transactional producers
			// (transactions in the log): COMMIT or ABORT, open or not.
			pid := crashTxnPID + int64(rng.Intn(2))
			commit := rng.Intn(2) == 0
			name := map[bool]string{true: "COMMIT", false: "ABORT"}[commit]
			base := l.LogEndOffset()
			_, err := l.AppendTxnMarker(TxnMarker{ProducerID: pid, Commit: commit}, int32(step/30))
			model.batches = append(model.batches, modelBatch{base: base, last: base, acked: err == nil, txnPID: pid, marker: name})
			if err != nil {
				crashed = true
				break
			}
			ops["txn-marker"]++
		case op < 70:
			b := makeBatch(t, batch.CompressionType(rng.Intn(5)), step, 1+rng.Intn(6), rng.Intn(900), int64(1000+step))
			var txnPID int64
			switch rng.Intn(4) {
			case 0, 1:
				// An idempotent producer's batch, next in its sequence as
				// the log knows it.
				b = makeProducerBatch(t, l, 1000+int64(rng.Intn(3)), step, 1+rng.Intn(6), int64(1000+step))
			case 2:
				// A transactional producer's batch.
				txnPID = crashTxnPID + int64(rng.Intn(2))
				b = makeProducerBatch(t, l, txnPID, step, 1+rng.Intn(6), int64(1000+step))
			}
			base := l.LogEndOffset()
			epoch := int32(step / 30)
			want := withOffset(b, base, epoch)
			h, _ := batch.ParseHeader(b)
			info, err := l.Append(b, epoch)
			model.batches = append(model.batches, modelBatch{base: base, last: base + int64(h.LastOffsetDelta), bytes: want, acked: err == nil, txnPID: txnPID})
			if err != nil {
				crashed = true
				break
			}
			if info.FirstOffset != base || !bytes.Equal(b, want) {
				t.Fatalf("append at %d: info %+v", base, info)
			}
			ops["acked-append"]++
			if n := len(l.Segments()); n > segments {
				ops["roll"] += n - segments
			}
			segments = len(l.Segments())
		case op < 78 && len(model.batches) > 0:
			k := rng.Intn(len(model.batches))
			target := model.batches[k].base
			if target < l.LogStartOffset() {
				continue
			}
			if slices.ContainsFunc(model.batches[k:], func(b modelBatch) bool { return b.marker != "" && b.base < model.hwFloor }) {
				continue
			}
			if err := l.TruncateTo(target); err != nil {
				model.pendingTruncate = target
				crashed = true
				break
			}
			model.batches = model.batches[:k]
			ops["truncate"]++
			segments = len(l.Segments())
		case op < 84:
			// DeleteRecords stops at the last stable offset, as the
			// broker's DeleteRecords stops at the high watermark.
			leo := l.LastStableOffset(l.LogEndOffset())
			off := l.LogStartOffset() + rng.Int63n(max(leo-l.LogStartOffset()+1, 1))
			model.hwFloor = max(model.hwFloor, l.LogEndOffset())
			if _, err := m.DeleteRecords(tp, off); err != nil {
				crashed = true
				break
			}
			model.durableLogStartOffset = off
			ops["delete-records"]++
			segments = len(l.Segments())
		case op < 90:
			retentionBytes := int64(rng.Intn(int(3 * opts.SegmentBytes)))
			setOptions(l, func(o *Options) { o.RetentionBytes = retentionBytes })
			model.hwFloor = max(model.hwFloor, l.LogEndOffset())
			n, err := m.RunRetention(func(l *Log) int64 { return l.LogEndOffset() })
			setOptions(l, func(o *Options) { o.RetentionBytes = -1 })
			if err != nil {
				crashed = true
				break
			}
			ops["retention-deleted-segment"] += n
			segments = len(l.Segments())
			model.durableLogStartOffset = l.LogStartOffset()
		case op < 93:
			if err := m.Checkpoint(); err != nil {
				crashed = true
				break
			}
			model.durableLogStartOffset = l.LogStartOffset()
		case op < 97:
			// A clean stop and start (doc.go, "Clean restarts"): the
			// crash may come inside either, and the start after a stop
			// that completed takes the epochs and producer state from the
			// clean-stop summary.
			leo, lso := l.LogEndOffset(), l.LogStartOffset()
			epochs, producers := l.LeaderEpochs(), l.ProducerStates()
			if err := m.Close(); err != nil {
				ops["crash-in-clean-stop"]++
				crashed = true
				break
			}
			model.durableLogStartOffset = lso
			m, err = OpenManager(fsys, "/data", cfg)
			if err != nil {
				ops["crash-in-clean-start"]++
				crashed = true
				break
			}
			if !m.HadCleanShutdown() {
				t.Fatal("start after a completed clean stop reads as unclean")
			}
			if rep := m.LoadReport(); rep.FromSummary > 0 {
				ops["start-from-summary"]++
			}
			ops["clean-restart"]++
			if l = m.Log(tp); l == nil {
				t.Fatal("partition gone after a clean restart")
			}
			if l.LogEndOffset() != leo || l.LogStartOffset() != lso || !slices.Equal(l.LeaderEpochs(), epochs) ||
				!equalProducers(l.ProducerStates(), producers) {
				t.Fatalf("clean restart changed the log: end %d -> %d, start %d -> %d, epochs %v -> %v, producers %v -> %v",
					leo, l.LogEndOffset(), lso, l.LogStartOffset(), epochs, l.LeaderEpochs(), producers, l.ProducerStates())
			}
			segments = len(l.Segments())
		default:
			if err := l.Roll(); err != nil {
				crashed = true
			}
		}
	}
	after := fsys.Crash(crashOpts)
	if !crashed {
		mode += "/after-workload"
	}
	checkRecovered(t, after, cfg, tp, model)
	return mode
}

func checkRecovered(t *testing.T, fsys *vfs.MemFS, cfg ManagerConfig, tp TopicPartition, model *crashModel) {
	t.Helper()
	m, err := OpenManager(fsys, "/data", cfg)
	if err != nil {
		t.Fatalf("reopen after crash: %v", err)
	}
	defer m.Close()
	l := m.Log(tp)
	if l == nil {
		// The crash came before the partition directory was durable; then
		// nothing can have been acknowledged.
		for _, b := range model.batches {
			if b.acked {
				t.Fatalf("partition lost with acknowledged batch at %d", b.base)
			}
		}
		return
	}
	if d := l.Damage(); len(d) > 0 {
		// A crash loses unsynced bytes; it never damages synced ones, so
		// recovery must find torn tails only.
		t.Fatalf("recovery took a crash for media damage: %v", d)
	}
	lso, leo := l.LogStartOffset(), l.LogEndOffset()
	if lso < model.durableLogStartOffset {
		t.Fatalf("log start offset went back from %d to %d", model.durableLogStartOffset, lso)
	}
	got := batchesOf(t, readAll(t, l))
	// The recovered batches must be the written ones, in order, from the one
	// holding the log start offset.
	i := 0
	for i < len(model.batches) && model.batches[i].last < lso {
		i++
	}
	for j, g := range got {
		if i+j >= len(model.batches) {
			t.Fatalf("recovered batch %d (%d bytes) was never written", j, len(g))
		}
		if mb := model.batches[i+j]; mb.marker != "" {
			h, _ := batch.ParseHeader(g)
			m, err := markerOf(g)
			if err != nil || m == nil || h.BaseOffset != mb.base || h.ProducerID != mb.txnPID || (m.Commit != (mb.marker == "COMMIT")) {
				t.Fatalf("recovered batch at %d (producer %d, marker %+v, %v) is not the %s marker of producer %d written at %d",
					h.BaseOffset, h.ProducerID, m, err, mb.marker, mb.txnPID, mb.base)
			}
		} else if !bytes.Equal(g, mb.bytes) {
			h, _ := batch.ParseHeader(g)
			t.Fatalf("recovered batch at %d differs from the one written at %d", h.BaseOffset, model.batches[i+j].base)
		}
	}
	// Every acknowledged batch at or above the log start offset is there,
	// except those an interrupted truncation may have removed.
	for _, b := range model.batches[i:] {
		if !b.acked || b.last < lso {
			continue
		}
		if model.pendingTruncate >= 0 && b.last >= model.pendingTruncate {
			continue
		}
		if b.last >= leo {
			t.Fatalf("acknowledged batch %d..%d lost: log end offset %d after recovery", b.base, b.last, leo)
		}
	}
	checkIndexesAgree(t, l)
	checkProducerStateMatchesReplay(t, l)
	checkEpochsMatchBatches(t, l)
	checkTxnsMatchModel(t, fsys, l, model.batches[:i+len(got)])
	if idle := m.Log(crashIdleTP); idle != nil {
		// Written and synced before any crash point: through any number
		// of clean restarts it keeps its epoch and its producer.
		if got := idle.LeaderEpochs(); !slices.Equal(got, []EpochEntry{{Epoch: 7, StartOffset: 0}}) {
			t.Fatalf("idle partition's leader epochs %v after recovery, want epoch 7 from 0", got)
		}
		if ps := idle.ProducerStates(); len(ps) != 1 || ps[0].ProducerID != 77 {
			t.Fatalf("idle partition's producers %v after recovery, want producer 77", ps)
		}
		checkProducerStateMatchesReplay(t, idle)
	}
	// The recovered log takes appends and survives another reopen.
	b := makeBatch(t, batch.CompressionNone, 1, 2, 10, 1)
	if _, err := l.Append(b, 100); err != nil {
		t.Fatalf("append after recovery: %v", err)
	}
	if l.LogEndOffset() != leo+2 {
		t.Fatalf("append after recovery: log end %d, want %d", l.LogEndOffset(), leo+2)
	}
}

// checkIndexesAgree reads every segment's index files and checks each
// entry against the log: an offset index entry names the last offset of the
// batch starting at its position; a time index entry names a batch's last
// offset and that batch's max timestamp, increasing. Then Read at every
// offset starts at the right batch.
func checkIndexesAgree(t *testing.T, l *Log) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.segments {
		size := s.size.Load()
		fsz, _ := s.log.Size()
		damagedToEnd := false
		for _, d := range l.damage {
			damagedToEnd = damagedToEnd || (d.Segment == s.baseOffset && d.End == fsz && d.Position == size)
		}
		if fsz != size && !damagedToEnd {
			t.Fatalf("segment %d: file size %d, log says %d", s.baseOffset, fsz, size)
		}
		type bp struct{ pos, last, maxTs int64 }
		byPos := map[int64]bp{}
		byLast := map[int64]bp{}
		hdr := make([]byte, batch.RecordBatchOverhead)
		for pos := int64(0); pos < size; {
			if next := l.skipDamage(s, pos); next != pos {
				pos = next
				continue
			}
			h, err := s.readHeader(pos, hdr)
			if err != nil {
				t.Fatalf("segment %d at %d: %v", s.baseOffset, pos, err)
			}
			e := bp{pos, h.LastOffset(), h.MaxTimestamp}
			byPos[pos], byLast[h.LastOffset()] = e, e
			pos += int64(h.Size())
		}
		idx, n, err := loadEntries(s.offsetIndex.f, offsetIndexEntrySize)
		if err != nil {
			t.Fatal(err)
		}
		if n != s.offsetIndex.entries() {
			t.Fatalf("segment %d: offset index file has %d entries, memory %d", s.baseOffset, n, s.offsetIndex.entries())
		}
		for k := int64(0); k < n; k++ {
			off := s.baseOffset + int64(binary.BigEndian.Uint32(idx[k*8:]))
			pos := int64(binary.BigEndian.Uint32(idx[k*8+4:]))
			if e, ok := byPos[pos]; !ok || e.last != off {
				t.Fatalf("segment %d: offset index entry %d (%d at %d) does not match a batch", s.baseOffset, k, off, pos)
			}
		}
		tidx, tn, err := loadEntries(s.timeIndex.f, timeIndexEntrySize)
		if err != nil {
			t.Fatal(err)
		}
		prev := int64(-1 << 63)
		for k := int64(0); k < tn; k++ {
			ts := int64(binary.BigEndian.Uint64(tidx[k*12:]))
			off := s.baseOffset + int64(binary.BigEndian.Uint32(tidx[k*12+8:]))
			if e, ok := byLast[off]; !ok || e.maxTs != ts || ts <= prev {
				t.Fatalf("segment %d: time index entry %d (%d at %d) does not match a batch", s.baseOffset, k, ts, off)
			}
			prev = ts
		}
	}
	// Reads at the first, middle and last offset of every batch. Unlock
	// for Read.
	var ranges [][2]int64
	for _, s := range l.segments {
		hdr := make([]byte, batch.RecordBatchOverhead)
		for pos := int64(0); pos < s.size.Load(); {
			if next := l.skipDamage(s, pos); next != pos {
				pos = next
				continue
			}
			h, _ := s.readHeader(pos, hdr)
			if h.LastOffset() >= l.logStartOffset {
				ranges = append(ranges, [2]int64{max(h.BaseOffset, l.logStartOffset), h.LastOffset()})
			}
			pos += int64(h.Size())
		}
	}
	leo := l.logEndOffset
	damage := slices.Clone(l.damage)
	l.mu.Unlock()
	defer l.mu.Lock()
	for _, rg := range ranges {
		for _, off := range []int64{rg[0], rg[0] + (rg[1]-rg[0])/2, rg[1]} {
			r, err := l.Read(off, 1, leo, true)
			if damagedAt(damage, off) {
				if !errors.Is(err, ErrPartitionDamaged) {
					t.Fatalf("read %d in the damage %v: %v", off, damage, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("read %d: %v", off, err)
			}
			b, err := r.Bytes()
			r.Release()
			if err != nil {
				t.Fatal(err)
			}
			n, h, err := batch.Scan(b)
			if err != nil || n != len(b) || h.BaseOffset > off || h.LastOffset() < off {
				t.Fatalf("read %d: batch %d..%d, %v", off, h.BaseOffset, h.LastOffset(), err)
			}
		}
	}
}

// TestFaultsFailTheLogDir: EIO on write, fdatasync or a directory sync
// never acknowledges the append, fails the log directory for every log in
// it, and a reopen on a healthy disk finds everything acknowledged before.
// (ENOSPC fails only the append, or recovers in place: diskspace_test.go.)
func TestFaultsFailTheLogDir(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault vfs.Fault
	}{
		{"EIO on write", vfs.Fault{Op: vfs.OpWrite, Err: errnoEIO}},
		{"EIO on fdatasync", vfs.Fault{Op: vfs.OpSyncData, Err: errnoEIO}},
		{"EIO on segment create", vfs.Fault{Op: vfs.OpCreate, Err: errnoEIO}},
		{"EIO on directory sync", vfs.Fault{Op: vfs.OpSyncDir, Err: errnoEIO}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			ffs := vfs.NewFaultFS(mem)
			opts := testOptions(nil)
			opts.SegmentBytes = 4096
			var failures []error
			cfg := ManagerConfig{ClusterID: "c", NodeID: 1, Defaults: opts, OnDirFailure: func(err error) { failures = append(failures, err) }}
			m, err := OpenManager(ffs, "/data", cfg)
			mustNotErr(t, err)
			a, err := m.GetOrCreateLog(TopicPartition{"a", 0})
			mustNotErr(t, err)
			other, err := m.GetOrCreateLog(TopicPartition{"b", 0})
			mustNotErr(t, err)
			var acked [][]byte
			for i := 0; i < 3; i++ {
				b := makeBatch(t, batch.CompressionNone, i, 2, 500, 1)
				_, err := a.Append(b, 0)
				mustNotErr(t, err)
				acked = append(acked, b)
			}
			ffs.Inject(tc.fault)
			// Keep appending until the fault hits (a create fault waits
			// for a roll).
			var failErr error
			for i := 0; i < 20 && failErr == nil; i++ {
				_, failErr = a.Append(makeBatch(t, batch.CompressionNone, 10+i, 2, 500, 1), 0)
				if failErr == nil {
					acked = append(acked, nil)
				}
			}
			if !errors.Is(failErr, ErrLogDirFailed) {
				t.Fatalf("append under fault: %v", failErr)
			}
			if len(failures) != 1 || m.Failed() == nil {
				t.Fatalf("dir failure reported %d times, Failed() = %v", len(failures), m.Failed())
			}
			ffs.Clear()
			// No retry: the directory stays failed, for every log in it.
			if _, err := a.Append(makeBatch(t, batch.CompressionNone, 99, 1, 1, 1), 0); !errors.Is(err, ErrLogDirFailed) {
				t.Fatalf("append after the fault cleared: %v", err)
			}
			if _, err := other.Append(makeBatch(t, batch.CompressionNone, 99, 1, 1, 1), 0); !errors.Is(err, ErrLogDirFailed) {
				t.Fatalf("append to another log in the failed dir: %v", err)
			}
			ackedCount := int64(2 * len(acked))
			m.Close()
			// Power loss, then a healthy restart: everything acknowledged is
			// there, and nothing from the failed append is served past it.
			after := mem.Crash(vfs.CrashOptions{})
			m2, err := OpenManager(after, "/data", cfg)
			mustNotErr(t, err)
			defer m2.Close()
			l := m2.Log(TopicPartition{"a", 0})
			if l == nil || l.LogEndOffset() < ackedCount {
				t.Fatalf("after restart: %v acknowledged %d", l, ackedCount)
			}
			checkIndexesAgree(t, l)
		})
	}
}

// crashIdleTP is the crash workload's idle partition.
var crashIdleTP = TopicPartition{"idle", 0}

// equalProducers compares two producer states as a snapshot keeps them.
func equalProducers(a, b []producer.Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		ab, aok := a[i].LastBatch()
		bb, bok := b[i].LastBatch()
		if a[i].ProducerID != b[i].ProducerID || a[i].ProducerEpoch != b[i].ProducerEpoch || aok != bok ||
			ab.LastSequence != bb.LastSequence || ab.LastOffset != bb.LastOffset {
			return false
		}
	}
	return true
}

// checkEpochsMatchBatches: every leader epoch the log's batches carry
// starts, in the recovered cache, at or before the first batch with it,
// and no entry names an epoch newer than the batch at its start offset;
// the cache is what a rebuild from the batches would say, give or take
// epochs assigned with no batch written yet.
func checkEpochsMatchBatches(t *testing.T, l *Log) {
	t.Helper()
	entries := l.LeaderEpochs()
	lso := l.LogStartOffset()
	for _, g := range batchesOf(t, readAll(t, l)) {
		h, _ := batch.ParseHeader(g)
		if h.PartitionLeaderEpoch < 0 || h.LastOffset() < lso {
			continue // a read from the first segment starts below the log start
		}
		// The first entry starts at the log start offset, which may lie
		// inside the first batch.
		at := max(h.BaseOffset, lso)
		// The entry in force at the batch's offset must carry its epoch
		// or a newer one only if the batch was copied (never here): the
		// same epoch.
		var in *EpochEntry
		for i := range entries {
			if entries[i].StartOffset <= at {
				in = &entries[i]
			}
		}
		if in == nil && len(entries) > 0 && h.LastOffset() < entries[0].StartOffset {
			// The first entry was moved up to a log start offset
			// (DeleteRecords, retention) whose checkpoint the crash lost
			// while the epoch checkpoint's rewrite survived: the log
			// start is back below it. So on main too.
			continue
		}
		if in == nil && len(entries) > 0 && h.BaseOffset < entries[0].StartOffset {
			in = &entries[0] // the batch holds the first entry's start
		}
		if in == nil || in.Epoch != h.PartitionLeaderEpoch {
			t.Fatalf("batch at %d has leader epoch %d, the recovered cache %v says otherwise", h.BaseOffset, h.PartitionLeaderEpoch, entries)
		}
	}
}

// makeProducerBatch builds the next batch of an idempotent producer (epoch
// 0), with the sequence that follows what l's producer state holds.
func makeProducerBatch(t *testing.T, l *Log, pid int64, id, n int, ts int64) []byte {
	t.Helper()
	seq := int32(0)
	l.mu.Lock()
	if e, ok := l.producers.LastEntry(pid); ok {
		if last := e.LastSequence(); last >= 0 {
			seq = last + 1
		}
	}
	l.mu.Unlock()
	b := batch.NewBuilder(batch.CompressionNone)
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, 0, seq
	// The crash workload's transactional producers write transactional
	// batches.
	b.IsTransactional = pid >= crashTxnPID
	for i := 0; i < n; i++ {
		b.Append(batch.Record{Timestamp: ts + int64(i), Value: []byte(fmt.Sprintf("p%d-%d-%d", pid, id, i))})
	}
	raw, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// checkProducerStateMatchesReplay: the producer state recovery built (a
// snapshot plus replay) equals the state from replaying the whole log.
func checkProducerStateMatchesReplay(t *testing.T, l *Log) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	full := producer.New(producer.Options{})
	full.OnLogStartOffsetIncremented(l.segments[0].baseOffset)
	if _, err := l.replayProducerState(full, l.segments[0].baseOffset); err != nil {
		t.Fatal(err)
	}
	// Producers whose batches retention deleted are kept (KIP-360), and a
	// replay cannot see them: they must lie wholly below the first segment.
	var got []producer.Entry
	first := l.segments[0].baseOffset
	for _, e := range l.producers.Entries() {
		if b, ok := e.LastBatch(); ok && b.LastOffset < first {
			continue
		}
		got = append(got, e)
	}
	// A producer known by a marker alone (or whose batches retention
	// deleted before a marker) is known without a batch by one side only,
	// depending on where the replay started: those are left out here, and
	// checkTxnsMatchModel checks the transactions.
	var want []producer.Entry
	for _, e := range full.Entries() {
		if _, ok := e.LastBatch(); ok {
			want = append(want, e)
		}
	}
	got = slices.DeleteFunc(got, func(e producer.Entry) bool { _, ok := e.LastBatch(); return !ok })
	// A snapshot keeps only each producer's last batch (Kafka's layout), so
	// compare what both must agree on: producer, epoch, last sequence and
	// last offset.
	if len(got) != len(want) {
		t.Fatalf("producer state has %d producers with batches in the log, a full replay %d:\n%+v\n%+v", len(got), len(want), got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		gb, _ := g.LastBatch()
		wb, _ := w.LastBatch()
		if g.ProducerID != w.ProducerID || g.ProducerEpoch != w.ProducerEpoch || gb.LastSequence != wb.LastSequence || gb.LastOffset != wb.LastOffset {
			t.Fatalf("producer %d: recovered (epoch %d, seq %d, offset %d), full replay (epoch %d, seq %d, offset %d)",
				w.ProducerID, g.ProducerEpoch, gb.LastSequence, gb.LastOffset, w.ProducerEpoch, wb.LastSequence, wb.LastOffset)
		}
	}
}

// crashTxnPID is the first of the crash workload's transactional producers.
const crashTxnPID = 2000

// checkTxnsMatchModel: the open transactions, the last stable offset and
// the transaction indexes of the recovered log are those a model walk of
// the batches it holds (and those retention deleted) gives.
func checkTxnsMatchModel(t *testing.T, fsys vfs.FS, l *Log, batches []modelBatch) {
	t.Helper()
	open := map[int64]int64{}
	var aborted []abortedTxn
	for _, b := range batches {
		switch {
		case b.marker != "":
			first, ok := open[b.txnPID]
			if !ok {
				first = b.base
			}
			delete(open, b.txnPID)
			if b.marker == "ABORT" {
				lso := b.base + 1
				for _, f := range open {
					lso = min(lso, f)
				}
				aborted = append(aborted, abortedTxn{ProducerID: b.txnPID, FirstOffset: first, LastOffset: b.base, LastStableOffset: lso})
			}
		case b.txnPID != 0:
			if _, ok := open[b.txnPID]; !ok {
				open[b.txnPID] = b.base
			}
		}
	}
	leo := l.LogEndOffset()
	wantLSO := leo
	var wantOpen []string
	for pid, f := range open {
		wantLSO = min(wantLSO, f)
		wantOpen = append(wantOpen, fmt.Sprintf("%d@%d", pid, f))
	}
	slices.Sort(wantOpen)
	var gotOpen []string
	for _, o := range l.OpenTxns() {
		gotOpen = append(gotOpen, fmt.Sprintf("%d@%d", o.ProducerID, o.FirstOffset))
	}
	slices.Sort(gotOpen)
	if !slices.Equal(gotOpen, wantOpen) {
		t.Fatalf("open transactions after recovery %v, model %v", gotOpen, wantOpen)
	}
	if got := l.LastStableOffset(leo); got != wantLSO {
		t.Fatalf("last stable offset after recovery %d, model %d", got, wantLSO)
	}
	segs := l.Segments()
	var gotAborted []abortedTxn
	for _, s := range segs {
		entries, err := readAbortedTxns(fsys, l.Dir(), s.BaseOffset)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.LastOffset < s.BaseOffset || e.LastOffset >= s.NextOffset {
				t.Fatalf("segment %d-%d indexes an aborted transaction whose marker is at %d", s.BaseOffset, s.NextOffset, e.LastOffset)
			}
		}
		gotAborted = append(gotAborted, entries...)
	}
	var wantAborted []abortedTxn
	for _, a := range aborted {
		if a.LastOffset >= segs[0].BaseOffset {
			wantAborted = append(wantAborted, a)
		}
	}
	// A transaction whose first batches retention deleted before its
	// marker (or another one open then) is known to a replay that starts
	// without a snapshot only from its first batch in the log's first
	// segment, or from its marker: the entry may then say the transaction
	// started there, and the last stable offset after it. Either way no
	// offset below the log's first segment is served, and the entry still
	// covers every batch of the transaction that is.
	first := segs[0].BaseOffset
	firstInLog := func(w abortedTxn) int64 {
		for _, b := range batches {
			if b.marker == "" && b.txnPID == w.ProducerID && b.base >= first && b.base >= w.FirstOffset && b.base < w.LastOffset {
				return b.base
			}
		}
		return w.LastOffset
	}
	equalEntry := func(g, w abortedTxn) bool {
		if g == w {
			return true
		}
		return g.ProducerID == w.ProducerID && g.LastOffset == w.LastOffset &&
			(w.FirstOffset < first || w.LastStableOffset < first) &&
			(g.FirstOffset == w.FirstOffset || g.FirstOffset == firstInLog(w) || g.FirstOffset == g.LastOffset) &&
			g.LastStableOffset >= w.LastStableOffset
	}
	if !slices.EqualFunc(gotAborted, wantAborted, equalEntry) {
		t.Fatalf("aborted transactions indexed after recovery %+v, model %+v", gotAborted, wantAborted)
	}
}

// damagedAt says whether off lies in one of the damaged ranges.
func damagedAt(damage []Damage, off int64) bool {
	for _, d := range damage {
		if off >= d.FirstOffset && (d.LastOffset < 0 || off <= d.LastOffset) {
			return true
		}
	}
	return false
}
