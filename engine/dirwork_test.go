package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// dirWorkFault is an EMFILE injected at one step of a directory change,
// and how the test ends the shortage: a retry in the running process, a
// restart (close with the shortage still on, open without it), or a power
// loss while the work is pending.
type dirWorkFault struct {
	name  string
	fault vfs.Fault
}

var dirWorkEndings = []string{"retry", "restart", "crash"}

func emfile(op vfs.Op, suffix string) vfs.Fault {
	return vfs.Fault{Op: op, Err: syscall.EMFILE, Path: func(n string) bool {
		return strings.HasPrefix(n, "/data/t-0") && strings.HasSuffix(n, suffix)
	}}
}

// leftoverFiles lists temporary, .cleaned and .swap files in the log's
// directory.
func leftoverFiles(t *testing.T, fsys vfs.FS) []string {
	t.Helper()
	names, err := fsys.List("/data/t-0")
	mustNotErr(t, err)
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, tmpSuffix) || strings.HasSuffix(n, cleanedSuffix) || strings.HasSuffix(n, swapSuffix) {
			out = append(out, n)
		}
	}
	return out
}

// TestTruncateFullyOutOfFiles: a truncation to an empty log that runs out
// of descriptors while making the new segment, syncing the directory or
// renaming the new files fails retriably and never fails the directory;
// the log is either as it was or empty at the new start (taking no append
// until the work is done), and a retry, a restart or a crash leaves a log
// that holds none of the old records (or all of them, when the truncation
// did not get past its first step) and takes appends from the right offset.
func TestTruncateFullyOutOfFiles(t *testing.T) {
	faults := []dirWorkFault{
		{"create", emfile(vfs.OpCreate, ".tmp")},
		{"syncdir", emfile(vfs.OpSyncDir, "t-0")},
		{"rename", emfile(vfs.OpRename, ".log")},
	}
	const start = 5000
	for _, f := range faults {
		for _, ending := range dirWorkEndings {
			t.Run(f.name+"/"+ending, func(t *testing.T) {
				mem := vfs.NewMem()
				ffs := vfs.NewFaultFS(mem)
				clock := &testClock{ms: 1_700_000_000_000}
				opts := testOptions(clock)
				opts.SegmentBytes = 4096
				l := openTestLog(t, ffs, opts, OpenOptions{})
				for i := 0; i < 40; i++ {
					_, err := l.Append(makeBatch(t, batch.CompressionNone, i, 2, 300, clock.ms), 0)
					mustNotErr(t, err)
				}
				if len(l.Segments()) < 3 {
					t.Fatalf("%d segments, want several", len(l.Segments()))
				}
				old := readAll(t, l)
				oldEnd := l.LogEndOffset()

				remove := ffs.Inject(f.fault)
				err := l.TruncateFullyAndStartAt(start)
				if !errors.Is(err, ErrTooManyOpenFiles) || !errors.Is(err, syscall.EMFILE) {
					t.Fatalf("truncation under EMFILE: %v, want ErrTooManyOpenFiles", err)
				}
				if herr := l.health.check(); herr != nil {
					t.Fatalf("EMFILE failed the log directory: %v", herr)
				}
				changed := l.LogEndOffset() != oldEnd
				if changed {
					if l.LogEndOffset() != start || l.LogStartOffset() != start || len(l.Segments()) != 1 {
						t.Fatalf("after a truncation cut short: start %d end %d, %d segments", l.LogStartOffset(), l.LogEndOffset(), len(l.Segments()))
					}
					if _, err := l.Append(makeBatch(t, batch.CompressionNone, 99, 1, 10, clock.ms), 0); !errors.Is(err, ErrTooManyOpenFiles) {
						t.Fatalf("append with the truncation pending: %v, want ErrTooManyOpenFiles", err)
					}
				} else if f.name != "create" || !bytes.Equal(readAll(t, l), old) {
					t.Fatalf("fault %s changed nothing, or the log reads differently", f.name)
				}

				switch ending {
				case "retry":
					remove()
					mustNotErr(t, l.TruncateFullyAndStartAt(start))
				case "restart":
					if err := l.Close(); changed && !errors.Is(err, ErrTooManyOpenFiles) {
						t.Fatalf("close with the truncation pending: %v", err)
					}
					remove()
					// The log start offset checkpoint a Manager writes at
					// close holds what the log said.
					l = openTestLog(t, ffs, opts, OpenOptions{LogStartOffset: l.LogStartOffset()})
				case "crash":
					l.Close()
					l = openTestLog(t, mem.Crash(vfs.CrashOptions{}), opts, OpenOptions{})
				}
				defer l.Close()
				if ending != "crash" && f.name != "create" && ending != "restart" || (ending == "restart" && changed) {
					if l.LogStartOffset() != start || l.LogEndOffset() != start {
						t.Fatalf("after %s: start %d end %d, want an empty log at %d", ending, l.LogStartOffset(), l.LogEndOffset(), start)
					}
				}
				if ending == "retry" && (l.LogEndOffset() != start || len(l.Segments()) != 1) {
					t.Fatalf("retried truncation: end %d, %d segments", l.LogEndOffset(), len(l.Segments()))
				}
				// Whatever the log holds is old records, each whole, or
				// nothing; and it takes appends at its end.
				got := readAll(t, l)
				if len(got) > 0 && !bytes.Contains(old, got) {
					t.Fatalf("after %s the log holds records that were never written there", ending)
				}
				end := l.LogEndOffset()
				info, err := l.Append(makeBatch(t, batch.CompressionNone, 7, 3, 50, clock.ms), 0)
				mustNotErr(t, err)
				if info.FirstOffset != end {
					t.Fatalf("append after %s at %d, want %d", ending, info.FirstOffset, end)
				}
				if b := readUpTo(t, l, l.LogEndOffset()); len(b) == 0 {
					t.Fatal("appended records do not read back")
				}
				if ending == "retry" {
					if left := leftoverFiles(t, ffs); len(left) > 0 {
						t.Fatalf("files left behind: %v", left)
					}
				}
			})
		}
	}
}

