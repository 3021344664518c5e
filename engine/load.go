package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ErrLogLoading: the partition's log is not loaded yet: its load or its
// creation ran out of file descriptors and is being retried in the
// background. Retriable: the partition is served once that succeeds
// (ManagerConfig.OnLogsLoaded).
var ErrLogLoading = errors.New("engine: partition log still loading")

// LoadReport says what opening the data directory did.
type LoadReport struct {
	// Partitions is the number of partition logs loaded.
	Partitions int
	// Recovered lists the partitions whose recovery scanned a segment or
	// changed something; after a clean stop it is empty.
	Recovered []TopicPartition
	// Deferred is the number of partitions whose load ran out of file
	// descriptors and is retried in the background (Manager.Pending,
	// ManagerConfig.OnLogsLoaded).
	Deferred int
	// FromSummary is the number of partitions whose leader epochs and
	// producer snapshot came from the clean-stop summary.
	FromSummary int
	// Later is the number of partitions left to the background loader
	// (ManagerConfig.LoadLater, Manager.LoadPending).
	Later int
	// Workers is how many partitions were loaded at once.
	Workers int
	// Duration is the time the partitions' load took.
	Duration time.Duration
}

// loaded counts tp, loaded with stats, into the report.
func (rep *LoadReport) loaded(tp TopicPartition, stats *RecoveryStats) {
	rep.Partitions++
	if stats.FromSummary {
		rep.FromSummary++
	}
	if stats.Changed() || stats.SegmentsScanned > 0 {
		rep.Recovered = append(rep.Recovered, tp)
	}
}

// loadWorkers bounds the partitions loaded at once: a load waits on the
// disk (reads, and an fdatasync after a scan) far more than it computes, so
// a few per core overlap those waits, and a bound keeps the descriptors
// and scan buffers in use at once small.
func loadWorkers() int { return min(8, 2*runtime.GOMAXPROCS(0)) }

// loadJob is one partition directory to load.
type loadJob struct {
	tp   TopicPartition
	path string
	oo   OpenOptions
	// unchecked: the name came from the directory's listing and was not
	// looked up: it may not be a directory. A load that fails looks it up
	// then, and a name that is not a directory (or is gone) is skipped as
	// it always was. A lookup per name before the load would read every
	// partition directory's inode one after another, on one goroutine,
	// before the parallel load starts: with a cold cache, the longest
	// step of a start with 10,000 partitions.
	unchecked bool
}

type loadResult struct {
	log   *Log
	stats *RecoveryStats
	err   error
	// notDir: the job's name is not a directory (or no longer exists):
	// not a partition, skipped.
	notDir bool
}

// isOutOfFiles reports whether err is the process (EMFILE) or the system
// (ENFILE) running out of file descriptors: a shortage that passes, not a
// fault of the partition.
func isOutOfFiles(err error) bool { return isTooManyOpenFiles(err) }

// errLoadNotTried is the result of a load not tried because an earlier
// one ran out of file descriptors; it counts as out of them.
var errLoadNotTried = fmt.Errorf("engine: load not tried after the process ran out of file descriptors: %w", syscall.EMFILE)

