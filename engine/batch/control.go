package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Transaction markers: the one record of a control batch (attributes bit 5)
// that ends a transaction, in Kafka's layout (ControlRecordType and
// EndTransactionMarker), all big-endian:
//
//	key:   version int16 = 0, type int16 (0 ABORT, 1 COMMIT)
//	value: version int16 = 0, coordinator_epoch int32
//
// Kafka's KRaft control types (leader change, snapshot headers) use other
// type values; ParseEndTxnMarker reports them as ErrNotEndTxnMarker.

// ControlType is a control record's type.
type ControlType int16

const (
	ControlAbort  ControlType = 0
	ControlCommit ControlType = 1
)

const (
	controlKeySize    = 4
	endTxnValueSize   = 6
	controlKeyVersion = 0
	endTxnVersion     = 0
)

// ErrNotEndTxnMarker: a well-formed control record of another type than
// ABORT or COMMIT.
var ErrNotEndTxnMarker = errors.New("batch: control record is not a transaction marker")

// EndTxnMarker is what a transaction marker says.
type EndTxnMarker struct {
	Commit           bool
	CoordinatorEpoch int32
}

// Type is the marker's control type.
func (m EndTxnMarker) Type() ControlType {
	if m.Commit {
		return ControlCommit
	}
	return ControlAbort
}

// AppendControlKey appends the key of a control record of type t.
func AppendControlKey(dst []byte, t ControlType) []byte {
	dst = binary.BigEndian.AppendUint16(dst, controlKeyVersion)
	return binary.BigEndian.AppendUint16(dst, uint16(t))
}

// AppendEndTxnValue appends a transaction marker's value.
func AppendEndTxnValue(dst []byte, coordinatorEpoch int32) []byte {
	dst = binary.BigEndian.AppendUint16(dst, endTxnVersion)
	return binary.BigEndian.AppendUint32(dst, uint32(coordinatorEpoch))
}

// ParseEndTxnMarker reads a control record's key and value. Like Kafka it
// reads the fields of version 0 and ignores bytes after them (a later
// version may add some); a negative version is corrupt.
func ParseEndTxnMarker(key, value []byte) (EndTxnMarker, error) {
	if len(key) < controlKeySize {
		return EndTxnMarker{}, fmt.Errorf("%w: control record key of %d bytes", ErrInvalidRecord, len(key))
	}
	if v := int16(binary.BigEndian.Uint16(key)); v < 0 {
		return EndTxnMarker{}, fmt.Errorf("%w: control record key version %d", ErrInvalidRecord, v)
	}
	t := ControlType(binary.BigEndian.Uint16(key[2:]))
	if t != ControlAbort && t != ControlCommit {
		return EndTxnMarker{}, fmt.Errorf("%w: type %d", ErrNotEndTxnMarker, t)
	}
	if len(value) < endTxnValueSize {
		return EndTxnMarker{}, fmt.Errorf("%w: transaction marker value of %d bytes", ErrInvalidRecord, len(value))
	}
	if v := int16(binary.BigEndian.Uint16(value)); v < 0 {
		return EndTxnMarker{}, fmt.Errorf("%w: transaction marker version %d", ErrInvalidRecord, v)
	}
	return EndTxnMarker{Commit: t == ControlCommit, CoordinatorEpoch: int32(binary.BigEndian.Uint32(value[2:]))}, nil
}

// ReadEndTxnMarker validates b, one control batch, and returns the marker
// its first record holds. A control batch without records (compaction may
// leave one) or with a record of another control type gives
// ErrNotEndTxnMarker.
func ReadEndTxnMarker(b []byte, lim Limits) (EndTxnMarker, error) {
	lim.Origin = AppendOriginReplication
	var m EndTxnMarker
	err := ErrNotEndTxnMarker
	walkErr := Records(b, lim, func(r Record) error {
		m, err = ParseEndTxnMarker(r.Key, r.Value)
		return errStopWalk
	})
	if walkErr != nil && walkErr != errStopWalk {
		return EndTxnMarker{}, walkErr
	}
	if err != nil {
		return EndTxnMarker{}, err
	}
	return m, nil
}

var errStopWalk = errors.New("stop")

// BuildEndTxnMarker returns a control batch holding one transaction marker
// of producerID at producerEpoch, as a leader writes it (Kafka's
// MemoryRecords.withEndTransactionMarker): transactional and control bits,
// base sequence -1, one record at timestamp ts. The base offset and leader
// epoch are set by the append.
func BuildEndTxnMarker(producerID int64, producerEpoch int16, m EndTxnMarker, ts int64) ([]byte, error) {
	b := NewBuilder(CompressionNone)
	b.ProducerID, b.ProducerEpoch = producerID, producerEpoch
	b.IsTransactional, b.IsControl = true, true
	b.Append(Record{
		Timestamp: ts,
		Key:       AppendControlKey(make([]byte, 0, controlKeySize), m.Type()),
		Value:     AppendEndTxnValue(make([]byte, 0, endTxnValueSize), m.CoordinatorEpoch),
	})
	return b.Build()
}
