package engine

import (
	"bytes"
	"errors"
	"fmt"
	randv2 "math/rand/v2"
	"strings"
	"testing"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// repairBatch is one batch of the fixture: where it sits and its bytes.
type repairBatch struct {
	base, last int64
	records    int64
	file       string
	position   int64
	bytes      []byte
}

const (
	repairDataDir = "/data"
	repairDir     = "/data/t-0"
)

var repairTP = TopicPartition{"t", 0}

func repairConfig() ManagerConfig {
	opts := testOptions(nil)
	opts.SegmentBytes = 4096
	opts.IndexIntervalBytes = 512
	return ManagerConfig{ClusterID: "repair", NodeID: 1, Defaults: opts}
}

// buildRepairFixture writes 40 batches of 3 records (about four a segment,
// ten segments) through a Manager, closes it cleanly and returns the
// batches as they sit on disk.
func buildRepairFixture(t *testing.T, fsys vfs.FS) []repairBatch {
	t.Helper()
	m, err := OpenManager(fsys, repairDataDir, repairConfig())
	mustNotErr(t, err)
	l, err := m.GetOrCreateLog(repairTP)
	mustNotErr(t, err)
	for i := 0; i < 40; i++ {
		_, err := l.Append(makeBatch(t, batch.CompressionNone, i, 3, 300, int64(1000+i)), 0)
		mustNotErr(t, err)
	}
	mustNotErr(t, m.Close())
	return locateBatches(t, fsys)
}

// locateBatches walks every segment file of the fixture partition.
func locateBatches(t *testing.T, fsys vfs.FS) []repairBatch {
	t.Helper()
	names, err := fsys.List(repairDir)
	mustNotErr(t, err)
	var out []repairBatch
	for _, name := range names {
		if _, ok := parseBase(name, logSuffix); !ok {
			continue
		}
		data, err := vfs.ReadFile(fsys, repairDir+"/"+name)
		mustNotErr(t, err)
		for pos := 0; pos < len(data); {
			n, h, err := batch.Scan(data[pos:])
			if err != nil {
				t.Fatalf("fixture %s at %d: %v", name, pos, err)
			}
			out = append(out, repairBatch{base: h.BaseOffset, last: h.LastOffset(), records: int64(h.RecordCount),
				file: repairDir + "/" + name, position: int64(pos), bytes: bytes.Clone(data[pos : pos+n])})
			pos += n
		}
	}
	return out
}

// Where a flipped byte lands in a batch: each class fails a different
// check (the CRC over the body, the CRC field, the length field, the
// header fields in front of the CRC's range).
var repairFlipClasses = map[string]func(size int) int{
	"record body":  func(size int) int { return size - 5 },
	"crc field":    func(int) int { return batch.CRCOffset + 1 },
	"length field": func(int) int { return batch.LengthOffset + 1 },
	"batch header": func(int) int { return batch.AttributesOffset + 1 },
}

func flipByte(t *testing.T, fsys vfs.FS, name string, pos int64) {
	t.Helper()
	f, err := fsys.OpenReadWrite(name)
	mustNotErr(t, err)
	b := make([]byte, 1)
	_, err = f.ReadAt(b, pos)
	mustNotErr(t, err)
	b[0] ^= 0x5a
	_, err = f.WriteAt(b, pos)
	mustNotErr(t, err)
	mustNotErr(t, errors.Join(f.Sync(), f.Close()))
}

// segmentsOf groups the fixture's batches by file, in offset order.
func segmentsOf(bs []repairBatch) [][]int {
	var out [][]int
	for i, b := range bs {
		if i == 0 || b.file != bs[i-1].file {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], i)
	}
	return out
}

// repairCase picks the batches to damage, by segment.
type repairCase struct {
	name string
	pick func(segs [][]int) []int
}

