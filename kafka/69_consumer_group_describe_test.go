package kafka

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

func consumerGroupDescribeRequest(version int16, ids ...string) *kmsg.ConsumerGroupDescribeRequest {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.SetVersion(version)
	req.Groups = ids
	return req
}

// TestConsumerGroupDescribe: each group as its coordinator describes it,
// topic names from the metadata image (empty for an id it does not
// know), member type (v1) consumer; a classic group or none is
// GROUP_ID_NOT_FOUND.
func TestConsumerGroupDescribe(t *testing.T) {
	for v := int16(0); v <= 1; v++ {
		f, g := groupFixture(t)
		gone := [16]byte{9}
		g.answer = func(req any) (groups.Response, error) {
			if req.(*groups.ConsumerDescribeRequest).Group != "g" {
				return emptyGroupResponse(req)
			}
			return groups.Response{ConsumerDescribe: &groups.ConsumerDescribeResponse{Group: "g", State: "Reconciling", Epoch: 3, AssignmentEpoch: 2, AssignorName: "uniform",
				Members: []groups.ConsumerDescribedMember{{MemberID: "m1", MemberEpoch: 2, ClientID: "c1", ClientHost: "/192.0.2.7", InstanceID: "i1",
					SubscribedTopicNames: []string{"t"},
					Assignment:           []groups.TopicPartitions{{TopicID: testTopicID, Partitions: []int32{0}}},
					TargetAssignment:     []groups.TopicPartitions{{TopicID: testTopicID, Partitions: []int32{0, 1}}, {TopicID: gone, Partitions: []int32{0}}},
				}}}}, nil
		}
		resp := onWire(t, f.do(t, consumerGroupDescribeRequest(v, "g", "classic")).(*kmsg.ConsumerGroupDescribeResponse))
		what := fmt.Sprintf("v%d", v)
		if fmt.Sprint(g.submitted) != "[g classic]" || len(resp.Groups) != 2 {
			t.Fatalf("%s: submitted %v, answered %+v", what, g.submitted, resp.Groups)
		}
		rg := resp.Groups[0]
		wantCode(t, what+" g", rg.ErrorCode, nil)
		if rg.State != "Reconciling" || rg.Epoch != 3 || rg.AssignmentEpoch != 2 || rg.AssignorName != "uniform" || len(rg.Members) != 1 {
			t.Fatalf("%s: %+v", what, rg)
		}
		m := rg.Members[0]
		if m.MemberID != "m1" || m.MemberEpoch != 2 || derefString(m.InstanceID) != "i1" || m.RackID != nil || m.SubscribedTopicRegex != nil ||
			fmt.Sprint(m.SubscribedTopics) != "[t]" {
			t.Errorf("%s: member %+v", what, m)
		}
		if a := m.Assignment.TopicPartitions; len(a) != 1 || a[0].Topic != "t" || fmt.Sprint(a[0].Partitions) != "[0]" {
			t.Errorf("%s: assignment %+v, want t-0", what, a)
		}
		if ta := m.TargetAssignment.TopicPartitions; len(ta) != 2 || ta[0].Topic != "t" || ta[1].Topic != "" || ta[1].TopicID != gone {
			t.Errorf("%s: target %+v, want t and an unnamed id", what, ta)
		}
		if wantType := map[bool]int8{true: 1, false: -1}[v >= 1]; m.MemberType != wantType {
			t.Errorf("%s: member type %d, want %d", what, m.MemberType, wantType)
		}
		wantCode(t, what+" classic", resp.Groups[1].ErrorCode, kerr.GroupIDNotFound)
	}
}

// TestConsumerGroupDescribeCoordinatorErrors: each group carries its
// coordinator's failure.
func TestConsumerGroupDescribeCoordinatorErrors(t *testing.T) {
	for _, c := range groupErrorCodes {
		f, g := groupFixture(t)
		c.setup(t, f, g)
		resp := f.do(t, consumerGroupDescribeRequest(1, "g")).(*kmsg.ConsumerGroupDescribeResponse)
		wantCode(t, c.name, resp.Groups[0].ErrorCode, c.want)
		if resp.Groups[0].Group != "g" {
			t.Errorf("%s: answered as %q", c.name, resp.Groups[0].Group)
		}
	}
}
