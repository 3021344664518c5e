package wal

import "fmt"

// TruncatePrefix drops records before index, for a snapshot or compaction
// that made them redundant. Only whole files go: every segment whose
// records all lie below index is deleted, oldest first, each removal made
// durable before the next, so a crash leaves a contiguous log. Records
// below index that share a file with index stay readable, and FirstIndex
// reports the first record actually kept.
//
// index beyond LastIndex()+1 (a snapshot installed from elsewhere, ahead of
// this log) empties the log: it starts a new segment whose first index is
// index, marked so that recovery finishes the job if a crash interrupts the
// removal of the old files. Afterwards FirstIndex() == index. Appenders
// still waiting on the dropped records are released: appended, then
// truncated, is a history the caller can observe.
//
// An error other than ErrIndexOutOfRange fails the log.
func (l *Log) TruncatePrefix(index uint64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	if index >= maxIndex {
		return fmt.Errorf("%w: %d over the index limit", ErrIndexOutOfRange, index)
	}
	if index <= l.segments[0].firstIndex {
		return nil
	}
	if index > l.lastIndexLocked()+1 {
		return l.restartAt(index)
	}
	for len(l.segments) > 1 && l.segments[1].firstIndex <= index {
		s := l.segments[0]
		if err := removeSegment(l.fs, s); err != nil {
			l.commit.Fail(err)
			return err
		}
		l.segments = l.segments[1:]
		if err := l.fs.SyncDir(l.dir); err != nil {
			err = fmt.Errorf("wal: sync directory %s: %w", l.dir, err)
			l.commit.Fail(err)
			return err
		}
	}
	return nil
}

// restartAt replaces the whole log by an empty one whose next record is
// index, for TruncatePrefix beyond the end.
func (l *Log) restartAt(index uint64) error {
	seg, err := createSegment(l.fs, l.dir, index, flagLogStart)
	if err != nil {
		l.commit.Fail(err)
		return err
	}
	// From here the new file is durable and marks every older file as
	// garbage, so the order of the removals no longer matters.
	old := l.segments
	l.segments = []*segment{seg}
	for _, s := range old {
		if err := removeSegment(l.fs, s); err != nil {
			l.commit.Fail(err)
			return err
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		err = fmt.Errorf("wal: sync directory %s: %w", l.dir, err)
		l.commit.Fail(err)
		return err
	}
	l.commit.Advance(int64(index - 1))
	return nil
}

// TruncateSuffix drops records from index on, for a follower whose log
// diverged from its leader's. Newer files go first, newest first, each
// removal durable before the next; then the file holding index is cut and
// synced. A crash part way leaves the log cut somewhere at or after index,
// never with a hole. index must lie in [FirstIndex(), LastIndex()+1].
// Appenders still waiting for records at or after index get ErrTruncated.
//
// An error other than ErrIndexOutOfRange fails the log.
func (l *Log) TruncateSuffix(index uint64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	first, last := l.segments[0].firstIndex, l.lastIndexLocked()
	if index < first || index > last+1 {
		return fmt.Errorf("%w: truncate at %d, log holds [%d, %d]", ErrIndexOutOfRange, index, first, last)
	}
	if index == last+1 {
		return nil
	}
	// k is the segment that keeps the records just before index; the first
	// segment is kept even when it keeps none, to hold the log's start.
	k := 0
	for i, s := range l.segments {
		if s.firstIndex < index {
			k = i
		}
	}
	for len(l.segments) > k+1 {
		s := l.active()
		if err := removeSegment(l.fs, s); err != nil {
			l.commit.Fail(err)
			return err
		}
		l.segments = l.segments[:len(l.segments)-1]
		if err := l.fs.SyncDir(l.dir); err != nil {
			err = fmt.Errorf("wal: sync directory %s: %w", l.dir, err)
			l.commit.Fail(err)
			return err
		}
	}
	seg := l.active()
	end := seg.size
	if index <= seg.lastIndex() {
		end, _ = seg.span(index)
	}
	if err := seg.file.Truncate(end); err != nil {
		err = fmt.Errorf("wal: truncate %s to %d: %w", seg.path, end, err)
		l.commit.Fail(err)
		return err
	}
	// This also makes every record kept in the file durable, which Reset
	// below relies on.
	if err := seg.file.SyncData(); err != nil {
		err = fmt.Errorf("wal: fdatasync %s: %w", seg.path, err)
		l.commit.Fail(err)
		return err
	}
	seg.offsets = seg.offsets[:index-seg.firstIndex]
	seg.size = end
	l.commit.Reset(int64(index - 1))
	return nil
}

// writable refuses changes to a closed or failed log. Callers hold mu.
func (l *Log) writable() error {
	if l.closed {
		return ErrClosed
	}
	return l.commit.Err()
}
