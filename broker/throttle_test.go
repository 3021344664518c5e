package broker

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/replication"
)

// createOnBroker creates a one-partition topic whose only replica is on
// broker id, and waits until id leads it.
func createOnBroker(t *testing.T, brokers []*Broker, cl *kgo.Client, name string, id int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, []int32{id}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 10000
	resp, err := req.RequestWith(testContext(t), cl)
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create %s: %v %s", name, err, derefString(resp.Topics[0].ErrorMessage))
	}
	pollFor(t, fmt.Sprintf("%s-0 led by broker %d", name, id), 15*time.Second, func() bool {
		p := brokers[id-1].Replicas().Partition(engine.TopicPartition{Topic: name, Partition: 0})
		if p == nil {
			return false
		}
		lead, _ := p.Leader()
		return lead
	})
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func strp(s string) *string { return &s }

// alter runs an alter-configs call until it succeeds, retrying what
// Kafka calls retriable (NOT_CONTROLLER while the controller moves), and
// fails the test on anything else or after 20 s.
func alter(t *testing.T, what string, call func() (kadm.AlterConfigsResponses, error)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := call()
		if err == nil {
			for _, r := range res {
				if r.Err != nil {
					err = fmt.Errorf("%s: %w %s", r.Name, r.Err, r.ErrMessage)
					break
				}
			}
		}
		if err == nil {
			return
		}
		if !kerr.IsRetriable(err) || time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A reassignment under Kafka's replication throttle (KIP-73), set and
// lifted the way kafka-reassign-partitions --throttle and --verify do it:
// rates on the brokers of the move (IncrementalAlterConfigs per broker
// id), throttled replicas lists on the topics. Three single-replica
// topics of about 1 MiB each move from one broker to another: "free" is
// not throttled, "held" is throttled by its leader (leader list only) and
// "fetched" by its new follower (follower list only). The unthrottled
// move completes while both throttled copies are held back, which the
// throttle's own counters in /metrics show on each side (no timing is
// asserted); the moves complete once the throttle is lifted. Meanwhile a
// moving partition does not count as under-replicated: its one original
// replica is in sync.
func TestReassignmentThrottleThreeBrokers(t *testing.T) {
	brokers := startThreeBrokersWith(t, "[replication]\nauto.leader.rebalance.enable = false\n")
	cl, adm := threeNodeAdmin(t, brokers)
	ctrl := actingController(t, brokers)
	const src, dst = int32(1), int32(2)
	topics := []string{"held", "fetched", "free"}
	for _, topic := range topics {
		createOnBroker(t, brokers, cl, topic, src)
	}

	// Uncompressed batches of at most 16 KiB, so that the log holds the
	// MiB and the throttle has many batches to hold.
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers[0].Addr().String()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchMaxBytes(16<<10), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	const records, recordBytes = 256, 4000
	value := []byte(strings.Repeat("0123456789abcdef", recordBytes/16))
	for _, topic := range topics {
		var rs []*kgo.Record
		for i := 0; i < records; i++ {
			rs = append(rs, &kgo.Record{Topic: topic, Value: value})
		}
		if err := prod.ProduceSync(testContext(t), rs...).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
	}
	// "whole" is one batch of 256 KiB, for the last part.
	createOnBroker(t, brokers, cl, "whole", src)
	var rs []*kgo.Record
	for i := 0; i < 64; i++ {
		rs = append(rs, &kgo.Record{Topic: "whole", Value: value})
	}
	one, err := kgo.NewClient(kgo.SeedBrokers(brokers[0].Addr().String()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(time.Second), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if err := one.ProduceSync(testContext(t), rs...).FirstErr(); err != nil {
		t.Fatalf("produce to whole: %v", err)
	}
	heldTP := engine.TopicPartition{Topic: "held", Partition: 0}
	fetchedTP := engine.TopicPartition{Topic: "fetched", Partition: 0}
	leo := brokers[src-1].Replicas().Partition(heldTP).Log().LogEndOffset()

	// 1 KiB/s: the held copy moves a few KiB while the free one moves its
	// MiB, however slow the machine.
	const rate = 1024
	ctx := testContext(t)
	rates := []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "leader.replication.throttled.rate", Value: strp(fmt.Sprint(rate))},
		{Op: kadm.SetConfig, Name: "follower.replication.throttled.rate", Value: strp(fmt.Sprint(rate))},
	}
	alter(t, "set the throttle rates", func() (kadm.AlterConfigsResponses, error) {
		return adm.AlterBrokerConfigs(ctx, rates, src, dst)
	})
	alter(t, "set the leader's throttled replicas", func() (kadm.AlterConfigsResponses, error) {
		return adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: "leader.replication.throttled.replicas", Value: strp(fmt.Sprintf("0:%d", src))},
		}, "held")
	})
	alter(t, "set the follower's throttled replicas", func() (kadm.AlterConfigsResponses, error) {
		return adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: "follower.replication.throttled.replicas", Value: strp(fmt.Sprintf("0:%d", dst))},
		}, "fetched")
	})

	// A broker's configs go to that broker: another one refuses them, as
	// Kafka's do, rather than forward them to the controller.
	wrong := kmsg.NewPtrIncrementalAlterConfigsRequest()
	wr := kmsg.NewIncrementalAlterConfigsRequestResource()
	wr.ResourceType, wr.ResourceName = kmsg.ConfigResourceTypeBroker, fmt.Sprint(dst)
	wc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	wc.Name, wc.Value = "leader.replication.throttled.rate", strp("1")
	wr.Configs = append(wr.Configs, wc)
	wrong.Resources = append(wrong.Resources, wr)
	wresp, err := wrong.RequestWith(ctx, cl.Broker(3))
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, fmt.Sprintf("broker %d's configs sent to broker 3", dst), wresp.Resources[0].ErrorCode, kerr.InvalidRequest)

	// DescribeConfigs shows them where they were set, once the brokers
	// have the metadata that holds them.
	describes := func(resources func() (kadm.ResourceConfigs, error), name, key, want string, source kmsg.ConfigSource) bool {
		rcs, err := resources()
		if err != nil {
			t.Fatalf("describe %s: %v", name, err)
		}
		rc, err := rcs.On(name, nil)
		if err != nil || rc.Err != nil {
			t.Fatalf("describe %s: %v %v", name, err, rc.Err)
		}
		for _, c := range rc.Configs {
			if c.Key == key {
				return c.MaybeValue() == want && c.Source == source
			}
		}
		t.Fatalf("%s does not describe %s", name, key)
		return false
	}
	pollFor(t, "DescribeConfigs to show the throttle", 10*time.Second, func() bool {
		return describes(func() (kadm.ResourceConfigs, error) { return adm.DescribeBrokerConfigs(ctx, src) },
			fmt.Sprint(src), "leader.replication.throttled.rate", fmt.Sprint(rate), kmsg.ConfigSourceDynamicBrokerConfig) &&
			describes(func() (kadm.ResourceConfigs, error) { return adm.DescribeTopicConfigs(ctx, "fetched") },
				"fetched", "follower.replication.throttled.replicas", fmt.Sprintf("0:%d", dst), kmsg.ConfigSourceDynamicTopicConfig)
	})

	// In force without a restart.
	pollFor(t, "the throttle rates in force on both brokers", 10*time.Second, func() bool {
		leader, _ := brokers[src-1].Replicas().ReplicationThrottleStats()
		_, follower := brokers[dst-1].Replicas().ReplicationThrottleStats()
		return leader.Rate == rate && follower.Rate == rate
	})

	var req kadm.AlterPartitionAssignmentsReq
	for _, topic := range topics {
		req.Assign(topic, 0, []int32{dst})
	}
	ares, err := adm.AlterPartitionAssignments(ctx, req)
	if err == nil {
		err = ares.Error()
	}
	if err != nil {
		t.Fatalf("reassign: %v", err)
	}
	pollFor(t, "the unthrottled move of free-0 to complete", 30*time.Second, func() bool {
		p := ctrl.Controller().Image().Topic("free").Partitions[0]
		return !p.Reassigning() && slices.Equal(p.Replicas, []int32{dst})
	})
	// The throttled moves hold back: their copies are behind, and the
	// throttle's counters say why.
	for _, tp := range []engine.TopicPartition{heldTP, fetchedTP} {
		p := ctrl.Controller().Image().Topic(tp.Topic).Partitions[0]
		if !p.Reassigning() {
			t.Fatalf("the throttled move of %s completed with the free one: %+v", tp, p)
		}
		if copied := brokers[dst-1].Replicas().Partition(tp).Log().LogEndOffset(); copied >= leo {
			t.Fatalf("broker %d copied %s to %d of %d under a %d B/s throttle", dst, tp, copied, leo, rate)
		}
	}
	p := ctrl.Controller().Image().Topic("held").Partitions[0]
	// Broker 1 leads both moving partitions; its view of the cluster
	// does not call held-0 under-replicated: the ISR is the one original
	// replica, though smaller than the replicas with the one being added.
	if len(p.ISR) >= len(p.Replicas) || p.UnderReplicated() {
		t.Fatalf("held-0 during the move: %+v, UnderReplicated %v", p, p.UnderReplicated())
	}
	h, _ := ctrl.ops.health()
	if slices.Contains(h.UnderReplicatedPartitions, "held/0") {
		t.Fatalf("health lists held/0 as under-replicated during its move: %v", h.UnderReplicatedPartitions)
	}
	var srcMetrics, dstMetrics map[string]float64
	pollFor(t, "the leader to hold back held-0 and the follower fetched-0", 20*time.Second, func() bool {
		srcMetrics, dstMetrics = scrape(t, brokers[src-1]), scrape(t, brokers[dst-1])
		return srcMetrics[`wren_replication_throttle_held_total{side="leader"}`] > 0 &&
			dstMetrics[`wren_replication_throttle_held_total{side="follower"}`] > 0
	})
	if v := srcMetrics[`wren_replication_throttled_bytes_total{side="leader"}`]; v <= 0 {
		t.Errorf("leader %d served no throttled bytes: %v", src, v)
	}
	if v := dstMetrics[`wren_replication_throttled_bytes_total{side="follower"}`]; v <= 0 {
		t.Errorf("follower %d fetched no throttled bytes: %v", dst, v)
	}
	if v := srcMetrics[`wren_replication_throttle_rate_bytes_per_second{side="leader"}`]; v != rate {
		t.Errorf("leader rate gauge %v, want %d", v, rate)
	}
	if v := srcMetrics["wren_kafka_under_replicated_replicas"]; v != 0 {
		t.Errorf("wren_kafka_under_replicated_replicas %v during the move, want 0", v)
	}
	// The free partition's bytes never counted: only held-0 is throttled
	// on the leader, only fetched-0 on the follower.
	leader, _ := brokers[src-1].Replicas().ReplicationThrottleStats()
	_, follower := brokers[dst-1].Replicas().ReplicationThrottleStats()
	if leader.Bytes >= int64(records*recordBytes) || follower.Bytes >= int64(records*recordBytes) {
		t.Errorf("counted %d (leader) and %d (follower) throttled bytes, as much as a whole topic: the free one counted too", leader.Bytes, follower.Bytes)
	}
	t.Logf("while held: copied %d and %d of %d records; leader %+v, follower %+v",
		brokers[dst-1].Replicas().Partition(heldTP).Log().LogEndOffset(), brokers[dst-1].Replicas().Partition(fetchedTP).Log().LogEndOffset(), leo, leader, follower)

	// Lifted as --verify does once a move is done: the rates deleted on
	// the brokers (with the log dir throttle Kafka's tool also clears),
	// the lists on the topic.
	alter(t, "delete the throttle rates", func() (kadm.AlterConfigsResponses, error) {
		return adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.DeleteConfig, Name: "leader.replication.throttled.rate"},
			{Op: kadm.DeleteConfig, Name: "follower.replication.throttled.rate"},
			{Op: kadm.DeleteConfig, Name: "replica.alter.log.dirs.io.max.bytes.per.second"},
		}, src, dst)
	})
	alter(t, "delete the throttled replicas", func() (kadm.AlterConfigsResponses, error) {
		return adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.DeleteConfig, Name: "leader.replication.throttled.replicas"},
			{Op: kadm.DeleteConfig, Name: "follower.replication.throttled.replicas"},
		}, "held", "fetched")
	})
	for _, tp := range []engine.TopicPartition{heldTP, fetchedTP} {
		pollFor(t, fmt.Sprintf("the move of %s to complete once the throttle is lifted", tp), 30*time.Second, func() bool {
			p := ctrl.Controller().Image().Topic(tp.Topic).Partitions[0]
			return !p.Reassigning() && slices.Equal(p.Replicas, []int32{dst})
		})
		if got := brokers[dst-1].Replicas().Partition(tp).Log().LogEndOffset(); got != leo {
			t.Fatalf("%s on broker %d ends at %d, want %d", tp, dst, got, leo)
		}
	}
	leader, _ = brokers[src-1].Replicas().ReplicationThrottleStats()
	_, follower = brokers[dst-1].Replicas().ReplicationThrottleStats()
	if leader.Rate != replication.Unthrottled || follower.Rate != replication.Unthrottled {
		t.Fatalf("rates after the lift: leader %d, follower %d", leader.Rate, follower.Rate)
	}

	// A replica caught up with its leader is not throttled, even in
	// debt, as in Kafka (the leader's ISR check, the follower's
	// isReplicaInSync): a move whose one batch is larger than the bucket
	// completes under the throttle instead of waiting out the debt.
	alter(t, "set the throttle rates again", func() (kadm.AlterConfigsResponses, error) {
		return adm.AlterBrokerConfigs(ctx, rates, src, dst)
	})
	alter(t, "throttle every replica of whole", func() (kadm.AlterConfigsResponses, error) {
		return adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: "leader.replication.throttled.replicas", Value: strp("*")},
			{Op: kadm.SetConfig, Name: "follower.replication.throttled.replicas", Value: strp("*")},
		}, "whole")
	})
	pollFor(t, "the throttle rates in force again", 10*time.Second, func() bool {
		leader, _ := brokers[src-1].Replicas().ReplicationThrottleStats()
		_, follower := brokers[dst-1].Replicas().ReplicationThrottleStats()
		wholeOnDst := brokers[dst-1].Controller().Image().Topic("whole").Configs[followerThrottledReplicasKey] == "*"
		return leader.Rate == rate && follower.Rate == rate && wholeOnDst
	})
	before, _ := brokers[src-1].Replicas().ReplicationThrottleStats()
	req = nil
	req.Assign("whole", 0, []int32{dst})
	if ares, err := adm.AlterPartitionAssignments(ctx, req); err != nil || ares.Error() != nil {
		t.Fatalf("reassign whole: %v %v", err, ares.Error())
	}
	pollFor(t, "the move of whole-0, one batch over the bucket, to complete under the throttle", 30*time.Second, func() bool {
		p := ctrl.Controller().Image().Topic("whole").Partitions[0]
		return !p.Reassigning() && slices.Equal(p.Replicas, []int32{dst})
	})
	after, _ := brokers[src-1].Replicas().ReplicationThrottleStats()
	if after.Rate != rate || after.Bytes-before.Bytes < 64*recordBytes {
		t.Fatalf("whole-0 moved without the throttle: before %+v, after %+v", before, after)
	}
}

// followerThrottledReplicasKey is the topic config the image holds.
const followerThrottledReplicasKey = "follower.replication.throttled.replicas"
