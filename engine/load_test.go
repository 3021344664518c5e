package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// loadTestConfig is a data directory's config for the load tests.
func loadTestConfig() ManagerConfig {
	opts := testOptions(nil)
	opts.SegmentBytes = 16 << 10
	return ManagerConfig{NodeID: 1, ClusterID: "bG9hZC10ZXN0cwAAAAAAAA", Defaults: opts}
}

// inPartitionDir accepts the paths inside partition directories, not the
// data directory's own files (checkpoints, marker, lock).
func inPartitionDir(name string) bool {
	rest, ok := strings.CutPrefix(name, "/data/")
	return ok && strings.Contains(rest, "/")
}

// forbidPartitionWrites makes every write-like operation inside a
// partition directory fail: a clean restart must not need one.
func forbidPartitionWrites(ffs *vfs.FaultFS) (remove func()) {
	return ffs.Inject(vfs.Fault{
		Op: vfs.OpCreate | vfs.OpWrite | vfs.OpSync | vfs.OpSyncData | vfs.OpSyncDir |
			vfs.OpRename | vfs.OpTruncate | vfs.OpRemove | vfs.OpPreallocate | vfs.OpMkdir,
		Path: inPartitionDir,
	})
}

// TestCleanRestartOfHalfCreatedPartition: a partition whose creation ran
// out of file descriptors between its .log and its .index (what 10,000
// partitions under a 20,000-file limit left) is an empty partition, and a
// clean restart opens it as one: no scan, no index rebuild, no write or
// sync in its directory. Before, every such partition was "recovered"
// (two index syncs and a log sync each), thousands of them at every start.
func TestCleanRestartOfHalfCreatedPartition(t *testing.T) {
	mem := vfs.NewMem()
	ffs := vfs.NewFaultFS(mem)
	cfg := loadTestConfig()
	m, err := OpenManager(ffs, "/data", cfg)
	mustNotErr(t, err)
	m.UncleanShutdownHandled()
	for p := int32(0); p < 3; p++ {
		_, err := m.GetOrCreateLog(TopicPartition{"t", p})
		mustNotErr(t, err)
	}
	remove := ffs.Inject(vfs.Fault{Op: vfs.OpCreate | vfs.OpOpen, Err: syscall.EMFILE,
		Path: func(name string) bool {
			return strings.HasPrefix(name, "/data/t-3/") && strings.HasSuffix(name, indexSuffix)
		}})
	if _, err := m.GetOrCreateLog(TopicPartition{"t", 3}); !errors.Is(err, syscall.EMFILE) || !errors.Is(err, ErrLogLoading) {
		t.Fatalf("creating t-3 out of descriptors: %v, want EMFILE and ErrLogLoading", err)
	}
	if _, err := mem.Stat("/data/t-3/" + fmt.Sprintf("%020d%s", 0, logSuffix)); err != nil {
		t.Fatalf("the cut-short creation left no .log, so the test tests nothing: %v", err)
	}
	// Still short when the broker stops: the retries never completed it.
	mustNotErr(t, m.Close())
	remove()

	remove = forbidPartitionWrites(ffs)
	m, err = OpenManager(ffs, "/data", cfg)
	if err != nil {
		t.Fatalf("clean restart wrote in a partition directory: %v", err)
	}
	remove()
	defer m.Close()
	if rep := m.LoadReport(); len(rep.Recovered) != 0 || rep.Partitions != 4 {
		t.Fatalf("clean restart: %+v, want 4 partitions and none recovered", rep)
	}
	l := m.Log(TopicPartition{"t", 3})
	if l == nil || l.LogEndOffset() != 0 {
		t.Fatalf("t-3 after restart: %v", l)
	}
	// The partition works as any empty one does.
	_, err = l.Append(makeBatch(t, batch.CompressionNone, 0, 2, 10, 1000), 0)
	mustNotErr(t, err)
	if got := readAll(t, l); len(got) == 0 {
		t.Fatal("nothing read back from t-3")
	}
}