var repairCases = []repairCase{
	{"first segment, middle", func(s [][]int) []int { return []int{s[0][1]} }},
	{"first segment, to its end", func(s [][]int) []int { return []int{s[0][len(s[0])-1]} }},
	{"first segment, first batch", func(s [][]int) []int { return []int{s[0][0]} }},
	{"middle segment, middle", func(s [][]int) []int { return []int{s[4][1]} }},
	{"middle segment, to its end", func(s [][]int) []int { return []int{s[4][len(s[4])-1]} }},
	{"middle segment, whole", func(s [][]int) []int { return s[4] }},
	{"last segment, middle", func(s [][]int) []int { l := s[len(s)-1]; return []int{l[0]} }},
	{"last segment, to its end", func(s [][]int) []int { l := s[len(s)-1]; return []int{l[len(l)-1]} }},
	{"last segment, whole", func(s [][]int) []int { return s[len(s)-1] }},
	{"two ranges", func(s [][]int) []int { return []int{s[1][1], s[6][len(s[6])-1]} }},
}

// damageRepairFixture flips a byte of each picked batch, and lists the damaged
// segments as the scrubber or recovery would, so the broker keeps the
// partition offline. It returns the damaged ranges as batch index runs.
func damageRepairFixture(t *testing.T, fsys vfs.FS, bs []repairBatch, picked []int, class string) [][]int {
	t.Helper()
	for _, i := range picked {
		flipByte(t, fsys, bs[i].file, bs[i].position+int64(repairFlipClasses[class](len(bs[i].bytes))))
	}
	// Adjacent damaged batches in one segment make one range.
	var runs [][]int
	for _, i := range picked {
		if n := len(runs); n > 0 {
			prev := runs[n-1][len(runs[n-1])-1]
			if prev == i-1 && bs[prev].file == bs[i].file {
				runs[n-1] = append(runs[n-1], i)
				continue
			}
		}
		runs = append(runs, []int{i})
	}
	r, err := CheckPartition(fsys, repairDir, repairTP)
	mustNotErr(t, err)
	ds := make([]Damage, len(r.Damage))
	for i, d := range r.Damage {
		ds[i] = d.Damage
	}
	mustNotErr(t, writeDamagedSegments(fsys, repairDir, ds))
	return runs
}

func inRuns(runs [][]int, i int) bool {
	for _, run := range runs {
		for _, j := range run {
			if i == j {
				return true
			}
		}
	}
	return false
}

// checkReportMatches checks what CheckPartition says of each damaged
// range against the fixture, and against what recovery finds.
func checkReportMatches(t *testing.T, fsys vfs.FS, bs []repairBatch, runs [][]int) {
	t.Helper()
	r, err := CheckPartition(fsys, repairDir, repairTP)
	mustNotErr(t, err)
	if len(r.Damage) != len(runs) {
		t.Fatalf("check found %d damaged ranges, want %d: %+v", len(r.Damage), len(runs), r.Damage)
	}
	for i, run := range runs {
		d := r.Damage[i]
		first, last := bs[run[0]], bs[run[len(run)-1]]
		var after int64
		for j := run[len(run)-1] + 1; j < len(bs); j++ {
			if !inRuns(runs, j) {
				after += bs[j].records
			}
		}
		if d.File != first.file || d.Position != first.position || d.End != last.position+int64(len(last.bytes)) ||
			d.FirstOffset != first.base || d.LastOffset != last.last || d.RecordsAfter != after || !d.Listed {
			t.Fatalf("damage %d: %+v; want %s bytes [%d, %d) offsets %d to %d, %d records after, listed",
				i, d, first.file, first.position, last.position+int64(len(last.bytes)), first.base, last.last, after)
		}
	}
	// Recovery, reading the listing, finds the same ranges.
	m, err := OpenManager(fsys, repairDataDir, repairConfig())
	mustNotErr(t, err)
	got := m.Damaged()
	mustNotErr(t, m.Close())
	if len(got) != len(runs) {
		t.Fatalf("recovery found %d damaged ranges, the check %d: %+v", len(got), len(runs), got)
	}
	for i, d := range got {
		c := r.Damage[i]
		if d.Position != c.Position || d.End != c.End || d.FirstOffset != c.FirstOffset || (d.LastOffset >= 0 && d.LastOffset != c.LastOffset) {
			t.Fatalf("recovery's damage %d %v differs from the check's %v", i, d, c.Damage)
		}
	}
}

