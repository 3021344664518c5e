package groups

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// The records Kafka 4 writes for groups of the "consumer" type (KIP-848),
// byte for byte as Apache Kafka 4.1's group coordinator writes them
// (ConsumerGroup*Key.json and *Value.json). kmsg has no types for them.
//
// A key is its int16 version, which names the record type, then the key
// fields with int16-length strings. A value is its int16 version, then a
// flexible body: compact strings and arrays, and a tagged-field section
// closing every struct. Each value schema has one version, 0; Kafka has
// since grown them only by tagged fields (MetadataHash in 4.1, later ones
// after it), which keeps version 0 readable by every Kafka 4.
//
// Part of the on-disk format; never change.
const (
	consumerGroupMetadataKeyVersion                 int16 = 3
	consumerGroupPartitionMetadataKeyVersion        int16 = 4
	consumerGroupMemberMetadataKeyVersion           int16 = 5
	consumerGroupTargetAssignmentMetadataKeyVersion int16 = 6
	consumerGroupTargetAssignmentMemberKeyVersion   int16 = 7
	consumerGroupCurrentMemberAssignmentKeyVersion  int16 = 8

	// consumerValueVersion is the only value version of each of these
	// records: written, and the newest read.
	consumerValueVersion int16 = 0

	// metadataHashTag is ConsumerGroupMetadataValue's tagged field 0, an
	// int64 (KIP-1101, Kafka 4.1), written only when not 0 as Kafka does.
	metadataHashTag = 0
)

// topicPartitionsMinSize is the fewest bytes a TopicPartitions takes: a
// topic id, an empty partition array and an empty tagged-field section.
const topicPartitionsMinSize = 16 + 1 + 1

// TopicPartitions is one topic's partitions by topic id, as the records
// store them.
type TopicPartitions struct {
	TopicID    [16]byte
	Partitions []int32
}

// ConsumerGroupMetadataValue is a consumer group's epoch (key v3): Kafka
// writes it when the group epoch bumps.
type ConsumerGroupMetadataValue struct {
	Epoch int32
	// MetadataHash is the hash of the subscribed topics' metadata
	// (Kafka 4.1); 0 if the record has none.
	MetadataHash int64
}

// ConsumerGroupMemberMetadataValue is a member's subscription and client
// details (key v5). Kafka's tagged ClassicMemberMetadata (a member that
// joined with the classic protocol) is not written and is skipped on read.
type ConsumerGroupMemberMetadataValue struct {
	InstanceID           string // "" is null
	RackID               string // "" is null
	ClientID             string
	ClientHost           string
	SubscribedTopicNames []string
	SubscribedTopicRegex string // "" is null
	RebalanceTimeoutMs   int32
	ServerAssignor       string // "" is null
}

// ConsumerGroupTargetAssignmentMetadataValue is the epoch of a consumer
// group's target assignment (key v6). Kafka 4.1 has no other field here;
// tagged fields of later versions (AssignmentTimestamp) are skipped.
type ConsumerGroupTargetAssignmentMetadataValue struct {
	AssignmentEpoch int32
}

// ConsumerGroupTargetAssignmentMemberValue is one member's share of the
// target assignment (key v7).
type ConsumerGroupTargetAssignmentMemberValue struct {
	TopicPartitions []TopicPartitions
}

// ConsumerGroupCurrentMemberAssignmentValue is what a member owns now and
// must still give up (key v8).
type ConsumerGroupCurrentMemberAssignmentValue struct {
	MemberEpoch         int32
	PreviousMemberEpoch int32
	// State is Kafka's MemberState value: 0 STABLE, 1
	// UNREVOKED_PARTITIONS, 2 UNRELEASED_PARTITIONS, 127 UNKNOWN (what
	// Kafka makes of any other value, so any value is kept as read).
	State                       int8
	AssignedPartitions          []TopicPartitions
	PartitionsPendingRevocation []TopicPartitions
}

func isConsumerKind(k RecordKind) bool {
	return k >= ConsumerGroupMetadataRecord && k <= ConsumerGroupCurrentMemberAssignmentRecord
}

// hasMemberID reports whether records of kind k are keyed by member.
func hasMemberID(k RecordKind) bool {
	return k == ConsumerGroupMemberMetadataRecord || k == ConsumerGroupTargetAssignmentMemberRecord ||
		k == ConsumerGroupCurrentMemberAssignmentRecord
}

// consumerTombstone reports whether r, of a consumer kind, has no value.
func (r Record) consumerTombstone() bool {
	switch r.Kind {
	case ConsumerGroupMetadataRecord:
		return r.ConsumerMetadata == nil
	case ConsumerGroupPartitionMetadataRecord:
		return !r.partitionMetadata
	case ConsumerGroupMemberMetadataRecord:
		return r.ConsumerMember == nil
	case ConsumerGroupTargetAssignmentMetadataRecord:
		return r.TargetMetadata == nil
	case ConsumerGroupTargetAssignmentMemberRecord:
		return r.TargetMember == nil
	case ConsumerGroupCurrentMemberAssignmentRecord:
		return r.CurrentAssignment == nil
	}
	panic(fmt.Sprintf("groups: record of kind %d is not a consumer group record", r.Kind))
}

