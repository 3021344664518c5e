package groups

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	// ErrCorruptRecord is returned when a __consumer_offsets record does
	// not decode, or decodes to something that cannot be true.
	ErrCorruptRecord = errors.New("groups: corrupt __consumer_offsets record")
	// ErrUnknownRecordType is returned for a key version this package
	// does not know (share and streams groups, regular expressions of
	// consumer groups, transactions). A loader skips such records.
	ErrUnknownRecordType = errors.New("groups: unknown __consumer_offsets record type")
	// ErrNotLoading is returned by Replay once loading is over.
	ErrNotLoading = errors.New("groups: coordinator is not loading")
)

// Key and value versions written to __consumer_offsets: those Kafka 4.0
// writes, so that Kafka's own tools read our log. Part of the on-disk
// format; never change.
const (
	offsetCommitKeyVersion         int16 = 1
	groupMetadataKeyVersion        int16 = 2
	offsetCommitValueVersion       int16 = 3
	offsetCommitValueVersionExpire int16 = 1 // the only one with expire_timestamp
	groupMetadataValueVersion      int16 = 3
	maxValueVersion                int16 = 4 // newest version read
)

// RecordKind says which of Kafka's __consumer_offsets record types a
// Record is: the classic ones, and from 3 on those of KIP-848 consumer
// groups, whose number is their key version (records_consumer.go).
type RecordKind int8

const (
	// OffsetCommitRecord is a committed offset (key versions 0 and 1).
	OffsetCommitRecord RecordKind = 1
	// GroupMetadataRecord is a group's generation and members (key
	// version 2).
	GroupMetadataRecord RecordKind = 2
	// ConsumerGroupMetadataRecord is a consumer group's epoch (key v3:
	// GroupId).
	ConsumerGroupMetadataRecord RecordKind = 3
	// ConsumerGroupPartitionMetadataRecord is the subscribed topics'
	// metadata Kafka 4.0 stored (key v4: GroupId). Decode only: its value
	// is not read and never written; Kafka 4.1 replaced it with the
	// metadata hash and deletes it.
	ConsumerGroupPartitionMetadataRecord RecordKind = 4
	// ConsumerGroupMemberMetadataRecord is a member's subscription (key
	// v5: GroupId, MemberId).
	ConsumerGroupMemberMetadataRecord RecordKind = 5
	// ConsumerGroupTargetAssignmentMetadataRecord is the target
	// assignment's epoch (key v6: GroupId).
	ConsumerGroupTargetAssignmentMetadataRecord RecordKind = 6
	// ConsumerGroupTargetAssignmentMemberRecord is a member's target
	// assignment (key v7: GroupId, MemberId).
	ConsumerGroupTargetAssignmentMemberRecord RecordKind = 7
	// ConsumerGroupCurrentMemberAssignmentRecord is a member's current
	// assignment (key v8: GroupId, MemberId).
	ConsumerGroupCurrentMemberAssignmentRecord RecordKind = 8
)

// OffsetAndMetadata is a committed offset as stored.
type OffsetAndMetadata struct {
	Offset      int64
	LeaderEpoch int32 // -1 if unknown
	Metadata    string
	// CommitTimestampMs is when the coordinator accepted the commit.
	CommitTimestampMs int64
	// ExpireTimestampMs is -1 unless the commit came with its own
	// retention (OffsetCommit v2-4); then it is stored with value
	// version 1, which has no leader epoch, so LeaderEpoch is -1.
	ExpireTimestampMs int64
}

// MemberMetadataValue is one member in a GroupMetadataValue.
type MemberMetadataValue struct {
	MemberID           string
	InstanceID         string // "" is null
	ClientID           string
	ClientHost         string
	RebalanceTimeoutMs int32
	SessionTimeoutMs   int32
	Subscription       []byte // metadata for the group's protocol
	Assignment         []byte
}