// checkRepaired opens the repaired partition and checks that it has no
// damage, that every batch outside dropped reads back at its offset byte
// for byte, that the log end offset is wantEnd, and that appends work.
func checkRepaired(t *testing.T, fsys vfs.FS, bs []repairBatch, dropped map[int]bool, wantEnd int64) {
	t.Helper()
	m, err := OpenManager(fsys, repairDataDir, repairConfig())
	mustNotErr(t, err)
	defer m.Close()
	l := m.Log(repairTP)
	if d := l.Damage(); len(d) > 0 {
		t.Fatalf("still damaged after the repair: %v", d)
	}
	if leo := l.LogEndOffset(); leo != wantEnd {
		t.Fatalf("log end offset %d after the repair, want %d", leo, wantEnd)
	}
	for i, b := range bs {
		if dropped[i] {
			continue
		}
		got, err := l.ReadBatches(b.base, 1<<20, l.LogEndOffset())
		if err != nil {
			t.Fatalf("read batch %d at offset %d: %v", i, b.base, err)
		}
		if len(got) < len(b.bytes) || !bytes.Equal(got[:len(b.bytes)], b.bytes) {
			t.Fatalf("batch %d at offset %d does not read back as written", i, b.base)
		}
	}
	before := l.LogEndOffset()
	info, err := l.Append(makeBatch(t, batch.CompressionNone, 99, 2, 10, 5000), 0)
	if err != nil {
		t.Fatalf("append after the repair: %v", err)
	}
	if info.FirstOffset != before {
		t.Fatalf("append after the repair got offset %d, want %d", info.FirstOffset, before)
	}
	if _, err := nonEmpty(l.ReadBatches(before, 1<<20, l.LogEndOffset())); err != nil {
		t.Fatalf("read the new append: %v", err)
	}
	// The check agrees: nothing damaged, indexes (rebuilt by recovery)
	// consistent.
	mustNotErr(t, m.Close())
	r, err := CheckPartition(fsys, repairDir, repairTP)
	mustNotErr(t, err)
	if r.Damaged() || len(r.IndexProblems) > 0 || r.StaleListing {
		t.Fatalf("check after the repair: damage %v index problems %v stale listing %v", r.Damage, r.IndexProblems, r.StaleListing)
	}
}

func nonEmpty(b []byte, err error) ([]byte, error) {
	if err == nil && len(b) == 0 {
		return nil, fmt.Errorf("empty read")
	}
	return b, err
}

// expectRepair is what a repair in mode must do to the fixture: the batch
// indexes it drops and the log end offset after it.
func expectRepair(bs []repairBatch, runs [][]int, mode RepairMode) (map[int]bool, int64) {
	dropped := map[int]bool{}
	end := bs[len(bs)-1].last + 1
	switch mode {
	case RepairTruncate:
		for i := runs[0][0]; i < len(bs); i++ {
			dropped[i] = true
		}
		end = bs[runs[0][0]].base
	case RepairSkip:
		for _, run := range runs {
			for _, i := range run {
				dropped[i] = true
			}
		}
	}
	return dropped, end
}

