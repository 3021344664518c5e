package kafka

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster/metalog"
	"github.com/wren-broker/wren/election"
)

func describeQuorumRequest(version int16, topic string, partition int32) *kmsg.DescribeQuorumRequest {
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.SetVersion(version)
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDescribeQuorumRequestTopicPartition()
	rp.Partition = partition
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// quorumPartition is the one partition of a DescribeQuorum answer.
func quorumPartition(t *testing.T, resp *kmsg.DescribeQuorumResponse) kmsg.DescribeQuorumResponseTopicPartition {
	t.Helper()
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("answer %+v, want one partition", resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// voterEnds lists the voters as "id:logEnd".
func voterEnds(vs []kmsg.DescribeQuorumResponseTopicPartitionReplicaState) string {
	out := ""
	for _, v := range vs {
		out += fmt.Sprintf("%d:%d ", v.ReplicaID, v.LogEndOffset)
	}
	return out
}

// TestDescribeQuorumController: the acting controller lists every voter
// with the log end it last saw (-1 for one it has not heard from), sorted,
// at both versions.
func TestDescribeQuorumController(t *testing.T) {
	f := newSeamFixture(t)
	f.metadata.onQuorum = true
	f.metadata.quorum = metalog.Status{
		Election:  election.Status{Hard: election.HardState{Epoch: 7}, Soft: election.SoftState{Controller: 1, Acting: true}},
		Commit:    40,
		LastIndex: 42,
		Match:     map[election.NodeID]int64{2: 41},
	}
	for v := int16(0); v <= 1; v++ {
		p := quorumPartition(t, wire(t, f.do(t, describeQuorumRequest(v, metadataTopicName, 0)).(*kmsg.DescribeQuorumResponse)))
		wantCode(t, fmt.Sprintf("v%d", v), p.ErrorCode, nil)
		if p.LeaderID != 1 || p.LeaderEpoch != 7 || p.HighWatermark != 40 {
			t.Errorf("v%d: leader %d epoch %d high watermark %d, want 1, 7, 40", v, p.LeaderID, p.LeaderEpoch, p.HighWatermark)
		}
		if got := voterEnds(p.CurrentVoters); got != "1:42 2:41 3:-1 " {
			t.Errorf("v%d: voters %s, want 1:42 2:41 3:-1", v, got)
		}
		if v >= 1 && (p.CurrentVoters[0].LastFetchTimestamp != -1 || p.CurrentVoters[0].LastCaughtUpTimestamp != -1) {
			t.Errorf("v1: timestamps %d %d, want -1 (not tracked)", p.CurrentVoters[0].LastFetchTimestamp, p.CurrentVoters[0].LastCaughtUpTimestamp)
		}
	}
}

// TestDescribeQuorumFollower: a voter that is not the acting controller
// answers NOT_LEADER_OR_FOLLOWER with the controller it knows, its epoch,
// and itself as the one voter listed.
func TestDescribeQuorumFollower(t *testing.T) {
	f := newSeamFixture(t)
	f.metadata.onQuorum = true
	f.metadata.quorum = metalog.Status{
		Election:  election.Status{Hard: election.HardState{Epoch: 7}, Soft: election.SoftState{Controller: 2}},
		Commit:    40,
		LastIndex: 39,
	}
	p := quorumPartition(t, f.do(t, describeQuorumRequest(1, metadataTopicName, 0)).(*kmsg.DescribeQuorumResponse))
	wantCode(t, "follower", p.ErrorCode, kerr.NotLeaderForPartition)
	if p.LeaderID != 2 || p.LeaderEpoch != 7 || voterEnds(p.CurrentVoters) != "1:39 " {
		t.Errorf("leader %d epoch %d voters %s, want 2, 7, 1:39", p.LeaderID, p.LeaderEpoch, voterEnds(p.CurrentVoters))
	}
}

// TestDescribeQuorumSingleVoter: a node without a quorum is its own
// controller in epoch 0, at the image's offset.
func TestDescribeQuorumSingleVoter(t *testing.T) {
	f := newSeamFixture(t)
	p := quorumPartition(t, f.do(t, describeQuorumRequest(1, metadataTopicName, 0)).(*kmsg.DescribeQuorumResponse))
	off := int64(f.metadata.image.Offset)
	wantCode(t, "single voter", p.ErrorCode, nil)
	if p.LeaderID != 1 || p.LeaderEpoch != 0 || p.HighWatermark != off || voterEnds(p.CurrentVoters) != fmt.Sprintf("1:%d ", off) {
		t.Errorf("leader %d epoch %d high watermark %d voters %s, want 1, 0, %d", p.LeaderID, p.LeaderEpoch, p.HighWatermark, voterEnds(p.CurrentVoters), off)
	}
}

// TestDescribeQuorumErrors: another topic or partition is
// UNKNOWN_TOPIC_OR_PARTITION; a status that cannot be read in time is
// REQUEST_TIMED_OUT.
func TestDescribeQuorumErrors(t *testing.T) {
	f := newSeamFixture(t)
	p := quorumPartition(t, f.do(t, describeQuorumRequest(1, "t", 0)).(*kmsg.DescribeQuorumResponse))
	wantCode(t, "topic t", p.ErrorCode, kerr.UnknownTopicOrPartition)
	p = quorumPartition(t, f.do(t, describeQuorumRequest(1, metadataTopicName, 1)).(*kmsg.DescribeQuorumResponse))
	wantCode(t, "partition 1", p.ErrorCode, kerr.UnknownTopicOrPartition)

	f.metadata.quorumErr = errors.New("the metadata node did not answer")
	p = quorumPartition(t, f.do(t, describeQuorumRequest(1, metadataTopicName, 0)).(*kmsg.DescribeQuorumResponse))
	wantCode(t, "status unreadable", p.ErrorCode, kerr.RequestTimedOut)
}
