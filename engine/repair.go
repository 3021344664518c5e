package engine

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// Checking and repairing damaged partitions offline (wren storage check,
// wren storage repair). The check reads every batch of every segment with
// its CRC, with the rules recovery uses, but never writes: it is safe
// beside a running broker. A repair runs only with the data directory's
// lock, so never under a broker, and only on the operator's word: it is
// the one place that deliberately gives up bytes that were acknowledged.

var (
	// ErrNoDamage: a repair was asked for a partition that has none.
	ErrNoDamage = errors.New("engine: partition has no damage to repair")
	// ErrRepairPlanStale: the partition changed between the plan and its
	// execution; plan again.
	ErrRepairPlanStale = errors.New("engine: the partition changed since the repair was planned")
	// ErrSwapPending: a segment swap that a crash interrupted (of the log
	// cleaner or of an earlier repair) waits for recovery to complete it.
	ErrSwapPending = errors.New("engine: an interrupted segment swap is pending")
)

// maxCheckIndexBytes bounds what a check reads of one index file: several
// times segment.index.bytes' default.
const maxCheckIndexBytes = 64 << 20

// maxIndexProblemsPerFile bounds the findings listed for one index file; a
// wholly bad index needs one line, not a million.
const maxIndexProblemsPerFile = 10

// DamageReport is a damaged range as a check sees it.
type DamageReport struct {
	Damage
	// RecordsAfter counts the records of the valid batches after the
	// damaged range in the partition: what a truncation there drops on top
	// of the range itself.
	RecordsAfter int64
	// Listed says the segment is listed in DamagedSegmentsFile: recovery
	// found damage there, and the broker keeps the partition offline.
	Listed bool
}

// IndexProblem is an index entry that does not name what it should. It is
// not data: recovery rebuilds indexes from the log.
type IndexProblem struct {
	File   string
	Entry  int64
	Reason string
}

// PartitionReport is what a check found in one partition directory.
type PartitionReport struct {
	TopicPartition TopicPartition
	Dir            string
	Segments       int
	// Batches and Records count the valid batches and their records.
	Batches int64
	Records int64
	// FirstOffset and LastOffset span the valid batches; -1 when none.
	FirstOffset int64
	LastOffset  int64
	// TornTailBytes at the end of TornTailFile, the last segment, are an
	// incomplete write that recovery cuts (never synced, or being written
	// right now by a running broker). Not damage.
	TornTailBytes int64
	TornTailFile  string
	Damage        []DamageReport
	IndexProblems []IndexProblem
	// StaleListing: DamagedSegmentsFile lists segments that are whole
	// now; the next recovery removes the listing.
	StaleListing bool
	// PendingSwaps are .swap files a crash left; recovery completes them.
	PendingSwaps []string

	// segments holds what a repair needs of each segment scanned.
	segments []scannedSegment
}

// Damaged says whether the partition holds damaged data.
func (r *PartitionReport) Damaged() bool { return len(r.Damage) > 0 }

type scannedSegment struct {
	base    int64
	file    string
	size    int64
	batches []scannedBatch
}

type scannedBatch struct {
	position, size int64
	baseOffset     int64
	lastOffset     int64
}

// PartitionDirs lists the partition directories of a data directory,
// ordered by topic and partition. Directories being deleted and names that
// are not "<topic>-<partition>" are left out, as OpenManager leaves them.
func PartitionDirs(fsys vfs.FS, dataDir string) ([]TopicPartition, error) {
	names, err := fsys.List(dataDir)
	if err != nil {
		return nil, fmt.Errorf("engine: data directory %s: %w", dataDir, err)
	}
	var tps []TopicPartition
	for _, name := range names {
		if strings.HasSuffix(name, deleteDirSuffix) {
			continue
		}
		st, err := fsys.Stat(dataDir + "/" + name)
		if err != nil || !st.IsDir() {
			continue
		}
		tp, err := ParseTopicPartitionDir(name)
		if err != nil {
			continue
		}
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool { return tps[i].Less(tps[j]) })
	return tps, nil
}

