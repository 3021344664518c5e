package wal

import (
	"fmt"
	"path/filepath"

	"github.com/wren-broker/wren/internal/vfs"
)

// segment is one file of the log. Its fields are guarded by Log.mu.
type segment struct {
	firstIndex uint64
	path       string
	file       vfs.File
	flags      uint16
	// offsets[i] is the file offset of record firstIndex+i. Offsets fit in
	// 32 bits because a segment never exceeds SegmentBytes plus one record
	// (see maxSegmentBytesLimit). This is the whole in-memory index: 4 bytes
	// per record.
	// Invariant: ascending; offsets[0] == fileHeaderBytes when non-empty.
	offsets []uint32
	// size is where the next record goes: the end of the last whole record.
	// Invariant: size >= fileHeaderBytes; size > offsets[len-1].
	size int64
}

// lastIndex is the index of the segment's last record, or firstIndex-1
// when it holds none.
func (s *segment) lastIndex() uint64 { return s.firstIndex + uint64(len(s.offsets)) - 1 }

// span returns where record index starts and ends in the file.
func (s *segment) span(index uint64) (start, end int64) {
	i := index - s.firstIndex
	if i >= uint64(len(s.offsets)) {
		panic(fmt.Sprintf("wal: index %d outside segment [%d, %d]", index, s.firstIndex, s.lastIndex()))
	}
	start = int64(s.offsets[i])
	if i+1 < uint64(len(s.offsets)) {
		return start, int64(s.offsets[i+1])
	}
	return start, s.size
}

// createSegment creates a segment file whose first record will be
// firstIndex, and makes the file, its header and its directory entry
// durable before returning, so that recovery only ever finds a torn header
// in the newest file.
func createSegment(fsys vfs.FS, dir string, firstIndex uint64, flags uint16) (*segment, error) {
	path := filepath.Join(dir, segmentName(firstIndex))
	f, err := fsys.Create(path)
	if err != nil {
		return nil, fmt.Errorf("wal: create %s: %w", path, err)
	}
	s := &segment{firstIndex: firstIndex, path: path, file: f, flags: flags, size: fileHeaderBytes}
	if _, err := f.WriteAt(encodeFileHeader(firstIndex, flags), 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("wal: write header of %s: %w", path, err)
	}
	if err := f.SyncData(); err != nil {
		f.Close()
		return nil, fmt.Errorf("wal: fdatasync %s: %w", path, err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		f.Close()
		return nil, fmt.Errorf("wal: sync directory %s: %w", dir, err)
	}
	return s, nil
}

// removeSegment closes and deletes a segment's file. The caller syncs the
// directory.
func removeSegment(fsys vfs.FS, s *segment) error {
	// A close error cannot cost data here: the file is going away, and
	// whatever of it mattered was synced or is being dropped on purpose.
	_ = s.file.Close()
	if err := fsys.Remove(s.path); err != nil {
		return fmt.Errorf("wal: remove %s: %w", s.path, err)
	}
	return nil
}
