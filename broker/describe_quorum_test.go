package broker

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster/quorum"
	"github.com/wren-broker/wren/kafka"
)

// describeQuorumAt sends DescribeQuorum to the broker at addr alone, as
// Kafka's admin client does to whichever node it picks, and returns the
// metadata partition's answer.
func describeQuorumAt(ctx context.Context, t *testing.T, addr string, local bool) kmsg.DescribeQuorumResponseTopicPartition {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	if local {
		req.UnknownTags.Set(kafka.QuorumLocalViewTag, []byte{})
	}
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatalf("DescribeQuorum at %s: %v", addr, err)
	}
	r := resp.(*kmsg.DescribeQuorumResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("DescribeQuorum at %s: answer %+v, want one partition", addr, r.Topics)
	}
	return r.Topics[0].Partitions[0]
}

// Every node of a three-node cluster answers DescribeQuorum with the
// acting controller's view (a node that is not the controller forwards
// it), as kafka-metadata-quorum needs; with wren's local-view tag a
// follower answers NOT_LEADER_OR_FOLLOWER with its own view. The nodes'
// /metrics count the CONTROLLER listener's traffic and the election.
func TestDescribeQuorumFromEveryNode(t *testing.T) {
	brokers := startThreeBrokers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ctrl := brokers[0].Controller().ControllerID()
	epoch := brokers[0].Controller().ControllerEpoch()
	for _, b := range brokers {
		id := b.Controller().NodeID()
		p := describeQuorumAt(ctx, t, b.Addr().String(), false)
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			t.Fatalf("node %d: DescribeQuorum: %v", id, err)
		}
		if p.LeaderID != ctrl || p.LeaderEpoch != epoch || p.HighWatermark <= 0 || len(p.CurrentVoters) != 3 {
			t.Errorf("node %d: leader %d epoch %d high watermark %d, %d voters; want the controller's view: %d, %d, > 0, 3",
				id, p.LeaderID, p.LeaderEpoch, p.HighWatermark, len(p.CurrentVoters), ctrl, epoch)
		}
		local := describeQuorumAt(ctx, t, b.Addr().String(), true)
		switch {
		case id == ctrl && local.ErrorCode != 0:
			t.Errorf("controller %d, local view: %v, want its answer", id, kerr.ErrorForCode(local.ErrorCode))
		case id != ctrl && (local.ErrorCode != kerr.NotLeaderForPartition.Code || len(local.CurrentVoters) != 1 || local.CurrentVoters[0].ReplicaID != id):
			t.Errorf("node %d, local view: error %v, voters %+v; want NOT_LEADER_OR_FOLLOWER and itself alone", id, kerr.ErrorForCode(local.ErrorCode), local.CurrentVoters)
		}
	}

	for _, b := range brokers {
		var out bytes.Buffer
		b.ops.metrics.WritePrometheus(&out)
		text := out.String()
		for _, want := range []string{"wren_controller_elections_total ", `wren_quorum_sent_bytes_total{kind="metalog"} `,
			`wren_quorum_received_messages_total{kind="app"} `, `wren_quorum_sent_messages_total{kind="replica"} `} {
			if !strings.Contains(text, want) {
				t.Errorf("node %d: /metrics has no %s", b.Controller().NodeID(), want)
			}
		}
		st, ok := b.Controller().QuorumStats()
		if !ok || !st.HasTransport || st.Epoch != epoch || st.EpochChanges == 0 || st.Transport.Sent[quorum.TrafficMetalog].Frames == 0 || st.Transport.Received[quorum.TrafficMetalog].Frames == 0 {
			t.Errorf("node %d: quorum stats %+v (ok %v); want the transport's counts, epoch %d and at least the first election", b.Controller().NodeID(), st, ok, epoch)
		}
	}
}