// CheckDir checks every partition directory of a data directory.
func CheckDir(fsys vfs.FS, dataDir string) ([]PartitionReport, error) {
	tps, err := PartitionDirs(fsys, dataDir)
	if err != nil {
		return nil, err
	}
	out := make([]PartitionReport, 0, len(tps))
	for _, tp := range tps {
		r, err := CheckPartition(fsys, dataDir+"/"+tp.String(), tp)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// CheckPartition reads every batch of every segment in dir with its CRC
// and reports what it found. It applies recovery's rules (a bad batch is a
// torn tail only at the end of the last segment, above the recovery point,
// with nothing valid after it, and never in a segment listed as damaged)
// but scans segments below the recovery point too, which recovery trusts.
// It never writes.
func CheckPartition(fsys vfs.FS, dir string, tp TopicPartition) (PartitionReport, error) {
	r := PartitionReport{TopicPartition: tp, Dir: dir, FirstOffset: -1, LastOffset: -1}
	names, err := fsys.List(dir)
	if err != nil {
		return r, fmt.Errorf("engine: check %s: %w", tp, err)
	}
	var bases []int64
	for _, name := range names {
		if base, ok := parseBase(name, logSuffix); ok {
			bases = append(bases, base)
		}
		if strings.HasSuffix(name, swapSuffix) {
			r.PendingSwaps = append(r.PendingSwaps, dir+"/"+name)
		}
	}
	slices.Sort(bases)
	recoveryPoint, hasRecoveryPoint := readRecoveryPoint(fsys, parentDir(dir), tp)
	listed, listedAll, _ := readDamagedSegments(fsys, dir)
	hasListing := listedAll || len(listed) > 0

	c := partitionChecker{fsys: fsys, dir: dir, tp: tp, report: &r, recoveryPoint: recoveryPoint, hasRecoveryPoint: hasRecoveryPoint}
	next := int64(-1)
	for i, base := range bases {
		if base < next {
			// Recovery deletes a segment that overlaps the one before it:
			// the leftover of an interrupted operation, not data.
			r.IndexProblems = append(r.IndexProblems, IndexProblem{File: segmentFileName(dir, base, logSuffix), Entry: -1,
				Reason: fmt.Sprintf("overlaps the previous segment, which ends at offset %d; recovery deletes it", next)})
			continue
		}
		nextBase := int64(-1)
		if i+1 < len(bases) {
			nextBase = bases[i+1]
		}
		forced := listedAll || listed[base]
		seg, err := c.scanSegment(base, nextBase, i == len(bases)-1 && !forced, forced)
		if errors.Is(err, fs.ErrNotExist) {
			// Deleted by a running broker's retention since the listing.
			continue
		}
		if err != nil {
			return r, fmt.Errorf("engine: check %s: %w", tp, err)
		}
		r.Segments++
		r.segments = append(r.segments, seg)
		r.IndexProblems = append(r.IndexProblems, checkSegmentIndexes(fsys, dir, seg, r.Damage, i == len(bases)-1)...)
		next = seg.base
		if n := len(seg.batches); n > 0 {
			next = seg.batches[n-1].lastOffset + 1
		}
	}
	for i := range r.Damage {
		r.Damage[i].RecordsAfter = r.Records - r.Damage[i].RecordsAfter
	}
	if hasListing && len(r.Damage) == 0 {
		r.StaleListing = true
	}
	return r, nil
}

// readRecoveryPoint returns the partition's entry in the data directory's
// recovery-point checkpoint; ok is false when there is none to read.
func readRecoveryPoint(fsys vfs.FS, dataDir string, tp TopicPartition) (int64, bool) {
	rps, err := ReadOffsetCheckpoint(fsys, dataDir+"/"+RecoveryPointCheckpointFile)
	if err != nil {
		return 0, false
	}
	rp, ok := rps[tp]
	return rp, ok
}

type partitionChecker struct {
	fsys             vfs.FS
	dir              string
	tp               TopicPartition
	report           *PartitionReport
	recoveryPoint    int64
	hasRecoveryPoint bool
}

// scanSegment is recoverSegment without the writes. Damage found gets
// RecordsAfter set to the records counted before it; the caller turns
// that into the records after it once the whole partition is counted.
func (c *partitionChecker) scanSegment(base, nextBase int64, tornTailPossible, listed bool) (scannedSegment, error) {
	name := segmentFileName(c.dir, base, logSuffix)
	seg := scannedSegment{base: base, file: name}
	f, err := c.fsys.Open(name)
	if err != nil {
		return seg, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return seg, err
	}
	seg.size = size
	r := c.report
	nextOffset := base
	buf := make([]byte, 0, 1<<20)
	for pos := int64(0); pos < size; {
		h, _, err := readBatchAt(f, pos, size, &buf)
		if err == nil {
			err = misplaced(h, pos, base, nextOffset)
		}
		if err != nil {
			// The recovery point the broker would open with is 0 when the
			// checkpoint has no entry.
			// As recovery decides: even a batch that runs past the end
			// may be a damaged length field with valid batches after it.
			unsynced := tornTailPossible && nextOffset >= c.recoveryPoint
			q, nh, found, _ := nextValidBatch(f, pos, size, base, nextOffset)
			if unsynced && !found {
				r.TornTailBytes, r.TornTailFile = size-pos, name
				break
			}
			d := Damage{
				TopicPartition: c.tp, Segment: base, File: name,
				Position: pos, End: size, FirstOffset: nextOffset, LastOffset: -1,
				Reason: err.Error(), FoundBy: "check",
			}
			switch {
			case found:
				d.End, d.LastOffset = q, nh.BaseOffset-1
			case nextBase > nextOffset:
				d.LastOffset = nextBase - 1
			case nextBase < 0:
				d.LastOffset = c.lastOffsetEvidence(f, pos, size, nextOffset)
			}
			r.Damage = append(r.Damage, DamageReport{Damage: d, RecordsAfter: r.Records, Listed: listed})
			if !found {
				break
			}
			pos = q
			continue
		}
		seg.batches = append(seg.batches, scannedBatch{position: pos, size: int64(h.Size()), baseOffset: h.BaseOffset, lastOffset: h.LastOffset()})
		r.Batches++
		r.Records += int64(h.RecordCount)
		if r.FirstOffset < 0 {
			r.FirstOffset = h.BaseOffset
		}
		r.LastOffset = h.LastOffset()
		nextOffset = h.LastOffset() + 1
		pos += int64(h.Size())
	}
	return seg, nil
}

// lastOffsetEvidence is the highest offset that anything on disk says a
// damaged range at the end of the last segment held, or -1 when nothing
// says: the recovery point (offsets below it were synced), producer
// snapshots (named by the log end offset when they were taken), leader
// epoch start offsets, and the headers of the damaged batches themselves
// while they chain from one to the next and look as a producer wrote them
// (base offset where expected, one offset per record). Each is a lower
// bound of what the partition held, so the highest is the best guess of
// where new writes may start without reusing an offset.
func (c *partitionChecker) lastOffsetEvidence(f vfs.File, pos, size, firstOffset int64) int64 {
	last := int64(-1)
	if c.hasRecoveryPoint && c.recoveryPoint > firstOffset {
		last = c.recoveryPoint - 1
	}
	if snaps, err := snapshotOffsets(c.fsys, c.dir); err == nil {
		for _, s := range snaps {
			if s > firstOffset {
				last = max(last, s-1)
			}
		}
	}
	if epochs, err := loadEpochCache(&fileDir{fs: c.fsys, dir: c.dir}); err == nil {
		for _, e := range epochs.entries {
			if e.StartOffset >= firstOffset {
				last = max(last, e.StartOffset)
			}
		}
	}
	hdr := make([]byte, batch.RecordBatchOverhead)
	expected := firstOffset
	for p := pos; p+batch.RecordBatchOverhead <= size; {
		if _, err := f.ReadAt(hdr, p); err != nil {
			break
		}
		h, err := batch.ParseHeader(hdr)
		if err != nil || h.BaseOffset != expected || h.RecordCount < 1 || h.LastOffsetDelta != h.RecordCount-1 || p+int64(h.Size()) > size {
			break
		}
		last = max(last, h.LastOffset())
		expected = h.LastOffset() + 1
		p += int64(h.Size())
	}
	return last
}

// checkSegmentIndexes checks that every offset index entry names the start
// of a valid batch with that last offset, and that the time index is in
// order and names offsets of the segment. In the last segment, entries
// past the scanned bytes are left alone: a running broker may have
// written them after the scan read the log.
func checkSegmentIndexes(fsys vfs.FS, dir string, seg scannedSegment, damage []DamageReport, last bool) []IndexProblem {
	inDamage := func(pos int64) bool {
		for _, d := range damage {
			if d.Segment == seg.base && pos >= d.Position && pos < d.End {
				return true
			}
		}
		return false
	}
	var out []IndexProblem
	scannedEnd := int64(0)
	segNext := seg.base
	if n := len(seg.batches); n > 0 {
		b := seg.batches[n-1]
		scannedEnd, segNext = b.position+b.size, b.lastOffset+1
	}
	read := func(suffix string, entrySize int64) (string, []byte, bool) {
		name := segmentFileName(dir, seg.base, suffix)
		st, err := fsys.Stat(name)
		if errors.Is(err, fs.ErrNotExist) {
			out = append(out, IndexProblem{File: name, Entry: -1, Reason: "missing; recovery rebuilds it"})
			return name, nil, false
		}
		if err != nil {
			out = append(out, IndexProblem{File: name, Entry: -1, Reason: err.Error()})
			return name, nil, false
		}
		if st.Size() > maxCheckIndexBytes {
			out = append(out, IndexProblem{File: name, Entry: -1, Reason: fmt.Sprintf("%d bytes, over the %d this check reads", st.Size(), maxCheckIndexBytes)})
			return name, nil, false
		}
		data, err := vfs.ReadFile(fsys, name)
		if err != nil {
			out = append(out, IndexProblem{File: name, Entry: -1, Reason: err.Error()})
			return name, nil, false
		}
		if int64(len(data))%entrySize != 0 {
			out = append(out, IndexProblem{File: name, Entry: -1, Reason: fmt.Sprintf("size %d is not a multiple of %d", len(data), entrySize)})
			data = data[:int64(len(data))/entrySize*entrySize]
		}
		return name, data, true
	}
	// addFor bounds the problems listed for one file.
	addFor := func(name string, counted *int, entry int64, reason string) {
		*counted++
		if *counted <= maxIndexProblemsPerFile {
			out = append(out, IndexProblem{File: name, Entry: entry, Reason: reason})
		}
	}
	if name, data, ok := read(indexSuffix, offsetIndexEntrySize); ok {
		bad := 0
		for i := int64(0); i < int64(len(data))/offsetIndexEntrySize; i++ {
			rel := int64(int32(binary.BigEndian.Uint32(data[i*offsetIndexEntrySize:])))
			pos := int64(int32(binary.BigEndian.Uint32(data[i*offsetIndexEntrySize+4:])))
			if last && pos >= scannedEnd {
				continue
			}
			j, found := slices.BinarySearchFunc(seg.batches, pos, func(b scannedBatch, p int64) int { return cmp.Compare(b.position, p) })
			switch {
			case !found && inDamage(pos):
				addFor(name, &bad, i, fmt.Sprintf("offset %d at position %d: inside the damaged range", seg.base+rel, pos))
			case !found:
				addFor(name, &bad, i, fmt.Sprintf("offset %d at position %d: no valid batch starts there", seg.base+rel, pos))
			case seg.batches[j].lastOffset != seg.base+rel:
				addFor(name, &bad, i, fmt.Sprintf("offset %d at position %d: the batch there ends at offset %d", seg.base+rel, pos, seg.batches[j].lastOffset))
			}
		}
		if bad > maxIndexProblemsPerFile {
			out = append(out, IndexProblem{File: name, Entry: -1, Reason: fmt.Sprintf("and %d more bad entries", bad-maxIndexProblemsPerFile)})
		}
	}
	if name, data, ok := read(timeIndexSuffix, timeIndexEntrySize); ok {
		bad := 0
		lastTs, lastRel := int64(-1<<63), int64(-1)
		for i := int64(0); i < int64(len(data))/timeIndexEntrySize; i++ {
			ts := int64(binary.BigEndian.Uint64(data[i*timeIndexEntrySize:]))
			rel := int64(int32(binary.BigEndian.Uint32(data[i*timeIndexEntrySize+8:])))
			off := seg.base + rel
			switch {
			case ts <= lastTs || rel < lastRel:
				addFor(name, &bad, i, fmt.Sprintf("timestamp %d offset %d out of order", ts, off))
			case rel < 0 || (off >= segNext && !last):
				addFor(name, &bad, i, fmt.Sprintf("timestamp %d offset %d: outside the segment's offsets [%d, %d)", ts, off, seg.base, segNext))
			}
			lastTs, lastRel = ts, rel
		}
		if bad > maxIndexProblemsPerFile {
			out = append(out, IndexProblem{File: name, Entry: -1, Reason: fmt.Sprintf("and %d more bad entries", bad-maxIndexProblemsPerFile)})
		}
	}
	return out
}

// RepairMode is how a repair treats damaged ranges.
type RepairMode int

const (
	// RepairSkip removes every damaged range from its segment; the offsets
	// it held become a gap, and every valid batch keeps its offset.
	RepairSkip RepairMode = iota + 1
	// RepairTruncate cuts the log at the first damaged range: it and
	// everything after it go, and new writes reuse those offsets.
	RepairTruncate
)

func (m RepairMode) String() string {
	switch m {
	case RepairSkip:
		return "skip"
	case RepairTruncate:
		return "truncate"
	}
	return "RepairMode(" + strconv.Itoa(int(m)) + ")"
}

// OffsetRange is a range of offsets; Last is -1 when unknown.
type OffsetRange struct {
	First, Last int64
}

func (r OffsetRange) String() string {
	if r.Last < 0 {
		return fmt.Sprintf("%d to unknown", r.First)
	}
	return fmt.Sprintf("%d to %d", r.First, r.Last)
}

// SegmentRewrite is a segment a skip repair rewrites without its damaged
// ranges.
type SegmentRewrite struct {
	File      string
	KeepBytes int64
	DropBytes int64
	keep      []scannedBatch
}

// RepairPlan says what a repair will do and what it costs, before it does
// it. Execute does it.
type RepairPlan struct {
	TopicPartition TopicPartition
	DataDir        string
	Dir            string
	Mode           RepairMode
	// Damage is every damaged range of the partition, oldest first.
	Damage []DamageReport

	// Truncate: CutFile is cut at CutPosition and DeleteFiles (the later
	// segments, with their indexes and snapshots) go.
	CutFile     string
	CutPosition int64
	DeleteFiles []string

	// Skip: Rewrites are the segments rewritten without their damaged
	// ranges, RemoveFiles the files of segments that hold nothing valid,
	// and NewSegment (-1: none) an empty segment created so the log end
	// offset stays past the damaged offsets.
	Rewrites    []SegmentRewrite
	RemoveFiles []string
	NewSegment  int64

	// Gaps are the offset ranges the repair removes.
	Gaps []OffsetRange
	// RecordsDropped counts the records of valid batches the repair
	// removes: exact.
	RecordsDropped int64
	// DamagedOffsets bounds the records the damaged ranges held (they are
	// lost whatever the mode); -1 when some range's end is unknown.
	DamagedOffsets int64
	// LogEndOffset is the log end offset after the repair.
	LogEndOffset int64
	// ReusedFrom is the first offset new writes will hand out again after
	// the repair (offsets that were used before); -1 when none is reused.
	ReusedFrom int64
}

// PlanRepair checks the partition and plans a repair of its damage in
// mode. It writes nothing; Execute does the work.
func PlanRepair(fsys vfs.FS, dataDir string, tp TopicPartition, mode RepairMode) (RepairPlan, error) {
	if mode != RepairSkip && mode != RepairTruncate {
		return RepairPlan{}, fmt.Errorf("engine: repair mode %v: want skip or truncate", mode)
	}
	dir := dataDir + "/" + tp.String()
	if st, err := fsys.Stat(dir); err != nil || !st.IsDir() {
		return RepairPlan{}, fmt.Errorf("engine: no partition %s in %s", tp, dataDir)
	}
	r, err := CheckPartition(fsys, dir, tp)
	if err != nil {
		return RepairPlan{}, err
	}
	if len(r.PendingSwaps) > 0 {
		return RepairPlan{}, fmt.Errorf("%w in %s (%s): start and stop the broker once, so recovery completes it, then check again", ErrSwapPending, dir, strings.Join(r.PendingSwaps, ", "))
	}
	if !r.Damaged() {
		return RepairPlan{}, fmt.Errorf("%w: %s (%d segments, %d batches checked)", ErrNoDamage, tp, r.Segments, r.Batches)
	}
	p := RepairPlan{TopicPartition: tp, DataDir: dataDir, Dir: dir, Mode: mode, Damage: r.Damage, NewSegment: -1, ReusedFrom: -1}
	p.DamagedOffsets = 0
	for _, d := range r.Damage {
		n := d.Offsets()
		if n != 0 {
			p.Gaps = append(p.Gaps, OffsetRange{First: d.FirstOffset, Last: d.LastOffset})
		}
		if n < 0 || p.DamagedOffsets < 0 {
			p.DamagedOffsets = -1
		} else {
			p.DamagedOffsets += n
		}
	}
	lastSeg := r.segments[len(r.segments)-1]
	segEnd := func(s scannedSegment) int64 {
		if n := len(s.batches); n > 0 {
			return s.batches[n-1].lastOffset + 1
		}
		return s.base
	}
	switch mode {
	case RepairTruncate:
		first := r.Damage[0]
		p.CutFile, p.CutPosition = first.File, first.Position
		for _, s := range r.segments {
			if s.base > first.Segment {
				for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, snapshotSuffix} {
					p.DeleteFiles = append(p.DeleteFiles, segmentFileName(dir, s.base, suffix))
				}
			}
		}
		p.RecordsDropped = first.RecordsAfter
		p.LogEndOffset = first.FirstOffset
		p.ReusedFrom = first.FirstOffset
		// The gap is everything from the damage on: what the partition
		// held up to its last offset.
		end := max(r.LastOffset, first.LastOffset)
		for _, d := range r.Damage {
			end = max(end, d.LastOffset)
		}
		if first.LastOffset < 0 && r.LastOffset < first.FirstOffset {
			end = -1
		}
		p.Gaps = []OffsetRange{{First: first.FirstOffset, Last: end}}
	case RepairSkip:
		for _, s := range r.segments {
			var ds []DamageReport
			for _, d := range r.Damage {
				if d.Segment == s.base {
					ds = append(ds, d)
				}
			}
			if len(ds) == 0 {
				continue
			}
			if len(s.batches) == 0 {
				for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
					p.RemoveFiles = append(p.RemoveFiles, segmentFileName(dir, s.base, suffix))
				}
				continue
			}
			var kept int64
			for _, b := range s.batches {
				kept += b.size
			}
			p.Rewrites = append(p.Rewrites, SegmentRewrite{File: s.file, KeepBytes: kept, DropBytes: s.size - kept, keep: s.batches})
		}
		p.LogEndOffset = segEnd(lastSeg)
		// Damage that runs to the end of the last segment held the
		// partition's last offsets: a new segment after them keeps new
		// writes off them, when they are known.
		for _, d := range r.Damage {
			if d.Segment != lastSeg.base || d.End != lastSeg.size {
				continue
			}
			if d.LastOffset >= d.FirstOffset {
				p.NewSegment = d.LastOffset + 1
				p.LogEndOffset = p.NewSegment
			} else {
				p.ReusedFrom = d.FirstOffset
			}
		}
		if p.NewSegment < 0 && len(lastSeg.batches) == 0 && slices.Contains(p.RemoveFiles, lastSeg.file) {
			// The last segment goes whole and nothing says how far it
			// reached: the log ends where the segment before it does.
			p.LogEndOffset = lastSeg.base
			if i := len(r.segments) - 2; i >= 0 {
				p.LogEndOffset = segEnd(r.segments[i])
			}
		}
	}
	return p, nil
}

