package wal

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"sync"
	"syscall"

	"github.com/wren-broker/wren/internal/vfs"
)

// scanChunkBytes is how much Scan reads per locked file read.
const scanChunkBytes = 64 << 10

// Log is an append-only log of checksummed records, addressed by index,
// in a directory of segment files. It is safe for concurrent use.
type Log struct {
	fs     vfs.FS
	dir    string
	opts   Options
	lock   io.Closer
	commit *GroupCommitter
	report RecoveryReport

	// syncMu is held by the group commit's sync for the length of its
	// fdatasync, and by every operation that closes segment files, so that
	// a sync never runs on a closed file. Lock order: syncMu, then mu.
	syncMu sync.Mutex

	// mu guards everything below. Appends hold it for writing while they
	// pwrite, so writes land in index order; readers hold it for reading
	// across their pread so that no file closes under them. Nobody holds
	// it while waiting on the group committer.
	mu sync.RWMutex
	// Invariant: len(segments) >= 1, ordered, and
	// segments[i+1].firstIndex == segments[i].lastIndex()+1.
	segments []*segment
	closed   bool
	// buf is the append encoding buffer, reused under mu.
	buf []byte
}

// RecoveryReport says what Open repaired.
type RecoveryReport struct {
	// TruncatedBytes were cut from the tail of the last file: a torn write,
	// or damage recovery cannot tell from one.
	TruncatedBytes int64
	// RemovedFiles are segment files Open deleted: a newest file whose
	// header never became durable, or files an interrupted TruncatePrefix
	// left behind.
	RemovedFiles []string
}

// Open opens the log in dir, creating the directory and an empty log if
// needed, and recovers it: see the package documentation. The log holds an
// exclusive lock on dir until Close.
func Open(fsys vfs.FS, dir string, opts Options) (*Log, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := ensureDir(fsys, dir); err != nil {
		return nil, err
	}
	lock, err := fsys.Lock(filepath.Join(dir, lockFileName))
	if err != nil {
		return nil, fmt.Errorf("wal: lock %s: %w", dir, err)
	}
	l := &Log{fs: fsys, dir: dir, opts: opts, lock: lock}
	if err := l.recover(); err != nil {
		for _, s := range l.segments {
			s.file.Close()
		}
		lock.Close()
		return nil, err
	}
	l.commit = NewGroupCommitter(int64(l.lastIndexLocked()), l.syncActive)
	return l, nil
}

// ensureDir creates dir if missing and makes its entry durable in each
// parent it had to create, so a crash cannot lose the directory of a log
// that has acknowledged appends.
func ensureDir(fsys vfs.FS, dir string) error {
	if _, err := fsys.Stat(dir); err == nil {
		return nil
	}
	var created []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := fsys.Stat(d); err == nil {
			break
		}
		created = append(created, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("wal: create directory %s: %w", dir, err)
	}
	for _, d := range created {
		if err := fsys.SyncDir(filepath.Dir(d)); err != nil {
			return fmt.Errorf("wal: sync directory %s: %w", filepath.Dir(d), err)
		}
	}
	return nil
}

// Recovery says what Open repaired.
func (l *Log) Recovery() RecoveryReport { return l.report }

// FirstIndex is the index of the first record. An empty log has
// FirstIndex() == LastIndex()+1.
func (l *Log) FirstIndex() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.segments[0].firstIndex
}

// LastIndex is the index of the last record written, durable or not, or
// FirstIndex()-1 when the log is empty.
func (l *Log) LastIndex() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.lastIndexLocked()
}

func (l *Log) lastIndexLocked() uint64 { return l.active().lastIndex() }

func (l *Log) active() *segment { return l.segments[len(l.segments)-1] }

// Err is the log's sticky error: nil while it is healthy, the first write
// or fdatasync error once it has failed, ErrClosed after Close. A failed
// log acknowledges nothing more; reopen it to recover.
func (l *Log) Err() error { return l.commit.Err() }

// DurableIndex is the highest index an fdatasync is known to cover.
func (l *Log) DurableIndex() uint64 {
	d := l.commit.Durable()
	if d < 0 {
		return 0
	}
	return uint64(d)
}

// Syncs counts the fdatasyncs the group committer ran, for metrics.
func (l *Log) Syncs() int64 { return l.commit.Syncs() }

// Append writes payloads as consecutive records and returns the index of
// the last one once an fdatasync covering them has completed. Concurrent
// appenders share fdatasyncs. An error means the records are not
// acknowledged: they may or may not be present after recovery. If a
// TruncateSuffix removes them first, the error is ErrTruncated. With no
// payloads, Append waits for what was written before it, like Sync.
func (l *Log) Append(payloads ...[]byte) (uint64, error) {
	if err := l.checkSizes(payloads); err != nil {
		return 0, err
	}
	l.mu.Lock()
	last, err := l.appendLocked(payloads)
	var w *Waiter
	if err == nil {
		// Registered before mu is released, so a truncation that removes
		// these records cannot slip in unseen.
		w = l.commit.Register(int64(last))
	}
	l.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if err := w.Wait(); err != nil {
		return 0, err
	}
	return last, nil
}

