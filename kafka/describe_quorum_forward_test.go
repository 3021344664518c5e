package kafka

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// quorumForwardRequest is a DescribeQuorum request for the metadata
// partition at version 1, with wren's local-view tag when local.
func quorumForwardRequest(local bool) *kmsg.DescribeQuorumRequest {
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.SetVersion(1)
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = metadataTopicName
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	if local {
		req.UnknownTags.Set(QuorumLocalViewTag, []byte{})
	}
	return req
}

// TestDescribeQuorumForwarded: on a node that is not the acting
// controller, DescribeQuorum goes to the controller and the client gets
// its answer (Kafka's admin client asks any node it knows); with wren's
// local-view tag, or when forwarding fails, the node answers itself.
func TestDescribeQuorumForwarded(t *testing.T) {
	f := newSeamFixture(t)
	calls := 0
	f.controller.forward = func(key, version int16, body []byte) ([]byte, error) {
		calls++
		if kmsg.Key(key) != kmsg.DescribeQuorum || version != 1 {
			t.Errorf("forwarded %s v%d, want DescribeQuorum v1", kmsg.NameForKey(key), version)
		}
		req := kmsg.NewPtrDescribeQuorumRequest()
		req.SetVersion(version)
		if err := req.ReadFrom(body); err != nil || len(req.Topics) != 1 || req.Topics[0].Topic != metadataTopicName {
			t.Errorf("the forwarded body %+v does not decode to the request sent: %v", req, err)
		}
		// The controller's answer: node 3 leads epoch 9.
		resp := kmsg.NewPtrDescribeQuorumResponse()
		resp.SetVersion(version)
		rt := kmsg.NewDescribeQuorumResponseTopic()
		rt.Topic = metadataTopicName
		rp := kmsg.NewDescribeQuorumResponseTopicPartition()
		rp.LeaderID, rp.LeaderEpoch, rp.HighWatermark = 3, 9, 77
		for id := int32(1); id <= 3; id++ {
			v := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
			v.ReplicaID, v.LogEndOffset = id, 77
			rp.CurrentVoters = append(rp.CurrentVoters, v)
		}
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
		return resp.AppendTo(nil), nil
	}

	p := quorumPartitionOf(t, f.do(t, quorumForwardRequest(false)))
	wantCode(t, "forwarded", p.ErrorCode, nil)
	if calls != 1 || p.LeaderID != 3 || p.LeaderEpoch != 9 || p.HighWatermark != 77 || len(p.CurrentVoters) != 3 {
		t.Errorf("forwarded %d times, answer leader %d epoch %d high watermark %d with %d voters; want once, the controller's 3, 9, 77 with 3",
			calls, p.LeaderID, p.LeaderEpoch, p.HighWatermark, len(p.CurrentVoters))
	}

	// The local view: not forwarded. The fixture's node has no quorum, so
	// it is its own controller in epoch 0.
	p = quorumPartitionOf(t, f.do(t, quorumForwardRequest(true)))
	if calls != 1 || p.LeaderID != 1 || p.LeaderEpoch != 0 {
		t.Errorf("local view: forwarded %d times in all, answer leader %d epoch %d; want once in all (before), node 1's own 1, 0",
			calls, p.LeaderID, p.LeaderEpoch)
	}

	// Forwarding fails: answered here.
	f.controller.forward = func(int16, int16, []byte) ([]byte, error) {
		return nil, errors.New("controller did not answer in time")
	}
	p = quorumPartitionOf(t, f.do(t, quorumForwardRequest(false)))
	if p.LeaderID != 1 || p.LeaderEpoch != 0 {
		t.Errorf("forwarding failed: answer leader %d epoch %d, want node 1's own 1, 0", p.LeaderID, p.LeaderEpoch)
	}
}

// quorumPartitionOf is the one partition of a DescribeQuorum answer.
func quorumPartitionOf(t *testing.T, resp kmsg.Response) kmsg.DescribeQuorumResponseTopicPartition {
	t.Helper()
	r := resp.(*kmsg.DescribeQuorumResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("answer %+v, want one partition", r.Topics)
	}
	return r.Topics[0].Partitions[0]
}
