package wal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
)

// recover loads the segments of l.dir into l.segments, repairing what a
// crash can leave behind and refusing what it cannot. On error the caller
// closes whatever l.segments holds.
func (l *Log) recover() error {
	names, err := l.fs.List(l.dir)
	if err != nil {
		return fmt.Errorf("wal: list %s: %w", l.dir, err)
	}
	for _, name := range names {
		first, ok := parseSegmentName(name)
		if !ok {
			continue
		}
		path := filepath.Join(l.dir, name)
		f, err := l.fs.OpenReadWrite(path)
		if err != nil {
			return fmt.Errorf("wal: open %s: %w", path, err)
		}
		l.segments = append(l.segments, &segment{firstIndex: first, path: path, file: f, size: fileHeaderBytes})
	}
	sort.Slice(l.segments, func(i, j int) bool { return l.segments[i].firstIndex < l.segments[j].firstIndex })

	if err := l.checkHeaders(); err != nil {
		return err
	}
	if err := l.dropBeforeLogStart(); err != nil {
		return err
	}
	for i, s := range l.segments {
		if err := l.scanSegment(s, i == len(l.segments)-1); err != nil {
			return err
		}
		if i > 0 {
			if prev := l.segments[i-1]; prev.lastIndex()+1 != s.firstIndex {
				return fmt.Errorf("%w: %s ends at index %d but %s starts at %d", ErrCorrupt, prev.path, prev.lastIndex(), s.path, s.firstIndex)
			}
		}
		if s.lastIndex() >= maxIndex {
			return fmt.Errorf("%w: %s reaches index %d", ErrCorrupt, s.path, s.lastIndex())
		}
	}

	if len(l.segments) == 0 {
		s, err := createSegment(l.fs, l.dir, 1, 0)
		if err != nil {
			return err
		}
		l.segments = []*segment{s}
		return nil
	}
	// Make what recovery kept durable. After a process crash (rather than a
	// power loss) the page cache may still hold records that no fdatasync
	// covered; serving them as part of the log and then losing them to a
	// power cut would let the log go backwards. Older segments were synced
	// when they rolled.
	active := l.active()
	if err := active.file.SyncData(); err != nil {
		return fmt.Errorf("wal: fdatasync %s: %w", active.path, err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("wal: sync directory %s: %w", l.dir, err)
	}
	return nil
}

// checkHeaders reads every segment's header. Only the newest file can have
// a torn one (a segment's header is synced before the next segment is
// created); that file holds no record and is removed.
func (l *Log) checkHeaders() error {
	for i, s := range l.segments {
		b := make([]byte, fileHeaderBytes)
		n, err := s.file.ReadAt(b, 0)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("wal: read header of %s: %w", s.path, err)
		}
		h, ok := decodeFileHeader(b[:n])
		if !ok {
			if i < len(l.segments)-1 {
				return fmt.Errorf("%w: %s has a damaged header", ErrCorrupt, s.path)
			}
			if err := removeSegment(l.fs, s); err != nil {
				return err
			}
			l.report.RemovedFiles = append(l.report.RemovedFiles, s.path)
			l.segments = l.segments[:i]
			if err := l.fs.SyncDir(l.dir); err != nil {
				return fmt.Errorf("wal: sync directory %s: %w", l.dir, err)
			}
			return nil
		}
		if h.version != fileVersion || h.flags&^flagLogStart != 0 {
			return fmt.Errorf("%w: %s has version %d, flags %#x", ErrUnsupportedVersion, s.path, h.version, h.flags)
		}
		if h.firstIndex != s.firstIndex || h.firstIndex == 0 || h.firstIndex >= maxIndex {
			return fmt.Errorf("%w: %s has first index %d in its header", ErrCorrupt, s.path, h.firstIndex)
		}
		s.flags = h.flags
	}
	return nil
}

// dropBeforeLogStart removes the files older than the newest one marked
// flagLogStart: an interrupted TruncatePrefix beyond the end left them.
func (l *Log) dropBeforeLogStart() error {
	start := 0
	for i, s := range l.segments {
		if s.flags&flagLogStart != 0 {
			start = i
		}
	}
	if start == 0 {
		return nil
	}
	for _, s := range l.segments[:start] {
		if err := removeSegment(l.fs, s); err != nil {
			return err
		}
		l.report.RemovedFiles = append(l.report.RemovedFiles, s.path)
	}
	l.segments = l.segments[start:]
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("wal: sync directory %s: %w", l.dir, err)
	}
	return nil
}

// scanSegment reads s's records in order, checking each CRC, and fills its
// in-memory index. The first record that is incomplete or fails its check
// ends the scan. In the last file that is where a torn write begins (or
// damage that cannot be told from one): the tail is cut off. In any other
// file it is corruption of data that was synced, and an error.
//
// A read error is returned as is, never taken for a torn tail: cutting a
// log because the disk failed to read it would destroy acknowledged data.
func (l *Log) scanSegment(s *segment, last bool) error {
	size, err := s.file.Size()
	if err != nil {
		return fmt.Errorf("wal: size of %s: %w", s.path, err)
	}
	r := bufio.NewReaderSize(io.NewSectionReader(s.file, fileHeaderBytes, size-fileHeaderBytes), 64<<10)
	off := int64(fileHeaderBytes)
	var hdr [recordHeaderBytes]byte
	var payload []byte
	var bad string
	for off < size {
		if off > math.MaxUint32 {
			bad = "segment larger than 4 GiB"
			break
		}
		if size-off < recordHeaderBytes {
			bad = "incomplete record header"
			break
		}
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return fmt.Errorf("wal: read %s at %d: %w", s.path, off, err)
		}
		n := int64(binary.BigEndian.Uint32(hdr[:4]))
		if n > maxRecordBytesLimit {
			bad = fmt.Sprintf("record length %d over the limit", n)
			break
		}
		if size-off-recordHeaderBytes < n {
			bad = fmt.Sprintf("record length %d past the end of the file", n)
			break
		}
		if int64(cap(payload)) < n {
			payload = make([]byte, n)
		}
		payload = payload[:n]
		if _, err := io.ReadFull(r, payload); err != nil {
			return fmt.Errorf("wal: read %s at %d: %w", s.path, off, err)
		}
		if recordCRC(hdr[:], payload) != binary.BigEndian.Uint32(hdr[4:]) {
			bad = "record CRC mismatch"
			break
		}
		s.offsets = append(s.offsets, uint32(off))
		off += recordHeaderBytes + n
	}
	s.size = off
	if off == size {
		return nil
	}
	if !last {
		return fmt.Errorf("%w: %s at offset %d: %s", ErrCorrupt, s.path, off, bad)
	}
	if err := s.file.Truncate(off); err != nil {
		return fmt.Errorf("wal: truncate %s to %d: %w", s.path, off, err)
	}
	l.report.TruncatedBytes += size - off
	return nil
}