// Describe says what the plan does and costs, one sentence a line.
func (p *RepairPlan) Describe() []string {
	var out []string
	for _, d := range p.Damage {
		out = append(out, "damaged: "+d.Damage.String())
	}
	switch p.Mode {
	case RepairTruncate:
		out = append(out, fmt.Sprintf("cut %s at byte %d", p.CutFile, p.CutPosition))
		for _, f := range p.DeleteFiles {
			if strings.HasSuffix(f, logSuffix) {
				out = append(out, "delete segment "+f+" with its indexes and producer snapshot")
			}
		}
		out = append(out, fmt.Sprintf("remove offsets %s; the log end offset becomes %d", p.Gaps[0], p.LogEndOffset))
	case RepairSkip:
		for _, rw := range p.Rewrites {
			out = append(out, fmt.Sprintf("rewrite %s without its damaged bytes: keep %d bytes, drop %d", rw.File, rw.KeepBytes, rw.DropBytes))
		}
		for _, f := range p.RemoveFiles {
			if strings.HasSuffix(f, logSuffix) {
				out = append(out, "delete segment "+f+" with its indexes: nothing in it is valid")
			}
		}
		if p.NewSegment >= 0 {
			out = append(out, fmt.Sprintf("start a new segment at offset %d, so no offset the damaged range held is handed out again", p.NewSegment))
		}
		for _, g := range p.Gaps {
			out = append(out, fmt.Sprintf("offsets %s become a gap; every other record keeps its offset", g))
		}
	}
	out = append(out, fmt.Sprintf("records dropped: %s", p.DroppedSummary()))
	if p.ReusedFrom >= 0 {
		out = append(out, fmt.Sprintf("new writes will reuse offsets from %d on: a consumer that read them before will see different records there", p.ReusedFrom))
	}
	out = append(out, "indexes of the rewritten segments are rebuilt, and the partition comes back online, at the next broker start")
	return out
}

