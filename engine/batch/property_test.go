package batch

import (
	"errors"
	"testing"

	"pgregory.net/rapid"
)

func drawNullable(t *rapid.T, label string, maxLen int) []byte {
	if rapid.IntRange(0, 4).Draw(t, label+"Null") == 0 {
		return nil
	}
	return rapid.SliceOfN(rapid.Byte(), 0, maxLen).Draw(t, label)
}

func drawRecord(t *rapid.T) Record {
	r := Record{
		Timestamp:  rapid.Int64Range(-1, 1<<42).Draw(t, "timestamp"),
		Attributes: rapid.Int8().Draw(t, "attributes"),
		Key:        drawNullable(t, "key", 40),
		Value:      drawNullable(t, "value", 300),
	}
	for range rapid.IntRange(0, 3).Draw(t, "headers") {
		r.Headers = append(r.Headers, RecordHeader{
			Key:   rapid.StringN(0, 12, -1).Draw(t, "headerKey"),
			Value: drawNullable(t, "headerValue", 20),
		})
	}
	return r
}

// Random records, any codec and header fields: build, validate, iterate,
// and get the same records back.
func TestPropertyBuildValidateIterate(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := rapid.SampledFrom(codecCases).Draw(t, "codec")
		want := rapid.SliceOfN(rapid.Custom(drawRecord), 0, 40).Draw(t, "records")
		bld := NewBuilder(c.ct)
		bld.SnappyXerial = c.xerial
		bld.BaseOffset = rapid.Int64Range(0, 1<<50).Draw(t, "baseOffset")
		bld.PartitionLeaderEpoch = rapid.Int32Range(-1, 1000).Draw(t, "leaderEpoch")
		if rapid.Bool().Draw(t, "idempotent") {
			bld.ProducerID = rapid.Int64Range(0, 1<<40).Draw(t, "producerID")
			bld.ProducerEpoch = rapid.Int16Range(0, 100).Draw(t, "producerEpoch")
			bld.BaseSequence = rapid.Int32Range(0, 1<<31-1).Draw(t, "baseSequence")
			bld.IsTransactional = rapid.Bool().Draw(t, "transactional")
		}
		for _, r := range want {
			bld.Append(r)
		}
		b, err := bld.Build()
		if err != nil {
			t.Fatal(err)
		}
		lim := Limits{}
		if len(want) == 0 {
			lim.Origin = AppendOriginReplication
		}
		s, err := ValidateSummary(b, lim)
		if err != nil {
			t.Fatalf("validate: %v", err)
		}
		if s.BaseOffset != bld.BaseOffset || s.RecordCount != int32(len(want)) || s.MaxRecordTimestamp != s.MaxTimestamp {
			t.Fatalf("summary %+v", s)
		}
		if n, h, err := Scan(b); err != nil || n != len(b) || h != s.Header {
			t.Fatalf("scan: %d, %+v, %v", n, h, err)
		}
		got, err := collect(t, b, lim)
		if err != nil {
			t.Fatalf("records: %v", err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d records, want %d", len(got), len(want))
		}
		for i := range want {
			if got[i].Offset != bld.BaseOffset+int64(i) {
				t.Fatalf("record %d: offset %d", i, got[i].Offset)
			}
			if err := sameRecord(want[i], got[i]); err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
		}
	})
}

// Any single bit flipped in what the CRC or the framing covers is caught.
// (baseOffset and partitionLeaderEpoch are outside both, by the format.)
func TestPropertyBitFlipDetected(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := rapid.SampledFrom(codecCases).Draw(t, "codec")
		recs := rapid.SliceOfN(rapid.Custom(drawRecord), 1, 10).Draw(t, "records")
		b := buildBatch(t, c, recs, nil)
		pos := rapid.IntRange(LengthOffset, len(b)-1).Filter(func(p int) bool {
			return p < PartitionLeaderEpochOffset || p >= MagicOffset
		}).Draw(t, "pos")
		b[pos] ^= 1 << rapid.IntRange(0, 7).Draw(t, "bit")
		_, err := Validate(b, Limits{})
		if err == nil {
			t.Fatalf("flip at byte %d went unnoticed", pos)
		}
		if !errors.Is(err, ErrCRC) && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupportedMagic) {
			t.Fatalf("flip at byte %d: %v", pos, err)
		}
	})
}
