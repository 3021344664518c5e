package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	randv2 "math/rand/v2"
	"testing"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// damageFixture is a data directory with one partition of acknowledged
// batches spread over several segments.
type damageFixture struct {
	fsys    *vfs.MemFS
	cfg     ManagerConfig
	tp      TopicPartition
	batches []modelBatch
	// positions of each batch: segment base and byte position in it.
	segOf []int64
	posOf []int64
}

func newDamageFixture(t *testing.T, batches int, crash bool) *damageFixture {
	t.Helper()
	opts := testOptions(nil)
	opts.SegmentBytes = 4096
	opts.IndexIntervalBytes = 512
	f := &damageFixture{fsys: vfs.NewMem(), cfg: ManagerConfig{ClusterID: "damage", NodeID: 1, Defaults: opts}, tp: TopicPartition{"t", 0}}
	m, err := OpenManager(f.fsys, "/data", f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.GetOrCreateLog(f.tp)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < batches; i++ {
		b := makeBatch(t, batch.CompressionNone, i, 1+i%4, 200, int64(1000+i))
		info, err := l.Append(b, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.batches = append(f.batches, modelBatch{base: info.FirstOffset, last: info.LastOffset, bytes: append([]byte(nil), b...), acked: true})
	}
	// Where each batch landed.
	for _, s := range l.Segments() {
		var pos int64
		seg := l.segments[l.segmentFor(s.BaseOffset)]
		hdr := make([]byte, batch.RecordBatchOverhead)
		for pos < s.Size {
			h, err := seg.readHeader(pos, hdr)
			if err != nil {
				t.Fatal(err)
			}
			f.segOf = append(f.segOf, s.BaseOffset)
			f.posOf = append(f.posOf, pos)
			pos += int64(h.Size())
		}
	}
	if len(f.segOf) != len(f.batches) || len(l.Segments()) < 4 {
		t.Fatalf("fixture: %d batches located, %d written, %d segments", len(f.segOf), len(f.batches), len(l.Segments()))
	}
	f.fsys = f.stop(t, m, crash)
	return f
}

// stop closes m cleanly, or crashes the file system (every append was
// acknowledged after an fdatasync, so a crash loses nothing but leaves
// the recovery-point checkpoint behind).
func (f *damageFixture) stop(t *testing.T, m *Manager, crash bool) *vfs.MemFS {
	t.Helper()
	if crash {
		return f.fsys.Crash(vfs.CrashOptions{})
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	return f.fsys
}

// flip flips one bit of the file at path.
func flip(t *testing.T, fsys vfs.FS, path string, at int64) {
	t.Helper()
	fh, err := fsys.OpenReadWrite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	b := make([]byte, 1)
	if _, err := fh.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x20
	if _, err := fh.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
	if err := fh.SyncData(); err != nil {
		t.Fatal(err)
	}
}

// Byte positions inside a batch, one per class the format has.
var flipClasses = map[string]func(size int64) int64{
	// The base offset's top byte, outside the CRC: a batch whose CRC
	// holds, with offsets no segment of this log can hold.
	"base-offset": func(int64) int64 { return 0 },
	// batchLength, outside the CRC: misframes the batch.
	"length-field": func(int64) int64 { return 11 },
	// The stored CRC itself.
	"crc-field": func(int64) int64 { return 18 },
	// Inside the CRC-covered header: firstTimestamp.
	"batch-header": func(int64) int64 { return 40 },
	// A record's value.
	"record-body": func(size int64) int64 { return size - 20 },
}

// checkDamaged: the damaged batch is refused, every other acknowledged
// batch reads back byte for byte at its offset, appends are refused, and
// the log end offset is not below any acknowledged offset (no offset can
// be reused).
func checkDamaged(t *testing.T, l *Log, f *damageFixture, bad int) {
	t.Helper()
	damage := l.Damage()
	if len(damage) == 0 {
		t.Fatalf("no damage found")
	}
	b := f.batches[bad]
	if damage[0].FirstOffset > b.base || damage[0].Segment != f.segOf[bad] || damage[0].Position != f.posOf[bad] {
		t.Fatalf("damage %v does not start at batch %d (offset %d, segment %d, position %d)", damage[0], bad, b.base, f.segOf[bad], f.posOf[bad])
	}
	for i, mb := range f.batches {
		got, err := l.ReadBatches(mb.base, 1<<20, l.LogEndOffset())
		if i == bad {
			if !errors.Is(err, ErrPartitionDamaged) {
				t.Fatalf("read of the damaged batch at %d: %v", mb.base, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("read of acknowledged batch %d at %d: %v", i, mb.base, err)
		}
		if len(got) < len(mb.bytes) || !bytes.Equal(got[:len(mb.bytes)], withOffset(mb.bytes, mb.base, 0)) {
			t.Fatalf("acknowledged batch %d at %d reads back different bytes", i, mb.base)
		}
	}
	if _, err := l.Append(makeBatch(t, batch.CompressionNone, 99, 1, 10, 5000), 0); !errors.Is(err, ErrPartitionDamaged) {
		t.Fatalf("append to a damaged log: %v", err)
	}
	if last := f.batches[len(f.batches)-1].last; l.LogEndOffset() <= last && damage[len(damage)-1].LastOffset < last {
		t.Fatalf("log end offset %d, damage %v: offset %d could be reused", l.LogEndOffset(), damage, last)
	}
}

// TestRecoveryKeepsDamage flips one bit in every position class of a
// batch in a closed segment, a middle one and the active one, after a
// clean stop and after a crash, and checks recovery neither truncates nor
// deletes anything: the partition goes offline for that batch only.
func TestRecoveryKeepsDamage(t *testing.T) {
	for _, where := range []string{"first-segment", "middle-segment", "active-segment", "active-last-batch"} {
		for class, at := range flipClasses {
			for _, crash := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s/crash=%v", where, class, crash)
				t.Run(name, func(t *testing.T) {
					// crash: the files are whole (every append waited for
					// its fdatasync) but the recovery-point checkpoint is
					// the one written before the appends.
					f := newDamageFixture(t, 60, crash)
					bad := pickBatch(f, where)
					path := segmentFileName("/data/t-0", f.segOf[bad], logSuffix)
					size := int64(len(f.batches[bad].bytes))
					flip(t, f.fsys, path, f.posOf[bad]+at(size))
					m, err := OpenManager(f.fsys, "/data", f.cfg)
					if err != nil {
						t.Fatal(err)
					}
					defer m.Close()
					l := m.Log(f.tp)
					if crash && where == "active-last-batch" {
						// Known limit: bad bytes at the very end of the log,
						// above a checkpoint that a crash left behind, look
						// exactly like a torn tail and are cut.
						if d := l.Damage(); len(d) != 0 || l.LogEndOffset() != f.batches[bad].base {
							t.Fatalf("damage %v, log end offset %d; want the last batch cut at %d", d, l.LogEndOffset(), f.batches[bad].base)
						}
						return
					}
					// After a clean stop recovery trusts the synced
					// segments; the scrubber finds the damage there.
					if len(l.Damage()) == 0 && !crash {
						if _, err := m.Scrub(context.Background(), ScrubConfig{}); err != nil {
							t.Fatal(err)
						}
					}
					checkDamaged(t, l, f, bad)
					// The damage stays on disk, listed, across a restart.
					f.fsys = f.stop(t, m, false)
					m2, err := OpenManager(f.fsys, "/data", f.cfg)
					if err != nil {
						t.Fatal(err)
					}
					defer m2.Close()
					checkDamaged(t, m2.Log(f.tp), f, bad)
				})
			}
		}
	}
}

func pickBatch(f *damageFixture, where string) int {
	segs := []int64{}
	for i, s := range f.segOf {
		if i == 0 || s != f.segOf[i-1] {
			segs = append(segs, s)
		}
	}
	in := func(seg int64) []int {
		var out []int
		for i, s := range f.segOf {
			if s == seg {
				out = append(out, i)
			}
		}
		return out
	}
	switch where {
	case "first-segment":
		b := in(segs[0])
		return b[len(b)/2]
	case "middle-segment":
		b := in(segs[len(segs)/2])
		return b[len(b)/2]
	case "active-segment":
		b := in(segs[len(segs)-1])
		return b[0]
	}
	return len(f.batches) - 1
}

// TestTornTailStillCut: bytes never synced at the end of the active
// segment are cut as before, whatever they hold.
func TestTornTailStillCut(t *testing.T) {
	f := newDamageFixture(t, 30, false)
	m, err := OpenManager(f.fsys, "/data", f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	l := m.Log(f.tp)
	// An unsynced append: under flush policy interval nothing waits.
	opts := l.Options()
	opts.FlushPolicy = FlushInterval
	if err := l.UpdateOptions(opts); err != nil {
		t.Fatal(err)
	}
	leo := l.LogEndOffset()
	if _, err := l.Append(makeBatch(t, batch.CompressionNone, 77, 3, 300, 9000), 0); err != nil {
		t.Fatal(err)
	}
	after := f.fsys.Crash(vfs.CrashOptions{Rand: randv2.New(randv2.NewPCG(1, 2)), KeepUnsynced: true, TearLastWrite: true})
	m2, err := OpenManager(after, "/data", f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	l2 := m2.Log(f.tp)
	if d := l2.Damage(); len(d) != 0 {
		t.Fatalf("a torn tail taken for damage: %v", d)
	}
	if l2.LogEndOffset() != leo && l2.LogEndOffset() != leo+3 {
		t.Fatalf("log end offset %d, want %d (cut) or %d (kept whole)", l2.LogEndOffset(), leo, leo+3)
	}
	if _, err := l2.Append(makeBatch(t, batch.CompressionNone, 78, 1, 10, 9001), 0); err != nil {
		t.Fatalf("append after a torn tail: %v", err)
	}
}

// TestScrubberFindsDamage: damage below the recovery point after a clean
// stop is not scanned at start; the scrubber finds it, the partition goes
// offline for it, and a restart finds it again from the listing.
func TestScrubberFindsDamage(t *testing.T) {
	for class, at := range flipClasses {
		t.Run(class, func(t *testing.T) {
			f := newDamageFixture(t, 60, false)
			bad := pickBatch(f, "middle-segment")
			path := segmentFileName("/data/t-0", f.segOf[bad], logSuffix)
			flip(t, f.fsys, path, f.posOf[bad]+at(int64(len(f.batches[bad].bytes))))
			m, err := OpenManager(f.fsys, "/data", f.cfg)
			if err != nil {
				t.Fatal(err)
			}
			l := m.Log(f.tp)
			if d := l.Damage(); len(d) != 0 {
				t.Fatalf("recovery scanned below the recovery point: %v", d)
			}
			var told []Damage
			st, err := m.Scrub(context.Background(), ScrubConfig{OnDamage: func(d Damage) { told = append(told, d) }})
			if err != nil {
				t.Fatal(err)
			}
			if st.DamageFound != 1 || len(told) != 1 {
				t.Fatalf("scrub found %d (told %v), want 1", st.DamageFound, told)
			}
			checkDamaged(t, l, f, bad)
			// A second pass finds nothing new.
			if st, err := m.Scrub(context.Background(), ScrubConfig{}); err != nil || st.DamageFound != 0 {
				t.Fatalf("second pass: %+v, %v", st, err)
			}
			f.fsys = f.stop(t, m, false)
			m2, err := OpenManager(f.fsys, "/data", f.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer m2.Close()
			checkDamaged(t, m2.Log(f.tp), f, bad)
		})
	}
}

// TestScrubberBatchBelowSegmentBase: the first batch of a segment names an
// offset below the segment's base (the base offset is outside the CRC, so
// the CRC still holds). The scrubber takes it for damage; it once indexed
// an empty list there and panicked.
func TestScrubberBatchBelowSegmentBase(t *testing.T) {
	f := newDamageFixture(t, 60, false)
	bad := -1
	for i, seg := range f.segOf {
		if seg > 0 && f.posOf[i] == 0 && seg != f.segOf[len(f.segOf)-1] {
			bad = i
			break
		}
	}
	if bad < 0 {
		t.Fatal("fixture: no closed segment after the first")
	}
	fh, err := f.fsys.OpenReadWrite(segmentFileName("/data/t-0", f.segOf[bad], logSuffix))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt(make([]byte, 8), 0); err != nil { // base offset 0
		t.Fatal(err)
	}
	if err := errors.Join(fh.SyncData(), fh.Close()); err != nil {
		t.Fatal(err)
	}
	m, err := OpenManager(f.fsys, "/data", f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l := m.Log(f.tp)
	if len(l.Damage()) == 0 {
		st, err := m.Scrub(context.Background(), ScrubConfig{})
		if err != nil || st.DamageFound != 1 {
			t.Fatalf("scrub: %+v, %v; want one damaged range", st, err)
		}
	}
	checkDamaged(t, l, f, bad)
}

// TestScrubberRebuildsBadIndex: an offset index entry that names no batch
// is rebuilt in place; reads keep working and nothing goes offline.
func TestScrubberRebuildsBadIndex(t *testing.T) {
	f := newDamageFixture(t, 60, false)
	seg := f.segOf[pickBatch(f, "middle-segment")]
	idx := segmentFileName("/data/t-0", seg, indexSuffix)
	// The first entry's position, moved off its batch.
	flip(t, f.fsys, idx, 7)
	m, err := OpenManager(f.fsys, "/data", f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var rebuilt []int64
	st, err := m.Scrub(context.Background(), ScrubConfig{OnIndexRebuilt: func(_ TopicPartition, s int64, _ error) { rebuilt = append(rebuilt, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if st.IndexesRebuilt != 1 || len(rebuilt) != 1 || rebuilt[0] != seg || st.DamageFound != 0 {
		t.Fatalf("scrub: %+v, rebuilt %v, want segment %d", st, rebuilt, seg)
	}
	l := m.Log(f.tp)
	checkIndexesAgree(t, l)
	for i, mb := range f.batches {
		got, err := l.ReadBatches(mb.base, 1<<20, l.LogEndOffset())
		if err != nil || !bytes.Equal(got[:len(mb.bytes)], withOffset(mb.bytes, mb.base, 0)) {
			t.Fatalf("batch %d at %d after the rebuild: %v", i, mb.base, err)
		}
	}
	// The index file holds only whole, checked entries again.
	data, err := vfs.ReadFile(f.fsys, idx)
	if err != nil || len(data)%8 != 0 || binary.BigEndian.Uint32(data[4:]) == 0 {
		t.Fatalf("rebuilt index: %d bytes, %v", len(data), err)
	}
}

// capture is a slog handler that keeps records.
type capture struct{ recs *[]slog.Record }

func (c capture) Enabled(context.Context, slog.Level) bool { return true }
func (c capture) Handle(_ context.Context, r slog.Record) error {
	*c.recs = append(*c.recs, r)
	return nil
}
func (c capture) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c capture) WithGroup(string) slog.Handler      { return c }

func attrsOf(r slog.Record) map[string]string {
	out := map[string]string{}
	r.Attrs(func(a slog.Attr) bool { out[a.Key] = a.Value.String(); return true })
	return out
}

// TestRecoveryIsLogged: every recovery action is logged with its figures;
// damage at ERROR naming the file, position and offsets, a torn tail at
// WARN with the bytes cut, rebuilt indexes at INFO; a clean start says
// nothing per partition.
func TestRecoveryIsLogged(t *testing.T) {
	open := func(f *damageFixture) []slog.Record {
		var recs []slog.Record
		cfg := f.cfg
		cfg.Logger = slog.New(capture{&recs})
		m, err := OpenManager(f.fsys, "/data", cfg)
		if err != nil {
			t.Fatal(err)
		}
		f.fsys = f.stop(t, m, false)
		return recs
	}
	f := newDamageFixture(t, 40, false)
	if recs := open(f); len(recs) != 0 {
		t.Fatalf("a clean start logged %d records: %v", len(recs), recs[0].Message)
	}

	// Rebuilt indexes after a crash.
	f = newDamageFixture(t, 40, true)
	recs := open(f)
	if len(recs) != 1 || recs[0].Level != slog.LevelInfo || attrsOf(recs[0])["indexes_rebuilt"] == "0" || attrsOf(recs[0])["took"] == "" {
		t.Fatalf("after a crash: %v", recs)
	}

	// Damage.
	f = newDamageFixture(t, 40, true)
	bad := pickBatch(f, "middle-segment")
	flip(t, f.fsys, segmentFileName("/data/t-0", f.segOf[bad], logSuffix), f.posOf[bad]+40)
	recs = open(f)
	var sawError bool
	for _, r := range recs {
		a := attrsOf(r)
		if r.Level == slog.LevelError {
			sawError = true
			if a["position"] != fmt.Sprint(f.posOf[bad]) || a["first_offset"] != fmt.Sprint(f.batches[bad].base) || a["file"] == "" || a["repair"] == "" {
				t.Fatalf("damage logged as %s %v", r.Message, a)
			}
		}
	}
	if !sawError {
		t.Fatalf("damage not logged at ERROR: %d records", len(recs))
	}
}

// TestRetentionIsLogged: each partition's retention deletions are logged
// at INFO with the segments, bytes and the new log start offset.
func TestRetentionIsLogged(t *testing.T) {
	var recs []slog.Record
	opts := testOptions(nil)
	opts.SegmentBytes = 4096
	cfg := ManagerConfig{ClusterID: "ret", NodeID: 1, Defaults: opts, Logger: slog.New(capture{&recs})}
	m, err := OpenManager(vfs.NewMem(), "/data", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.GetOrCreateLog(TopicPartition{"t", 0})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		if _, err := l.Append(makeBatch(t, batch.CompressionNone, i, 1, 300, int64(1000+i)), 0); err != nil {
			t.Fatal(err)
		}
	}
	o := l.Options()
	o.RetentionBytes = 4096
	if err := l.UpdateOptions(o); err != nil {
		t.Fatal(err)
	}
	n, err := m.RunRetention(func(l *Log) int64 { return l.LogEndOffset() })
	if err != nil || n == 0 {
		t.Fatalf("retention deleted %d segments: %v", n, err)
	}
	var got map[string]string
	for _, r := range recs {
		if r.Message == "retention deleted segments" && r.Level == slog.LevelInfo {
			got = attrsOf(r)
		}
	}
	if got == nil || got["partition"] != "t-0" || got["segments"] != fmt.Sprint(n) || got["bytes"] == "0" || got["log_start_offset"] != fmt.Sprint(l.LogStartOffset()) {
		t.Fatalf("retention logged %v", got)
	}
}
