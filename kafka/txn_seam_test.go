package kafka

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/txn"
)

// fakeTxn is the seam's TxnCoordinator over a real txn.Coordinator (the
// pure core, one partition), answered at once: the handlers' requests
// and the core's answers, without a driver.
type fakeTxn struct {
	mu       sync.Mutex
	c        *txn.Coordinator
	now      int64
	markers  []txn.Markers
	verifies int
	noTopic  bool
}

func newFakeTxn(t *testing.T) *fakeTxn {
	t.Helper()
	c, err := txn.NewCoordinator(txn.DefaultConfig(), 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	c.CompleteLoad()
	return &fakeTxn{c: c}
}

type fakeTxnCall struct{ r txn.Response }

func (c fakeTxnCall) Wait(context.Context) (txn.Response, error) { return c.r, nil }

func (f *fakeTxn) Submit(_ context.Context, _ string, input TxnInput) TxnCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	input(f.c, 1, f.now)
	rd := f.c.Ready()
	f.markers = append(f.markers, rd.Markers...)
	return fakeTxnCall{rd.Responses[0]}
}

func (f *fakeTxn) Verify(ctx context.Context, req txn.AddPartitionsRequest) (txn.Response, error) {
	f.mu.Lock()
	f.verifies++
	f.mu.Unlock()
	return f.Submit(ctx, req.TransactionalID, func(c TxnCore, id uint64, now int64) {
		req.RequestID = id
		c.AddPartitions(req, now)
	}).Wait(ctx)
}

func (f *fakeTxn) EnsureTopic() bool { return !f.noTopic }

// completeMarkers completes every transaction whose markers were asked
// for, as the driver does once they are written.
func (f *fakeTxn) completeMarkers() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, mk := range f.markers {
		f.c.MarkersWritten(mk, f.now)
	}
	f.markers = nil
	f.c.Ready()
}

func txnFixture(t *testing.T) (*seamFixture, *fakeTxn) {
	t.Helper()
	f := newSeamFixture(t)
	x := newFakeTxn(t)
	f.node.Txn = x
	return f, x
}

// initTxn runs InitProducerId for id and returns the producer id and
// epoch.
func initTxn(t *testing.T, f *seamFixture, id string) (int64, int16) {
	t.Helper()
	req := initProducerIDRequest(&id)
	req.TransactionTimeoutMillis = 60000
	resp := f.do(t, req).(*kmsg.InitProducerIDResponse)
	wantCode(t, "init "+id, resp.ErrorCode, nil)
	return resp.ProducerID, resp.ProducerEpoch
}

func addPartitions(t *testing.T, f *seamFixture, id string, pid int64, epoch int16, topic string, parts ...int32) []kmsg.AddPartitionsToTxnResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(3)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, parts
	req.Topics = append(req.Topics, rt)
	resp := f.do(t, req).(*kmsg.AddPartitionsToTxnResponse)
	return resp.Topics[0].Partitions
}