// TestCleanSwapOutOfFiles: a cleaner swap that runs out of descriptors at
// its commit rename, at the directory sync after the commit point, at the
// removal of the run's old files or at a rename to the final names never
// fails the log directory: the pass reports itself aborted (retriable),
// the log reads as a compacted log of its records, nothing else changes
// in it until the swap's files are done, and a retry, a restart or a crash
// completes or undoes the swap without losing, duplicating or changing a
// record the compaction keeps.
func TestCleanSwapOutOfFiles(t *testing.T) {
	faults := []dirWorkFault{
		{"commit-rename", emfile(vfs.OpRename, ".log.swap")},
		{"syncdir", emfile(vfs.OpSyncDir, "t-0")},
		{"remove", emfile(vfs.OpRemove, ".timeindex")},
		{"final-rename", emfile(vfs.OpRename, "0.timeindex")},
	}
	for _, f := range faults {
		for _, ending := range dirWorkEndings {
			t.Run(f.name+"/"+ending, func(t *testing.T) {
				seed := testSeed(t)
				rng := rand.New(rand.NewSource(seed))
				mem := vfs.NewMem()
				ffs := vfs.NewFaultFS(mem)
				clock := &testClock{ms: 1_700_000_000_000}
				opts := compactOptions(clock)
				l := openTestLog(t, ffs, opts, OpenOptions{})
				m := newCompactModel()
				for i := 0; i < 120; i++ {
					m.appendKeyed(t, l, rng, 30, clock.ms)
					clock.advance(time.Millisecond)
				}
				leo := l.LogEndOffset()
				// Larger segments from here on: a run merges several old
				// ones, whose files the swap removes.
				setOptions(l, func(o *Options) { o.SegmentBytes = 64 << 10 })
				remove := ffs.Inject(f.fault)
				res, err := l.Clean(context.Background(), CleanConfig{UpperBound: leo, DedupeBufferBytes: 1 << 20})
				if err != nil || !res.Aborted {
					t.Fatalf("pass under EMFILE: %+v, %v; want an aborted pass", res, err)
				}
				if ffs.Fired() == 0 {
					t.Fatal("the fault never fired")
				}
				if herr := l.health.check(); herr != nil {
					t.Fatalf("EMFILE failed the log directory: %v", herr)
				}
				pending := l.dirWork != nil
				if pending != (f.name != "commit-rename") {
					t.Fatalf("fault %s: swap work pending %v", f.name, pending)
				}
				checkCompactedFrom(t, l, m, 0, res.EndOffset, clock.ms, opts.DeleteRetentionMs)
				if pending {
					if _, err := l.Append(keyedBatch(t, batch.CompressionNone, []kv{{[]byte("k"), []byte("v")}}, clock.ms), 0); !errors.Is(err, ErrTooManyOpenFiles) {
						t.Fatalf("append with the swap pending: %v, want ErrTooManyOpenFiles", err)
					}
				}
				before, _ := logRecords(t, l)
				switch ending {
				case "retry":
					remove()
					res, err := l.Clean(context.Background(), CleanConfig{UpperBound: leo, FirstDirtyOffset: 0, DedupeBufferBytes: 1 << 20})
					if err != nil || res.Aborted {
						t.Fatalf("pass after the shortage: %+v, %v", res, err)
					}
					if left := leftoverFiles(t, ffs); len(left) > 0 {
						t.Fatalf("files left behind: %v", left)
					}
				case "restart":
					if err := l.Close(); pending && !errors.Is(err, ErrTooManyOpenFiles) {
						t.Fatalf("close with the swap pending: %v", err)
					}
					remove()
					l = openTestLog(t, ffs, opts, OpenOptions{})
					after, _ := logRecords(t, l)
					if fmt.Sprint(after) != fmt.Sprint(before) {
						t.Fatal("the log reads differently after a restart")
					}
					if left := leftoverFiles(t, ffs); len(left) > 0 {
						t.Fatalf("files left behind: %v", left)
					}
				case "crash":
					l.Close()
					l = openTestLog(t, mem.Crash(vfs.CrashOptions{}), opts, OpenOptions{})
				}
				defer l.Close()
				if l.LogEndOffset() != leo {
					t.Fatalf("after %s the log ends at %d, want %d", ending, l.LogEndOffset(), leo)
				}
				checkCompactedFrom(t, l, m, 0, res.EndOffset, clock.ms, opts.DeleteRetentionMs)
				checkIndexesAgree(t, l)
				if _, err := l.Append(keyedBatch(t, batch.CompressionNone, []kv{{[]byte("k"), []byte("v")}}, clock.ms), 0); err != nil {
					t.Fatalf("append after %s: %v", ending, err)
				}
			})
		}
	}
}

