package groups

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// Topic ids of the golden records.
var (
	topicA = [16]byte{0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11}
	topicB = [16]byte{0xb0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xbf}
)

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// consumerGolden holds one record of each KIP-848 kind and the bytes
// Kafka 4.1 writes for it, derived by hand from the JSON schemas
// (group-coordinator/src/main/resources/common/message/ConsumerGroup*).
// Keys are not flexible: int16 version, then int16-length strings. Values
// are flexible: int16 version 0, compact strings and arrays (uvarint
// length+1, 0 for null), and a tagged-field section (uvarint count, then
// tag, size, bytes) closing every struct.
func consumerGolden() []struct {
	name       string
	rec        Record
	key, value []byte
} {
	groupKey := func(v byte) []byte { return []byte{0, v, 0, 2, 'g', '1'} }
	memberKey := func(v byte) []byte { return cat(groupKey(v), []byte{0, 3, 'm', '-', '1'}) }
	return []struct {
		name       string
		rec        Record
		key, value []byte
	}{
		{
			name: "group metadata",
			rec:  Record{Kind: ConsumerGroupMetadataRecord, Group: "g1", ConsumerMetadata: &ConsumerGroupMetadataValue{Epoch: 5}},
			key:  groupKey(3),
			value: []byte{
				0, 0, // value version 0
				0, 0, 0, 5, // Epoch
				0, // no tagged fields: MetadataHash 0 is its default, not written
			},
		},
		{
			name: "group metadata with hash",
			rec:  Record{Kind: ConsumerGroupMetadataRecord, Group: "g1", ConsumerMetadata: &ConsumerGroupMetadataValue{Epoch: 5, MetadataHash: 0x0102030405060708}},
			key:  groupKey(3),
			value: []byte{
				0, 0,
				0, 0, 0, 5,
				1,    // one tagged field
				0, 8, // tag 0 (MetadataHash), 8 bytes
				1, 2, 3, 4, 5, 6, 7, 8,
			},
		},
		{
			name: "member metadata",
			rec: Record{Kind: ConsumerGroupMemberMetadataRecord, Group: "g1", MemberID: "m-1", ConsumerMember: &ConsumerGroupMemberMetadataValue{
				InstanceID: "i", ClientID: "c", ClientHost: "/h", SubscribedTopicNames: []string{"a", "bc"},
				RebalanceTimeoutMs: 300000, ServerAssignor: "uniform",
			}},
			key: memberKey(5),
			value: []byte{
				0, 0,
				2, 'i', // InstanceId
				0,      // RackId: null
				2, 'c', // ClientId
				3, '/', 'h', // ClientHost
				3, 2, 'a', 3, 'b', 'c', // SubscribedTopicNames: 2 strings
				0,                   // SubscribedTopicRegex: null
				0, 0x04, 0x93, 0xe0, // RebalanceTimeoutMs 300000
				8, 'u', 'n', 'i', 'f', 'o', 'r', 'm', // ServerAssignor
				0, // no tagged fields (ClassicMemberMetadata is null)
			},
		},
		{
			name: "member metadata, regex and nulls",
			rec: Record{Kind: ConsumerGroupMemberMetadataRecord, Group: "g1", MemberID: "m-1", ConsumerMember: &ConsumerGroupMemberMetadataValue{
				RackID: "r", SubscribedTopicRegex: "t.*", RebalanceTimeoutMs: -1,
			}},
			key: memberKey(5),
			value: []byte{
				0, 0,
				0,      // InstanceId: null
				2, 'r', // RackId
				1, // ClientId ""
				1, // ClientHost ""
				1, // SubscribedTopicNames: empty
				4, 't', '.', '*',
				0xff, 0xff, 0xff, 0xff, // RebalanceTimeoutMs -1
				0, // ServerAssignor: null
				0,
			},
		},
		{
			name: "target assignment metadata",
			rec:  Record{Kind: ConsumerGroupTargetAssignmentMetadataRecord, Group: "g1", TargetMetadata: &ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: 7}},
			key:  groupKey(6),
			value: []byte{
				0, 0,
				0, 0, 0, 7, // AssignmentEpoch
				0,
			},
		},
		{
			name: "target assignment member",
			rec: Record{Kind: ConsumerGroupTargetAssignmentMemberRecord, Group: "g1", MemberID: "m-1", TargetMember: &ConsumerGroupTargetAssignmentMemberValue{
				TopicPartitions: []TopicPartitions{{TopicID: topicA, Partitions: []int32{0, 2}}, {TopicID: topicB}},
			}},
			key: memberKey(7),
			value: cat(
				[]byte{0, 0},
				[]byte{3},                                               // TopicPartitions: 2
				topicA[:], []byte{3, 0, 0, 0, 0, 0, 0, 0, 2}, []byte{0}, // id, [0 2], no tags
				topicB[:], []byte{1}, []byte{0}, // id, [], no tags
				[]byte{0},
			),
		},
		{
			name: "current member assignment",
			rec: Record{Kind: ConsumerGroupCurrentMemberAssignmentRecord, Group: "g1", MemberID: "m-1", CurrentAssignment: &ConsumerGroupCurrentMemberAssignmentValue{
				MemberEpoch: 10, PreviousMemberEpoch: 9, State: 1,
				AssignedPartitions:          []TopicPartitions{{TopicID: topicA, Partitions: []int32{3}}},
				PartitionsPendingRevocation: []TopicPartitions{{TopicID: topicB, Partitions: []int32{1}}},
			}},
			key: memberKey(8),
			value: cat(
				[]byte{0, 0},
				[]byte{0, 0, 0, 10},                                    // MemberEpoch
				[]byte{0, 0, 0, 9},                                     // PreviousMemberEpoch
				[]byte{1},                                              // State: UNREVOKED_PARTITIONS
				[]byte{2}, topicA[:], []byte{2, 0, 0, 0, 3}, []byte{0}, // AssignedPartitions
				[]byte{2}, topicB[:], []byte{2, 0, 0, 0, 1}, []byte{0}, // PartitionsPendingRevocation
				[]byte{0},
			),
		},
		{name: "group metadata tombstone", rec: Record{Kind: ConsumerGroupMetadataRecord, Group: "g1"}, key: groupKey(3)},
		{name: "partition metadata tombstone", rec: Record{Kind: ConsumerGroupPartitionMetadataRecord, Group: "g1"}, key: groupKey(4)},
		{name: "member metadata tombstone", rec: Record{Kind: ConsumerGroupMemberMetadataRecord, Group: "g1", MemberID: "m-1"}, key: memberKey(5)},
		{name: "target metadata tombstone", rec: Record{Kind: ConsumerGroupTargetAssignmentMetadataRecord, Group: "g1"}, key: groupKey(6)},
		{name: "target member tombstone", rec: Record{Kind: ConsumerGroupTargetAssignmentMemberRecord, Group: "g1", MemberID: "m-1"}, key: memberKey(7)},
		{name: "current assignment tombstone", rec: Record{Kind: ConsumerGroupCurrentMemberAssignmentRecord, Group: "g1", MemberID: "m-1"}, key: memberKey(8)},
	}
}

