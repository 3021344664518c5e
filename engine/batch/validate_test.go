package batch

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
)

// recordsWithDeltas encodes one small record per offset delta.
func recordsWithDeltas(t testing.TB, deltas ...int32) []byte {
	t.Helper()
	var raw []byte
	for i, d := range deltas {
		var err error
		raw, err = appendRecord(raw, &Record{Key: []byte{byte(i)}, Value: []byte("v")}, d, int64(i))
		if err != nil {
			t.Fatal(err)
		}
	}
	return raw
}

// batchWith builds a batch from a header template and a raw section.
func batchWith(h Header, section []byte) []byte {
	h.Magic = CurrentMagic
	return appendBatch(nil, h, section)
}

func TestValidateErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	valid := buildBatch(t, codecCases[0], sampleRecords(rng, 5), nil)
	validZstd := buildBatch(t, codecCases[5], sampleRecords(rng, 5), nil)
	plain := Header{ProducerID: NoProducerID, ProducerEpoch: -1, BaseSequence: NoSequence, PartitionLeaderEpoch: -1}
	edit := func(src []byte, f func(b []byte)) []byte {
		b := append([]byte{}, src...)
		f(b)
		return b
	}
	setAndFix := func(src []byte, f func(b []byte)) []byte {
		return edit(src, func(b []byte) { f(b); fixCRC(b) })
	}
	withHeader := func(f func(h *Header)) Header {
		h := plain
		f(&h)
		return h
	}
	rec := func(body ...byte) []byte { // a record with a hand-written body
		return append(appendVarint(nil, int32(len(body))), body...)
	}
	repl := Limits{Origin: AppendOriginReplication}

	cases := []struct {
		name string
		b    []byte
		lim  Limits
		want error
	}{
		{"flipped record byte", edit(valid, func(b []byte) { b[len(b)-3] ^= 0x10 }), Limits{}, ErrCRC},
		{"flipped CRC byte", edit(valid, func(b []byte) { b[CRCOffset+2] ^= 1 }), Limits{}, ErrCRC},
		{"flipped attributes", edit(valid, func(b []byte) { b[AttributesOffset+1] ^= 0x10 }), Limits{}, ErrCRC},
		{"magic 1", edit(valid, func(b []byte) { b[MagicOffset] = 1 }), Limits{}, ErrUnsupportedMagic},
		{"magic 0 short message", edit(valid[:30], func(b []byte) { b[MagicOffset] = 0 }), Limits{}, ErrUnsupportedMagic},
		{"shorter than header", valid[:40], Limits{}, ErrCorrupt},
		{"empty", nil, Limits{}, ErrCorrupt},
		{"truncated", valid[:len(valid)-1], Limits{}, ErrCorrupt},
		{"extra byte after batch", append(append([]byte{}, valid...), 0), Limits{}, ErrCorrupt},
		{"batchLength below minimum", edit(valid, func(b []byte) { binary.BigEndian.PutUint32(b[LengthOffset:], 48) }), Limits{}, ErrCorrupt},
		{"batchLength negative", edit(valid, func(b []byte) { binary.BigEndian.PutUint32(b[LengthOffset:], 0xffffffff) }), Limits{}, ErrCorrupt},
		{"batchLength one more", edit(valid, func(b []byte) { binary.BigEndian.PutUint32(b[LengthOffset:], uint32(len(b)-LogOverhead+1)) }), Limits{}, ErrCorrupt},
		{"codec 5", setAndFix(valid, func(b []byte) { b[AttributesOffset+1] |= 5 }), Limits{}, ErrUnknownCodec},
		{"codec 7", setAndFix(valid, func(b []byte) { b[AttributesOffset+1] |= 7 }), Limits{}, ErrUnknownCodec},
		{"record count one more", setAndFix(valid, func(b []byte) { binary.BigEndian.PutUint32(b[RecordsCountOffset:], 6) }), Limits{}, ErrInvalidRecord},
		{"record count one more, lastOffsetDelta too", setAndFix(valid, func(b []byte) {
			binary.BigEndian.PutUint32(b[RecordsCountOffset:], 6)
			binary.BigEndian.PutUint32(b[LastOffsetDeltaOffset:], 5)
		}), Limits{}, ErrInvalidRecord},
		{"record count one less, lastOffsetDelta too", setAndFix(valid, func(b []byte) {
			binary.BigEndian.PutUint32(b[RecordsCountOffset:], 4)
			binary.BigEndian.PutUint32(b[LastOffsetDeltaOffset:], 3)
		}), Limits{}, ErrInvalidRecord},
		{"record count negative", setAndFix(valid, func(b []byte) { binary.BigEndian.PutUint32(b[RecordsCountOffset:], 0x80000000) }), repl, ErrInvalidRecord},
		{"record count huge", setAndFix(valid, func(b []byte) {
			binary.BigEndian.PutUint32(b[RecordsCountOffset:], 1<<31-1)
			binary.BigEndian.PutUint32(b[LastOffsetDeltaOffset:], 1<<31-2)
		}), Limits{}, ErrInvalidRecord},
		{"lastOffsetDelta off", setAndFix(valid, func(b []byte) { binary.BigEndian.PutUint32(b[LastOffsetDeltaOffset:], 5) }), Limits{}, ErrInvalidRecord},
		{"lastOffsetDelta negative", setAndFix(valid, func(b []byte) { binary.BigEndian.PutUint32(b[LastOffsetDeltaOffset:], 0xffffffff) }), repl, ErrInvalidRecord},
		{"count above lastOffsetDelta+1 in a log", setAndFix(valid, func(b []byte) { binary.BigEndian.PutUint32(b[LastOffsetDeltaOffset:], 3) }), repl, ErrInvalidRecord},
		{"offset delta skips", batchWith(withHeader(func(h *Header) { h.RecordCount, h.LastOffsetDelta = 2, 1 }), recordsWithDeltas(t, 0, 2)), Limits{}, ErrInvalidRecord},
		{"offset delta starts at 1", batchWith(withHeader(func(h *Header) { h.RecordCount, h.LastOffsetDelta = 2, 1 }), recordsWithDeltas(t, 1, 2)), Limits{}, ErrInvalidRecord},
		{"offset delta repeats in a log", batchWith(withHeader(func(h *Header) { h.RecordCount, h.LastOffsetDelta = 2, 4 }), recordsWithDeltas(t, 1, 1)), repl, ErrInvalidRecord},
		{"offset delta past lastOffsetDelta in a log", batchWith(withHeader(func(h *Header) { h.RecordCount, h.LastOffsetDelta = 2, 4 }), recordsWithDeltas(t, 1, 5)), repl, ErrInvalidRecord},
		{"offset delta negative in a log", batchWith(withHeader(func(h *Header) { h.RecordCount, h.LastOffsetDelta = 1, 4 }), recordsWithDeltas(t, -1)), repl, ErrInvalidRecord},
		{"trailing bytes", batchWith(withHeader(func(h *Header) { h.RecordCount, h.LastOffsetDelta = 2, 1 }), append(recordsWithDeltas(t, 0, 1), 0)), Limits{}, ErrInvalidRecord},
		{"trailing record", batchWith(withHeader(func(h *Header) { h.RecordCount, h.LastOffsetDelta = 2, 1 }), recordsWithDeltas(t, 0, 1, 2)), Limits{}, ErrInvalidRecord},
		{"record length past end", batchWith(withHeader(func(h *Header) {}), append(appendVarint(nil, 100), 0, 0, 0, 0, 0, 0)), Limits{}, ErrInvalidRecord},
		{"record length negative", batchWith(withHeader(func(h *Header) {}), append(appendVarint(nil, -5), 0, 0, 0, 0, 0, 0)), Limits{}, ErrInvalidRecord},
		{"record length longer than fields", batchWith(withHeader(func(h *Header) {}), rec(0, 0, 0, 1, 1, 0, 0)), Limits{}, ErrInvalidRecord},
		{"key length -2", batchWith(withHeader(func(h *Header) {}), rec(0, 0, 0, 3, 1, 0)), Limits{}, ErrInvalidRecord},
		{"key length past record", batchWith(withHeader(func(h *Header) {}), rec(0, 0, 0, 20, 1, 0)), Limits{}, ErrInvalidRecord},
		{"header count negative", batchWith(withHeader(func(h *Header) {}), rec(0, 0, 0, 1, 1, 1)), Limits{}, ErrInvalidRecord},
		{"header count past record", batchWith(withHeader(func(h *Header) {}), rec(0, 0, 0, 1, 1, 200, 1)), Limits{}, ErrInvalidRecord},
		{"header key null", batchWith(withHeader(func(h *Header) {}), rec(0, 0, 0, 1, 1, 2, 1, 1)), Limits{}, ErrInvalidRecord},
		{"varint too long", batchWith(withHeader(func(h *Header) {}), rec(0, 0, 0x80, 0x80, 0x80, 0x80, 0x10, 1, 1, 0)), Limits{}, ErrInvalidRecord},
		{"varint unterminated", batchWith(withHeader(func(h *Header) {}), []byte{0x80}), Limits{}, ErrInvalidRecord},
		{"control batch from client", setAndFix(valid, func(b []byte) { b[AttributesOffset+1] |= controlFlagMask }), Limits{}, ErrInvalidRecord},
		{"producer id without sequence", setAndFix(valid, func(b []byte) { binary.BigEndian.PutUint64(b[ProducerIDOffset:], 5) }), Limits{}, ErrInvalidRecord},
		{"LogAppendTime from client", setAndFix(valid, func(b []byte) { b[AttributesOffset+1] |= timestampTypeMask }), Limits{}, ErrInvalidTimestamp},
		{"timestamp before window", valid, Limits{CheckTimestamps: true, MinTimestampMs: 1_800_000_000_000, MaxTimestampMs: 1 << 62}, ErrInvalidTimestamp},
		{"timestamp after window", valid, Limits{CheckTimestamps: true, MinTimestampMs: 0, MaxTimestampMs: 1_600_000_000_000}, ErrInvalidTimestamp},
		{"zstd section cut short", rebuild(t, validZstd, validZstd[RecordsOffset:len(validZstd)-5]), Limits{}, ErrCorrupt},
		{"zstd garbage after frame", rebuild(t, validZstd, append(append([]byte{}, validZstd[RecordsOffset:]...), 1, 2, 3, 4, 5, 6, 7, 8)), Limits{}, ErrCorrupt},
		{"compressed but empty", batchWith(withHeader(func(h *Header) { h.Attributes = int16(CompressionLZ4) }), nil), repl, ErrCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Validate(c.b, c.lim)
			if !errors.Is(err, c.want) {
				t.Fatalf("Validate = %v, want %v", err, c.want)
			}
			called := false
			err = Records(c.b, c.lim, func(Record) error { called = true; return nil })
			if !errors.Is(err, c.want) || called {
				t.Fatalf("Records = %v (callback called: %v), want %v", err, called, c.want)
			}
		})
	}
}

