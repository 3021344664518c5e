package broker

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

// TestTxnOffsetCommitAndMarkers: on one node, raw TxnOffsetCommit
// requests leave a group's offsets pending; the group driver's
// WriteTxnMarker (what the transaction coordinator's WriteTxnMarkers will
// call for __consumer_offsets) commits or aborts them. OffsetFetch never
// shows a pending or aborted offset; with RequireStable a pending
// partition answers UNSTABLE_OFFSET_COMMIT. A restart replays an open
// transaction as pending, and its marker then commits it.
func TestTxnOffsetCommitAndMarkers(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), groupsTestConfig)
	b := startBroker(t, cfg)
	cl, adm := newClient(t, b)
	createTopic(t, adm, "t", 1, nil)
	ctx := testContext(t)
	partition := groups.PartitionFor("g", 5)

	commit := func(offset int64) {
		t.Helper()
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = "g", -1
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}}}
		wantCode(t, "commit", direct[*kmsg.OffsetCommitResponse](t, cl, req).Topics[0].Partitions[0].ErrorCode, nil)
	}
	txnCommit := func(cl *kgo.Client, pid int64, epoch int16, offset int64) {
		t.Helper()
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.SetVersion(3)
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx", "g", pid, epoch
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Offset = offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		wantCode(t, "TxnOffsetCommit", direct[*kmsg.TxnOffsetCommitResponse](t, cl, req).Topics[0].Partitions[0].ErrorCode, nil)
	}
	// fetch returns t-0's committed offset and partition error code.
	fetch := func(cl *kgo.Client, stable bool) (int64, int16) {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		req.RequireStable = stable
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = "g"
		rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}
		req.Groups = append(req.Groups, rg)
		g := direct[*kmsg.OffsetFetchResponse](t, cl, req).Groups[0]
		wantCode(t, "OffsetFetch", g.ErrorCode, nil)
		p := g.Topics[0].Partitions[0]
		return p.Offset, p.ErrorCode
	}
	want := func(what string, cl *kgo.Client, stable bool, offset int64, code *kerr.Error) {
		t.Helper()
		got, c := fetch(cl, stable)
		wantCode(t, what, c, code)
		if code == nil && got != offset {
			t.Fatalf("%s: offset %d, want %d", what, got, offset)
		}
	}

	waitLoaded := func(cl *kgo.Client) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		poll := time.NewTicker(20 * time.Millisecond)
		defer poll.Stop()
		for {
			req := kmsg.NewPtrOffsetFetchRequest()
			req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}}
			if direct[*kmsg.OffsetFetchResponse](t, cl, req).Groups[0].ErrorCode == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the group coordinator did not load")
			}
			<-poll.C // polling with a deadline: loading is a timer's work
		}
	}

	waitLoaded(cl)
	commit(5)
	// Producer 1000 commits 10 in its transaction: pending.
	txnCommit(cl, 1000, 0, 10)
	want("pending", cl, false, 5, nil)
	want("pending, RequireStable", cl, true, 0, kerr.UnstableOffsetCommit)
	if err := b.groups.WriteTxnMarker(ctx, partition, 1000, 0, 0, true); err != nil {
		t.Fatalf("COMMIT marker: %v", err)
	}
	want("committed", cl, true, 10, nil)

	// Again, aborted: 20 never shows.
	txnCommit(cl, 1000, 0, 20)
	want("pending again", cl, false, 10, nil)
	if err := b.groups.WriteTxnMarker(ctx, partition, 1000, 0, 0, false); err != nil {
		t.Fatalf("ABORT marker: %v", err)
	}
	want("aborted", cl, true, 10, nil)
	want("aborted, not stable", cl, false, 10, nil)

	// A newer epoch; a marker of the older one is refused by the log
	// and changes nothing.
	txnCommit(cl, 1000, 1, 30)
	err := b.groups.WriteTxnMarker(ctx, partition, 1000, 0, 0, true)
	if !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("marker of a fenced epoch: %v, want INVALID_PRODUCER_EPOCH", err)
	}
	want("after a fenced marker", cl, true, 0, kerr.UnstableOffsetCommit)
	if err := b.groups.WriteTxnMarker(ctx, partition, 1000, 1, 0, true); err != nil {
		t.Fatalf("COMMIT marker of epoch 1: %v", err)
	}
	want("committed at epoch 1", cl, true, 30, nil)
	if err := b.groups.WriteTxnMarker(ctx, 99, 1000, 1, 0, true); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("marker for partition 99: %v", err)
	}

	// Producer 2000 leaves a transaction open across a restart.
	txnCommit(cl, 2000, 0, 40)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2 := startBroker(t, cfg)
	cl2, _ := newClient(t, b2)
	waitLoaded(cl2)
	want("after restart", cl2, false, 30, nil)
	want("after restart, RequireStable", cl2, true, 0, kerr.UnstableOffsetCommit)
	if err := b2.groups.WriteTxnMarker(ctx, partition, 2000, 0, 0, true); err != nil {
		t.Fatalf("COMMIT marker after restart: %v", err)
	}
	want("committed after restart", cl2, true, 40, nil)
}
