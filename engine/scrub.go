package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The scrubber re-reads every segment of every log at a low rate, checks
// every batch's CRC-32C and the offset index, so damage is found before a
// consumer (or, later, a follower) meets it.
//
// Damage found is treated as recovery treats it: recorded in the log
// (appends refused, reads stop before it) and listed in
// DamagedSegmentsFile, so a restart scans that segment again. A scan
// result is believed only after a second read of the same batch under the
// log's lock agrees: the segment may have been truncated, deleted or
// swapped by the cleaner between the unlocked read and now.
//
// An offset index entry that names no batch is not data damage: indexes
// are derived. The scrubber rebuilds a closed segment's indexes in place;
// readers racing the rebuild see fewer entries, so they start their scan
// earlier, at a batch boundary all the same.

// ScrubConfig says how fast and how often the scrubber reads.
type ScrubConfig struct {
	// BytesPerSecond caps the read rate; 0 reads without a cap (tests,
	// wren storage check).
	BytesPerSecond int64
	// Interval is the pause between the start of two passes over the
	// directory.
	Interval time.Duration
	// OnDamage, if set, is told of each damage found (for logs and
	// metrics).
	OnDamage func(Damage)
	// OnIndexRebuilt, if set, is told of each segment whose indexes were
	// rebuilt, with what was wrong.
	OnIndexRebuilt func(tp TopicPartition, segment int64, reason error)
}

// ScrubStats report one pass.
type ScrubStats struct {
	Partitions     int
	Segments       int
	Batches        int64
	BytesRead      int64
	DamageFound    int
	IndexesRebuilt int
	Duration       time.Duration
}

// scrubThrottle paces a pass's reads at a byte rate and holds its buffer.
type scrubThrottle struct {
	rate  int64
	start time.Time
	bytes int64
	// buf is the pass's batch buffer: a pass reads one segment at a
	// time, so its segments share one, grown to the largest batch read.
	// A buffer per segment cost a pass over 10,000 idle partitions
	// 640 MiB of garbage.
	buf []byte
}