func TestConsumerRecordGoldenBytes(t *testing.T) {
	for _, g := range consumerGolden() {
		if got := g.rec.EncodeKey(); !bytes.Equal(got, g.key) {
			t.Errorf("%s key:\n got %x\nwant %x", g.name, got, g.key)
		}
		if got := g.rec.EncodeValue(); !bytes.Equal(got, g.value) {
			t.Errorf("%s value:\n got %x\nwant %x", g.name, got, g.value)
		}
		if g.rec.Tombstone() != (g.value == nil) {
			t.Errorf("%s: Tombstone() = %v", g.name, g.rec.Tombstone())
		}
		back, err := DecodeRecord(g.key, g.value)
		if err != nil || !back.Equal(g.rec) {
			t.Errorf("%s: decode: %v\n got %+v\nwant %+v", g.name, err, back, g.rec)
		}
		if back.Tombstone() != (g.value == nil) {
			t.Errorf("%s: decoded Tombstone() = %v", g.name, back.Tombstone())
		}
	}
}

// TestConsumerRecordTaggedFieldsSkipped: tagged fields Kafka writes that
// we do not keep (ClassicMemberMetadata, and those of versions after 4.1)
// are read past, and the rest of the record is intact.
func TestConsumerRecordTaggedFieldsSkipped(t *testing.T) {
	golden := map[string][]byte{}
	records := map[string]Record{}
	for _, g := range consumerGolden() {
		golden[g.name], records[g.name] = g.value, g.rec
	}
	for _, tc := range []struct {
		name, base string
		value      []byte
	}{
		{
			name: "classic member metadata", base: "member metadata",
			// The golden value with its last byte (no tags) replaced by
			// tag 0, ClassicMemberMetadata, 16 bytes: SessionTimeoutMs
			// 45000, SupportedProtocols [{"range", [1 2]}].
			value: cat(golden["member metadata"][:len(golden["member metadata"])-1], []byte{
				1, 0, 16,
				0, 0, 0xaf, 0xc8,
				2, 6, 'r', 'a', 'n', 'g', 'e', 3, 1, 2, 0,
				0,
			}),
		},
		{
			name: "assignment timestamp", base: "target assignment metadata",
			// Kafka 4.3's AssignmentTimestamp, tag 0, an int64.
			value: []byte{0, 0, 0, 0, 0, 7, 1, 0, 8, 0, 0, 1, 0x8f, 0, 0, 0, 0},
		},
		{
			name: "assignment epochs", base: "current member assignment",
			// A later Kafka's AssignmentEpochs (tag 0, []int32) in each
			// TopicPartitions, and an unknown tag 3 on the value.
			value: cat(
				[]byte{0, 0, 0, 0, 0, 10, 0, 0, 0, 9, 1},
				[]byte{2}, topicA[:], []byte{2, 0, 0, 0, 3}, []byte{1, 0, 5, 2, 0, 0, 0, 10},
				[]byte{2}, topicB[:], []byte{2, 0, 0, 0, 1}, []byte{1, 0, 5, 2, 0, 0, 0, 9},
				[]byte{1, 3, 2, 0xde, 0xad},
			),
		},
		{
			name: "unknown tag beside the hash", base: "group metadata with hash",
			value: []byte{0, 0, 0, 0, 0, 5, 2, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8, 1, 1, 0xff},
		},
	} {
		want := records[tc.base]
		back, err := DecodeRecord(want.EncodeKey(), tc.value)
		if err != nil || !back.Equal(want) {
			t.Errorf("%s: %v\n got %+v\nwant %+v", tc.name, err, back, want)
		}
	}
}

