package groups

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"pgregory.net/rapid"
)

// Kafka's schemas written out by hand (GroupMetadataManager's key and
// value schemas), independently of kmsg: the encoder must produce exactly
// these bytes.
type wire struct{ b []byte }

func (w *wire) i16(v int16)  { w.b = binary.BigEndian.AppendUint16(w.b, uint16(v)) }
func (w *wire) i32(v int32)  { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }
func (w *wire) i64(v int64)  { w.b = binary.BigEndian.AppendUint64(w.b, uint64(v)) }
func (w *wire) str(s string) { w.i16(int16(len(s))); w.b = append(w.b, s...) }
func (w *wire) null()        { w.i16(-1) }
func (w *wire) bytes(b []byte) {
	w.i32(int32(len(b)))
	w.b = append(w.b, b...)
}

func TestRecordGoldenBytes(t *testing.T) {
	off := Record{Kind: OffsetCommitRecord, Group: "g1", TopicPartition: TopicPartition{"orders", 7},
		Offset: &OffsetAndMetadata{Offset: 1234, LeaderEpoch: 5, Metadata: "m", CommitTimestampMs: 1700000000000, ExpireTimestampMs: -1}}
	var k, v wire
	k.i16(1)
	k.str("g1")
	k.str("orders")
	k.i32(7)
	v.i16(3)
	v.i64(1234)
	v.i32(5)
	v.str("m")
	v.i64(1700000000000)
	check := func(name string, rec Record, key, value []byte) {
		t.Helper()
		if got := rec.EncodeKey(); !bytes.Equal(got, key) {
			t.Errorf("%s key:\n got %x\nwant %x", name, got, key)
		}
		if got := rec.EncodeValue(); !bytes.Equal(got, value) {
			t.Errorf("%s value:\n got %x\nwant %x", name, got, value)
		}
		back, err := DecodeRecord(key, value)
		if err != nil || !back.Equal(rec) {
			t.Errorf("%s: decode: %v\n got %+v\nwant %+v", name, err, back, rec)
		}
	}
	check("offset v3", off, k.b, v.b)

	// With its own retention: value version 1, with expire_timestamp and
	// no leader epoch.
	expiring := off
	expiring.Offset = &OffsetAndMetadata{Offset: 1234, LeaderEpoch: -1, Metadata: "m", CommitTimestampMs: 1700000000000, ExpireTimestampMs: 1700000005000}
	var v1 wire
	v1.i16(1)
	v1.i64(1234)
	v1.str("m")
	v1.i64(1700000000000)
	v1.i64(1700000005000)
	check("offset v1", expiring, k.b, v1.b)

	grp := Record{Kind: GroupMetadataRecord, Group: "g1", Metadata: &GroupMetadataValue{
		ProtocolType: "consumer", Generation: 4, Protocol: "range", Leader: "a-1", CurrentStateTimestampMs: 99,
		Members: []MemberMetadataValue{
			{MemberID: "a-1", ClientID: "a", ClientHost: "/10.0.0.1", RebalanceTimeoutMs: 300000, SessionTimeoutMs: 45000, Subscription: []byte{1, 2}, Assignment: []byte{3}},
			{MemberID: "i-2", InstanceID: "i", ClientID: "b", ClientHost: "/10.0.0.2", RebalanceTimeoutMs: 60000, SessionTimeoutMs: 10000, Subscription: []byte{}, Assignment: []byte{4, 5}},
		},
	}}
	var gk, gv wire
	gk.i16(2)
	gk.str("g1")
	gv.i16(3)
	gv.str("consumer")
	gv.i32(4)
	gv.str("range")
	gv.str("a-1")
	gv.i64(99)
	gv.i32(2)
	gv.str("a-1")
	gv.null()
	gv.str("a")
	gv.str("/10.0.0.1")
	gv.i32(300000)
	gv.i32(45000)
	gv.bytes([]byte{1, 2})
	gv.bytes([]byte{3})
	gv.str("i-2")
	gv.str("i")
	gv.str("b")
	gv.str("/10.0.0.2")
	gv.i32(60000)
	gv.i32(10000)
	gv.bytes(nil)
	gv.bytes([]byte{4, 5})
	check("group v3", grp, gk.b, gv.b)

	// An Empty group: null protocol and leader.
	empty := Record{Kind: GroupMetadataRecord, Group: "g1", Metadata: &GroupMetadataValue{ProtocolType: "consumer", Generation: 5, CurrentStateTimestampMs: 7}}
	var ev wire
	ev.i16(3)
	ev.str("consumer")
	ev.i32(5)
	ev.null()
	ev.null()
	ev.i64(7)
	ev.i32(0)
	check("empty group", empty, gk.b, ev.b)

	check("offset tombstone", Record{Kind: OffsetCommitRecord, Group: "g1", TopicPartition: TopicPartition{"orders", 7}}, k.b, nil)
	check("group tombstone", Record{Kind: GroupMetadataRecord, Group: "g1"}, gk.b, nil)
}

