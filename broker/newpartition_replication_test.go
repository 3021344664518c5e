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
// waiting out a follower's long poll to its leader. Here a leader holds a
// follower's poll for up to ten minutes (replica.fetch.wait.max.ms and
// Options.MaxFollowerWait), so an append that waited one out would miss
// its 60 s deadline; no time is measured. The followers used to take a
// new partition only after the poll in flight ended, and to fetch it only
// after one more; and a leader that did not host the partition yet held
// the Fetch naming it for the whole wait before answering its error.
func TestNewPartitionFirstAckWithoutLongPoll(t *testing.T) {
	brokers := startThreeBrokersOpts(t, "[replication]\nauto.leader.rebalance.enable = false\nreplica.fetch.wait.max.ms = 600000\nreplica.lag.time.max.ms = 600000\n", Options{MaxFollowerWait: 10 * time.Minute})
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
		_, wait, err := p.AppendAsLeaderTimeout(records, -1, 60*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := wait(); err != nil {
			t.Fatalf("b-%d on node %d: first acks=all append: %v (the followers waited out a long poll before fetching it)", i, part.Leader, err)
		}
	}
}
