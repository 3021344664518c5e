package assign

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The classic protocol's "consumer" protocol type carries these bytes
// opaquely through JoinGroup (ProtocolMetadata) and SyncGroup
// (MemberAssignment). Their schemas are Kafka's ConsumerProtocolSubscription
// and ConsumerProtocolAssignment, decoded and encoded by kmsg.

// MaxMetadataBytes bounds the subscription or assignment bytes this
// package decodes. Decoding allocates at most about eight times its input
// (a two-byte empty topic name becomes a 16-byte string header).
const MaxMetadataBytes = 1 << 20

// Versions written. Part of the wire format; Kafka readers parse any
// version up to the newest they know and read newer ones as that.
const (
	// SubscriptionVersion 3 carries OwnedPartitions (v1), Generation (v2)
	// and Rack (v3).
	SubscriptionVersion int16 = 3
	// AssignmentVersion 0 is read by every client; later versions add no
	// field an assignor here fills.
	AssignmentVersion int16 = 0
)

var (
	ErrMetadataTooLarge  = errors.New("assign: consumer protocol metadata too large")
	ErrMalformedMetadata = errors.New("assign: malformed consumer protocol metadata")
)

// EncodeSubscription encodes m's subscription for a JoinGroup protocol
// entry named protocol, as Kafka's Java consumer does for that assignor:
//
//   - "sticky" is eager: a member revoked everything before joining, so
//     OwnedPartitions stays empty and the previous assignment with its
//     generation travels in the user data (StickyAssignorUserData v1).
//   - "cooperative-sticky" sends OwnedPartitions and Generation, and the
//     generation again as a four-byte user data for readers older than
//     subscription v2.
//   - any other protocol sends OwnedPartitions and Generation only.
//
// Topics and partitions are written sorted (KAFKA-12898: some readers
// compare subscriptions as lists).
func EncodeSubscription(protocol string, m Member) []byte {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = SubscriptionVersion
	meta.Topics = slices.Compact(slices.Sorted(slices.Values(m.Topics)))
	meta.Generation = m.Generation
	if m.Rack != "" {
		rack := m.Rack
		meta.Rack = &rack
	}
	owned := groupByTopic(m.Owned)
	switch protocol {
	case StickyName:
		sticky := kmsg.NewStickyMemberMetadata()
		sticky.Generation = m.Generation
		for _, t := range owned {
			sticky.CurrentAssignment = append(sticky.CurrentAssignment,
				kmsg.StickyMemberMetadataCurrentAssignment{Topic: t.Topic, Partitions: t.Partitions})
		}
		meta.UserData = sticky.AppendTo(nil)
	case CooperativeStickyName:
		meta.UserData = binary.BigEndian.AppendUint32(nil, uint32(m.Generation))
		fallthrough
	default:
		for _, t := range owned {
			meta.OwnedPartitions = append(meta.OwnedPartitions,
				kmsg.ConsumerMemberMetadataOwnedPartition{Topic: t.Topic, Partitions: t.Partitions})
		}
	}
	return meta.AppendTo(nil)
}

// DecodeSubscription decodes a JoinGroup member's metadata for protocol
// into a Member, reading Owned and Generation where Kafka's assignor of
// that name reads them: "sticky" from the user data only (an empty user
// data means no claims), "cooperative-sticky" from the v1/v2 fields, or
// from a four-byte user data when the subscription predates v2, any other
// protocol from the v1/v2 fields. Versions above SubscriptionVersion are
// read as it, ignoring what follows.
func DecodeSubscription(protocol, memberID, instanceID string, metadata []byte) (Member, error) {
	if len(metadata) > MaxMetadataBytes {
		return Member{}, fmt.Errorf("%w: subscription of %d bytes, limit %d", ErrMetadataTooLarge, len(metadata), MaxMetadataBytes)
	}
	var meta kmsg.ConsumerMemberMetadata
	if err := meta.ReadFrom(metadata); err != nil {
		return Member{}, fmt.Errorf("%w: subscription: %w", ErrMalformedMetadata, err)
	}
	if meta.Version < 0 {
		return Member{}, fmt.Errorf("%w: subscription version %d", ErrMalformedMetadata, meta.Version)
	}
	m := Member{
		MemberID:   memberID,
		InstanceID: instanceID,
		Topics:     meta.Topics,
		Generation: meta.Generation,
	}
	if meta.Rack != nil {
		m.Rack = *meta.Rack
	}
	var err error
	switch {
	case protocol == StickyName:
		m.Owned, m.Generation, err = decodeStickyUserData(meta.UserData)
		if err != nil {
			return Member{}, err
		}
		return m, nil
	case protocol == CooperativeStickyName && meta.Version < 2:
		m.Generation = DefaultGeneration
		if len(meta.UserData) >= 4 {
			m.Generation = int32(binary.BigEndian.Uint32(meta.UserData))
		}
	}
	owned := 0
	for _, o := range meta.OwnedPartitions {
		owned += len(o.Partitions)
	}
	if owned > 0 {
		m.Owned = make([]TopicPartition, 0, owned)
	}
	for _, o := range meta.OwnedPartitions {
		for _, p := range o.Partitions {
			if p < 0 {
				return Member{}, fmt.Errorf("%w: owned partition %s-%d", ErrMalformedMetadata, o.Topic, p)
			}
			m.Owned = append(m.Owned, TopicPartition{Topic: o.Topic, Partition: p})
		}
	}
	return m, nil
}