func TestDecodeOlderVersions(t *testing.T) {
	// Value version 0 of group metadata: no rebalance timeout (it is the
	// session timeout), no state timestamp, no instance id.
	var gk, gv wire
	gk.i16(2)
	gk.str("g")
	gv.i16(0)
	gv.str("consumer")
	gv.i32(1)
	gv.str("range")
	gv.str("m")
	gv.i32(1)
	gv.str("m")
	gv.str("c")
	gv.str("h")
	gv.i32(30000)
	gv.bytes([]byte{9})
	gv.bytes([]byte{8})
	rec, err := DecodeRecord(gk.b, gv.b)
	if err != nil {
		t.Fatal(err)
	}
	want := &GroupMetadataValue{ProtocolType: "consumer", Generation: 1, Protocol: "range", Leader: "m", CurrentStateTimestampMs: -1,
		Members: []MemberMetadataValue{{MemberID: "m", ClientID: "c", ClientHost: "h", RebalanceTimeoutMs: 30000, SessionTimeoutMs: 30000, Subscription: []byte{9}, Assignment: []byte{8}}}}
	if !rec.Metadata.Equal(want) {
		t.Fatalf("got %+v, want %+v", rec.Metadata, want)
	}
	// Offset commit key version 0, value version 0.
	var k, v wire
	k.i16(0)
	k.str("g")
	k.str("t")
	k.i32(0)
	v.i16(0)
	v.i64(5)
	v.str("")
	v.i64(10)
	rec, err = DecodeRecord(k.b, v.b)
	if err != nil {
		t.Fatal(err)
	}
	if got := *rec.Offset; got != (OffsetAndMetadata{Offset: 5, LeaderEpoch: -1, CommitTimestampMs: 10, ExpireTimestampMs: -1}) {
		t.Fatalf("got %+v", got)
	}
}

