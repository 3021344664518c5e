package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
	"github.com/wren-broker/wren/wal"
)

// OpenOptions carry what the log directory's checkpoints say about one log.
type OpenOptions struct {
	// RecoveryPoint: every segment wholly below the one holding it was
	// flushed with its indexes; recovery scans from that segment on.
	RecoveryPoint int64
	// LogStartOffset from log-start-offset-checkpoint (DeleteRecords).
	LogStartOffset int64
	health         *dirHealth
	// dirListed: the directory was just seen in its parent's listing, so
	// Open need not look it up to create it.
	dirListed bool
	// afterCleanStop: the directory's clean-shutdown marker was there, so
	// the load stamps the log (Log.loaded) and summary, if set, is its
	// part of the clean-stop summary, used when the stamps match (doc.go,
	// "Clean restarts").
	afterCleanStop bool
	summary        *partitionSummary
}

// RecoveryStats say what Open found and repaired.
type RecoveryStats struct {
	SegmentsScanned  int
	IndexesRebuilt   int
	TruncatedBytes   int64
	SegmentsDeleted  int
	BatchesRecovered int64
	// FirstCorruptError is the first torn tail cut (with its file and
	// position), if any.
	FirstCorruptError error
	// Damage lists media damage found: ranges left in place, that take the
	// partition offline until repaired.
	Damage []Damage
	// ProducerBatchesReplayed counts the batches replayed on top of the
	// newest producer snapshot (or from the start, with none).
	ProducerBatchesReplayed int64
	// ProducerSnapshotOffset is the snapshot the producer state started
	// from, or -1 when it was rebuilt from the log alone.
	ProducerSnapshotOffset int64
	// Duration is the time Open took.
	Duration time.Duration
	// FromSummary: the leader epochs and the producer snapshot came from
	// the clean-stop summary, not from the partition's files.
	FromSummary bool
}

// Changed says whether recovery did anything worth an operator's notice.
func (s *RecoveryStats) Changed() bool {
	return s.IndexesRebuilt > 0 || s.TruncatedBytes > 0 || s.SegmentsDeleted > 0 || len(s.Damage) > 0
}