func TestConsumerPartitionMetadataDecodeOnly(t *testing.T) {
	key := []byte{0, 4, 0, 1, 'g'}
	// Epoch 5, no topics, no tags: its body is not read.
	rec, err := DecodeRecord(key, []byte{0, 0, 0, 0, 0, 5, 1, 0})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Kind != ConsumerGroupPartitionMetadataRecord || rec.Group != "g" || rec.Tombstone() {
		t.Fatalf("got %+v, tombstone %v", rec, rec.Tombstone())
	}
	if !bytes.Equal(rec.EncodeKey(), key) {
		t.Fatalf("key %x", rec.EncodeKey())
	}
	tomb, err := DecodeRecord(key, nil)
	if err != nil || !tomb.Tombstone() || tomb.Equal(rec) {
		t.Fatalf("tombstone: %v %+v", err, tomb)
	}
	if tomb.EncodeValue() != nil {
		t.Fatal("a tombstone's value is not nil")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("EncodeValue of a partition metadata value did not panic")
		}
	}()
	rec.EncodeValue()
}

func TestConsumerRecordRejects(t *testing.T) {
	groupKey := []byte{0, 3, 0, 1, 'g'}
	memberKey := []byte{0, 5, 0, 1, 'g', 0, 1, 'm'}
	assignKey := []byte{0, 8, 0, 1, 'g', 0, 1, 'm'}
	for _, tc := range []struct {
		name       string
		key, value []byte
		want       error
	}{
		{"share group key", []byte{0, 9, 0, 1, 'g'}, nil, ErrUnknownRecordType},
		{"regular expression key", []byte{0, 16, 0, 1, 'g', 0, 1, 'r'}, nil, ErrUnknownRecordType},
		{"negative key version", []byte{0xff, 0xfe, 0, 1, 'g'}, nil, ErrUnknownRecordType},
		{"key without member", []byte{0, 5, 0, 1, 'g'}, nil, ErrCorruptRecord},
		{"key with trailing bytes", append(groupKey, 0), nil, ErrCorruptRecord},
		{"key null group", []byte{0, 3, 0xff, 0xff}, nil, ErrCorruptRecord},
		{"one-byte value", groupKey, []byte{0}, ErrCorruptRecord},
		{"newer value version", groupKey, []byte{0, 1, 0, 0, 0, 5, 0}, ErrCorruptRecord},
		{"negative value version", groupKey, []byte{0xff, 0xff, 0, 0, 0, 5, 0}, ErrCorruptRecord},
		{"newer partition metadata version", []byte{0, 4, 0, 1, 'g'}, []byte{0, 1}, ErrCorruptRecord},
		{"truncated epoch", groupKey, []byte{0, 0, 0, 0, 5}, ErrCorruptRecord},
		{"no tag section", groupKey, []byte{0, 0, 0, 0, 0, 5}, ErrCorruptRecord},
		{"trailing value bytes", groupKey, []byte{0, 0, 0, 0, 0, 5, 0, 0}, ErrCorruptRecord},
		{"short metadata hash", groupKey, []byte{0, 0, 0, 0, 0, 5, 1, 0, 4, 1, 2, 3, 4}, ErrCorruptRecord},
		{"null client id", memberKey, []byte{0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0}, ErrCorruptRecord},
		{"null topic names", memberKey, []byte{0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0}, ErrCorruptRecord},
		{"huge topic name count", memberKey, []byte{0, 0, 0, 0, 1, 1, 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0, 0, 0, 0, 0, 0}, ErrCorruptRecord},
		{"huge partition count", assignKey, cat([]byte{0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2}, topicA[:], []byte{0xff, 0xff, 0xff, 0x7f, 0, 1, 0}), ErrCorruptRecord},
		{"huge topic count", assignKey, []byte{0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 0}, ErrCorruptRecord},
		{"negative partition", assignKey, cat([]byte{0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2}, topicA[:], []byte{2, 0xff, 0xff, 0xff, 0xff, 0, 1, 0}), ErrCorruptRecord},
		{"null assigned partitions", assignKey, []byte{0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0}, ErrCorruptRecord},
	} {
		if _, err := DecodeRecord(tc.key, tc.value); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestConsumerRecordTruncated: every strict prefix of a golden value, and
// the value with a byte more, is corrupt (an empty value is a tombstone).
func TestConsumerRecordTruncated(t *testing.T) {
	for _, g := range consumerGolden() {
		for n := 1; n < len(g.value); n++ {
			if _, err := DecodeRecord(g.key, g.value[:n]); !errors.Is(err, ErrCorruptRecord) {
				t.Errorf("%s: value cut to %d bytes: %v", g.name, n, err)
			}
		}
		if g.value != nil {
			if _, err := DecodeRecord(g.key, append(bytes.Clone(g.value), 0)); !errors.Is(err, ErrCorruptRecord) {
				t.Errorf("%s: value with a trailing byte: %v", g.name, err)
			}
		}
		for n := 0; n < len(g.key); n++ {
			if _, err := DecodeRecord(g.key[:n], g.value); !errors.Is(err, ErrCorruptRecord) {
				t.Errorf("%s: key cut to %d bytes: %v", g.name, n, err)
			}
		}
	}
}

// TestConsumerRecordDoesNotAlias: the caller may reuse the bytes it
// decoded.
func TestConsumerRecordDoesNotAlias(t *testing.T) {
	for _, g := range consumerGolden() {
		key, value := bytes.Clone(g.key), bytes.Clone(g.value)
		rec, err := DecodeRecord(key, value)
		if err != nil {
			t.Fatalf("%s: %v", g.name, err)
		}
		for i := range key {
			key[i] = 0xee
		}
		for i := range value {
			value[i] = 0xee
		}
		if !rec.Equal(g.rec) {
			t.Errorf("%s: changed with its input: %+v", g.name, rec)
		}
	}
}

func genTopicPartitions(t *rapid.T, label string) []TopicPartitions {
	var out []TopicPartitions
	for range rapid.IntRange(0, 3).Draw(t, label+" topics") {
		var id [16]byte
		copy(id[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, label+" id"))
		out = append(out, TopicPartitions{TopicID: id, Partitions: rapid.SliceOfN(rapid.Int32Min(0), 0, 5).Draw(t, label+" partitions")})
	}
	return out
}

// genConsumerRecord draws a KIP-848 record of any kind we write.
func genConsumerRecord(t *rapid.T) Record {
	str := rapid.StringN(0, 12, -1)
	kind := rapid.SampledFrom([]RecordKind{
		ConsumerGroupMetadataRecord, ConsumerGroupMemberMetadataRecord, ConsumerGroupTargetAssignmentMetadataRecord,
		ConsumerGroupTargetAssignmentMemberRecord, ConsumerGroupCurrentMemberAssignmentRecord,
	}).Draw(t, "kind")
	r := Record{Kind: kind, Group: str.Draw(t, "group")}
	if hasMemberID(kind) {
		r.MemberID = str.Draw(t, "member")
	}
	if rapid.Bool().Draw(t, "tombstone") {
		return r
	}
	switch kind {
	case ConsumerGroupMetadataRecord:
		r.ConsumerMetadata = &ConsumerGroupMetadataValue{Epoch: rapid.Int32().Draw(t, "epoch"), MetadataHash: rapid.Int64().Draw(t, "hash")}
	case ConsumerGroupMemberMetadataRecord:
		r.ConsumerMember = &ConsumerGroupMemberMetadataValue{
			InstanceID:           str.Draw(t, "instance"),
			RackID:               str.Draw(t, "rack"),
			ClientID:             str.Draw(t, "client"),
			ClientHost:           str.Draw(t, "host"),
			SubscribedTopicNames: rapid.SliceOfN(str, 0, 4).Draw(t, "topics"),
			SubscribedTopicRegex: str.Draw(t, "regex"),
			RebalanceTimeoutMs:   rapid.Int32().Draw(t, "rebalance"),
			ServerAssignor:       str.Draw(t, "assignor"),
		}
	case ConsumerGroupTargetAssignmentMetadataRecord:
		r.TargetMetadata = &ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: rapid.Int32().Draw(t, "epoch")}
	case ConsumerGroupTargetAssignmentMemberRecord:
		r.TargetMember = &ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: genTopicPartitions(t, "target")}
	case ConsumerGroupCurrentMemberAssignmentRecord:
		r.CurrentAssignment = &ConsumerGroupCurrentMemberAssignmentValue{
			MemberEpoch:                 rapid.Int32().Draw(t, "epoch"),
			PreviousMemberEpoch:         rapid.Int32().Draw(t, "previous"),
			State:                       rapid.Int8().Draw(t, "state"),
			AssignedPartitions:          genTopicPartitions(t, "assigned"),
			PartitionsPendingRevocation: genTopicPartitions(t, "pending"),
		}
	}
	return r
}

