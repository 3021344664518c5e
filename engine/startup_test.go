package engine

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// TestCleanReopenWritesNothing: a log closed cleanly reopens at its
// recovery point, and leads again at the same epoch, without a single
// write, sync, rename or truncation: every one of those costs a disk cache
// flush on an SD card, times every partition, at every start. Any such
// operation fails the open here.
func TestCleanReopenWritesNothing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		batches int
		roll    bool
	}{
		{"idle", 0, false},
		{"with data", 30, false},
		{"rolled, empty active segment", 30, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			opts := testOptions(nil)
			l := openTestLog(t, mem, opts, OpenOptions{})
			mustNotErr(t, l.AssignLeaderEpoch(1))
			for i := 0; i < tc.batches; i++ {
				_, err := l.Append(makeBatch(t, batch.CompressionNone, i, 3, 200, int64(1000+i)), 1)
				mustNotErr(t, err)
			}
			if tc.roll {
				mustNotErr(t, l.Roll())
			}
			// A new leader epoch at the log end, with nothing written in it
			// yet: the entry reopening must keep.
			mustNotErr(t, l.AssignLeaderEpoch(2))
			want := readAll(t, l)
			epochs := l.LeaderEpochs()
			mustNotErr(t, l.Close())
			rp := l.RecoveryPoint()

			ffs := vfs.NewFaultFS(mem)
			remove := ffs.Inject(vfs.Fault{Op: vfs.OpCreate | vfs.OpWrite | vfs.OpSync | vfs.OpSyncData | vfs.OpSyncDir |
				vfs.OpRename | vfs.OpTruncate | vfs.OpRemove | vfs.OpPreallocate | vfs.OpMkdir})
			l2, stats, err := Open(ffs, "/data/t-0", TopicPartition{"t", 0}, opts, OpenOptions{RecoveryPoint: rp})
			if err != nil {
				t.Fatalf("clean reopen at recovery point %d wrote to the disk: %v", rp, err)
			}
			if stats.SegmentsScanned != 0 {
				t.Fatalf("clean reopen scanned %d segments", stats.SegmentsScanned)
			}
			if got := l2.LeaderEpochs(); fmt.Sprint(got) != fmt.Sprint(epochs) {
				t.Fatalf("leader epochs after reopen %v, before %v", got, epochs)
			}
			if err := l2.AssignLeaderEpoch(2); err != nil {
				t.Fatalf("leading again at the same epoch wrote to the disk: %v", err)
			}
			remove()
			defer l2.Close()
			if got := readAll(t, l2); !bytes.Equal(got, want) {
				t.Fatal("reopened log differs")
			}
			// Appends after such an open are durable as ever.
			info, err := l2.Append(makeBatch(t, batch.CompressionNone, 99, 2, 100, 5000), 2)
			mustNotErr(t, err)
			if l2.DurableOffset() != info.LastOffset+1 {
				t.Fatalf("durable offset %d after an append ending at %d", l2.DurableOffset(), info.LastOffset)
			}
		})
	}
}

// TestOpenDropsEpochsPastTheLogEnd: epochs whose first batch a crash lost
// (they start past the log end) are dropped from leader-epoch-checkpoint
// on open, durably; one starting at the log end stays.
func TestOpenDropsEpochsPastTheLogEnd(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(nil)
	l := openTestLog(t, mem, opts, OpenOptions{})
	for i := 0; i < 5; i++ {
		_, err := l.Append(makeBatch(t, batch.CompressionNone, i, 2, 50, int64(1000+i)), 0)
		mustNotErr(t, err)
	}
	leo := l.LogEndOffset()
	mustNotErr(t, l.Close())
	path := "/data/t-0/" + LeaderEpochCheckpointFile
	mustNotErr(t, writeCheckpoint(mem, path, []string{"0 0", fmt.Sprintf("1 %d", leo), fmt.Sprintf("2 %d", leo+4)}))

	l2 := openTestLog(t, mem, opts, OpenOptions{RecoveryPoint: leo})
	defer l2.Close()
	want := []EpochEntry{{0, 0}, {1, leo}}
	if got := l2.LeaderEpochs(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("leader epochs %v, want %v", got, want)
	}
	onDisk, err := loadEpochCache(&fileDir{fs: mem, dir: "/data/t-0"})
	mustNotErr(t, err)
	if fmt.Sprint(onDisk.entries) != fmt.Sprint(want) {
		t.Fatalf("leader-epoch-checkpoint holds %v, want %v", onDisk.entries, want)
	}
}
