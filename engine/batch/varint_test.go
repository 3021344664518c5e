package batch

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// Kafka's varints are Go's binary.Varint encoding (zigzag, then LEB128),
// which makes the standard library an independent oracle.
func TestVarintMatchesStdlib(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 81))
	values := []int64{0, 1, -1, 63, -64, 64, -65, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64}
	for range 1000 {
		values = append(values, int64(rng.Uint64())>>rng.IntN(64))
	}
	for _, v := range values {
		want := binary.AppendVarint(nil, v)
		if got := appendVarlong(nil, v); !bytes.Equal(got, want) || varlongSize(v) != len(want) {
			t.Fatalf("varlong %d: % x (size %d), want % x", v, got, varlongSize(v), want)
		}
		if r, n, ok := readVarlong(want); !ok || r != v || n != len(want) {
			t.Fatalf("readVarlong(% x) = %d, %d, %v", want, r, n, ok)
		}
		if v != int64(int32(v)) {
			continue
		}
		if got := appendVarint(nil, int32(v)); !bytes.Equal(got, want) || varintSize(int32(v)) != len(want) {
			t.Fatalf("varint %d: % x, want % x", v, got, want)
		}
		if r, n, ok := readVarint(want); !ok || int64(r) != v || n != len(want) {
			t.Fatalf("readVarint(% x) = %d, %d, %v", want, r, n, ok)
		}
	}
}

func TestVarintRejects(t *testing.T) {
	for _, b := range [][]byte{
		nil,
		{0x80},
		{0xff, 0xff, 0xff, 0xff, 0x10},       // bits past 32
		{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, // six bytes
	} {
		if _, _, ok := readVarint(b); ok {
			t.Errorf("readVarint(% x) accepted", b)
		}
	}
	for _, b := range [][]byte{
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, // bits past 64
		{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00},
	} {
		if _, _, ok := readVarlong(b); ok {
			t.Errorf("readVarlong(% x) accepted", b)
		}
	}
	// Java accepts a padded encoding; so do we.
	if v, n, ok := readVarint([]byte{0x80, 0x00}); !ok || v != 0 || n != 2 {
		t.Errorf("padded zero: %d, %d, %v", v, n, ok)
	}
}
