package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
)

// CleanerCheckpointFile is Kafka's cleaner-offset-checkpoint in the data
// directory: per compacted partition, the offset below which the log is
// compacted (its first dirty offset). It only saves work: a lost or stale
// entry makes the next pass map more, never drop a record it should keep,
// because a record goes only for a later record of its key that the map
// saw in the log. Part of the on-disk format; never change.
const CleanerCheckpointFile = "cleaner-offset-checkpoint"

// CleanerConfig is the broker-level configuration of the log cleaner.
type CleanerConfig struct {
	// DedupeBufferBytes is log.cleaner.dedupe.buffer.size: the key map's
	// memory, allocated once and kept.
	DedupeBufferBytes int64
	// IOBufferBytes is log.cleaner.io.buffer.size; zero means 512 KiB.
	IOBufferBytes int
	// IOMaxBytesPerSecond is log.cleaner.io.max.bytes.per.second; zero or
	// less means no cap.
	IOMaxBytesPerSecond float64
	// Throttler, if set, replaces the one built from IOMaxBytesPerSecond
	// (tests inject one with a fake clock).
	Throttler *Throttler
}

// DefaultCleanerConfig is wren's default: a 16 MiB key map (Kafka's 128
// MiB is more than a small host has), Kafka's 512 KiB I/O buffer, no I/O
// cap.
func DefaultCleanerConfig() CleanerConfig {
	return CleanerConfig{DedupeBufferBytes: 16 << 20, IOBufferBytes: defaultCleanerIOBufferBytes}
}

// cleanerState is the Manager's log cleaner state (Kafka's
// LogCleanerManager). mu serialises RunCleaner calls and guards the rest.
type cleanerState struct {
	mu sync.Mutex
	// checkpoints mirrors cleaner-offset-checkpoint; nil until read.
	checkpoints map[TopicPartition]int64
	// deleteHorizons: the earliest delete horizon of the tombstones a
	// log's last pass kept; a log is due once it passes. Not persisted: after
	// a restart tombstones wait for the next pass the dirty ratio starts.
	deleteHorizons map[TopicPartition]int64
	// uncleanable logs failed a pass with a read or corruption error and
	// are skipped until restart (Kafka's uncleanable partitions).
	uncleanable map[TopicPartition]bool
	// offsetMap is allocated once, of dedupeBufferBytes, and reused.
	offsetMap         *offsetMap
	dedupeBufferBytes int64
	throttler         *Throttler
	throttleBps       float64
}

// CleanableInfo describes the part of a log the cleaner may work on.
type CleanableInfo struct {
	// FirstDirtyOffset and FirstUncleanableOffset bound the dirty part.
	FirstDirtyOffset       int64
	FirstUncleanableOffset int64
	// CleanBytes and DirtyBytes are the bytes of the cleanable segments
	// below and from FirstDirtyOffset.
	CleanBytes int64
	DirtyBytes int64
	// CompactionDelayMs is how long past max.compaction.lag.ms the oldest
	// dirty segment's first batch is; above zero the log must be cleaned
	// whatever its dirty ratio.
	CompactionDelayMs int64
}

// DirtyRatio is DirtyBytes over the cleanable bytes, what
// min.cleanable.dirty.ratio is compared with.
func (c CleanableInfo) DirtyRatio() float64 {
	if c.CleanBytes+c.DirtyBytes == 0 {
		return 0
	}
	return float64(c.DirtyBytes) / float64(c.CleanBytes+c.DirtyBytes)
}

// CleanableInfo measures the log for the cleaner, with firstDirty from
// the cleaner checkpoint and upperBound the high watermark.
func (l *Log) CleanableInfo(firstDirty, upperBound int64) (CleanableInfo, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return CleanableInfo{}, ErrClosed
	}
	now := l.nowMs()
	n, firstUncleanable, firstDirty := l.cleanableRangeLocked(firstDirty, upperBound, now)
	info := CleanableInfo{FirstDirtyOffset: firstDirty, FirstUncleanableOffset: firstUncleanable}
	cleanUntil := now - l.opts.maxCompactionLagMs()
	for _, s := range l.segments[:n] {
		if s.nextOffset <= firstDirty {
			info.CleanBytes += s.size.Load()
			continue
		}
		info.DirtyBytes += s.size.Load()
		if ts := s.rollingBasedTimestamp; ts > 0 && ts < cleanUntil {
			info.CompactionDelayMs = max(info.CompactionDelayMs, cleanUntil-ts)
		}
	}
	return info, nil
}

// CleanerStats report a RunCleaner call.
type CleanerStats struct {
	LogsCleaned     int
	LogsAborted     int
	SegmentsCleaned int
	SegmentsWritten int
	BytesRead       int64
	BytesWritten    int64
	RecordsRead     int64
	RecordsRetained int64
}

