package engine

import (
	"bytes"
	"context"
	"errors"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// spaceEnv is a Manager on a MemFS with a capacity, behind a FaultFS, with
// an injected clock, and a model of every acknowledged batch.
type spaceEnv struct {
	t     *testing.T
	mem   *vfs.MemFS
	ffs   *vfs.FaultFS
	clock *testClock
	cfg   ManagerConfig
	m     *Manager

	mu       sync.Mutex
	events   []DiskSpaceEvent
	failures []error

	// acked maps a log to its acknowledged batches, as stored, by base
	// offset; lastAcked is the highest acknowledged offset per log.
	acked     map[TopicPartition]map[int64][]byte
	lastAcked map[TopicPartition]int64
	id        int
}

func newSpaceEnv(t *testing.T, capacity int64, floor FreeSpaceFloor, opts Options) *spaceEnv {
	e := &spaceEnv{t: t, mem: vfs.NewMem(), clock: &testClock{ms: 1_700_000_000_000},
		acked: map[TopicPartition]map[int64][]byte{}, lastAcked: map[TopicPartition]int64{}}
	e.mem.SetCapacity(capacity)
	e.ffs = vfs.NewFaultFS(e.mem)
	opts.Now = e.clock.now
	e.cfg = ManagerConfig{ClusterID: "c", NodeID: 1, Defaults: opts, FreeSpaceFloor: floor,
		OnDirFailure: func(err error) { e.mu.Lock(); e.failures = append(e.failures, err); e.mu.Unlock() },
		OnDiskSpace:  func(ev DiskSpaceEvent) { e.mu.Lock(); e.events = append(e.events, ev); e.mu.Unlock() }}
	m, err := OpenManager(e.ffs, "/data", e.cfg)
	mustNotErr(t, err)
	e.m = m
	t.Cleanup(func() { e.m.Close() })
	return e
}

func (e *spaceEnv) log(name string) *Log {
	l, err := e.m.GetOrCreateLog(TopicPartition{name, 0})
	mustNotErr(e.t, err)
	return l
}

// produce is the wire layer's path: CheckWritable, then Append. A batch
// that returns without an error is acknowledged and recorded.
func (e *spaceEnv) produce(l *Log, size int) (AppendInfo, error) {
	if err := l.CheckWritable(); err != nil {
		return AppendInfo{}, err
	}
	return e.append(l, size)
}

func (e *spaceEnv) append(l *Log, size int) (AppendInfo, error) {
	e.id++
	b := makeBatch(e.t, batch.CompressionNone, e.id, 2, size/2, e.clock.ms)
	info, err := l.Append(b, 0)
	if err != nil {
		return info, err
	}
	tp := l.TopicPartition()
	if last, ok := e.lastAcked[tp]; ok && info.FirstOffset <= last {
		e.t.Fatalf("%s: acknowledged offset %d reused (last acknowledged %d)", tp, info.FirstOffset, last)
	}
	if e.acked[tp] == nil {
		e.acked[tp] = map[int64][]byte{}
	}
	e.acked[tp][info.FirstOffset] = b // Append rewrote the header in place
	e.lastAcked[tp] = info.LastOffset
	return info, nil
}

// checkAcked reads every acknowledged batch back at its offset.
func (e *spaceEnv) checkAcked(m *Manager) {
	e.t.Helper()
	for tp, batches := range e.acked {
		l := m.Log(tp)
		if l == nil {
			e.t.Fatalf("%s is gone", tp)
		}
		if l.LogEndOffset() <= e.lastAcked[tp] {
			e.t.Fatalf("%s: log end offset %d, acknowledged up to %d", tp, l.LogEndOffset(), e.lastAcked[tp])
		}
		for off, want := range batches {
			got, err := l.ReadBatches(off, int64(len(want)), l.LogEndOffset())
			if err != nil {
				e.t.Fatalf("%s: read %d: %v", tp, off, err)
			}
			if !bytes.Equal(got, want) {
				e.t.Fatalf("%s: batch at %d reads back differently (%d bytes, want %d)", tp, off, len(got), len(want))
			}
		}
	}
}

func (e *spaceEnv) eventKinds() []DiskSpaceEventKind {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []DiskSpaceEventKind
	for _, ev := range e.events {
		out = append(out, ev.Kind)
	}
	return out
}

func (e *spaceEnv) lastEvent(kind DiskSpaceEventKind) (DiskSpaceEvent, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := len(e.events) - 1; i >= 0; i-- {
		if e.events[i].Kind == kind {
			return e.events[i], true
		}
	}
	return DiskSpaceEvent{}, false
}

func (e *spaceEnv) used() int64 {
	s, err := vfs.StatFS(e.mem, "/data")
	mustNotErr(e.t, err)
	return s.TotalBytes - s.FreeBytes
}

func TestFreeSpaceFloorBytes(t *testing.T) {
	for _, tc := range []struct {
		floor FreeSpaceFloor
		total int64
		want  int64
	}{
		{FreeSpaceFloor{256 << 20, 5}, 8 << 30, 256 << 20},  // 8 GiB SD card: the byte figure
		{FreeSpaceFloor{256 << 20, 5}, 20 << 20, 1 << 20},   // 20 MiB test file system: 5%
		{FreeSpaceFloor{256 << 20, 5}, 2 << 30, 107374182},  // 2 GiB: 5% is smaller
		{FreeSpaceFloor{0, 5}, 8 << 30, 0},                  // off
		{FreeSpaceFloor{256 << 20, 0}, 8 << 30, 0},          // off
		{FreeSpaceFloor{1 << 20, 100}, 8 << 30, 1 << 20},    // bytes only
		{FreeSpaceFloor{1 << 62, 50}, 64 << 30, 32 << 30},   // percent only
		{FreeSpaceFloor{256 << 20, 5}, 0, 0},                // an empty file system
		{FreeSpaceFloor{256 << 20, 5}, 64 << 30, 256 << 20}, // 64 GiB
	} {
		if got := tc.floor.floorBytes(tc.total); got != tc.want {
			t.Errorf("%+v on %d bytes: floor %d, want %d", tc.floor, tc.total, got, tc.want)
		}
	}
}

// TestFloorRefusesThenResumes: appends fill the disk to the floor and are
// refused with ErrLogDirFull naming the directory and the figures, before
// any write meets ENOSPC; internal appends still go; writes stay refused
// inside the hysteresis margin and resume by themselves once space is
// back above it, with every acknowledged batch readable at its offset.
func TestFloorRefusesThenResumes(t *testing.T) {
	const capacity = 1 << 20
	floor := FreeSpaceFloor{MinFreeBytes: 256 << 10, MinFreePercent: 100}
	e := newSpaceEnv(t, capacity, floor, testOptions(nil))
	l := e.log("t")
	var refused error
	for i := 0; i < 2000 && refused == nil; i++ {
		_, err := e.produce(l, 1000)
		switch {
		case errors.Is(err, ErrLogDirFull):
			refused = err
		case err != nil:
			t.Fatalf("append %d: %v (the floor should refuse before ENOSPC)", i, err)
		}
	}
	if refused == nil {
		t.Fatal("2000 appends of 1 KB never reached the floor of a 1 MiB disk")
	}
	for _, want := range []string{"/data", "free of 1048576", "floor 262144", "resume at 294912"} {
		if !strings.Contains(refused.Error(), want) {
			t.Fatalf("refusal %q does not say %q", refused, want)
		}
	}
	if free := capacity - e.used(); free >= 256<<10 || free < 256<<10-writeBudgetMinBytes-2000 {
		t.Fatalf("refused with %d bytes free; the floor is %d and appends may overshoot it by at most %d", free, 256<<10, writeBudgetMinBytes)
	}
	if err := e.m.CheckWritable(); !errors.Is(err, ErrLogDirFull) {
		t.Fatalf("Manager.CheckWritable below the floor: %v", err)
	}
	if e.m.Failed() != nil {
		t.Fatalf("the floor failed the directory: %v", e.m.Failed())
	}
	// Internal writers (group offsets) do not check the floor.
	if _, err := e.append(l, 500); err != nil {
		t.Fatalf("internal append below the floor: %v", err)
	}
	// Space comes back, but not past the margin: still refused.
	e.mem.SetCapacity(e.used() + 256<<10 + 1<<10)
	e.clock.advance(refusedResampleInterval)
	if _, err := e.produce(l, 100); !errors.Is(err, ErrLogDirFull) {
		t.Fatalf("inside the hysteresis margin: %v", err)
	}
	// Past it: the next produce resamples and goes through.
	e.mem.SetCapacity(e.used() + 512<<10)
	if _, err := e.produce(l, 100); !errors.Is(err, ErrLogDirFull) {
		t.Fatalf("resampled within %v of the last sample: %v", refusedResampleInterval, err)
	}
	e.clock.advance(refusedResampleInterval)
	if _, err := e.produce(l, 100); err != nil {
		t.Fatalf("after space came back: %v", err)
	}
	if got := e.eventKinds(); len(got) != 2 || got[0] != DiskSpaceBelowFloor || got[1] != DiskSpaceAboveFloor {
		t.Fatalf("events %v, want below then above", got)
	}
	e.checkAcked(e.m)
	checkIndexesAgree(t, l)
}

// TestFloorSampledPeriodically: another program filling the disk is seen
// by SampleDiskSpace, which the broker calls on a timer.
func TestFloorSampledPeriodically(t *testing.T) {
	e := newSpaceEnv(t, 64<<20, FreeSpaceFloor{MinFreeBytes: 1 << 20, MinFreePercent: 5}, testOptions(nil))
	l := e.log("t")
	if _, err := e.produce(l, 1000); err != nil {
		t.Fatal(err)
	}
	// Another program fills the disk.
	ballast, err := e.mem.Create("/ballast")
	mustNotErr(t, err)
	n, _ := ballast.WriteAt(make([]byte, 64<<20), 0)
	ballast.Truncate(int64(n) - 100<<10)
	s, err := e.m.SampleDiskSpace()
	if err != nil || !s.BelowFloor || s.FloorBytes != 1<<20 {
		t.Fatalf("sample after the disk filled: %+v %v", s, err)
	}
	if _, err := e.produce(l, 1000); !errors.Is(err, ErrLogDirFull) {
		t.Fatalf("produce: %v", err)
	}
	if got, ok := e.m.DiskSpace(); !ok || got != s {
		t.Fatalf("DiskSpace() = %+v, %v; want the last sample %+v", got, ok, s)
	}
}

// TestNoFloorWithoutStatFS: an FS that cannot report free space runs
// without a floor, as before.
func TestNoFloorWithoutStatFS(t *testing.T) {
	e := newSpaceEnv(t, 0, FreeSpaceFloor{MinFreeBytes: 1 << 20, MinFreePercent: 5}, testOptions(nil))
	if _, err := e.m.SampleDiskSpace(); !errors.Is(err, vfs.ErrStatFSUnsupported) {
		t.Fatalf("sample: %v", err)
	}
	if _, err := e.produce(e.log("t"), 1000); err != nil {
		t.Fatal(err)
	}
}

// TestENOSPCOnWriteFailsOnlyTheAppend: ENOSPC on the log write (short),
// on an offset or time index entry, and at a roll (segment create, producer
// snapshot, a new segment's index) fails that append alone with
// ErrNoSpace; the files are back at their size before it, the directory
// stays healthy, the next append takes the same offsets, and every
// acknowledged batch reads back at its offset, after a crash too.
func TestENOSPCOnWriteFailsOnlyTheAppend(t *testing.T) {
	suffix := func(s string) func(string) bool { return func(n string) bool { return strings.HasSuffix(n, s) } }
	for _, tc := range []struct {
		name  string
		fault vfs.Fault
	}{
		{"log write, short", vfs.Fault{Op: vfs.OpWrite, Path: suffix(".log"), Err: errnoENOSPC, ShortWrite: 100, Count: 1}},
		{"log write, EDQUOT", vfs.Fault{Op: vfs.OpWrite, Path: suffix(".log"), Err: errnoEDQUOT, Count: 1}},
		{"offset index write", vfs.Fault{Op: vfs.OpWrite, Path: suffix(".index"), Err: errnoENOSPC, ShortWrite: 3, Count: 1}},
		{"time index write", vfs.Fault{Op: vfs.OpWrite, Path: suffix(".timeindex"), Err: errnoENOSPC, ShortWrite: 5, Count: 1}},
		{"segment create at roll", vfs.Fault{Op: vfs.OpCreate, Path: suffix(".timeindex"), Err: errnoENOSPC, Count: 1}},
		{"producer snapshot at roll", vfs.Fault{Op: vfs.OpWrite, Path: suffix(".snapshot.tmp"), Err: errnoENOSPC, Count: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions(nil)
			opts.SegmentBytes = 8 << 10
			opts.IndexIntervalBytes = 1500
			e := newSpaceEnv(t, 0, FreeSpaceFloor{}, opts)
			a, b := e.log("a"), e.log("b")
			for i := 0; i < 3; i++ {
				_, err := e.append(a, 1000)
				mustNotErr(t, err)
			}
			e.ffs.Inject(tc.fault)
			var noSpace error
			for i := 0; i < 40 && e.ffs.Fired() == 0; i++ {
				leo := a.LogEndOffset()
				sizes := fileSizes(t, e.mem, a.Dir())
				_, err := e.append(a, 1000)
				if err == nil {
					continue
				}
				noSpace = err
				if !errors.Is(err, ErrNoSpace) || errors.Is(err, ErrLogDirFailed) {
					t.Fatalf("append under the fault: %v, want ErrNoSpace alone", err)
				}
				if a.LogEndOffset() != leo {
					t.Fatalf("log end offset moved from %d to %d on a refused append", leo, a.LogEndOffset())
				}
				after := fileSizes(t, e.mem, a.Dir())
				for name, size := range sizes {
					if strings.HasSuffix(name, ".tmp") {
						continue
					}
					if after[name] != size {
						t.Fatalf("%s: %d bytes after the refused append, %d before", name, after[name], size)
					}
				}
				for name := range after {
					// A producer snapshot taken at the roll is valid state.
					if _, ok := sizes[name]; !ok && !strings.HasSuffix(name, ".tmp") && !strings.HasSuffix(name, snapshotSuffix) {
						t.Fatalf("the refused append left %s behind", name)
					}
				}
			}
			if noSpace == nil {
				t.Fatalf("the fault never fired (%d)", e.ffs.Fired())
			}
			if e.m.Failed() != nil || len(e.failures) > 0 {
				t.Fatalf("directory failed: %v", e.m.Failed())
			}
			if _, ok := e.lastEvent(DiskSpaceNoSpace); !ok {
				t.Fatal("the lack of space was not told")
			}
			for i := 0; i < 20; i++ {
				_, err := e.append(a, 1000)
				mustNotErr(t, err)
			}
			_, err := e.append(b, 1000)
			mustNotErr(t, err)
			e.checkAcked(e.m)
			checkIndexesAgree(t, a)
			// Power loss: everything acknowledged is there.
			mustNotErr(t, a.Flush())
			after := e.mem.Crash(vfs.CrashOptions{})
			m2, err := OpenManager(after, "/data", e.cfg)
			mustNotErr(t, err)
			defer m2.Close()
			e.checkAcked(m2)
			checkIndexesAgree(t, m2.Log(TopicPartition{"a", 0}))
		})
	}
}

func fileSizes(t *testing.T, fsys vfs.FS, dir string) map[string]int64 {
	t.Helper()
	names, err := fsys.List(dir)
	mustNotErr(t, err)
	out := map[string]int64{}
	for _, n := range names {
		st, err := fsys.Stat(dir + "/" + n)
		mustNotErr(t, err)
		out[n] = st.Size()
	}
	return out
}

// TestFullDiskWithoutFloor: with the floor off, appends run the MemFS out
// of space for real; each then fails alone, and appends resume when space
// comes back, with nothing acknowledged lost.
func TestFullDiskWithoutFloor(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewSource(seed))
	opts := testOptions(nil)
	opts.SegmentBytes = 16 << 10
	e := newSpaceEnv(t, 256<<10, FreeSpaceFloor{}, opts)
	logs := []*Log{e.log("a"), e.log("b"), e.log("c")}
	refusals := 0
	for i := 0; i < 3000 && refusals < 20; i++ {
		_, err := e.produce(logs[rng.Intn(len(logs))], 200+rng.Intn(1500))
		switch {
		case errors.Is(err, ErrNoSpace):
			refusals++
		case err != nil:
			t.Fatalf("append %d: %v", i, err)
		}
	}
	if refusals < 20 {
		t.Fatalf("only %d appends met ENOSPC on a 256 KiB disk", refusals)
	}
	if e.m.Failed() != nil {
		t.Fatalf("directory failed: %v", e.m.Failed())
	}
	e.checkAcked(e.m)
	e.mem.SetCapacity(1 << 20)
	for _, l := range logs {
		for i := 0; i < 5; i++ {
			if _, err := e.produce(l, 1000); err != nil {
				t.Fatalf("after space came back: %v", err)
			}
		}
		checkIndexesAgree(t, l)
	}
	e.checkAcked(e.m)
}

