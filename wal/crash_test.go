package wal

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/wren-broker/wren/internal/vfs"
)

// TestCrashRecovery runs seeded random workloads (concurrent appends,
// syncs, truncations at both ends, rolls) on the crash-simulating MemFS,
// cuts the power at a random mutating operation, keeping a random prefix
// of unsynced writes and tearing the next, and checks after every recovery:
//   - every acknowledged record reads back byte for byte at its index;
//   - every record present was appended, at most once, and was not removed
//     by a truncation that returned;
//   - FirstIndex never moves back.
//
// WREN_CRASH_ITERATIONS sets the number of workloads (300 by default),
// WREN_CRASH_SEED the first seed. A failure names the seed of its workload;
// rerun it with WREN_CRASH_SEED=<seed> WREN_CRASH_ITERATIONS=1. The seed
// fixes the workload and the crash, not the goroutine interleaving.
func TestCrashRecovery(t *testing.T) {
	iterations := 300
	if testing.Short() {
		iterations = 50
	}
	if s := os.Getenv("WREN_CRASH_ITERATIONS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("WREN_CRASH_ITERATIONS=%q: want a positive integer", s)
		}
		iterations = n
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("WREN_CRASH_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("WREN_CRASH_SEED=%q: %v", s, err)
		}
		seed = n
	}
	t.Logf("first seed %d, %d iterations", seed, iterations)
	var stats crashStats
	for i := range iterations {
		s := seed + uint64(i)
		if err := runCrashWorkload(s, &stats); err != nil {
			t.Fatalf("seed %d: %v\nreplay: WREN_CRASH_SEED=%d WREN_CRASH_ITERATIONS=1 go test -run TestCrashRecovery ./wal", s, err, s)
		}
	}
	t.Logf("%+v", stats)
	// The workloads must reach every kind of recovery work. Checked on the
	// full runs (300 workloads, 20,000 in CI): the -short run under qemu
	// (other architectures, 50 workloads) is slow enough that once no
	// workload lived to remove a file before its crash.
	if !testing.Short() && iterations >= 50 && (stats.crashesMidWorkload == 0 || stats.crashesInOpen == 0 || stats.acked == 0 || stats.truncatedBytes == 0 || stats.removedFiles == 0) {
		t.Fatalf("the workloads exercised too little: %+v", stats)
	}
}

type crashStats struct {
	rounds, crashesMidWorkload, crashesInOpen int
	acked, verified                           int
	truncatedBytes                            int64
	removedFiles                              int
}

const (
	crashRounds     = 3
	crashGoroutines = 4
	crashOpsEach    = 20
	// crashOpBudget is about the number of mutating file operations one
	// round's workload makes; crash points are drawn below it, so most
	// rounds crash mid-workload and the rest at its end.
	crashOpBudget = 450
)

func runCrashWorkload(seed uint64, stats *crashStats) error {
	rng := rand.New(rand.NewPCG(seed, 0x5741_4c))
	fsys := vfs.NewMem()
	opts := Options{SegmentBytes: 96 + rng.Int64N(600), MaxRecordBytes: 256}
	m := newCrashModel()
	for round := 0; round <= crashRounds; round++ {
		crashOpts := vfs.CrashOptions{
			Rand:          rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())),
			KeepUnsynced:  rng.IntN(3) > 0,
			TearLastWrite: rng.IntN(2) == 0,
		}
		// Sometimes crash again during recovery itself.
		if round > 0 && rng.IntN(4) == 0 {
			fsys.SetCrashAfter(rng.Int64N(8), crashOpts)
			if l, err := Open(fsys, "log", opts); err == nil {
				l.Close()
			}
			if next := fsys.CrashState(); next != nil {
				fsys = next
				stats.crashesInOpen++
			} else {
				fsys.SetCrashAfter(-1, crashOpts)
			}
		}
		l, err := Open(fsys, "log", opts)
		if err != nil {
			return fmt.Errorf("round %d: Open: %w", round, err)
		}
		r := l.Recovery()
		stats.truncatedBytes += r.TruncatedBytes
		stats.removedFiles += len(r.RemovedFiles)
		n, err := m.verify(l)
		stats.verified += n
		if err != nil {
			l.Close()
			return fmt.Errorf("round %d, after recovery (%+v): %w", round, r, err)
		}
		if round == crashRounds {
			if _, err := l.Append([]byte("after the last crash")); err != nil {
				return fmt.Errorf("append after recovery: %w", err)
			}
			return l.Close()
		}
		stats.rounds++

		fsys.SetCrashAfter(rng.Int64N(crashOpBudget), crashOpts)
		if err := m.runWorkload(l, fsys, rng, stats); err != nil {
			l.Close()
			return fmt.Errorf("round %d: %w", round, err)
		}
		if fsys.CrashState() == nil {
			fsys.Crash(crashOpts)
		} else {
			stats.crashesMidWorkload++
		}
		l.Close()
		fsys = fsys.CrashState()
	}
	return nil
}