// checkCompactedFrom checks that the log holds a compaction of the model's
// records: each record it holds was appended at that offset with that key
// and value, none twice, and it holds at least every record one pass over
// [firstDirty, end) keeps (a pass that swapped only some runs, or none,
// keeps more).
func checkCompactedFrom(t *testing.T, l *Log, m *compactModel, firstDirty, end, nowMs, deleteRetentionMs int64) {
	t.Helper()
	got, _ := logRecords(t, l)
	byOffset := map[int64]modelRecord{}
	for _, r := range m.records {
		byOffset[r.offset] = r
	}
	seen := map[int64]bool{}
	prev := int64(-1)
	for _, g := range got {
		w, ok := byOffset[g.offset]
		if !ok || g.offset <= prev || !bytes.Equal(g.key, w.key) || !bytes.Equal(g.value, w.value) || (g.value == nil) != (w.value == nil) {
			t.Fatalf("the log holds %v, appended was %v (after offset %d)", g, w, prev)
		}
		seen[g.offset] = true
		prev = g.offset
	}
	kept := newCompactModel()
	kept.records = m.records
	kept.pass(firstDirty, end, nowMs, deleteRetentionMs)
	for _, r := range kept.present() {
		if !seen[r.offset] {
			t.Fatalf("record %v, which compaction keeps, is lost", r)
		}
	}
}