// DroppedSummary says how many records the repair drops: exact for valid
// batches, a bound or "unknown" for the damaged ranges.
func (p *RepairPlan) DroppedSummary() string {
	damaged := "an unknown number"
	if p.DamagedOffsets >= 0 {
		damaged = fmt.Sprintf("at most %d", p.DamagedOffsets)
	}
	if p.RecordsDropped == 0 {
		return fmt.Sprintf("%s in the damaged ranges; no valid record", damaged)
	}
	return fmt.Sprintf("%d valid records after the damage, plus %s in the damaged ranges", p.RecordsDropped, damaged)
}

// Execute carries out the plan. It takes the data directory's lock, so it
// refuses to run beside a broker, checks that the partition is as planned,
// and orders its writes so that a crash leaves the partition either as it
// was (still listed as damaged, and a second run finishes the work) or
// repaired. The damaged-segments listing goes last.
func (p *RepairPlan) Execute(fsys vfs.FS) error {
	lock, err := fsys.Lock(p.DataDir + "/" + lockFile)
	if err != nil {
		if errors.Is(err, vfs.ErrLocked) {
			return fmt.Errorf("engine: data directory %s is in use (is the broker running? stop it first): %w", p.DataDir, err)
		}
		return fmt.Errorf("engine: data directory %s: cannot take its lock: %w", p.DataDir, err)
	}
	defer lock.Close()
	fresh, err := PlanRepair(fsys, p.DataDir, p.TopicPartition, p.Mode)
	if err != nil {
		return err
	}
	if !samePlan(&fresh, p) {
		return fmt.Errorf("%w: %s; plan the repair again", ErrRepairPlanStale, p.TopicPartition)
	}
	switch p.Mode {
	case RepairTruncate:
		err = fresh.executeTruncate(fsys)
	case RepairSkip:
		err = fresh.executeSkip(fsys)
	}
	if err != nil {
		return fmt.Errorf("engine: repair %s: %w", p.TopicPartition, err)
	}
	if err := clearDamagedSegments(fsys, p.Dir); err != nil {
		return fmt.Errorf("engine: repair %s: %w", p.TopicPartition, err)
	}
	return nil
}

