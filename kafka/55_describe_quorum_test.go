package kafka

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster/metalog"
	"github.com/wren-broker/wren/cluster/quorum"
	"github.com/wren-broker/wren/config"
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
// at every version; from v1 with the times of each follower's last fetch
// and caught-up (-1 unknown) and "now" for itself, so that
// kafka-metadata-quorum's MaxFollowerLagTimeMs is the lagging voter's age.
func TestDescribeQuorumController(t *testing.T) {
	f := newSeamFixture(t)
	f.metadata.onQuorum = true
	at := time.Now()
	f.metadata.quorum = quorum.Status{
		Status: metalog.Status{
			Election:  election.Status{Hard: election.HardState{Epoch: 7}, Soft: election.SoftState{Controller: 1, Acting: true}},
			Commit:    40,
			LastIndex: 42,
			Match:     map[election.NodeID]int64{2: 41},
		},
		At:           at,
		LastFetch:    map[election.NodeID]time.Time{2: at.Add(-200 * time.Millisecond)},
		LastCaughtUp: map[election.NodeID]time.Time{2: at.Add(-1500 * time.Millisecond)},
	}
	nowMs := at.UnixMilli()
	for v := int16(0); v <= 2; v++ {
		p := quorumPartition(t, onWire(t, f.do(t, describeQuorumRequest(v, metadataTopicName, 0)).(*kmsg.DescribeQuorumResponse)))
		wantCode(t, fmt.Sprintf("v%d", v), p.ErrorCode, nil)
		if p.LeaderID != 1 || p.LeaderEpoch != 7 || p.HighWatermark != 40 {
			t.Errorf("v%d: leader %d epoch %d high watermark %d, want 1, 7, 40", v, p.LeaderID, p.LeaderEpoch, p.HighWatermark)
		}
		if got := voterEnds(p.CurrentVoters); got != "1:42 2:41 3:-1 " {
			t.Errorf("v%d: voters %s, want 1:42 2:41 3:-1", v, got)
		}
		if v == 0 {
			continue
		}
		got := voterTimes(p.CurrentVoters)
		want := fmt.Sprintf("1:%d/%d 2:%d/%d 3:-1/-1 ", nowMs, nowMs, nowMs-200, nowMs-1500)
		if got != want {
			t.Errorf("v%d: voters' last fetch/caught-up %s, want %s", v, got, want)
		}
		// kafka-metadata-quorum --status: the leader's caught-up time
		// minus that of the voter with the lowest log end.
		if lag := p.CurrentVoters[0].LastCaughtUpTimestamp - p.CurrentVoters[1].LastCaughtUpTimestamp; lag != 1500 {
			t.Errorf("v%d: MaxFollowerLagTimeMs as Kafka's tool computes it is %d, want 1500", v, lag)
		}
	}
}

// voterTimes lists the voters as "id:lastFetch/lastCaughtUp".
func voterTimes(vs []kmsg.DescribeQuorumResponseTopicPartitionReplicaState) string {
	out := ""
	for _, v := range vs {
		out += fmt.Sprintf("%d:%d/%d ", v.ReplicaID, v.LastFetchTimestamp, v.LastCaughtUpTimestamp)
	}
	return out
}