// RunCleaner runs the log cleaner once over the directory (what one round
// of Kafka's cleaner threads does): every log whose cleanup.policy includes
// compact, not marked uncleanable, is measured, and those due are cleaned,
// dirtiest first. A log is due when its dirty ratio reaches
// min.cleanable.dirty.ratio, when its oldest dirty segment is older than
// max.compaction.lag.ms, or when tombstones it kept reached their delete
// horizon. highWatermark bounds each log's cleaning, and so does a
// retention hold that binds the cleaner (SetRetentionHold,
// RetentionHold.Cleaner: an uplink's records not yet forwarded). cleaner-offset-checkpoint
// is rewritten after each log cleaned.
//
// Calls are serialised; the caller runs it every log.cleaner.backoff.ms
// and stops it (ctx) before closing the Manager. A log that fails with a
// read or corruption error is marked uncleanable and skipped from then
// on; its error is returned once, joined with the others. A failed log
// directory stops the run.
func (m *Manager) RunCleaner(ctx context.Context, cfg CleanerConfig, highWatermark func(*Log) int64) (CleanerStats, error) {
	st := &m.cleaner
	st.mu.Lock()
	defer st.mu.Unlock()
	var stats CleanerStats
	if err := m.health.check(); err != nil {
		return stats, err
	}
	var errs []error
	if st.checkpoints == nil {
		cps, err := ReadOffsetCheckpoint(m.fs, m.dir+"/"+CleanerCheckpointFile)
		if err != nil {
			// Only work is lost: every log starts dirty.
			errs = append(errs, err)
			cps = map[TopicPartition]int64{}
		}
		st.checkpoints = cps
		st.deleteHorizons = map[TopicPartition]int64{}
		st.uncleanable = map[TopicPartition]bool{}
	}
	throttler := cfg.Throttler
	if throttler == nil && cfg.IOMaxBytesPerSecond > 0 {
		if st.throttler == nil || st.throttleBps != cfg.IOMaxBytesPerSecond {
			st.throttler, st.throttleBps = NewThrottler(cfg.IOMaxBytesPerSecond, nil, nil), cfg.IOMaxBytesPerSecond
		}
		throttler = st.throttler
	}

	type candidate struct {
		log   *Log
		hw    int64
		info  CleanableInfo
		ratio float64
	}
	var due []candidate
	present := map[TopicPartition]bool{}
	// The uplinks' holds (SetRetentionHold) bound the pass as the high
	// watermark does, where they hold the cleaner (RetentionHold.Cleaner).
	m.holdMu.Lock()
	holdsFn := m.holds
	m.holdMu.Unlock()
	var holds map[TopicPartition]RetentionHold
	if holdsFn != nil {
		holds = holdsFn()
	}
	for _, l := range m.Logs() {
		opts := l.Options()
		if !opts.CleanupPolicy.Compact() {
			continue
		}
		present[l.tp] = true
		if st.uncleanable[l.tp] {
			continue
		}
		hw := highWatermark(l)
		if h, ok := holds[l.tp]; ok && h.Cleaner {
			hw = min(hw, h.Offset)
		}
		info, err := l.CleanableInfo(st.checkpoints[l.tp], hw)
		if err != nil {
			continue // closed meanwhile
		}
		horizon, ok := st.deleteHorizons[l.tp]
		tombstonesDue := ok && horizon >= 0 && opts.nowMs() >= horizon
		if tombstonesDue || info.DirtyBytes > 0 && (info.DirtyRatio() >= opts.MinCleanableDirtyRatio || info.CompactionDelayMs > 0) {
			due = append(due, candidate{l, hw, info, info.DirtyRatio()})
		}
	}
	sort.SliceStable(due, func(i, j int) bool { return due[i].ratio > due[j].ratio })
	dirty := false
	for tp := range st.checkpoints {
		if !present[tp] {
			delete(st.checkpoints, tp)
			delete(st.deleteHorizons, tp)
			dirty = true
		}
	}
	// The dedupe buffer (16 MiB by default) is taken when a log is first
	// due, not on a node that compacts nothing, and kept after.
	if len(due) > 0 && (st.offsetMap == nil || st.dedupeBufferBytes != cfg.DedupeBufferBytes) {
		om, err := newOffsetMap(cfg.DedupeBufferBytes)
		if err != nil {
			return stats, errors.Join(append(errs, err)...)
		}
		st.offsetMap, st.dedupeBufferBytes = om, cfg.DedupeBufferBytes
	}
	for _, c := range due {
		if ctx.Err() != nil {
			break
		}
		res, err := c.log.Clean(ctx, CleanConfig{
			UpperBound:        c.hw,
			FirstDirtyOffset:  c.info.FirstDirtyOffset,
			DedupeBufferBytes: cfg.DedupeBufferBytes,
			IOBufferBytes:     cfg.IOBufferBytes,
			Throttler:         throttler,
			offsetMap:         st.offsetMap,
		})
		stats.SegmentsCleaned += res.SegmentsCleaned
		stats.SegmentsWritten += res.SegmentsWritten
		stats.BytesRead += res.BytesRead
		stats.BytesWritten += res.BytesWritten
		stats.RecordsRead += res.RecordsRead
		stats.RecordsRetained += res.RecordsRetained
		switch {
		case err != nil && (errors.Is(err, ErrLogDirFailed) || ctx.Err() != nil):
			return stats, errors.Join(append(errs, err)...)
		case errors.Is(err, ErrClosed):
			continue
		case err != nil:
			st.uncleanable[c.log.tp] = true
			errs = append(errs, fmt.Errorf("engine: cleaning %s: %w", c.log.tp, err))
			continue
		case res.Aborted:
			stats.LogsAborted++
			continue
		}
		stats.LogsCleaned++
		st.checkpoints[c.log.tp] = res.EndOffset
		st.deleteHorizons[c.log.tp] = res.NextDeleteHorizonMs
		if err := m.writeCleanerCheckpoint(); err != nil {
			return stats, errors.Join(append(errs, err)...)
		}
		dirty = false
	}
	if dirty {
		if err := m.writeCleanerCheckpoint(); err != nil {
			errs = append(errs, err)
		}
	}
	return stats, errors.Join(errs...)
}

// writeCleanerCheckpoint replaces cleaner-offset-checkpoint; a failure
// fails the directory, as the other checkpoints' do. Called under
// m.cleaner.mu.
func (m *Manager) writeCleanerCheckpoint() error {
	if err := WriteOffsetCheckpoint(m.fs, m.dir+"/"+CleanerCheckpointFile, m.cleaner.checkpoints); err != nil {
		return m.checkpointFailed(err)
	}
	return nil
}
