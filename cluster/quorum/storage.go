package quorum

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
	"syscall"

	"github.com/wren-broker/wren/cluster/metalog"
	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/internal/vfs"
	"github.com/wren-broker/wren/wal"
)

// Files inside a node's quorum directory. Part of the on-disk format; never
// change.
const (
	logDirName    = "log"       // the wal of metalog entries
	hardStateName = "hardstate" // two checksummed slots, see writeHardState
	snapshotName  = "snapshot"  // the latest snapshot, replaced atomically
)

// Hard-state slot layout. Part of the on-disk format; never change.
const (
	hardStateSlotBytes = 32
	hardStateMagic     = uint32(0x57524e48) // "WRNH"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is stored state that cannot be a torn write: both hard-state
// slots damaged, a snapshot that does not check, or a log that does not
// continue its snapshot. A node refuses to start on it rather than forget a
// vote or a committed entry.
var ErrCorrupt = errors.New("quorum: corrupt stored state")

// Storage is a node's durable state: the metadata log on wal (one wal record
// per metalog entry, wal index = entry index), the hard state in a small
// file of two checksummed slots written in place with fdatasync, and the
// latest snapshot in a file replaced atomically.
//
// Only the driver goroutine uses it.
type Storage struct {
	fs  vfs.FS
	dir string
	log *wal.Log
	hs  vfs.File
	// hsSeq numbers hard-state writes; the slot written is hsSeq%2, so a
	// torn write leaves the other slot, one write older, intact.
	hsSeq uint64
	snap  metalog.Snapshot
}

// OpenStorage opens (creating if needed) the quorum state in dir and reads
// back what a node starts from.
func OpenStorage(fsys vfs.FS, dir string) (*Storage, metalog.Stored, error) {
	var st metalog.Stored
	if err := ensureDir(fsys, dir); err != nil {
		return nil, st, err
	}
	s := &Storage{fs: fsys, dir: dir}
	var err error
	if st.Snapshot, err = s.readSnapshot(); err != nil {
		return nil, st, err
	}
	s.snap = st.Snapshot
	if st.Hard, err = s.openHardState(); err != nil {
		return nil, st, err
	}
	if s.log, err = wal.Open(fsys, dir+"/"+logDirName, wal.Options{}); err != nil {
		s.hs.Close()
		return nil, st, fmt.Errorf("quorum: metadata log: %w", err)
	}
	if st.Entries, err = s.readEntries(); err != nil {
		s.Close()
		return nil, st, err
	}
	return s, st, nil
}

// ensureDir creates dir and makes every directory it created durable in
// its parent, so a crash cannot lose the directory of a state that voted.
func ensureDir(fsys vfs.FS, dir string) error {
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
		return fmt.Errorf("quorum: %w", err)
	}
	for _, d := range created {
		if err := fsys.SyncDir(filepath.Dir(d)); err != nil {
			return fmt.Errorf("quorum: %w", err)
		}
	}
	return nil
}

