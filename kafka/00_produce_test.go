package kafka

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/batch"
)

func produceRequest(acks int16, topic string, partition int32) *kmsg.ProduceRequest {
	r := kmsg.NewPtrProduceRequest()
	r.SetVersion(9)
	r.Acks, r.TimeoutMillis = acks, 1000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, []byte("batch")
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	return r
}

// TestProduceErrors: each fault of the partition reaches the client as
// Kafka's error code, and nothing is appended when the fault is known
// before the append.
func TestProduceErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		partition int32
		topic     string
		acks      int16
		fault     func(r *fakeReplica)
		want      *kerr.Error
		appended  int
	}{
		{name: "leader", partition: 0, acks: -1, want: nil, appended: 1},
		{name: "follower", partition: 1, acks: -1, want: kerr.NotLeaderForPartition},
		// A node whose log dir takes no writes hands its leaderships
		// away: a producer still sending to it must learn it does not
		// lead, which sends it to the new leader at once.
		{name: "follower with a full log dir", partition: 1, acks: -1, want: kerr.NotLeaderForPartition,
			fault: func(r *fakeReplica) { r.writable = fmt.Errorf("%w: 1 MiB free", engine.ErrLogDirFull) }},
		{name: "not hosted", partition: 2, acks: 1, want: kerr.UnknownTopicOrPartition},
		{name: "unknown topic", topic: "nope", acks: 1, want: kerr.UnknownTopicOrPartition},
		{name: "log dir full", partition: 0, acks: 1, want: kerr.KafkaStorageError,
			fault: func(r *fakeReplica) { r.writable = fmt.Errorf("%w: 1 MiB free", engine.ErrLogDirFull) }},
		{name: "log dir failed", partition: 0, acks: 1, want: kerr.KafkaStorageError,
			fault: func(r *fakeReplica) { r.writable = engine.ErrLogDirFailed }},
		{name: "ISR below min.insync.replicas", partition: 0, acks: -1, want: kerr.NotEnoughReplicas,
			fault: func(r *fakeReplica) {
				r.appendErr = fmt.Errorf("%w: t-0 has 1 in-sync replica(s)", kerr.NotEnoughReplicas)
			}},
		{name: "ISR shrank while waiting", partition: 0, acks: -1, want: kerr.NotEnoughReplicasAfterAppend, appended: 1,
			fault: func(r *fakeReplica) { r.ackErr = kerr.NotEnoughReplicasAfterAppend }},
		{name: "corrupt batch", partition: 0, acks: 1, want: kerr.CorruptMessage,
			fault: func(r *fakeReplica) { r.appendErr = fmt.Errorf("engine: %w", batch.ErrCorrupt) }},
		{name: "bad acks", partition: 0, acks: 2, want: kerr.InvalidRequiredAcks},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newSeamFixture(t)
			r := f.replica(0)
			if tc.fault != nil {
				tc.fault(r)
				if tc.partition != 0 {
					tc.fault(f.replica(tc.partition))
				}
			}
			topic := tc.topic
			if topic == "" {
				topic = "t"
			}
			resp := f.do(t, produceRequest(tc.acks, topic, tc.partition)).(*kmsg.ProduceResponse)
			rp := resp.Topics[0].Partitions[0]
			wantCode(t, "produce", rp.ErrorCode, tc.want)
			if tc.want == nil && rp.BaseOffset != 10 {
				t.Errorf("base offset %d, want 10 (the log end offset)", rp.BaseOffset)
			}
			if tc.want != nil && rp.BaseOffset != -1 {
				t.Errorf("base offset %d with error %s, want -1", rp.BaseOffset, codeName(rp.ErrorCode))
			}
			if len(r.appended) != tc.appended {
				t.Errorf("%d appends to t-0, want %d", len(r.appended), tc.appended)
			}
		})
	}
}