// encodeConsumerKey writes the key: its version is the kind's number.
func (r Record) encodeConsumerKey() []byte {
	b := appendInt16(nil, int16(r.Kind))
	b = appendKeyString(b, r.Group)
	if hasMemberID(r.Kind) {
		b = appendKeyString(b, r.MemberID)
	}
	return b
}

// encodeConsumerValue writes r's value, nil for a tombstone.
func (r Record) encodeConsumerValue() []byte {
	if r.consumerTombstone() {
		return nil
	}
	b := appendInt16(nil, consumerValueVersion)
	switch r.Kind {
	case ConsumerGroupMetadataRecord:
		v := r.ConsumerMetadata
		b = appendInt32(b, v.Epoch)
		if v.MetadataHash == 0 {
			return appendNoTags(b)
		}
		b = appendUvarint(b, 1) // one tagged field
		b = appendUvarint(b, metadataHashTag)
		b = appendUvarint(b, 8)
		return appendInt64(b, v.MetadataHash)
	case ConsumerGroupPartitionMetadataRecord:
		// Kafka 4.1 no longer writes it (the metadata hash replaced it)
		// and neither do we; a decoded one can only be deleted.
		panic("groups: encoding a ConsumerGroupPartitionMetadata value, which is decode only")
	case ConsumerGroupMemberMetadataRecord:
		v := r.ConsumerMember
		b = appendCompactNullableString(b, v.InstanceID)
		b = appendCompactNullableString(b, v.RackID)
		b = appendCompactString(b, v.ClientID)
		b = appendCompactString(b, v.ClientHost)
		b = appendCompactLen(b, len(v.SubscribedTopicNames))
		for _, t := range v.SubscribedTopicNames {
			b = appendCompactString(b, t)
		}
		b = appendCompactNullableString(b, v.SubscribedTopicRegex)
		b = appendInt32(b, v.RebalanceTimeoutMs)
		b = appendCompactNullableString(b, v.ServerAssignor)
		return appendNoTags(b)
	case ConsumerGroupTargetAssignmentMetadataRecord:
		b = appendInt32(b, r.TargetMetadata.AssignmentEpoch)
		return appendNoTags(b)
	case ConsumerGroupTargetAssignmentMemberRecord:
		b = appendTopicPartitions(b, r.TargetMember.TopicPartitions)
		return appendNoTags(b)
	case ConsumerGroupCurrentMemberAssignmentRecord:
		v := r.CurrentAssignment
		b = appendInt32(b, v.MemberEpoch)
		b = appendInt32(b, v.PreviousMemberEpoch)
		b = appendInt8(b, v.State)
		b = appendTopicPartitions(b, v.AssignedPartitions)
		b = appendTopicPartitions(b, v.PartitionsPendingRevocation)
		return appendNoTags(b)
	}
	panic(fmt.Sprintf("groups: record of kind %d is not a consumer group record", r.Kind))
}

func appendTopicPartitions(b []byte, tps []TopicPartitions) []byte {
	b = appendCompactLen(b, len(tps))
	for _, tp := range tps {
		b = append(b, tp.TopicID[:]...)
		b = appendCompactInt32s(b, tp.Partitions)
		b = appendNoTags(b)
	}
	return b
}

// decodeConsumerRecord parses a record whose key version is one of the
// consumer kinds'.
func decodeConsumerRecord(kind RecordKind, key, value []byte) (Record, error) {
	kr := flexReader{b: key[2:]}
	r := Record{Kind: kind, Group: kr.keyString()}
	if hasMemberID(kind) {
		r.MemberID = kr.keyString()
	}
	if err := kr.done(); err != nil {
		return Record{}, fmt.Errorf("%w: key version %d: %w", ErrCorruptRecord, kind, err)
	}
	if len(value) == 0 {
		return r, nil
	}
	if len(value) < 2 {
		return Record{}, fmt.Errorf("%w: value of %d bytes", ErrCorruptRecord, len(value))
	}
	if v := int16(binary.BigEndian.Uint16(value)); v != consumerValueVersion {
		return Record{}, fmt.Errorf("%w: key version %d: value version %d", ErrCorruptRecord, kind, v)
	}
	vr := flexReader{b: value[2:]}
	switch kind {
	case ConsumerGroupMetadataRecord:
		v := &ConsumerGroupMetadataValue{Epoch: vr.int32()}
		vr.tags(func(tag uint32, data []byte) error {
			if tag != metadataHashTag {
				return nil
			}
			if len(data) != 8 {
				return fmt.Errorf("metadata hash of %d bytes", len(data))
			}
			v.MetadataHash = int64(binary.BigEndian.Uint64(data))
			return nil
		})
		r.ConsumerMetadata = v
	case ConsumerGroupPartitionMetadataRecord:
		// Deprecated by Kafka 4.1, which only deletes it: nothing in it
		// is used, so its body is not read.
		r.partitionMetadata = true
		return r, nil
	case ConsumerGroupMemberMetadataRecord:
		v := &ConsumerGroupMemberMetadataValue{
			InstanceID:           vr.compactNullableString(),
			RackID:               vr.compactNullableString(),
			ClientID:             vr.compactString(),
			ClientHost:           vr.compactString(),
			SubscribedTopicNames: vr.compactStrings(),
			SubscribedTopicRegex: vr.compactNullableString(),
			RebalanceTimeoutMs:   vr.int32(),
			ServerAssignor:       vr.compactNullableString(),
		}
		vr.tags(nil) // ClassicMemberMetadata, and what Kafka adds later
		r.ConsumerMember = v
	case ConsumerGroupTargetAssignmentMetadataRecord:
		r.TargetMetadata = &ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: vr.int32()}
		vr.tags(nil)
	case ConsumerGroupTargetAssignmentMemberRecord:
		r.TargetMember = &ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: readTopicPartitions(&vr)}
		vr.tags(nil)
	case ConsumerGroupCurrentMemberAssignmentRecord:
		v := &ConsumerGroupCurrentMemberAssignmentValue{
			MemberEpoch:         vr.int32(),
			PreviousMemberEpoch: vr.int32(),
			State:               vr.int8(),
		}
		v.AssignedPartitions = readTopicPartitions(&vr)
		v.PartitionsPendingRevocation = readTopicPartitions(&vr)
		vr.tags(nil)
		r.CurrentAssignment = v
	default:
		panic(fmt.Sprintf("groups: decoding record of kind %d as a consumer group record", kind))
	}
	if err := vr.done(); err != nil {
		return Record{}, fmt.Errorf("%w: key version %d value: %w", ErrCorruptRecord, kind, err)
	}
	return r, nil
}

