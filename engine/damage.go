package engine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sort"
	"strconv"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// DamagedSegmentsFile lists the segments of a partition in which media
// damage was found (by recovery or by the scrubber), one "base position"
// line each, in the checkpoint layout. Recovery scans a listed segment
// batch by batch whatever the recovery point says, and never takes damage
// in it for a torn tail. wren's own file; Kafka ignores it.
// Part of the on-disk format; never change.
const DamagedSegmentsFile = "damaged-segments"

// ErrPartitionDamaged: the partition's log holds a damaged batch with valid
// data after it, or below its recovery point. It takes no appends, and
// reads stop before the damage (KAFKA_STORAGE_ERROR), until an operator
// repairs it (wren storage repair) or, once replication lands, a healthy
// replica does.
var ErrPartitionDamaged = errors.New("engine: partition damaged")

// Damage is one damaged byte range of a segment file: bytes that do not
// hold a valid batch, where valid data was expected.
type Damage struct {
	TopicPartition TopicPartition
	// Segment is the base offset of the segment; File the .log path.
	Segment int64
	File    string
	// Position is where the damaged range starts (where a batch was
	// expected) and End where the next valid batch starts, or the end of
	// the file when none follows.
	Position int64
	End      int64
	// FirstOffset is the first offset the damaged range held: the offset
	// after the last valid batch before it. LastOffset is the last offset
	// it can have held: one below the next valid batch's base offset (or
	// the next segment's), or -1 when nothing after it says.
	FirstOffset int64
	LastOffset  int64
	// Reason is what was wrong (a CRC mismatch, a bad length, a read error).
	Reason string
	// FoundBy is "recovery", "scrubber" or "check".
	FoundBy string
}

func (d Damage) String() string {
	held := "offsets " + strconv.FormatInt(d.FirstOffset, 10) + " to unknown"
	switch n := d.Offsets(); {
	case n == 0:
		held = "no offsets: the batch after it starts at " + strconv.FormatInt(d.FirstOffset, 10)
	case n > 0:
		held = fmt.Sprintf("offsets %d to %d", d.FirstOffset, d.LastOffset)
	}
	return fmt.Sprintf("%s: bytes [%d, %d) of %s (%s): %s", d.TopicPartition, d.Position, d.End, d.File, held, d.Reason)
}

// Offsets is how many offsets the damaged range can have held, or -1 when
// unknown. Records lost with it are at most that many. It is 0 for bytes
// between two valid batches whose offsets follow on: they held no record,
// and reads pass over them (the partition still takes no appends until
// the bytes are repaired away).
func (d Damage) Offsets() int64 {
	if d.LastOffset < 0 {
		return -1
	}
	return max(0, d.LastOffset-d.FirstOffset+1)
}

func (d Damage) errorf() error {
	return fmt.Errorf("%w: %s", ErrPartitionDamaged, d)
}

// Damage returns the damaged ranges known in the log, oldest first; nil
// for a healthy log.
func (l *Log) Damage() []Damage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.damage)
}

// damagedLocked is the error for a log with damage, or nil.
func (l *Log) damagedLocked() error {
	if len(l.damage) == 0 {
		return nil
	}
	return l.damage[0].errorf()
}

// skipDamage returns the position to continue a scan of s at: pos itself,
// or the end of the damaged range that starts at pos.
func (l *Log) skipDamage(s *segment, pos int64) int64 {
	for _, d := range l.damage {
		if d.Segment == s.baseOffset && d.Position == pos {
			return d.End
		}
	}
	return pos
}

// recordDamageLocked adds d and makes the damaged segment's listing
// durable, so a restart scans it again.
func (l *Log) recordDamageLocked(d Damage) error {
	for _, o := range l.damage {
		if o.Segment == d.Segment && o.Position == d.Position {
			return nil
		}
	}
	l.damage = append(l.damage, d)
	// sort.Slice, not slices.SortFunc: no sort code instantiated for
	// Damage in the binary.
	sort.Slice(l.damage, func(i, j int) bool {
		a, b := &l.damage[i], &l.damage[j]
		return a.FirstOffset < b.FirstOffset || a.FirstOffset == b.FirstOffset && a.Position < b.Position
	})
	return writeDamagedSegments(l.fs, l.dir, l.damage)
}

func writeDamagedSegments(fsys vfs.FS, dir string, ds []Damage) error {
	lines := make([]string, len(ds))
	for i, d := range ds {
		lines[i] = fmt.Sprintf("%d %d", d.Segment, d.Position)
	}
	return writeCheckpoint(fsys, dir+"/"+DamagedSegmentsFile, lines)
}

// readDamagedSegments returns the segment base offsets listed in
// DamagedSegmentsFile; a missing file lists none. A file that cannot be
// read or parsed says all: scanning every segment is the safe answer.
//
// err is set only when the process ran out of file descriptors reading it:
// that says nothing about the segments, and the caller may retry later.
func readDamagedSegments(fsys vfs.FS, dir string) (listed map[int64]bool, all bool, err error) {
	rows, err := readCheckpoint(fsys, dir+"/"+DamagedSegmentsFile, 2)
	if isOutOfFiles(err) {
		return nil, true, err
	}
	if err != nil {
		return nil, true, nil
	}
	listed = map[int64]bool{}
	for _, r := range rows {
		b, err := strconv.ParseInt(r[0], 10, 64)
		if err != nil {
			return nil, true, nil
		}
		listed[b] = true
	}
	return listed, false, nil
}

// clearDamagedSegments removes the listing once recovery found every
// listed segment whole again (after an operator's repair, or a read error
// that did not come back).
func clearDamagedSegments(fsys vfs.FS, dir string) error {
	err := fsys.Remove(dir + "/" + DamagedSegmentsFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return fsys.SyncDir(dir)
}

// nextValidBatch looks for the first position after from (and before size)
// where a whole batch with a valid CRC starts that can follow offset
// minOffset-1 in the segment based at base (misplaced): the end of a
// damaged range. It reads the file in
// bounded windows, so a damaged segment costs one pass and a little
// memory.
func nextValidBatch(f vfs.File, from, size, base, minOffset int64) (pos int64, h batch.Header, ok bool, err error) {
	const window = 256 << 10
	buf := make([]byte, window+batch.RecordBatchOverhead)
	var body []byte
	for start := from + 1; start+batch.RecordBatchOverhead <= size; start += window {
		n := min(int64(len(buf)), size-start)
		got, rerr := f.ReadAt(buf[:n], start)
		if rerr != nil && !(errors.Is(rerr, io.EOF) && int64(got) == n) {
			return 0, batch.Header{}, false, rerr
		}
		for i := int64(0); i < min(window, n); i++ {
			p := start + i
			if n-i < batch.RecordBatchOverhead {
				break
			}
			cand, perr := batch.ParseHeader(buf[i : i+batch.RecordBatchOverhead])
			if perr != nil || cand.BaseOffset < minOffset || p+int64(cand.Size()) > size {
				continue
			}
			if int64(cap(body)) < int64(cand.Size()) {
				body = make([]byte, cand.Size())
			}
			b := body[:cand.Size()]
			if _, rerr := f.ReadAt(b, p); rerr != nil && !errors.Is(rerr, io.EOF) {
				return 0, batch.Header{}, false, rerr
			}
			if _, hh, serr := batch.Scan(b); serr == nil && misplaced(hh, p, base, minOffset) == nil {
				return p, hh, true, nil
			}
		}
	}
	return 0, batch.Header{}, false, nil
}