// TestProduceNamesCurrentLeader: from v10, NOT_LEADER_OR_FOLLOWER names
// the leader this node knows and its endpoint (KIP-951), so the client
// moves without a metadata refresh; before v10 the fields are absent.
func TestProduceNamesCurrentLeader(t *testing.T) {
	f := newSeamFixture(t)
	for _, v := range []int16{9, 10, 11} {
		req := produceRequest(-1, "t", 1)
		req.SetVersion(v)
		resp := f.do(t, req).(*kmsg.ProduceResponse)
		rp := resp.Topics[0].Partitions[0]
		wantCode(t, "produce", rp.ErrorCode, kerr.NotLeaderForPartition)
		if v < 10 {
			if len(resp.Brokers) != 0 || rp.CurrentLeader.LeaderID != -1 {
				t.Errorf("v%d: current leader %+v, brokers %+v: want none before v10", v, rp.CurrentLeader, resp.Brokers)
			}
			continue
		}
		if rp.CurrentLeader.LeaderID != 2 || rp.CurrentLeader.LeaderEpoch != 5 {
			t.Errorf("v%d: current leader %+v, want node 2 at epoch 5", v, rp.CurrentLeader)
		}
		if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 2 || resp.Brokers[0].Host != "node2.test" || resp.Brokers[0].Port != 9092 {
			t.Errorf("v%d: brokers %+v, want node 2 at node2.test:9092", v, resp.Brokers)
		}
	}
	// The leader itself answers without either.
	req := produceRequest(-1, "t", 0)
	req.SetVersion(11)
	resp := f.do(t, req).(*kmsg.ProduceResponse)
	if rp := resp.Topics[0].Partitions[0]; rp.ErrorCode != 0 || len(resp.Brokers) != 0 || rp.CurrentLeader.LeaderID != -1 {
		t.Errorf("leader: %+v, brokers %+v", rp, resp.Brokers)
	}
}

// TestProduceWaitsForHandOver: a produce refused for its log dir, on a
// partition with another in-sync replica, waits for the leadership to
// move off this node and then answers NOT_LEADER_OR_FOLLOWER naming the
// new leader; if it does not move within the request's timeout (at most
// 2 s), KAFKA_STORAGE_ERROR. Nothing is appended either way.
func TestProduceWaitsForHandOver(t *testing.T) {
	for _, moves := range []bool{true, false} {
		t.Run(fmt.Sprintf("moves=%t", moves), func(t *testing.T) {
			f := newSeamFixture(t)
			// Partition 0 has node 2 in its ISR too; the controller moves
			// its leadership there.
			f.addRecords(t, cluster.Record{Kind: cluster.KindPartition, Partition: &cluster.PartitionRecord{
				TopicID: testTopicID, Partition: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 5}})
			r := f.replica(0)
			r.writable = fmt.Errorf("%w: 1 MiB free", engine.ErrLogDirFull)
			var asked atomic.Int32
			r.leaderFn = func() bool {
				// The handler asks before it refuses and before it waits;
				// the move lands while it waits.
				if asked.Add(1) <= 3 || !moves {
					return true
				}
				if asked.Load() == 4 {
					f.addRecords(t, cluster.Record{Kind: cluster.KindPartition, Partition: &cluster.PartitionRecord{
						TopicID: testTopicID, Partition: 0, Replicas: []int32{1, 2}, ISR: []int32{2}, Leader: 2, LeaderEpoch: 6, PartitionEpoch: 1}})
				}
				return false
			}
			req := produceRequest(-1, "t", 0)
			req.SetVersion(11)
			req.TimeoutMillis = 200
			start := time.Now()
			resp := f.do(t, req).(*kmsg.ProduceResponse)
			took := time.Since(start)
			rp := resp.Topics[0].Partitions[0]
			if len(r.appended) != 0 {
				t.Fatalf("%d appends to a log dir that takes no writes", len(r.appended))
			}
			if !moves {
				wantCode(t, "produce", rp.ErrorCode, kerr.KafkaStorageError)
				if took < 200*time.Millisecond {
					t.Errorf("answered after %v, before the request's timeout of 200 ms", took)
				}
				return
			}
			wantCode(t, "produce", rp.ErrorCode, kerr.NotLeaderForPartition)
			if rp.CurrentLeader.LeaderID != 2 || rp.CurrentLeader.LeaderEpoch != 6 || len(resp.Brokers) != 1 {
				t.Errorf("current leader %+v, brokers %+v: want node 2 at epoch 6", rp.CurrentLeader, resp.Brokers)
			}
		})
	}
}

// TestProduceAcksZero: acks=0 gets no response, even when the append
// fails.
func TestProduceAcksZero(t *testing.T) {
	f := newSeamFixture(t)
	if resp := f.do(t, produceRequest(0, "t", 1)); resp != nil {
		t.Fatalf("acks=0 got a response: %+v", resp)
	}
}
