package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/wren-broker/wren/internal/vfs"
)

// The transaction index: %020d.txnindex beside a segment, in Kafka's
// format (TransactionIndex, AbortedTxn), one 34-byte big-endian entry per
// ABORT marker written to the segment, in marker order:
//
//	version            int16 = 0
//	producer_id        int64
//	first_offset       int64  the transaction's first offset in the partition
//	last_offset        int64  the ABORT marker's offset
//	last_stable_offset int64  the LSO once the transaction completed
//
// As in Kafka the file exists only once a segment has an entry. An entry
// is written and fsynced (with the directory, when it creates the file) in
// the append of its marker, before the log end offset a sync could cover
// moves past the marker, so every entry of a marker below the recovery
// point is durable. Recovery and every other producer-state reload rebuild
// the entries of the offsets they replay (rebuildTxnIndexes); a truncation
// cuts the entries of markers at or above its offset; the file is removed
// with its segment.

const (
	txnIndexSuffix    = ".txnindex"
	abortedTxnSize    = 34
	abortedTxnVersion = 0
)

// abortedTxn is one transaction index entry (Kafka's AbortedTxn).
type abortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

// AbortedTxn is an aborted transaction as read_committed Fetch reports it:
// the producer and the first offset of its aborted records.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
}

func (a abortedTxn) append(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, abortedTxnVersion)
	dst = binary.BigEndian.AppendUint64(dst, uint64(a.ProducerID))
	dst = binary.BigEndian.AppendUint64(dst, uint64(a.FirstOffset))
	dst = binary.BigEndian.AppendUint64(dst, uint64(a.LastOffset))
	return binary.BigEndian.AppendUint64(dst, uint64(a.LastStableOffset))
}

