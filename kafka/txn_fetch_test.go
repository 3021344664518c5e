package kafka

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// TestFetchReadCommitted: over a real log holding an aborted, a committed
// and an open transaction, read_committed Fetch stops at the last stable
// offset and lists the aborted transaction, read_uncommitted reads to the
// high watermark as before, and ListOffsets latest under read_committed
// is the last stable offset.
func TestFetchReadCommitted(t *testing.T) {
	l, _, err := engine.Open(vfs.NewMem(), "/data/t-0", engine.TopicPartition{Topic: "t", Partition: 0}, engine.DefaultOptions(), engine.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	seqs := map[int64]int32{}
	appendBatch := func(pid int64, n int) {
		t.Helper()
		b := batch.NewBuilder(batch.CompressionNone)
		if pid >= 0 {
			b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.IsTransactional = pid, 0, seqs[pid], true
			seqs[pid] += int32(n)
		}
		for range n {
			b.Append(batch.Record{Timestamp: time.Now().UnixMilli(), Value: []byte("v")})
		}
		raw, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(raw, 5); err != nil {
			t.Fatal(err)
		}
	}
	marker := func(pid int64, commit bool) {
		t.Helper()
		if _, err := l.AppendTxnMarker(engine.TxnMarker{ProducerID: pid, Commit: commit}, 5); err != nil {
			t.Fatal(err)
		}
	}
	appendBatch(-1, 2) // 0-1
	appendBatch(1, 3)  // 2-4
	appendBatch(2, 2)  // 5-6
	marker(1, false)   // 7 ABORT
	marker(2, true)    // 8 COMMIT
	appendBatch(1, 2)  // 9-10, left open
	leo := l.LogEndOffset()

	f := newSeamFixture(t)
	r := f.partitions.replicas[engine.TopicPartition{Topic: "t", Partition: 0}]
	r.log, r.hw, r.logEnd = l, leo, leo

	fetch := func(isolation int8) kmsg.FetchResponseTopicPartition {
		t.Helper()
		req := fetchRequest(0, 5, 0)
		req.IsolationLevel = isolation
		resp := f.do(t, req).(*kmsg.FetchResponse)
		rp := resp.Topics[0].Partitions[0]
		wantCode(t, "fetch", rp.ErrorCode, nil)
		return rp
	}
	lastOffset := func(b []byte) int64 {
		var last int64 = -1
		for len(b) > 0 {
			h, err := batch.ParseHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			last = h.LastOffset()
			b = b[h.Size():]
		}
		return last
	}

	ru := fetch(0)
	if ru.HighWatermark != leo || ru.LastStableOffset != leo || len(ru.AbortedTransactions) != 0 || lastOffset(ru.RecordBatches) != leo-1 {
		t.Fatalf("read_uncommitted: hw %d lso %d aborted %v last offset %d, want %d %d none %d",
			ru.HighWatermark, ru.LastStableOffset, ru.AbortedTransactions, lastOffset(ru.RecordBatches), leo, leo, leo-1)
	}
	rc := fetch(1)
	if rc.HighWatermark != leo || rc.LastStableOffset != 9 || lastOffset(rc.RecordBatches) != 8 {
		t.Fatalf("read_committed: hw %d lso %d last offset %d, want %d 9 8", rc.HighWatermark, rc.LastStableOffset, lastOffset(rc.RecordBatches), leo)
	}
	if len(rc.AbortedTransactions) != 1 || rc.AbortedTransactions[0].ProducerID != 1 || rc.AbortedTransactions[0].FirstOffset != 2 {
		t.Fatalf("read_committed aborted transactions %+v, want producer 1 from offset 2", rc.AbortedTransactions)
	}

	for _, tc := range []struct {
		isolation int8
		want      int64
	}{{0, leo}, {1, 9}} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(7)
		req.ReplicaID, req.IsolationLevel = -1, tc.isolation
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = 0, 5, engine.LatestTimestamp
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		got := f.do(t, req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		if got.ErrorCode != 0 || got.Offset != tc.want {
			t.Fatalf("ListOffsets latest, isolation %d: offset %d (error %d), want %d", tc.isolation, got.Offset, got.ErrorCode, tc.want)
		}
	}
}
