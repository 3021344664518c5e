package engine

import (
	"errors"
	"io"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
	"github.com/wren-broker/wren/wire"
)

// openSegmentFDs counts this process's descriptors open on segment and
// index files under dir, from /proc/self/fd: what the kernel says, not the
// cache's own count.
func openSegmentFDs(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range ents {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil || !strings.HasPrefix(target, dir+"/") {
			continue
		}
		target = strings.TrimSuffix(target, " (deleted)")
		switch filepath.Ext(target) {
		case logSuffix, indexSuffix, timeIndexSuffix:
			n++
		}
	}
	return n
}

// retryShortage runs op until it succeeds or fails with something other
// than ErrTooManyOpenFiles, with a deadline.
func retryShortage(t *testing.T, op func() error) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := op()
		if err == nil || !errors.Is(err, ErrTooManyOpenFiles) {
			return err
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(time.Millisecond) // back off a retriable refusal, as a client would
	}
}

// TestHandleCacheTinyBudget runs appends, reads, sendfiles and retention
// deletes concurrently on partitions whose files far exceed a budget of 8
// descriptors. Every read is checked batch by batch (CRC-32C), so a read
// through a descriptor closed and reused for another file fails; the
// kernel's own count of open segment files never passes the budget; after
// Close nothing stays open.
func TestHandleCacheTinyBudget(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	dir := t.TempDir()
	const budget, partitions = 8, 6
	opts := DefaultOptions()
	opts.SegmentBytes = 16 << 10
	opts.IndexIntervalBytes = 1024
	opts.RetentionMs = -1
	m, err := OpenManager(vfs.NewOS(), dir, ManagerConfig{ClusterID: "c", NodeID: 1, Defaults: opts, OpenFilesMax: budget})
	if err != nil {
		t.Fatal(err)
	}
	logs := make([]*Log, partitions)
	for i := range logs {
		if logs[i], err = m.GetOrCreateLog(TopicPartition{Topic: "t", Partition: int32(i)}); err != nil {
			t.Fatal(err)
		}
	}
	var stop atomic.Bool
	var maxSeen atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
		stop.Store(true)
	}
	// The kernel's count, sampled while everything runs.
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for !stop.Load() {
			if n := int64(openSegmentFDs(t, dir)); n > maxSeen.Load() {
				maxSeen.Store(n)
			}
		}
	}()
	for p := 0; p < partitions; p++ {
		l := logs[p]
		rng := rand.New(rand.NewSource(seed + int64(p)))
		// Appender.
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 150 && !stop.Load(); i++ {
				b := makeBatch(t, batch.CompressionNone, i, 1+rng.Intn(3), 200+rng.Intn(600), 1000)
				err := retryShortage(t, func() error {
					_, err := l.Append(append([]byte(nil), b...), 0)
					return err
				})
				if err != nil {
					report(err)
					return
				}
			}
		}()
		// Reader: copies and sendfiles, checking every batch.
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed + 1000 + int64(p)))
			client, server := loopbackPair(t)
			defer client.Close()
			defer server.Close()
			go io.Copy(io.Discard, client)
			for i := 0; i < 200 && !stop.Load(); i++ {
				lso, leo := l.LogStartOffset(), l.LogEndOffset()
				if leo == lso {
					continue
				}
				off := lso + rng.Int63n(leo-lso)
				var r *ReadResult
				err := retryShortage(t, func() (err error) {
					r, err = l.ReadWhole(off, 8<<10, leo)
					return err
				})
				if errors.Is(err, ErrOffsetOutOfRange) {
					continue // retention moved past it
				}
				if err != nil {
					report(err)
					return
				}
				if i%2 == 0 {
					_, err = wire.SendFile(server, r.Slice.File, r.Slice.Position, r.Slice.Size)
				} else {
					var b []byte
					if b, err = r.Bytes(); err == nil {
						err = checkBatches(b)
					}
				}
				r.Release()
				if err != nil {
					report(err)
					return
				}
			}
		}()
	}
	// The flush ticker's idle release, with no idle time: six partitions
	// written at once pin more than 8 files, so writers take turns.
	released := make(chan struct{})
	go func() {
		defer close(released)
		for !stop.Load() {
			if err := m.ReleaseIdleHandles(0); err != nil {
				report(err)
				return
			}
			time.Sleep(time.Millisecond) // a ticker's period, not a wait for a condition
		}
	}()
	// Retention: delete old segments while the rest runs.
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewSource(seed))
		for i := 0; i < 100 && !stop.Load(); i++ {
			l := logs[rng.Intn(partitions)]
			to := l.LogStartOffset() + (l.LogEndOffset()-l.LogStartOffset())/3
			if err := retryShortage(t, func() error { return l.AdvanceLogStartOffset(to) }); err != nil {
				report(err)
				return
			}
		}
	}()
	wg.Wait()
	stop.Store(true)
	<-released
	<-sampled
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := m.Failed(); err != nil {
		t.Fatalf("log dir failed: %v", err)
	}
	// A scan of /proc/self/fd is not atomic: a descriptor number closed
	// and reused for another segment file during one scan counts twice,
	// so the scan may exceed the budget by a little (without a budget it
	// sees every partition's three files and more).
	if n := maxSeen.Load(); n > budget+2 {
		t.Fatalf("the kernel saw %d segment files open at once, budget %d", n, budget)
	}
	st := m.HandleStats()
	t.Logf("max open seen %d, stats %+v", maxSeen.Load(), st)
	if st.Reopens == 0 {
		t.Fatalf("no file was ever reopened: the budget was not exercised (%+v)", st)
	}
	// Idle partitions hold no pinned descriptor: what is open is the
	// cache's, and the kernel agrees with the count.
	if err := m.ReleaseIdleHandles(0); err != nil {
		t.Fatal(err)
	}
	if got, want := int64(openSegmentFDs(t, dir)), m.HandleStats().Open; got != want {
		t.Fatalf("kernel sees %d segment files open, the cache counts %d", got, want)
	}
	for _, l := range logs {
		for _, s := range l.segments {
			if s.dirty {
				t.Fatalf("%s segment %d still pinned after ReleaseIdleHandles", l.tp, s.baseOffset)
			}
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if n := openSegmentFDs(t, dir); n != 0 {
		t.Fatalf("%d segment files still open after Close", n)
	}
}

// checkBatches validates every whole batch in b (a trailing partial one
// is allowed, as a fetch may end in one).
func checkBatches(b []byte) error {
	for len(b) >= batch.RecordBatchOverhead {
		h, err := batch.ParseHeader(b)
		if err != nil {
			return err
		}
		if int(h.Size()) > len(b) {
			return nil
		}
		if _, err := batch.ValidateSummary(b[:h.Size()], batch.Limits{MaxDecompressedBytes: 1 << 20, Origin: batch.AppendOriginReplication}); err != nil {
			return err
		}
		b = b[h.Size():]
	}
	return nil
}

// evictAll drops the cache's reference on every file of l, as evictions
// would, so the next operation must open them again.
func evictAll(m *Manager, l *Log) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.segments {
		for _, h := range s.handles() {
			if e := h.entry.Load(); e != nil {
				m.health.handles.cache.Del(e.key)
				h.uncache(e)
			}
		}
	}
}