// TestConsumerRecordRoundTrip: every record decodes to itself, and its
// bytes are canonical (re-encoding gives the same bytes).
func TestConsumerRecordRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := genConsumerRecord(t)
		key, value := r.EncodeKey(), r.EncodeValue()
		if r.Tombstone() != (value == nil) {
			t.Fatalf("Tombstone() %v with value %x", r.Tombstone(), value)
		}
		back, err := DecodeRecord(key, value)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if !back.Equal(r) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", back, r)
		}
		if !bytes.Equal(back.EncodeKey(), key) || !bytes.Equal(back.EncodeValue(), value) {
			t.Fatalf("re-encoding changed the bytes")
		}
	})
}

// TestConsumerRecordGarbage: random bytes behind a consumer record's key
// version, and random mutations of golden values, never panic, and what
// decodes re-encodes to the same record.
func TestConsumerRecordGarbage(t *testing.T) {
	golden := consumerGolden()
	rapid.Check(t, func(t *rapid.T) {
		var key, value []byte
		if rapid.Bool().Draw(t, "mutate") {
			g := golden[rapid.IntRange(0, len(golden)-1).Draw(t, "golden")]
			key, value = bytes.Clone(g.key), bytes.Clone(g.value)
			if len(value) > 0 {
				for range rapid.IntRange(1, 3).Draw(t, "flips") {
					value[rapid.IntRange(0, len(value)-1).Draw(t, "at")] = rapid.Byte().Draw(t, "byte")
				}
			}
		} else {
			key = append([]byte{0, byte(rapid.IntRange(3, 8).Draw(t, "version"))}, rapid.SliceOfN(rapid.Byte(), 0, 12).Draw(t, "key")...)
			value = rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(t, "value")
		}
		checkRedecode(t, key, value)
	})
}