// readTopicPartitions reads a TopicPartitions array. A negative partition
// cannot be true: the record is corrupt.
func readTopicPartitions(r *flexReader) []TopicPartitions {
	n := r.compactArrayLen(topicPartitionsMinSize)
	if r.err != nil || n == 0 {
		return nil
	}
	out := make([]TopicPartitions, n)
	for i := range out {
		out[i].TopicID = r.uuid()
		out[i].Partitions = r.compactInt32s()
		// Later Kafka versions tag AssignmentEpochs here (KIP-1251).
		r.tags(nil)
		for _, p := range out[i].Partitions {
			if p < 0 {
				r.fail(fmt.Errorf("groups: negative partition %d", p))
			}
		}
		if r.err != nil {
			return nil
		}
	}
	return out
}

// consumerEqual compares the KIP-848 parts of two records.
func (r Record) consumerEqual(o Record) bool {
	if r.MemberID != o.MemberID || r.partitionMetadata != o.partitionMetadata {
		return false
	}
	if !ptrEqual(r.ConsumerMetadata, o.ConsumerMetadata, func(a, b *ConsumerGroupMetadataValue) bool { return *a == *b }) ||
		!ptrEqual(r.ConsumerMember, o.ConsumerMember, (*ConsumerGroupMemberMetadataValue).Equal) ||
		!ptrEqual(r.TargetMetadata, o.TargetMetadata, func(a, b *ConsumerGroupTargetAssignmentMetadataValue) bool { return *a == *b }) ||
		!ptrEqual(r.TargetMember, o.TargetMember, func(a, b *ConsumerGroupTargetAssignmentMemberValue) bool {
			return topicPartitionsEqual(a.TopicPartitions, b.TopicPartitions)
		}) ||
		!ptrEqual(r.CurrentAssignment, o.CurrentAssignment, (*ConsumerGroupCurrentMemberAssignmentValue).Equal) {
		return false
	}
	return true
}

func ptrEqual[T any](a, b *T, eq func(a, b *T) bool) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return eq(a, b)
}

// Equal reports whether two member metadata values say the same thing
// (nil and empty topic lists are equal).
func (m *ConsumerGroupMemberMetadataValue) Equal(o *ConsumerGroupMemberMetadataValue) bool {
	return m.InstanceID == o.InstanceID && m.RackID == o.RackID && m.ClientID == o.ClientID &&
		m.ClientHost == o.ClientHost && slices.Equal(m.SubscribedTopicNames, o.SubscribedTopicNames) &&
		m.SubscribedTopicRegex == o.SubscribedTopicRegex && m.RebalanceTimeoutMs == o.RebalanceTimeoutMs &&
		m.ServerAssignor == o.ServerAssignor
}

// Equal reports whether two current assignments say the same thing (nil
// and empty lists are equal).
func (a *ConsumerGroupCurrentMemberAssignmentValue) Equal(o *ConsumerGroupCurrentMemberAssignmentValue) bool {
	return a.MemberEpoch == o.MemberEpoch && a.PreviousMemberEpoch == o.PreviousMemberEpoch && a.State == o.State &&
		topicPartitionsEqual(a.AssignedPartitions, o.AssignedPartitions) &&
		topicPartitionsEqual(a.PartitionsPendingRevocation, o.PartitionsPendingRevocation)
}

func topicPartitionsEqual(a, b []TopicPartitions) bool {
	return slices.EqualFunc(a, b, func(x, y TopicPartitions) bool {
		return x.TopicID == y.TopicID && slices.Equal(x.Partitions, y.Partitions)
	})
}
