package groups

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"pgregory.net/rapid"
)

func TestWireUvarintBytes(t *testing.T) {
	for _, tc := range []struct {
		v    uint32
		want []byte
	}{
		{0, []byte{0x00}},
		{1, []byte{0x01}},
		{127, []byte{0x7f}},
		{128, []byte{0x80, 0x01}},
		{300, []byte{0xac, 0x02}},
		{16384, []byte{0x80, 0x80, 0x01}},
		{math.MaxUint32, []byte{0xff, 0xff, 0xff, 0xff, 0x0f}},
	} {
		if got := appendUvarint(nil, tc.v); !bytes.Equal(got, tc.want) {
			t.Errorf("appendUvarint(%d) = %x, want %x", tc.v, got, tc.want)
		}
		r := flexReader{b: tc.want}
		if got := r.uvarint(); got != tc.v || r.done() != nil {
			t.Errorf("uvarint(%x) = %d, %v; want %d", tc.want, got, r.done(), tc.v)
		}
	}
}

func TestWireUvarintRejects(t *testing.T) {
	for _, in := range [][]byte{
		{},
		{0x80},
		{0xff, 0xff},
		{0xff, 0xff, 0xff, 0xff, 0x10},       // 2^32: more than 32 bits
		{0xff, 0xff, 0xff, 0xff, 0x8f, 0x00}, // six bytes
	} {
		r := flexReader{b: in}
		r.uvarint()
		if r.err == nil {
			t.Errorf("uvarint(%x) did not fail", in)
		}
	}
}

func TestWireStrings(t *testing.T) {
	b := appendKeyString(nil, "ab")
	b = appendCompactString(b, "")
	b = appendCompactString(b, "xyz")
	b = appendCompactNullableString(b, "")
	b = appendCompactNullableString(b, "q")
	b = appendCompactInt32s(b, []int32{1, -2})
	b = appendCompactInt32s(b, nil)
	b = appendNoTags(b)
	want := []byte{
		0, 2, 'a', 'b', // int16 length
		1, // "" is length 0, written as 1
		4, 'x', 'y', 'z',
		0, // null
		2, 'q',
		3, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe,
		1, // empty array
		0, // no tagged fields
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("got  %x\nwant %x", b, want)
	}
	r := flexReader{b: b}
	if got := r.keyString(); got != "ab" {
		t.Errorf("keyString = %q", got)
	}
	if got := r.compactString(); got != "" {
		t.Errorf("empty compactString = %q", got)
	}
	if got := r.compactString(); got != "xyz" {
		t.Errorf("compactString = %q", got)
	}
	if got := r.compactNullableString(); got != "" {
		t.Errorf("null = %q", got)
	}
	if got := r.compactNullableString(); got != "q" {
		t.Errorf("nullable = %q", got)
	}
	if got := r.compactInt32s(); len(got) != 2 || got[0] != 1 || got[1] != -2 {
		t.Errorf("int32s = %v", got)
	}
	if got := r.compactInt32s(); len(got) != 0 {
		t.Errorf("empty int32s = %v", got)
	}
	r.tags(nil)
	if err := r.done(); err != nil {
		t.Fatal(err)
	}
}

func TestWireReaderRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		read func(r *flexReader)
		want error
	}{
		{"negative key string", []byte{0xff, 0xff}, func(r *flexReader) { r.keyString() }, errWireNull},
		{"key string past end", []byte{0, 3, 'a'}, func(r *flexReader) { r.keyString() }, errWireTruncated},
		{"null compact string", []byte{0}, func(r *flexReader) { r.compactString() }, errWireNull},
		{"compact string past end", []byte{5, 'a'}, func(r *flexReader) { r.compactString() }, errWireTruncated},
		{"null array", []byte{0}, func(r *flexReader) { r.compactInt32s() }, errWireNull},
		// 2^32-2 int32s announced in 4 bytes: refused before allocating.
		{"huge array", []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0, 0, 0}, func(r *flexReader) { r.compactInt32s() }, errWireTruncated},
		{"array past end", []byte{3, 0, 0, 0, 1, 0, 0}, func(r *flexReader) { r.compactInt32s() }, errWireTruncated},
		{"huge string array", []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, func(r *flexReader) { r.compactStrings() }, errWireTruncated},
		{"tag count past end", []byte{5, 0, 0}, func(r *flexReader) { r.tags(nil) }, errWireTags},
		{"tag size past end", []byte{1, 0, 9, 1}, func(r *flexReader) { r.tags(nil) }, errWireTruncated},
		{"tags out of order", []byte{2, 1, 0, 0, 0}, func(r *flexReader) { r.tags(nil) }, errWireTags},
		{"tag repeated", []byte{2, 0, 0, 0, 0}, func(r *flexReader) { r.tags(nil) }, errWireTags},
		{"trailing", []byte{0, 7}, func(r *flexReader) { r.tags(nil) }, errWireTrailing},
		{"short int64", []byte{1, 2, 3}, func(r *flexReader) { r.int64() }, errWireTruncated},
		{"short uuid", make([]byte, 15), func(r *flexReader) { r.uuid() }, errWireTruncated},
	} {
		r := flexReader{b: tc.in}
		tc.read(&r)
		if err := r.done(); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestWireTagsSkipAndClaim(t *testing.T) {
	// Two tagged fields, 0 (two bytes) and 5 (none), then a trailing int8.
	in := []byte{2, 0, 2, 0xaa, 0xbb, 5, 0, 0x7f}
	var seen []uint32
	r := flexReader{b: in}
	r.tags(func(tag uint32, data []byte) error {
		seen = append(seen, tag)
		if tag == 0 && !bytes.Equal(data, []byte{0xaa, 0xbb}) {
			t.Errorf("tag 0 data %x", data)
		}
		return nil
	})
	if got := r.int8(); got != 0x7f {
		t.Errorf("after tags: %d", got)
	}
	if err := r.done(); err != nil || len(seen) != 2 || seen[0] != 0 || seen[1] != 5 {
		t.Fatalf("err %v, seen %v", err, seen)
	}
	// A claimed field's error fails the read.
	r = flexReader{b: in}
	r.tags(func(uint32, []byte) error { return errors.New("bad") })
	if err := r.done(); !errors.Is(err, errWireTags) {
		t.Fatalf("got %v", err)
	}
}

// TestWireReaderNeverPanics feeds random bytes to every read.
func TestWireReaderNeverPanics(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := flexReader{b: rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(t, "in")}
		for range rapid.IntRange(1, 8).Draw(t, "reads") {
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0:
				r.int8()
			case 1:
				r.int32()
			case 2:
				r.uvarint()
			case 3:
				r.keyString()
			case 4:
				r.compactString()
			case 5:
				r.compactNullableString()
			case 6:
				r.compactInt32s()
			case 7:
				r.compactStrings()
			case 8:
				r.tags(nil)
			case 9:
				r.uuid()
			}
		}
		_ = r.done()
	})
}