// GroupMetadataValue is a group's state as stored: written when a
// generation's assignment is complete (the leader's SyncGroup), when the
// group becomes Empty, and when a static member is replaced.
type GroupMetadataValue struct {
	ProtocolType string
	Generation   int32
	Protocol     string // "" is null (an Empty group)
	Leader       string // "" is null
	// CurrentStateTimestampMs is when the group entered its state; for an
	// Empty group, the start of its offsets' retention. -1 if unknown.
	CurrentStateTimestampMs int64
	Members                 []MemberMetadataValue
}

// Record is one __consumer_offsets record. Of the value pointers, only
// the one of the record's kind is used; nil is a tombstone.
type Record struct {
	Kind           RecordKind
	Group          string
	TopicPartition TopicPartition      // OffsetCommitRecord only
	Offset         *OffsetAndMetadata  // OffsetCommitRecord
	Metadata       *GroupMetadataValue // GroupMetadataRecord

	// MemberID keys ConsumerGroupMemberMetadataRecord,
	// ConsumerGroupTargetAssignmentMemberRecord and
	// ConsumerGroupCurrentMemberAssignmentRecord.
	MemberID          string
	ConsumerMetadata  *ConsumerGroupMetadataValue                 // ConsumerGroupMetadataRecord
	ConsumerMember    *ConsumerGroupMemberMetadataValue           // ConsumerGroupMemberMetadataRecord
	TargetMetadata    *ConsumerGroupTargetAssignmentMetadataValue // ConsumerGroupTargetAssignmentMetadataRecord
	TargetMember      *ConsumerGroupTargetAssignmentMemberValue   // ConsumerGroupTargetAssignmentMemberRecord
	CurrentAssignment *ConsumerGroupCurrentMemberAssignmentValue  // ConsumerGroupCurrentMemberAssignmentRecord

	// Producer is set on the offset commits of a TxnOffsetCommit: they are
	// appended as a transactional batch of that producer, and replayed as
	// pending until its marker. It is the batch's, not the record's: the
	// key and value do not carry it.
	Producer *TxnProducer

	// partitionMetadata is set when a ConsumerGroupPartitionMetadataRecord
	// was decoded with a value: it is not a tombstone, though its value is
	// not kept.
	partitionMetadata bool
}

// Tombstone reports whether r deletes its key.
func (r Record) Tombstone() bool {
	switch {
	case r.Kind == OffsetCommitRecord:
		return r.Offset == nil
	case isConsumerKind(r.Kind):
		return r.consumerTombstone()
	}
	return r.Metadata == nil
}

// EncodeKey returns r's key in Kafka's format.
func (r Record) EncodeKey() []byte {
	switch r.Kind {
	case OffsetCommitRecord:
		k := kmsg.OffsetCommitKey{Version: offsetCommitKeyVersion, Group: r.Group, Topic: r.TopicPartition.Topic, Partition: r.TopicPartition.Partition}
		return k.AppendTo(nil)
	case GroupMetadataRecord:
		k := kmsg.GroupMetadataKey{Version: groupMetadataKeyVersion, Group: r.Group}
		return k.AppendTo(nil)
	}
	if isConsumerKind(r.Kind) {
		return r.encodeConsumerKey()
	}
	panic(fmt.Sprintf("groups: encoding record of kind %d", r.Kind))
}

