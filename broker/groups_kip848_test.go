package broker

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKIP848GroupSurvivesRestart drives a KIP-848 member by hand, then
// restarts the broker: the group comes back from __consumer_offsets with
// the member, its epoch and its assignment, so the member carries on
// heartbeating and committing with the epoch it had, and nothing is
// reassigned.
func TestKIP848GroupSurvivesRestart(t *testing.T) {
	const group, topic = "kept848", "t848"
	cfg := testConfig(t, t.TempDir(), groupsTestConfig)
	b := startBroker(t, cfg)
	cl, adm := newClient(t, b)
	createTopic(t, adm, topic, 3, nil)

	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch = group, "member-a", 0
	hb.RebalanceTimeoutMillis = 30000
	hb.SubscribedTopicNames = []string{topic}
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	joined := direct[*kmsg.ConsumerGroupHeartbeatResponse](t, cl, hb)
	wantCode(t, "join", joined.ErrorCode, nil)
	if joined.MemberEpoch != 1 || joined.Assignment == nil || len(joined.Assignment.Topics) != 1 ||
		!slices.Equal(joined.Assignment.Topics[0].Partitions, []int32{0, 1, 2}) {
		t.Fatalf("join: epoch %d, assignment %+v", joined.MemberEpoch, joined.Assignment)
	}
	topicID := joined.Assignment.Topics[0].TopicID

	commit := func(cl *kgo.Client, epoch int32, offset int64) int16 {
		t.Helper()
		c := kmsg.NewPtrOffsetCommitRequest()
		c.Group, c.MemberID, c.Generation = group, "member-a", epoch
		c.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 1, Offset: offset, LeaderEpoch: -1}}}}
		return direct[*kmsg.OffsetCommitResponse](t, cl, c).Topics[0].Partitions[0].ErrorCode
	}
	wantCode(t, "commit with the member epoch", commit(cl, 1, 42), nil)
	wantCode(t, "commit with a stale epoch", commit(cl, 0, 43), kerr.StaleMemberEpoch)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b2 := startBroker(t, cfg)
	cl2, adm2 := newClient(t, b2)
	d := kmsg.NewPtrConsumerGroupDescribeRequest()
	d.Groups = []string{group}
	described := direct[*kmsg.ConsumerGroupDescribeResponse](t, cl2, d).Groups[0]
	wantCode(t, "describe after restart", described.ErrorCode, nil)
	if described.State != "Stable" || described.Epoch != 1 || described.AssignmentEpoch != 1 || len(described.Members) != 1 {
		t.Fatalf("after restart: %+v", described)
	}
	m := described.Members[0]
	if m.MemberID != "member-a" || m.MemberEpoch != 1 || len(m.Assignment.TopicPartitions) != 1 ||
		m.Assignment.TopicPartitions[0].Topic != topic || m.Assignment.TopicPartitions[0].TopicID != topicID ||
		!slices.Equal(m.Assignment.TopicPartitions[0].Partitions, []int32{0, 1, 2}) {
		t.Fatalf("member after restart: %+v", m)
	}

	// A plain heartbeat with the old epoch: no error, no new assignment.
	beat := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	beat.Group, beat.MemberID, beat.MemberEpoch = group, "member-a", 1
	beat.RebalanceTimeoutMillis = -1
	r := direct[*kmsg.ConsumerGroupHeartbeatResponse](t, cl2, beat)
	wantCode(t, "heartbeat after restart", r.ErrorCode, nil)
	if r.MemberEpoch != 1 || r.Assignment != nil {
		t.Fatalf("heartbeat after restart: epoch %d, assignment %+v", r.MemberEpoch, r.Assignment)
	}
	wantCode(t, "commit after restart", commit(cl2, 1, 44), nil)
	fetched, err := adm2.FetchOffsets(testContext(t), group)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup(topic, 1); !ok || o.At != 44 {
		t.Fatalf("committed after restart: %+v", o)
	}

	// The member leaves; the group is Empty and can be deleted.
	beat.MemberEpoch = -1
	wantCode(t, "leave", direct[*kmsg.ConsumerGroupHeartbeatResponse](t, cl2, beat).ErrorCode, nil)
	deleted, err := adm2.DeleteGroups(testContext(t), group)
	if err != nil {
		t.Fatal(err)
	}
	if err := deleted[group].Err; err != nil {
		t.Fatalf("delete: %v", err)
	}
}