// AppendNoSync writes payloads as consecutive records and returns the index
// of the last one without waiting for durability: the records are readable
// at once and durable after the next Sync (or any Append that returns after
// it). With no payloads it returns LastIndex.
func (l *Log) AppendNoSync(payloads ...[]byte) (uint64, error) {
	if err := l.checkSizes(payloads); err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.appendLocked(payloads)
}

func (l *Log) checkSizes(payloads [][]byte) error {
	for _, p := range payloads {
		if len(p) > l.opts.MaxRecordBytes {
			return fmt.Errorf("%w: %d bytes, limit %d", ErrRecordTooLarge, len(p), l.opts.MaxRecordBytes)
		}
	}
	return nil
}

// appendLocked writes payloads at the tail, rolling segments as needed.
// Callers hold mu for writing.
func (l *Log) appendLocked(payloads [][]byte) (uint64, error) {
	if l.closed {
		return 0, ErrClosed
	}
	if err := l.commit.Err(); err != nil {
		return 0, err
	}
	if l.lastIndexLocked()+uint64(len(payloads)) >= maxIndex {
		return 0, fmt.Errorf("%w: appending %d records after %d", ErrIndexOutOfRange, len(payloads), l.lastIndexLocked())
	}
	seg := l.active()
	buf := l.buf[:0]
	var offsets []uint32
	for _, p := range payloads {
		n := int64(recordHeaderBytes + len(p))
		nonEmpty := len(seg.offsets)+len(offsets) > 0
		if nonEmpty && seg.size+int64(len(buf))+n > l.opts.SegmentBytes {
			if err := l.write(seg, buf, offsets, false); err != nil {
				return 0, err
			}
			buf, offsets = buf[:0], offsets[:0]
			next, err := l.roll()
			if err != nil {
				return 0, err
			}
			seg = next
		}
		offsets = append(offsets, uint32(seg.size+int64(len(buf))))
		buf = appendRecord(buf, p)
	}
	// Only a write that is the whole append can be undone: an earlier
	// part may sit in a segment that a roll already synced.
	if err := l.write(seg, buf, offsets, len(offsets) == len(payloads)); err != nil {
		return 0, err
	}
	// Keep a modest buffer for the next append, not the largest batch ever.
	if cap(buf) <= 1<<20 {
		l.buf = buf[:0]
	} else {
		l.buf = nil
	}
	return l.lastIndexLocked(), nil
}

// write pwrites encoded records at the tail of seg and indexes them. A
// write error fails the log: the tail now holds bytes of unknown extent,
// so nothing after them could be trusted either. Except a full disk
// (ENOSPC, EDQUOT) on a write that is a whole append (undoable): the file
// is cut back to where the write began and only that append fails, since
// nothing of it was synced or acknowledged.
func (l *Log) write(seg *segment, buf []byte, offsets []uint32, undoable bool) error {
	if len(buf) == 0 {
		return nil
	}
	if _, err := seg.file.WriteAt(buf, seg.size); err != nil {
		err = fmt.Errorf("wal: write %s at %d: %w", seg.path, seg.size, err)
		if undoable && (errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)) {
			if terr := seg.file.Truncate(seg.size); terr == nil {
				return err
			}
		}
		l.commit.Fail(err)
		return err
	}
	seg.offsets = append(seg.offsets, offsets...)
	seg.size += int64(len(buf))
	return nil
}

// roll syncs the active segment, so that only the newest file can ever have
// a torn tail, and starts a new one.
func (l *Log) roll() (*segment, error) {
	old := l.active()
	if err := old.file.SyncData(); err != nil {
		err = fmt.Errorf("wal: fdatasync %s: %w", old.path, err)
		l.commit.Fail(err)
		return nil, err
	}
	l.commit.Advance(int64(old.lastIndex()))
	seg, err := createSegment(l.fs, l.dir, old.lastIndex()+1, 0)
	if err != nil {
		l.commit.Fail(err)
		return nil, err
	}
	l.segments = append(l.segments, seg)
	return seg, nil
}

// syncActive is the group committer's SyncFunc: fdatasync the active
// segment, covering the last index read before it starts. Older segments
// were synced when they rolled.
func (l *Log) syncActive() (int64, error) {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return 0, ErrClosed
	}
	seg := l.active()
	covered, f, path := seg.lastIndex(), seg.file, seg.path
	l.mu.RUnlock()
	if err := f.SyncData(); err != nil {
		return 0, fmt.Errorf("wal: fdatasync %s: %w", path, err)
	}
	return int64(covered), nil
}

