package assign

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// wire builds ConsumerProtocol bytes by hand for the golden tests, so the
// expected bytes do not come from the encoder under test.
type wire []byte

func (w wire) i16(v int16) wire { return binary.BigEndian.AppendUint16(w, uint16(v)) }
func (w wire) i32(v int32) wire { return binary.BigEndian.AppendUint32(w, uint32(v)) }
func (w wire) str(s string) wire {
	return append(w.i16(int16(len(s))), s...)
}
func (w wire) bytes(b []byte) wire {
	if b == nil {
		return w.i32(-1)
	}
	return append(w.i32(int32(len(b))), b...)
}

// normalize sorts and de-duplicates what the encoders sort and
// de-duplicate.
func normalize(m Member) Member {
	m.Topics = slices.Compact(slices.Sorted(slices.Values(m.Topics)))
	if len(m.Topics) == 0 {
		m.Topics = nil
	}
	m.Owned = normalizeTPs(m.Owned)
	return m
}

func normalizeTPs(tps []TopicPartition) []TopicPartition {
	var out []TopicPartition
	for _, t := range groupByTopic(tps) {
		for _, p := range t.Partitions {
			out = append(out, TopicPartition{t.Topic, p})
		}
	}
	return out
}

func TestDecodeSubscriptionGolden(t *testing.T) {
	foo02 := wire(nil).i32(1).str("foo").i32(2).i32(0).i32(2) // owned [foo: 0, 2]
	stickyV0 := wire(nil).i32(1).str("foo").i32(1).i32(1)     // [foo: 1], no generation
	stickyV1 := append(slices.Clone(stickyV0), wire(nil).i32(4)...)
	tests := []struct {
		name     string
		protocol string
		in       []byte
		want     Member
	}{
		{
			name:     "v0",
			protocol: RangeName,
			in:       wire(nil).i16(0).i32(2).str("foo").str("bar").bytes(nil),
			want:     Member{Topics: []string{"foo", "bar"}, Generation: DefaultGeneration},
		},
		{
			name:     "v1 cooperative generation in user data",
			protocol: CooperativeStickyName,
			in:       append(wire(nil).i16(1).i32(1).str("foo").bytes(wire(nil).i32(7)), foo02...),
			want:     Member{Topics: []string{"foo"}, Owned: tps("foop0 foop2"), Generation: 7},
		},
		{
			name:     "v1 cooperative without user data",
			protocol: CooperativeStickyName,
			in:       append(wire(nil).i16(1).i32(1).str("foo").bytes(nil), foo02...),
			want:     Member{Topics: []string{"foo"}, Owned: tps("foop0 foop2"), Generation: DefaultGeneration},
		},
		{
			name:     "v3 with rack",
			protocol: CooperativeStickyName,
			in:       wire(append(wire(nil).i16(3).i32(1).str("foo").bytes(wire(nil).i32(1)), foo02...)).i32(5).str("r1"),
			want:     Member{Topics: []string{"foo"}, Owned: tps("foop0 foop2"), Generation: 5, Rack: "r1"},
		},
		{
			// A newer version is read as v3; what follows is ignored.
			name:     "v9 read as v3",
			protocol: RoundRobinName,
			in:       wire(append(wire(nil).i16(9).i32(1).str("foo").bytes(nil), foo02...)).i32(5).i16(-1).str("future"),
			want:     Member{Topics: []string{"foo"}, Owned: tps("foop0 foop2"), Generation: 5},
		},
		{
			// Eager sticky reads its claims from the user data only.
			name:     "sticky user data v0",
			protocol: StickyName,
			in:       append(wire(nil).i16(1).i32(1).str("foo").bytes(stickyV0), foo02...),
			want:     Member{Topics: []string{"foo"}, Owned: tps("foop1"), Generation: DefaultGeneration},
		},
		{
			name:     "sticky user data v1",
			protocol: StickyName,
			in:       wire(nil).i16(0).i32(1).str("foo").bytes(stickyV1),
			want:     Member{Topics: []string{"foo"}, Owned: tps("foop1"), Generation: 4},
		},
		{
			name:     "sticky without user data",
			protocol: StickyName,
			in:       wire(nil).i16(0).i32(1).str("foo").bytes(nil),
			want:     Member{Topics: []string{"foo"}, Generation: DefaultGeneration},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeSubscription(tc.protocol, "m", "i", tc.in)
			if err != nil {
				t.Fatal(err)
			}
			tc.want.MemberID, tc.want.InstanceID = "m", "i"
			if len(got.Owned) == 0 {
				got.Owned = nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestEncodeGolden(t *testing.T) {
	got := EncodeAssignment(tps("foop2 barp1 foop0 foop2"))
	want := wire(nil).i16(0).i32(2).
		str("bar").i32(1).i32(1).
		str("foo").i32(2).i32(0).i32(2).
		bytes(nil)
	if !bytes.Equal(got, want) {
		t.Fatalf("assignment\ngot  %x\nwant %x", got, want)
	}

	m := Member{Topics: []string{"foo", "bar", "foo"}, Owned: tps("foop2 foop0"), Generation: 3, Rack: "r1"}
	got = EncodeSubscription(CooperativeStickyName, m)
	want = wire(nil).i16(3).i32(2).str("bar").str("foo").bytes(wire(nil).i32(3)).
		i32(1).str("foo").i32(2).i32(0).i32(2).
		i32(3).str("r1")
	if !bytes.Equal(got, want) {
		t.Fatalf("cooperative subscription\ngot  %x\nwant %x", got, want)
	}

	got = EncodeSubscription(StickyName, m)
	sticky := wire(nil).i32(1).str("foo").i32(2).i32(0).i32(2).i32(3)
	want = wire(nil).i16(3).i32(2).str("bar").str("foo").bytes(sticky).
		i32(0).i32(3).str("r1")
	if !bytes.Equal(got, want) {
		t.Fatalf("sticky subscription\ngot  %x\nwant %x", got, want)
	}
}

func TestSubscriptionRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		protocol := rapid.SampledFrom(allAssignors).Draw(t, "protocol")
		names := rapid.SliceOfN(rapid.StringMatching(`[a-z.]{0,5}`), 0, 4).Draw(t, "topics")
		tp := rapid.Custom(func(t *rapid.T) TopicPartition {
			return TopicPartition{rapid.SampledFrom(append(names, "x")).Draw(t, "topic"), rapid.Int32Range(0, 1<<20).Draw(t, "partition")}
		})
		m := Member{
			MemberID:   "m",
			InstanceID: rapid.SampledFrom([]string{"", "i"}).Draw(t, "instance"),
			Rack:       rapid.SampledFrom([]string{"", "r1"}).Draw(t, "rack"),
			Topics:     names,
			Owned:      rapid.SliceOfN(tp, 0, 8).Draw(t, "owned"),
			Generation: rapid.Int32Range(-1, 1<<30).Draw(t, "generation"),
		}
		got, err := DecodeSubscription(protocol, m.MemberID, m.InstanceID, EncodeSubscription(protocol, m))
		if err != nil {
			t.Fatal(err)
		}
		if want := normalize(m); !reflect.DeepEqual(normalize(got), want) {
			t.Fatalf("got %+v\nwant %+v", normalize(got), want)
		}

		a := normalizeTPs(m.Owned)
		back, err := DecodeAssignment(EncodeAssignment(m.Owned))
		if err != nil || !slices.Equal(back, a) {
			t.Fatalf("assignment: got %v, %v, want %v", back, err, a)
		}
	})
}

// hugeCounts are inputs whose counts ask for 2^31-1 elements with only a
// few bytes behind them.
var hugeCounts = []struct {
	name       string
	protocol   string
	assignment bool
	in         []byte
}{
	{"subscription topics", RangeName, false, wire(nil).i16(1).i32(1<<31 - 1).str("foo")},
	{"subscription owned", RangeName, false, wire(nil).i16(1).i32(0).bytes(nil).i32(1<<31 - 1).str("foo")},
	{"subscription partitions", RangeName, false, wire(nil).i16(1).i32(0).bytes(nil).i32(1).str("foo").i32(1<<31 - 1).i32(0)},
	{"sticky topics", StickyName, false, wire(nil).i16(0).i32(0).bytes(wire(nil).i32(1<<31 - 1).str("a").i32(0))},
	{"sticky topics one byte each", StickyName, false, wire(nil).i16(0).i32(0).bytes(wire(nil).i32(40).str("a").i32(0).i32(0).i32(0).i32(0).i32(0).i32(0).i32(0).i32(0).i32(0).i32(0))},
	{"sticky partitions", StickyName, false, wire(nil).i16(0).i32(0).bytes(wire(nil).i32(1).str("a").i32(1<<31 - 1).i32(0))},
	{"sticky negative name", StickyName, false, wire(nil).i16(0).i32(0).bytes(wire(nil).i32(1).i16(-5).i32(0).i32(0))},
	{"assignment topics", "", true, wire(nil).i16(0).i32(1<<31 - 1).str("foo")},
	{"assignment partitions", "", true, wire(nil).i16(0).i32(1).str("foo").i32(1<<31 - 1).i32(0)},
}

func decodeAny(protocol string, assignment bool, in []byte) error {
	if assignment {
		_, err := DecodeAssignment(in)
		return err
	}
	_, err := DecodeSubscription(protocol, "m", "", in)
	return err
}

func TestDecodeMalformed(t *testing.T) {
	tests := []struct {
		name       string
		protocol   string
		assignment bool
		in         []byte
		err        error
	}{
		{"truncated", RangeName, false, wire(nil).i16(0).i32(1).str("foo")[:7], ErrMalformedMetadata},
		{"negative version", RangeName, false, wire(nil).i16(-1).i32(0).bytes(nil), ErrMalformedMetadata},
		{"negative owned partition", RangeName, false, wire(nil).i16(1).i32(0).bytes(nil).i32(1).str("foo").i32(1).i32(-1), ErrMalformedMetadata},
		{"too large", RangeName, false, make([]byte, MaxMetadataBytes+1), ErrMetadataTooLarge},
		{"sticky truncated generation", StickyName, false, wire(nil).i16(0).i32(0).bytes(wire(nil).i32(0).i16(1)), ErrMalformedMetadata},
		{"assignment truncated", "", true, wire(nil).i16(0).i32(1).str("foo").i32(2).i32(0), ErrMalformedMetadata},
		{"assignment negative partition", "", true, wire(nil).i16(0).i32(1).str("foo").i32(1).i32(-3).bytes(nil), ErrMalformedMetadata},
		{"assignment too large", "", true, make([]byte, MaxMetadataBytes+1), ErrMetadataTooLarge},
	}
	for _, h := range hugeCounts {
		tests = append(tests, struct {
			name       string
			protocol   string
			assignment bool
			in         []byte
			err        error
		}{h.name, h.protocol, h.assignment, h.in, ErrMalformedMetadata})
	}
	for _, tc := range tests {
		if err := decodeAny(tc.protocol, tc.assignment, tc.in); !errors.Is(err, tc.err) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.err)
		}
	}
	if a, err := DecodeAssignment(nil); err != nil || a != nil {
		t.Errorf("empty assignment: %v, %v", a, err)
	}
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDecodeBoundedAllocation: a lying count costs no more than the bytes
// behind it, and a valid input at the size limit at most ten times itself.
func TestDecodeBoundedAllocation(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what allocations cost")
	}
	for _, h := range hugeCounts {
		if n := allocated(func() { _ = decodeAny(h.protocol, h.assignment, h.in) }); n > 64<<10 {
			t.Errorf("%s: %d-byte input allocated %d bytes", h.name, len(h.in), n)
		}
	}

	// The worst valid shapes: empty topic names (two bytes each) and
	// one-partition owned entries.
	check := func(name string, in []byte, f func() error) {
		t.Helper()
		var err error
		n := allocated(func() { err = f() })
		t.Logf("%s: %d-byte input allocated %d bytes (%.1fx)", name, len(in), n, float64(n)/float64(len(in)))
		if err != nil || n > 10*uint64(len(in)) {
			t.Errorf("%s: %d-byte input allocated %d bytes (err %v)", name, len(in), n, err)
		}
	}
	count := (MaxMetadataBytes - 64) / 2
	in := wire(nil).i16(0).i32(int32(count))
	for range count {
		in = in.i16(0)
	}
	in = in.bytes(nil)
	check("empty topic names", in, func() error { _, err := DecodeSubscription(RangeName, "m", "", in); return err })
	count = (MaxMetadataBytes - 64) / 10
	in = wire(nil).i16(1).i32(0).bytes(nil).i32(int32(count))
	for range count {
		in = in.i16(0).i32(1).i32(7)
	}
	check("owned entries", in, func() error { _, err := DecodeSubscription(RangeName, "m", "", in); return err })
	sticky := wire(nil).i32(int32(count))
	for range count {
		sticky = sticky.i16(0).i32(1).i32(7)
	}
	in = wire(nil).i16(0).i32(0).bytes(sticky)
	check("sticky entries", in, func() error { _, err := DecodeSubscription(StickyName, "m", "", in); return err })
	a := wire(nil).i16(0).i32(int32(count))
	for range count {
		a = a.i16(0).i32(1).i32(7)
	}
	a = a.bytes(nil)
	check("assignment entries", a, func() error { _, err := DecodeAssignment(a); return err })
}

