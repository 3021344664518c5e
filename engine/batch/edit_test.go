package batch

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

func TestSetBaseOffsetAndEpoch(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 31))
	for _, c := range codecCases {
		t.Run(c.name, func(t *testing.T) {
			b := buildBatch(t, c, sampleRecords(rng, 5), nil)
			records := append([]byte{}, b[CRCOffset:]...)
			SetBaseOffset(b, 1<<33)
			SetPartitionLeaderEpoch(b, 12)
			if !bytes.Equal(b[CRCOffset:], records) {
				t.Fatal("edits touched the CRC or the bytes it covers")
			}
			h, err := Validate(b, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if h.BaseOffset != 1<<33 || h.PartitionLeaderEpoch != 12 || h.LastOffset() != 1<<33+4 {
				t.Fatalf("header %+v", h)
			}
			got, err := collect(t, b, Limits{})
			if err != nil || got[0].Offset != 1<<33 || got[4].Offset != 1<<33+4 {
				t.Fatalf("records %v, %v", got, err)
			}
		})
	}
}

func TestSetLogAppendTime(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 32))
	repl := Limits{Origin: AppendOriginReplication}
	for _, c := range codecCases {
		t.Run(c.name, func(t *testing.T) {
			b := buildBatch(t, c, sampleRecords(rng, 5), nil)
			section := append([]byte{}, b[RecordsOffset:]...)
			const now = 1_750_000_000_123
			if err := SetLogAppendTime(b, now); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b[RecordsOffset:], section) {
				t.Fatal("records changed")
			}
			h, err := Validate(b, repl)
			if err != nil {
				t.Fatalf("after SetLogAppendTime: %v", err)
			}
			if h.TimestampType() != LogAppendTime || h.MaxTimestamp != now || h.CompressionType() != c.ct {
				t.Fatalf("header %+v", h)
			}
			got, err := collect(t, b, repl)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range got {
				if r.Timestamp != now {
					t.Fatalf("record %d timestamp %d, want the append time", i, r.Timestamp)
				}
			}
			// A producer may not send it.
			if _, err := Validate(b, Limits{}); !errors.Is(err, ErrInvalidTimestamp) {
				t.Fatalf("client origin: %v", err)
			}
			// Back to CreateTime: the record timestamps come back.
			if err := SetMaxTimestamp(b, CreateTime, 5); err != nil {
				t.Fatal(err)
			}
			if h, err := Validate(b, Limits{}); err != nil || h.MaxTimestamp != 5 || h.TimestampType() != CreateTime {
				t.Fatalf("%+v, %v", h, err)
			}
		})
	}
}

func TestSetMaxTimestampRefusesCorrupt(t *testing.T) {
	b := buildBatch(t, codecCases[0], sampleRecords(rand.New(rand.NewPCG(33, 33)), 3), nil)
	b[len(b)-1] ^= 1
	before := append([]byte{}, b...)
	if err := SetLogAppendTime(b, 99); !errors.Is(err, ErrCRC) {
		t.Fatalf("corrupt batch: %v", err)
	}
	if !bytes.Equal(b, before) {
		t.Fatal("corrupt batch was modified")
	}
	if err := SetLogAppendTime(b[:len(b)-1], 99); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated batch: %v", err)
	}
}

// Setting what is already there writes nothing, as in Kafka.
func TestSetMaxTimestampNoChange(t *testing.T) {
	b := buildBatch(t, codecCases[0], sampleRecords(rand.New(rand.NewPCG(34, 34)), 3), nil)
	h, _ := ParseHeader(b)
	b[len(b)-1] ^= 1 // a CRC that no longer holds is still checked first
	if err := SetMaxTimestamp(b, CreateTime, h.MaxTimestamp); !errors.Is(err, ErrCRC) {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 1
	before := append([]byte{}, b...)
	if err := SetMaxTimestamp(b, CreateTime, h.MaxTimestamp); err != nil || !bytes.Equal(b, before) {
		t.Fatalf("no-op rewrote bytes: %v", err)
	}
}

func TestEditsPanicOnShortInput(t *testing.T) {
	for name, f := range map[string]func(){
		"SetBaseOffset":           func() { SetBaseOffset(make([]byte, 60), 1) },
		"SetPartitionLeaderEpoch": func() { SetPartitionLeaderEpoch(make([]byte, 10), 1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s on a short buffer did not panic", name)
				}
			}()
			f()
		}()
	}
}
