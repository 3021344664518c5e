package replication

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
	"github.com/wren-broker/wren/wire"
)

func oneRecord(t *testing.T) []byte {
	t.Helper()
	b := batch.NewBuilder(batch.CompressionNone)
	b.Append(batch.Record{Timestamp: 1, Value: []byte("v")})
	raw, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// The high watermark follows what the flush policy makes durable: under
// ack it moves only once the fdatasync covering an append returned; under
// interval once the append is written. Consumers read only below it.
func TestHighWatermarkFollowsFlushPolicy(t *testing.T) {
	for _, policy := range []engine.FlushPolicy{engine.FlushAck, engine.FlushInterval} {
		opts := engine.DefaultOptions()
		opts.FlushPolicy = policy
		fs := newSyncGateFS()
		l, _, err := engine.Open(fs, "/d/t-0", engine.TopicPartition{Topic: "t"}, opts, engine.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := newPartition(engine.TopicPartition{Topic: "t"}, l, nil, l.DurableOffset())
		if _, _, err := p.AppendAsLeader(oneRecord(t), -1); !errors.Is(err, kerr.NotLeaderForPartition) {
			t.Fatalf("%v: append on a non-leader: %v", policy, err)
		}
		if err := p.becomeLeader(3); err != nil {
			t.Fatal(err)
		}
		changed := p.HighWatermarkChanged()
		if policy == engine.FlushAck {
			// The append's fdatasync starts at once: hold it.
			fs.hold(t)
		}
		info, wait, err := p.AppendAsLeader(oneRecord(t), -1)
		if err != nil {
			t.Fatal(err)
		}
		if info.FirstOffset != 0 {
			t.Fatalf("first offset %d", info.FirstOffset)
		}
		if policy == engine.FlushAck {
			within(t, fs.entered, "fdatasync of the append")
			if hw := p.HighWatermark(); hw != 0 {
				t.Fatalf("ack: high watermark %d before the fdatasync", hw)
			}
			fs.release()
		}
		if err := wait(); err != nil {
			t.Fatal(err)
		}
		if p.HighWatermark() != 1 {
			t.Fatalf("%v: high watermark %d after the append completed", policy, p.HighWatermark())
		}
		select {
		case <-changed:
		default:
			t.Fatalf("%v: the high watermark moved without waking fetchers", policy)
		}
		r, hw, _, err := p.ReadForConsumer(0, 1<<20, true)
		if err != nil || hw != 1 || r.Slice.Size == 0 {
			t.Fatalf("%v: consumer read: hw %d size %d %v", policy, hw, r.Slice.Size, err)
		}
		r.Release()
		if ep := l.LeaderEpochs(); len(ep) != 1 || ep[0] != (engine.EpochEntry{Epoch: 3, StartOffset: 0}) {
			t.Fatalf("%v: epochs %v", policy, ep)
		}
		l.Close()
	}
}

// TestLeadershipMoves: a replica that stops leading refuses appends, a
// change at an older epoch is refused and changes nothing, and leading
// again stamps the new epoch on what is appended next.
func TestLeadershipMoves(t *testing.T) {
	l, _, err := engine.Open(vfs.NewMem(), "/d/t-0", engine.TopicPartition{Topic: "t"}, engine.DefaultOptions(), engine.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := newPartition(engine.TopicPartition{Topic: "t"}, l, nil, l.DurableOffset())
	if err := p.becomeLeader(3); err != nil {
		t.Fatal(err)
	}
	append1 := func(want error) {
		t.Helper()
		_, wait, err := p.AppendAsLeader(oneRecord(t), -1)
		if !errors.Is(err, want) {
			t.Fatalf("append: %v, want %v", err, want)
		}
		if err == nil {
			if err := wait(); err != nil {
				t.Fatal(err)
			}
		}
	}
	append1(nil)

	if err := p.becomeLeaderOrFollower(false, 4); err != nil {
		t.Fatal(err)
	}
	if lead, epoch := p.Leader(); lead || epoch != 4 {
		t.Fatalf("after following at 4: leader %v epoch %d", lead, epoch)
	}
	append1(kerr.NotLeaderForPartition)
	if p.HighWatermark() != 1 {
		t.Fatalf("follower's high watermark %d, want 1", p.HighWatermark())
	}

	// A late change (an image from before the move) is stale.
	if err := p.becomeLeaderOrFollower(true, 3); !errors.Is(err, ErrStaleLeaderEpoch) {
		t.Fatalf("leading again at the old epoch: %v", err)
	}
	if lead, epoch := p.Leader(); lead || epoch != 4 {
		t.Fatalf("after a stale change: leader %v epoch %d", lead, epoch)
	}
	append1(kerr.NotLeaderForPartition)

	if err := p.becomeLeaderOrFollower(true, 5); err != nil {
		t.Fatal(err)
	}
	append1(nil)
	want := []engine.EpochEntry{{Epoch: 3, StartOffset: 0}, {Epoch: 5, StartOffset: 1}}
	if ep := l.LeaderEpochs(); len(ep) != 2 || ep[0] != want[0] || ep[1] != want[1] {
		t.Fatalf("epochs %v, want %v", ep, want)
	}
}

// An append that read the leadership just before it changed is refused
// where it commits: it never lands as the old leader (the old code read
// leader and epoch, then appended outside the lock).
func TestNoAppendAsDeposedLeader(t *testing.T) {
	opts := engine.DefaultOptions()
	opts.FlushPolicy = engine.FlushInterval
	l, _, err := engine.Open(vfs.NewMem(), "/d/t-0", engine.TopicPartition{Topic: "t"}, opts, engine.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := newPartition(engine.TopicPartition{Topic: "t"}, l, nil, l.DurableOffset())
	if err := p.becomeLeader(1); err != nil {
		t.Fatal(err)
	}
	// The race, step by step: leadership read at epoch 1, then the change
	// to a follower at epoch 2, then the append at epoch 1.
	_, epoch := p.Leader()
	if err := p.becomeLeaderOrFollower(false, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(oneRecord(t), epoch); !errors.Is(err, engine.ErrFencedLeaderEpoch) {
		t.Fatalf("append as the deposed leader: %v", err)
	}
	// And as a new leader at a newer epoch: the old epoch is fenced too.
	if err := p.becomeLeader(3); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(oneRecord(t), 2); !errors.Is(err, engine.ErrFencedLeaderEpoch) {
		t.Fatalf("append at a stale epoch: %v", err)
	}
	if _, _, err := p.AppendAsLeader(oneRecord(t), 1); err != nil {
		t.Fatalf("append as the leader: %v", err)
	}

	// Under concurrency: appenders race leadership changes; every batch
	// in the log carries the epoch that led when it committed, so epochs
	// never go back along the log, and nothing lands while not leading.
	const changes = 200
	stop := make(chan struct{})
	done := make(chan struct{})
	for a := 0; a < 4; a++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				select {
				case <-stop:
					return
				default:
				}
				p.AppendAsLeader(oneRecord(t), 1)
			}
		}()
	}
	epoch = 3
	for i := 0; i < changes; i++ {
		epoch++
		lead := i%2 == 0
		if err := p.becomeLeaderOrFollower(lead, epoch); err != nil {
			t.Fatal(err)
		}
		if !lead {
			leo := l.LogEndOffset()
			if _, _, err := p.AppendAsLeader(oneRecord(t), 1); err == nil {
				t.Fatalf("append accepted while not leading at epoch %d", epoch)
			}
			if l.LogEndOffset() != leo {
				t.Fatalf("the log grew from %d to %d while not leading", leo, l.LogEndOffset())
			}
		}
	}
	close(stop)
	for a := 0; a < 4; a++ {
		<-done
	}
	raw, err := l.ReadBatches(0, 1<<30, l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	last := int32(-1)
	for len(raw) > 0 {
		h, err := batch.ParseHeader(raw)
		if err != nil {
			t.Fatal(err)
		}
		if h.PartitionLeaderEpoch < last || h.PartitionLeaderEpoch%2 == 1 && h.PartitionLeaderEpoch > 3 {
			t.Fatalf("batch at %d carries epoch %d after %d (odd epochs above 3 never led)", h.BaseOffset, h.PartitionLeaderEpoch, last)
		}
		last = h.PartitionLeaderEpoch
		raw = raw[h.Size():]
	}
}

// Under flush policy ack a follower's fetch reads only what the leader
// made durable: a leader that crashes and leads again at the same leader
// epoch (restarted before the controller fenced it) must not find a
// follower holding records of that epoch it lost, or its next appends
// diverge from them below the high watermark (found by the replication
// simulator, seed 1959 of TestReplicationSim, scenario F14).
func TestFollowerFetchReadsOnlyDurable(t *testing.T) {
	for _, policy := range []engine.FlushPolicy{engine.FlushAck, engine.FlushInterval} {
		opts := engine.DefaultOptions()
		opts.FlushPolicy = policy
		fs := newSyncGateFS()
		l, _, err := engine.Open(fs, "/d/t-0", engine.TopicPartition{Topic: "t"}, opts, engine.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := newPartition(engine.TopicPartition{Topic: "t"}, l, nil, 0)
		p.setMetadata(0, []int32{-1, 2}, []int32{-1, 2}, 1, 1000)
		if err := p.becomeLeader(1); err != nil {
			t.Fatal(err)
		}
		fetch := func() int {
			req := kmsg.NewPtrFetchRequest()
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 1 << 20
			req.Topics = []kmsg.FetchRequestTopic{{Topic: "t", Partitions: []kmsg.FetchRequestTopicPartition{rp}}}
			targets := []fetchTargetTopic{{topic: "t", parts: []replicaFetchTarget{{p: p, part: rp, err: p.followerFetch(2, 0, 1, nil)}}}}
			fr := (&Manager{}).readForFollower(2, req, fetchContext{}, targets)
			defer fr.release()
			resp := decodeFetch(t, wire.EncodeFetchResponse(ReplicaFetchVersion, 0, 0, 0, fr.topics))
			if c := resp.Topics[0].Partitions[0].ErrorCode; c != 0 {
				t.Fatalf("%v: fetch error %d", policy, c)
			}
			return len(resp.Topics[0].Partitions[0].RecordBatches)
		}
		appended, _ := p.appendedOrHighWatermarkChanged()
		if policy == engine.FlushAck {
			// The append's fdatasync starts at once: hold it.
			fs.hold(t)
		}
		_, wait, err := p.AppendAsLeaderTimeout(oneRecord(t), 1, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if policy == engine.FlushAck {
			within(t, fs.entered, "fdatasync of the append")
			if n := fetch(); n != 0 {
				t.Fatalf("ack: a follower read %d bytes before the leader's fdatasync", n)
			}
			select {
			case <-appended:
				t.Fatal("ack: followers woken before the append was durable, when they can read nothing of it")
			default:
			}
			fs.release()
			within(t, appended, "wake of waiting followers when the append became durable")
		} else {
			within(t, appended, "wake of waiting followers at the append")
			if n := fetch(); n == 0 {
				t.Fatal("interval: a follower read nothing of a written append")
			}
		}
		if err := wait(); err != nil {
			t.Fatal(err)
		}
		if n := fetch(); n == 0 {
			t.Fatalf("%v: a follower read nothing after the fdatasync", policy)
		}
	}
}

// decodeFetch reads a replica Fetch response body, file ranges and all,
// as a follower does.
func decodeFetch(t *testing.T, chunks []wire.Chunk) *kmsg.FetchResponse {
	t.Helper()
	b, err := wire.AppendTo(nil, chunks)
	if err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(ReplicaFetchVersion)
	if err := resp.ReadFrom(b); err != nil {
		t.Fatalf("a follower cannot read the Fetch response: %v", err)
	}
	return resp
}

// TestRestartedLeaderHighWatermarkBelowEpochStart: a leader that restarts
// with records in its log and a high watermark checkpoint behind them (a
// SIGKILL between checkpoints leaves an old one, or none: 0) leads at a
// new epoch whose start offset is its log end. Its high watermark stays
// at the checkpoint until its followers fetch up to that end, and
// LeaderState says so (epoch start above the high watermark), which is
// what ListOffsets answers OFFSET_NOT_AVAILABLE for rather than the stale
// high watermark; once the followers fetched, the high watermark covers
// every record and the epoch start is below it.
func TestRestartedLeaderHighWatermarkBelowEpochStart(t *testing.T) {
	fsys := vfs.NewMem()
	tp := engine.TopicPartition{Topic: "t"}
	l, _, err := engine.Open(fsys, "/d/t-0", tp, engine.DefaultOptions(), engine.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := newPartition(tp, l, nil, l.DurableOffset())
	if err := p.becomeLeader(3); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_, wait, err := p.AppendAsLeader(oneRecord(t), -1)
		if err != nil {
			t.Fatal(err)
		}
		if err := wait(); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	for _, checkpoint := range []int64{0, 1} {
		l, _, err := engine.Open(fsys, "/d/t-0", tp, engine.DefaultOptions(), engine.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if leo := l.LogEndOffset(); leo != 3 {
			t.Fatalf("log end offset %d after the restart, want 3", leo)
		}
		hooks := &partitionHooks{nodeID: 1, now: time.Now}
		p := newPartition(tp, l, hooks, checkpoint)
		p.setMetadata(1, []int32{1, 2, 3}, []int32{1, 2, 3}, 2, 30000)
		if err := p.becomeLeader(4); err != nil {
			t.Fatal(err)
		}
		leader, epoch, hw, epochStart := p.LeaderState()
		if !leader || epoch != 4 || hw != checkpoint || epochStart != 3 {
			t.Fatalf("checkpoint %d: restarted leader: leader %v epoch %d high watermark %d epoch start %d; want true 4 %d 3",
				checkpoint, leader, epoch, hw, epochStart, checkpoint)
		}
		// One follower is not enough while the ISR holds three: the high
		// watermark is the minimum over the ISR.
		if code := p.followerFetch(2, 3, 4, nil); code != 0 {
			t.Fatalf("follower 2's fetch: error %d", code)
		}
		if _, _, hw, epochStart := p.LeaderState(); hw >= epochStart {
			t.Fatalf("checkpoint %d: high watermark %d reached the epoch start %d with one follower of two", checkpoint, hw, epochStart)
		}
		if code := p.followerFetch(3, 3, 4, nil); code != 0 {
			t.Fatalf("follower 3's fetch: error %d", code)
		}
		if _, _, hw, epochStart := p.LeaderState(); hw != 3 || epochStart > hw {
			t.Fatalf("checkpoint %d: after both followers fetched: high watermark %d, epoch start %d; want 3 and at most 3",
				checkpoint, hw, epochStart)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A replica fetch naming many partitions, each holding a batch, stays
// within the response's MaxBytes but for the first batch: once the budget
// is spent the other partitions answer without records, and the follower
// asks again next round.
func TestReplicaFetchStaysWithinResponseBytes(t *testing.T) {
	const partitions = 50
	req := kmsg.NewPtrFetchRequest()
	req.MaxBytes = 1000
	var targets []replicaFetchTarget
	var batchBytes int
	t1 := kmsg.NewFetchRequestTopic()
	t1.Topic = "t"
	for i := range int32(partitions) {
		tp := engine.TopicPartition{Topic: "t", Partition: i}
		opts := engine.DefaultOptions()
		opts.FlushPolicy = engine.FlushInterval
		l, _, err := engine.Open(vfs.NewMem(), fmt.Sprintf("/d/t-%d", i), tp, opts, engine.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := newPartition(tp, l, nil, 0)
		p.setMetadata(0, []int32{-1, 2}, []int32{-1, 2}, 1, 1000)
		if err := p.becomeLeader(1); err != nil {
			t.Fatal(err)
		}
		if _, _, err := p.AppendAsLeaderTimeout(oneRecord(t), 1, time.Second); err != nil {
			t.Fatal(err)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = i
		rp.PartitionMaxBytes = 1 << 20
		t1.Partitions = append(t1.Partitions, rp)
		targets = append(targets, replicaFetchTarget{p: p, part: rp, err: p.followerFetch(2, 0, 1, nil)})
	}
	req.Topics = []kmsg.FetchRequestTopic{t1}
	fr := (&Manager{}).readForFollower(2, req, fetchContext{}, []fetchTargetTopic{{topic: req.Topics[0].Topic, parts: targets}})
	defer fr.release()
	resp := decodeFetch(t, wire.EncodeFetchResponse(ReplicaFetchVersion, 0, 0, 0, fr.topics))
	total, with := 0, 0
	for _, rp := range resp.Topics[0].Partitions {
		if rp.ErrorCode != 0 {
			t.Fatalf("partition %d: error %d", rp.Partition, rp.ErrorCode)
		}
		if n := len(rp.RecordBatches); n > 0 {
			total += n
			with++
			batchBytes = n
		}
	}
	if with == 0 || with == partitions || total > int(req.MaxBytes)+batchBytes {
		t.Fatalf("%d of %d partitions answered with records, %d bytes in all; want some but not all, at most MaxBytes %d plus one batch of %d",
			with, partitions, total, req.MaxBytes, batchBytes)
	}
}
