package batch

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	for _, c := range codecCases {
		for _, n := range []int{1, 2, 7, 500} {
			t.Run(fmt.Sprintf("%s/%d", c.name, n), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(n), 1))
				want := sampleRecords(rng, n)
				b := buildBatch(t, c, want, func(bld *Builder) {
					bld.BaseOffset = 1000
					bld.ProducerID, bld.ProducerEpoch, bld.BaseSequence = 42, 3, 17
				})
				s, err := ValidateSummary(b, Limits{})
				if err != nil {
					t.Fatalf("validate: %v", err)
				}
				if s.RecordCount != int32(n) || s.LastOffsetDelta != int32(n-1) || s.CompressionType() != c.ct {
					t.Fatalf("header %+v", s.Header)
				}
				if s.MaxTimestamp != s.MaxRecordTimestamp {
					t.Fatalf("MaxTimestamp %d, records' max %d", s.MaxTimestamp, s.MaxRecordTimestamp)
				}
				if s.BaseTimestamp != want[0].Timestamp {
					t.Fatalf("BaseTimestamp %d, first record %d", s.BaseTimestamp, want[0].Timestamp)
				}
				got, err := collect(t, b, Limits{})
				if err != nil {
					t.Fatalf("records: %v", err)
				}
				if len(got) != n {
					t.Fatalf("%d records, want %d", len(got), n)
				}
				for i := range want {
					if got[i].Offset != 1000+int64(i) || got[i].OffsetDelta != int32(i) {
						t.Fatalf("record %d: offset %d delta %d", i, got[i].Offset, got[i].OffsetDelta)
					}
					if err := sameRecord(want[i], got[i]); err != nil {
						t.Fatalf("record %d: %v", i, err)
					}
				}
				if c.ct == CompressionNone && s.UncompressedBytes != len(b)-RecordBatchOverhead {
					t.Fatalf("UncompressedBytes %d of a %d-byte batch", s.UncompressedBytes, len(b))
				}
				if c.xerial && string(b[RecordsOffset:RecordsOffset+8]) != string(xerialMagic) {
					t.Fatalf("xerial requested, section starts % x", b[RecordsOffset:RecordsOffset+8])
				}
			})
		}
	}
}

// A batch without records is what compaction may leave behind: valid in a
// log, refused from a producer.
func TestEmptyBatch(t *testing.T) {
	for _, c := range codecCases {
		t.Run(c.name, func(t *testing.T) {
			b := buildBatch(t, c, nil, nil)
			if _, err := Validate(b, Limits{}); !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("client origin: %v, want ErrInvalidRecord", err)
			}
			h, err := Validate(b, Limits{Origin: AppendOriginReplication})
			if err != nil {
				t.Fatalf("replication origin: %v", err)
			}
			if h.RecordCount != 0 || h.MaxTimestamp != NoTimestamp {
				t.Fatalf("header %+v", h)
			}
			got, err := collect(t, b, Limits{Origin: AppendOriginReplication})
			if err != nil || len(got) != 0 {
				t.Fatalf("records %v, %v", got, err)
			}
		})
	}
}