func samePlan(a, b *RepairPlan) bool {
	if len(a.Damage) != len(b.Damage) || a.CutFile != b.CutFile || a.CutPosition != b.CutPosition ||
		a.NewSegment != b.NewSegment || !slices.Equal(a.DeleteFiles, b.DeleteFiles) || !slices.Equal(a.RemoveFiles, b.RemoveFiles) ||
		len(a.Rewrites) != len(b.Rewrites) || a.RecordsDropped != b.RecordsDropped {
		return false
	}
	for i := range a.Damage {
		x, y := a.Damage[i].Damage, b.Damage[i].Damage
		if x.File != y.File || x.Position != y.Position || x.End != y.End || x.FirstOffset != y.FirstOffset || x.LastOffset != y.LastOffset {
			return false
		}
	}
	for i := range a.Rewrites {
		if a.Rewrites[i].File != b.Rewrites[i].File || a.Rewrites[i].KeepBytes != b.Rewrites[i].KeepBytes {
			return false
		}
	}
	return true
}

func removeIfExists(fsys vfs.FS, name string) error {
	if err := fsys.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// executeTruncate cuts the log as Log.TruncateTo does: later segments go
// first, durably, so no crash brings them back beside a cut segment (which
// recovery would then take for a skip); the cut segment's indexes go
// before its bytes do; the listing stays until the end, so a crash in
// between leaves a partition recovery still keeps offline.
func (p *RepairPlan) executeTruncate(fsys vfs.FS) error {
	for i := len(p.DeleteFiles) - 1; i >= 0; i-- {
		if err := removeIfExists(fsys, p.DeleteFiles[i]); err != nil {
			return err
		}
	}
	if err := fsys.SyncDir(p.Dir); err != nil {
		return err
	}
	base := strings.TrimSuffix(p.CutFile, logSuffix)
	for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
		if err := removeIfExists(fsys, base+suffix); err != nil {
			return err
		}
	}
	if err := fsys.SyncDir(p.Dir); err != nil {
		return err
	}
	f, err := fsys.OpenReadWrite(p.CutFile)
	if err != nil {
		return err
	}
	if err := f.Truncate(p.CutPosition); err != nil {
		f.Close()
		return err
	}
	if err := f.SyncData(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	// Producer snapshots and leader epochs past the new end describe
	// records that are gone. Recovery would drop them too; doing it here
	// leaves nothing stale for a tool that reads the files.
	snaps, err := snapshotOffsets(fsys, p.Dir)
	if err != nil {
		return err
	}
	removed := false
	for _, s := range snaps {
		if s > p.LogEndOffset {
			if err := removeIfExists(fsys, segmentFileName(p.Dir, s, snapshotSuffix)); err != nil {
				return err
			}
			removed = true
		}
	}
	if removed {
		if err := fsys.SyncDir(p.Dir); err != nil {
			return err
		}
	}
	if epochs, err := loadEpochCache(&fileDir{fs: fsys, dir: p.Dir}); err == nil && epochs.truncateFromEnd(p.LogEndOffset) {
		if err := epochs.flush(); err != nil {
			return err
		}
	}
	return nil
}

// executeSkip rewrites each damaged segment through the log cleaner's swap
// protocol (cleaner_recover.go): the valid batches are copied, each
// CRC-checked again as it is read, into "<base>.log.cleaned", which is
// synced and renamed to "<base>.log.swap"; once that name is durable the
// swap is committed and recovery completes it if a crash comes first. The
// segment's indexes go before the .swap takes the segment's name
// (recovery rebuilds them).
func (p *RepairPlan) executeSkip(fsys vfs.FS) error {
	if p.NewSegment >= 0 {
		// First, so that from here on the damaged range is never at the end
		// of the log, where its offsets could be handed out again.
		f, err := fsys.Create(segmentFileName(p.Dir, p.NewSegment, logSuffix))
		if err != nil {
			return err
		}
		if err := errors.Join(f.Sync(), f.Close()); err != nil {
			return err
		}
		if err := fsys.SyncDir(p.Dir); err != nil {
			return err
		}
	}
	for _, rw := range p.Rewrites {
		if err := rewriteSegment(fsys, p.Dir, rw); err != nil {
			return err
		}
	}
	if len(p.RemoveFiles) > 0 {
		// Index files after their .log, as the orphan rule of recovery
		// would delete them anyway.
		for _, f := range p.RemoveFiles {
			if err := removeIfExists(fsys, f); err != nil {
				return err
			}
		}
		if err := fsys.SyncDir(p.Dir); err != nil {
			return err
		}
	}
	return nil
}

func rewriteSegment(fsys vfs.FS, dir string, rw SegmentRewrite) error {
	base := strings.TrimSuffix(rw.File, logSuffix)
	src, err := fsys.Open(rw.File)
	if err != nil {
		return err
	}
	defer src.Close()
	size, err := src.Size()
	if err != nil {
		return err
	}
	tmpName := rw.File + cleanedSuffix
	dst, err := fsys.Create(tmpName)
	if err != nil {
		return err
	}
	var buf []byte
	var out int64
	for _, b := range rw.keep {
		h, data, err := readBatchAt(src, b.position, size, &buf)
		if err != nil || h.BaseOffset != b.baseOffset || h.LastOffset() != b.lastOffset {
			dst.Close()
			return fmt.Errorf("%s: the batch at %d no longer reads as planned (%v)", rw.File, b.position, err)
		}
		if _, err := dst.WriteAt(data, out); err != nil {
			dst.Close()
			return err
		}
		out += int64(len(data))
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		return err
	}
	if err := dst.Close(); err != nil {
		return err
	}
	swapName := rw.File + swapSuffix
	if err := fsys.Rename(tmpName, swapName); err != nil {
		return err
	}
	if err := fsys.SyncDir(dir); err != nil {
		return err
	}
	for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
		if err := removeIfExists(fsys, base+suffix); err != nil {
			return err
		}
	}
	if err := fsys.Rename(swapName, rw.File); err != nil {
		return err
	}
	return fsys.SyncDir(dir)
}
