package producer

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wren-broker/wren/engine/batch"
)

// The golden partition in testdata/kafka4 was written by Apache
// Kafka 4.1.1: five idempotent producers (ids 0-4, epoch 0) and one plain
// one, with a producer snapshot at every segment roll and at shutdown.
var goldenDir = filepath.Join("..", "..", "testdata", "kafka4")

type goldenBatch struct {
	BaseOffset    int64 `json:"base_offset"`
	LastOffset    int64 `json:"last_offset"`
	Count         int32 `json:"count"`
	BaseSequence  int32 `json:"base_sequence"`
	LastSequence  int32 `json:"last_sequence"`
	ProducerID    int64 `json:"producer_id"`
	ProducerEpoch int16 `json:"producer_epoch"`
	Transactional bool  `json:"is_transactional"`
	Control       bool  `json:"is_control"`
	MaxTimestamp  int64 `json:"max_timestamp"`
}

// goldenLog returns the golden partition's batch headers, as a replay of
// its segments would see them, from manifest.json.
func goldenLog(t *testing.T) []batch.Header {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(goldenDir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Batches []goldenBatch `json:"batches"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	var log []batch.Header
	for _, b := range m.Batches {
		if b.Transactional || b.Control {
			t.Fatalf("golden batch at %d is transactional or control; the test expects neither", b.BaseOffset)
		}
		h := header(b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.Count, b.BaseOffset, b.MaxTimestamp)
		h.LastOffsetDelta = int32(b.LastOffset - b.BaseOffset)
		if h.LastSequence() != b.LastSequence {
			t.Fatalf("batch %d: last sequence %d, manifest says %d", b.BaseOffset, h.LastSequence(), b.LastSequence)
		}
		log = append(log, h)
	}
	if len(log) != 95 {
		t.Fatalf("%d batches in the manifest, the README says 95", len(log))
	}
	return log
}

type goldenSnapshot struct {
	offset int64
	data   []byte
}

func goldenSnapshots(t *testing.T) []goldenSnapshot {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(goldenDir, "golden-0", "*.snapshot"))
	if err != nil || len(paths) != 12 {
		t.Fatalf("%d golden snapshots (%v), want 12", len(paths), err)
	}
	var out []goldenSnapshot
	for _, p := range paths {
		off, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(p), ".snapshot"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, goldenSnapshot{off, data})
	}
	slices.SortFunc(out, func(a, b goldenSnapshot) int { return int(a.offset - b.offset) })
	return out
}

// TestGoldenSnapshots: each Kafka snapshot decodes to the state a replay
// of every batch below its offset builds, and encoding that replayed state
// gives Kafka's bytes exactly. Then the recovery path: the previous
// snapshot plus a replay of the batches between rebuilds the next one.
func TestGoldenSnapshots(t *testing.T) {
	log := goldenLog(t)
	snaps := goldenSnapshots(t)
	var prev *goldenSnapshot
	for i := range snaps {
		snap := &snaps[i]
		t.Run(fmt.Sprintf("%020d", snap.offset), func(t *testing.T) {
			var below []batch.Header
			for _, h := range log {
				if h.BaseOffset < snap.offset {
					below = append(below, h)
				}
			}
			replayed := replay(Options{}, below)
			if replayed.MapEndOffset() != snap.offset {
				t.Fatalf("replay ends at %d, the snapshot is named %d", replayed.MapEndOffset(), snap.offset)
			}
			decoded, err := DecodeSnapshot(snap.data, snap.offset, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := describeLast(decoded), describeLast(replayed); got != want {
				t.Fatalf("decoded Kafka's snapshot as\n%swant (replay of the log)\n%s", got, want)
			}
			if enc := replayed.AppendSnapshot(nil); !bytes.Equal(enc, snap.data) {
				t.Fatalf("encoding of the replayed state differs from Kafka's:\n got %x\nwant %x", enc, snap.data)
			}
			if enc := decoded.AppendSnapshot(nil); !bytes.Equal(enc, snap.data) {
				t.Fatalf("re-encoding Kafka's snapshot changed it:\n got %x\nwant %x", enc, snap.data)
			}
			if prev != nil {
				s, err := DecodeSnapshot(prev.data, prev.offset, Options{})
				if err != nil {
					t.Fatal(err)
				}
				for _, h := range below {
					if h.BaseOffset >= prev.offset {
						s.Apply(h)
					}
				}
				if enc := s.AppendSnapshot(nil); !bytes.Equal(enc, snap.data) {
					t.Fatalf("snapshot %d + replay differs from Kafka's snapshot %d:\n got %x\nwant %x",
						prev.offset, snap.offset, enc, snap.data)
				}
			}
		})
		prev = snap
	}
	// Spot check against the hex dump: at 69 Kafka knew producer 0 up to
	// its batch 49-68 (sequences 49-68).
	s, _ := DecodeSnapshot(snaps[0].data, snaps[0].offset, Options{})
	e, ok := s.LastEntry(0)
	last, _ := e.LastBatch()
	if snaps[0].offset != 69 || !ok || s.Len() != 1 || last.LastOffset != 68 || last.OffsetDelta != 19 ||
		last.LastSequence != 68 || last.FirstSequence() != 49 || e.LastTimestamp != 1795944760140 {
		t.Fatalf("snapshot 69: %s", describeLast(s))
	}
}

// TestGoldenDuplicateAfterLoad: a leader that loads Kafka's last snapshot
// answers a retry of each producer's last batch with its original offsets,
// and accepts the next sequence.
func TestGoldenDuplicateAfterLoad(t *testing.T) {
	log := goldenLog(t)
	snaps := goldenSnapshots(t)
	end := snaps[len(snaps)-1]
	s, err := DecodeSnapshot(end.data, end.offset, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 5 {
		t.Fatalf("%d producers at the log end, want 5", s.Len())
	}
	lastOf := map[int64]batch.Header{}
	for _, h := range log {
		if h.HasProducerID() {
			lastOf[h.ProducerID] = h
		}
	}
	for pid, h := range lastOf {
		retry := header(pid, h.ProducerEpoch, h.BaseSequence, h.LastOffsetDelta+1, end.offset, 0)
		info, err := s.Check(retry)
		if err != nil || !info.Duplicate || info.Original.FirstOffset() != h.BaseOffset || info.Original.LastOffset != h.LastOffset() {
			t.Fatalf("producer %d retry: %+v %v, want the original %d-%d", pid, info, err, h.BaseOffset, h.LastOffset())
		}
		next := header(pid, h.ProducerEpoch, h.LastSequence()+1, 1, end.offset, 0)
		if info, err := s.Check(next); err != nil || info.Duplicate {
			t.Fatalf("producer %d next batch: %+v %v", pid, info, err)
		}
	}
}

// randomState builds a state with n producers by applying random batches,
// some spanning the sequence wrap, some transactional, some markers.
func randomState(rng *rand.Rand, n int) *State {
	s := New(Options{})
	var off int64
	for pid := int64(0); pid < int64(n); pid++ {
		seq := rng.Int32N(1<<31 - 1)
		for range 1 + rng.IntN(7) {
			cnt := 1 + rng.Int32N(10)
			h := header(pid*7919, int16(rng.IntN(3)), seq, cnt, off, rng.Int64N(1<<41))
			switch rng.IntN(8) {
			case 0:
				h.Attributes = 0x10
				s.Apply(h)
			case 1:
				h.Attributes = 0x30
				s.ApplyControl(h, &batch.EndTxnMarker{Commit: rng.IntN(2) == 0, CoordinatorEpoch: rng.Int32N(5)})
			default:
				s.Apply(h)
			}
			seq = batch.IncrementSequence(seq, cnt)
			off = h.NextOffset() + rng.Int64N(3)
		}
	}
	return s
}

func TestSnapshotRoundTrip(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, n := range []int{0, 1, 2, 17, 300} {
		s := randomState(rng, n)
		enc := s.AppendSnapshot([]byte("prefix"))
		if !bytes.HasPrefix(enc, []byte("prefix")) || len(enc) != 6+SnapshotSize(n) {
			t.Fatalf("n=%d: %d bytes, want prefix + %d", n, len(enc), SnapshotSize(n))
		}
		enc = enc[6:]
		d, err := DecodeSnapshot(enc, s.MapEndOffset(), Options{})
		if err != nil {
			t.Fatalf("seed %d n=%d: %v", seed, n, err)
		}
		if got, want := describeLast(d), describeLast(s); got != want {
			t.Fatalf("seed %d n=%d: decoded\n%swant\n%s", seed, n, got, want)
		}
		if again := d.AppendSnapshot(nil); !bytes.Equal(again, enc) {
			t.Fatalf("seed %d n=%d: re-encoding differs", seed, n)
		}
	}
}

// reCRC recomputes a snapshot's CRC after a test edits its body.
func reCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[6:], castagnoli))
	return b
}

func TestDecodeSnapshotRejects(t *testing.T) {
	snaps := goldenSnapshots(t)
	good := snaps[len(snaps)-1].data // five entries
	edit := func(f func(b []byte)) []byte {
		b := slices.Clone(good)
		f(b)
		return reCRC(b)
	}
	entry := func(i int) int { return snapshotHeaderSize + i*snapshotEntrySize }
	cases := []struct {
		name string
		b    []byte
		opts Options
		want error
	}{
		{"empty", nil, Options{}, ErrCorruptSnapshot},
		{"header only, short", good[:9], Options{}, ErrCorruptSnapshot},
		{"version 0", edit(func(b []byte) { b[1] = 0 }), Options{}, ErrCorruptSnapshot},
		{"version 2", edit(func(b []byte) { b[1] = 2 }), Options{}, ErrCorruptSnapshot},
		{"CRC", func() []byte { b := slices.Clone(good); b[3] ^= 1; return b }(), Options{}, ErrCorruptSnapshot},
		{"count one too many", edit(func(b []byte) { b[9]++ }), Options{}, ErrCorruptSnapshot},
		{"count negative", edit(func(b []byte) { binary.BigEndian.PutUint32(b[6:], 0x80000000) }), Options{}, ErrCorruptSnapshot},
		{"count huge", edit(func(b []byte) { binary.BigEndian.PutUint32(b[6:], 0x7fffffff) }), Options{}, ErrCorruptSnapshot},
		{"trailing byte", reCRC(append(slices.Clone(good), 0)), Options{}, ErrCorruptSnapshot},
		{"entry cut short", reCRC(slices.Clone(good[:len(good)-1])), Options{}, ErrCorruptSnapshot},
		{"negative producer id", edit(func(b []byte) { b[entry(1)] = 0xff }), Options{}, ErrCorruptSnapshot},
		{"negative offset delta", edit(func(b []byte) { b[entry(2)+22] = 0xff }), Options{}, ErrCorruptSnapshot},
		{"offset delta past offset 0", edit(func(b []byte) { binary.BigEndian.PutUint32(b[entry(0)+22:], 1<<30) }), Options{}, ErrCorruptSnapshot},
		{"negative sequence with a batch", edit(func(b []byte) { b[entry(3)+10] = 0xff }), Options{}, ErrCorruptSnapshot},
		{"more producers than the cap", slices.Clone(good), Options{MaxProducers: 4}, ErrSnapshotTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := DecodeSnapshot(c.b, 1040, c.opts)
			if !errors.Is(err, c.want) || s != nil {
				t.Fatalf("got %v, %v; want %v", s, err, c.want)
			}
		})
	}
	if _, err := DecodeSnapshot(good, -1, Options{}); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("negative offset: %v", err)
	}
	if _, err := DecodeSnapshot(good, 1040, Options{MaxProducers: 5}); err != nil {
		t.Fatalf("exactly at the cap: %v", err)
	}

	// Every single-bit flip and every truncation is caught.
	for i := range good {
		for bit := range 8 {
			b := slices.Clone(good)
			b[i] ^= 1 << bit
			if _, err := DecodeSnapshot(b, 1040, Options{}); !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("flip of byte %d bit %d: %v", i, bit, err)
			}
		}
	}
	for n := range len(good) {
		if _, err := DecodeSnapshot(good[:n], 1040, Options{}); !errors.Is(err, ErrCorruptSnapshot) {
			t.Fatalf("first %d bytes: %v", n, err)
		}
	}
}

// TestDecodeSnapshotAllocations: a header claiming many entries allocates
// nothing before it is refused, and a good snapshot allocates in
// proportion to its entries.
func TestDecodeSnapshotAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what allocations cost")
	}
	lie := reCRC(binary.BigEndian.AppendUint32([]byte{0, 1, 0, 0, 0, 0}, 1<<30))
	if n := testing.AllocsPerRun(20, func() { DecodeSnapshot(lie, 0, Options{}) }); n > 3 {
		t.Fatalf("a lying count cost %v allocations", n)
	}
	big := randomState(rand.New(rand.NewPCG(1, 2)), 1000).AppendSnapshot(nil)
	n := testing.AllocsPerRun(5, func() {
		if _, err := DecodeSnapshot(big, 0, Options{}); err != nil {
			t.Fatal(err)
		}
	})
	if n > 1100 {
		t.Fatalf("decoding 1000 entries took %v allocations", n)
	}
}