func TestHeaderFields(t *testing.T) {
	b := buildBatch(t, codecCases[0], sampleRecords(rand.New(rand.NewPCG(1, 2)), 3), func(bld *Builder) {
		bld.BaseOffset = 1 << 40
		bld.PartitionLeaderEpoch = 9
		bld.ProducerID, bld.ProducerEpoch, bld.BaseSequence = 77, 5, 1000
		bld.IsTransactional = true
	})
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	want := Header{
		BaseOffset: 1 << 40, BatchLength: int32(len(b) - LogOverhead), PartitionLeaderEpoch: 9,
		Magic: 2, CRC: computeCRC(b), Attributes: transactionalFlagMask, LastOffsetDelta: 2,
		BaseTimestamp: h.BaseTimestamp, MaxTimestamp: h.MaxTimestamp,
		ProducerID: 77, ProducerEpoch: 5, BaseSequence: 1000, RecordCount: 3,
	}
	if h != want {
		t.Fatalf("got  %+v\nwant %+v", h, want)
	}
	if h.Size() != len(b) || h.LastOffset() != 1<<40+2 || h.NextOffset() != 1<<40+3 {
		t.Fatalf("Size %d LastOffset %d NextOffset %d", h.Size(), h.LastOffset(), h.NextOffset())
	}
	if !h.IsTransactional() || h.IsControl() || h.TimestampType() != CreateTime || h.HasDeleteHorizonMs() || !h.HasProducerID() {
		t.Fatalf("flags of %#x", h.Attributes)
	}
	if h.LastSequence() != 1002 || h.DeleteHorizonMs() != NoTimestamp {
		t.Fatalf("LastSequence %d DeleteHorizonMs %d", h.LastSequence(), h.DeleteHorizonMs())
	}
}

func TestIncrementSequence(t *testing.T) {
	for _, c := range []struct{ seq, inc, want int32 }{
		{0, 0, 0},
		{5, 4, 9},
		{1<<31 - 1, 1, 0},
		{1<<31 - 3, 4, 1},
		{1<<31 - 5, 4, 1<<31 - 1},
	} {
		if got := IncrementSequence(c.seq, c.inc); got != c.want {
			t.Errorf("IncrementSequence(%d, %d) = %d, want %d", c.seq, c.inc, got, c.want)
		}
	}
	if got := (Header{BaseSequence: NoSequence, LastOffsetDelta: 3}).LastSequence(); got != NoSequence {
		t.Errorf("LastSequence without sequence = %d", got)
	}
}

func TestCompressionTypeNames(t *testing.T) {
	for ct := CompressionNone; ct <= CompressionZstd; ct++ {
		got, err := ParseCompressionType(ct.String())
		if err != nil || got != ct {
			t.Errorf("ParseCompressionType(%q) = %v, %v", ct.String(), got, err)
		}
	}
	if _, err := ParseCompressionType("brotli"); !errors.Is(err, ErrUnknownCodec) {
		t.Errorf("brotli: %v", err)
	}
	if CompressionType(5).Known() || CompressionType(-1).Known() {
		t.Error("ids 5 and -1 known")
	}
}

// CRC-32C check value from the iSCSI specification (RFC 3720 B.4).
func TestCRC32CCheckValue(t *testing.T) {
	b := make([]byte, AttributesOffset, AttributesOffset+9)
	b = append(b, "123456789"...)
	if got := computeCRC(b); got != 0xE3069283 {
		t.Fatalf("CRC-32C(123456789) = %#x, want 0xe3069283", got)
	}
}

func TestBuilderReuse(t *testing.T) {
	bld := NewBuilder(CompressionZstd)
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 3 {
		bld.Reset()
		want := sampleRecords(rng, 10+round)
		for _, r := range want {
			bld.Append(r)
		}
		if bld.Len() != len(want) {
			t.Fatalf("Len %d", bld.Len())
		}
		prefix := []byte("prefix")
		b, err := bld.AppendTo(prefix)
		if err != nil {
			t.Fatal(err)
		}
		if string(b[:6]) != "prefix" {
			t.Fatal("AppendTo clobbered dst")
		}
		got, err := collect(t, b[6:], Limits{})
		if err != nil || len(got) != len(want) {
			t.Fatalf("round %d: %d records, %v", round, len(got), err)
		}
	}
}

// Validation shares pools and zstd decoders between goroutines; run with
// -race to make this test mean something.
func TestConcurrentValidate(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	var batches [][]byte
	for _, c := range codecCases {
		batches = append(batches, buildBatch(t, c, sampleRecords(rng, 50), nil))
	}
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			for i := range 50 {
				b := batches[(g+i)%len(batches)]
				lim := Limits{MaxDecompressedBytes: 1<<20 + g} // several zstd decoders
				if _, err := collect(t, b, lim); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
