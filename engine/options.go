package engine

import (
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/wren-broker/wren/internal/membudget"
)

// FlushPolicy says when an append counts as durable.
type FlushPolicy int

const (
	// FlushAck: an append returns only after a group-committed fdatasync
	// that covers it. Survives power loss. The default.
	FlushAck FlushPolicy = iota
	// FlushInterval: Kafka's page-cache behaviour. An append returns once
	// written; fdatasync runs every FlushIntervalMessages messages or
	// FlushIntervalMs milliseconds. A power loss can drop acknowledged data.
	FlushInterval
)

func (p FlushPolicy) String() string {
	switch p {
	case FlushAck:
		return "ack"
	case FlushInterval:
		return "interval"
	}
	return fmt.Sprintf("FlushPolicy(%d)", int(p))
}

// TimestampType is message.timestamp.type.
type TimestampType int

const (
	CreateTime TimestampType = iota
	LogAppendTime
)

// Options are a partition log's settings: the topic-level configs of Kafka
// (segment.bytes, retention.ms, ...) that the engine acts on.
type Options struct {
	// SegmentBytes is segment.bytes: roll when the next append would pass it.
	SegmentBytes int64
	// SegmentMs is segment.ms: roll when the segment's first batch is older.
	SegmentMs int64
	// SegmentIndexBytes is segment.index.bytes: the cap on each index file;
	// a full index rolls the segment. It is a cap, not a reservation: index
	// files take disk only for the entries written.
	SegmentIndexBytes int64
	// IndexIntervalBytes is index.interval.bytes.
	IndexIntervalBytes int64
	// RetentionMs is retention.ms; negative means unlimited.
	RetentionMs int64
	// RetentionBytes is retention.bytes; negative means unlimited.
	RetentionBytes int64
	// MaxMessageBytes is max.message.bytes: the largest batch accepted.
	MaxMessageBytes int64
	// MaxDecompressedBytes caps the bytes one compressed batch may
	// decompress to during validation (decompression bombs).
	MaxDecompressedBytes int64
	// DecompressionBudget, when not nil, is shared by every partition of
	// the process: validations of compressed batches wait for their share
	// of it before decompressing (max.decompressed.inflight.bytes), so
	// many connections validating at once cannot add up past it.
	DecompressionBudget *membudget.Budget
	// MessageTimestampType is message.timestamp.type.
	MessageTimestampType TimestampType

	FlushPolicy FlushPolicy
	// FlushIntervalMessages is flush.messages, used with FlushInterval.
	FlushIntervalMessages int64
	// FlushIntervalMs is flush.ms, used with FlushInterval (Manager.FlushDirty).
	FlushIntervalMs int64
	// Preallocate is Kafka's preallocate: reserve segment.bytes of disk for
	// each new segment file up front (fallocate, keeping the file size), so
	// a full disk shows at roll rather than mid-segment. Index files are
	// never preallocated: they grow with their entries (see createSegment).
	Preallocate bool

	// CompactionOptions: cleanup.policy and the log cleaner's topic
	// configs (hook for the log cleaner, cleaner_options.go).
	CompactionOptions

	// Now is the clock. Tests inject one; nil means time.Now.
	Now func() time.Time
}

// DefaultOptions are Kafka 4.0's topic defaults, with wren's edge choices:
// 128 MiB segments and flush policy ack.
func DefaultOptions() Options {
	return Options{
		SegmentBytes:          128 << 20,
		SegmentMs:             7 * 24 * 3600 * 1000,
		SegmentIndexBytes:     10 << 20,
		IndexIntervalBytes:    4096,
		RetentionMs:           7 * 24 * 3600 * 1000,
		RetentionBytes:        -1,
		MaxMessageBytes:       1048588,
		MaxDecompressedBytes:  32 << 20,
		MessageTimestampType:  CreateTime,
		FlushPolicy:           FlushAck,
		FlushIntervalMessages: 1<<63 - 1,
		FlushIntervalMs:       1<<63 - 1,
		Preallocate:           false,
		CompactionOptions:     DefaultCompactionOptions(),
	}
}

func (o *Options) nowMs() int64 {
	if o.Now == nil {
		return time.Now().UnixMilli()
	}
	return o.Now().UnixMilli()
}

func (o *Options) validate() error {
	switch {
	case o.SegmentBytes < segmentBytesMin:
		return fmt.Errorf("engine: segment.bytes %d below the minimum %d", o.SegmentBytes, segmentBytesMin)
	case o.SegmentBytes > segmentBytesMax:
		return fmt.Errorf("engine: segment.bytes %d above the maximum %d", o.SegmentBytes, segmentBytesMax)
	case o.SegmentIndexBytes < 2*offsetIndexEntrySize*timeIndexEntrySize:
		return fmt.Errorf("engine: segment.index.bytes %d too small", o.SegmentIndexBytes)
	case o.IndexIntervalBytes < 0:
		return fmt.Errorf("engine: index.interval.bytes %d is negative", o.IndexIntervalBytes)
	case o.MaxMessageBytes <= 0:
		return fmt.Errorf("engine: max.message.bytes %d must be positive", o.MaxMessageBytes)
	case o.MaxDecompressedBytes <= 0:
		return fmt.Errorf("engine: max decompressed bytes %d must be positive", o.MaxDecompressedBytes)
	case o.SegmentMs <= 0:
		return fmt.Errorf("engine: segment.ms %d must be positive", o.SegmentMs)
	}
	return o.CompactionOptions.validate()
}

const (
	// segmentBytesMin is Kafka's minimum segment.bytes (LegacyRecord overhead
	// aside): 14 bytes would be its literal bound; wren asks for room for one
	// batch header.
	segmentBytesMin = 61
	// segmentBytesMax: index positions are 32-bit.
	segmentBytesMax = 1<<31 - 1
)

// sharedOptions hands the logs of one Manager shared, immutable Options
// values: one per topic whose options differ from the defaults, and the
// defaults for every other log, so 10,000 partitions hold 10,000 pointers,
// not 10,000 copies. A log never changes the value it points to; a topic
// config change (Log.UpdateOptions) makes a new value, which the topic's
// other logs then share. Options with an injected clock (tests) are not
// shared: a func cannot be compared.
type sharedOptions struct {
	mu       sync.Mutex
	defaults *Options
	byTopic  map[string]*Options
}

func newSharedOptions(defaults Options) *sharedOptions {
	return &sharedOptions{defaults: &defaults, byTopic: map[string]*Options{}}
}

// get returns a value equal to o for a log of topic: a shared one when
// there is one, else a new one shared from then on.
func (t *sharedOptions) get(topic string, o Options) *Options {
	if t == nil || o.Now != nil {
		return &o
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if sameOptions(t.defaults, &o) {
		delete(t.byTopic, topic)
		return t.defaults
	}
	if cur := t.byTopic[topic]; cur != nil && sameOptions(cur, &o) {
		return cur
	}
	p := &o
	t.byTopic[topic] = p
	return p
}

// sameOptions reports whether a and b say the same, clocks aside (a func
// cannot be compared): the decompression budget by identity, every other
// field by value.
func sameOptions(a, b *Options) bool {
	if a == b {
		return true
	}
	x, y := *a, *b
	x.Now, y.Now = nil, nil
	x.DecompressionBudget, y.DecompressionBudget = nil, nil
	return a.DecompressionBudget == b.DecompressionBudget && reflect.DeepEqual(x, y)
}
