package wal

import (
	"errors"
	"fmt"
)

var (
	// ErrCorrupt means the files hold damage that cannot be a torn write:
	// a bad record or header in a file that is not the last, or files that
	// do not chain. Recovery refuses such a log rather than drop records
	// that may have been acknowledged.
	ErrCorrupt = errors.New("wal: corrupt log")
	// ErrUnsupportedVersion is an intact segment header of a format this
	// build does not know.
	ErrUnsupportedVersion = errors.New("wal: unsupported segment version")
	// ErrIndexOutOfRange is a read, scan or truncation at an index the log
	// does not hold.
	ErrIndexOutOfRange = errors.New("wal: index out of range")
	// ErrRecordTooLarge is an append of a payload over MaxRecordBytes.
	ErrRecordTooLarge = errors.New("wal: record too large")
	// ErrClosed is any call on a closed log, and what appenders still
	// waiting for a sync get when the log closes.
	ErrClosed = errors.New("wal: log closed")
	// ErrInvalidOptions is an Options value out of range.
	ErrInvalidOptions = errors.New("wal: invalid options")
)

// Defaults, sized for wren's internal logs (metadata records, producer-id
// blocks): small records, few of them.
const (
	DefaultSegmentBytes   = 64 << 20
	DefaultMaxRecordBytes = 4 << 20
)

// Options tune a log. The zero value takes the defaults.
type Options struct {
	// SegmentBytes is the size at which the active segment rolls: a record
	// that would take the segment past it goes to a new file, unless the
	// segment holds no record yet (a record larger than a segment gets a
	// file of its own). 0 means DefaultSegmentBytes; at most 1 GiB.
	SegmentBytes int64
	// MaxRecordBytes bounds one payload on append. 0 means
	// DefaultMaxRecordBytes; at most 256 MiB. Recovery accepts records up to
	// the 256 MiB format limit whatever this is set to, so lowering it never
	// turns records written earlier into corruption.
	MaxRecordBytes int
}

func (o Options) withDefaults() (Options, error) {
	if o.SegmentBytes == 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.MaxRecordBytes == 0 {
		o.MaxRecordBytes = DefaultMaxRecordBytes
	}
	if o.SegmentBytes < minSegmentBytes || o.SegmentBytes > maxSegmentBytesLimit {
		return o, fmt.Errorf("%w: SegmentBytes %d not in [%d, %d]", ErrInvalidOptions, o.SegmentBytes, minSegmentBytes, maxSegmentBytesLimit)
	}
	if o.MaxRecordBytes < 0 || o.MaxRecordBytes > maxRecordBytesLimit {
		return o, fmt.Errorf("%w: MaxRecordBytes %d not in [1, %d]", ErrInvalidOptions, o.MaxRecordBytes, maxRecordBytesLimit)
	}
	return o, nil
}