func TestRepairModes(t *testing.T) {
	for _, mode := range []RepairMode{RepairSkip, RepairTruncate} {
		for _, tc := range repairCases {
			for class := range repairFlipClasses {
				t.Run(fmt.Sprintf("%v/%s/%s", mode, tc.name, class), func(t *testing.T) {
					fsys := vfs.NewMem()
					bs := buildRepairFixture(t, fsys)
					runs := damageRepairFixture(t, fsys, bs, tc.pick(segmentsOf(bs)), class)
					checkReportMatches(t, fsys, bs, runs)

					plan, err := PlanRepair(fsys, repairDataDir, repairTP, mode)
					mustNotErr(t, err)
					dropped, end := expectRepair(bs, runs, mode)
					// Records of valid batches dropped, and the offsets the
					// damaged ranges held.
					var droppedValid, damagedOffsets int64
					inRun := map[int]bool{}
					for _, run := range runs {
						for _, i := range run {
							inRun[i] = true
							damagedOffsets += bs[i].last - bs[i].base + 1
						}
					}
					for i := range dropped {
						if !inRun[i] {
							droppedValid += bs[i].records
						}
					}
					if plan.RecordsDropped != droppedValid || plan.DamagedOffsets != damagedOffsets || plan.LogEndOffset != end {
						t.Fatalf("plan drops %d valid records, at most %d damaged, ends at %d; want %d, %d, %d\n%s",
							plan.RecordsDropped, plan.DamagedOffsets, plan.LogEndOffset, droppedValid, damagedOffsets, end, strings.Join(plan.Describe(), "\n"))
					}
					if reuse := plan.ReusedFrom >= 0; reuse != (mode == RepairTruncate) {
						t.Fatalf("plan reuses offsets from %d", plan.ReusedFrom)
					}
					mustNotErr(t, plan.Execute(fsys))
					checkRepaired(t, fsys, bs, dropped, end)
				})
			}
		}
	}
}

// A repair runs only with the data directory's lock, so never under a
// broker.
func TestRepairRefusesWhileLocked(t *testing.T) {
	fsys := vfs.NewMem()
	bs := buildRepairFixture(t, fsys)
	damageRepairFixture(t, fsys, bs, []int{5}, "record body")
	plan, err := PlanRepair(fsys, repairDataDir, repairTP, RepairSkip)
	mustNotErr(t, err)
	m, err := OpenManager(fsys, repairDataDir, repairConfig())
	mustNotErr(t, err)
	err = plan.Execute(fsys)
	if !errors.Is(err, vfs.ErrLocked) || !strings.Contains(err.Error(), "is the broker running? stop it first") {
		t.Fatalf("repair beside an open Manager: %v", err)
	}
	mustNotErr(t, m.Close())
	if r, _ := CheckPartition(fsys, repairDir, repairTP); len(r.Damage) != 1 {
		t.Fatalf("the refused repair changed the partition: %+v", r.Damage)
	}
	mustNotErr(t, plan.Execute(fsys))
}

func TestRepairRefusesAHealthyPartitionAndAStalePlan(t *testing.T) {
	fsys := vfs.NewMem()
	bs := buildRepairFixture(t, fsys)
	if _, err := PlanRepair(fsys, repairDataDir, repairTP, RepairTruncate); !errors.Is(err, ErrNoDamage) {
		t.Fatalf("plan for a healthy partition: %v", err)
	}
	damageRepairFixture(t, fsys, bs, []int{5}, "record body")
	plan, err := PlanRepair(fsys, repairDataDir, repairTP, RepairTruncate)
	mustNotErr(t, err)
	flipByte(t, fsys, bs[20].file, bs[20].position+30)
	if err := plan.Execute(fsys); !errors.Is(err, ErrRepairPlanStale) {
		t.Fatalf("execute after the partition changed: %v", err)
	}
}

// The check reports index entries that name no batch, as findings apart
// from damage, and an incomplete write at the end of the last segment as a
// torn tail, not damage.
func TestCheckIndexProblemsAndTornTail(t *testing.T) {
	fsys := vfs.NewMem()
	bs := buildRepairFixture(t, fsys)
	idx := strings.TrimSuffix(bs[0].file, logSuffix) + indexSuffix
	f, err := fsys.OpenReadWrite(idx)
	mustNotErr(t, err)
	_, err = f.WriteAt([]byte{0, 0, 0, 1, 0, 0, 0, 7}, 0)
	mustNotErr(t, errors.Join(err, f.Close()))
	last := bs[len(bs)-1]
	f, err = fsys.OpenReadWrite(last.file)
	mustNotErr(t, err)
	_, err = f.WriteAt(last.bytes[:100], last.position+int64(len(last.bytes)))
	mustNotErr(t, errors.Join(err, f.Close()))
	// Recovery would take those bytes for a torn tail only above the
	// recovery point.
	mustNotErr(t, WriteOffsetCheckpoint(fsys, repairDataDir+"/"+RecoveryPointCheckpointFile, map[TopicPartition]int64{repairTP: last.last + 1}))

	r, err := CheckPartition(fsys, repairDir, repairTP)
	mustNotErr(t, err)
	if r.Damaged() || r.TornTailBytes != 100 || r.TornTailFile != last.file {
		t.Fatalf("torn tail: damage %v, torn tail %d bytes of %q", r.Damage, r.TornTailBytes, r.TornTailFile)
	}
	if len(r.IndexProblems) != 1 || r.IndexProblems[0].File != idx || r.IndexProblems[0].Entry != 0 {
		t.Fatalf("index problems: %+v", r.IndexProblems)
	}
	var records int64
	for _, b := range bs {
		records += b.records
	}
	if r.Batches != int64(len(bs)) || r.Records != records || r.FirstOffset != 0 || r.LastOffset != last.last || r.Segments != len(segmentsOf(bs)) {
		t.Fatalf("report: %+v", r)
	}
	all, err := CheckDir(fsys, repairDataDir)
	mustNotErr(t, err)
	if len(all) != 1 || all[0].TopicPartition != repairTP {
		t.Fatalf("CheckDir: %+v", all)
	}
}