// TestENOSPCOnFdatasyncRecoversInPlace: an fdatasync that fails with
// ENOSPC fails the directory (nothing in it is acknowledged, reads go
// on); once space is back above the floor the directory recovers without
// a restart: every log cut to its durable offset, the appenders that
// waited told ErrNoSpace, every acknowledged batch readable at its offset,
// no acknowledged offset reused, and a crash afterwards loses nothing.
func TestENOSPCOnFdatasyncRecoversInPlace(t *testing.T) {
	for _, via := range []string{"sample", "produce"} {
		t.Run(via, func(t *testing.T) {
			opts := testOptions(nil)
			opts.SegmentBytes = 16 << 10
			e := newSpaceEnv(t, 4<<20, FreeSpaceFloor{MinFreeBytes: 64 << 10, MinFreePercent: 100}, opts)
			a, b := e.log("a"), e.log("b")
			for i := 0; i < 30; i++ {
				_, err := e.produce(a, 700)
				mustNotErr(t, err)
				_, err = e.produce(b, 700)
				mustNotErr(t, err)
			}
			// The disk is full when a's next sync runs.
			full := e.used() + 2<<10
			e.mem.SetCapacity(full)
			e.ffs.Inject(vfs.Fault{Op: vfs.OpSyncData, Path: func(n string) bool { return strings.Contains(n, "/a-0/") }, Err: errnoENOSPC, Count: 1})
			leoBefore := a.LogEndOffset()
			if _, err := e.append(a, 700); !errors.Is(err, ErrLogDirFailed) {
				t.Fatalf("append whose fdatasync ran out of space: %v", err)
			}
			if e.m.Failed() == nil || len(e.failures) != 1 || !strings.Contains(e.failures[0].Error(), "fdatasync /data/a-0/") {
				t.Fatalf("failure reported: %v", e.failures)
			}
			if _, err := e.produce(b, 100); !errors.Is(err, ErrLogDirFailed) {
				t.Fatalf("append to another log of the failed directory: %v", err)
			}
			if err := e.m.CheckWritable(); !errors.Is(err, ErrLogDirFailed) {
				t.Fatalf("CheckWritable of the failed directory: %v", err)
			}
			e.checkAcked(e.m) // reads keep working
			// Space still short: no recovery.
			e.clock.advance(time.Second)
			if _, err := e.m.SampleDiskSpace(); err != nil {
				t.Fatal(err)
			}
			if e.m.Failed() == nil {
				t.Fatal("recovered with the disk still full")
			}
			// Space comes back.
			e.mem.SetCapacity(full + 1<<20)
			e.clock.advance(time.Second)
			switch via {
			case "sample":
				if _, err := e.m.SampleDiskSpace(); err != nil {
					t.Fatal(err)
				}
			case "produce":
				if err := a.CheckWritable(); err != nil {
					t.Fatalf("CheckWritable with space back: %v", err)
				}
			}
			if err := e.m.Failed(); err != nil {
				t.Fatalf("not recovered: %v", err)
			}
			ev, ok := e.lastEvent(DiskSpaceDirRecovered)
			if !ok || ev.Logs != 2 || ev.RecordsDropped != 2 || ev.BytesDropped == 0 {
				t.Fatalf("recovery event %+v (%v); want 2 logs, the 2 unacknowledged records of a dropped", ev, ok)
			}
			if a.LogEndOffset() != leoBefore || a.DurableOffset() != leoBefore {
				t.Fatalf("a: log end offset %d durable %d after recovery, want %d", a.LogEndOffset(), a.DurableOffset(), leoBefore)
			}
			checkIndexesAgree(t, a)
			e.checkAcked(e.m)
			for i := 0; i < 30; i++ {
				_, err := e.produce(a, 700)
				mustNotErr(t, err)
				_, err = e.produce(b, 700)
				mustNotErr(t, err)
			}
			e.checkAcked(e.m)
			after := e.mem.Crash(vfs.CrashOptions{})
			m2, err := OpenManager(after, "/data", e.cfg)
			mustNotErr(t, err)
			defer m2.Close()
			e.checkAcked(m2)
			checkIndexesAgree(t, m2.Log(TopicPartition{"a", 0}))
		})
	}
}