// crashModel is what the test knows of the log: the records of completed
// appends and what completed truncations removed.
type crashModel struct {
	mu sync.Mutex
	// entries are the records completed appends wrote, by index, minus
	// those completed truncations removed.
	entries map[uint64]*crashEntry
	// submitted holds every payload ever given to an append; dead those a
	// truncation that returned removed, which must never come back.
	submitted, dead map[string]bool
	// Bounds left by truncations that failed (the crash hit them): records
	// below mayLoseBelow or at or above mayLoseFrom may be gone.
	mayLoseBelow, mayLoseFrom uint64
	// firstFloor is the lowest FirstIndex the log may show.
	firstFloor uint64
	// payloads counts appended payloads, to make each one unique.
	payloads int
	// violation is the first problem a workload goroutine saw.
	violation error
}

type crashEntry struct {
	payload []byte
	durable bool
}

func newCrashModel() *crashModel {
	return &crashModel{
		entries:     make(map[uint64]*crashEntry),
		submitted:   make(map[string]bool),
		dead:        make(map[string]bool),
		mayLoseFrom: ^uint64(0),
	}
}

func (m *crashModel) fail(err error) {
	m.mu.Lock()
	if m.violation == nil {
		m.violation = err
	}
	m.mu.Unlock()
}

// verify checks a freshly recovered log against the model, then makes the
// recovered contents the model: recovery synced them.
func (m *crashModel) verify(l *Log) (int, error) {
	first, last := l.FirstIndex(), l.LastIndex()
	if first < m.firstFloor {
		return 0, fmt.Errorf("FirstIndex went back to %d from %d", first, m.firstFloor)
	}
	checked := 0
	for idx, e := range m.entries {
		if !e.durable || idx < m.mayLoseBelow || idx >= m.mayLoseFrom {
			continue
		}
		if idx < first || idx > last {
			return checked, fmt.Errorf("acknowledged record %d lost: log holds [%d, %d]", idx, first, last)
		}
		p, err := l.Read(idx)
		if err != nil {
			return checked, fmt.Errorf("acknowledged record %d: %w", idx, err)
		}
		if !bytes.Equal(p, e.payload) {
			return checked, fmt.Errorf("acknowledged record %d reads %q, want %q", idx, p, e.payload)
		}
		checked++
	}
	seen := make(map[string]uint64)
	recovered := make(map[uint64]*crashEntry)
	next := first
	err := l.Scan(first, func(idx uint64, p []byte) error {
		if idx != next {
			return fmt.Errorf("Scan jumped from %d to %d", next, idx)
		}
		next++
		s := string(p)
		switch {
		case m.dead[s]:
			return fmt.Errorf("record %d %q was truncated away and came back", idx, p)
		case !m.submitted[s]:
			return fmt.Errorf("record %d %q was never appended", idx, p)
		}
		if at, dup := seen[s]; dup {
			return fmt.Errorf("record %q at both %d and %d", p, at, idx)
		}
		seen[s] = idx
		if e, ok := m.entries[idx]; ok && !bytes.Equal(e.payload, p) {
			return fmt.Errorf("record %d reads %q, but the append that returned it wrote %q", idx, p, e.payload)
		}
		recovered[idx] = &crashEntry{payload: bytes.Clone(p), durable: true}
		return nil
	})
	if err != nil {
		return checked, err
	}
	if next != last+1 {
		return checked, fmt.Errorf("Scan ended at %d, LastIndex %d", next, last)
	}
	for idx, e := range m.entries {
		if at, ok := seen[string(e.payload)]; ok && at != idx {
			return checked, fmt.Errorf("record %q appended at %d is at %d", e.payload, idx, at)
		}
	}
	m.entries = recovered
	m.mayLoseBelow, m.mayLoseFrom = 0, ^uint64(0)
	m.firstFloor = first
	return checked, nil
}

