package broker

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/internal/vfs"
)

// DeleteRecords on three replicas: the followers take the leader's log
// start offset from its fetch responses (deleting their segments below
// it and checkpointing it), so once the leader is gone the new leader
// answers ListOffsets earliest at or above the deleted offset and a fetch
// below it with OFFSET_OUT_OF_RANGE. Before followers followed, the
// deleted records came back with the new leader.
func TestDeleteRecordsFollowersFollow(t *testing.T) {
	brokers := startThreeBrokersWith(t, "[replication]\nauto.leader.rebalance.enable = false\n")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	_, adm := newClient(t, brokers[0])
	// 1 MiB segments, 64 KiB records: about 16 records a segment, so
	// deleting below 40 deletes whole segments on every replica.
	configs := map[string]*string{"min.insync.replicas": kmsg.StringPtr("2"), "segment.bytes": kmsg.StringPtr("1048576")}
	if _, err := adm.CreateTopic(ctx, 1, 3, configs, "gone"); err != nil {
		t.Fatal(err)
	}
	pollFor(t, "gone-0 with a full ISR on every node", 15*time.Second, func() bool {
		for _, b := range brokers {
			tp := b.Controller().Image().Topic("gone")
			if tp == nil || len(tp.Partitions[0].ISR) != 3 {
				return false
			}
		}
		return true
	})
	produceBig := func(n int) {
		t.Helper()
		var rs []*kgo.Record
		for range n {
			rs = append(rs, &kgo.Record{Topic: "gone", Partition: 0, Value: bytes.Repeat([]byte("x"), 64<<10)})
		}
		prod, _ := newClient(t, brokers[0], kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
		for _, r := range prod.ProduceSync(ctx, rs...) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	produceBig(48)

	tp := engine.TopicPartition{Topic: "gone"}
	part := brokers[0].Controller().Image().Topic("gone").Partitions[0]
	leader := brokers[part.Leader-1]
	var followers []*Broker
	sizeBefore := map[*Broker]int64{}
	for _, b := range brokers {
		if b != leader {
			followers = append(followers, b)
			sizeBefore[b] = b.Replicas().Partition(tp).Log().Size()
		}
	}
	const deleted = 40
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "gone", Partition: 0, At: deleted})
	resp, err := adm.DeleteRecords(ctx, os)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := resp.Lookup("gone", 0); !ok || r.Err != nil || r.LowWatermark != deleted {
		t.Fatalf("DeleteRecords below %d: %+v", deleted, r)
	}
	// More records: a follower that has them fetched after the delete,
	// and every fetch response carries the leader's log start offset.
	produceBig(2)
	pollFor(t, "followers caught up with the leader after the delete", 15*time.Second, func() bool {
		for _, b := range followers {
			p := b.Replicas().Partition(tp)
			if p.Log().LogEndOffset() != 50 || p.HighWatermark() != 50 {
				return false
			}
		}
		return true
	})
	for _, b := range followers {
		p := b.Replicas().Partition(tp)
		if lso := p.Log().LogStartOffset(); lso < deleted {
			t.Errorf("node %d follows with log start offset %d, below the leader's %d", b.cfg.NodeID, lso, deleted)
		}
		if size := p.Log().Size(); size >= sizeBefore[b] {
			t.Errorf("node %d kept its segments below the log start offset: %d bytes, %d before the delete", b.cfg.NodeID, size, sizeBefore[b])
		}
		// Durable: the checkpoint a restart reads has it.
		var lsos map[engine.TopicPartition]int64
		pollFor(t, "the follower's log start offset checkpointed", 10*time.Second, func() bool {
			lsos, err = engine.ReadOffsetCheckpoint(vfs.Default, b.Replicas().Logs().Dir()+"/"+engine.LogStartOffsetCheckpointFile)
			return err == nil && lsos[tp] >= deleted
		})
	}

	t.Logf("closing node %d, leader of gone-0 at epoch %d", part.Leader, part.LeaderEpoch)
	leader.Close()
	pollFor(t, "a new leader of gone-0", 15*time.Second, func() bool {
		p := followers[0].Controller().Image().Topic("gone").Partitions[0]
		return p.Leader >= 0 && p.Leader != part.Leader && p.LeaderEpoch > part.LeaderEpoch
	})
	newLeader := followers[0].Controller().Image().Topic("gone").Partitions[0].Leader
	scl, sadm := newClient(t, followers[0])
	var start kadm.ListedOffsets
	pollFor(t, "ListOffsets earliest from the new leader", 15*time.Second, func() bool {
		start, err = sadm.ListStartOffsets(ctx, "gone")
		o, ok := start.Lookup("gone", 0)
		return err == nil && ok && o.Err == nil
	})
	if o, _ := start.Lookup("gone", 0); o.Offset < deleted {
		t.Fatalf("new leader %d: log start offset %d, want >= %d: deleted records came back", newLeader, o.Offset, deleted)
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = -1, 1<<20, 0
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "gone"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 10, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	raw, err := req.RequestWith(ctx, scl.Broker(int(newLeader)))
	if err != nil {
		t.Fatal(err)
	}
	if code := raw.Topics[0].Partitions[0].ErrorCode; code != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch at 10 from the new leader %d: error %d, want OFFSET_OUT_OF_RANGE", newLeader, code)
	}
}