// EncodeAssignment encodes one member's partitions for SyncGroup, sorted
// and grouped by topic.
func EncodeAssignment(partitions []TopicPartition) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	a.Version = AssignmentVersion
	for _, t := range groupByTopic(partitions) {
		a.Topics = append(a.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: t.Topic, Partitions: t.Partitions})
	}
	return a.AppendTo(nil)
}

// DecodeAssignment decodes a SyncGroup member assignment. An empty input is
// an empty assignment: the coordinator sends that to a member the leader
// left out.
func DecodeAssignment(b []byte) ([]TopicPartition, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if len(b) > MaxMetadataBytes {
		return nil, fmt.Errorf("%w: assignment of %d bytes, limit %d", ErrMetadataTooLarge, len(b), MaxMetadataBytes)
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		return nil, fmt.Errorf("%w: assignment: %w", ErrMalformedMetadata, err)
	}
	if a.Version < 0 {
		return nil, fmt.Errorf("%w: assignment version %d", ErrMalformedMetadata, a.Version)
	}
	n := 0
	for _, t := range a.Topics {
		n += len(t.Partitions)
	}
	out := make([]TopicPartition, 0, n)
	for _, t := range a.Topics {
		for _, p := range t.Partitions {
			if p < 0 {
				return nil, fmt.Errorf("%w: assigned partition %s-%d", ErrMalformedMetadata, t.Topic, p)
			}
			out = append(out, TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	return out, nil
}

type topicPartitions struct {
	Topic      string
	Partitions []int32
}

// groupByTopic sorts and de-duplicates tps and groups them by topic.
func groupByTopic(tps []TopicPartition) []topicPartitions {
	sorted := slices.Clone(tps)
	// sort.Slice, not slices.SortFunc: once per rebalance, and a generic
	// sort of TopicPartition would instantiate pdqsort for it (8 KiB of the
	// binary).
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Less(sorted[j]) })
	sorted = slices.Compact(sorted)
	var out []topicPartitions
	for _, tp := range sorted {
		if len(out) == 0 || out[len(out)-1].Topic != tp.Topic {
			out = append(out, topicPartitions{Topic: tp.Topic})
		}
		last := &out[len(out)-1]
		last.Partitions = append(last.Partitions, tp.Partition)
	}
	return out
}

// decodeStickyUserData reads StickyAssignorUserData (v0: previous
// assignment; v1 adds the generation). It has no version field: a
// generation follows only if bytes remain.
func decodeStickyUserData(b []byte) ([]TopicPartition, int32, error) {
	if len(b) == 0 {
		return nil, DefaultGeneration, nil
	}
	if err := checkStickyUserData(b); err != nil {
		return nil, 0, err
	}
	var s kmsg.StickyMemberMetadata
	if err := s.ReadFrom(b); err != nil {
		return nil, 0, fmt.Errorf("%w: sticky user data: %w", ErrMalformedMetadata, err)
	}
	n := 0
	for _, a := range s.CurrentAssignment {
		n += len(a.Partitions)
	}
	owned := make([]TopicPartition, 0, n)
	for _, a := range s.CurrentAssignment {
		for _, p := range a.Partitions {
			if p < 0 {
				return nil, 0, fmt.Errorf("%w: sticky user data partition %s-%d", ErrMalformedMetadata, a.Topic, p)
			}
			owned = append(owned, TopicPartition{Topic: a.Topic, Partition: p})
		}
	}
	return owned, s.Generation, nil
}

// checkStickyUserData checks every count in b against the bytes that
// remain, without allocating. kmsg's decoder for this format (written by
// hand there, as the format has no version) sizes its slices by trusting
// each count up to one byte per element, so 1 MiB of input could make it
// allocate 40 MiB; checked first, a count needs its elements' true minimum
// size (6 bytes per topic, 4 per partition).
func checkStickyUserData(b []byte) error {
	bad := func(what string) error {
		return fmt.Errorf("%w: sticky user data: %s", ErrMalformedMetadata, what)
	}
	int32At := func() (int, bool) {
		if len(b) < 4 {
			return 0, false
		}
		v := int32(binary.BigEndian.Uint32(b))
		b = b[4:]
		return int(v), true
	}
	topics, ok := int32At()
	if !ok {
		return bad("short topic count")
	}
	if topics < 0 || topics > len(b)/6 {
		return bad(fmt.Sprintf("topic count %d for %d bytes", topics, len(b)))
	}
	for range topics {
		if len(b) < 2 {
			return bad("short topic name")
		}
		l := int(int16(binary.BigEndian.Uint16(b)))
		b = b[2:]
		if l < 0 || l > len(b) {
			return bad(fmt.Sprintf("topic name length %d for %d bytes", l, len(b)))
		}
		b = b[l:]
		partitions, ok := int32At()
		if !ok {
			return bad("short partition count")
		}
		if partitions < 0 || partitions > len(b)/4 {
			return bad(fmt.Sprintf("partition count %d for %d bytes", partitions, len(b)))
		}
		b = b[4*partitions:]
	}
	return nil
}