// TestTxnHandlers: InitProducerId with a transactional id takes a fresh
// producer id to the coordinator; AddPartitionsToTxn checks topics before
// the coordinator; EndTxn decides.
func TestTxnHandlers(t *testing.T) {
	f, x := txnFixture(t)
	pid, epoch := initTxn(t, f, "tx")
	if pid != 1000 || epoch != 0 {
		t.Fatalf("init: producer %d epoch %d, want 1000 epoch 0", pid, epoch)
	}
	ps := addPartitions(t, f, "tx", pid, epoch, "nope", 0)
	wantCode(t, "unknown topic", ps[0].ErrorCode, kerr.UnknownTopicOrPartition)
	ps = addPartitions(t, f, "tx", pid, epoch, "t", 0, 7)
	wantCode(t, "t/0 beside a partition that does not exist", ps[0].ErrorCode, kerr.OperationNotAttempted)
	wantCode(t, "t/7", ps[1].ErrorCode, kerr.UnknownTopicOrPartition)
	ps = addPartitions(t, f, "tx", pid, epoch, "t", 0, 1)
	wantCode(t, "t/0", ps[0].ErrorCode, nil)
	wantCode(t, "t/1", ps[1].ErrorCode, nil)
	// A zombie's epoch: PRODUCER_FENCED, INVALID_PRODUCER_EPOCH before v2.
	ps = addPartitions(t, f, "tx", pid, epoch+1, "t", 2)
	wantCode(t, "wrong epoch (v3)", ps[0].ErrorCode, kerr.ProducerFenced)

	end := kmsg.NewPtrEndTxnRequest()
	end.SetVersion(1)
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "tx", pid, epoch+1, true
	wantCode(t, "end, wrong epoch (v1)", f.do(t, end).(*kmsg.EndTxnResponse).ErrorCode, kerr.InvalidProducerEpoch)
	end.ProducerEpoch = epoch
	wantCode(t, "end", f.do(t, end).(*kmsg.EndTxnResponse).ErrorCode, nil)
	if len(x.markers) != 1 || !x.markers[0].Commit || len(x.markers[0].Partitions) != 2 {
		t.Fatalf("markers asked for: %+v", x.markers)
	}

	if m := x.c.Transaction("tx"); m == nil || m.State != txn.PrepareCommit || len(m.Partitions) != 2 {
		t.Errorf("coordinator state %+v", m)
	}
}

// TestFindCoordinatorTransaction: a transactional id's coordinator is
// COORDINATOR_NOT_AVAILABLE while __transaction_state is missing (the
// fixture's topic is never created), and an empty id is INVALID_REQUEST.
func TestFindCoordinatorTransaction(t *testing.T) {
	f, x := txnFixture(t)
	x.noTopic = true
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.SetVersion(4)
	req.CoordinatorType = coordinatorTransaction
	req.CoordinatorKeys = []string{"tx", ""}
	resp := f.do(t, req).(*kmsg.FindCoordinatorResponse)
	wantCode(t, "no topic", resp.Coordinators[0].ErrorCode, kerr.CoordinatorNotAvailable)
	wantCode(t, "empty id", resp.Coordinators[1].ErrorCode, kerr.InvalidRequest)
	x.noTopic = false
	resp = f.do(t, req).(*kmsg.FindCoordinatorResponse)
	wantCode(t, "topic created, not in this image", resp.Coordinators[0].ErrorCode, kerr.CoordinatorNotAvailable)
}

// fakeGroupMarkers records the markers for __consumer_offsets.
type fakeGroupMarkers struct {
	mu   sync.Mutex
	got  []string
	fail error
}

func (g *fakeGroupMarkers) WriteTxnMarker(_ context.Context, partition int32, pid int64, epoch int16, coordEpoch int32, commit bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.got = append(g.got, fmtMarker(partition, pid, epoch, coordEpoch, commit))
	return g.fail
}

func fmtMarker(partition int32, pid int64, epoch int16, coordEpoch int32, commit bool) string {
	return "p" + string(rune('0'+partition)) + map[bool]string{true: " commit", false: " abort"}[commit] +
		" pid" + string(rune('0'+pid)) + " epoch" + string(rune('0'+epoch)) + " coord" + string(rune('0'+coordEpoch))
}

