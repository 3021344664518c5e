package groups

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrInvalidConfig is returned by Config.Validate and NewCoordinator.
var ErrInvalidConfig = errors.New("groups: invalid config")

// Config holds the coordinator's settings. Each field is the Kafka broker
// config of the same meaning, in milliseconds where Kafka counts minutes.
type Config struct {
	// InitialRebalanceDelayMs is group.initial.rebalance.delay.ms: when an
	// Empty group starts a rebalance, the join phase lasts at least this
	// long, and again as long while new members keep arriving (up to the
	// rebalance timeout), so a group starting up settles in one rebalance
	// instead of one per member. 0 turns it off.
	InitialRebalanceDelayMs int64
	// MinSessionTimeoutMs and MaxSessionTimeoutMs are
	// group.min.session.timeout.ms and group.max.session.timeout.ms.
	MinSessionTimeoutMs int32
	MaxSessionTimeoutMs int32
	// MaxSize is group.max.size. Kafka's default is unbounded; ours is
	// finite because members come from outside input. It also bounds the
	// members waiting to rejoin with a given member id (KIP-394), which
	// Kafka does not count.
	MaxSize int
	// OffsetsRetentionMs is offsets.retention.minutes × 60000.
	OffsetsRetentionMs int64
	// OffsetMetadataMaxBytes is offset.metadata.max.bytes.
	OffsetMetadataMaxBytes int
	// NewMemberJoinTimeoutMs bounds how long a member that joined for the
	// first time may wait in the join phase before it is dropped (Kafka's
	// hard-coded 5 minutes): it has no member id yet, so it cannot
	// heartbeat, and a client that gave up must not linger.
	NewMemberJoinTimeoutMs int64
	// MaxGroups bounds the groups one coordinator (one __consumer_offsets
	// partition) holds; wren's own limit. A request that would create one
	// more gets COORDINATOR_NOT_AVAILABLE.
	MaxGroups int

	// KIP-848 consumer groups (ConsumerGroupHeartbeat).

	// ConsumerSessionTimeoutMs is group.consumer.session.timeout.ms: a
	// member that does not heartbeat for this long is removed.
	ConsumerSessionTimeoutMs int32
	// ConsumerHeartbeatIntervalMs is group.consumer.heartbeat.interval.ms,
	// the interval members are told to heartbeat at. A member learns of a
	// new assignment only on a heartbeat, so it bounds how fast a
	// rebalance completes.
	ConsumerHeartbeatIntervalMs int32
	// ConsumerMaxSize is group.consumer.max.size (finite, as MaxSize).
	ConsumerMaxSize int
	// ConsumerAssignors is group.consumer.assignors: the server-side
	// assignors members may name, the first being the default.
	ConsumerAssignors []string
}

// DefaultConfig returns Kafka 4.0's defaults, except the finite MaxSize
// and MaxGroups.
func DefaultConfig() Config {
	return Config{
		InitialRebalanceDelayMs: 3000,
		MinSessionTimeoutMs:     6000,
		MaxSessionTimeoutMs:     1800000,
		MaxSize:                 1000,
		OffsetsRetentionMs:      7 * 24 * 60 * 60 * 1000,
		OffsetMetadataMaxBytes:  4096,
		NewMemberJoinTimeoutMs:  5 * 60 * 1000,
		MaxGroups:               100000,

		ConsumerSessionTimeoutMs:    45000,
		ConsumerHeartbeatIntervalMs: 5000,
		ConsumerMaxSize:             1000,
		ConsumerAssignors:           []string{"uniform", "range"},
	}
}