// Open opens (or creates) the log in dir and recovers it: segments at and
// after the recovery point (and any listed in DamagedSegmentsFile) are
// scanned batch by batch with CRC checks, and missing or inconsistent
// indexes are rebuilt. Only a torn tail is cut: bad bytes at the end of the
// last segment, above the recovery point, with no valid batch after them.
// Any other bad batch is media damage: it stays on disk as it is, the log
// opens with it listed in Damage, refuses appends and serves reads only
// below it. Everything the recovered log holds is fdatasynced before Open
// returns, so the log end offset it reports is durable.
func Open(fsys vfs.FS, dir string, tp TopicPartition, opts Options, oo OpenOptions) (*Log, *RecoveryStats, error) {
	if err := opts.validate(); err != nil {
		return nil, nil, err
	}
	health := oo.health
	if health == nil {
		health = &dirHealth{}
	}
	if !oo.dirListed {
		if err := ensureDir(fsys, dir); err != nil {
			return nil, nil, err
		}
	}
	started := time.Now()
	l := &Log{fileDir: &fileDir{c: health.handles, fs: fsys, dir: dir}, tp: tp, clock: opts.Now, health: health}
	l.setOptionsLocked(health.options.get(tp.Topic, opts))
	stats := &RecoveryStats{ProducerSnapshotOffset: -1}
	// The directory is listed once: the segments, the snapshots and which
	// of the checkpoint files exist all come from this listing, so a file
	// that is not there costs no lookup (a start loads every partition).
	names, err := l.fs.List(l.dir)
	if err != nil {
		return nil, nil, err
	}
	// After a clean stop the directory and its last segment are stamped
	// before anything else: they are what the clean-stop summary is
	// checked against, and what the next Close compares.
	var stamp logStamp
	stamped := false
	var sum *partitionSummary
	if oo.afterCleanStop {
		if last, ok := lastSegmentBase(names); ok {
			var serr error
			stamp, stamped, serr = stampLog(fsys, dir, last)
			stamped = stamped && serr == nil
		}
		if stamped && oo.summary != nil && oo.summary.matches(stamp, oo) {
			sum = oo.summary
		}
	}
	epochs, err := &epochCache{at: l.fileDir, onDiskKnown: true}, error(nil)
	switch {
	case sum != nil:
		// The file holds these entries: it was not replaced since the
		// stop that wrote them into the summary (the directory's stamp).
		epochs.entries = slices.Clone(sum.Epochs)
		epochs.setOnDisk()
	case slices.Contains(names, LeaderEpochCheckpointFile):
		epochs, err = loadEpochCache(l.fileDir)
	}
	if isOutOfFiles(err) {
		// Not a damaged file: the load is retried (load.go).
		return nil, nil, err
	}
	if err != nil {
		// The epoch cache can be rebuilt from the batches' stamped epochs.
		epochs = &epochCache{at: l.fileDir}
		oo.RecoveryPoint = 0
	}
	l.epochs = epochs
	names, err = l.loadSegments(names, oo.RecoveryPoint, oo.LogStartOffset, stats)
	if err != nil {
		l.closeAll()
		return nil, nil, err
	}
	l.setLogStartOffsetLocked(max(oo.LogStartOffset, l.segments[0].baseOffset))
	if len(l.damage) > 0 {
		// The checkpoint keeps vouching for what it vouched for: a damaged
		// log's recovery point never moves down to the damage, where a
		// later recovery could take the damage for a torn tail.
		l.heldRecoveryPoint.Store(oo.RecoveryPoint)
	}
	wrote := false
	if l.logStartOffset > l.logEndOffset && len(l.damage) == 0 {
		if err := l.truncateFullyAndStartAtLocked(l.logStartOffset); err != nil {
			l.closeAll()
			return nil, nil, err
		}
		names = nil // the directory changed: the snapshots are listed again
		wrote = true
	}
	used, err := l.loadProducerStateSummary(names, stats, sum)
	if err != nil {
		l.closeAll()
		return nil, nil, err
	}
	// Drop epochs whose first batch lies past the log end: a crash lost
	// those batches. An epoch starting exactly at the log end stays, unlike
	// Kafka's loader (which drops it, and re-adds it when the replica
	// leads again): it says "epoch E leads from here and has written
	// nothing", the state AssignLeaderEpoch leaves on every leader before
	// its first append, so keeping it restores a state the running log was
	// in, and spares an idle partition two checkpoint rewrites (four
	// fsyncs) at every start.
	changed := l.epochs.truncateFromEnd(l.logEndOffset + 1)
	changed = l.epochs.truncateFromStart(l.logStartOffset) || changed
	if changed {
		if err := l.epochs.flush(); err != nil {
			l.closeAll()
			return nil, nil, err
		}
		wrote = true
	}
	// Whatever is in the files now may be only in the page cache (a
	// process crash, not a power loss): sync before calling it durable.
	// A log that needed no scan ends at its recovery point, and everything
	// below the recovery point was fdatasynced before the checkpoint
	// naming it was written, so its sync is skipped: one fewer disk cache
	// flush per partition at every start.
	if stats.SegmentsScanned > 0 || l.logEndOffset != oo.RecoveryPoint {
		if err := l.active().log.SyncData(); err != nil {
			l.closeAll()
			return nil, nil, err
		}
		wrote = true
	}
	if stamped && !wrote && !used.removed && !stats.Changed() && len(l.damage) == 0 && l.active().baseOffset == stamp.LastBase {
		l.loaded = &loadedState{stamp: stamp, snapshotOffset: used.offset, snapshot: used.data}
	}
	if sum != nil {
		stats.FromSummary = true
	}
	l.lastFlushMs = l.nowMs()
	l.commit = wal.NewGroupCommitter(l.logEndOffset, l.syncActive)
	stats.Damage = slices.Clone(l.damage)
	stats.Duration = time.Since(started)
	return l, stats, nil
}