// loadLogs opens every job's log, up to workers at once. Results come
// back in job order, whatever order the loads finished in. After the
// first load that runs out of file descriptors the rest are not tried:
// each would fail the same way, and while they ran the rest of the broker
// would find no descriptor free.
func (m *Manager) loadLogs(jobs []loadJob, workers int) []loadResult {
	results := make([]loadResult, len(jobs))
	next := make(chan int)
	var short atomic.Bool
	var wg sync.WaitGroup
	for range min(workers, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if short.Load() {
					results[i] = loadResult{err: errLoadNotTried}
					continue
				}
				j := jobs[i]
				l, stats, err := Open(m.fs, j.path, j.tp, m.optionsFor(j.tp.Topic), j.oo)
				if isOutOfFiles(err) {
					// Descriptors the budget counted on may be held by idle
					// cached files (or the limit is below
					// log.open.files.max): close the idle ones and try once
					// more; recovery is idempotent.
					m.health.handles.closeIdle()
					l, stats, err = Open(m.fs, j.path, j.tp, m.optionsFor(j.tp.Topic), j.oo)
				}
				if isOutOfFiles(err) {
					short.Store(true)
				}
				if err != nil && j.unchecked && !isOutOfFiles(err) && !m.isDir(j.path) {
					results[i] = loadResult{notDir: true}
					continue
				}
				results[i] = loadResult{log: l, stats: stats, err: err}
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

// loadPartitions loads the partition logs found in the directory in
// parallel. A load that runs out of file descriptors is deferred and
// retried in the background (retryDeferred); any other error fails the
// open, as it always did: the first in directory order is returned.
func (m *Manager) loadPartitions(jobs []loadJob) error {
	started := time.Now()
	workers := loadWorkers()
	// A directory that cannot even spare the reserve loads all the same:
	// the partitions then meet EMFILE and are deferred.
	reserve, _ := m.takeFDReserve(loadFDReserve)
	results := m.loadLogs(jobs, workers)
	reserve.release()
	var firstErr error
	rep := LoadReport{Workers: workers}
	for i, r := range results {
		j := jobs[i]
		switch {
		case r.notDir:
		case r.err == nil:
			m.addLoaded(r.log, r.stats)
			rep.loaded(j.tp, r.stats)
		case isOutOfFiles(r.err):
			// A retry runs later, when the directory may be gone (a
			// deletion) or changed: it looks the directory up again.
			j.oo.dirListed = false
			m.deferred[j.tp] = j
			m.noteOutOfFiles("loading partitions", j.tp, r.err)
		case firstErr == nil:
			firstErr = fmt.Errorf("engine: recovering %s: %w", j.tp, r.err)
		}
	}
	rep.Deferred = len(m.deferred)
	rep.Duration = time.Since(started)
	m.loadReport = rep
	return firstErr
}

// LoadPending ends what ManagerConfig.LoadLater began: it loads the
// pending partitions for which first says true, in parallel as an open
// would, and returns once they are served (or deferred for lack of file
// descriptors), then writes the checkpoints if the loads changed them;
// the rest load in the background, in partition order, chunk by chunk,
// each chunk reported through OnLogsLoaded as it is done. A load of the
// first ones that fails for another reason fails LoadPending, as it
// fails an open; one of the rest is logged and retried with backoff, and
// that partition alone stays unserved. Call it once, before anything
// else uses the partitions; without LoadLater it does nothing.
func (m *Manager) LoadPending(first func(TopicPartition) bool) error {
	m.mu.Lock()
	if !m.holdLoads || m.closed {
		m.mu.Unlock()
		return nil
	}
	var jobs []loadJob
	for tp, j := range m.deferred {
		if first(tp) {
			jobs = append(jobs, j)
		}
	}
	rps, lsos, removed := m.openRps, m.openLsos, m.openRemoved
	m.openRps, m.openLsos = nil, nil
	later := len(m.deferred) - len(jobs)
	m.mu.Unlock()
	sort.Slice(jobs, func(a, b int) bool { return jobs[a].tp.Less(jobs[b].tp) })
	started := time.Now()
	workers := loadWorkers()
	reserve, _ := m.takeFDReserve(loadFDReserve)
	results := m.loadLogs(jobs, workers)
	reserve.release()
	rep := LoadReport{Workers: workers, Later: later}
	var firstErr error
	for i, r := range results {
		j := jobs[i]
		switch {
		case r.notDir:
			m.mu.Lock()
			m.undeferLocked(j.tp)
			m.mu.Unlock()
		case r.err == nil:
			if !m.adoptDeferred(j.tp, r.log, r.stats) {
				continue
			}
			rep.loaded(j.tp, r.stats)
		case isOutOfFiles(r.err):
			rep.Deferred++
			m.noteOutOfFiles("loading partitions", j.tp, r.err)
		case firstErr == nil:
			firstErr = fmt.Errorf("engine: recovering %s: %w", j.tp, r.err)
		}
	}
	rep.Duration = time.Since(started)
	m.mu.Lock()
	m.loadReport = rep
	m.holdLoads = false
	// A retry looks a directory up again: by then a deletion may have
	// renamed it.
	for tp, j := range m.deferred {
		j.oo.dirListed = false
		m.deferred[tp] = j
	}
	if firstErr == nil {
		m.startDeferredLoadsLocked(0)
	}
	m.mu.Unlock()
	if firstErr != nil {
		return firstErr
	}
	return m.checkpointAfterLoad(rps, lsos, removed)
}

// isDir says whether path is a directory; a failed lookup says no, as the
// listing of the data directory always took it.
func (m *Manager) isDir(path string) bool {
	st, err := m.fs.Stat(path)
	return err == nil && st.IsDir()
}

// addLoaded makes a loaded log the Manager's and tells the operator what
// its recovery did.
func (m *Manager) addLoaded(l *Log, stats *RecoveryStats) {
	m.logRecovery(l, stats)
	l.checkpointOnTruncate = true
	m.mu.Lock()
	m.logs[l.tp] = l
	m.mu.Unlock()
}

// LoadReport says what opening the directory did.
func (m *Manager) LoadReport() LoadReport {
	m.mu.Lock()
	defer m.mu.Unlock()
	rep := m.loadReport
	rep.Recovered = append([]TopicPartition(nil), rep.Recovered...)
	return rep
}

// Pending lists the partitions on disk whose load is still being retried
// (it ran out of file descriptors), sorted.
func (m *Manager) Pending() []TopicPartition {
	m.mu.Lock()
	out := make([]TopicPartition, 0, len(m.deferred))
	for tp := range m.deferred {
		out = append(out, tp)
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}

// PendingCount is len(Pending()) without the list.
func (m *Manager) PendingCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.deferred)
}

// loadFDReserve is how many file descriptors a load leaves to the rest of
// the broker when descriptors run short (the metadata log, listeners,
// connections): the load holds that many open while it runs and gives
// them back when it is done, so partitions that meet EMFILE are deferred
// instead of taking the last descriptors. A retry pass takes the reserve
// again first, and skips while it cannot. With the open-file cache the
// budget keeps loads away from the limit; this is the safety net.
const loadFDReserve = 128

// fdReserve is descriptors held open so that they can be given back.
type fdReserve []io.Closer

// takeFDReserve opens n handles on a file of the directory; it returns
// what it got and whether that was all of them.
func (m *Manager) takeFDReserve(n int) (fdReserve, bool) {
	r := make(fdReserve, 0, n)
	for range n {
		f, err := m.fs.Open(m.dir + "/" + MetaPropertiesFile)
		if err != nil {
			return r, false
		}
		r = append(r, f)
	}
	return r, true
}

func (r fdReserve) release() {
	for _, f := range r {
		f.Close()
	}
}

// Backoff of the deferred loads' retries, and how often at most their
// shortage is logged.
const (
	// loadRetryAfterOpen is the first retry of loads deferred when the
	// directory opened: after the rest of the broker started, which the
	// reserve taken by a retry pass would otherwise race for descriptors.
	loadRetryAfterOpen = time.Second
	loadRetryMin       = 50 * time.Millisecond
	loadRetryMax       = 5 * time.Second
	loadRetryLogEvery  = 30 * time.Second
	// loadChunk is how many deferred partitions a pass loads before it
	// reports them (OnLogsLoaded).
	loadChunk = 256
)

// startDeferredLoadsLocked retries the deferred loads in the background
// until each succeeds or the Manager closes; it starts the retrying
// goroutine unless it runs already. Called with mu held.
func (m *Manager) startDeferredLoadsLocked(first time.Duration) {
	if m.retryRunning || len(m.deferred) == 0 || m.closed || m.holdLoads {
		return
	}
	m.retryRunning = true
	m.retryWG.Add(1)
	go m.retryDeferred(first)
}

// noteOutOfFiles logs that partitions ran out of file descriptors, at
// most once per loadRetryLogEvery whatever the number of partitions.
func (m *Manager) noteOutOfFiles(what string, tp TopicPartition, err error) {
	lg := m.cfg.Logger
	if lg == nil {
		return
	}
	now := time.Now().UnixNano()
	last := m.lastOutOfFilesLog.Load()
	if now-last < int64(loadRetryLogEvery) || !m.lastOutOfFilesLog.CompareAndSwap(last, now) {
		return
	}
	lg.Warn("out of file descriptors "+what+"; the partition is not served until a background retry loads it (further ones are not logged for "+loadRetryLogEvery.String()+")",
		"partition", tp.String(), "err", err.Error())
}

func (m *Manager) retryDeferred(first time.Duration) {
	defer m.retryWG.Done()
	lg := m.cfg.Logger
	backoff := first
	var lastLog time.Time
	for {
		t := time.NewTimer(backoff)
		select {
		case <-m.retryStop:
			t.Stop()
			return
		case <-t.C:
		}
		m.retryMu.Lock()
		reserve, ok := m.takeFDReserve(loadFDReserve)
		if !ok && m.health.handles != nil {
			// The open-file cache may hold the descriptors the reserve
			// wants: at a small limit its budget and the reserve do not
			// fit side by side. Its idle files close and reopen on use.
			reserve.release()
			m.health.handles.closeIdle()
			reserve, ok = m.takeFDReserve(loadFDReserve)
		}
		if !ok {
			// Still short: loading now would take descriptors the rest of
			// the broker needs.
			reserve.release()
			m.retryMu.Unlock()
			backoff = min(2*backoff, loadRetryMax)
			if lg != nil && time.Since(lastLog) >= loadRetryLogEvery {
				lastLog = time.Now()
				lg.Warn("partitions still waiting for file descriptors to load; not served until then",
					"partitions", len(m.Pending()), "reserve_wanted", loadFDReserve, "reserve_got", len(reserve), "next_try_in", backoff.String())
			}
			continue
		}
		jobs := m.deferredJobs()
		var loaded []TopicPartition
		var lastErr error
		failed := 0
		// In chunks, each reported as it is done, so the first partitions
		// of a large creation are served while the rest are created.
		for first := 0; first < len(jobs); first += loadChunk {
			select {
			case <-m.retryStop:
				// Closing: the rest stay deferred; a stop must not wait
				// for thousands of creations.
				reserve.release()
				m.retryMu.Unlock()
				return
			default:
			}
			chunk := jobs[first:min(len(jobs), first+loadChunk)]
			results := m.loadLogs(chunk, loadWorkers())
			var now []TopicPartition
			for i, r := range results {
				if r.notDir {
					m.mu.Lock()
					m.undeferLocked(chunk[i].tp)
					m.mu.Unlock()
					continue
				}
				if r.err != nil {
					failed++
					lastErr = fmt.Errorf("%s: %w", chunk[i].tp, r.err)
					continue
				}
				if m.adoptDeferred(chunk[i].tp, r.log, r.stats) {
					now = append(now, chunk[i].tp)
				}
			}
			loaded = append(loaded, now...)
			if m.cfg.OnLogsLoaded != nil && len(now) > 0 {
				m.cfg.OnLogsLoaded(now)
			}
		}
		reserve.release()
		m.retryMu.Unlock()
		if failed == 0 {
			m.mu.Lock()
			done := len(m.deferred) == 0
			if done {
				m.retryRunning = false
			}
			m.mu.Unlock()
			if done {
				if lg != nil {
					lg.Info("deferred partitions loaded; every partition on disk is served", "partitions", len(loaded))
				}
				return
			}
			continue // deferred while this pass ran
		}
		if len(loaded) > 0 {
			backoff = loadRetryMin
		} else {
			backoff = min(2*backoff, loadRetryMax)
		}
		if lg != nil && time.Since(lastLog) >= loadRetryLogEvery {
			lastLog = time.Now()
			level, msg := slog.LevelWarn, "partitions still waiting for file descriptors to load; not served until then"
			if !isOutOfFiles(lastErr) {
				level, msg = slog.LevelError, "deferred partition load failed; retrying"
			}
			lg.Log(context.Background(), level, msg, "partitions", failed, "loaded_now", len(loaded), "last_error", lastErr.Error(), "next_try_in", backoff.String())
		}
	}
}

// undeferLocked takes tp off deferred, under mu. A map emptied is let go:
// a map keeps the room of the most entries it ever held, and creating
// 10,000 partitions through it (CreateLogsLater) would hold 1 MiB for as
// long as the Manager lives.
func (m *Manager) undeferLocked(tp TopicPartition) {
	delete(m.deferred, tp)
	if len(m.deferred) == 0 {
		m.deferred = map[TopicPartition]loadJob{}
	}
}

// adoptDeferred makes a log whose load was deferred the Manager's, unless
// the Manager closed or the partition was deleted meanwhile.
func (m *Manager) adoptDeferred(tp TopicPartition, l *Log, stats *RecoveryStats) bool {
	m.mu.Lock()
	_, still := m.deferred[tp]
	if !still || m.closed {
		m.mu.Unlock()
		l.Close()
		return false
	}
	m.undeferLocked(tp)
	l.checkpointOnTruncate = true
	m.logs[tp] = l
	m.mu.Unlock()
	m.logRecovery(l, stats)
	return true
}

// stopDeferredLoads stops the retries and waits for a pass in flight.
// Call it once, after m.closed is set (or when the open failed).
func (m *Manager) stopDeferredLoads() {
	close(m.retryStop)
	m.retryWG.Wait()
}

// deferredJobs is the deferred loads, in partition order.
func (m *Manager) deferredJobs() []loadJob {
	m.mu.Lock()
	defer m.mu.Unlock()
	jobs := make([]loadJob, 0, len(m.deferred))
	for _, j := range m.deferred {
		jobs = append(jobs, j)
	}
	sort.Slice(jobs, func(a, b int) bool { return jobs[a].tp.Less(jobs[b].tp) })
	return jobs
}