// Validate checks the settings against each other.
func (c Config) Validate() error {
	switch {
	case c.InitialRebalanceDelayMs < 0:
		return fmt.Errorf("%w: group.initial.rebalance.delay.ms %d < 0", ErrInvalidConfig, c.InitialRebalanceDelayMs)
	case c.MinSessionTimeoutMs <= 0 || c.MaxSessionTimeoutMs < c.MinSessionTimeoutMs:
		return fmt.Errorf("%w: session timeout range [%d, %d]", ErrInvalidConfig, c.MinSessionTimeoutMs, c.MaxSessionTimeoutMs)
	case c.MaxSize <= 0:
		return fmt.Errorf("%w: group.max.size %d <= 0", ErrInvalidConfig, c.MaxSize)
	case c.OffsetsRetentionMs <= 0:
		return fmt.Errorf("%w: offsets retention %d ms <= 0", ErrInvalidConfig, c.OffsetsRetentionMs)
	case c.OffsetMetadataMaxBytes < 0:
		return fmt.Errorf("%w: offset.metadata.max.bytes %d < 0", ErrInvalidConfig, c.OffsetMetadataMaxBytes)
	case c.NewMemberJoinTimeoutMs <= 0:
		return fmt.Errorf("%w: new member join timeout %d ms <= 0", ErrInvalidConfig, c.NewMemberJoinTimeoutMs)
	case c.MaxGroups <= 0:
		return fmt.Errorf("%w: max groups %d <= 0", ErrInvalidConfig, c.MaxGroups)
	case c.ConsumerSessionTimeoutMs <= 0 || c.ConsumerHeartbeatIntervalMs <= 0 || c.ConsumerHeartbeatIntervalMs >= c.ConsumerSessionTimeoutMs:
		return fmt.Errorf("%w: consumer group heartbeat interval %d ms must be positive and below the session timeout %d ms",
			ErrInvalidConfig, c.ConsumerHeartbeatIntervalMs, c.ConsumerSessionTimeoutMs)
	case c.ConsumerMaxSize <= 0:
		return fmt.Errorf("%w: group.consumer.max.size %d <= 0", ErrInvalidConfig, c.ConsumerMaxSize)
	case len(c.ConsumerAssignors) == 0:
		return fmt.Errorf("%w: group.consumer.assignors is empty", ErrInvalidConfig)
	}
	for _, name := range c.ConsumerAssignors {
		if name != "uniform" && name != "range" {
			return fmt.Errorf("%w: group.consumer.assignors: unknown assignor %q (uniform, range)", ErrInvalidConfig, name)
		}
	}
	return nil
}

// SeededMemberIDs returns a generator of Kafka-style member ids: the
// prefix (client id, or group.instance.id for a static member), "-", and a
// version-4 UUID drawn from a splitmix64 sequence started at seed. The
// driver seeds it once per coordinator (from crypto/rand, say) so ids
// differ across restarts; a test passes a fixed seed and replays exactly.
// The coordinator never draws randomness itself.
func SeededMemberIDs(seed uint64) func(prefix string) string {
	state := seed
	next := func() uint64 {
		state += 0x9e3779b97f4a7c15
		z := state
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		return z ^ (z >> 31)
	}
	return func(prefix string) string {
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], next())
		binary.BigEndian.PutUint64(b[8:], next())
		b[6] = b[6]&0x0f | 0x40
		b[8] = b[8]&0x3f | 0x80
		return fmt.Sprintf("%s-%x-%x-%x-%x-%x", prefix, b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	}
}

// OffsetsTopic is Kafka's topic of committed offsets and group metadata.
// Part of the on-disk format; never change.
const OffsetsTopic = "__consumer_offsets"

// PartitionFor returns the __consumer_offsets partition whose leader
// coordinates groupID: Java's String.hashCode of the id, made non-negative
// as Kafka's Utils.abs does (its absolute value, 0 for Integer.MIN_VALUE;
// not h & 0x7fffffff, Utils.toPositive, which names another partition for
// every negative hash), modulo the partition count, as Kafka's
// GroupCoordinatorService.partitionFor. It must match Kafka bit for bit:
// tools and operators that locate a group's partition as Kafka does, and
// a __consumer_offsets written by Kafka, expect the same partition.
func PartitionFor(groupID string, partitionCount int32) int32 {
	if partitionCount <= 0 {
		panic(fmt.Sprintf("groups: PartitionFor with %d partitions", partitionCount))
	}
	var h int32
	for _, r := range groupID {
		// Java hashes UTF-16 code units; a rune beyond the BMP is a
		// surrogate pair.
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	if h == math.MinInt32 {
		return 0
	}
	if h < 0 {
		h = -h
	}
	return h % partitionCount
}