// loadedClean reads loadClean's answer: a shortage of descriptors is an
// error to return, not an index to rebuild.
func loadedClean(err error) (bool, error) {
	if err != nil && isTooManyOpenFiles(err) {
		return false, err
	}
	return err == nil, nil
}

func (l *Log) closeAll() {
	l.dropDirWorkLocked()
	for _, s := range l.segments {
		s.closeFiles()
	}
	l.segments = nil
}

// ensureDir creates dir durably if it is missing: the directory and every
// ancestor it had to create are fsynced into their parents.
func ensureDir(fsys vfs.FS, dir string) error {
	var missing []string
	for d := dir; ; {
		_, err := fsys.Stat(d)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		parent := parentDir(d)
		if parent == d {
			break
		}
		d = parent
	}
	if len(missing) == 0 {
		return nil
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := fsys.SyncDir(parentDir(missing[i])); err != nil {
			return err
		}
	}
	return nil
}

func parentDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	switch {
	case i > 0:
		return p[:i]
	case i == 0:
		return "/"
	}
	return "."
}

// loadSegments opens every segment in the directory, whose entries are
// names, and recovers those from the one holding recoveryPoint on. It
// returns the entries as they are afterwards as far as snapshots go: a
// completed swap lists the directory again, the removal of orphans
// (which are never snapshots) does not.
func (l *Log) loadSegments(names []string, recoveryPoint, logStartOffset int64, stats *RecoveryStats) ([]string, error) {
	var err error
	// Hook for the log cleaner: an interrupted segment swap is completed
	// first, Kafka's rule (cleaner_recover.go); its .cleaned files are
	// then left for the orphan rule below.
	if names, err = l.completeSwaps(names); err != nil {
		return nil, err
	}
	var bases []int64
	hasLog := map[int64]bool{}
	var orphans []string
	for _, name := range names {
		switch {
		case strings.HasSuffix(name, ".tmp"), strings.HasSuffix(name, deletedSuffix),
			strings.HasSuffix(name, cleanedSuffix), strings.HasSuffix(name, swapSuffix):
			orphans = append(orphans, name)
		case strings.HasSuffix(name, logSuffix):
			base, ok := parseBase(name, logSuffix)
			if !ok {
				continue
			}
			bases = append(bases, base)
			hasLog[base] = true
		}
	}
	for _, name := range names {
		for _, suffix := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix} {
			if base, ok := parseBase(name, suffix); ok && !hasLog[base] {
				orphans = append(orphans, name)
			}
		}
	}
	for _, name := range orphans {
		if err := l.fs.Remove(l.dir + "/" + name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if len(orphans) > 0 {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return nil, err
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })

	// Segments where damage was seen before are scanned whatever the
	// recovery point says, and damage in them is never a torn tail.
	var listed map[int64]bool
	listedAll := false
	if slices.Contains(names, DamagedSegmentsFile) {
		if listed, listedAll, err = readDamagedSegments(l.fs, l.dir); err != nil {
			return nil, err
		}
	}
	// The first segment to scan is the one holding the recovery point.
	firstUnflushed := 0
	for i, b := range bases {
		if b <= recoveryPoint {
			firstUnflushed = i
		}
	}
	next := int64(-1)
	for i, base := range bases {
		seg, err := openSegmentHandles(l.fileDir, base, l.opts, false)
		if err != nil {
			return nil, err
		}
		if base < next {
			// Overlaps the previous segment: left behind by an interrupted
			// operation. The earlier segment wins.
			seg.closeFiles()
			if err := seg.removeFiles(l.fs, l.dir); err != nil {
				return nil, err
			}
			stats.SegmentsDeleted++
			continue
		}
		l.segments = append(l.segments, seg)
		// A missing index file is rebuilt by a scan.
		present := slices.Contains(names, fmt.Sprintf("%020d%s", base, indexSuffix)) &&
			slices.Contains(names, fmt.Sprintf("%020d%s", base, timeIndexSuffix))
		forced := listedAll || listed[base]
		if !present && !forced {
			// An empty .log without its index files is what a segment
			// creation cut short leaves (out of file descriptors between
			// its files, say): there is nothing to index, and opening it
			// made the missing files, empty. The clean-load checks below
			// decide as for any empty segment, without a scan and its
			// syncs, which thousands of such partitions paid at every
			// start.
			if size, err := seg.log.Size(); err == nil && size == 0 {
				present = true
			}
		}
		clean := false
		if !present || forced {
			clean = false
		} else if i < firstUnflushed {
			clean, err = loadedClean(seg.loadCleanOnDisk(l.fs, l.opts, -1))
		} else if i == firstUnflushed && recoveryPoint >= base {
			// With recoveryPoint == base (an empty active segment, as a
			// clean stop leaves an idle partition) loadClean passes only
			// if the segment and its indexes are empty; anything in it
			// fails the end check and is scanned.
			clean, err = loadedClean(seg.loadCleanOnDisk(l.fs, l.opts, recoveryPoint))
		}
		if err != nil {
			return nil, err
		}
		if !clean {
			stats.SegmentsScanned++
			// Only the last segment can have an unsynced tail: a roll
			// syncs the segment it closes before the next one exists.
			if err := l.recoverSegment(seg, stats, i == len(bases)-1, forced, recoveryPoint); err != nil {
				return nil, err
			}
		}
		// Damage that runs to the end of a segment held offsets up to the
		// next segment's base offset.
		if i+1 < len(bases) {
			for j := range l.damage {
				if d := &l.damage[j]; d.Segment == base && d.LastOffset < 0 && bases[i+1] > d.FirstOffset {
					d.LastOffset = bases[i+1] - 1
				}
			}
		}
		next = seg.nextOffset
	}
	if len(l.segments) == 0 {
		seg, err := createSegment(l.fileDir, max(logStartOffset, 0), l.opts)
		if err != nil {
			return nil, err
		}
		if err := l.fs.SyncDir(l.dir); err != nil {
			seg.closeFiles()
			return nil, err
		}
		l.segments = []*segment{seg}
	}
	l.setLogEndOffsetLocked(l.active().nextOffset)
	if len(l.damage) > 0 {
		if err := writeDamagedSegments(l.fs, l.dir, l.damage); err != nil {
			return nil, err
		}
	} else if listedAll || len(listed) > 0 {
		if err := clearDamagedSegments(l.fs, l.dir); err != nil {
			return nil, err
		}
	}
	return names, nil
}