// TestCleanRestartDoesNoWorkPerIdlePartition: after a clean stop, a
// directory of idle partitions (never written, or written and stopped
// at rest) reopens without a write, sync, truncation or rename in any
// partition directory, and recovers none.
func TestCleanRestartDoesNoWorkPerIdlePartition(t *testing.T) {
	mem := vfs.NewMem()
	ffs := vfs.NewFaultFS(mem)
	cfg := loadTestConfig()
	m, err := OpenManager(ffs, "/data", cfg)
	mustNotErr(t, err)
	m.UncleanShutdownHandled()
	const n = 40
	for p := int32(0); p < n; p++ {
		l, err := m.GetOrCreateLog(TopicPartition{fmt.Sprintf("topic%d", p%4), p})
		mustNotErr(t, err)
		if p%10 == 0 {
			for i := 0; i < 20; i++ {
				_, err := l.Append(makeBatch(t, batch.CompressionNone, i, 3, 100, int64(1000+i)), 0)
				mustNotErr(t, err)
			}
		}
	}
	mustNotErr(t, m.Close())
	for range 2 {
		remove := forbidPartitionWrites(ffs)
		m, err = OpenManager(ffs, "/data", cfg)
		if err != nil {
			t.Fatalf("clean restart wrote in a partition directory: %v", err)
		}
		remove()
		rep := m.LoadReport()
		if rep.Partitions != n || len(rep.Recovered) != 0 || rep.Deferred != 0 {
			t.Fatalf("clean restart: %+v, want %d partitions, none recovered or deferred", rep, n)
		}
		mustNotErr(t, m.Close())
	}
}

// TestKillRecoversOnlyPartitionsWrittenSinceCheckpoint: after a crash,
// recovery scans the partitions written since the recovery-point
// checkpoint was last written (and those created with data since), and
// no other.
func TestKillRecoversOnlyPartitionsWrittenSinceCheckpoint(t *testing.T) {
	mem := vfs.NewMem()
	cfg := loadTestConfig()
	m, err := OpenManager(mem, "/data", cfg)
	mustNotErr(t, err)
	m.UncleanShutdownHandled()
	appendTo := func(l *Log, k int) {
		t.Helper()
		for i := 0; i < k; i++ {
			_, err := l.Append(makeBatch(t, batch.CompressionNone, i, 3, 100, int64(1000+i)), 0)
			mustNotErr(t, err)
		}
	}
	logs := map[TopicPartition]*Log{}
	for p := int32(0); p < 6; p++ {
		tp := TopicPartition{"t", p}
		l, err := m.GetOrCreateLog(tp)
		mustNotErr(t, err)
		logs[tp] = l
		if p%2 == 0 {
			appendTo(l, 150) // several segments
		}
	}
	mustNotErr(t, m.Checkpoint()) // the periodic checkpoint
	appendTo(logs[TopicPartition{"t", 2}], 3)
	written, err := m.GetOrCreateLog(TopicPartition{"t", 6}) // created after the checkpoint, with data
	mustNotErr(t, err)
	appendTo(written, 2)
	_, err = m.GetOrCreateLog(TopicPartition{"t", 7}) // created after it, empty
	mustNotErr(t, err)
	if segs := len(logs[TopicPartition{"t", 0}].segments); segs < 3 {
		t.Fatalf("t-0 has %d segments; the test wants several", segs)
	}

	// The process dies: no Close. FlushAck synced every append, so a
	// crash losing the unsynced bytes is what SIGKILL leaves.
	mem = mem.Crash(vfs.CrashOptions{})
	m, err = OpenManager(mem, "/data", cfg)
	mustNotErr(t, err)
	defer m.Close()
	rep := m.LoadReport()
	want := []TopicPartition{{"t", 2}, {"t", 6}}
	if fmt.Sprint(rep.Recovered) != fmt.Sprint(want) || rep.Partitions != 8 {
		t.Fatalf("after a crash recovered %v of %d partitions, want %v of 8", rep.Recovered, rep.Partitions, want)
	}
	if got := m.Log(TopicPartition{"t", 2}).LogEndOffset(); got != 153*3 {
		t.Fatalf("t-2 ends at %d after recovery, want %d", got, 153*3)
	}
}

