package groups

import (
	"testing"

	"pgregory.net/rapid"
)

// TestTxnOffsetsProperty drives one group with random regular commits,
// transactional commits of three producers, COMMIT and ABORT markers,
// offset deletions, expiry and reloads from the simulated partition. Every
// offset value is committed once, so the value of an aborted transaction
// is recognisable: no OffsetFetch ever shows one, with or without
// RequireStable, before or after a reload; RequireStable never shows a
// partition with pending offsets; and a replay of the log gives back the
// live groups with their pending offsets.
func TestTxnOffsetsProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		e := &testEnv{t: &testing.T{}, cfg: testConfig(), partitions: 1}
		c, err := NewCoordinator(e.cfg, 0, 1, func(p string) string { return p })
		if err != nil {
			rt.Fatal(err)
		}
		if err := c.CompleteLoad(0); err != nil {
			rt.Fatal(err)
		}
		e.c = c
		next := int64(0)
		aborted := map[int64]bool{}
		// open[pid] is the values of the producer's open transaction.
		open := map[int64][]int64{}
		epochs := map[int64]int16{}
		tps := []TopicPartition{{"t1", 0}, {"t1", 1}}
		persist := func() []Response {
			rd := e.c.Ready()
			for _, rec := range rd.Records {
				e.log = append(e.log, logEntry{key: rec.EncodeKey(), value: rec.EncodeValue(), producer: rec.Producer})
			}
			return rd.Responses
		}
		reqID := uint64(0)
		for step := range rapid.IntRange(1, 60).Draw(rt, "steps") {
			reqID++
			tp := rapid.SampledFrom(tps).Draw(rt, "tp")
			switch op := rapid.IntRange(0, 7).Draw(rt, "op"); op {
			case 0:
				next++
				e.c.CommitOffsets(CommitRequest{RequestID: reqID, Group: "g", Generation: -1, RetentionTimeMs: -1,
					Offsets: []OffsetCommit{{Topic: tp.Topic, Partition: tp.Partition, Offset: next, LeaderEpoch: -1}}}, e.nowMs)
				persist()
			case 1, 2:
				pid := rapid.Int64Range(1, 3).Draw(rt, "pid")
				epoch := epochs[pid]
				if rapid.IntRange(0, 9).Draw(rt, "bump") == 0 {
					// A new epoch: the older transaction is over (its
					// offsets are dropped, as if aborted).
					epoch++
					for _, v := range open[pid] {
						aborted[v] = true
					}
					open[pid] = nil
					epochs[pid] = epoch
				}
				next++
				e.c.TxnCommitOffsets(TxnCommitRequest{RequestID: reqID, Group: "g", ProducerID: pid, ProducerEpoch: epoch, Generation: -1,
					Offsets: []OffsetCommit{{Topic: tp.Topic, Partition: tp.Partition, Offset: next, LeaderEpoch: -1}}}, e.nowMs)
				rs := persist()
				if len(rs) != 1 || rs[0].TxnCommit == nil || rs[0].TxnCommit.Partitions[0].ErrorCode != 0 {
					rt.Fatalf("step %d: txn commit refused: %+v", step, rs)
				}
				open[pid] = append(open[pid], next)
			case 3:
				pid := rapid.Int64Range(1, 3).Draw(rt, "pid")
				commit := rapid.Bool().Draw(rt, "commit")
				m := markerEntry{producer: TxnProducer{ID: pid, Epoch: epochs[pid]}, commit: commit}
				e.log = append(e.log, logEntry{marker: &m})
				e.c.CompleteTxn(TxnMarkerRequest{RequestID: reqID, ProducerID: pid, ProducerEpoch: epochs[pid], Commit: commit}, e.nowMs)
				persist()
				if !commit {
					for _, v := range open[pid] {
						aborted[v] = true
					}
				}
				open[pid] = nil
			case 4:
				e.c.DeleteOffsets(OffsetDeleteRequest{RequestID: reqID, Group: "g", Partitions: []TopicPartition{tp}}, e.nowMs)
				persist()
			case 5:
				e.nowMs += rapid.Int64Range(0, 2*e.cfg.OffsetsRetentionMs).Draw(rt, "advance")
				e.c.ExpireOffsets(e.nowMs)
				persist()
			case 6:
				nc, err := NewCoordinator(e.cfg, 0, 1, func(p string) string { return p })
				if err != nil {
					rt.Fatal(err)
				}
				if err := e.replayInto(nc); err != nil {
					rt.Fatalf("step %d: replay: %v", step, err)
				}
				if err := nc.CompleteLoad(e.nowMs); err != nil {
					rt.Fatal(err)
				}
				if d := replayDiffs(e.c, nc); len(d) > 0 {
					rt.Fatalf("step %d: replay differs: %v", step, d)
				}
				e.c = nc
				persist()
			case 7:
				stable := rapid.Bool().Draw(rt, "stable")
				e.c.FetchOffsets(FetchOffsetsRequest{RequestID: reqID, Group: "g", Partitions: tps, RequireStable: stable})
				rs := persist()
				if len(rs) != 1 || rs[0].Fetch == nil {
					rt.Fatalf("step %d: fetch answered %+v", step, rs)
				}
				for _, f := range rs[0].Fetch.Offsets {
					if aborted[f.Offset] {
						rt.Fatalf("step %d: fetch shows offset %d of an aborted transaction: %+v", step, f.Offset, rs[0].Fetch)
					}
					p := e.c.txn.pending("g", TopicPartition{f.Topic, f.Partition})
					if stable && p && (f.ErrorCode != errUnstableOffsetCommit || f.Offset != -1) {
						rt.Fatalf("step %d: stable fetch of a pending partition: %+v", step, f)
					}
					if stable && !p && f.ErrorCode != 0 {
						rt.Fatalf("step %d: stable fetch of a settled partition: %+v", step, f)
					}
				}
			}
			if e.c.HasReady() {
				rt.Fatalf("step %d: Ready left over", step)
			}
		}
	})
}