func parseBase(name, suffix string) (int64, bool) {
	if !strings.HasSuffix(name, suffix) || len(name) != 20+len(suffix) {
		return 0, false
	}
	b, err := strconv.ParseInt(name[:20], 10, 64)
	return b, err == nil && b >= 0
}

// loadClean trusts a flushed segment: its indexes pass a sanity check and
// the batches after the last offset index entry end exactly at the end of
// the file. With wantNext >= 0 the segment must also end at that offset
// (the recovery point, for the segment that holds it).
func (s *segment) loadClean(opts *Options, wantNext int64) error {
	size, err := s.log.Size()
	if err != nil {
		return err
	}
	return s.loadCleanSized(opts, wantNext, size, -1, -1)
}

// loadCleanOnDisk is loadClean of a segment loaded from its directory,
// whose files are not open: the sizes come from a stat of each file's
// name, and an index file opens only if it has entries to check. An idle
// partition's segment then costs three stats, not three opens (which
// would also fill the open-file cache with files nobody reads); its files
// open on first use.
func (s *segment) loadCleanOnDisk(fsys vfs.FS, opts *Options, wantNext int64) error {
	var sizes [3]int64
	for i, h := range s.handles() {
		st, err := fsys.Stat(h.name())
		switch {
		case i > 0 && errors.Is(err, fs.ErrNotExist):
			// A missing index file (of an empty segment whose creation
			// was cut short) is made, empty, by its open, as before.
			sizes[i] = -1
		case err != nil:
			return err
		default:
			sizes[i] = st.Size()
		}
	}
	return s.loadCleanSized(opts, wantNext, sizes[0], sizes[1], sizes[2])
}