// TestLoadOutOfFilesIsDeferred: a partition whose load runs out of file
// descriptors does not fail the directory: everything else loads, the
// partition answers ErrLogLoading (and is never opened afresh, which
// would lose its recovery point and log start offset), the checkpoints
// keep its entries, and a background retry loads it once descriptors are
// back and says so.
func TestLoadOutOfFilesIsDeferred(t *testing.T) {
	mem := vfs.NewMem()
	cfg := loadTestConfig()
	m, err := OpenManager(mem, "/data", cfg)
	mustNotErr(t, err)
	m.UncleanShutdownHandled()
	for p := int32(0); p < 5; p++ {
		l, err := m.GetOrCreateLog(TopicPartition{"t", p})
		mustNotErr(t, err)
		for i := 0; i < 5; i++ {
			_, err := l.Append(makeBatch(t, batch.CompressionNone, i, 3, 100, int64(1000+i)), 0)
			mustNotErr(t, err)
		}
	}
	if _, err := m.DeleteRecords(TopicPartition{"t", 3}, 4); err != nil {
		t.Fatal(err)
	}
	mustNotErr(t, m.Close())

	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE} {
		ffs := vfs.NewFaultFS(mem)
		// Two: the load tries once more at once after closing idle
		// files, and that try runs short too.
		ffs.Inject(vfs.Fault{Op: vfs.OpOpen | vfs.OpCreate, Err: errno, Count: 2,
			Path: func(name string) bool { return strings.HasPrefix(name, "/data/t-3/") }})
		loaded := make(chan TopicPartition, 5)
		cfg := cfg
		cfg.OnLogsLoaded = func(tps []TopicPartition) {
			for _, tp := range tps {
				loaded <- tp
			}
		}
		m, err := OpenManager(ffs, "/data", cfg)
		if err != nil {
			t.Fatalf("%v at load failed the directory: %v", errno, err)
		}
		tp := TopicPartition{"t", 3}
		// Loads after the first that ran short are not tried: t-4 may
		// be deferred with t-3.
		if rep := m.LoadReport(); rep.Deferred < 1 || rep.Partitions+rep.Deferred != 5 {
			t.Fatalf("%v: load report %+v, want 5 partitions, t-3 deferred", errno, rep)
		}
		m.retryMu.Lock() // no retry pass adopts t-3 during the checks
		if !slices.Contains(m.Pending(), tp) {
			m.retryMu.Unlock()
			t.Fatalf("%v: pending %v, want t-3 among them", errno, m.Pending())
		}
		if _, err := m.GetOrCreateLog(tp); !errors.Is(err, ErrLogLoading) {
			t.Fatalf("%v: GetOrCreateLog of a deferred partition: %v, want ErrLogLoading", errno, err)
		}
		mustNotErr(t, m.Checkpoint())
		m.retryMu.Unlock()
		lsos, err := ReadOffsetCheckpoint(mem, "/data/"+LogStartOffsetCheckpointFile)
		mustNotErr(t, err)
		if lsos[tp] != 4 {
			t.Fatalf("%v: the checkpoint while t-3 is deferred says log start %d, want 4", errno, lsos[tp])
		}
		for got := false; !got; {
			select {
			case l := <-loaded:
				got = l == tp
			case <-time.After(10 * time.Second):
				t.Fatalf("%v: t-3 not loaded within 10 s of descriptors coming back; pending %v", errno, m.Pending())
			}
		}
		l := m.Log(tp)
		if l == nil || l.LogStartOffset() != 4 || l.LogEndOffset() != 15 || len(m.Pending()) != 0 {
			t.Fatalf("%v: t-3 after the retry: %v, pending %v", errno, l, m.Pending())
		}
		mustNotErr(t, m.Close())
	}
}

