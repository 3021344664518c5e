package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/replication"
)

// Followers fetch from their leaders in fetch sessions (KIP-227): once a
// cluster of three nodes is idle, every follower Fetch a leader serves is
// incremental and names no partition, however many partitions the
// follower follows there. Records still reach the followers, and with
// them the high watermark, and the Fetches go back to naming nothing.
// The figures are the leaders' counts of what the Fetches named
// (replication.ReplicaFetchStats, on /metrics too), not time.
func TestIdleReplicaFetchesNameNoPartitions(t *testing.T) {
	brokers := startThreeBrokersWith(t, "[replication]\nauto.leader.rebalance.enable = false\nreplica.fetch.wait.max.ms = 100\n")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	_, adm := newClient(t, brokers[0])
	const partitions = 30
	if _, err := adm.CreateTopic(ctx, partitions, 3, nil, "idle"); err != nil {
		t.Fatal(err)
	}
	pollFor(t, "idle with a full ISR on every node", 30*time.Second, func() bool {
		for _, b := range brokers {
			tp := b.Controller().Image().Topic("idle")
			if tp == nil {
				return false
			}
			for i, p := range tp.Partitions {
				if len(p.ISR) != 3 || p.Leader < 0 || brokers[p.Leader-1].Replicas().Partition(engine.TopicPartition{Topic: "idle", Partition: int32(i)}) == nil {
					return false
				}
			}
		}
		return true
	})
	// idleWindow waits until every leader served rounds more follower
	// Fetches, all incremental, naming no partition between them; a
	// window with some (a follower still settling in) is followed by
	// another, a bounded number of times.
	idleWindow := func(what string, rounds int64) {
		t.Helper()
		for attempt := 0; ; attempt++ {
			before := make([]replication.ReplicaFetchStats, len(brokers))
			for i, b := range brokers {
				before[i] = b.Replicas().ReplicaFetchStats()
			}
			pollFor(t, fmt.Sprintf("%d more follower fetches at every leader", rounds), 30*time.Second, func() bool {
				for i, b := range brokers {
					if b.Replicas().ReplicaFetchStats().Requests < before[i].Requests+rounds {
						return false
					}
				}
				return true
			})
			idle := true
			var report string
			for i, b := range brokers {
				after := b.Replicas().ReplicaFetchStats()
				named, reqs, incr := after.Partitions-before[i].Partitions, after.Requests-before[i].Requests, after.Incremental-before[i].Incremental
				report += fmt.Sprintf(" node %d: %d fetches, %d incremental, %d partitions named, %d sessions;", b.cfg.NodeID, reqs, incr, named, after.Sessions)
				idle = idle && named == 0 && incr == reqs && after.Sessions == 2
			}
			if idle {
				t.Logf("%s:%s", what, report)
				return
			}
			if attempt == 20 {
				t.Fatalf("%s: the followers' fetches never idled:%s", what, report)
			}
		}
	}
	idleWindow("idle", 6)
	// A record with acks=all: every replica holds it and the followers
	// learn the high watermark that covers it.
	cl, _ := newClient(t, brokers[0], kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "idle", Partition: 7, Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	tp := engine.TopicPartition{Topic: "idle", Partition: 7}
	pollFor(t, "idle-7's high watermark 1 on every replica", 30*time.Second, func() bool {
		for _, b := range brokers {
			p := b.Replicas().Partition(tp)
			if p == nil || p.Log().LogEndOffset() != 1 || p.HighWatermark() != 1 {
				return false
			}
		}
		return true
	})
	idleWindow("idle again", 6)
	// /metrics says the same: two sessions at every leader, incremental
	// fetches among its follower fetches.
	for _, b := range brokers {
		m := scrape(t, b)
		if m["wren_replication_fetch_sessions"] != 2 || m["wren_replication_follower_fetches_incremental_total"] <= 0 ||
			m["wren_replication_follower_fetches_total"] < m["wren_replication_follower_fetches_incremental_total"] ||
			m["wren_replication_follower_fetch_partitions_total"] <= 0 {
			t.Fatalf("node %d metrics: sessions %v, fetches %v, incremental %v, partitions %v", b.cfg.NodeID,
				m["wren_replication_fetch_sessions"], m["wren_replication_follower_fetches_total"],
				m["wren_replication_follower_fetches_incremental_total"], m["wren_replication_follower_fetch_partitions_total"])
		}
	}
}
