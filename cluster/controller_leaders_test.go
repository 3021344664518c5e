package cluster

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/internal/vfs"
)

// The controller registers its own broker at start, once.
func TestControllerRegistersItsBroker(t *testing.T) {
	fsys := vfs.NewMem()
	c, err := OpenController(fsys, "/meta", ControllerConfig{NodeID: 7, Rack: "r1",
		Listeners: []BrokerListener{{Name: "CLIENT", Host: "127.0.0.1", Port: 9092}}})
	if err != nil {
		t.Fatal(err)
	}
	b, ok := c.Image().Broker(7)
	if !ok || b.Rack != "r1" || b.Fenced || len(b.Listeners) != 1 || b.Listeners[0].Port != 9092 {
		t.Fatalf("registration %+v %v", b, ok)
	}
	offset := c.Image().Offset
	c.Close()
	c, err = OpenController(fsys.Crash(vfs.CrashOptions{}), "/meta", ControllerConfig{NodeID: 7, Rack: "r1",
		Listeners: []BrokerListener{{Name: "CLIENT", Host: "127.0.0.1", Port: 9092}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Image().Offset != offset {
		t.Fatalf("an unchanged registration was written again: offset %d -> %d", offset, c.Image().Offset)
	}
}

// With three registered brokers, topics are placed over all of them and
// leadership follows fencing, controlled shutdown and ElectLeaders; an
// unclean election leaves a ledger entry that survives a restart.
func TestControllerPlacementAndLeadership(t *testing.T) {
	fsys := vfs.NewMem()
	cfg := ControllerConfig{NodeID: 1, MinInsyncReplicas: 2}
	c, err := OpenController(fsys, "/meta", cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, id := range []int32{2, 3} {
		if err := c.RegisterBroker(ctx, BrokerRegistrationRecord{BrokerID: id, Fenced: true}, true); err != nil {
			t.Fatal(err)
		}
		res, _ := c.CreateTopics(ctx, []CreateTopic{{Name: "early", NumPartitions: 1, ReplicationFactor: 3}}, true)
		if !errors.Is(res[0].Err, kerr.InvalidReplicationFactor) {
			t.Fatalf("RF 3 with broker %d fenced: %v", id, res[0].Err)
		}
		if err := c.UnfenceBroker(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.FenceBroker(ctx, 9); !errors.Is(err, kerr.BrokerIDNotRegistered) {
		t.Fatalf("fence an unknown broker: %v", err)
	}
	res, err := c.CreateTopics(ctx, []CreateTopic{
		{Name: "a", NumPartitions: 3, ReplicationFactor: 3},
		{Name: "b", NumPartitions: 2, ReplicationFactor: 2},
		{Name: "m", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{1, 4}}},
		{Name: "d", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{1, 1}}},
		{Name: "four", NumPartitions: 1, ReplicationFactor: 4},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []*kerr.Error{nil, nil, kerr.InvalidReplicaAssignment, kerr.InvalidReplicaAssignment, kerr.InvalidReplicationFactor} {
		if (want == nil) != (res[i].Err == nil) || want != nil && !errors.Is(res[i].Err, want) {
			t.Fatalf("topic %s: %v, want %v", res[i].Name, res[i].Err, want)
		}
	}
	if err := c.CreatePartitions(ctx, "b", 4, nil, false); err != nil {
		t.Fatal(err)
	}
	if err := c.CreatePartitions(ctx, "b", 5, [][]int32{{2, 9}}, false); !errors.Is(err, kerr.InvalidReplicaAssignment) {
		t.Fatalf("manual assignment with an unknown broker: %v", err)
	}
	// A new partition's ISR is all its replicas (empty logs are in sync,
	// as in Kafka); a leader shrinks it and grows it back with AlterISR.
	for _, name := range []string{"a", "b"} {
		ti := c.Image().Topic(name)
		for _, p := range ti.Partitions {
			if !slices.Equal(p.ISR, p.Replicas) || p.Leader != p.Replicas[0] {
				t.Fatalf("new partition %s-%d: ISR %v, replicas %v, leader %d", name, p.Partition, p.ISR, p.Replicas, p.Leader)
			}
			after, err := c.AlterISR(ctx, ti.ID, p.Partition, p.Leader, p.LeaderEpoch, p.PartitionEpoch, []int32{p.Leader})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.AlterISR(ctx, ti.ID, p.Partition, p.Leader, after.LeaderEpoch, after.PartitionEpoch, p.Replicas); err != nil {
				t.Fatal(err)
			}
		}
	}
	// 3 + 4 partitions: 13 replicas, 7 leaders over 3 brokers.
	replicas, leaders := map[int32]int{}, map[int32]int{}
	for _, name := range []string{"a", "b"} {
		for _, p := range c.Image().Topic(name).Partitions {
			leaders[p.Leader]++
			for _, r := range p.Replicas {
				replicas[r]++
			}
		}
	}
	if spread(replicas) > 1 || spread(leaders) > 1 || len(replicas) != 3 {
		t.Fatalf("unbalanced: replicas %v leaders %v", replicas, leaders)
	}

	// Broker 1 shuts down: it leads nothing afterwards, and every
	// partition keeps a leader from its ISR.
	if err := c.ControlledShutdown(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for _, p := range c.Image().Topic("a").Partitions {
		if p.Leader == 1 || p.Leader == NoLeader || len(p.ISR) != 2 {
			t.Fatalf("after controlled shutdown of 1: %+v", p)
		}
	}
	if err := c.RegisterBroker(ctx, BrokerRegistrationRecord{BrokerID: 1, Fenced: true}, true); err != nil {
		t.Fatal(err)
	}
	if err := c.UnfenceBroker(ctx, 1); err != nil {
		t.Fatal(err)
	}
	a := c.Image().Topic("a")
	// The leader lets 1 back into the ISR of a-0, then 1 takes back the
	// leadership it prefers.
	p := a.Partitions[0]
	if _, err := c.AlterISR(ctx, a.ID, 0, p.Leader, p.LeaderEpoch, p.PartitionEpoch, append([]int32{1}, p.ISR...)); err != nil {
		t.Fatal(err)
	}
	results, err := c.ElectLeaders(ctx, ElectPreferred, nil)
	if err != nil {
		t.Fatal(err)
	}
	preferred := 0
	for _, r := range results {
		if r.Err == nil {
			preferred++
			if tp := c.Image().Topic(r.Topic).Partitions[r.Partition]; tp.Leader != tp.Replicas[0] || r.Leader != tp.Leader {
				t.Fatalf("preferred election of %v: %+v", r, tp)
			}
		} else if !errors.Is(r.Err, kerr.PreferredLeaderNotAvailable) {
			t.Fatalf("preferred election of %v", r)
		}
	}
	if preferred == 0 || c.Image().Topic("a").Partitions[0].Leader != 1 {
		t.Fatalf("no preferred election happened: %v", results)
	}

	// b-0 loses its whole ISR; an operator forces an unclean election once
	// a replica is back.
	b0 := c.Image().Topic("b").Partitions[0]
	for _, r := range b0.Replicas {
		if err := c.FenceBroker(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if p := c.Image().Topic("b").Partitions[0]; p.Leader != NoLeader {
		t.Fatalf("b-0 with every replica fenced: %+v", p)
	}
	back := b0.Replicas[1]
	if err := c.RegisterBroker(ctx, BrokerRegistrationRecord{BrokerID: back, Fenced: true}, false); err != nil {
		t.Fatal(err)
	}
	if err := c.UnfenceBroker(ctx, back); err != nil {
		t.Fatal(err)
	}
	if p := c.Image().Topic("b").Partitions[0]; p.Leader != NoLeader {
		t.Fatalf("b-0 elected %d, which came back from an unclean shutdown, without unclean election: %+v", p.Leader, p)
	}
	results, err = c.ElectLeaders(ctx, ElectUnclean, []TopicPartition{{"b", 0}, {"b", 1}, {"nope", 0}})
	if err != nil {
		t.Fatal(err)
	}
	if results[0].Err != nil || results[0].Leader != back {
		t.Fatalf("unclean election of b-0: %+v", results[0])
	}
	if !errors.Is(results[2].Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("unknown partition: %+v", results[2])
	}
	c.Close()

	c, err = OpenController(fsys.Crash(vfs.CrashOptions{}), "/meta", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ledger := c.Image().DataLossLedger()
	if len(ledger) != 1 || ledger[0].Topic != "b" || ledger[0].Partition != 0 || ledger[0].NewLeader != back || ledger[0].Reason == "" {
		t.Fatalf("ledger after restart: %+v", ledger)
	}
}

// rejoinISR adds broker back to the ISR of every partition of topic that
// lacks it, as each partition's leader would once it caught up.
func rejoinISR(t *testing.T, c *Controller, topic string, broker int32) {
	t.Helper()
	tp := c.Image().Topic(topic)
	for _, p := range tp.Partitions {
		if slices.Contains(p.ISR, broker) || !slices.Contains(p.Replicas, broker) {
			continue
		}
		if _, err := c.AlterISR(context.Background(), tp.ID, p.Partition, p.Leader, p.LeaderEpoch, p.PartitionEpoch, append(slices.Clone(p.ISR), broker)); err != nil {
			t.Fatalf("%s-%d: broker %d back into the ISR: %v", topic, p.Partition, broker, err)
		}
	}
}

// auto.leader.rebalance: a broker fenced and back leads none of the
// partitions it prefers (imbalance 100%). The check elects it again only
// once it is in their ISRs, and only when its imbalance is above the
// per-broker percentage; a broker at or below it is left alone.
func TestControllerRebalanceLeaders(t *testing.T) {
	c, err := OpenController(vfs.NewMem(), "/meta", ControllerConfig{NodeID: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	for _, id := range []int32{2, 3} {
		if err := c.RegisterBroker(ctx, BrokerRegistrationRecord{BrokerID: id}, true); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := c.CreateTopics(ctx, []CreateTopic{{Name: "t", NumPartitions: 6, ReplicationFactor: 3}}, false); err != nil || res[0].Err != nil {
		t.Fatalf("create: %v %v", err, res)
	}
	if im := LeaderImbalance(c.Image()); im[2].Preferred != 2 || im[2].NotLeading != 0 {
		t.Fatalf("after creation broker 2's imbalance is %+v, want 2 preferred, all led", im[2])
	}
	if err := c.FenceBroker(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := c.UnfenceBroker(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if im := LeaderImbalance(c.Image()); im[2].NotLeading != 2 || im[2].Percentage() != 100 {
		t.Fatalf("after fencing broker 2's imbalance is %+v, want 2 of 2 led elsewhere", im[2])
	}
	// Out of the ISR: nothing to elect.
	if ch, err := c.RebalanceLeaders(ctx, 10); err != nil || len(ch) != 0 {
		t.Fatalf("rebalance with broker 2 out of the ISR: %d changes, %v", len(ch), err)
	}
	rejoinISR(t, c, "t", 2)
	if ch, err := c.RebalanceLeaders(ctx, 100); err != nil || len(ch) != 0 {
		t.Fatalf("rebalance at 100%%: %d changes, %v; want none (100%% is not above 100%%)", len(ch), err)
	}
	before := c.Image().Offset
	ch, err := c.RebalanceLeaders(ctx, 10)
	if err != nil || len(ch) != 2 {
		t.Fatalf("rebalance at 10%%: %d changes, %v; want 2", len(ch), err)
	}
	if c.Image().Offset != before+1 {
		t.Errorf("the elections took %d metadata entries, want one", c.Image().Offset-before)
	}
	for _, p := range c.Image().Topic("t").Partitions {
		if p.Leader != p.Replicas[0] {
			t.Errorf("t-%d: leader %d, preferred %d", p.Partition, p.Leader, p.Replicas[0])
		}
	}
	if ch, err := c.RebalanceLeaders(ctx, 0); err != nil || len(ch) != 0 {
		t.Fatalf("rebalance of a balanced cluster: %d changes, %v", len(ch), err)
	}
}
