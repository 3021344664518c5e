package txn

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record is one __transaction_state record: Kafka's TxnMetadataKey
// (version 0) and TxnMetadataValue (version 0, as Kafka writes for
// transaction versions 0 and 1; version 1 is read too). A nil Metadata is
// a tombstone (an expired transactional id).
type Record struct {
	TransactionalID string
	Metadata        *Metadata
}

// Tombstone reports whether r deletes its transactional id.
func (r Record) Tombstone() bool { return r.Metadata == nil }

// ErrUnknownRecordType is a key version this coordinator does not know:
// the record is skipped, as Kafka skips unknown versions of other
// coordinators' records.
var ErrUnknownRecordType = errors.New("txn: unknown __transaction_state key version")

// ErrBadRecord is a record that cannot be decoded.
var ErrBadRecord = errors.New("txn: malformed __transaction_state record")

// EncodeKey is r's key.
func (r Record) EncodeKey() []byte {
	k := kmsg.NewTxnMetadataKey()
	k.Version = 0
	k.TransactionalID = r.TransactionalID
	return k.AppendTo(nil)
}

// EncodeValue is r's value; nil for a tombstone.
func (r Record) EncodeValue() []byte {
	if r.Metadata == nil {
		return nil
	}
	m := r.Metadata
	v := kmsg.NewTxnMetadataValue()
	v.Version = 0
	v.ProducerID = m.ProducerID
	v.ProducerEpoch = m.ProducerEpoch
	v.TimeoutMillis = m.TimeoutMs
	v.State = kmsg.TransactionState(m.State)
	v.LastUpdateTimestamp = m.LastUpdateMs
	v.StartTimestamp = m.StartMs
	for _, tp := range m.Partitions {
		if n := len(v.Topics); n > 0 && v.Topics[n-1].Topic == tp.Topic {
			v.Topics[n-1].Partitions = append(v.Topics[n-1].Partitions, tp.Partition)
			continue
		}
		t := kmsg.NewTxnMetadataValueTopic()
		t.Topic = tp.Topic
		t.Partitions = []int32{tp.Partition}
		v.Topics = append(v.Topics, t)
	}
	return v.AppendTo(nil)
}

// DecodeRecord decodes a __transaction_state record; a nil value is a
// tombstone.
func DecodeRecord(key, value []byte) (Record, error) {
	var k kmsg.TxnMetadataKey
	if len(key) < 2 {
		return Record{}, fmt.Errorf("%w: key of %d bytes", ErrBadRecord, len(key))
	}
	if err := k.ReadFrom(key); err != nil {
		return Record{}, fmt.Errorf("%w: key: %v", ErrBadRecord, err)
	}
	if k.Version != 0 {
		return Record{}, fmt.Errorf("%w: %d", ErrUnknownRecordType, k.Version)
	}
	r := Record{TransactionalID: k.TransactionalID}
	if value == nil {
		return r, nil
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return Record{}, fmt.Errorf("%w: value of %q: %v", ErrBadRecord, k.TransactionalID, err)
	}
	if v.Version > 1 || v.Version < 0 {
		return Record{}, fmt.Errorf("%w: value version %d of %q", ErrBadRecord, v.Version, k.TransactionalID)
	}
	st := State(v.State)
	if st < Empty || st > PrepareEpochFence {
		return Record{}, fmt.Errorf("%w: state %d of %q", ErrBadRecord, v.State, k.TransactionalID)
	}
	m := &Metadata{
		TransactionalID: k.TransactionalID, ProducerID: v.ProducerID, PrevProducerID: NoProducerID,
		ProducerEpoch: v.ProducerEpoch, LastProducerEpoch: NoProducerEpoch, TimeoutMs: v.TimeoutMillis,
		State: st, StartMs: v.StartTimestamp, LastUpdateMs: v.LastUpdateTimestamp,
	}
	if v.Version >= 1 && v.PreviousProducerID >= 0 {
		m.PrevProducerID = v.PreviousProducerID
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			m.Partitions = append(m.Partitions, TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	m.Partitions = sortPartitions(m.Partitions)
	r.Metadata = m
	return r, nil
}