// checkRedecode decodes key and value and, if they decode, checks that
// the record re-encodes to one that decodes the same.
func checkRedecode(t interface{ Fatalf(string, ...any) }, key, value []byte) {
	r, err := DecodeRecord(key, value)
	if err != nil {
		if !errors.Is(err, ErrCorruptRecord) && !errors.Is(err, ErrUnknownRecordType) {
			t.Fatalf("unexpected error %v", err)
		}
		return
	}
	if r.Kind == ConsumerGroupPartitionMetadataRecord && !r.Tombstone() {
		return // decode only
	}
	back, err := DecodeRecord(r.EncodeKey(), r.EncodeValue())
	if err != nil {
		t.Fatalf("re-encoded record does not decode: %v (%+v)", err, r)
	}
	if !back.Equal(r) {
		t.Fatalf("re-encoding changed the record:\n%+v\n%+v", r, back)
	}
}

func TestConsumerRecordEqual(t *testing.T) {
	for _, g := range consumerGolden() {
		if g.value == nil {
			continue
		}
		other, _ := DecodeRecord(g.key, g.value)
		other.MemberID += "x"
		if other.Equal(g.rec) {
			t.Errorf("%s: member id ignored by Equal", g.name)
		}
		tomb := g.rec
		tomb.ConsumerMetadata, tomb.ConsumerMember, tomb.TargetMetadata, tomb.TargetMember, tomb.CurrentAssignment = nil, nil, nil, nil, nil
		if tomb.Equal(g.rec) || g.rec.Equal(tomb) {
			t.Errorf("%s: tombstone equals value", g.name)
		}
	}
	a := &ConsumerGroupCurrentMemberAssignmentValue{AssignedPartitions: []TopicPartitions{{TopicID: topicA}}}
	b := &ConsumerGroupCurrentMemberAssignmentValue{AssignedPartitions: []TopicPartitions{{TopicID: topicA, Partitions: []int32{}}}}
	if !a.Equal(b) {
		t.Error("nil and empty partitions differ")
	}
	b.AssignedPartitions[0].TopicID = topicB
	if a.Equal(b) {
		t.Error("topic id ignored")
	}
}