// TestDescribeQuorumNodes: from v2 (KIP-853) the answer lists each voter
// it names with its CONTROLLER listener from controller.quorum.voters,
// under the first name of controller.listener.names, and the zero
// directory id of a static voter set; v1 carries neither.
func TestDescribeQuorumNodes(t *testing.T) {
	f := newSeamFixture(t)
	f.node.Config.ControllerListenerNames = []string{"CTRL"}
	f.node.Config.Voters = []config.Voter{{ID: 3, Host: "edge-3.local", Port: 9095}, {ID: 1, Host: "edge-1.local", Port: 9093}, {ID: 2, Host: "edge-2.local", Port: 9094}}
	f.metadata.onQuorum = true
	f.metadata.quorum = quorum.Status{Status: metalog.Status{
		Election:  election.Status{Hard: election.HardState{Epoch: 7}, Soft: election.SoftState{Controller: 1, Acting: true}},
		Commit:    40,
		LastIndex: 42,
	}, At: time.Now()}
	resp := onWire(t, f.do(t, describeQuorumRequest(2, metadataTopicName, 0)).(*kmsg.DescribeQuorumResponse))
	if got := nodeEndpoints(resp.Nodes); got != "1:CTRL://edge-1.local:9093 2:CTRL://edge-2.local:9094 3:CTRL://edge-3.local:9095 " {
		t.Errorf("v2 nodes %s, want the three voters' CTRL endpoints", got)
	}
	for _, v := range quorumPartition(t, resp).CurrentVoters {
		if v.ReplicaDirectoryID != [16]byte{} {
			t.Errorf("v2: voter %d directory id %x, want the zero Uuid", v.ReplicaID, v.ReplicaDirectoryID)
		}
	}
	if resp := onWire(t, f.do(t, describeQuorumRequest(1, metadataTopicName, 0)).(*kmsg.DescribeQuorumResponse)); len(resp.Nodes) != 0 {
		t.Errorf("v1 carries nodes %s", nodeEndpoints(resp.Nodes))
	}

	// A follower's own view names itself only, so only its node.
	f.metadata.quorum.Election.Soft = election.SoftState{Controller: 2}
	resp = onWire(t, f.do(t, describeQuorumRequest(2, metadataTopicName, 0)).(*kmsg.DescribeQuorumResponse))
	p := quorumPartition(t, resp)
	wantCode(t, "follower v2", p.ErrorCode, kerr.NotLeaderForPartition)
	if p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, "not the acting controller") {
		t.Errorf("follower v2: error message %v, want one saying it is not the acting controller", p.ErrorMessage)
	}
	if got := nodeEndpoints(resp.Nodes); got != "1:CTRL://edge-1.local:9093 " {
		t.Errorf("follower v2: nodes %s, want only itself", got)
	}
}

// nodeEndpoints lists nodes as "id:NAME://host:port".
func nodeEndpoints(nodes []kmsg.DescribeQuorumResponseNode) string {
	out := ""
	for _, n := range nodes {
		out += fmt.Sprintf("%d:", n.NodeID)
		for _, l := range n.Listeners {
			out += fmt.Sprintf("%s://%s:%d", l.Name, l.Host, l.Port)
		}
		out += " "
	}
	return out
}

// TestDescribeQuorumFollower: a voter that is not the acting controller
// answers NOT_LEADER_OR_FOLLOWER with the controller it knows, its epoch,
// and itself as the one voter listed.
func TestDescribeQuorumFollower(t *testing.T) {
	f := newSeamFixture(t)
	f.metadata.onQuorum = true
	f.metadata.quorum = quorum.Status{Status: metalog.Status{
		Election:  election.Status{Hard: election.HardState{Epoch: 7}, Soft: election.SoftState{Controller: 2}},
		Commit:    40,
		LastIndex: 39,
	}, At: time.Now()}
	p := quorumPartition(t, f.do(t, describeQuorumRequest(1, metadataTopicName, 0)).(*kmsg.DescribeQuorumResponse))
	wantCode(t, "follower", p.ErrorCode, kerr.NotLeaderForPartition)
	if p.LeaderID != 2 || p.LeaderEpoch != 7 || voterEnds(p.CurrentVoters) != "1:39 " {
		t.Errorf("leader %d epoch %d voters %s, want 2, 7, 1:39", p.LeaderID, p.LeaderEpoch, voterEnds(p.CurrentVoters))
	}
	if got := voterTimes(p.CurrentVoters); got != "1:-1/-1 " {
		t.Errorf("timestamps %s, want -1 (a follower knows no one's fetches)", got)
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
