package batch

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
)

// segment builds n batches back to back, as a segment file holds them.
func segment(t testing.TB, rng *rand.Rand, n int) ([]byte, []int) {
	t.Helper()
	var seg []byte
	var sizes []int
	next := int64(0)
	for i := range n {
		c := codecCases[i%len(codecCases)]
		b := buildBatch(t, c, sampleRecords(rng, 1+rng.IntN(20)), func(bld *Builder) { bld.BaseOffset = next })
		h, _ := ParseHeader(b)
		next = h.NextOffset()
		seg = append(seg, b...)
		sizes = append(sizes, len(b))
	}
	return seg, sizes
}

func TestScanSegment(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 21))
	seg, sizes := segment(t, rng, 12)
	pos, want := 0, int64(0)
	for i, size := range sizes {
		n, h, err := Scan(seg[pos:])
		if err != nil || n != size {
			t.Fatalf("batch %d at %d: n %d (want %d), %v", i, pos, n, size, err)
		}
		if h.BaseOffset != want {
			t.Fatalf("batch %d: base offset %d, want %d", i, h.BaseOffset, want)
		}
		if _, err := Validate(seg[pos:pos+n], Limits{Origin: AppendOriginReplication}); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		want = h.NextOffset()
		pos += n
	}
	if pos != len(seg) {
		t.Fatalf("scanned %d of %d bytes", pos, len(seg))
	}
}

// Every cut through the last batch is a torn tail: ErrIncomplete, and n
// says how many bytes the batch needs.
func TestScanTornTail(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 22))
	seg, sizes := segment(t, rng, 2)
	last := seg[sizes[0]:]
	for cut := range len(last) {
		n, _, err := Scan(last[:cut])
		if !errors.Is(err, ErrIncomplete) {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		wantN := len(last)
		if cut < LogOverhead {
			wantN = LogOverhead
		}
		if n != wantN {
			t.Fatalf("cut at %d: n %d, want %d", cut, n, wantN)
		}
	}
}

func TestScanCorrupt(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 23))
	b := buildBatch(t, codecCases[4], sampleRecords(rng, 10), nil)
	for _, c := range []struct {
		name string
		edit func([]byte) []byte
		want error
	}{
		{"flipped record byte", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, ErrCRC},
		{"flipped max timestamp", func(b []byte) []byte { b[MaxTimestampOffset] ^= 1; return b }, ErrCRC},
		{"magic 1", func(b []byte) []byte { b[MagicOffset] = 1; return b }, ErrUnsupportedMagic},
		{"magic 0 in a short tail", func(b []byte) []byte { b[MagicOffset] = 0; return b[:20] }, ErrUnsupportedMagic},
		{"zeroed tail", func(b []byte) []byte { return make([]byte, 100) }, ErrCorrupt},
		{"length 48", func(b []byte) []byte { binary.BigEndian.PutUint32(b[LengthOffset:], 48); return b }, ErrCorrupt},
		{"length negative", func(b []byte) []byte { binary.BigEndian.PutUint32(b[LengthOffset:], 0x80000000); return b }, ErrCorrupt},
		{"length past int32 size", func(b []byte) []byte { binary.BigEndian.PutUint32(b[LengthOffset:], 0x7ffffffa); return b }, ErrCorrupt},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, _, err := Scan(c.edit(append([]byte{}, b...)))
			if !errors.Is(err, c.want) || n != 0 {
				t.Fatalf("Scan = %d, %v; want 0, %v", n, err, c.want)
			}
		})
	}
	// Baseoffset and leader epoch are outside the CRC: Scan cannot see a flip
	// there, by design of the format.
	flipped := append([]byte{}, b...)
	flipped[BaseOffsetOffset+7] ^= 1
	if _, _, err := Scan(flipped); err != nil {
		t.Fatalf("base offset flip: %v", err)
	}
}
