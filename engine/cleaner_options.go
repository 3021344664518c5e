package engine

import (
	"fmt"
	"math"
	"strings"
)

// CleanupPolicy is cleanup.policy: what removes old data from a log.
// The zero value is delete, Kafka's default, so an Options built by hand
// keeps today's retention behaviour.
type CleanupPolicy uint8

const (
	// CleanupDelete removes whole segments by retention.ms and
	// retention.bytes.
	CleanupDelete CleanupPolicy = iota
	// CleanupCompact keeps the latest record of every key (the log
	// cleaner); retention.ms and retention.bytes do not apply.
	CleanupCompact
	// CleanupCompactDelete does both: compaction, and retention on top.
	CleanupCompactDelete
)

// Compact reports whether the log cleaner works on the log.
func (p CleanupPolicy) Compact() bool { return p == CleanupCompact || p == CleanupCompactDelete }

// Delete reports whether retention.ms and retention.bytes apply.
func (p CleanupPolicy) Delete() bool { return p == CleanupDelete || p == CleanupCompactDelete }

// String is the policy as Kafka writes the config value.
func (p CleanupPolicy) String() string {
	switch p {
	case CleanupDelete:
		return "delete"
	case CleanupCompact:
		return "compact"
	case CleanupCompactDelete:
		return "compact,delete"
	}
	return fmt.Sprintf("CleanupPolicy(%d)", uint8(p))
}

// ParseCleanupPolicy reads cleanup.policy as a list ("compact", "delete",
// or both in either order). The config layer has checked the names; this
// refuses anything else too, and an empty list.
func ParseCleanupPolicy(list []string) (CleanupPolicy, error) {
	var compact, del bool
	for _, v := range list {
		switch strings.TrimSpace(v) {
		case "compact":
			compact = true
		case "delete":
			del = true
		default:
			return 0, fmt.Errorf("engine: cleanup.policy %q: unknown value %q", strings.Join(list, ","), v)
		}
	}
	switch {
	case compact && del:
		return CleanupCompactDelete, nil
	case compact:
		return CleanupCompact, nil
	case del:
		return CleanupDelete, nil
	}
	return 0, fmt.Errorf("engine: cleanup.policy is empty")
}

// CompactionOptions are the topic configs of the log cleaner. They are
// embedded in Options, so they read as opts.CleanupPolicy and so on.
type CompactionOptions struct {
	// CleanupPolicy is cleanup.policy.
	CleanupPolicy CleanupPolicy
	// DeleteRetentionMs is delete.retention.ms: how long a tombstone (a
	// record with a null value) stays after the cleaner first saw it, so
	// a consumer reading from the start still sees the delete.
	DeleteRetentionMs int64
	// MinCleanableDirtyRatio is min.cleanable.dirty.ratio: the cleaner
	// picks a log once the share of its cleanable bytes not yet compacted
	// reaches it.
	MinCleanableDirtyRatio float64
	// MinCompactionLagMs is min.compaction.lag.ms: a segment whose newest
	// record is younger stays uncompacted, and so does everything after it.
	MinCompactionLagMs int64
	// MaxCompactionLagMs is max.compaction.lag.ms: a log whose oldest
	// uncompacted segment started longer ago is cleaned whatever its dirty
	// ratio. Zero, as in an Options built by hand, means no maximum.
	MaxCompactionLagMs int64
}

// DefaultCompactionOptions are Kafka 4.0's topic defaults.
func DefaultCompactionOptions() CompactionOptions {
	return CompactionOptions{
		CleanupPolicy:          CleanupDelete,
		DeleteRetentionMs:      24 * 3600 * 1000,
		MinCleanableDirtyRatio: 0.5,
		MinCompactionLagMs:     0,
		MaxCompactionLagMs:     math.MaxInt64,
	}
}

func (o *CompactionOptions) validate() error {
	switch {
	case o.CleanupPolicy > CleanupCompactDelete:
		return fmt.Errorf("engine: cleanup.policy %d unknown", o.CleanupPolicy)
	case o.DeleteRetentionMs < 0:
		return fmt.Errorf("engine: delete.retention.ms %d is negative", o.DeleteRetentionMs)
	case !(o.MinCleanableDirtyRatio >= 0 && o.MinCleanableDirtyRatio <= 1):
		return fmt.Errorf("engine: min.cleanable.dirty.ratio %v not in [0, 1]", o.MinCleanableDirtyRatio)
	case o.MinCompactionLagMs < 0:
		return fmt.Errorf("engine: min.compaction.lag.ms %d is negative", o.MinCompactionLagMs)
	case o.MaxCompactionLagMs < 0:
		return fmt.Errorf("engine: max.compaction.lag.ms %d is negative", o.MaxCompactionLagMs)
	case o.MaxCompactionLagMs > 0 && o.MaxCompactionLagMs < o.MinCompactionLagMs:
		return fmt.Errorf("engine: min.compaction.lag.ms %d above max.compaction.lag.ms %d", o.MinCompactionLagMs, o.MaxCompactionLagMs)
	}
	return nil
}

// maxCompactionLagMs is MaxCompactionLagMs with zero read as no maximum.
func (o *CompactionOptions) maxCompactionLagMs() int64 {
	if o.MaxCompactionLagMs <= 0 {
		return math.MaxInt64
	}
	return o.MaxCompactionLagMs
}