// What compaction leaves (gaps in offset deltas, control batches, fewer
// records than the offset span) is valid in a log and refused from a client.
func TestReplicationOrigin(t *testing.T) {
	repl := Limits{Origin: AppendOriginReplication}
	gaps := batchWith(Header{BaseOffset: 100, RecordCount: 3, LastOffsetDelta: 9, ProducerID: -1, BaseSequence: -1}, recordsWithDeltas(t, 0, 4, 9))
	got, err := collect(t, gaps, repl)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Offset != 100 || got[1].Offset != 104 || got[2].Offset != 109 {
		t.Fatalf("offsets %v", got)
	}
	if _, err := Validate(gaps, Limits{}); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("client: %v", err)
	}
	control := batchWith(Header{RecordCount: 1, Attributes: controlFlagMask | transactionalFlagMask, ProducerID: 5, BaseSequence: -1}, recordsWithDeltas(t, 0))
	if _, err := Validate(control, repl); err != nil {
		t.Fatalf("control batch in a log: %v", err)
	}
}

func TestTimestampWindow(t *testing.T) {
	recs := []Record{{Timestamp: 1000}, {Timestamp: NoTimestamp}, {Timestamp: 3000}}
	b := buildBatch(t, codecCases[1], recs, nil)
	for _, c := range []struct {
		lo, hi int64
		ok     bool
	}{
		{1000, 3000, true}, // NoTimestamp is exempt
		{1001, 3000, false},
		{1000, 2999, false},
	} {
		_, err := Validate(b, Limits{CheckTimestamps: true, MinTimestampMs: c.lo, MaxTimestampMs: c.hi})
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInvalidTimestamp)) {
			t.Errorf("window [%d, %d]: %v", c.lo, c.hi, err)
		}
	}
	// LogAppendTime batches from a log are not checked against the window.
	if err := SetLogAppendTime(b, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := Validate(b, Limits{Origin: AppendOriginReplication, CheckTimestamps: true, MinTimestampMs: 1000, MaxTimestampMs: 3000}); err != nil {
		t.Fatal(err)
	}
}

// Every compressed codec cut at several points must fail as corrupt (or,
// for a cut that leaves a shorter valid stream, as an invalid record), never
// pass and never panic.
func TestTruncatedCompressedSection(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	for _, c := range compressedCases {
		t.Run(c.name, func(t *testing.T) {
			b := buildBatch(t, c, sampleRecords(rng, 200), nil)
			section := b[RecordsOffset:]
			for _, cut := range []int{1, 2, 7, 16, len(section) / 2, len(section) - 4, len(section) - 1} {
				if cut <= 0 || cut >= len(section) {
					continue
				}
				bad := rebuild(t, b, section[:cut])
				_, err := Validate(bad, Limits{})
				if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrInvalidRecord) {
					t.Fatalf("cut at %d of %d: %v", cut, len(section), err)
				}
			}
		})
	}
}