func fuzzSeeds(f *testing.F) {
	m := Member{Topics: []string{"foo", "bar"}, Owned: tps("foop0 barp3"), Generation: 2, Rack: "r"}
	for i, p := range allAssignors {
		f.Add([]byte(EncodeSubscription(p, m)), uint8(i))
	}
	for _, h := range hugeCounts {
		f.Add(h.in, uint8(slices.Index(allAssignors, h.protocol)+len(allAssignors)))
	}
	f.Add([]byte(EncodeAssignment(m.Owned)), uint8(0))
}

// FuzzDecodeSubscription: decoding never panics, and what decodes
// re-encodes to the same member.
func FuzzDecodeSubscription(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, in []byte, which uint8) {
		protocol := allAssignors[int(which)%len(allAssignors)]
		m, err := DecodeSubscription(protocol, "m", "", in)
		if err != nil {
			if !errors.Is(err, ErrMalformedMetadata) && !errors.Is(err, ErrMetadataTooLarge) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		again, err := DecodeSubscription(protocol, "m", "", EncodeSubscription(protocol, m))
		if err != nil {
			t.Fatalf("re-encoded subscription does not decode: %v", err)
		}
		if !reflect.DeepEqual(normalize(again), normalize(m)) {
			t.Fatalf("round trip: %+v\nvs %+v", normalize(again), normalize(m))
		}
	})
}

func FuzzDecodeAssignment(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, in []byte, _ uint8) {
		a, err := DecodeAssignment(in)
		if err != nil {
			if !errors.Is(err, ErrMalformedMetadata) && !errors.Is(err, ErrMetadataTooLarge) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		again, err := DecodeAssignment(EncodeAssignment(a))
		if err != nil || !slices.Equal(again, normalizeTPs(a)) {
			t.Fatalf("round trip: %v, %v\nvs %v", again, err, normalizeTPs(a))
		}
	})
}