// TestParallelLoadIsDeterministic: loading with one worker or many gives
// the same logs, and any error but running out of descriptors still
// fails the open, naming the first bad partition in directory order.
func TestParallelLoadIsDeterministic(t *testing.T) {
	mem := vfs.NewMem()
	cfg := loadTestConfig()
	m, err := OpenManager(mem, "/data", cfg)
	mustNotErr(t, err)
	m.UncleanShutdownHandled()
	for p := int32(0); p < 30; p++ {
		l, err := m.GetOrCreateLog(TopicPartition{"t", p})
		mustNotErr(t, err)
		for i := 0; i < int(p%5); i++ {
			_, err := l.Append(makeBatch(t, batch.CompressionNone, i, 2, 50, int64(1000+i)), 0)
			mustNotErr(t, err)
		}
	}
	mustNotErr(t, m.Close())
	mem = mem.Crash(vfs.CrashOptions{})

	describe := func(m *Manager) string {
		var b strings.Builder
		for _, l := range m.Logs() {
			fmt.Fprintf(&b, "%s:%d-%d ", l.tp, l.LogStartOffset(), l.LogEndOffset())
		}
		return b.String()
	}
	var jobs []loadJob
	for p := int32(0); p < 30; p++ {
		tp := TopicPartition{"t", p}
		jobs = append(jobs, loadJob{tp: tp, path: "/data/" + tp.String(), oo: OpenOptions{}})
	}
	var want string
	for _, workers := range []int{1, 3, 8} {
		m := &Manager{fs: mem, dir: "/data", cfg: cfg, health: &dirHealth{}, logs: map[TopicPartition]*Log{}, deferred: map[TopicPartition]loadJob{}}
		for i, r := range m.loadLogs(jobs, workers) {
			mustNotErr(t, r.err)
			if r.log.tp != jobs[i].tp {
				t.Fatalf("%d workers: result %d is %v, want %v", workers, i, r.log.tp, jobs[i].tp)
			}
			m.logs[r.log.tp] = r.log
		}
		got := describe(m)
		for _, l := range m.logs {
			l.Close()
		}
		if want == "" {
			want = got
		} else if got != want {
			t.Fatalf("%d workers loaded %s, one loaded %s", workers, got, want)
		}
	}

	ffs := vfs.NewFaultFS(mem)
	ffs.Inject(vfs.Fault{Op: vfs.OpList, Path: func(name string) bool { return name == "/data/t-13" || name == "/data/t-27" }})
	if _, err := OpenManager(ffs, "/data", cfg); err == nil || !strings.Contains(err.Error(), "t-13") {
		t.Fatalf("open with I/O errors listing t-13 and t-27: %v, want the error of t-13", err)
	}
}

// TestDeleteDeferredPartition: a partition deleted while its load is
// deferred is gone for good: its directory is removed, the checkpoints
// forget it, and no retry brings it back.
func TestDeleteDeferredPartition(t *testing.T) {
	mem := vfs.NewMem()
	cfg := loadTestConfig()
	m, err := OpenManager(mem, "/data", cfg)
	mustNotErr(t, err)
	m.UncleanShutdownHandled()
	for p := int32(0); p < 3; p++ {
		l, err := m.GetOrCreateLog(TopicPartition{"t", p})
		mustNotErr(t, err)
		// A record, so that the stop writes a producer snapshot (an
		// empty log has none).
		_, err = l.Append(makeBatch(t, batch.CompressionNone, 0, 1, 100, 1000), 0)
		mustNotErr(t, err)
	}
	mustNotErr(t, m.Close())
	// Without the clean-stop summary the load opens t-1's files (its
	// producer snapshot), which run out of descriptors here.
	mustNotErr(t, mem.Remove("/data/"+CleanStopSummaryFile))

	ffs := vfs.NewFaultFS(mem)
	ffs.Inject(vfs.Fault{Op: vfs.OpOpen | vfs.OpCreate, Err: syscall.EMFILE,
		Path: func(name string) bool { return strings.HasPrefix(name, "/data/t-1/") }})
	m, err = OpenManager(ffs, "/data", cfg)
	mustNotErr(t, err)
	tp := TopicPartition{"t", 1}
	m.retryMu.Lock() // no retry pass runs during the checks
	if got := m.Pending(); !slices.Contains(got, tp) {
		t.Fatalf("pending %v, want t-1 among them", got)
	}
	m.retryMu.Unlock()
	mustNotErr(t, m.DeleteLog(tp))
	if _, err := mem.Stat("/data/t-1"); err == nil {
		t.Fatal("t-1's directory is still there after DeleteLog")
	}
	mustNotErr(t, m.Checkpoint())
	rps, err := ReadOffsetCheckpoint(mem, "/data/"+RecoveryPointCheckpointFile)
	mustNotErr(t, err)
	if _, ok := rps[tp]; ok || slices.Contains(m.Pending(), tp) {
		t.Fatalf("after DeleteLog: checkpoint %v, pending %v", rps, m.Pending())
	}
	mustNotErr(t, m.Close())
}

