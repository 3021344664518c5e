package broker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/txn"
)

// txnTestExtra is the [producers] settings of the transaction tests: few
// __transaction_state partitions (quick to create) and a cleanup interval
// short enough for a timeout test.
const txnTestExtra = `
[producers]
transaction.state.log.num.partitions = 3
transaction.abort.timed.out.transaction.cleanup.interval.ms = 50
`

// txnBroker is a one-node broker for the transaction tests, with topic
// (partitions partitions).
func txnBroker(t *testing.T, topic string, partitions int32) *Broker {
	t.Helper()
	b := startBroker(t, testConfig(t, t.TempDir(), txnTestExtra))
	_, adm := newClient(t, b)
	if _, err := adm.CreateTopic(testContext(t), partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	return b
}

// readCommitted consumes topic from the start with a read_committed
// consumer until it has want records or the deadline, and returns their
// values in order of arrival.
func readCommitted(t *testing.T, b *Broker, topic string, want int) []string {
	t.Helper()
	cl, _ := newClient(t, b, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	ctx, cancel := context.WithTimeout(testContext(t), 30*time.Second)
	defer cancel()
	var got []string
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_committed: %d of %d records before the deadline: %v", len(got), want, got)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// txnState is the coordinator's state of id on b, nil if it has none.
func txnState(t *testing.T, b *Broker, id string) *txn.Metadata {
	t.Helper()
	var m *txn.Metadata
	if _, err := b.txn.Inspect(testContext(t), func(c *txn.Coordinator) {
		if got := c.Transaction(id); got != nil {
			m = got
		}
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

// waitTxnState polls until id is in state on b.
func waitTxnState(t *testing.T, b *Broker, id string, state txn.State) *txn.Metadata {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		m := txnState(t, b, id)
		if m != nil && m.State == state {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("transactional id %s: state %+v, want %v", id, m, state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTransactionsCommitAbort: franz-go's transactional producer commits
// and aborts transactions over two partitions on one node; a
// read_committed consumer sees exactly the committed records, in order.
func TestTransactionsCommitAbort(t *testing.T) {
	t.Parallel()
	b := txnBroker(t, "txn", 2)
	ctx := testContext(t)
	p, _ := newClient(t, b, kgo.TransactionalID("commit-abort"), kgo.DefaultProduceTopic("txn"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	var want []string
	for i := range 6 {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		commit := i%2 == 0
		for j := range 4 {
			v := fmt.Sprintf("abort-%d-%d", i, j)
			if commit {
				v = fmt.Sprintf("commit-%d-%d", i, j)
				want = append(want, v)
			}
			if err := p.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
				t.Fatalf("transaction %d: produce: %v", i, err)
			}
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("transaction %d: end (commit %v): %v", i, commit, err)
		}
	}
	// The last transaction is an abort: one more commit behind it, so a
	// consumer that has every committed record has read past it.
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	want = append(want, "last")
	if err := p.ProduceSync(ctx, kgo.StringRecord("last")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	got := readCommitted(t, b, "txn", len(want))
	checkSameRecords(t, got, want)
	m := waitTxnState(t, b, "commit-abort", txn.CompleteCommit)
	if m.ProducerEpoch != 0 || len(m.Partitions) != 0 {
		t.Errorf("coordinator state %+v", m)
	}
}

// checkSameRecords: got holds exactly want (in any interleaving of
// partitions) and no aborted record.
func checkSameRecords(t *testing.T, got, want []string) {
	t.Helper()
	seen := map[string]int{}
	for _, v := range got {
		if strings.HasPrefix(v, "abort") || strings.HasPrefix(v, "zombie") || strings.HasPrefix(v, "timed-out") {
			t.Errorf("read_committed consumer got %q, of an aborted transaction", v)
		}
		seen[v]++
	}
	for _, v := range want {
		if seen[v] != 1 {
			t.Errorf("committed record %q seen %d times", v, seen[v])
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d records, want %d: %v", len(got), len(want), got)
	}
}

// TestTransactionsZombieFenced: a second producer with the same
// transactional id fences the first: its open transaction is aborted,
// its commit refused, and a read_committed consumer sees only the new
// producer's records.
func TestTransactionsZombieFenced(t *testing.T) {
	t.Parallel()
	b := txnBroker(t, "zombie", 1)
	ctx := testContext(t)
	opts := []kgo.Opt{kgo.TransactionalID("zombie-id"), kgo.DefaultProduceTopic("zombie")}
	old, _ := newClient(t, b, opts...)
	if err := old.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := old.ProduceSync(ctx, kgo.StringRecord("zombie-1")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	first := txnState(t, b, "zombie-id")
	if first == nil || first.State != txn.Ongoing {
		t.Fatalf("after the first produce: %+v", first)
	}

	fresh, _ := newClient(t, b, opts...)
	if err := fresh.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := fresh.ProduceSync(ctx, kgo.StringRecord("fresh-1")).FirstErr(); err != nil {
		t.Fatalf("new producer: %v", err)
	}
	m := txnState(t, b, "zombie-id")
	if m.ProducerID != first.ProducerID || m.ProducerEpoch != first.ProducerEpoch+2 {
		t.Errorf("new producer's id %d epoch %d, want %d epoch %d (one bump fenced the old, one for the new)",
			m.ProducerID, m.ProducerEpoch, first.ProducerID, first.ProducerEpoch+2)
	}

	// The zombie: its produce and its commit are refused.
	err := old.ProduceSync(ctx, kgo.StringRecord("zombie-2")).FirstErr()
	if err == nil {
		t.Fatal("the fenced producer's produce succeeded")
	}
	if err := old.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the fenced producer's commit succeeded")
	} else if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) && !errors.Is(err, kerr.InvalidTxnState) {
		t.Logf("fenced producer's commit: %v", err)
	}
	if err := fresh.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	checkSameRecords(t, readCommitted(t, b, "zombie", 1), []string{"fresh-1"})
}

// TestTransactionTimesOut: a transaction open past its
// transaction.timeout.ms is aborted by the coordinator under a bumped
// epoch: its records are never read_committed, its producer's commit is
// refused, and the partition's last stable offset moves past it.
func TestTransactionTimesOut(t *testing.T) {
	t.Parallel()
	b := txnBroker(t, "timeout", 1)
	ctx := testContext(t)
	p, _ := newClient(t, b, kgo.TransactionalID("timeout-id"), kgo.DefaultProduceTopic("timeout"),
		kgo.TransactionTimeout(time.Second))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	// On a loaded machine the timeout may fire before the record is
	// written: then the produce itself is refused, by the fence.
	produceErr := p.ProduceSync(ctx, kgo.StringRecord("timed-out-1")).FirstErr()
	if produceErr != nil {
		t.Logf("produce within a 1 s transaction: %v", produceErr)
		if !errors.Is(produceErr, kerr.InvalidProducerEpoch) && !errors.Is(produceErr, kerr.ProducerFenced) &&
			!errors.Is(produceErr, kerr.InvalidTxnState) && !errors.Is(produceErr, kerr.ConcurrentTransactions) {
			t.Fatal(produceErr)
		}
	}
	m := waitTxnState(t, b, "timeout-id", txn.CompleteAbort)
	if m.ProducerEpoch != 1 {
		t.Errorf("aborted under epoch %d, want 1 (the producer's 0, bumped by the abort)", m.ProducerEpoch)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the commit of a timed-out transaction succeeded")
	}
	// Another producer's committed record behind it is read: the
	// aborted one does not hold the consumer back.
	q, _ := newClient(t, b, kgo.DefaultProduceTopic("timeout"))
	if err := q.ProduceSync(ctx, kgo.StringRecord("plain")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	checkSameRecords(t, readCommitted(t, b, "timeout", 1), []string{"plain"})
}

// TestTransactionTimeoutBounded: transaction.timeout.ms above
// transaction.max.timeout.ms is INVALID_TRANSACTION_TIMEOUT.
func TestTransactionTimeoutBounded(t *testing.T) {
	t.Parallel()
	b := startBroker(t, testConfig(t, t.TempDir(), txnTestExtra+"transaction.max.timeout.ms = 1000\n"))
	cl, _ := newClient(t, b)
	id := "bounded"
	var resp *kmsg.InitProducerIDResponse
	deadline := time.Now().Add(30 * time.Second)
	for {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = &id, 1001
		resp = direct[*kmsg.InitProducerIDResponse](t, cl, req)
		if resp.ErrorCode != kerr.CoordinatorNotAvailable.Code && resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code &&
			resp.ErrorCode != kerr.NotCoordinator.Code || time.Now().After(deadline) {
			break
		}
		// The topic is created on the first FindCoordinator.
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorType, fc.CoordinatorKeys = 1, []string{id}
		direct[*kmsg.FindCoordinatorResponse](t, cl, fc)
		time.Sleep(20 * time.Millisecond)
	}
	wantCode(t, "timeout above the max", resp.ErrorCode, kerr.InvalidTransactionTimeout)
}

// TestLateProduceAfterAbortRefused (KAFKA-17754, KIP-890 part 1): a
// produce of a transaction's producer that arrives after the transaction
// was aborted, with the next sequence and the same epoch, is refused
// with INVALID_TXN_STATE: the partition leader asks the coordinator,
// which knows the partition is in no ongoing transaction. Without the
// verification the batch would open a transaction no coordinator knows,
// holding the partition's last stable offset until it timed out, and
// join the producer's next transaction there.
func TestLateProduceAfterAbortRefused(t *testing.T) {
	t.Parallel()
	b := txnBroker(t, "late", 1)
	ctx := testContext(t)
	p, _ := newClient(t, b, kgo.TransactionalID("late-id"), kgo.DefaultProduceTopic("late"))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, kgo.StringRecord("abort-1")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	m := txnState(t, b, "late-id")
	if err := p.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	waitTxnState(t, b, "late-id", txn.CompleteAbort)

	// The late batch: sequence 1 follows the aborted one's 0.
	bb := batch.NewBuilder(batch.CompressionNone)
	bb.ProducerID, bb.ProducerEpoch, bb.BaseSequence, bb.IsTransactional = m.ProducerID, m.ProducerEpoch, 1, true
	bb.Append(batch.Record{Timestamp: time.Now().UnixMilli(), Value: []byte("abort-late")})
	raw, err := bb.Build()
	if err != nil {
		t.Fatal(err)
	}
	cl, _ := newClient(t, b)
	req := kmsg.NewPtrProduceRequest()
	id := "late-id"
	req.TransactionID, req.Acks, req.TimeoutMillis = &id, -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "late"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = raw
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := direct[*kmsg.ProduceResponse](t, cl, req)
	wantCode(t, "late produce", resp.Topics[0].Partitions[0].ErrorCode, kerr.InvalidTxnState)

	// The same batch without a transactional id: refused as Kafka does.
	req.TransactionID = nil
	resp = direct[*kmsg.ProduceResponse](t, cl, req)
	wantCode(t, "transactional batch without a transactional id", resp.Topics[0].Partitions[0].ErrorCode, kerr.TransactionalIDAuthorizationFailed)

	// Nothing is open on the partition: the last stable offset is the
	// high watermark, and a committed record behind is read.
	q, _ := newClient(t, b, kgo.DefaultProduceTopic("late"))
	if err := q.ProduceSync(ctx, kgo.StringRecord("plain")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	checkSameRecords(t, readCommitted(t, b, "late", 1), []string{"plain"})
}

// txnThreeNodes is a three-node cluster for the transaction tests, with
// topic (RF 3, partitions partitions).
func txnThreeNodes(t *testing.T, topic string, partitions int32) ([]*Broker, []string) {
	t.Helper()
	brokers := startThreeNodes(t, func(_ int, text string) string { return text + txnTestExtra }, nil)
	_, adm := threeNodeAdmin(t, brokers)
	createReplicatedTopic(t, brokers, adm, topic, partitions)
	var seeds []string
	for _, b := range brokers {
		seeds = append(seeds, b.Addr().String())
	}
	return brokers, seeds
}

// readCommittedFrom is readCommitted through the given seeds.
func readCommittedFrom(t *testing.T, seeds []string, topic string, want int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond), kgo.RequestTimeoutOverhead(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(testContext(t), 45*time.Second)
	defer cancel()
	var got []string
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_committed: %d of %d records before the deadline: %v", len(got), want, got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// txnCoordinatorOf is the broker leading id's __transaction_state
// partition, by the committed image.
func txnCoordinatorOf(t *testing.T, brokers []*Broker, id string) *Broker {
	t.Helper()
	var leader int32 = -1
	pollFor(t, "a leader of the transactional id's partition", 30*time.Second, func() bool {
		tt := brokers[0].Controller().Image().Topic(txn.StateTopic)
		if tt == nil {
			return false
		}
		leader = tt.Partitions[txn.PartitionFor(id, int32(len(tt.Partitions)))].Leader
		return leader > 0
	})
	for _, b := range brokers {
		if b.cfg.NodeID == leader {
			return b
		}
	}
	t.Fatalf("no broker %d", leader)
	return nil
}

// TestTransactionsThreeNodes: franz-go's transactional producer on three
// nodes (RF 3): committed transactions over three partitions are read by
// a read_committed consumer exactly, aborted ones never; markers go to
// partition leaders on other nodes than the coordinator.
func TestTransactionsThreeNodes(t *testing.T) {
	t.Parallel()
	brokers, seeds := txnThreeNodes(t, "txn3", 3)
	ctx := testContext(t)
	p, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID("three"), kgo.DefaultProduceTopic("txn3"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RequestTimeoutOverhead(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var want []string
	for i := range 4 {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		commit := i%2 == 1
		for j := range 3 {
			v := fmt.Sprintf("abort-%d-%d", i, j)
			if commit {
				v = fmt.Sprintf("commit-%d-%d", i, j)
				want = append(want, v)
			}
			if err := p.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
				t.Fatalf("transaction %d: produce: %v", i, err)
			}
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("transaction %d: end (commit %v): %v", i, commit, err)
		}
	}
	checkSameRecords(t, readCommittedFrom(t, seeds, "txn3", len(want)), want)

	// A late batch of the last (committed) transaction, sent to the
	// leader of a partition on another node than the coordinator: the
	// leader asks the coordinator there (AddPartitionsToTxn v4+,
	// verifyOnly), which refuses it.
	coord := txnCoordinatorOf(t, brokers, "three")
	m := txnState(t, coord, "three")
	im := coord.Controller().Image()
	var leader *Broker
	var partition int32
	for i, p := range im.Topic("txn3").Partitions {
		if p.Leader != coord.cfg.NodeID {
			for _, b := range brokers {
				if b.cfg.NodeID == p.Leader {
					leader, partition = b, int32(i)
				}
			}
			break
		}
	}
	if leader == nil {
		t.Fatal("every partition is led by the coordinator's node")
	}
	wantCode(t, "late batch, verified across nodes", lateProduce(t, leader, "three", "txn3", partition, m.ProducerID, m.ProducerEpoch, 100),
		kerr.InvalidTxnState)
}

// lateProduce sends one transactional batch of the producer straight to
// b, the partition's leader, and returns the partition's error code.
func lateProduce(t *testing.T, b *Broker, id, topic string, partition int32, pid int64, epoch int16, seq int32) int16 {
	t.Helper()
	bb := batch.NewBuilder(batch.CompressionNone)
	bb.ProducerID, bb.ProducerEpoch, bb.BaseSequence, bb.IsTransactional = pid, epoch, seq, true
	bb.Append(batch.Record{Timestamp: time.Now().UnixMilli(), Value: []byte("abort-late")})
	raw, err := bb.Build()
	if err != nil {
		t.Fatal(err)
	}
	cl, _ := newClient(t, b)
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID, req.Acks, req.TimeoutMillis = &id, -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, raw
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := cl.Broker(int(b.cfg.NodeID)).Request(testContext(t), req)
	if err != nil {
		// The client knows the node once it fetched metadata.
		if _, merr := cl.Request(testContext(t), kmsg.NewPtrMetadataRequest()); merr != nil {
			t.Fatal(merr)
		}
		if resp, err = cl.Broker(int(b.cfg.NodeID)).Request(testContext(t), req); err != nil {
			t.Fatal(err)
		}
	}
	return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// TestTransactionCoordinatorFailover (F25): the coordinator decides a
// commit (PrepareCommit durable, EndTxn answered) and stops before any
// marker is written; the node is closed. The new leader of the
// transactional id's __transaction_state partition loads it, finds the
// transaction prepared, writes its markers and completes it: every
// record of the transaction is read_committed.
func TestTransactionCoordinatorFailover(t *testing.T) {
	t.Parallel()
	brokers, seeds := txnThreeNodes(t, "failover", 3)
	ctx := testContext(t)
	for _, b := range brokers {
		b.txnPeers.held.Store(true)
	}
	p, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID("failover-id"), kgo.DefaultProduceTopic("failover"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RequestTimeoutOverhead(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	var want []string
	for j := range 6 {
		v := fmt.Sprintf("commit-%d", j)
		want = append(want, v)
		if err := p.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	coord := txnCoordinatorOf(t, brokers, "failover-id")
	if m := txnState(t, coord, "failover-id"); m == nil || m.State != txn.PrepareCommit || len(m.Partitions) != 3 {
		t.Fatalf("before the failover: %+v, want PrepareCommit over 3 partitions", m)
	}
	var rest []*Broker
	var restSeeds []string
	for _, b := range brokers {
		if b != coord {
			b.txnPeers.held.Store(false)
			rest = append(rest, b)
			restSeeds = append(restSeeds, b.Addr().String())
		}
	}
	if err := coord.Close(); err != nil {
		t.Logf("close the coordinator's node: %v", err)
	}
	pollFor(t, "the transaction completed by the new coordinator", 45*time.Second, func() bool {
		for _, b := range rest {
			if m := txnState(t, b, "failover-id"); m != nil && m.State == txn.CompleteCommit {
				return true
			}
		}
		return false
	})
	checkSameRecords(t, readCommittedFrom(t, restSeeds, "failover", len(want)), want)
}

// TestTransactionsCompactedTopic: a compacted topic takes part in
// transactions (the cleaner follows Kafka's rules for them): a committed
// value of a key is read_committed, a later aborted one of the same key
// never.
func TestTransactionsCompactedTopic(t *testing.T) {
	t.Parallel()
	b := startBroker(t, testConfig(t, t.TempDir(), txnTestExtra))
	_, adm := newClient(t, b)
	ctx := testContext(t)
	compact := "compact"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": &compact}, "compacted"); err != nil {
		t.Fatal(err)
	}
	p, _ := newClient(t, b, kgo.TransactionalID("compacted-id"), kgo.DefaultProduceTopic("compacted"))
	for _, v := range []string{"commit-1", "abort-1"} {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := p.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(strings.HasPrefix(v, "commit"))); err != nil {
			t.Fatal(err)
		}
	}
	q, _ := newClient(t, b, kgo.DefaultProduceTopic("compacted"))
	if err := q.ProduceSync(ctx, &kgo.Record{Key: []byte("j"), Value: []byte("plain")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	checkSameRecords(t, readCommitted(t, b, "compacted", 2), []string{"commit-1", "plain"})
}

// TestTransactionsConsumeTransformProduce: franz-go's GroupTransactSession
// reads a topic in a group, writes each record to another topic and
// commits the group's offsets in the same transaction (AddOffsetsToTxn,
// TxnOffsetCommit, the markers on __consumer_offsets through the group
// coordinator): the output is read_committed exactly once and the offsets
// are committed with it.
func TestTransactionsConsumeTransformProduce(t *testing.T) {
	t.Parallel()
	b := startBroker(t, testConfig(t, t.TempDir(), txnTestExtra+"[groups]\ngroup.initial.rebalance.delay.ms = 0\n"))
	_, adm := newClient(t, b)
	ctx := testContext(t)
	for _, topic := range []string{"src", "dst"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	in, _ := newClient(t, b, kgo.DefaultProduceTopic("src"))
	var want []string
	for i := range 10 {
		if err := in.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("r%d", i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("out-r%d", i))
	}
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(b.Addr().String()), kgo.TransactionalID("ctp"),
		kgo.ConsumerGroup("ctp-group"), kgo.ConsumeTopics("src"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DefaultProduceTopic("dst"), kgo.RequireStableFetchOffsets())
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	done := 0
	for done < 10 {
		fs := sess.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d of 10 records consumed", done)
		}
		if fs.NumRecords() == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			sess.Produce(ctx, kgo.StringRecord("out-"+string(r.Value)), func(_ *kgo.Record, err error) {
				if err != nil {
					t.Error(err)
				}
			})
			done++
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil || !committed {
			t.Fatalf("End: committed %v, %v", committed, err)
		}
	}
	checkSameRecords(t, readCommitted(t, b, "dst", len(want)), want)
	pollFor(t, "the group's offset committed with the transaction", 30*time.Second, func() bool {
		os, err := adm.FetchOffsets(ctx, "ctp-group")
		if err != nil {
			return false
		}
		o, ok := os.Lookup("src", 0)
		return ok && o.Err == nil && o.At == 10
	})
}