// TestTruncateToOutOfFiles: a truncation that removed later segments and
// then cannot sync the directory fails retriably, never the directory,
// and cuts nothing more until the sync is done: after a retry, a restart
// or a power loss after the retry, the log is a prefix of what it was
// (never a cut segment with later ones back beside it) and takes appends
// at its end.
func TestTruncateToOutOfFiles(t *testing.T) {
	for _, ending := range []string{"retry", "restart", "crash-after-retry"} {
		t.Run(ending, func(t *testing.T) {
			mem := vfs.NewMem()
			ffs := vfs.NewFaultFS(mem)
			clock := &testClock{ms: 1_700_000_000_000}
			opts := testOptions(clock)
			opts.SegmentBytes = 4096
			l := openTestLog(t, ffs, opts, OpenOptions{})
			for i := 0; i < 40; i++ {
				_, err := l.Append(makeBatch(t, batch.CompressionNone, i, 2, 300, clock.ms), 0)
				mustNotErr(t, err)
			}
			segs := l.Segments()
			if len(segs) < 4 {
				t.Fatalf("%d segments, want several", len(segs))
			}
			old := readAll(t, l)
			// Into the middle of the second segment.
			offset := segs[1].BaseOffset + 2
			remove := ffs.Inject(emfile(vfs.OpSyncDir, "t-0"))
			err := l.TruncateTo(offset)
			if !errors.Is(err, ErrTooManyOpenFiles) {
				t.Fatalf("truncation under EMFILE: %v, want ErrTooManyOpenFiles", err)
			}
			if herr := l.health.check(); herr != nil {
				t.Fatalf("EMFILE failed the log directory: %v", herr)
			}
			if _, err := l.Append(makeBatch(t, batch.CompressionNone, 99, 1, 10, clock.ms), 0); !errors.Is(err, ErrTooManyOpenFiles) {
				t.Fatalf("append with the truncation pending: %v, want ErrTooManyOpenFiles", err)
			}
			switch ending {
			case "retry", "crash-after-retry":
				remove()
				mustNotErr(t, l.TruncateTo(offset))
				if l.LogEndOffset() > offset || len(l.Segments()) != 2 {
					t.Fatalf("retried truncation: end %d, %d segments", l.LogEndOffset(), len(l.Segments()))
				}
				if ending == "crash-after-retry" {
					l.Close()
					l = openTestLog(t, mem.Crash(vfs.CrashOptions{}), opts, OpenOptions{})
				}
			case "restart":
				if err := l.Close(); !errors.Is(err, ErrTooManyOpenFiles) {
					t.Fatalf("close with the truncation pending: %v", err)
				}
				remove()
				l = openTestLog(t, ffs, opts, OpenOptions{})
			}
			defer l.Close()
			got := readAll(t, l)
			if !bytes.HasPrefix(old, got) {
				t.Fatalf("after %s the log (%d bytes, end %d) is not a prefix of what it held", ending, len(got), l.LogEndOffset())
			}
			end := l.LogEndOffset()
			info, err := l.Append(makeBatch(t, batch.CompressionNone, 7, 3, 50, clock.ms), 0)
			mustNotErr(t, err)
			if info.FirstOffset != end {
				t.Fatalf("append after %s at %d, want %d", ending, info.FirstOffset, end)
			}
		})
	}
}