// TestCleanStopOfIdlePartitionRewritesNoSnapshot: stopping a partition
// that was loaded and never written finds its producer snapshot already
// on disk and writes no new one (a create, a write, two fsyncs and a
// rename per idle partition at every stop, before).
func TestCleanStopOfIdlePartitionRewritesNoSnapshot(t *testing.T) {
	mem := vfs.NewMem()
	ffs := vfs.NewFaultFS(mem)
	cfg := loadTestConfig()
	m, err := OpenManager(ffs, "/data", cfg)
	mustNotErr(t, err)
	m.UncleanShutdownHandled()
	for p := int32(0); p < 4; p++ {
		l, err := m.GetOrCreateLog(TopicPartition{"t", p})
		mustNotErr(t, err)
		if p == 0 {
			_, err := l.Append(makeBatch(t, batch.CompressionNone, 0, 3, 100, 1000), 0)
			mustNotErr(t, err)
		}
	}
	mustNotErr(t, m.Close())
	m, err = OpenManager(ffs, "/data", cfg)
	mustNotErr(t, err)
	remove := ffs.Inject(vfs.Fault{Op: vfs.OpCreate | vfs.OpWrite | vfs.OpRename | vfs.OpSyncDir | vfs.OpRemove, Path: inPartitionDir})
	if err := m.Close(); err != nil {
		t.Fatalf("a clean stop of idle partitions wrote in their directories: %v", err)
	}
	remove()
	m, err = OpenManager(ffs, "/data", cfg)
	mustNotErr(t, err)
	defer m.Close()
	if rep := m.LoadReport(); rep.Partitions != 4 || len(rep.Recovered) != 0 {
		t.Fatalf("after the stop: %+v", rep)
	}
}

// fdLimitFS counts the files open through it and fails opens beyond its
// limit with EMFILE, as a process under RLIMIT_NOFILE sees.
type fdLimitFS struct {
	vfs.FS
	mu          sync.Mutex
	open, limit int
	// metaOpens counts opens of meta.properties (the reserve's handles).
	metaOpens int
}

func (f *fdLimitFS) metaOpened() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.metaOpens
}

func (f *fdLimitFS) setLimit(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limit = n
}

func (f *fdLimitFS) free() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.limit - f.open
}

func (f *fdLimitFS) take(name string, open func(string) (vfs.File, error)) (vfs.File, error) {
	f.mu.Lock()
	if f.open >= f.limit {
		f.mu.Unlock()
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
	}
	f.open++
	if strings.HasSuffix(name, "/"+MetaPropertiesFile) {
		f.metaOpens++
	}
	f.mu.Unlock()
	file, err := open(name)
	if err != nil {
		f.mu.Lock()
		f.open--
		f.mu.Unlock()
		return nil, err
	}
	return &fdLimitFile{File: file, fs: f}, nil
}

func (f *fdLimitFS) Create(name string) (vfs.File, error) { return f.take(name, f.FS.Create) }
func (f *fdLimitFS) Open(name string) (vfs.File, error)   { return f.take(name, f.FS.Open) }
func (f *fdLimitFS) OpenReadWrite(name string) (vfs.File, error) {
	return f.take(name, f.FS.OpenReadWrite)
}

type fdLimitFile struct {
	vfs.File
	fs     *fdLimitFS
	closed atomic.Bool
}

func (f *fdLimitFile) Close() error {
	if f.closed.CompareAndSwap(false, true) {
		f.fs.mu.Lock()
		f.fs.open--
		f.fs.mu.Unlock()
	}
	return f.File.Close()
}