// loadCleanSized is loadClean given the log's size and, when not -1, the
// index files' sizes.
func (s *segment) loadCleanSized(opts *Options, wantNext, size, indexSize, timeIndexSize int64) error {
	s.size.Store(size)
	if err := s.checkIndexes(size, indexSize, timeIndexSize); err != nil {
		return err
	}
	if err := s.rescanTail(opts); err != nil {
		return err
	}
	if wantNext >= 0 && s.nextOffset != wantNext {
		return fmt.Errorf("%w: %s ends at %d, recovery point %d", ErrCorruptIndex, s.log.Name(), s.nextOffset, wantNext)
	}
	return s.checkLastIndexEntries(size)
}

// checkLastIndexEntries checks the newest entry of each index against the
// log: index files are written before the log bytes they describe are
// synced, so after a crash an index may name a batch the log lost.
func (s *segment) checkLastIndexEntries(size int64) error {
	if s.offsetIndex.entries() > 0 {
		ip, err := s.offsetIndex.lookup(s.offsetIndex.lastOffset)
		if err != nil {
			return err
		}
		bp, ok, err := s.translateOffset(s.offsetIndex.lastOffset, ip.Position, size)
		if err != nil || !ok || bp.Position != ip.Position || bp.LastOffset != s.offsetIndex.lastOffset {
			return fmt.Errorf("%w: %s: last offset index entry %d at %d names no batch", ErrCorruptIndex, s.offsetIndex.f.Name(), s.offsetIndex.lastOffset, ip.Position)
		}
	}
	if s.timeIndex.entries() > 0 {
		off, ts := s.timeIndex.lastOffset, s.timeIndex.lastTimestamp
		bp, ok, err := s.lookupPosition(off, size)
		if err != nil || !ok || bp.LastOffset != off || bp.MaxTimestamp != ts {
			return fmt.Errorf("%w: %s: last time index entry (%d, %d) names no batch", ErrCorruptIndex, s.timeIndex.f.Name(), ts, off)
		}
	}
	return nil
}