// TestEIOOnFdatasyncStaysFailed: an fdatasync that fails with EIO is not
// recovered in place, however much space there is.
func TestEIOOnFdatasyncStaysFailed(t *testing.T) {
	e := newSpaceEnv(t, 4<<20, FreeSpaceFloor{MinFreeBytes: 64 << 10, MinFreePercent: 100}, testOptions(nil))
	a := e.log("a")
	_, err := e.produce(a, 700)
	mustNotErr(t, err)
	e.ffs.Inject(vfs.Fault{Op: vfs.OpSyncData, Err: errnoEIO, Count: 1})
	if _, err := e.produce(a, 700); !errors.Is(err, ErrLogDirFailed) {
		t.Fatalf("append: %v", err)
	}
	e.clock.advance(time.Second)
	e.m.SampleDiskSpace()
	if err := a.CheckWritable(); !errors.Is(err, ErrLogDirFailed) {
		t.Fatalf("after EIO on fdatasync: %v", err)
	}
	if _, ok := e.lastEvent(DiskSpaceDirRecovered); ok {
		t.Fatal("recovered from EIO")
	}
	e.checkAcked(e.m)
}

// TestENOSPCWaitersAcrossRecovery: appenders that wrote before the failed
// fdatasync and wait for durability are never acknowledged; after the
// recovery nothing they wrote is in the log, and their offsets go to new
// appends.
func TestENOSPCWaitersAcrossRecovery(t *testing.T) {
	e := newSpaceEnv(t, 4<<20, FreeSpaceFloor{MinFreeBytes: 64 << 10, MinFreePercent: 100}, testOptions(nil))
	a := e.log("a")
	_, err := e.produce(a, 700)
	mustNotErr(t, err)
	e.ffs.Inject(vfs.Fault{Op: vfs.OpSyncData, Err: errnoENOSPC, Count: 1})
	var waits []func() error
	for i := 0; i < 4; i++ {
		_, wait, err := a.AppendAsync(makeBatch(t, batch.CompressionNone, 100+i, 1, 100, 0), 0)
		mustNotErr(t, err)
		waits = append(waits, wait)
	}
	for i, wait := range waits {
		if err := wait(); err == nil {
			t.Fatalf("waiter %d acknowledged after its fdatasync failed", i)
		}
	}
	e.clock.advance(time.Second)
	e.m.SampleDiskSpace()
	if e.m.Failed() != nil {
		t.Fatalf("not recovered: %v", e.m.Failed())
	}
	if a.LogEndOffset() != e.lastAcked[a.TopicPartition()]+1 {
		t.Fatalf("log end offset %d after recovery, acknowledged up to %d", a.LogEndOffset(), e.lastAcked[a.TopicPartition()])
	}
	_, err = e.produce(a, 700)
	mustNotErr(t, err)
	e.checkAcked(e.m)
}