// TestLoadLeavesDescriptorsToTheBroker: a directory with more partitions
// than the descriptor limit allows loads what fits and leaves at least
// loadFDReserve descriptors free for the rest of the broker (the metadata
// log, listeners, connections), instead of taking the last one, which
// ended the broker at its next open. Retries keep that reserve too, and
// load the rest once descriptors are back.
func TestLoadLeavesDescriptorsToTheBroker(t *testing.T) {
	mem := vfs.NewMem()
	cfg := loadTestConfig()
	m, err := OpenManager(mem, "/data", cfg)
	mustNotErr(t, err)
	m.UncleanShutdownHandled()
	const n = 20
	for p := int32(0); p < n; p++ {
		l, err := m.GetOrCreateLog(TopicPartition{"t", p})
		mustNotErr(t, err)
		// A record each: a clean load opens no file of an idle
		// partition, but keeps the log of one with records open (its
		// tail was read).
		_, err = l.Append(makeBatch(t, batch.CompressionNone, 0, 1, 10, 1000), 0)
		mustNotErr(t, err)
	}
	mustNotErr(t, m.Close())

	lfs := &fdLimitFS{FS: mem, limit: loadFDReserve + 8}
	loaded := make(chan []TopicPartition, n)
	cfg.OnLogsLoaded = func(tps []TopicPartition) { loaded <- tps }
	m, err = OpenManager(lfs, "/data", cfg)
	if err != nil {
		t.Fatalf("open under a descriptor limit: %v", err)
	}
	defer m.Close()
	rep := m.LoadReport()
	if rep.Deferred == 0 || rep.Partitions+rep.Deferred != n {
		t.Fatalf("load report %+v: want some of %d partitions deferred", rep, n)
	}
	if free := lfs.free(); free < loadFDReserve {
		t.Fatalf("the load left %d descriptors free, want at least %d", free, loadFDReserve)
	}
	// A retry pass while still short keeps the reserve too: wait for one
	// to take it (it holds the reserve while it loads), then for it to end.
	opened := lfs.metaOpened()
	for deadline := time.Now().Add(10 * time.Second); lfs.metaOpened() < opened+loadFDReserve; {
		if time.Now().After(deadline) {
			t.Fatal("no retry pass took the reserve within 10 s")
		}
		runtime.Gosched()
	}
	m.retryMu.Lock()
	free := lfs.free()
	m.retryMu.Unlock()
	if free < loadFDReserve || len(m.Pending()) != rep.Deferred {
		t.Fatalf("after a retry pass while short: %d descriptors free (want at least %d), %d pending (want %d)", free, loadFDReserve, len(m.Pending()), rep.Deferred)
	}
	lfs.setLimit(1 << 20)
	got := len(m.Logs())
	for got < n {
		select {
		case tps := <-loaded:
			got += len(tps)
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d partitions loaded 10 s after descriptors came back; pending %v", len(m.Logs()), n, m.Pending())
		}
	}
	if len(m.Logs()) != n || len(m.Pending()) != 0 {
		t.Fatalf("%d logs, pending %v", len(m.Logs()), m.Pending())
	}
}