// parseTxnIndex reads a transaction index's entries. Bytes after the last
// whole entry (a torn append) are ignored; an entry of an unknown version
// is an error, as in Kafka.
func parseTxnIndex(b []byte) ([]abortedTxn, error) {
	out := make([]abortedTxn, 0, len(b)/abortedTxnSize)
	for ; len(b) >= abortedTxnSize; b = b[abortedTxnSize:] {
		if v := int16(binary.BigEndian.Uint16(b)); v != abortedTxnVersion {
			return nil, fmt.Errorf("%w: transaction index entry of version %d", ErrCorruptIndex, v)
		}
		out = append(out, abortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(b[2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(b[10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(b[18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(b[26:])),
		})
	}
	return out, nil
}

// readTxnIndex returns the raw bytes of the segment's transaction index, nil
// when it has none.
func readTxnIndex(fsys vfs.FS, dir string, base int64) ([]byte, error) {
	b, err := vfs.ReadFile(fsys, segmentFileName(dir, base, txnIndexSuffix))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// readAbortedTxns returns the segment's transaction index entries.
func readAbortedTxns(fsys vfs.FS, dir string, base int64) ([]abortedTxn, error) {
	b, err := readTxnIndex(fsys, dir, base)
	if err != nil || b == nil {
		return nil, err
	}
	return parseTxnIndex(b)
}

// appendAbortedTxn appends one entry to the segment's transaction index and
// makes it durable (the file, and the directory when it creates the file).
func (s *segment) appendAbortedTxn(at *fileDir, a abortedTxn) error {
	s.abortedLoaded = false
	name := segmentFileName(at.dir, s.baseOffset, txnIndexSuffix)
	created := false
	f, err := at.fs.OpenReadWrite(name)
	if errors.Is(err, fs.ErrNotExist) {
		f, err = at.fs.Create(name)
		created = true
	}
	if err != nil {
		return err
	}
	size, err := f.Size()
	if err == nil {
		// A torn entry at the end (a crash mid-append, which recovery
		// rebuilds; or a failed write) is overwritten.
		size -= size % abortedTxnSize
		_, err = f.WriteAt(a.append(make([]byte, 0, abortedTxnSize)), size)
	}
	if err == nil {
		err = f.Truncate(size + abortedTxnSize)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && created {
		err = at.fs.SyncDir(at.dir)
	}
	return err
}

// setTxnIndex makes the segment's transaction index hold exactly entries
// (removing the file when there are none), writing only when it differs.
func setTxnIndex(fsys vfs.FS, dir string, base int64, entries []abortedTxn) error {
	old, err := readTxnIndex(fsys, dir, base)
	if err != nil {
		return err
	}
	var want []byte
	for _, a := range entries {
		want = a.append(want)
	}
	if bytes.Equal(old, want) && (old == nil) == (want == nil) {
		return nil
	}
	name := segmentFileName(dir, base, txnIndexSuffix)
	if len(want) == 0 {
		if err := fsys.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return fsys.SyncDir(dir)
	}
	return vfs.WriteFileAtomic(fsys, name, want)
}

// truncateTxnIndex drops the segment's entries of markers at or above
// offset (Kafka's TransactionIndex.truncateTo).
func truncateTxnIndex(fsys vfs.FS, dir string, base, offset int64) error {
	entries, err := readAbortedTxns(fsys, dir, base)
	if err != nil || entries == nil {
		return err
	}
	kept := slices.DeleteFunc(slices.Clone(entries), func(a abortedTxn) bool { return a.LastOffset >= offset })
	if len(kept) == len(entries) {
		return nil
	}
	return setTxnIndex(fsys, dir, base, kept)
}

// rebuildTxnIndexes makes the transaction indexes of the segments a
// producer-state replay from offset from went over hold what the replay
// found: the entries of markers below from as they were, then those the
// replay completed (rebuilt, by segment). It writes only what differs, so
// a load that replays nothing, or finds the indexes right, writes nothing.
//
// names, if not nil, is the directory's listing: a segment without a
// transaction index there, and with nothing rebuilt, is skipped unread.
// The segment holding from is looked at even when the replay read none of
// it: a truncation may have left entries past the log end there.
func (l *Log) rebuildTxnIndexes(from int64, rebuilt map[*segment][]abortedTxn, names []string) error {
	for i := l.segmentFor(from); i < len(l.segments); i++ {
		s := l.segments[i]
		if len(rebuilt[s]) == 0 && names != nil && !slices.Contains(names, fmt.Sprintf("%020d%s", s.baseOffset, txnIndexSuffix)) {
			continue
		}
		var entries []abortedTxn
		if s.baseOffset < from {
			old, err := readTxnIndex(l.fs, l.dir, s.baseOffset)
			if err != nil {
				return err
			}
			kept, err := parseTxnIndex(old)
			if err != nil {
				// Rebuilt from the log would need a replay from the
				// segment's start; refuse rather than guess.
				return fmt.Errorf("engine: %s: %w", segmentFileName(l.dir, s.baseOffset, txnIndexSuffix), err)
			}
			for _, a := range kept {
				if a.LastOffset < from {
					entries = append(entries, a)
				}
			}
		}
		entries = append(entries, rebuilt[s]...)
		s.abortedLoaded = false
		if len(entries) > 0 {
			l.mayHaveAborted = true
		}
		if err := setTxnIndex(l.fs, l.dir, s.baseOffset, entries); err != nil {
			return err
		}
	}
	return nil
}

// abortedTxnsLocked returns the segment's transaction index entries, read
// once and then cached. Under the log lock.
func (s *segment) abortedTxnsLocked(at *fileDir) ([]abortedTxn, error) {
	if s.abortedLoaded {
		return s.aborted, nil
	}
	entries, err := readAbortedTxns(at.fs, at.dir, s.baseOffset)
	if err != nil {
		return nil, err
	}
	s.aborted, s.abortedLoaded = entries, true
	return entries, nil
}

// collectAbortedTxnsLocked returns the aborted transactions a
// read_committed reader of offsets [from, upper) must know (Kafka's
// collectAbortedTransactions): those whose marker is at or after from and
// whose first offset is below upper, in marker order. It reads the indexes
// of the segments from the one holding from, and stops at an entry whose
// last stable offset reaches upper: no transaction that started below
// upper was open after it. Under the log lock.
func (l *Log) collectAbortedTxnsLocked(from, upper int64) ([]AbortedTxn, error) {
	if !l.mayHaveAborted {
		return nil, nil
	}
	var out []AbortedTxn
	for i := l.segmentFor(from); i < len(l.segments); i++ {
		entries, err := l.segments[i].abortedTxnsLocked(l.fileDir)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.LastOffset >= from && e.FirstOffset < upper {
				out = append(out, AbortedTxn{ProducerID: e.ProducerID, FirstOffset: e.FirstOffset})
			}
			if e.LastStableOffset >= upper {
				return out, nil
			}
		}
	}
	return out, nil
}
