package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/batch"
)

// The first acks=all append to a new partition is acknowledged without
// waiting out the followers' long polls to its leader, which lacked it
// (replica.fetch.wait.max.ms 30 s here; a leader holds a poll at most
// 5 s). The followers used to take a new partition only after the poll in
// flight ended, and to fetch it only after one more, so such an append
// waited 5 to 10 s.
func TestNewPartitionFirstAckWithoutLongPoll(t *testing.T) {
	brokers := startThreeBrokersWith(t, "[replication]\nauto.leader.rebalance.enable = false\nreplica.fetch.wait.max.ms = 30000\n")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	_, adm := newClient(t, brokers[0])
	fullISR := func(topic string) func() bool {
		return func() bool {
			for _, b := range brokers {
				tp := b.Controller().Image().Topic(topic)
				if tp == nil {
					return false
				}
				for i, p := range tp.Partitions {
					if len(p.ISR) != 3 || p.Leader < 0 || brokers[p.Leader-1].Replicas().Partition(engine.TopicPartition{Topic: topic, Partition: int32(i)}) == nil {
						return false
					}
				}
			}
			return true
		}
	}
	// Followers long-poll every leader for "a" (one partition led by
	// each node).
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "a"); err != nil {
		t.Fatal(err)
	}
	pollFor(t, "a with a full ISR on every node", 15*time.Second, fullISR("a"))
	if _, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("3")}, "b"); err != nil {
		t.Fatal(err)
	}
	pollFor(t, "b hosted with a full ISR on every node", 15*time.Second, fullISR("b"))
	bld := batch.NewBuilder(batch.CompressionNone)
	bld.Append(batch.Record{Timestamp: 1, Value: []byte("first")})
	records, err := bld.Build()
	if err != nil {
		t.Fatal(err)
	}
	for i, part := range brokers[0].Controller().Image().Topic("b").Partitions {
		p := brokers[part.Leader-1].Replicas().Partition(engine.TopicPartition{Topic: "b", Partition: int32(i)})
		start := time.Now()
		_, wait, err := p.AppendAsLeaderTimeout(records, -1, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := wait(); err != nil {
			t.Fatalf("b-%d: acks=all: %v", i, err)
		}
		took := time.Since(start)
		t.Logf("b-%d on node %d: first acks=all append acknowledged in %v", i, part.Leader, took.Round(time.Millisecond))
		// Generous for a loaded machine, and under the 5 s a leader
		// holds a follower's poll.
		if took > 3*time.Second {
			t.Errorf("b-%d: first acks=all append took %v: the followers waited out a long poll before fetching it", i, took.Round(time.Millisecond))
		}
	}
}
