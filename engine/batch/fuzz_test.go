package batch

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

const fuzzCap = 1 << 20

var sentinels = []error{ErrCorrupt, ErrCRC, ErrUnsupportedMagic, ErrUnknownCodec, ErrTooLarge, ErrInvalidRecord, ErrInvalidTimestamp}

func isSentinel(err error) bool {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// fuzzSeeds returns builder batches in every codec, and a few edited ones.
func fuzzSeeds(f *testing.F) [][]byte {
	rng := rand.New(rand.NewPCG(61, 61))
	var seeds [][]byte
	for _, c := range codecCases {
		for _, n := range []int{0, 1, 4} {
			seeds = append(seeds, buildBatch(f, c, sampleRecords(rng, n), nil))
		}
	}
	control := buildBatch(f, codecCases[0], sampleRecords(rng, 2), func(b *Builder) { b.IsControl = true })
	seeds = append(seeds, control)
	return seeds
}

// FuzzValidate: arbitrary bytes never panic and fail only with a sentinel;
// when a batch passes, Records, Scan and the header agree with it. With
// fix set, batchLength and the CRC are made consistent first, so the fuzzer
// gets past them into decompression and the record walk.
func FuzzValidate(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, uint8(0))
		f.Add(s, uint8(1))
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, b []byte, mode uint8) {
		if mode&1 != 0 && len(b) >= RecordBatchOverhead {
			b = append([]byte{}, b...) // the fuzzer's input is not ours to edit
			binary.BigEndian.PutUint32(b[LengthOffset:], uint32(len(b)-LogOverhead))
			binary.BigEndian.PutUint32(b[CRCOffset:], crc32.Checksum(b[AttributesOffset:], crc32.MakeTable(crc32.Castagnoli)))
		}
		lim := Limits{MaxDecompressedBytes: fuzzCap}
		if mode&2 != 0 {
			lim.Origin = AppendOriginReplication
		}
		s, err := ValidateSummary(b, lim)
		if err != nil {
			if !isSentinel(err) {
				t.Fatalf("untyped error: %v", err)
			}
			if err := Records(b, lim, func(Record) error { t.Fatal("record from an invalid batch"); return nil }); err == nil {
				t.Fatal("Records accepts what Validate refuses")
			}
			return
		}
		if s.UncompressedBytes > fuzzCap {
			t.Fatalf("%d bytes decompressed past the %d cap", s.UncompressedBytes, fuzzCap)
		}
		if n, h, err := Scan(b); err != nil || n != len(b) || h != s.Header {
			t.Fatalf("Scan = %d, %v on a valid batch of %d", n, err, len(b))
		}
		count := int32(0)
		maxTs := NoTimestamp
		prev := int64(-1)
		err = Records(b, lim, func(r Record) error {
			if r.Offset != s.BaseOffset+int64(r.OffsetDelta) || int64(r.OffsetDelta) <= prev || r.OffsetDelta > s.LastOffsetDelta {
				t.Fatalf("record %d: offset %d, delta %d after %d", count, r.Offset, r.OffsetDelta, prev)
			}
			prev = int64(r.OffsetDelta)
			maxTs = max(maxTs, r.Timestamp)
			count++
			return nil
		})
		if err != nil {
			t.Fatalf("Records fails on a valid batch: %v", err)
		}
		if count != s.RecordCount || maxTs != s.MaxRecordTimestamp {
			t.Fatalf("Records yields %d (max timestamp %d), Validate said %d (%d)", count, maxTs, s.RecordCount, s.MaxRecordTimestamp)
		}
	})
}

// FuzzScan: arbitrary bytes never panic; Scan's n means what it says.
func FuzzScan(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
		f.Add(append(append([]byte{}, s...), s...))
		f.Add(s[:len(s)/2])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, h, err := Scan(b)
		switch {
		case err == nil:
			if n < RecordBatchOverhead || n > len(b) || h.Size() != n {
				t.Fatalf("n %d of %d bytes, header size %d", n, len(b), h.Size())
			}
			if crc32.Checksum(b[AttributesOffset:n], crc32.MakeTable(crc32.Castagnoli)) != h.CRC {
				t.Fatal("accepted a bad CRC")
			}
			_, verr := Validate(b[:n], Limits{Origin: AppendOriginReplication, MaxDecompressedBytes: fuzzCap})
			if errors.Is(verr, ErrCRC) || errors.Is(verr, ErrUnsupportedMagic) {
				t.Fatalf("Scan accepts, Validate says %v", verr)
			}
		case errors.Is(err, ErrIncomplete):
			if n <= len(b) || (n != LogOverhead && n < RecordBatchOverhead) {
				t.Fatalf("incomplete with n %d of %d bytes", n, len(b))
			}
		default:
			if n != 0 || !isSentinel(err) {
				t.Fatalf("n %d, %v", n, err)
			}
		}
	})
}

// FuzzDecompress: every codec on arbitrary bytes never panics, never
// returns more than the cap, and fails only with a sentinel.
func FuzzDecompress(f *testing.F) {
	for _, c := range codecCases {
		f.Add(compressCase(f, c, []byte("hello, hello, hello, wren")), uint8(c.ct))
		f.Add(compressCase(f, c, make([]byte, 5000)), uint8(c.ct))
	}
	f.Fuzz(func(t *testing.T, data []byte, codec uint8) {
		out, err := Decompress(CompressionType(codec%8), data, fuzzCap)
		if err != nil {
			if !isSentinel(err) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		if len(out) > fuzzCap {
			t.Fatalf("%d bytes past the cap", len(out))
		}
	})
}