// A crash anywhere in Execute leaves a partition that opens either still
// damaged (listed, readable below the damage, and a second repair finishes
// the work) or repaired.
func TestRepairCrashSafety(t *testing.T) {
	seed := testSeed(t)
	cases := []struct {
		tc    repairCase
		class string
	}{
		{repairCases[4], "record body"},  // middle segment, to its end
		{repairCases[7], "length field"}, // last segment, to its end: a new segment
		{repairCases[9], "crc field"},    // two ranges
		{repairCases[8], "record body"},  // last segment, whole
	}
	for _, mode := range []RepairMode{RepairSkip, RepairTruncate} {
		for ci, c := range cases {
			t.Run(fmt.Sprintf("%v/%s", mode, c.tc.name), func(t *testing.T) {
				prepare := func() (*vfs.MemFS, []repairBatch, [][]int) {
					fsys := vfs.NewMem()
					bs := buildRepairFixture(t, fsys)
					runs := damageRepairFixture(t, fsys, bs, c.tc.pick(segmentsOf(bs)), c.class)
					return fsys, bs, runs
				}
				fsys, _, _ := prepare()
				plan, err := PlanRepair(fsys, repairDataDir, repairTP, mode)
				mustNotErr(t, err)
				before := fsys.MutatingOps()
				mustNotErr(t, plan.Execute(fsys))
				total := fsys.MutatingOps() - before
				states := map[string]int{}
				for n := int64(0); n <= total; n++ {
					fsys, bs, runs := prepare()
					plan, err := PlanRepair(fsys, repairDataDir, repairTP, mode)
					mustNotErr(t, err)
					opts := vfs.CrashOptions{}
					if n%2 == 1 {
						rng := randv2.New(randv2.NewPCG(uint64(seed), uint64(ci)<<32|uint64(n)))
						opts = vfs.CrashOptions{Rand: rng, KeepUnsynced: true, TearLastWrite: true}
					}
					fsys.SetCrashAfter(n, opts)
					execErr := plan.Execute(fsys)
					after := fsys.Crash(opts)
					if execErr == nil && n < total {
						t.Fatalf("crash after %d of %d operations: Execute returned no error", n, total)
					}
					dropped, end := expectRepair(bs, runs, mode)
					m, err := OpenManager(after, repairDataDir, repairConfig())
					if err != nil {
						t.Fatalf("crash after %d of %d operations: reopen: %v", n, total, err)
					}
					l := m.Log(repairTP)
					damage := l.Damage()
					if len(damage) == 0 {
						mustNotErr(t, m.Close())
						states["repaired"]++
						checkRepaired(t, after, bs, dropped, end)
						continue
					}
					states["still damaged"]++
					// The damage left is one of the ranges, and every
					// valid batch below it reads back.
					known := false
					for _, run := range runs {
						known = known || damage[0].FirstOffset == bs[run[0]].base
					}
					if !known {
						t.Fatalf("crash after %d: damage %v is none of the damaged ranges", n, damage[0])
					}
					for i, b := range bs {
						if b.base >= damage[0].FirstOffset || inRuns(runs, i) {
							continue
						}
						got, err := l.ReadBatches(b.base, 1<<20, l.LogEndOffset())
						if err != nil || len(got) < len(b.bytes) || !bytes.Equal(got[:len(b.bytes)], b.bytes) {
							t.Fatalf("crash after %d: batch at %d below the damage does not read back: %v", n, b.base, err)
						}
					}
					mustNotErr(t, m.Close())
					again, err := PlanRepair(after, repairDataDir, repairTP, mode)
					if err != nil {
						t.Fatalf("crash after %d of %d operations: plan again: %v", n, total, err)
					}
					mustNotErr(t, again.Execute(after))
					checkRepaired(t, after, bs, dropped, end)
				}
				t.Logf("%d crash points: %v", total+1, states)
				if states["repaired"] == 0 || states["still damaged"] == 0 {
					t.Fatalf("the crash points missed a state: %v", states)
				}
			})
		}
	}
}