// TestTooManyOpenFilesFailsOnePartition injects EMFILE into the opens of
// one partition's files: its append and read fail with the retriable
// ErrTooManyOpenFiles (naming the file, wrapping the errno), the log dir
// stays healthy, another partition keeps serving, and the first recovers
// by itself once opens succeed again.
func TestTooManyOpenFilesFailsOnePartition(t *testing.T) {
	ffs := vfs.NewFaultFS(vfs.NewMem())
	m, err := OpenManager(ffs, "/data", ManagerConfig{ClusterID: "c", NodeID: 1, Defaults: testOptions(nil), OpenFilesMax: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	a, err := m.GetOrCreateLog(TopicPartition{Topic: "a", Partition: 0})
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.GetOrCreateLog(TopicPartition{Topic: "b", Partition: 0})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []*Log{a, b} {
		if _, err := l.Append(makeBatch(t, batch.CompressionNone, 1, 2, 100, 1000), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.ReleaseIdleHandles(0); err != nil {
		t.Fatal(err)
	}
	evictAll(m, a)
	remove := ffs.Inject(vfs.Fault{Op: vfs.OpOpen | vfs.OpCreate, Path: func(n string) bool { return strings.Contains(n, "/a-0/") }, Err: syscall.EMFILE})

	_, err = a.Append(makeBatch(t, batch.CompressionNone, 2, 2, 100, 1000), 0)
	if !errors.Is(err, ErrTooManyOpenFiles) || !errors.Is(err, syscall.EMFILE) || !strings.Contains(err.Error(), "a-0") {
		t.Fatalf("append under EMFILE: %v, want ErrTooManyOpenFiles wrapping EMFILE and naming the file", err)
	}
	if _, err := a.ReadBatches(0, 1<<20, a.LogEndOffset()); !errors.Is(err, ErrTooManyOpenFiles) {
		t.Fatalf("read under EMFILE: %v, want ErrTooManyOpenFiles", err)
	}
	if err := m.Failed(); err != nil {
		t.Fatalf("EMFILE failed the log dir: %v", err)
	}
	// The other partition serves on.
	if _, err := b.Append(makeBatch(t, batch.CompressionNone, 2, 2, 100, 1000), 0); err != nil {
		t.Fatalf("other partition's append: %v", err)
	}
	if got, err := b.ReadBatches(0, 1<<20, b.LogEndOffset()); err != nil || checkBatches(got) != nil || len(got) == 0 {
		t.Fatalf("other partition's read: %d bytes, %v", len(got), err)
	}
	if a.LogEndOffset() != 2 {
		t.Fatalf("refused append moved the log end to %d", a.LogEndOffset())
	}
	if m.HandleStats().Shortages == 0 {
		t.Fatal("shortage not counted")
	}

	remove()
	if _, err := a.Append(makeBatch(t, batch.CompressionNone, 3, 2, 100, 1000), 0); err != nil {
		t.Fatalf("append after EMFILE stopped: %v", err)
	}
	got, err := a.ReadBatches(0, 1<<20, a.LogEndOffset())
	if err != nil || checkBatches(got) != nil {
		t.Fatalf("read after EMFILE stopped: %v", err)
	}
	if a.LogEndOffset() != 4 {
		t.Fatalf("log end %d after recovery, want 4", a.LogEndOffset())
	}
}

// TestOpenFilesBudget: the derived default leaves room for connections
// and the reserve, and never goes below the floor.
func TestOpenFilesBudget(t *testing.T) {
	for _, c := range []struct{ nofile, conns, want int64 }{
		{1024, 1024, 1024 - 256 - openFilesReserve},
		{1 << 20, 1024, 1<<20 - 1024 - openFilesReserve},
		{256, 1024, 256 - 64 - openFilesReserve},
		{64, 1024, openFilesMin},
	} {
		if got := openFilesBudget(c.nofile, c.conns); int64(got) != c.want {
			t.Errorf("openFilesBudget(%d, %d) = %d, want %d", c.nofile, c.conns, got, c.want)
		}
	}
}

// TestKernelEMFILEClosesIdleFiles: one EMFILE from the kernel within the
// budget (descriptors taken outside it) closes idle cached files and the
// open is tried again, so the operation succeeds.
func TestKernelEMFILEClosesIdleFiles(t *testing.T) {
	ffs := vfs.NewFaultFS(vfs.NewMem())
	m, err := OpenManager(ffs, "/data", ManagerConfig{ClusterID: "c", NodeID: 1, Defaults: testOptions(nil), OpenFilesMax: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var logs []*Log
	for i := 0; i < 4; i++ {
		l, err := m.GetOrCreateLog(TopicPartition{Topic: "t", Partition: int32(i)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(makeBatch(t, batch.CompressionNone, 1, 1, 100, 1000), 0); err != nil {
			t.Fatal(err)
		}
		logs = append(logs, l)
	}
	if err := m.ReleaseIdleHandles(0); err != nil {
		t.Fatal(err)
	}
	evictAll(m, logs[0])
	before := m.HandleStats()
	ffs.Inject(vfs.Fault{Op: vfs.OpOpen, Path: func(n string) bool { return strings.Contains(n, "/t-0/") }, Err: syscall.EMFILE, Count: 1})
	if _, err := logs[0].Append(makeBatch(t, batch.CompressionNone, 2, 1, 100, 1000), 0); err != nil {
		t.Fatalf("append after one EMFILE: %v", err)
	}
	after := m.HandleStats()
	if after.Evictions <= before.Evictions || after.Shortages != before.Shortages {
		t.Fatalf("EMFILE closed no idle file or counted a shortage: before %+v after %+v", before, after)
	}
}

// loopbackPair returns a connected TCP pair on a free loopback port.
func loopbackPair(t testing.TB) (client, server *net.TCPConn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		ch <- res{c, err}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return c.(*net.TCPConn), r.c.(*net.TCPConn)
	case <-time.After(10 * time.Second):
		t.Fatal("accept timed out")
	}
	return nil, nil
}