// runWorkload runs concurrent goroutines of random operations until each
// has done its share or met the crash. Appends and reads share opLock;
// truncations take it alone, so the model knows which appends a truncation
// followed.
func (m *crashModel) runWorkload(l *Log, fsys *vfs.MemFS, rng *rand.Rand, stats *crashStats) error {
	var opLock sync.RWMutex
	var wg sync.WaitGroup
	var acked sync.Map
	for g := range crashGoroutines {
		grng := rand.New(rand.NewPCG(rng.Uint64(), uint64(g)))
		wg.Go(func() {
			w := crashWorker{m: m, l: l, fsys: fsys, rng: grng, id: g, opLock: &opLock}
			for op := range crashOpsEach {
				if !w.step(op) {
					break
				}
			}
			acked.Store(g, w.acked)
		})
	}
	wg.Wait()
	acked.Range(func(_, v any) bool { stats.acked += v.(int); return true })
	return m.violation
}

type crashWorker struct {
	m      *crashModel
	l      *Log
	fsys   *vfs.MemFS
	rng    *rand.Rand
	id     int
	opLock *sync.RWMutex
	acked  int
}

// step runs one random operation and reports whether to go on.
func (w *crashWorker) step(op int) bool {
	switch r := w.rng.IntN(100); {
	case r < 60:
		return w.append(op, true)
	case r < 75:
		return w.append(op, false)
	case r < 80:
		return w.sync()
	case r < 88:
		return w.truncateSuffix()
	case r < 95:
		return w.truncatePrefix()
	default:
		return w.read()
	}
}

// check reports whether to go on after err: errors are expected only once
// the FS has crashed, and must come from the crash.
func (w *crashWorker) check(what string, err error) bool {
	if err == nil {
		return true
	}
	if w.fsys.CrashState() == nil || !errors.Is(err, vfs.ErrCrashed) {
		w.m.fail(fmt.Errorf("%s failed before or beside the crash: %w", what, err))
	}
	return false
}

func (w *crashWorker) append(op int, durable bool) bool {
	payloads := make([][]byte, 1+w.rng.IntN(3))
	w.m.mu.Lock()
	for i := range payloads {
		w.m.payloads++
		p := fmt.Appendf(nil, "#%d g%d op%d|", w.m.payloads, w.id, op)
		for range w.rng.IntN(120) {
			p = append(p, byte('a'+w.rng.IntN(26)))
		}
		payloads[i] = p
		w.m.submitted[string(p)] = true
	}
	w.m.mu.Unlock()

	w.opLock.RLock()
	defer w.opLock.RUnlock()
	var last uint64
	var err error
	if durable {
		last, err = w.l.Append(payloads...)
	} else {
		last, err = w.l.AppendNoSync(payloads...)
	}
	if !w.check("append", err) {
		return false
	}
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	first := last - uint64(len(payloads)) + 1
	for i, p := range payloads {
		idx := first + uint64(i)
		if e, ok := w.m.entries[idx]; ok {
			w.m.violation = fmt.Errorf("append got index %d, already holding %q", idx, e.payload)
			return false
		}
		w.m.entries[idx] = &crashEntry{payload: p}
	}
	if durable {
		// A completed sync covers every record before the last one too.
		for idx, e := range w.m.entries {
			if idx <= last {
				e.durable = true
			}
		}
		w.acked += len(payloads)
	}
	return true
}