// TestRepairDamageThatHeldNoOffset: a stray byte between two batches whose
// offsets follow on held no record. The check reports it with 0 offsets,
// the log serves every offset around it, a skip repair drops nothing and
// leaves no gap, and a truncating one cuts at it.
func TestRepairDamageThatHeldNoOffset(t *testing.T) {
	var valid []byte
	var cut int
	for i := 0; i < 4; i++ {
		b := withOffset(makeBatch(t, batch.CompressionNone, i, 3, 40, 1000), int64(3*i), 0)
		if i == 2 {
			cut = len(valid)
			valid = append(valid, 0) // the stray byte, before offset 6
		}
		valid = append(valid, b...)
	}
	for _, mode := range []RepairMode{RepairSkip, RepairTruncate} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			fsys := vfs.NewMem()
			dir := repairDataDir + "/t-0"
			mustNotErr(t, fsys.MkdirAll(dir, 0o755))
			fh, err := fsys.Create(dir + "/00000000000000000000.log")
			mustNotErr(t, err)
			_, err = fh.WriteAt(valid, 0)
			mustNotErr(t, errors.Join(err, fh.Close()))
			tp := TopicPartition{"t", 0}

			l, _, err := Open(fsys, dir, tp, testOptions(nil), OpenOptions{})
			mustNotErr(t, err)
			d := l.Damage()
			if len(d) != 1 || d[0].Offsets() != 0 || d[0].Position != int64(cut) || d[0].FirstOffset != 6 {
				t.Fatalf("damage %v, want one range at %d that held no offset", d, cut)
			}
			for off := int64(0); off < 12; off++ {
				r, err := l.Read(off, 1, 12, true)
				if err != nil {
					t.Fatalf("read %d beside damage that held no offset: %v", off, err)
				}
				r.Release()
			}
			if _, err := l.Append(makeBatch(t, batch.CompressionNone, 9, 1, 1, 1), 0); !errors.Is(err, ErrPartitionDamaged) {
				t.Fatalf("append beside the damage: %v", err)
			}
			mustNotErr(t, l.Close())

			plan, err := PlanRepair(fsys, repairDataDir, tp, mode)
			mustNotErr(t, err)
			want := int64(12)
			if mode == RepairTruncate {
				want = 6
			} else if len(plan.Gaps) != 0 || plan.DamagedOffsets != 0 || plan.RecordsDropped != 0 {
				t.Fatalf("skip plan: gaps %v, %d damaged offsets, %d records dropped; want none\n%s",
					plan.Gaps, plan.DamagedOffsets, plan.RecordsDropped, strings.Join(plan.Describe(), "\n"))
			}
			mustNotErr(t, plan.Execute(fsys))
			l, _, err = Open(fsys, dir, tp, testOptions(nil), OpenOptions{})
			mustNotErr(t, err)
			defer l.Close()
			if d := l.Damage(); len(d) != 0 || l.LogEndOffset() != want {
				t.Fatalf("after the %v repair: damage %v, log end %d; want none and %d", mode, d, l.LogEndOffset(), want)
			}
		})
	}
}