// TestWriteTxnMarkers: the leader appends each marker (acks=all through
// the replica); a follower answers NOT_LEADER_OR_FOLLOWER, a partition not
// hosted UNKNOWN_TOPIC_OR_PARTITION; __consumer_offsets goes to the group
// coordinator's WriteTxnMarker, COORDINATOR_NOT_AVAILABLE without one or
// when it fails.
func TestWriteTxnMarkers(t *testing.T) {
	f, _ := txnFixture(t)
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = 7, 2, true, 3
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = "t", []int32{0, 1, 2}
	mo := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mo.Topic, mo.Partitions = "__consumer_offsets", []int32{4}
	m.Topics = append(m.Topics, mt, mo)
	req.Markers = append(req.Markers, m)
	codes := func() []int16 {
		var c []int16
		for _, t := range f.do(t, req).(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics {
			for _, p := range t.Partitions {
				c = append(c, p.ErrorCode)
			}
		}
		return c
	}
	got := codes()
	want := []int16{0, kerr.NotLeaderForPartition.Code, kerr.UnknownTopicOrPartition.Code, kerr.CoordinatorNotAvailable.Code}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("partition %d: %s, want %s", i, codeName(got[i]), codeName(want[i]))
		}
	}
	if mk := f.replica(0).markers; len(mk) != 1 || mk[0] != (engine.TxnMarker{ProducerID: 7, ProducerEpoch: 2, Commit: true, CoordinatorEpoch: 3}) {
		t.Errorf("t/0 markers %+v", mk)
	}
	g := &fakeGroupMarkers{}
	f.node.GroupTxnMarkers = g
	if got := codes(); got[3] != 0 {
		t.Errorf("__consumer_offsets with a group coordinator: %s", codeName(got[3]))
	}
	if len(g.got) != 1 || g.got[0] != fmtMarker(4, 7, 2, 3, true) {
		t.Errorf("group markers %v", g.got)
	}
	g.fail = errors.New("not yet")
	if got := codes(); got[3] != kerr.CoordinatorNotAvailable.Code {
		t.Errorf("__consumer_offsets, group coordinator failing: %s", codeName(got[3]))
	}
}

// txnProduce produces one transactional batch of the producer to t/0.
func txnProduce(t *testing.T, f *seamFixture, id string, pid int64, epoch int16, seq int32) int16 {
	t.Helper()
	b := batch.NewBuilder(batch.CompressionNone)
	b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.IsTransactional = pid, epoch, seq, true
	b.Append(batch.Record{Timestamp: time.Now().UnixMilli(), Value: []byte("v")})
	raw, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.TransactionID, req.Acks, req.TimeoutMillis = &id, -1, 1000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = raw
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return f.do(t, req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// TestProduceVerification (KIP-890 part 1): a transactional batch is
// appended only once the coordinator says its partition is in the
// producer's ongoing transaction, asked once per transaction and
// partition; a marker there ends the verification, so a late batch of the
// ended transaction is refused and nothing is appended.
func TestProduceVerification(t *testing.T) {
	f, x := txnFixture(t)
	pid, epoch := initTxn(t, f, "tx")
	wantCode(t, "before AddPartitionsToTxn", txnProduce(t, f, "tx", pid, epoch, 0), kerr.InvalidTxnState)
	if n := len(f.replica(0).appended); n != 0 {
		t.Fatalf("refused, yet %d appends", n)
	}
	addPartitions(t, f, "tx", pid, epoch, "t", 0)
	wantCode(t, "added", txnProduce(t, f, "tx", pid, epoch, 0), nil)
	wantCode(t, "second batch", txnProduce(t, f, "tx", pid, epoch, 1), nil)
	if x.verifies != 2 {
		t.Errorf("%d verifications, want 2 (the refused one, then once for the transaction)", x.verifies)
	}
	wantCode(t, "a zombie's epoch", txnProduce(t, f, "tx", pid, epoch-1, 2), kerr.InvalidProducerEpoch)

	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch = "tx", pid, epoch
	wantCode(t, "abort", f.do(t, end).(*kmsg.EndTxnResponse).ErrorCode, nil)
	mreq := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch = pid, epoch
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = "t", []int32{0}
	m.Topics = append(m.Topics, mt)
	mreq.Markers = append(mreq.Markers, m)
	f.do(t, mreq)
	x.completeMarkers()

	before := len(f.replica(0).appended)
	wantCode(t, "late batch of the aborted transaction", txnProduce(t, f, "tx", pid, epoch, 2), kerr.InvalidTxnState)
	if n := len(f.replica(0).appended); n != before {
		t.Errorf("refused, yet appended")
	}
}
