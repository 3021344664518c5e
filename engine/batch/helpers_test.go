package batch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
)

// tb is what the helpers need of testing.TB and rapid.T alike.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// codecCase is one way of writing the records section.
type codecCase struct {
	name   string
	ct     CompressionType
	xerial bool
}

var codecCases = []codecCase{
	{"none", CompressionNone, false},
	{"gzip", CompressionGzip, false},
	{"snappy", CompressionSnappy, false},
	{"snappy-xerial", CompressionSnappy, true},
	{"lz4", CompressionLZ4, false},
	{"zstd", CompressionZstd, false},
}

var compressedCases = codecCases[1:]

func buildBatch(t tb, c codecCase, recs []Record, edit func(*Builder)) []byte {
	t.Helper()
	bld := NewBuilder(c.ct)
	bld.SnappyXerial = c.xerial
	if edit != nil {
		edit(bld)
	}
	for _, r := range recs {
		bld.Append(r)
	}
	b, err := bld.Build()
	if err != nil {
		t.Fatalf("%s: build: %v", c.name, err)
	}
	return b
}

// collect returns deep copies of the records Records yields.
func collect(t tb, b []byte, lim Limits) ([]Record, error) {
	t.Helper()
	var out []Record
	err := Records(b, lim, func(r Record) error {
		c := r
		c.Key = cloneNullable(r.Key)
		c.Value = cloneNullable(r.Value)
		c.Headers = nil
		for _, h := range r.Headers {
			c.Headers = append(c.Headers, RecordHeader{Key: h.Key, Value: cloneNullable(h.Value)})
		}
		out = append(out, c)
		return nil
	})
	return out, err
}

func cloneNullable(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// sameRecord compares what a producer controls, telling null from empty.
func sameRecord(want, got Record) error {
	if want.Timestamp != got.Timestamp {
		return fmt.Errorf("timestamp %d, want %d", got.Timestamp, want.Timestamp)
	}
	if want.Attributes != got.Attributes {
		return fmt.Errorf("attributes %d, want %d", got.Attributes, want.Attributes)
	}
	if err := sameNullable("key", want.Key, got.Key); err != nil {
		return err
	}
	if err := sameNullable("value", want.Value, got.Value); err != nil {
		return err
	}
	if len(want.Headers) != len(got.Headers) {
		return fmt.Errorf("%d headers, want %d", len(got.Headers), len(want.Headers))
	}
	for i := range want.Headers {
		if want.Headers[i].Key != got.Headers[i].Key {
			return fmt.Errorf("header %d key %q, want %q", i, got.Headers[i].Key, want.Headers[i].Key)
		}
		if err := sameNullable(fmt.Sprintf("header %d value", i), want.Headers[i].Value, got.Headers[i].Value); err != nil {
			return err
		}
	}
	return nil
}

func sameNullable(what string, want, got []byte) error {
	if (want == nil) != (got == nil) || !bytes.Equal(want, got) {
		return fmt.Errorf("%s %q (null %v), want %q (null %v)", what, got, got == nil, want, want == nil)
	}
	return nil
}

// fixCRC recomputes the CRC of a batch a test edited on purpose.
func fixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[CRCOffset:], computeCRC(b))
}

// sampleRecords returns n records covering null and empty keys and values
// and headers with null and empty values.
func sampleRecords(rng *rand.Rand, n int) []Record {
	recs := make([]Record, n)
	base := int64(1_700_000_000_000)
	for i := range recs {
		r := Record{Timestamp: base + int64(rng.IntN(1000)) - 500}
		switch i % 4 {
		case 0:
			r.Key, r.Value = nil, nil
		case 1:
			r.Key, r.Value = []byte{}, []byte{}
		case 2:
			r.Key = fmt.Appendf(nil, "key-%d", i)
			r.Value = bytes.Repeat([]byte{byte('a' + i%26)}, rng.IntN(300))
		case 3:
			r.Key = fmt.Appendf(nil, "key-%d", i)
			r.Value = fmt.Appendf(nil, `{"sensor":%d,"reading":%d}`, i, rng.IntN(1<<20))
			r.Headers = []RecordHeader{
				{Key: "trace", Value: []byte("abc")},
				{Key: "", Value: nil},
				{Key: "empty", Value: []byte{}},
			}
		}
		recs[i] = r
	}
	return recs
}

// rebuild replaces the records section of a valid batch, keeping every
// header field but batchLength and CRC.
func rebuild(t tb, b []byte, section []byte) []byte {
	t.Helper()
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	return appendBatch(nil, h, section)
}
