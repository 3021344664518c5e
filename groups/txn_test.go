package groups

import (
	"testing"
)

// TestTxnOffsetCommitConsumerGroup: in a KIP-848 consumer group a
// TxnOffsetCommit that names a member is fenced by the member's epoch
// (KIP-447: ILLEGAL_GENERATION, as Kafka answers a transactional commit),
// one that names nothing is accepted; the offsets stay pending until the
// marker.
func TestTxnOffsetCommitConsumerGroup(t *testing.T) {
	e, _, _ := twoStable(t)
	txn := func(req TxnCommitRequest) int16 {
		t.Helper()
		req.RequestID = e.request()
		req.Group, req.ProducerID = "g", 9
		req.Offsets = []OffsetCommit{{Topic: "t1", Partition: 0, Offset: 42, LeaderEpoch: -1}}
		e.c.TxnCommitOffsets(req, e.nowMs)
		return e.answer(req.RequestID).TxnCommit.Partitions[0].ErrorCode
	}
	for _, tc := range []struct {
		name string
		req  TxnCommitRequest
		want int16
	}{
		{"member epoch", TxnCommitRequest{MemberID: "a", Generation: 2}, 0},
		{"stale epoch", TxnCommitRequest{MemberID: "a", Generation: 1}, errIllegalGeneration},
		{"unknown member", TxnCommitRequest{MemberID: "zz", Generation: 2}, errUnknownMemberID},
		{"nothing named (v0-2)", TxnCommitRequest{Generation: -1}, 0},
	} {
		wantCode(t, tc.name, txn(tc.req), tc.want)
	}
	if f := e.fetch("g"); len(f) != 0 {
		t.Fatalf("pending offsets fetched: %+v", f)
	}
	r := e.request()
	e.c.CompleteTxn(TxnMarkerRequest{RequestID: r, ProducerID: 9, Commit: true}, e.nowMs)
	wantCode(t, "marker", e.answer(r).TxnMarker.ErrorCode, 0)
	if f := e.fetch("g"); len(f) != 1 || f[0].Offset != 42 {
		t.Fatalf("after the COMMIT marker: %+v", f)
	}
}