// EncodeValue returns r's value in Kafka's format, nil for a tombstone.
func (r Record) EncodeValue() []byte {
	switch r.Kind {
	case OffsetCommitRecord:
		if r.Offset == nil {
			return nil
		}
		o := r.Offset
		v := kmsg.NewOffsetCommitValue()
		v.Version = offsetCommitValueVersion
		if o.ExpireTimestampMs >= 0 {
			v.Version = offsetCommitValueVersionExpire
		}
		v.Offset = o.Offset
		v.LeaderEpoch = o.LeaderEpoch
		v.Metadata = o.Metadata
		v.CommitTimestamp = o.CommitTimestampMs
		v.ExpireTimestamp = o.ExpireTimestampMs
		return v.AppendTo(nil)
	case GroupMetadataRecord:
		if r.Metadata == nil {
			return nil
		}
		m := r.Metadata
		v := kmsg.NewGroupMetadataValue()
		v.Version = groupMetadataValueVersion
		v.ProtocolType = m.ProtocolType
		v.Generation = m.Generation
		v.Protocol = nullable(m.Protocol)
		v.Leader = nullable(m.Leader)
		v.CurrentStateTimestamp = m.CurrentStateTimestampMs
		v.Members = make([]kmsg.GroupMetadataValueMember, len(m.Members))
		for i, mm := range m.Members {
			v.Members[i] = kmsg.GroupMetadataValueMember{
				MemberID:               mm.MemberID,
				InstanceID:             nullable(mm.InstanceID),
				ClientID:               mm.ClientID,
				ClientHost:             mm.ClientHost,
				RebalanceTimeoutMillis: mm.RebalanceTimeoutMs,
				SessionTimeoutMillis:   mm.SessionTimeoutMs,
				Subscription:           nonNil(mm.Subscription),
				Assignment:             nonNil(mm.Assignment),
			}
		}
		return v.AppendTo(nil)
	}
	if isConsumerKind(r.Kind) {
		return r.encodeConsumerValue()
	}
	panic(fmt.Sprintf("groups: encoding record of kind %d", r.Kind))
}

// DecodeRecord parses a __consumer_offsets record. A nil or empty value is
// a tombstone. Keys of other record types give ErrUnknownRecordType;
// anything malformed, or a value version newer than we know, gives
// ErrCorruptRecord.
func DecodeRecord(key, value []byte) (Record, error) {
	if len(key) < 2 {
		return Record{}, fmt.Errorf("%w: key of %d bytes", ErrCorruptRecord, len(key))
	}
	switch version := int16(binary.BigEndian.Uint16(key)); version {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			return Record{}, fmt.Errorf("%w: offset commit key: %w", ErrCorruptRecord, err)
		}
		if k.Partition < 0 {
			return Record{}, fmt.Errorf("%w: offset commit key partition %d", ErrCorruptRecord, k.Partition)
		}
		r := Record{Kind: OffsetCommitRecord, Group: k.Group, TopicPartition: TopicPartition{Topic: k.Topic, Partition: k.Partition}}
		if len(value) == 0 {
			return r, nil
		}
		var v kmsg.OffsetCommitValue
		if err := checkValueVersion(value); err != nil {
			return Record{}, err
		}
		if err := v.ReadFrom(value); err != nil {
			return Record{}, fmt.Errorf("%w: offset commit value: %w", ErrCorruptRecord, err)
		}
		o := OffsetAndMetadata{Offset: v.Offset, LeaderEpoch: -1, Metadata: v.Metadata, CommitTimestampMs: v.CommitTimestamp, ExpireTimestampMs: -1}
		if v.Version >= 3 {
			o.LeaderEpoch = v.LeaderEpoch
		}
		if v.Version == 1 && v.ExpireTimestamp >= 0 {
			// -1 is Kafka's "none"; other negative values mean nothing.
			o.ExpireTimestampMs = v.ExpireTimestamp
		}
		r.Offset = &o
		return r, nil
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			return Record{}, fmt.Errorf("%w: group metadata key: %w", ErrCorruptRecord, err)
		}
		r := Record{Kind: GroupMetadataRecord, Group: k.Group}
		if len(value) == 0 {
			return r, nil
		}
		if err := checkValueVersion(value); err != nil {
			return Record{}, err
		}
		var v kmsg.GroupMetadataValue
		if err := v.ReadFrom(value); err != nil {
			return Record{}, fmt.Errorf("%w: group metadata value: %w", ErrCorruptRecord, err)
		}
		m := &GroupMetadataValue{
			ProtocolType:            v.ProtocolType,
			Generation:              v.Generation,
			Protocol:                deref(v.Protocol),
			Leader:                  deref(v.Leader),
			CurrentStateTimestampMs: -1,
			Members:                 make([]MemberMetadataValue, len(v.Members)),
		}
		if v.Version >= 2 {
			m.CurrentStateTimestampMs = v.CurrentStateTimestamp
		}
		for i, mm := range v.Members {
			rt := mm.RebalanceTimeoutMillis
			if v.Version < 1 {
				rt = mm.SessionTimeoutMillis // v0 had one timeout for both
			}
			m.Members[i] = MemberMetadataValue{
				MemberID:           mm.MemberID,
				InstanceID:         deref(mm.InstanceID),
				ClientID:           mm.ClientID,
				ClientHost:         mm.ClientHost,
				RebalanceTimeoutMs: rt,
				SessionTimeoutMs:   mm.SessionTimeoutMillis,
				// kmsg aliases the input; the caller may reuse it.
				Subscription: append([]byte{}, mm.Subscription...),
				Assignment:   append([]byte{}, mm.Assignment...),
			}
		}
		r.Metadata = m
		return r, nil
	case consumerGroupMetadataKeyVersion, consumerGroupPartitionMetadataKeyVersion,
		consumerGroupMemberMetadataKeyVersion, consumerGroupTargetAssignmentMetadataKeyVersion,
		consumerGroupTargetAssignmentMemberKeyVersion, consumerGroupCurrentMemberAssignmentKeyVersion:
		return decodeConsumerRecord(RecordKind(version), key, value)
	default:
		return Record{}, fmt.Errorf("%w: key version %d", ErrUnknownRecordType, version)
	}
}