// TestCreateOutOfFilesIsDeferred: creating a partition that runs out of
// file descriptors fails that creation with a retriable error, and a
// background retry creates it once descriptors are back and says so.
func TestCreateOutOfFilesIsDeferred(t *testing.T) {
	mem := vfs.NewMem()
	ffs := vfs.NewFaultFS(mem)
	cfg := loadTestConfig()
	loaded := make(chan []TopicPartition, 4)
	cfg.OnLogsLoaded = func(tps []TopicPartition) { loaded <- tps }
	m, err := OpenManager(ffs, "/data", cfg)
	mustNotErr(t, err)
	defer m.Close()
	tp := TopicPartition{"t", 0}
	remove := ffs.Inject(vfs.Fault{Op: vfs.OpCreate | vfs.OpOpen, Err: syscall.ENFILE,
		Path: func(name string) bool {
			return strings.HasPrefix(name, "/data/t-0/") && strings.HasSuffix(name, timeIndexSuffix)
		}})
	if _, err := m.GetOrCreateLog(tp); !errors.Is(err, ErrLogLoading) || !errors.Is(err, syscall.ENFILE) {
		t.Fatalf("creating out of descriptors: %v, want ErrLogLoading and ENFILE", err)
	}
	if _, err := m.GetOrCreateLog(tp); !errors.Is(err, ErrLogLoading) {
		t.Fatalf("asking again while it is deferred: %v, want ErrLogLoading", err)
	}
	remove()
	select {
	case tps := <-loaded:
		if len(tps) != 1 || tps[0] != tp {
			t.Fatalf("loaded %v, want [t-0]", tps)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("t-0 not created within 10 s of descriptors coming back; pending %v", m.Pending())
	}
	l, err := m.GetOrCreateLog(tp)
	mustNotErr(t, err)
	_, err = l.Append(makeBatch(t, batch.CompressionNone, 0, 2, 10, 1000), 0)
	mustNotErr(t, err)
}

// TestLoadSkipsFilesNamedLikePartitions: the data directory's names are
// not looked up before the load (loadJob.unchecked), so a regular file
// named like a partition reaches the load, whose failure finds it is no
// directory: it is skipped, as it always was, and every partition beside
// it loads.
func TestLoadSkipsFilesNamedLikePartitions(t *testing.T) {
	const n = 5
	dir := t.TempDir()
	fsys := vfs.NewOS()
	makeIdlePartitions(t, fsys, dir, n)
	for _, name := range []string{"stray-0", "t0-99", "old-1.abc-delete"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("not a partition"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err := OpenManager(fsys, dir, benchManagerConfig(DefaultOptions()))
	if err != nil {
		t.Fatalf("open with stray files named like partitions: %v", err)
	}
	defer m.Close()
	if rep := m.LoadReport(); rep.Partitions != n || len(rep.Recovered) != 0 || rep.Deferred != 0 {
		t.Fatalf("load report %+v, want %d partitions, none recovered or deferred", rep, n)
	}
	if l := m.Log(TopicPartition{Topic: "t0", Partition: 99}); l != nil {
		t.Fatal("a regular file t0-99 was loaded as a partition")
	}
	for _, name := range []string{"stray-0", "t0-99", "old-1.abc-delete"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("stray file %s: %v (want it left alone)", name, err)
		}
	}
}

// TestLoadLaterLoadsFirstThenTheRest: under LoadLater the open loads no
// partition; every one answers ErrLogLoading (never a fresh empty log)
// until LoadPending loads those asked for first, before it returns, and
// the rest in the background, reported through OnLogsLoaded, with their
// records, after a crash as after a clean stop. A Close while some are
// still pending leaves their checkpoint entries as they were, and the
// next open loads them with their data.
func TestLoadLaterLoadsFirstThenTheRest(t *testing.T) {
	mem := vfs.NewMem()
	cfg := loadTestConfig()
	m, err := OpenManager(mem, "/data", cfg)
	mustNotErr(t, err)
	m.UncleanShutdownHandled()
	const n = 6
	for p := int32(0); p < n; p++ {
		l, err := m.GetOrCreateLog(TopicPartition{"t", p})
		mustNotErr(t, err)
		for i := 0; i <= int(p); i++ {
			_, err := l.Append(makeBatch(t, batch.CompressionNone, i, 3, 100, int64(1000+i)), 0)
			mustNotErr(t, err)
		}
	}
	mustNotErr(t, m.Close())
	wantEnd := func(p int32) int64 { return int64(p+1) * 3 }
	first := func(tp TopicPartition) bool { return tp.Partition < 2 }

	for _, crash := range []bool{false, true} {
		loaded := make(chan TopicPartition, n)
		cfg := cfg
		cfg.LoadLater = true
		cfg.OnLogsLoaded = func(tps []TopicPartition) {
			for _, tp := range tps {
				loaded <- tp
			}
		}
		m, err := OpenManager(mem, "/data", cfg)
		mustNotErr(t, err)
		if len(m.Logs()) != 0 || len(m.Pending()) != n {
			t.Fatalf("crash %v: after a LoadLater open %d logs, %d pending; want 0, %d", crash, len(m.Logs()), len(m.Pending()), n)
		}
		for p := int32(0); p < n; p++ {
			if _, err := m.GetOrCreateLog(TopicPartition{"t", p}); !errors.Is(err, ErrLogLoading) {
				t.Fatalf("crash %v: GetOrCreateLog of pending t-%d: %v, want ErrLogLoading", crash, p, err)
			}
		}
		mustNotErr(t, m.LoadPending(first))
		for p := int32(0); p < 2; p++ {
			l := m.Log(TopicPartition{"t", p})
			if l == nil || l.LogEndOffset() != wantEnd(p) {
				t.Fatalf("crash %v: t-%d after LoadPending: %v, want loaded, ending at %d", crash, p, l, wantEnd(p))
			}
		}
		if rep := m.LoadReport(); rep.Partitions != 2 || rep.Later != n-2 {
			t.Fatalf("crash %v: load report %+v, want 2 loaded, %d later", crash, rep, n-2)
		}
		got := map[TopicPartition]bool{}
		for len(got) < n-2 {
			select {
			case tp := <-loaded:
				got[tp] = true
			case <-time.After(10 * time.Second):
				t.Fatalf("crash %v: loaded in the background %v, pending %v after 10 s", crash, got, m.Pending())
			}
		}
		for p := int32(0); p < n; p++ {
			l, err := m.GetOrCreateLog(TopicPartition{"t", p})
			if err != nil || l.LogEndOffset() != wantEnd(p) {
				t.Fatalf("crash %v: t-%d once loaded: %v, %v; want ending at %d", crash, p, l, err, wantEnd(p))
			}
		}
		if crash {
			m.mu.Lock()
			m.closed = true
			m.mu.Unlock()
			m.stopDeferredLoads()
			m.lock.Close()
		} else {
			mustNotErr(t, m.Close())
		}
	}

	// A Close with partitions still pending (LoadPending never called),
	// then an open that loads everything: nothing lost.
	cfg.LoadLater = true
	m, err = OpenManager(mem, "/data", cfg)
	mustNotErr(t, err)
	m.UncleanShutdownHandled()
	mustNotErr(t, m.Close())
	cfg.LoadLater = false
	m, err = OpenManager(mem, "/data", cfg)
	mustNotErr(t, err)
	defer m.Close()
	for p := int32(0); p < n; p++ {
		if l := m.Log(TopicPartition{"t", p}); l == nil || l.LogEndOffset() != wantEnd(p) {
			t.Fatalf("t-%d after a close with loads pending: %v, want ending at %d", p, l, wantEnd(p))
		}
	}
}

// TestCleanStopOfEmptyPartitionWritesNoSnapshot: as Kafka, a stop writes
// no producer snapshot for an empty log (the first clean stop after
// creating 10,000 partitions wrote 10,000 files, each charged to a small
// memory cgroup); the next load, clean or not, finds the empty state.
func TestCleanStopOfEmptyPartitionWritesNoSnapshot(t *testing.T) {
	mem := vfs.NewMem()
	cfg := loadTestConfig()
	m, err := OpenManager(mem, "/data", cfg)
	mustNotErr(t, err)
	m.UncleanShutdownHandled()
	tp := TopicPartition{"t", 0}
	_, err = m.GetOrCreateLog(tp)
	mustNotErr(t, err)
	mustNotErr(t, m.Close())
	names, err := mem.List("/data/t-0")
	mustNotErr(t, err)
	for _, n := range names {
		if strings.HasSuffix(n, ".snapshot") {
			t.Fatalf("an empty partition's stop wrote %s", n)
		}
	}
	for _, summary := range []bool{true, false} {
		if !summary {
			mustNotErr(t, mem.Remove("/data/"+CleanStopSummaryFile))
		}
		m, err = OpenManager(mem, "/data", cfg)
		mustNotErr(t, err)
		l := m.Log(tp)
		if l == nil || l.LogEndOffset() != 0 || l.producers.Len() != 0 {
			t.Fatalf("summary %v: reloaded %v", summary, l)
		}
		mustNotErr(t, m.Close())
	}
}