func (w *crashWorker) sync() bool {
	w.opLock.RLock()
	defer w.opLock.RUnlock()
	w.m.mu.Lock()
	var pending []*crashEntry
	for _, e := range w.m.entries {
		if !e.durable {
			pending = append(pending, e)
		}
	}
	w.m.mu.Unlock()
	if !w.check("sync", w.l.Sync()) {
		return false
	}
	w.m.mu.Lock()
	for _, e := range pending {
		e.durable = true
	}
	w.m.mu.Unlock()
	return true
}

func (w *crashWorker) truncateSuffix() bool {
	w.opLock.Lock()
	defer w.opLock.Unlock()
	first, last := w.l.FirstIndex(), w.l.LastIndex()
	// Mostly near the end, as a diverged follower would.
	idx := last + 1 - min(last+1-first, uint64(w.rng.IntN(8)))
	err := w.l.TruncateSuffix(idx)
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	if err != nil {
		w.m.mayLoseFrom = min(w.m.mayLoseFrom, idx)
		return w.check(fmt.Sprintf("TruncateSuffix(%d)", idx), err)
	}
	for i, e := range w.m.entries {
		if i >= idx {
			w.m.dead[string(e.payload)] = true
			delete(w.m.entries, i)
		}
	}
	return true
}

func (w *crashWorker) truncatePrefix() bool {
	w.opLock.Lock()
	defer w.opLock.Unlock()
	first, last := w.l.FirstIndex(), w.l.LastIndex()
	idx := first + uint64(w.rng.Int64N(int64(last-first+2)))
	restart := w.rng.IntN(5) == 0
	if restart {
		idx = last + 2 + uint64(w.rng.IntN(20))
	}
	err := w.l.TruncatePrefix(idx)
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	if err != nil {
		w.m.mayLoseBelow = max(w.m.mayLoseBelow, idx)
		return w.check(fmt.Sprintf("TruncatePrefix(%d)", idx), err)
	}
	if restart {
		for i, e := range w.m.entries {
			w.m.dead[string(e.payload)] = true
			delete(w.m.entries, i)
		}
		if got := w.l.FirstIndex(); got != idx {
			w.m.violation = fmt.Errorf("FirstIndex %d after TruncatePrefix(%d) beyond the end", got, idx)
			return false
		}
	} else {
		// Records below idx may go with their files, or stay.
		w.m.mayLoseBelow = max(w.m.mayLoseBelow, idx)
	}
	w.m.firstFloor = w.l.FirstIndex()
	return true
}

func (w *crashWorker) read() bool {
	w.opLock.RLock()
	defer w.opLock.RUnlock()
	w.m.mu.Lock()
	var idx uint64
	var want []byte
	for i, e := range w.m.entries {
		// Skip records a failed truncation may have removed: the log's
		// view of them is undefined once it failed.
		if i >= w.m.mayLoseBelow && i < w.m.mayLoseFrom && i >= w.m.firstFloor {
			idx, want = i, e.payload
			break
		}
	}
	w.m.mu.Unlock()
	if want == nil {
		return true
	}
	p, err := w.l.Read(idx)
	if !w.check(fmt.Sprintf("Read(%d)", idx), err) {
		return false
	}
	if !bytes.Equal(p, want) {
		w.m.fail(fmt.Errorf("Read(%d) = %q while the log runs, want %q", idx, p, want))
		return false
	}
	return true
}
