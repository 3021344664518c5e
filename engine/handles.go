package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dgraph-io/ristretto/v2"

	"github.com/wren-broker/wren/internal/vfs"
)

// ErrTooManyOpenFiles: a segment or index file could not be opened because
// the process ran out of descriptors (EMFILE, ENFILE) or the open-file
// budget (log.open.files.max) is taken by handles in use. It fails that one
// operation and is retriable: it never fails the log directory, and the
// next operation succeeds once descriptors are free (KAFKA_STORAGE_ERROR on
// the wire, which clients retry).
var ErrTooManyOpenFiles = errors.New("engine: too many open files")

// isTooManyOpenFiles reports whether err is EMFILE or ENFILE from the
// kernel, or the budget's own refusal.
func isTooManyOpenFiles(err error) bool {
	return errors.Is(err, ErrTooManyOpenFiles) || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// errHandleDropped: an operation on a file whose segment was deleted or
// closed, after its last descriptor closed. Readers pin what they read
// before a deletion can happen, so this is a late operation on a segment
// that is gone (the cleaner and the scrubber abort or skip on it).
var errHandleDropped = errors.New("engine: segment file closed")

// HandleCache keeps segment and index files open within an open-file
// budget (log.open.files.max).
//
// Each file is a handle that knows how to open it again. An operation pins
// the handle (a reference count, atomic on the fast path) for its
// duration; the cache holds one more reference on each handle it keeps.
// When ristretto evicts or rejects a handle, only the cache's reference
// goes; the descriptor closes when the last pin is released, so a read or
// a sendfile never loses its descriptor under it. A closed handle opens
// again on the next operation (a reopen). The active segment of a log with
// writes no fdatasync has covered yet is pinned by its log (segment.dirty),
// outside the cache: its descriptors never close before that sync.
//
// ristretto decides which idle handles stay open (TinyLFU admission,
// sampled eviction by cost, one per descriptor), but its Set is
// asynchronous and may drop, and it evicts only when something new is set,
// so it cannot keep a budget strictly. The budget is therefore kept here:
// open counts every descriptor a handle holds, cached or pinned, and an
// open that would pass the budget first waits for the cache's pending sets
// (Wait) and closes idle cached handles itself; if every descriptor is
// pinned by operations in flight, the open fails with ErrTooManyOpenFiles.
// The cache's MaxCost sits an eighth below the budget, so in steady state
// ristretto's own evictions keep the room that pins need.
type HandleCache struct {
	budget int64
	cache  *ristretto.Cache[uint64, *cacheEntry]
	logger *slog.Logger

	nextKey atomic.Uint64
	// open counts descriptors held by handles. Invariant: open <= budget.
	open atomic.Int64
	// Totals since start, for metrics.
	opens, reopens, evictions, shortages atomic.Int64

	logMu       sync.Mutex
	lastLog     time.Time
	suppressed  int64
	logInterval time.Duration
}

// cacheEntry is one stay of a handle in the cache: a handle that is evicted
// and opened again gets a new entry and key, so a late eviction of the old
// entry cannot drop the new reference.
type cacheEntry struct {
	key uint64
	h   *handle
}

// HandleStats are a HandleCache's figures.
type HandleStats struct {
	// Open is the descriptors held now; Budget the most allowed.
	Open, Budget int64
	// Opens counts every open, Reopens those of a file opened before
	// (after an eviction); Evictions the cache references dropped to keep
	// the budget; Shortages the opens refused for want of a descriptor.
	Opens, Reopens, Evictions, Shortages int64
}

// openFilesMin is the smallest budget: a log in use pins up to three files
// (and an append that rolls, six), so less cannot serve one partition.
const openFilesMin = 8

// NewHandleCache returns a cache that keeps at most budget segment and
// index files open. logger receives the rate-limited line that reports
// refused opens; nil discards it.
func NewHandleCache(budget int, logger *slog.Logger) (*HandleCache, error) {
	if budget < openFilesMin {
		return nil, fmt.Errorf("engine: log.open.files.max %d below the minimum %d", budget, openFilesMin)
	}
	c := &HandleCache{budget: int64(budget), logger: logger, logInterval: 10 * time.Second}
	maxCost := int64(budget - budget/8)
	cache, err := ristretto.NewCache(&ristretto.Config[uint64, *cacheEntry]{
		// Ten counters per item, as ristretto advises, but capped: with
		// a budget near a million (a high hard limit) the admission
		// sketch would take tens of MiB, and what ristretto tracks
		// beyond the files really in use buys nothing.
		NumCounters:        min(max(10*maxCost, 1000), 1<<16),
		MaxCost:            maxCost,
		BufferItems:        64,
		IgnoreInternalCost: true,
		OnEvict: func(it *ristretto.Item[*cacheEntry]) {
			if it.Value != nil && it.Value.h.uncache(it.Value) {
				c.evictions.Add(1)
			}
		},
		OnReject: func(it *ristretto.Item[*cacheEntry]) {
			if it.Value != nil {
				it.Value.h.uncache(it.Value)
			}
		},
		OnExit: func(e *cacheEntry) {
			if e != nil {
				e.h.uncache(e)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("engine: handle cache: %w", err)
	}
	c.cache = cache
	return c, nil
}

// Stats returns the cache's figures.
func (c *HandleCache) Stats() HandleStats {
	if c == nil {
		return HandleStats{}
	}
	return HandleStats{Open: c.open.Load(), Budget: c.budget, Opens: c.opens.Load(), Reopens: c.reopens.Load(),
		Evictions: c.evictions.Load(), Shortages: c.shortages.Load()}
}

// closeIdle closes every file that only the cache keeps open.
func (c *HandleCache) closeIdle() {
	if c != nil {
		c.makeRoom(c.budget, true)
	}
}

// Close drops every cached reference (pinned files close at their last
// release) and stops the cache's goroutines.
func (c *HandleCache) Close() {
	if c != nil {
		c.cache.Close()
	}
}

// reserve takes one descriptor of the budget, making room by closing idle
// cached handles when it is full.
func (c *HandleCache) reserve() bool {
	for tries := 0; ; {
		n := c.open.Load()
		if n < c.budget {
			if c.open.CompareAndSwap(n, n+1) {
				return true
			}
			continue
		}
		if tries == 2 {
			return false
		}
		tries++
		c.makeRoom(1+c.budget/64, false)
	}
}

// makeRoom closes up to want idle handles: first by letting the cache
// apply its pending sets (which evicts what is over its cost), then, if
// the budget is still full or force is set (the kernel refused an open
// within the budget), by dropping cached handles that no operation pins.
func (c *HandleCache) makeRoom(want int64, force bool) {
	c.cache.Wait()
	if !force && c.open.Load() < c.budget {
		return
	}
	var victims []*cacheEntry
	c.cache.IterValues(func(e *cacheEntry) bool {
		if e.h.idle(e) {
			victims = append(victims, e)
		}
		return int64(len(victims)) >= want
	})
	for _, e := range victims {
		if e.h.uncache(e) {
			c.evictions.Add(1)
		}
		c.cache.Del(e.key)
	}
}

// openFile opens name for a handle within the budget. EMFILE or ENFILE
// from the kernel (descriptors taken outside the budget: sockets, or a
// budget above the process limit) makes room once and tries again.
func (c *HandleCache) openFile(name string, open func(string) (vfs.File, error)) (vfs.File, error) {
	if c == nil {
		f, err := open(name)
		if err != nil && isTooManyOpenFiles(err) {
			return nil, fmt.Errorf("%w: opening %s: %w", ErrTooManyOpenFiles, name, err)
		}
		return f, err
	}
	if !c.reserve() {
		c.shortage(name, fmt.Sprintf("the open-file budget (log.open.files.max %d) is taken by files in use", c.budget))
		return nil, fmt.Errorf("%w: opening %s: all %d descriptors of log.open.files.max are in use", ErrTooManyOpenFiles, name, c.budget)
	}
	f, err := open(name)
	if err != nil && isTooManyOpenFiles(err) {
		c.makeRoom(1+c.budget/64, true)
		f, err = open(name)
	}
	if err != nil {
		c.open.Add(-1)
		if isTooManyOpenFiles(err) {
			c.shortage(name, err.Error())
			return nil, fmt.Errorf("%w: opening %s: %w", ErrTooManyOpenFiles, name, err)
		}
		return nil, err
	}
	c.opens.Add(1)
	return f, nil
}

// shortage counts a refused open and logs it, at most once per
// logInterval with the number of refusals it did not log.
func (c *HandleCache) shortage(name, reason string) {
	c.shortages.Add(1)
	if c.logger == nil {
		return
	}
	c.logMu.Lock()
	now := time.Now()
	if !c.lastLog.IsZero() && now.Sub(c.lastLog) < c.logInterval {
		c.suppressed++
		c.logMu.Unlock()
		return
	}
	suppressed := c.suppressed
	c.lastLog, c.suppressed = now, 0
	c.logMu.Unlock()
	c.logger.Warn("out of file descriptors: an operation on one partition failed (retriable); the broker serves the rest",
		"file", name, "reason", reason, "open", c.open.Load(), "budget", c.budget,
		"suppressed_since_last", suppressed, "hint", "raise the process's open-file limit (LimitNOFILE) or lower partition count; see log.open.files.max")
}

// fileDir is where a log's segment files are, and the budget they open
// under: shared by every handle of the log's segments, so a handle holds
// one pointer where it held the three (three handles a segment add up
// over thousands of idle partitions).
type fileDir struct {
	c   *HandleCache // nil: no budget; the files stay open until dropped
	fs  vfs.FS
	dir string
}

// handle is one segment or index file, open or not.
type handle struct {
	// at, baseOffset and suffix (handleSuffixes[suffix]) name the file
	// (segmentFileName), which is built only to open it (fs.OpenReadWrite,
	// again after an eviction) and for messages: the names themselves,
	// three a segment, would cost an idle partition more than its handles
	// do.
	at         *fileDir
	baseOffset int64

	file atomic.Pointer[openFile]
	// entry is the cache's current reference, nil when the cache holds
	// none. Swapped with CompareAndSwap so one reference goes once.
	entry atomic.Pointer[cacheEntry]
	// pins counts operations in flight, the dirty pin of a log, and the
	// cache's reference. Invariant: file != nil while pins > 0. Raised from
	// zero only under mu; lowered to zero by release, which then closes
	// under mu if it is still zero. 32 bits, beside mu and the flags: the
	// handle fits 48 bytes, and three per segment add up.
	pins atomic.Int32

	mu      sync.Mutex
	dropped bool // the segment is gone: never open again
	opened  bool // opened at least once: the next open is a reopen
	suffix  uint8
}

type openFile struct{ f vfs.File }

// handleSuffixes are the suffixes a handle's file name can have: a handle
// holds the index of its own, one byte where a string took sixteen.
var handleSuffixes = [...]string{logSuffix, indexSuffix, timeIndexSuffix,
	logSuffix + cleanedSuffix, indexSuffix + cleanedSuffix, timeIndexSuffix + cleanedSuffix}

func newHandle(at *fileDir, baseOffset int64, suffix string) *handle {
	for i, s := range handleSuffixes {
		if s == suffix {
			return &handle{at: at, baseOffset: baseOffset, suffix: uint8(i)}
		}
	}
	panic(fmt.Sprintf("engine: segment file suffix %q is not one of handleSuffixes", suffix))
}

// name is the file's path.
func (h *handle) name() string {
	return segmentFileName(h.at.dir, h.baseOffset, handleSuffixes[h.suffix])
}

// adoptHandle makes a just-created file the handle's descriptor (Create
// truncates, so a created file cannot come from a reopen), inside the
// budget. create opens the file the first time, given its name.
func adoptHandle(at *fileDir, baseOffset int64, suffix string, create func(string) (vfs.File, error)) (*handle, error) {
	h, err := adoptHandlePinned(at, baseOffset, suffix, create)
	if err != nil {
		return nil, err
	}
	h.release()
	return h, nil
}

// adoptHandlePinned is adoptHandle that returns the handle pinned, so its
// descriptor stays the one open came back with until release.
func adoptHandlePinned(at *fileDir, baseOffset int64, suffix string, create func(string) (vfs.File, error)) (*handle, error) {
	h := newHandle(at, baseOffset, suffix)
	f, err := at.c.openFile(h.name(), create)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.opened = true
	h.file.Store(&openFile{f})
	h.pins.Add(1)
	h.cacheLocked()
	h.mu.Unlock()
	return h, nil
}

// acquire pins the handle, opening its file if it is closed.
func (h *handle) acquire() (vfs.File, error) {
	for {
		p := h.pins.Load()
		if p <= 0 {
			break
		}
		if h.pins.CompareAndSwap(p, p+1) {
			return h.file.Load().f, nil
		}
	}
	return h.acquireSlow()
}

func (h *handle) acquireSlow() (vfs.File, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if of := h.file.Load(); of != nil {
		// Open, and either pinned or about to be closed by a release
		// waiting for mu, which will see the pin and leave it open.
		h.pins.Add(1)
		return of.f, nil
	}
	if h.dropped {
		return nil, fmt.Errorf("%w: %s", errHandleDropped, h.name())
	}
	f, err := h.at.c.openFile(h.name(), h.at.fs.OpenReadWrite)
	if err != nil {
		return nil, err
	}
	if h.opened && h.at.c != nil {
		h.at.c.reopens.Add(1)
	}
	h.opened = true
	h.file.Store(&openFile{f})
	h.pins.Add(1)
	h.cacheLocked()
	return f, nil
}

// cacheLocked gives the cache its reference on a file just opened.
func (h *handle) cacheLocked() {
	e := &cacheEntry{h: h}
	h.pins.Add(1)
	h.entry.Store(e)
	if h.at.c == nil {
		return
	}
	e.key = h.at.c.nextKey.Add(1)
	if !h.at.c.cache.Set(e.key, e, 1) {
		// Dropped by a busy cache: the file closes at the last release.
		h.uncache(e)
	}
}

// release unpins the handle; the last release after the cache let go of
// it closes the file.
func (h *handle) release() {
	n := h.pins.Add(-1)
	if n > 0 {
		return
	}
	if n < 0 {
		panic(fmt.Sprintf("engine: handle %s released %d times too often", h.name(), -n))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pins.Load() != 0 {
		return
	}
	if of := h.file.Load(); of != nil {
		h.file.Store(nil)
		of.f.Close()
		if h.at.c != nil {
			h.at.c.open.Add(-1)
		}
	}
}

// uncache drops the cache reference e, if it is still the current one.
func (h *handle) uncache(e *cacheEntry) bool {
	if !h.entry.CompareAndSwap(e, nil) {
		return false
	}
	h.release()
	return true
}

// idle reports whether only the cache reference e keeps the file open.
func (h *handle) idle(e *cacheEntry) bool {
	return h.entry.Load() == e && h.pins.Load() == 1
}

// drop ends the handle: it is never opened again, the cache lets go of
// it, and the file closes at the last release (now, if nothing pins it).
func (h *handle) drop() {
	h.mu.Lock()
	h.dropped = true
	h.mu.Unlock()
	if e := h.entry.Load(); e != nil {
		if h.at.c != nil {
			h.at.c.cache.Del(e.key)
		}
		h.uncache(e)
	}
}

// isOpen reports whether the handle holds a descriptor now.
func (h *handle) isOpen() bool { return h.file.Load() != nil }

// The vfs.File methods pin the handle for the one call, so a cold file
// opens on demand. Callers that need the descriptor across calls (a
// FileSlice for sendfile, an append and its sync) pin it with acquire.

func (h *handle) ReadAt(p []byte, off int64) (int, error) {
	f, err := h.acquire()
	if err != nil {
		return 0, err
	}
	defer h.release()
	return f.ReadAt(p, off)
}

func (h *handle) WriteAt(p []byte, off int64) (int, error) {
	f, err := h.acquire()
	if err != nil {
		return 0, err
	}
	defer h.release()
	return f.WriteAt(p, off)
}

func (h *handle) SyncData() error {
	f, err := h.acquire()
	if err != nil {
		return err
	}
	defer h.release()
	return f.SyncData()
}

func (h *handle) Sync() error {
	f, err := h.acquire()
	if err != nil {
		return err
	}
	defer h.release()
	return f.Sync()
}

func (h *handle) Truncate(size int64) error {
	f, err := h.acquire()
	if err != nil {
		return err
	}
	defer h.release()
	return f.Truncate(size)
}

func (h *handle) Preallocate(off, length int64) error {
	f, err := h.acquire()
	if err != nil {
		return err
	}
	defer h.release()
	return f.Preallocate(off, length)
}

func (h *handle) Size() (int64, error) {
	f, err := h.acquire()
	if err != nil {
		return 0, err
	}
	defer h.release()
	return f.Size()
}

// Close is drop: the handle's owner is done with it.
func (h *handle) Close() error {
	h.drop()
	return nil
}

func (h *handle) Name() string { return h.name() }

var _ vfs.File = (*handle)(nil)

// openFilesReserve is what the derived budget leaves for descriptors that
// are not segment files: the metadata log, peer and listener sockets, the
// HTTP server, checkpoints and producer snapshots being written, the log
// cleaner's output segment.
const openFilesReserve = 64

// DefaultOpenFilesMax derives log.open.files.max from the process's
// open-file limit (RLIMIT_NOFILE, whose soft limit Go raises to the hard
// one at start on Linux): the limit, less headroom for client connections
// (maxConnections, at most a quarter of the limit), less openFilesReserve;
// at least openFilesMin. An unlimited or unreadable limit gives 0: no budget.
func DefaultOpenFilesMax(maxConnections int) int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == ^uint64(0) {
		return 0
	}
	return openFilesBudget(int64(min(rl.Cur, 1<<31-1)), int64(maxConnections))
}

func openFilesBudget(nofile, maxConnections int64) int {
	headroom := min(max(maxConnections, 0), nofile/4)
	return int(max(nofile-headroom-openFilesReserve, openFilesMin))
}