// Sync returns once every record written before the call is durable.
func (l *Log) Sync() error {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return ErrClosed
	}
	w := l.commit.Register(int64(l.lastIndexLocked()))
	l.mu.RUnlock()
	if err := w.Wait(); !errors.Is(err, ErrTruncated) {
		return err
	}
	// A truncation removed the newest records first, and made the ones
	// it kept durable: everything written before the call that still
	// exists is durable.
	return nil
}

// Read returns a copy of the payload of record index, checked against its
// CRC.
func (l *Log) Read(index uint64) ([]byte, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, ErrClosed
	}
	seg, err := l.locate(index)
	if err != nil {
		return nil, err
	}
	start, end := seg.span(index)
	b := make([]byte, end-start)
	if _, err := seg.file.ReadAt(b, start); err != nil {
		return nil, fmt.Errorf("wal: read %s at %d: %w", seg.path, start, err)
	}
	payload, err := decodeRecord(b)
	if err != nil {
		return nil, fmt.Errorf("%s at %d (index %d): %w", seg.path, start, index, err)
	}
	return payload, nil
}

// locate finds the segment holding index.
func (l *Log) locate(index uint64) (*segment, error) {
	first, last := l.segments[0].firstIndex, l.lastIndexLocked()
	if index < first || index > last {
		return nil, fmt.Errorf("%w: %d not in [%d, %d]", ErrIndexOutOfRange, index, first, last)
	}
	i := sort.Search(len(l.segments), func(i int) bool { return l.segments[i].firstIndex > index }) - 1
	return l.segments[i], nil
}

// Scan calls fn for each record from index from on, in order, until it
// reaches the end of the log (records appended during the scan are visited
// too) or fn returns an error, which Scan returns. payload is valid only
// until fn returns. Scan takes no lock while fn runs, so fn may append; a
// concurrent truncation may end the scan early or make it fail with
// ErrIndexOutOfRange. from == LastIndex()+1 visits nothing.
func (l *Log) Scan(from uint64, fn func(index uint64, payload []byte) error) error {
	var chunk []byte
	var spans []int64
	next := from
	for {
		var err error
		chunk, spans, err = l.readChunk(next, chunk[:0], spans[:0])
		if err != nil {
			return err
		}
		if len(spans) == 0 {
			return nil
		}
		for i := 0; i+1 < len(spans); i++ {
			payload, err := decodeRecord(chunk[spans[i]:spans[i+1]])
			if err != nil {
				return fmt.Errorf("index %d: %w", next, err)
			}
			if err := fn(next, payload); err != nil {
				return err
			}
			next++
		}
	}
}

// readChunk reads whole records from index on, from one segment, about
// scanChunkBytes of them (at least one), into chunk. spans holds the start
// of each record in chunk and then the end of the last one; no spans means
// index is just past the end.
func (l *Log) readChunk(index uint64, chunk []byte, spans []int64) ([]byte, []int64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return chunk, spans, ErrClosed
	}
	if index == l.lastIndexLocked()+1 && index >= l.segments[0].firstIndex {
		return chunk, spans, nil
	}
	seg, err := l.locate(index)
	if err != nil {
		return chunk, spans, err
	}
	start, end := seg.span(index)
	for i := index + 1; i <= seg.lastIndex(); i++ {
		_, e := seg.span(i)
		if e-start > scanChunkBytes {
			break
		}
		end = e
	}
	n := int(end - start)
	if cap(chunk) < n {
		chunk = make([]byte, n)
	}
	chunk = chunk[:n]
	if _, err := seg.file.ReadAt(chunk, start); err != nil {
		return chunk, spans, fmt.Errorf("wal: read %s at %d: %w", seg.path, start, err)
	}
	for i := index; i <= seg.lastIndex(); i++ {
		s, e := seg.span(i)
		if e > end {
			break
		}
		spans = append(spans, s-start)
	}
	spans = append(spans, end-start)
	return chunk, spans, nil
}

// Close syncs the active segment if the log is healthy and closes every
// file. Appenders still waiting get ErrClosed. Close is idempotent.
func (l *Log) Close() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	var firstErr error
	if l.commit.Err() == nil {
		if err := l.active().file.SyncData(); err != nil {
			firstErr = fmt.Errorf("wal: fdatasync %s: %w", l.active().path, err)
		}
	}
	l.closed = true
	l.commit.Fail(ErrClosed)
	for _, s := range l.segments {
		if err := s.file.Close(); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("wal: close %s: %w", s.path, err)
		}
	}
	if err := l.lock.Close(); err != nil && firstErr == nil {
		firstErr = fmt.Errorf("wal: unlock %s: %w", l.dir, err)
	}
	return firstErr
}
