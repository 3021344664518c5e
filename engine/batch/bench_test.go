package batch

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchBatch builds a batch whose records section is about size bytes
// uncompressed: JSON-like sensor readings, about 120 bytes a record.
func benchBatch(b *testing.B, c codecCase, size int) ([]byte, int) {
	rng := rand.New(rand.NewPCG(71, 71))
	bld := NewBuilder(c.ct)
	bld.SnappyXerial = c.xerial
	raw := 0
	for i := 0; raw < size; i++ {
		r := Record{
			Timestamp: 1_700_000_000_000 + int64(i),
			Key:       fmt.Appendf(nil, "sensor-%04d", rng.IntN(1000)),
			Value:     fmt.Appendf(nil, `{"site":"edge-%d","temp":%.2f,"humidity":%.2f,"seq":%d}`, rng.IntN(8), rng.Float64()*40, rng.Float64()*100, i),
			Headers:   []RecordHeader{{Key: "src", Value: []byte("plc")}},
		}
		bld.Append(r)
		enc, _ := appendRecord(nil, &r, int32(i), 0)
		raw += len(enc)
	}
	out, err := bld.Build()
	if err != nil {
		b.Fatal(err)
	}
	return out, raw
}

// BenchmarkValidate: the full produce-path check of a 16 KiB batch. Bytes/s
// are of the uncompressed records.
func BenchmarkValidate(b *testing.B) {
	for _, c := range codecCases {
		b.Run(c.name+"-16KiB", func(b *testing.B) {
			batch, raw := benchBatch(b, c, 16<<10)
			b.SetBytes(int64(raw))
			b.ReportAllocs()
			b.ReportMetric(float64(len(batch)), "batch-bytes")
			for b.Loop() {
				if _, err := Validate(batch, Limits{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkScan: the recovery and read-path check (framing and CRC).
func BenchmarkScan(b *testing.B) {
	batch, _ := benchBatch(b, codecCases[0], 16<<10)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Scan(batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecords: validate and iterate, as a reader does.
func BenchmarkRecords(b *testing.B) {
	for _, c := range []codecCase{codecCases[0], codecCases[5]} {
		b.Run(c.name+"-16KiB", func(b *testing.B) {
			batch, raw := benchBatch(b, c, 16<<10)
			b.SetBytes(int64(raw))
			b.ReportAllocs()
			for b.Loop() {
				if err := Records(batch, Limits{}, func(Record) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
