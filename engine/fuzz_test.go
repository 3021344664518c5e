package engine

import (
	"errors"
	"math"
	"testing"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// FuzzRecover opens a partition whose segment file (and offset index) hold
// arbitrary bytes. Open must never panic; after a full recovery (no
// recovery point) the log serves only whole batches whose CRC holds, its
// indexes agree with it, and it takes appends.
func FuzzRecover(f *testing.F) {
	var valid []byte
	for i := 0; i < 4; i++ {
		b := makeBatch(f, batch.CompressionType(i), i, 3, 40, 1000)
		valid = append(valid, withOffset(b, int64(3*i), 0)...)
	}
	f.Add(valid, []byte(nil), int64(0))
	f.Add(valid[:len(valid)-7], []byte(nil), int64(0))
	flipped := append([]byte(nil), valid...)
	flipped[100] ^= 0x10
	f.Add(flipped, []byte(nil), int64(0))
	f.Add(valid, []byte{0, 0, 0, 3, 0, 0, 0, 0}, int64(12))
	f.Add([]byte{}, []byte{1, 2, 3}, int64(5))
	// A damaged byte, then batches whose CRC holds but whose offsets no
	// segment based at 0 can index (the base offset is outside the CRC).
	far := append([]byte{0}, withOffset(valid[:220], 1<<40, 0)...)
	far = append(far, withOffset(valid[220:358], 1<<40+5, 0)...)
	f.Add(far, []byte(nil), int64(0))
	f.Add(append([]byte{0}, withOffset(valid[:220], math.MaxInt64-1, 0)...), []byte(nil), int64(0))
	// A damaged byte between two batches whose offsets follow on: it held
	// no offset.
	f.Add(append(append(append([]byte(nil), valid[:358]...), 0), valid[358:]...), []byte(nil), int64(0))
	f.Fuzz(func(t *testing.T, logBytes, indexBytes []byte, recoveryPoint int64) {
		fsys := vfs.NewMem()
		dir := "/data/t-0"
		if err := fsys.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		write := func(name string, b []byte) {
			fh, err := fsys.Create(dir + "/" + name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fh.WriteAt(b, 0); err != nil {
				t.Fatal(err)
			}
			fh.Close()
		}
		write("00000000000000000000.log", logBytes)
		if indexBytes != nil {
			write("00000000000000000000.index", indexBytes)
		}
		opts := testOptions(nil)
		l, _, err := Open(fsys, dir, TopicPartition{"t", 0}, opts, OpenOptions{RecoveryPoint: recoveryPoint})
		if err != nil {
			return
		}
		defer l.Close()
		if recoveryPoint != 0 {
			// A recovery point vouches for the segment; only structure is
			// checked then. Reads must not panic.
			for off := l.LogStartOffset(); off < l.LogEndOffset() && off < l.LogStartOffset()+64; off++ {
				if r, err := l.Read(off, 1<<16, l.LogEndOffset(), true); err == nil {
					r.Release()
				}
			}
			return
		}
		// A damaged log serves what lies below its first damage, refuses
		// reads at it and every append.
		end := l.LogEndOffset()
		damage := l.Damage()
		if len(damage) > 0 {
			end = damage[0].FirstOffset
		}
		got := readUpTo(t, l, end)
		for len(got) > 0 {
			n, _, err := batch.Scan(got)
			if err != nil {
				t.Fatalf("recovered log serves a bad batch: %v", err)
			}
			got = got[n:]
		}
		checkIndexesAgree(t, l)
		if len(damage) > 0 {
			r, err := l.Read(end, 1<<16, l.LogEndOffset(), true)
			if damage[0].Offsets() == 0 {
				// Bytes that held no offset: the read passes over them to
				// the batch after them, which starts at end.
				if err != nil {
					t.Fatalf("read past damage that held no offset (%v): %v", damage[0], err)
				}
				b, err := r.Bytes()
				r.Release()
				if err != nil {
					t.Fatal(err)
				}
				if _, h, err := batch.Scan(b); err != nil || h.BaseOffset != end {
					t.Fatalf("read past damage that held no offset (%v): batch %+v, %v", damage[0], h, err)
				}
			} else if !errors.Is(err, ErrPartitionDamaged) {
				t.Fatalf("read at the damage (%v): %v", damage[0], err)
			}
			if _, err := l.Append(makeBatch(t, batch.CompressionNone, 1, 1, 1, 1), 0); !errors.Is(err, ErrPartitionDamaged) {
				t.Fatalf("append to a damaged log: %v", err)
			}
			return
		}
		leo := l.LogEndOffset()
		if _, err := l.Append(makeBatch(t, batch.CompressionNone, 1, 1, 1, 1), 0); err != nil {
			t.Fatalf("append after recovery: %v", err)
		}
		if l.LogEndOffset() != leo+1 {
			t.Fatalf("log end %d after append, want %d", l.LogEndOffset(), leo+1)
		}
	})
}

// FuzzCheckPartition runs the storage check and both repair plans over a
// segment of arbitrary bytes: they read outside bytes and must never
// panic; a plan that executes leaves a log that opens without damage.
func FuzzCheckPartition(f *testing.F) {
	var valid []byte
	for i := 0; i < 4; i++ {
		b := makeBatch(f, batch.CompressionType(i), i, 3, 40, 1000)
		valid = append(valid, withOffset(b, int64(3*i), 0)...)
	}
	f.Add(valid, uint16(0))
	flipped := append([]byte(nil), valid...)
	flipped[100] ^= 0x10
	f.Add(flipped, uint16(0))
	f.Add(flipped, uint16(1))
	f.Fuzz(func(t *testing.T, logBytes []byte, mode uint16) {
		fsys := vfs.NewMem()
		dir := "/data/t-0"
		if err := fsys.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		fh, err := fsys.Create(dir + "/00000000000000000000.log")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fh.WriteAt(logBytes, 0); err != nil {
			t.Fatal(err)
		}
		fh.Close()
		tp := TopicPartition{"t", 0}
		if _, err := CheckPartition(fsys, dir, tp); err != nil {
			return
		}
		m := RepairSkip
		if mode%2 == 1 {
			m = RepairTruncate
		}
		plan, err := PlanRepair(fsys, "/data", tp, m)
		if err != nil {
			return
		}
		if err := plan.Execute(fsys); err != nil {
			return
		}
		l, _, err := Open(fsys, dir, tp, testOptions(nil), OpenOptions{})
		if err != nil {
			t.Fatalf("open after repair: %v", err)
		}
		defer l.Close()
		if d := l.Damage(); len(d) > 0 {
			t.Fatalf("damage after repair: %v", d)
		}
	})
}