// checkIndexes reads both index files whole and checks every entry: sizes
// in whole entries, offsets and positions increasing and inside the log.
// An index whose size is known to be 0 (indexSize, timeIndexSize; -1 when
// not known) has nothing to read, and is not opened.
func (s *segment) checkIndexes(logSize, indexSize, timeIndexSize int64) error {
	buf, n, err := []byte(nil), int64(0), error(nil)
	if indexSize != 0 {
		buf, n, err = loadEntries(s.offsetIndex.f, offsetIndexEntrySize)
	}
	if err != nil {
		return err
	}
	if n > s.offsetIndex.maxEntries {
		return fmt.Errorf("%w: %s has %d entries, more than %d", ErrCorruptIndex, s.offsetIndex.f.Name(), n, s.offsetIndex.maxEntries)
	}
	lastRel, lastPos := int64(-1), int64(-1)
	for i := int64(0); i < n; i++ {
		rel := int64(int32(binary.BigEndian.Uint32(buf[i*8:])))
		pos := int64(int32(binary.BigEndian.Uint32(buf[i*8+4:])))
		if rel <= lastRel || pos <= lastPos || pos >= logSize || rel < 0 {
			return fmt.Errorf("%w: %s entry %d (offset %d position %d) out of order or past the log", ErrCorruptIndex, s.offsetIndex.f.Name(), i, s.baseOffset+rel, pos)
		}
		lastRel, lastPos = rel, pos
	}
	s.offsetIndex.n.Store(n)
	if n > 0 {
		s.offsetIndex.lastOffset = s.baseOffset + lastRel
	}
	tbuf, tn := []byte(nil), int64(0)
	if timeIndexSize != 0 {
		tbuf, tn, err = loadEntries(s.timeIndex.f, timeIndexEntrySize)
	}
	if err != nil {
		return err
	}
	if tn > s.timeIndex.maxEntries {
		return fmt.Errorf("%w: %s has %d entries, more than %d", ErrCorruptIndex, s.timeIndex.f.Name(), tn, s.timeIndex.maxEntries)
	}
	lastTs, lastOff := int64(-1<<63), int64(-1)
	for i := int64(0); i < tn; i++ {
		ts := int64(binary.BigEndian.Uint64(tbuf[i*12:]))
		rel := int64(int32(binary.BigEndian.Uint32(tbuf[i*12+8:])))
		if ts <= lastTs || rel < lastOff || rel < 0 {
			return fmt.Errorf("%w: %s entry %d out of order", ErrCorruptIndex, s.timeIndex.f.Name(), i)
		}
		lastTs, lastOff = ts, rel
	}
	s.timeIndex.n.Store(tn)
	if tn > 0 {
		s.timeIndex.lastTimestamp, s.timeIndex.lastOffset = lastTs, s.baseOffset+lastOff
	}
	return nil
}

// recoverSegment rebuilds a segment's indexes by scanning its batches with
// CRC checks. A bad batch is a torn tail, cut with everything after it,
// only in the last segment, when not listed as damaged,
// it holds offsets at or above the recovery point, and no valid batch
// follows it. Anything else is
// damage: recorded in l.damage and left on disk, and the scan goes on at
// the next valid batch.
func (l *Log) recoverSegment(s *segment, stats *RecoveryStats, last, listed bool, recoveryPoint int64) error {
	tornTailPossible := last && !listed
	// A scan rewrites the indexes and syncs them: its files stay open
	// until it is done.
	if err := s.pinAll(); err != nil {
		return err
	}
	defer s.unpinAll()
	size, err := s.log.Size()
	if err != nil {
		return err
	}
	for _, x := range []*index{&s.offsetIndex.index, &s.timeIndex.index} {
		if err := x.truncateEntries(0); err != nil {
			return err
		}
	}
	stats.IndexesRebuilt++
	s.offsetIndex.lastOffset = s.baseOffset
	s.timeIndex.lastTimestamp, s.timeIndex.lastOffset = noTimestamp, s.baseOffset
	s.size.Store(0)
	s.nextOffset, s.maxTimestamp, s.offsetOfMaxTimestamp = s.baseOffset, noTimestamp, s.baseOffset
	s.rollingBasedTimestamp, s.bytesSinceIndexEntry = noTimestamp, 0

	// The buffer grows to the largest batch met (readBatchAt); starting
	// small keeps a scan of an empty or nearly empty segment cheap, which
	// matters with several partitions loading at once in a small cgroup.
	var buf []byte
	var pos int64
	var torn error
	for pos < size {
		h, _, err := readBatchAt(s.log, pos, size, &buf)
		if err == nil {
			err = misplaced(h, pos, s.baseOffset, s.nextOffset)
		}
		if err != nil {
			unsynced := tornTailPossible && s.nextOffset >= recoveryPoint
			// A read error while looking further counts as "nothing valid
			// follows": the damage then runs to the end of the file. Even
			// a batch that runs past the end of the file may be a damaged
			// length field with valid batches after it.
			q, nh, found, _ := nextValidBatch(s.log, pos, size, s.baseOffset, s.nextOffset)
			if unsynced && !found {
				torn = err
				break
			}
			d := Damage{
				TopicPartition: l.tp, Segment: s.baseOffset, File: s.log.Name(),
				Position: pos, End: size, FirstOffset: s.nextOffset, LastOffset: -1,
				Reason: err.Error(), FoundBy: "recovery",
			}
			if found {
				d.End, d.LastOffset = q, nh.BaseOffset-1
			} else if last && recoveryPoint > s.nextOffset {
				// The last segment: the recovery point says how far the
				// damaged range reached.
				d.LastOffset = recoveryPoint - 1
			}
			l.damage = append(l.damage, d)
			if !found {
				break
			}
			pos = q
			continue
		}
		if err := s.indexBatches([]batch.Header{h}, pos, l.opts); err != nil {
			return err
		}
		l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset)
		pos += int64(h.Size())
		s.size.Store(pos)
		stats.BatchesRecovered++
	}
	// The rebuilt indexes are durable before any truncation of the log is,
	// so no crash leaves them naming batches the log no longer has.
	if err := s.offsetIndex.f.Sync(); err != nil {
		return err
	}
	if err := s.timeIndex.f.Sync(); err != nil {
		return err
	}
	if torn != nil {
		stats.TruncatedBytes += size - pos
		if stats.FirstCorruptError == nil {
			stats.FirstCorruptError = fmt.Errorf("%s at %d: %w", s.log.Name(), pos, torn)
		}
		if err := s.log.Truncate(pos); err != nil {
			return err
		}
		if err := s.log.SyncData(); err != nil {
			return err
		}
	}
	return nil
}

