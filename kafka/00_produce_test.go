package kafka

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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

// TestProduceAcksZero: acks=0 gets no response, even when the append
// fails.
func TestProduceAcksZero(t *testing.T) {
	f := newSeamFixture(t)
	if resp := f.do(t, produceRequest(0, "t", 1)); resp != nil {
		t.Fatalf("acks=0 got a response: %+v", resp)
	}
}
