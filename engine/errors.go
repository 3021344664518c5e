package engine

import "errors"

// Sentinels that the wire layer maps to Kafka error codes.
var (
	// ErrLogDirFailed: a write or fdatasync in this log directory failed.
	// Nothing from the directory is acknowledged again (KAFKA_STORAGE_ERROR).
	ErrLogDirFailed = errors.New("engine: log directory failed")
	// ErrFencedLeaderEpoch: a leader append whose leader epoch is no longer
	// this replica's, or made after it stopped leading
	// (NOT_LEADER_OR_FOLLOWER: the client refreshes metadata and retries).
	ErrFencedLeaderEpoch = errors.New("engine: append from a fenced leader epoch")
	// ErrClosed: the log was closed.
	ErrClosed = errors.New("engine: log closed")
	// ErrRecordTooLarge: a batch exceeds max.message.bytes or the segment size
	// (MESSAGE_TOO_LARGE / RECORD_LIST_TOO_LARGE).
	ErrRecordTooLarge = errors.New("engine: record batch too large")
	// ErrOffsetOutOfRange: a read or truncation outside [LogStartOffset, LogEndOffset].
	ErrOffsetOutOfRange = errors.New("engine: offset out of range")
	// ErrInvalidOffsets: a follower append whose offsets do not continue the log.
	ErrInvalidOffsets = errors.New("engine: batch offsets do not continue the log")
	// ErrCorruptIndex: an index file failed its sanity check (recovery rebuilds it).
	ErrCorruptIndex = errors.New("engine: corrupt index")
	// ErrInvalidTopicPartition: a partition directory name that is not <topic>-<partition>.
	ErrInvalidTopicPartition = errors.New("engine: invalid topic partition")
	// ErrClusterIDMismatch: meta.properties names another cluster.
	ErrClusterIDMismatch = errors.New("engine: data directory belongs to another cluster")
	// ErrNodeIDMismatch: meta.properties names another node (of the
	// same cluster, or of one this node cannot know yet).
	ErrNodeIDMismatch = errors.New("engine: data directory belongs to another node")
)