// misplaced says why a batch whose CRC holds cannot sit at pos in the
// segment based at base, where the batch before it ended below next: its
// offsets go backwards, or reach past what the segment's index entries
// (offsets relative to base, in 32 bits) can name. Only damage or a
// foreign file puts such a batch in a segment.
func misplaced(h batch.Header, pos, base, next int64) error {
	switch {
	case h.BaseOffset < next:
		return fmt.Errorf("%w: batch at %d has offset %d, expected at least %d", batch.ErrCorrupt, pos, h.BaseOffset, next)
	case h.LastOffsetDelta < 0:
		return fmt.Errorf("%w: batch at %d has a negative last offset delta %d", batch.ErrCorrupt, pos, h.LastOffsetDelta)
	case h.BaseOffset-base > math.MaxInt32-int64(h.LastOffsetDelta):
		return fmt.Errorf("%w: batch at %d has offsets %d+%d, past the reach of segment %d", batch.ErrCorrupt, pos, h.BaseOffset, h.LastOffsetDelta, base)
	}
	return nil
}

// readBatchAt reads and CRC-checks the batch at pos without decompressing
// it (batch.Scan): what a segment scan needs. A batch running past size is
// batch.ErrIncomplete (a torn tail); anything else wrong is corrupt.
func readBatchAt(f vfs.File, pos, size int64, buf *[]byte) (batch.Header, []byte, error) {
	if size-pos < batch.RecordBatchOverhead {
		return batch.Header{}, nil, fmt.Errorf("%w: %d bytes left at %d", batch.ErrIncomplete, size-pos, pos)
	}
	hdr := make([]byte, batch.RecordBatchOverhead)
	if _, err := f.ReadAt(hdr, pos); err != nil {
		return batch.Header{}, nil, err
	}
	h, err := batch.ParseHeader(hdr)
	if err != nil {
		return batch.Header{}, nil, err
	}
	n := int64(h.Size())
	if pos+n > size {
		return batch.Header{}, nil, fmt.Errorf("%w: batch of %d bytes at %d runs past the end %d", batch.ErrIncomplete, n, pos, size)
	}
	if int64(cap(*buf)) < n {
		*buf = make([]byte, n)
	}
	b := (*buf)[:n]
	if _, err := f.ReadAt(b, pos); err != nil {
		return batch.Header{}, nil, err
	}
	if _, h, err = batch.Scan(b); err != nil {
		return batch.Header{}, nil, err
	}
	return h, b, nil
}
