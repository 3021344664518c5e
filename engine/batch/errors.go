package batch

import "errors"

// Sentinels returned (wrapped with detail) by ParseHeader, Scan, Validate and
// Records. doc.go maps each to the Kafka error code a Produce response carries.
var (
	// ErrIncomplete: the bytes end before the batch does. From Scan and
	// ParseHeader only: for a segment tail this means "torn write or not yet
	// fully read", not "corrupt".
	ErrIncomplete = errors.New("batch: incomplete record batch")
	// ErrCorrupt: the batch framing is broken (length field, size, compressed
	// stream) or the bytes are not a record batch at all.
	ErrCorrupt = errors.New("batch: corrupt record batch")
	// ErrCRC: the stored CRC-32C does not match the bytes it covers.
	ErrCRC = errors.New("batch: record batch CRC mismatch")
	// ErrUnsupportedMagic: the magic byte is not 2 (message format v0/v1, or
	// garbage).
	ErrUnsupportedMagic = errors.New("batch: unsupported magic")
	// ErrUnknownCodec: the compression type id in the attributes is not one
	// of none, gzip, snappy, lz4, zstd.
	ErrUnknownCodec = errors.New("batch: unknown compression codec")
	// ErrTooLarge: the records decompress to more than
	// Limits.MaxDecompressedBytes, or a batch being built does not fit the
	// format's int32 lengths.
	ErrTooLarge = errors.New("batch: record batch too large")
	// ErrInvalidRecord: the CRC holds but the records inside are malformed
	// or break a rule of their origin (record count, offset deltas, control
	// batch from a client, sequence).
	ErrInvalidRecord = errors.New("batch: invalid record")
	// ErrInvalidTimestamp: a record timestamp outside the window the caller
	// asked for, or a client batch that claims LogAppendTime.
	ErrInvalidTimestamp = errors.New("batch: invalid timestamp")
)
