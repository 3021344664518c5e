package batch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// franz-go is the oracle here: its kmsg encodes and decodes the batch
// and record layouts, and its client's compressor and decompressor the
// codecs. Neither shares code with this package.

func kgoCodec(ct CompressionType) kgo.CompressionCodec {
	switch ct {
	case CompressionGzip:
		return kgo.GzipCompression()
	case CompressionSnappy:
		return kgo.SnappyCompression()
	case CompressionLZ4:
		return kgo.Lz4Compression()
	case CompressionZstd:
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

// kmsgRecords splits an uncompressed records section with kmsg.
func kmsgRecords(t *testing.T, section []byte, n int) []kmsg.Record {
	t.Helper()
	var out []kmsg.Record
	for i := range n {
		l, used := binary.Varint(section)
		if used <= 0 || int(l) > len(section)-used {
			t.Fatalf("record %d: length varint %d (%d bytes)", i, l, used)
		}
		var r kmsg.Record
		if err := r.ReadFrom(section[:used+int(l)]); err != nil {
			t.Fatalf("record %d: kmsg: %v", i, err)
		}
		out = append(out, r)
		section = section[used+int(l):]
	}
	if len(section) != 0 {
		t.Fatalf("%d bytes after %d records", len(section), n)
	}
	return out
}

// Built here, read by franz-go.
func TestBuilderReadByKmsg(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 41))
	dec := kgo.DefaultDecompressor()
	for _, c := range codecCases {
		t.Run(c.name, func(t *testing.T) {
			want := sampleRecords(rng, 40)
			b := buildBatch(t, c, want, func(bld *Builder) {
				bld.BaseOffset, bld.PartitionLeaderEpoch = 500, 4
				bld.ProducerID, bld.ProducerEpoch, bld.BaseSequence = 9, 2, 300
				bld.IsTransactional = true
			})
			var kb kmsg.RecordBatch
			if err := kb.ReadFrom(b); err != nil {
				t.Fatal(err)
			}
			if kb.FirstOffset != 500 || kb.PartitionLeaderEpoch != 4 || kb.Magic != 2 ||
				kb.Length != int32(len(b)-LogOverhead) || kb.LastOffsetDelta != 39 || kb.NumRecords != 40 ||
				kb.ProducerID != 9 || kb.ProducerEpoch != 2 || kb.FirstSequence != 300 ||
				kb.Attributes != int16(c.ct)|transactionalFlagMask ||
				kb.FirstTimestamp != want[0].Timestamp {
				t.Fatalf("kmsg sees %+v", kb)
			}
			// kmsg does not check the CRC; compute it independently.
			if crc := crc32.Checksum(b[AttributesOffset:], crc32.MakeTable(crc32.Castagnoli)); uint32(kb.CRC) != crc {
				t.Fatalf("CRC %#x, want %#x", uint32(kb.CRC), crc)
			}
			section := kb.Records
			if c.ct != CompressionNone {
				var err error
				if section, err = dec.Decompress(kb.Records, kgo.CompressionCodecType(c.ct)); err != nil {
					t.Fatalf("franz-go decompress: %v", err)
				}
			}
			got := kmsgRecords(t, section, 40)
			for i, r := range got {
				if r.OffsetDelta != int32(i) || kb.FirstTimestamp+r.TimestampDelta64 != want[i].Timestamp {
					t.Fatalf("record %d: offset delta %d, timestamp delta %d", i, r.OffsetDelta, r.TimestampDelta64)
				}
				asOurs := Record{Timestamp: want[i].Timestamp, Key: r.Key, Value: r.Value}
				for _, h := range r.Headers {
					asOurs.Headers = append(asOurs.Headers, RecordHeader{Key: h.Key, Value: h.Value})
				}
				if err := sameRecord(want[i], asOurs); err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
			}
		})
	}
}

// Built by franz-go, read here.
func TestKmsgBatchValidates(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 42))
	for _, c := range codecCases {
		if c.xerial {
			continue // franz-go's block compressor writes raw snappy
		}
		t.Run(c.name, func(t *testing.T) {
			want := sampleRecords(rng, 60)
			var raw []byte
			for i, w := range want {
				r := kmsg.Record{TimestampDelta64: w.Timestamp - want[0].Timestamp, OffsetDelta: int32(i), Key: w.Key, Value: w.Value}
				for _, h := range w.Headers {
					r.Headers = append(r.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
				}
				body := r.AppendTo(nil) // with Length 0, a one-byte varint
				r.Length = int32(len(body) - 1)
				raw = r.AppendTo(raw)
			}
			section := raw
			if c.ct != CompressionNone {
				comp, err := kgo.DefaultCompressor(kgoCodec(c.ct))
				if err != nil {
					t.Fatal(err)
				}
				var used kgo.CompressionCodecType
				section, used = comp.Compress(new(bytes.Buffer), raw)
				if used != kgo.CompressionCodecType(c.ct) {
					t.Fatalf("franz-go used codec %d", used)
				}
				section = append([]byte{}, section...)
			}
			maxTs := want[0].Timestamp
			for _, w := range want {
				maxTs = max(maxTs, w.Timestamp)
			}
			kb := kmsg.RecordBatch{
				FirstOffset: 0, Length: int32(49 + len(section)), PartitionLeaderEpoch: -1, Magic: 2,
				Attributes: int16(c.ct), LastOffsetDelta: 59, FirstTimestamp: want[0].Timestamp, MaxTimestamp: maxTs,
				ProducerID: 3, ProducerEpoch: 0, FirstSequence: 0, NumRecords: 60, Records: section,
			}
			b := kb.AppendTo(nil)
			binary.BigEndian.PutUint32(b[CRCOffset:], crc32.Checksum(b[AttributesOffset:], crc32.MakeTable(crc32.Castagnoli)))
			s, err := ValidateSummary(b, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if s.MaxRecordTimestamp != maxTs || s.UncompressedBytes != len(raw) || s.ProducerID != 3 {
				t.Fatalf("summary %+v", s)
			}
			got, err := collect(t, b, Limits{})
			if err != nil || len(got) != 60 {
				t.Fatalf("%d records, %v", len(got), err)
			}
			for i := range want {
				if err := sameRecord(want[i], got[i]); err != nil {
					t.Fatal(fmt.Errorf("record %d: %w", i, err))
				}
			}
		})
	}
}