// wait blocks until n more bytes fit the rate, or ctx ends.
func (t *scrubThrottle) wait(ctx context.Context, n int64) error {
	if t.rate <= 0 {
		return ctx.Err()
	}
	if t.start.IsZero() {
		t.start = time.Now()
	}
	t.bytes += n
	due := t.start.Add(time.Duration(float64(t.bytes) / float64(t.rate) * float64(time.Second)))
	d := time.Until(due)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// RunScrubber scrubs the directory pass after pass until ctx ends. A pass
// that fails on one log goes on with the next; closed logs are skipped.
func (m *Manager) RunScrubber(ctx context.Context, cfg ScrubConfig, report func(ScrubStats, error)) {
	for {
		started := time.Now()
		st, err := m.Scrub(ctx, cfg)
		if ctx.Err() != nil {
			return
		}
		if report != nil {
			report(st, err)
		}
		wait := cfg.Interval - time.Since(started)
		if wait < time.Second {
			wait = time.Second
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}

// Scrub makes one pass over every log of the directory.
func (m *Manager) Scrub(ctx context.Context, cfg ScrubConfig) (ScrubStats, error) {
	started := time.Now()
	th := &scrubThrottle{rate: cfg.BytesPerSecond}
	var st ScrubStats
	var errs []error
	for _, l := range m.Logs() {
		if err := l.scrub(ctx, th, cfg, &st); err != nil {
			if ctx.Err() != nil {
				return st, ctx.Err()
			}
			// A shortage of descriptors skips the partition this pass
			// (counted, and logged by the handle cache).
			if !errors.Is(err, ErrClosed) && !errors.Is(err, ErrTooManyOpenFiles) {
				errs = append(errs, fmt.Errorf("%s: %w", l.tp, err))
			}
		}
		st.Partitions++
	}
	st.Duration = time.Since(started)
	m.scrubPasses.Add(1)
	m.scrubBytes.Add(st.BytesRead)
	m.scrubDamage.Add(int64(st.DamageFound))
	return st, errors.Join(errs...)
}

// ScrubTotals are the scrubber's figures since start: passes completed,
// bytes read and damaged ranges found.
func (m *Manager) ScrubTotals() (passes, bytes, damage int64) {
	return m.scrubPasses.Load(), m.scrubBytes.Load(), m.scrubDamage.Load()
}

// Scrub makes one pass over the log's segments, unthrottled (tests).
func (l *Log) Scrub(ctx context.Context, cfg ScrubConfig) (ScrubStats, error) {
	var st ScrubStats
	err := l.scrub(ctx, &scrubThrottle{rate: cfg.BytesPerSecond}, cfg, &st)
	return st, err
}

type scrubTarget struct {
	seg    *segment
	size   int64
	active bool
}

func (l *Log) scrub(ctx context.Context, th *scrubThrottle, cfg ScrubConfig, st *ScrubStats) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	targets := make([]scrubTarget, len(l.segments))
	for i, s := range l.segments {
		s.acquire()
		targets[i] = scrubTarget{seg: s, size: s.size.Load(), active: i == len(l.segments)-1}
	}
	l.mu.Unlock()
	defer func() {
		for _, t := range targets {
			t.seg.release()
		}
	}()
	for _, t := range targets {
		if err := l.scrubSegment(ctx, th, cfg, st, t); err != nil {
			return err
		}
		st.Segments++
	}
	return nil
}

// scrubSegment reads one segment batch by batch up to the size it had
// when the pass began.
func (l *Log) scrubSegment(ctx context.Context, th *scrubThrottle, cfg ScrubConfig, st *ScrubStats, t scrubTarget) error {
	s := t.seg
	if t.active && t.size == 0 {
		// Nothing to read and no index to check: an idle partition's
		// empty segment costs the pass no open.
		return nil
	}
	// Pinned for the scan, so no read in it meets a shortage of
	// descriptors (which would look like a read error).
	if _, err := s.pinRead(); err != nil {
		if errors.Is(err, errHandleDropped) {
			return nil // deleted since the pass began
		}
		return l.readFailed(err)
	}
	defer s.unpinRead()
	if th.buf == nil {
		th.buf = make([]byte, 0, 64<<10)
	}
	buf := th.buf
	defer func() { th.buf = buf }()
	// Batch starts and last offsets, to check the offset index against.
	var positions, lasts []int64
	var pos int64
	for pos < t.size {
		if next := l.skipDamageLocked(s, pos); next != pos {
			pos = next
			continue
		}
		expected := s.baseOffset
		if len(lasts) > 0 {
			expected = lasts[len(lasts)-1] + 1
		}
		h, _, err := readBatchAt(s.log, pos, t.size, &buf)
		if err == nil {
			err = misplaced(h, pos, s.baseOffset, expected)
		}
		if err != nil {
			d, ok, cerr := l.confirmDamage(s, pos, t.size, expected, err)
			if cerr != nil {
				return cerr
			}
			if !ok {
				// The segment changed under the scan (truncated,
				// deleted, swapped): nothing to believe in this pass.
				return nil
			}
			st.DamageFound++
			if cfg.OnDamage != nil {
				cfg.OnDamage(d)
			}
			if d.End <= pos {
				return nil
			}
			pos = d.End
			continue
		}
		n := int64(h.Size())
		st.Batches++
		st.BytesRead += n
		positions = append(positions, pos)
		lasts = append(lasts, h.LastOffset())
		pos += n
		if err := th.wait(ctx, n); err != nil {
			return err
		}
	}
	if t.active {
		// The active segment's indexes grow under appends; they are
		// checked when it is closed.
		return nil
	}
	if bad := checkOffsetIndex(s, positions, lasts); bad != nil {
		rebuilt, err := l.rebuildIndexes(s, t.size)
		if err != nil {
			return err
		}
		if rebuilt {
			st.IndexesRebuilt++
			if cfg.OnIndexRebuilt != nil {
				cfg.OnIndexRebuilt(l.tp, s.baseOffset, bad)
			}
		}
	}
	return nil
}

// skipDamageLocked is skipDamage taking the log's lock.
func (l *Log) skipDamageLocked(s *segment, pos int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.skipDamage(s, pos)
}

// checkOffsetIndex returns an error when an offset index entry names no
// batch start with that last offset.
func checkOffsetIndex(s *segment, positions, lasts []int64) error {
	n := s.offsetIndex.entries()
	entry := make([]byte, offsetIndexEntrySize)
	for i := int64(0); i < n; i++ {
		if err := s.offsetIndex.readEntry(i, entry); err != nil {
			return err
		}
		off := s.baseOffset + int64(int32(binary.BigEndian.Uint32(entry)))
		pos := int64(int32(binary.BigEndian.Uint32(entry[4:])))
		j, found := slices.BinarySearch(positions, pos)
		if !found || lasts[j] != off {
			return fmt.Errorf("%w: %s entry %d (offset %d at %d) names no batch", ErrCorruptIndex, s.offsetIndex.f.Name(), i, off, pos)
		}
	}
	return nil
}

// confirmDamage re-reads the batch at pos under the log's lock. ok is
// false when the segment is no longer the log's, or no longer reaches
// pos, or the batch now reads well: the unlocked read raced a truncation,
// deletion or swap. Otherwise the damage is recorded (and listed on disk)
// and returned. expected is the offset after the last valid batch before
// pos.
func (l *Log) confirmDamage(s *segment, pos, scannedSize, expected int64, first error) (Damage, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || !slices.Contains(l.segments, s) {
		return Damage{}, false, nil
	}
	size := s.size.Load()
	if size < scannedSize || pos >= size {
		return Damage{}, false, nil
	}
	var buf []byte
	h, _, err := readBatchAt(s.log, pos, size, &buf)
	if err == nil && misplaced(h, pos, s.baseOffset, expected) == nil {
		return Damage{}, false, nil
	}
	if err == nil {
		err = first
	}
	d := Damage{
		TopicPartition: l.tp, Segment: s.baseOffset, File: s.log.Name(),
		Position: pos, End: size, FirstOffset: expected, LastOffset: -1,
		Reason: err.Error(), FoundBy: "scrubber",
	}
	// Where the damaged range ends: the next valid batch, or the end of
	// the segment. A read error while looking counts as "none follows".
	q, nh, found, _ := nextValidBatch(s.log, pos, size, s.baseOffset, expected)
	if found {
		d.End, d.LastOffset = q, nh.BaseOffset-1
	} else if i := slices.Index(l.segments, s); i+1 < len(l.segments) {
		d.LastOffset = l.segments[i+1].baseOffset - 1
	} else {
		d.LastOffset = l.logEndOffset - 1
	}
	if err := l.recordDamageLocked(d); err != nil {
		l.fail(err)
		return Damage{}, false, l.health.check()
	}
	return d, true, nil
}

// rebuildIndexes rewrites a closed segment's indexes from its batches.
// It does nothing (false) to a segment that is no longer the log's, is
// now the active one, or holds damage.
func (l *Log) rebuildIndexes(s *segment, size int64) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := slices.Index(l.segments, s)
	if l.closed || i < 0 || i == len(l.segments)-1 || s.size.Load() != size {
		return false, nil
	}
	for _, d := range l.damage {
		if d.Segment == s.baseOffset {
			return false, nil
		}
	}
	saved := l.damage
	var st RecoveryStats
	if err := l.recoverSegment(s, &st, false, true, 0); err != nil {
		return false, l.failErr(err)
	}
	if len(l.damage) != len(saved) {
		// The rebuild's own read found damage the scan missed: keep it,
		// listed on disk.
		if err := writeDamagedSegments(l.fs, l.dir, l.damage); err != nil {
			return false, l.failErr(err)
		}
	}
	if err := s.timeIndex.maybeAppend(s.maxTimestamp, s.offsetOfMaxTimestamp, true); err != nil {
		return false, l.failErr(err)
	}
	if err := s.flush(true); err != nil {
		return false, l.failErr(err)
	}
	return true, nil
}