// readEntries returns the log's entries after the snapshot. Entries at or
// below it are skipped: the wal drops whole segments only. A log whose
// entry at the snapshot's index has another epoch continues a history the
// snapshot replaced (a crash between writing the snapshot and dropping
// the log), so the entries after it are dropped too.
func (s *Storage) readEntries() ([]metalog.Entry, error) {
	first, last := s.log.FirstIndex(), s.log.LastIndex()
	from := uint64(s.snap.Index) + 1
	if last < from {
		return nil, nil
	}
	if first > from {
		return nil, fmt.Errorf("%w: the log starts at %d, after the snapshot's %d", ErrCorrupt, first, s.snap.Index)
	}
	if s.snap.Index > 0 && first <= uint64(s.snap.Index) {
		p, err := s.log.Read(uint64(s.snap.Index))
		if err != nil {
			return nil, fmt.Errorf("quorum: metadata log: %w", err)
		}
		e, err := decodeEntry(uint64(s.snap.Index), p)
		if err != nil {
			return nil, err
		}
		if e.Epoch != s.snap.Epoch {
			if err := s.log.TruncateSuffix(from); err != nil {
				return nil, fmt.Errorf("quorum: metadata log: %w", err)
			}
			return nil, nil
		}
	}
	var out []metalog.Entry
	err := s.log.Scan(from, func(index uint64, p []byte) error {
		e, err := decodeEntry(index, p)
		if err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("quorum: metadata log: %w", err)
	}
	return out, nil
}

// Entry payload in the wal: epoch (int32 BE), type (uint8), data. The index
// is the wal's own. Part of the on-disk format; never change.
func encodeEntry(e metalog.Entry) []byte {
	b := make([]byte, 5+len(e.Data))
	binary.BigEndian.PutUint32(b, uint32(e.Epoch))
	b[4] = byte(e.Type)
	copy(b[5:], e.Data)
	return b
}

func decodeEntry(index uint64, p []byte) (metalog.Entry, error) {
	if len(p) < 5 {
		return metalog.Entry{}, fmt.Errorf("%w: metadata log entry %d is %d bytes", ErrCorrupt, index, len(p))
	}
	t := metalog.EntryType(p[4])
	if t != metalog.EntryRecords && t != metalog.EntryLeaderChange {
		return metalog.Entry{}, fmt.Errorf("%w: metadata log entry %d has type %d", ErrCorrupt, index, t)
	}
	return metalog.Entry{Index: int64(index), Epoch: int32(binary.BigEndian.Uint32(p)), Type: t,
		Data: append([]byte(nil), p[5:]...)}, nil
}

// openHardState opens the hard-state file, creating it (durably, both
// slots zero) if it is missing, and returns the newest valid slot.
func (s *Storage) openHardState() (metalog.HardState, error) {
	zero := metalog.HardState{Election: election.HardState{VotedFor: election.None}}
	name := s.dir + "/" + hardStateName
	if _, err := s.fs.Stat(name); errors.Is(err, fs.ErrNotExist) {
		// Created whole or not at all, so a crash never leaves a file
		// whose slots were never written.
		init := append(encodeHardState(0, zero), encodeHardState(0, zero)...)
		if err := vfs.WriteFileAtomic(s.fs, name, init); err != nil {
			return zero, fmt.Errorf("quorum: %w", err)
		}
	} else if err != nil {
		return zero, fmt.Errorf("quorum: %w", err)
	}
	f, err := s.fs.OpenReadWrite(name)
	if err != nil {
		return zero, fmt.Errorf("quorum: %w", err)
	}
	s.hs = f
	buf := make([]byte, 2*hardStateSlotBytes)
	n, _ := f.ReadAt(buf, 0)
	buf = buf[:n]
	best, found := zero, false
	for slot := 0; slot < 2; slot++ {
		if len(buf) < (slot+1)*hardStateSlotBytes {
			continue
		}
		seq, hs, ok := decodeHardState(buf[slot*hardStateSlotBytes : (slot+1)*hardStateSlotBytes])
		if ok && (!found || seq > s.hsSeq) {
			best, found, s.hsSeq = hs, true, seq
		}
	}
	if !found {
		return zero, fmt.Errorf("%w: %s: neither hard-state slot checks", ErrCorrupt, name)
	}
	return best, nil
}

// Slot: magic u32, seq u64, epoch i32, votedFor i32, commit i64, crc32c u32
// of the 28 bytes before it.
func encodeHardState(seq uint64, hs metalog.HardState) []byte {
	b := make([]byte, hardStateSlotBytes)
	binary.BigEndian.PutUint32(b[0:], hardStateMagic)
	binary.BigEndian.PutUint64(b[4:], seq)
	binary.BigEndian.PutUint32(b[12:], uint32(hs.Election.Epoch))
	binary.BigEndian.PutUint32(b[16:], uint32(hs.Election.VotedFor))
	binary.BigEndian.PutUint64(b[20:], uint64(hs.Commit))
	binary.BigEndian.PutUint32(b[28:], crc32.Checksum(b[:28], castagnoli))
	return b
}

func decodeHardState(b []byte) (uint64, metalog.HardState, bool) {
	if binary.BigEndian.Uint32(b[0:]) != hardStateMagic || binary.BigEndian.Uint32(b[28:]) != crc32.Checksum(b[:28], castagnoli) {
		return 0, metalog.HardState{}, false
	}
	return binary.BigEndian.Uint64(b[4:]), metalog.HardState{
		Election: election.HardState{Epoch: int32(binary.BigEndian.Uint32(b[12:])), VotedFor: election.NodeID(int32(binary.BigEndian.Uint32(b[16:])))},
		Commit:   int64(binary.BigEndian.Uint64(b[20:])),
	}, true
}

// SetHardState writes hs to the older slot and fdatasyncs it.
func (s *Storage) SetHardState(hs metalog.HardState) error {
	seq := s.hsSeq + 1
	if _, err := s.hs.WriteAt(encodeHardState(seq, hs), int64(seq%2)*hardStateSlotBytes); err != nil {
		return fmt.Errorf("quorum: hard state: %w", err)
	}
	if err := s.hs.SyncData(); err != nil {
		return fmt.Errorf("quorum: hard state: %w", err)
	}
	s.hsSeq = seq
	return nil
}

// Snapshot file: magic u32, index i64, epoch i32, crc32c u32 of the data,
// data. Part of the on-disk format; never change.
const snapshotMagic = uint32(0x57524e53) // "WRNS"

func (s *Storage) readSnapshot() (metalog.Snapshot, error) {
	name := s.dir + "/" + snapshotName
	b, err := vfs.ReadFile(s.fs, name)
	if errors.Is(err, fs.ErrNotExist) {
		return metalog.Snapshot{}, nil
	}
	if err != nil {
		return metalog.Snapshot{}, fmt.Errorf("quorum: %w", err)
	}
	if len(b) < 20 || binary.BigEndian.Uint32(b) != snapshotMagic ||
		binary.BigEndian.Uint32(b[16:]) != crc32.Checksum(b[20:], castagnoli) {
		return metalog.Snapshot{}, fmt.Errorf("%w: %s does not check", ErrCorrupt, name)
	}
	return metalog.Snapshot{Index: int64(binary.BigEndian.Uint64(b[4:])), Epoch: int32(binary.BigEndian.Uint32(b[12:])),
		Data: b[20:]}, nil
}

// SaveSnapshot makes snap durable, then drops the log's entries up to it
// (every entry if all).
func (s *Storage) SaveSnapshot(snap metalog.Snapshot, all bool) error {
	b := make([]byte, 20+len(snap.Data))
	binary.BigEndian.PutUint32(b, snapshotMagic)
	binary.BigEndian.PutUint64(b[4:], uint64(snap.Index))
	binary.BigEndian.PutUint32(b[12:], uint32(snap.Epoch))
	copy(b[20:], snap.Data)
	binary.BigEndian.PutUint32(b[16:], crc32.Checksum(snap.Data, castagnoli))
	if err := vfs.WriteFileAtomic(s.fs, s.dir+"/"+snapshotName, b); err != nil {
		return fmt.Errorf("quorum: snapshot: %w", err)
	}
	s.snap = snap
	if all && s.log.LastIndex() >= s.log.FirstIndex() {
		if err := s.log.TruncateSuffix(s.log.FirstIndex()); err != nil {
			return fmt.Errorf("quorum: metadata log: %w", err)
		}
	}
	if err := s.log.TruncatePrefix(uint64(snap.Index) + 1); err != nil {
		return fmt.Errorf("quorum: metadata log: %w", err)
	}
	return nil
}

// TruncateAfter drops the log's entries after index.
func (s *Storage) TruncateAfter(index int64) error {
	if uint64(index) >= s.log.LastIndex() {
		return nil
	}
	if err := s.log.TruncateSuffix(uint64(index) + 1); err != nil {
		return fmt.Errorf("quorum: metadata log: %w", err)
	}
	return nil
}

// Append writes entries at the log's end without syncing; Sync makes them
// durable.
func (s *Storage) Append(ents []metalog.Entry) error {
	for _, e := range ents {
		// The wal must be at e.Index-1: a gap or overlap is a driver bug.
		if want := s.log.LastIndex() + 1; uint64(e.Index) != want {
			panic(fmt.Sprintf("quorum: append entry %d, the log's next index is %d", e.Index, want))
		}
		if _, err := s.log.AppendNoSync(encodeEntry(e)); err != nil {
			return fmt.Errorf("quorum: metadata log: %w", err)
		}
	}
	return nil
}

// nextIndex is the index the next appended entry takes.
func (s *Storage) nextIndex() int64 { return int64(s.log.LastIndex()) + 1 }

// isNoSpace reports whether err is a full disk (ENOSPC, EDQUOT) that left
// the storage sound: the wal undid the write and has not failed, so the
// same step may be tried again once there is space.
func (s *Storage) isNoSpace(err error) bool {
	return (errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)) && s.log.Err() == nil
}

// Sync makes every appended entry durable.
func (s *Storage) Sync() error {
	if err := s.log.Sync(); err != nil {
		return fmt.Errorf("quorum: metadata log: %w", err)
	}
	return nil
}

// Close closes the files.
func (s *Storage) Close() error {
	var errs []error
	if s.log != nil {
		errs = append(errs, s.log.Close())
	}
	if s.hs != nil {
		errs = append(errs, s.hs.Close())
	}
	return errors.Join(errs...)
}