// checkValueVersion refuses value versions newer than we know: kmsg would
// guess at their layout.
func checkValueVersion(value []byte) error {
	if len(value) < 2 {
		return fmt.Errorf("%w: value of %d bytes", ErrCorruptRecord, len(value))
	}
	if v := int16(binary.BigEndian.Uint16(value)); v < 0 || v > maxValueVersion {
		return fmt.Errorf("%w: value version %d", ErrCorruptRecord, v)
	}
	return nil
}

// Equal reports whether two records say the same thing (nil and empty
// byte slices are equal: the format does not tell them apart).
func (r Record) Equal(o Record) bool {
	if r.Kind != o.Kind || r.Group != o.Group || r.TopicPartition != o.TopicPartition {
		return false
	}
	if (r.Offset == nil) != (o.Offset == nil) || (r.Metadata == nil) != (o.Metadata == nil) {
		return false
	}
	if r.Offset != nil && *r.Offset != *o.Offset {
		return false
	}
	if r.Metadata != nil && !r.Metadata.Equal(o.Metadata) {
		return false
	}
	return r.consumerEqual(o)
}

// Equal reports whether two group metadata values say the same thing.
func (m *GroupMetadataValue) Equal(o *GroupMetadataValue) bool {
	if m.ProtocolType != o.ProtocolType || m.Generation != o.Generation || m.Protocol != o.Protocol ||
		m.Leader != o.Leader || m.CurrentStateTimestampMs != o.CurrentStateTimestampMs || len(m.Members) != len(o.Members) {
		return false
	}
	for i := range m.Members {
		a, b := m.Members[i], o.Members[i]
		if a.MemberID != b.MemberID || a.InstanceID != b.InstanceID || a.ClientID != b.ClientID ||
			a.ClientHost != b.ClientHost || a.RebalanceTimeoutMs != b.RebalanceTimeoutMs ||
			a.SessionTimeoutMs != b.SessionTimeoutMs || !bytes.Equal(a.Subscription, b.Subscription) ||
			!bytes.Equal(a.Assignment, b.Assignment) {
			return false
		}
	}
	return true
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
