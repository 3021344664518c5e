package kafka

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

// consumerHeartbeatRequest is a member's full heartbeat: every nullable
// field set.
func consumerHeartbeatRequest(version int16) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.SetVersion(version)
	req.Group, req.MemberID, req.MemberEpoch = "g", "m1", 4
	req.InstanceID, req.RackID = kmsg.StringPtr("i1"), kmsg.StringPtr("r1")
	req.RebalanceTimeoutMillis = 30000
	req.SubscribedTopicNames = []string{"t"}
	req.SubscribedTopicRegex = kmsg.StringPtr("^u.*")
	req.ServerAssignor = kmsg.StringPtr("range")
	rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
	rt.TopicID, rt.Partitions = testTopicID, []int32{0, 2}
	req.Topics = append(req.Topics, rt)
	return req
}

// TestConsumerGroupHeartbeatRequest: a full heartbeat reaches the
// coordinator with every field and its Has flag; the regex only from v1;
// a null field (unchanged) is told apart from an empty one.
func TestConsumerGroupHeartbeatRequest(t *testing.T) {
	for v := int16(0); v <= 1; v++ {
		f, g := groupFixture(t)
		f.do(t, consumerHeartbeatRequest(v))
		hr := lastGroupRequest[groups.ConsumerHeartbeatRequest](t, g)
		what := fmt.Sprintf("v%d", v)
		if hr.Group != "g" || hr.MemberID != "m1" || hr.MemberEpoch != 4 || hr.InstanceID != "i1" || hr.RackID != "r1" || !hr.HasRackID ||
			hr.RebalanceTimeoutMs != 30000 || fmt.Sprint(hr.SubscribedTopicNames) != "[t]" || !hr.HasSubscribedTopicNames ||
			hr.ServerAssignor != "range" || !hr.HasTopicPartitions || len(hr.TopicPartitions) != 1 ||
			hr.TopicPartitions[0].TopicID != testTopicID || fmt.Sprint(hr.TopicPartitions[0].Partitions) != "[0 2]" {
			t.Errorf("%s: coordinator got %+v", what, hr)
		}
		if hr.ClientID != "test" || hr.ClientHost != "/192.0.2.7" {
			t.Errorf("%s: client %q at %q", what, hr.ClientID, hr.ClientHost)
		}
		if (hr.SubscribedTopicRegex == "^u.*") != (v >= 1) || hr.HasSubscribedTopicRegex != (v >= 1) {
			t.Errorf("%s: regex %q (has %v), want it from v1", what, hr.SubscribedTopicRegex, hr.HasSubscribedTopicRegex)
		}
	}

	// A steady heartbeat: the nullable fields null, "unchanged".
	f, g := groupFixture(t)
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.SetVersion(1)
	req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "g", "m1", 4, -1
	f.do(t, req)
	hr := lastGroupRequest[groups.ConsumerHeartbeatRequest](t, g)
	if hr.HasRackID || hr.HasSubscribedTopicNames || hr.HasSubscribedTopicRegex || hr.HasTopicPartitions || hr.RebalanceTimeoutMs != -1 {
		t.Errorf("a steady heartbeat reached the coordinator as %+v, want every field unchanged", hr)
	}
}

// TestConsumerGroupHeartbeatResponse: the member's id, epoch and interval;
// the assignment only when the coordinator sends one (an empty one is an
// empty list, not null).
func TestConsumerGroupHeartbeatResponse(t *testing.T) {
	f, g := groupFixture(t)
	assignment := []groups.TopicPartitions{{TopicID: testTopicID, Partitions: []int32{1}}}
	g.answer = func(any) (groups.Response, error) {
		return groups.Response{ConsumerHB: &groups.ConsumerHeartbeatResponse{MemberID: "m1", MemberEpoch: 5, HeartbeatIntervalMs: 5000, Assignment: &assignment}}, nil
	}
	resp := onWire(t, f.do(t, consumerHeartbeatRequest(1)).(*kmsg.ConsumerGroupHeartbeatResponse))
	wantCode(t, "heartbeat", resp.ErrorCode, nil)
	if derefString(resp.MemberID) != "m1" || resp.MemberEpoch != 5 || resp.HeartbeatIntervalMillis != 5000 {
		t.Errorf("member %q epoch %d interval %d", derefString(resp.MemberID), resp.MemberEpoch, resp.HeartbeatIntervalMillis)
	}
	if resp.Assignment == nil || len(resp.Assignment.Topics) != 1 || resp.Assignment.Topics[0].TopicID != testTopicID ||
		fmt.Sprint(resp.Assignment.Topics[0].Partitions) != "[1]" {
		t.Errorf("assignment %+v, want t-1", resp.Assignment)
	}

	empty := []groups.TopicPartitions{}
	g.answer = func(any) (groups.Response, error) {
		return groups.Response{ConsumerHB: &groups.ConsumerHeartbeatResponse{MemberID: "m1", MemberEpoch: 6, Assignment: &empty}}, nil
	}
	raw := f.do(t, consumerHeartbeatRequest(1)).(*kmsg.ConsumerGroupHeartbeatResponse)
	if raw.Assignment == nil || raw.Assignment.Topics == nil {
		t.Errorf("an empty assignment as %+v, want an empty list", raw.Assignment)
	}

	g.answer = nil // the fake's default: no assignment change
	if resp := f.do(t, consumerHeartbeatRequest(1)).(*kmsg.ConsumerGroupHeartbeatResponse); resp.Assignment != nil {
		t.Errorf("assignment %+v sent unchanged, want null", resp.Assignment)
	}
}

// TestConsumerGroupHeartbeatErrors: the coordinator's failures and its own
// codes (with their messages) are the top-level error.
func TestConsumerGroupHeartbeatErrors(t *testing.T) {
	for _, c := range groupErrorCodes {
		f, g := groupFixture(t)
		c.setup(t, f, g)
		resp := f.do(t, consumerHeartbeatRequest(1)).(*kmsg.ConsumerGroupHeartbeatResponse)
		wantCode(t, c.name, resp.ErrorCode, c.want)
		if resp.Assignment != nil {
			t.Errorf("%s: an assignment with an error", c.name)
		}
	}
	f, g := groupFixture(t)
	g.answer = func(any) (groups.Response, error) {
		return groups.Response{ConsumerHB: &groups.ConsumerHeartbeatResponse{ErrorCode: kerr.FencedMemberEpoch.Code,
			ErrorMessage: "member epoch 4 is fenced", MemberID: "m1", MemberEpoch: -1}}, nil
	}
	resp := f.do(t, consumerHeartbeatRequest(1)).(*kmsg.ConsumerGroupHeartbeatResponse)
	wantCode(t, "fenced", resp.ErrorCode, kerr.FencedMemberEpoch)
	wantMessage(t, "fenced", resp.ErrorMessage, "member epoch 4 is fenced")
}
