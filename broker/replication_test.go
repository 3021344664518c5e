package broker

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/config"
)

// startThreeBrokers starts a three-node loopback cluster in this process
// and waits until its controller knows all three brokers.
func startThreeBrokers(t *testing.T) []*Broker {
	t.Helper()
	ports := freePorts(t, 3)
	var brokers []*Broker
	for id := 1; id <= 3; id++ {
		cfg, err := config.Parse(fmt.Sprintf("node%d.toml", id), []byte(quorumConfigText(id, filepath.Join(t.TempDir(), "data"), ports)))
		if err != nil {
			t.Fatal(err)
		}
		b, err := Start(cfg, Options{Logger: testLogger(t)})
		if err != nil {
			t.Fatalf("start node %d: %v", id, err)
		}
		brokers = append(brokers, b)
	}
	t.Cleanup(func() {
		for _, b := range brokers {
			b.Close()
		}
	})
	pollFor(t, "one controller known to all, three brokers registered", 20*time.Second, func() bool {
		ctrl := brokers[0].Controller().ControllerID()
		for _, b := range brokers {
			if ctrl < 0 || b.Controller().ControllerID() != ctrl || len(b.Controller().Brokers()) != 3 {
				return false
			}
		}
		return true
	})
	return brokers
}

// An idempotent acks=all producer (RF 3, min.insync.replicas 2) against
// three in-process brokers; the leader of partition 0 is closed midway. A
// new leader is elected from the ISR, every acknowledged record is read
// back exactly once from the survivors, and a consumer group's committed
// offsets survive (the coordinator moves with __consumer_offsets).
func TestReplicationFailoverNoLossNoDuplicates(t *testing.T) {
	brokers := startThreeBrokers(t)
	seeds := []string{brokers[0].Addr().String(), brokers[1].Addr().String(), brokers[2].Addr().String()}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	minISR := "2"
	if _, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": &minISR}, "orders"); err != nil {
		t.Fatal(err)
	}
	pollFor(t, "orders with a full ISR on every node", 10*time.Second, func() bool {
		for _, b := range brokers {
			tp := b.Controller().Image().Topic("orders")
			if tp == nil {
				return false
			}
			for _, p := range tp.Partitions {
				if len(p.ISR) != 3 {
					return false
				}
			}
		}
		return true
	})

	// The client listener refuses a fetch that claims a replica id.
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = 2
	req.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "orders"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	raw, err := req.RequestWith(ctx, admCl)
	if err != nil {
		t.Fatal(err)
	}
	if code := raw.Topics[0].Partitions[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("fetch claiming replica id 2 on the client listener: error %d, want TOPIC_AUTHORIZATION_FAILED", code)
	}

	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic("orders"), kgo.RecordRetries(1000), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	acked := map[string]bool{}
	produce := func(from, to int) {
		var rs []*kgo.Record
		for i := from; i < to; i++ {
			rs = append(rs, &kgo.Record{Key: []byte(strconv.Itoa(i % 7)), Value: []byte(strconv.Itoa(i))})
		}
		for _, r := range prod.ProduceSync(ctx, rs...) {
			if r.Err != nil {
				t.Fatalf("produce %s: %v", r.Record.Value, r.Err)
			}
			acked[string(r.Record.Value)] = true
		}
	}
	produce(0, 300)

	// A consumer group commits offsets before the failover.
	committed := kadm.Offsets{}
	for p := int32(0); p < 3; p++ {
		committed.Add(kadm.Offset{Topic: "orders", Partition: p, At: int64(10 + p), LeaderEpoch: -1})
	}
	if _, err := adm.CommitOffsets(ctx, "audit", committed); err != nil {
		t.Fatal(err)
	}

	im := brokers[0].Controller().Image()
	old := im.Topic("orders").Partitions[0]
	victim := brokers[old.Leader-1]
	t.Logf("closing node %d, leader of orders-0 at epoch %d (controller %d)", old.Leader, old.LeaderEpoch, brokers[0].Controller().ControllerID())
	start := time.Now()
	victim.Close()
	var survivors []*Broker
	for _, b := range brokers {
		if b != victim {
			survivors = append(survivors, b)
		}
	}
	pollFor(t, "a new leader of orders-0", 15*time.Second, func() bool {
		p := survivors[0].Controller().Image().Topic("orders").Partitions[0]
		return p.Leader >= 0 && p.Leader != old.Leader && p.LeaderEpoch > old.LeaderEpoch
	})
	t.Logf("new leader of orders-0 after %v", time.Since(start).Round(time.Millisecond))

	produce(300, 600)

	// Every acknowledged record exactly once, from the survivors.
	var survivorSeeds []string
	for _, b := range survivors {
		survivorSeeds = append(survivorSeeds, b.Addr().String())
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(survivorSeeds...), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]int{}
	for len(seen) < len(acked) && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	}
	var lost, dup []string
	for v := range acked {
		if seen[v] == 0 {
			lost = append(lost, v)
		}
	}
	for v, n := range seen {
		if n > 1 {
			dup = append(dup, v)
		}
	}
	slices.Sort(lost)
	if len(lost) > 0 || len(dup) > 0 {
		t.Fatalf("%d acknowledged records lost %v, %d duplicated %v", len(lost), lost, len(dup), dup)
	}

	admSurv := kadm.NewClient(cons)
	var got kadm.OffsetResponses
	var fetchErr error
	pollFor(t, "the group coordinator back on a survivor", 15*time.Second, func() bool {
		got, fetchErr = admSurv.FetchOffsets(ctx, "audit")
		return fetchErr == nil
	})
	for p := int32(0); p < 3; p++ {
		o, ok := got.Lookup("orders", p)
		if !ok || o.Err != nil || o.At != int64(10+p) {
			t.Fatalf("committed offset of orders-%d after the failover: %+v, want %d", p, o, 10+p)
		}
	}
}