// TestCleanerENOSPCAborts: a cleaner pass that runs out of space, on a
// write or on the sync of its .cleaned files, aborts cleanly: its
// temporary files are gone, the log is untouched and the directory
// healthy; the next pass with space succeeds.
func TestCleanerENOSPCAborts(t *testing.T) {
	cleaned := func(n string) bool { return strings.HasSuffix(n, cleanedSuffix) }
	for _, fault := range []vfs.Fault{
		{Op: vfs.OpWrite, Path: cleaned, Err: errnoENOSPC, ShortWrite: 10, Count: 1},
		{Op: vfs.OpSyncData | vfs.OpSync, Path: cleaned, Err: errnoENOSPC, Count: 1},
		{Op: vfs.OpCreate, Path: func(n string) bool { return strings.HasSuffix(n, ".timeindex"+cleanedSuffix) }, Err: errnoENOSPC, Count: 1},
	} {
		t.Run(fault.Op.String(), func(t *testing.T) {
			clock := &testClock{ms: 1_700_000_000_000}
			opts := compactOptions(clock)
			e := newSpaceEnv(t, 0, FreeSpaceFloor{}, opts)
			l := e.log("c")
			rng := rand.New(rand.NewSource(1))
			model := newCompactModel()
			for i := 0; i < 80; i++ {
				model.appendKeyed(t, l, rng, 10, clock.ms)
			}
			before, _ := logRecords(t, l)
			e.ffs.Inject(fault)
			res, err := l.Clean(context.Background(), CleanConfig{UpperBound: l.LogEndOffset(), DedupeBufferBytes: 1 << 20})
			if err != nil || !res.Aborted {
				t.Fatalf("pass under ENOSPC: %+v %v, want aborted", res, err)
			}
			if e.ffs.Fired() == 0 {
				t.Fatal("the fault never fired")
			}
			names, _ := e.mem.List(l.Dir())
			for _, n := range names {
				if strings.Contains(n, cleanedSuffix) || strings.Contains(n, swapSuffix) {
					t.Fatalf("the aborted pass left %s", n)
				}
			}
			if e.m.Failed() != nil {
				t.Fatalf("directory failed: %v", e.m.Failed())
			}
			after, _ := logRecords(t, l)
			if len(after) != len(before) {
				t.Fatalf("the aborted pass changed the log: %d records, %d before", len(after), len(before))
			}
			res, err = l.Clean(context.Background(), CleanConfig{UpperBound: l.LogEndOffset(), DedupeBufferBytes: 1 << 20})
			if err != nil || res.Aborted || res.SegmentsCleaned == 0 {
				t.Fatalf("pass with space: %+v %v", res, err)
			}
			model.pass(res.FirstDirtyOffset, res.EndOffset, clock.ms, opts.DeleteRetentionMs)
			checkAgainstModel(t, l, model)
		})
	}
}

// TestCheckpointENOSPCKeepsTheDir: a checkpoint that runs out of space
// leaves the old one whole and the directory healthy.
func TestCheckpointENOSPCKeepsTheDir(t *testing.T) {
	e := newSpaceEnv(t, 0, FreeSpaceFloor{}, testOptions(nil))
	_, err := e.produce(e.log("a"), 700)
	mustNotErr(t, err)
	e.ffs.Inject(vfs.Fault{Op: vfs.OpWrite, Path: func(n string) bool { return strings.HasSuffix(n, ".tmp") }, Err: errnoENOSPC, Count: 1})
	if err := e.m.Checkpoint(); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("checkpoint: %v", err)
	}
	if e.m.Failed() != nil {
		t.Fatalf("directory failed: %v", e.m.Failed())
	}
	mustNotErr(t, e.m.Checkpoint())
}
