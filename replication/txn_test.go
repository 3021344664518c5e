package replication

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/batch"
)

// TestFollowersDeriveTransactions: followers that fetch a leader's
// transactional batches and markers through the replica fetch path hold
// the same open transactions, last stable offset and aborted transactions
// as the leader, and the leader's read_committed read stops at the LSO.
func TestFollowersDeriveTransactions(t *testing.T) {
	c := newIdleReplicaCluster(t, 1, 50)
	leader := c.leaders[0]
	seqs := map[int64]int32{}
	txnBatch := func(pid int64, n int) {
		t.Helper()
		b := batch.NewBuilder(batch.CompressionNone)
		b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.IsTransactional = pid, 0, seqs[pid], true
		seqs[pid] += int32(n)
		for range n {
			b.Append(batch.Record{Timestamp: time.Now().UnixMilli(), Value: []byte("v")})
		}
		raw, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := leader.AppendAsLeaderTimeout(raw, 1, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	marker := func(pid int64, commit bool) {
		t.Helper()
		if _, err := leader.Log().AppendTxnMarker(engine.TxnMarker{ProducerID: pid, Commit: commit, CoordinatorEpoch: 2}, 1); err != nil {
			t.Fatal(err)
		}
	}
	txnBatch(1, 3) // 0-2
	txnBatch(2, 2) // 3-4
	marker(1, false)
	txnBatch(3, 1) // 6
	marker(2, true)
	txnBatch(1, 2) // 8-9, open
	leo := leader.Log().LogEndOffset()

	deadline := time.Now().Add(20 * time.Second)
	for _, rs := range c.replicas {
		for rs[0].Log().LogEndOffset() < leo {
			if time.Now().After(deadline) {
				t.Fatalf("a follower reached %d of %d", rs[0].Log().LogEndOffset(), leo)
			}
			runtime.Gosched()
		}
	}
	want := fmt.Sprint(leader.Log().OpenTxns())
	wantAborted, err := leader.Log().AbortedTxns(0, leo)
	if err != nil {
		t.Fatal(err)
	}
	open := leader.Log().OpenTxns()
	if len(open) != 2 || open[0].ProducerID != 3 || open[0].FirstOffset != 6 || open[1].ProducerID != 1 || open[1].FirstOffset != 8 ||
		len(wantAborted) != 1 || wantAborted[0] != (engine.AbortedTxn{ProducerID: 1, FirstOffset: 0}) {
		t.Fatalf("leader: open %s aborted %v", want, wantAborted)
	}
	for i, rs := range c.replicas {
		f := rs[0].Log()
		got, _ := f.AbortedTxns(0, leo)
		if fmt.Sprint(f.OpenTxns()) != want || f.LastStableOffset(leo) != leader.Log().LastStableOffset(leo) || !slices.Equal(got, wantAborted) {
			t.Fatalf("follower %d: open %v LSO %d aborted %v; leader: open %s LSO %d aborted %v", i, f.OpenTxns(), f.LastStableOffset(leo),
				got, want, leader.Log().LastStableOffset(leo), wantAborted)
		}
	}
	// The leader's read_committed read stops at the LSO, the start of
	// producer 3's open transaction.
	for leader.HighWatermark() < leo {
		if time.Now().After(deadline) {
			t.Fatalf("high watermark %d of %d", leader.HighWatermark(), leo)
		}
		runtime.Gosched()
	}
	cr, err := leader.ReadCommittedForConsumer(0, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	defer cr.Result.Release()
	if cr.LastStableOffset != 6 || cr.HighWatermark != leo {
		t.Fatalf("read_committed: LSO %d hw %d, want 6 and %d", cr.LastStableOffset, cr.HighWatermark, leo)
	}
}