func TestDecodeRejects(t *testing.T) {
	var k wire
	k.i16(1)
	k.str("g")
	k.str("t")
	k.i32(0)
	var gk wire
	gk.i16(2)
	gk.str("g")
	var newer wire
	newer.i16(11) // a share group's ShareGroupMetadataKey
	newer.str("g")
	for _, tc := range []struct {
		name       string
		key, value []byte
		want       error
	}{
		{"short key", []byte{0}, nil, ErrCorruptRecord},
		{"truncated key", k.b[:5], nil, ErrCorruptRecord},
		{"other record type", newer.b, nil, ErrUnknownRecordType},
		{"truncated offset value", k.b, []byte{0, 3, 0, 0}, ErrCorruptRecord},
		{"future offset value", k.b, []byte{0, 9, 0, 0, 0, 0, 0, 0, 0, 0}, ErrCorruptRecord},
		{"negative value version", gk.b, []byte{0xff, 0xff}, ErrCorruptRecord},
		{"one-byte value", gk.b, []byte{0}, ErrCorruptRecord},
		{"huge member count", gk.b, append([]byte{0, 3, 0, 1, 'c', 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0}, 0x7f, 0xff, 0xff, 0xff), ErrCorruptRecord},
	} {
		if _, err := DecodeRecord(tc.key, tc.value); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
}

func genRecord(t *rapid.T) Record {
	str := rapid.StringN(0, 12, -1)
	bs := rapid.SliceOfN(rapid.Byte(), 0, 16)
	if rapid.Bool().Draw(t, "offset") {
		r := Record{Kind: OffsetCommitRecord, Group: str.Draw(t, "group"),
			TopicPartition: TopicPartition{rapid.StringN(1, 12, -1).Draw(t, "topic"), rapid.Int32Min(0).Draw(t, "partition")}}
		if rapid.Bool().Draw(t, "tombstone") {
			return r
		}
		o := OffsetAndMetadata{
			Offset:            rapid.Int64().Draw(t, "offset"),
			LeaderEpoch:       rapid.Int32Min(-1).Draw(t, "epoch"),
			Metadata:          str.Draw(t, "metadata"),
			CommitTimestampMs: rapid.Int64().Draw(t, "commit"),
			ExpireTimestampMs: -1,
		}
		if rapid.Bool().Draw(t, "expires") {
			o.ExpireTimestampMs = rapid.Int64Min(0).Draw(t, "expire")
			o.LeaderEpoch = -1
		}
		r.Offset = &o
		return r
	}
	r := Record{Kind: GroupMetadataRecord, Group: str.Draw(t, "group")}
	if rapid.Bool().Draw(t, "tombstone") {
		return r
	}
	m := &GroupMetadataValue{
		ProtocolType:            str.Draw(t, "type"),
		Generation:              rapid.Int32Min(0).Draw(t, "generation"),
		Protocol:                str.Draw(t, "protocol"),
		Leader:                  str.Draw(t, "leader"),
		CurrentStateTimestampMs: rapid.Int64Min(-1).Draw(t, "ts"),
	}
	for i := range rapid.IntRange(0, 4).Draw(t, "members") {
		_ = i
		m.Members = append(m.Members, MemberMetadataValue{
			MemberID:           str.Draw(t, "member"),
			InstanceID:         str.Draw(t, "instance"),
			ClientID:           str.Draw(t, "client"),
			ClientHost:         str.Draw(t, "host"),
			RebalanceTimeoutMs: rapid.Int32().Draw(t, "rebalance"),
			SessionTimeoutMs:   rapid.Int32().Draw(t, "session"),
			Subscription:       bs.Draw(t, "subscription"),
			Assignment:         bs.Draw(t, "assignment"),
		})
	}
	r.Metadata = m
	return r
}

func TestRecordRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := genRecord(t)
		back, err := DecodeRecord(r.EncodeKey(), r.EncodeValue())
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if !back.Equal(r) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", back, r)
		}
	})
}

// FuzzDecodeRecord: the log is read back after crashes and may hold
// anything; decoding must fail cleanly, and what decodes must re-encode to
// something that decodes the same.
func FuzzDecodeRecord(f *testing.F) {
	var k, v wire
	k.i16(1)
	k.str("g")
	k.str("t")
	k.i32(0)
	v.i16(3)
	v.i64(1)
	v.i32(0)
	v.str("")
	v.i64(0)
	f.Add(k.b, v.b)
	grp := Record{Kind: GroupMetadataRecord, Group: "g", Metadata: &GroupMetadataValue{ProtocolType: "consumer", Generation: 1, Protocol: "range", Leader: "a",
		Members: []MemberMetadataValue{{MemberID: "a", Subscription: []byte{1}, Assignment: []byte{2}}}}}
	f.Add(grp.EncodeKey(), grp.EncodeValue())
	// Every KIP-848 kind, with and without a value.
	for _, g := range consumerGolden() {
		f.Add(g.key, g.value)
	}
	f.Add([]byte{0, 4, 0, 1, 'g'}, []byte{0, 0, 0, 0, 0, 5, 1, 0})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		checkRedecode(t, key, value)
	})
}
