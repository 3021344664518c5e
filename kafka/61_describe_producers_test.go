package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine/producer"
)

// TestDescribeProducers: a partition led here lists its idempotent
// producers (no transactions: coordinator epoch and transaction start
// -1); a follower is NOT_LEADER_OR_FOLLOWER, a partition not hosted here
// UNKNOWN_TOPIC_OR_PARTITION.
func TestDescribeProducers(t *testing.T) {
	f := newSeamFixture(t)
	f.replica(0).producers = []producer.Entry{{ProducerID: 7, ProducerEpoch: 2, LastTimestamp: 1234}}
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = "t", []int32{0, 1, 2}
	req.Topics = append(req.Topics, rt)
	resp := onWire(t, f.do(t, req).(*kmsg.DescribeProducersResponse))
	ps := resp.Topics[0].Partitions
	if len(ps) != 3 {
		t.Fatalf("answer %+v, want three partitions", ps)
	}
	wantCode(t, "t-0", ps[0].ErrorCode, nil)
	if len(ps[0].ActiveProducers) != 1 {
		t.Fatalf("t-0: producers %+v, want producer 7", ps[0].ActiveProducers)
	}
	if p := ps[0].ActiveProducers[0]; p.ProducerID != 7 || p.ProducerEpoch != 2 || p.LastSequence != -1 || p.LastTimestamp != 1234 ||
		p.CoordinatorEpoch != -1 || p.CurrentTxnStartOffset != -1 {
		t.Errorf("t-0: producer %+v", p)
	}
	wantCode(t, "t-1 (follower)", ps[1].ErrorCode, kerr.NotLeaderForPartition)
	wantCode(t, "t-2 (not hosted)", ps[2].ErrorCode, kerr.UnknownTopicOrPartition)
}