func ExampleRecord_EncodeValue_consumerGroup() {
	r := Record{Kind: ConsumerGroupTargetAssignmentMetadataRecord, Group: "g", TargetMetadata: &ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: 3}}
	fmt.Printf("%x %x\n", r.EncodeKey(), r.EncodeValue())
	// Output: 0006000167 00000000000300
}

func BenchmarkConsumerAssignmentRecord(b *testing.B) {
	v := &ConsumerGroupCurrentMemberAssignmentValue{MemberEpoch: 10, PreviousMemberEpoch: 9, State: 0}
	for i := range 3 {
		tp := TopicPartitions{TopicID: [16]byte{byte(i)}}
		for p := range int32(10) {
			tp.Partitions = append(tp.Partitions, p)
		}
		v.AssignedPartitions = append(v.AssignedPartitions, tp)
	}
	r := Record{Kind: ConsumerGroupCurrentMemberAssignmentRecord, Group: "orders-consumers", MemberID: "0f7c3a1e-5d1c-4b9e-9b1a-6c2d4e8f0a11", CurrentAssignment: v}
	key, value := r.EncodeKey(), r.EncodeValue()
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = r.EncodeValue()
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(key) + len(value)))
		for b.Loop() {
			if _, err := DecodeRecord(key, value); err != nil {
				b.Fatal(err)
			}
		}
	})
}
