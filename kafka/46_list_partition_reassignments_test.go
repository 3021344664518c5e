package kafka

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
)

// TestListPartitionReassignments: the partitions named (null topics: all)
// reach the controller; its list is the answer, grouped by topic, each
// partition once, with empty lists as empty arrays.
func TestListPartitionReassignments(t *testing.T) {
	f := newSeamFixture(t)
	tp := func(topic string, p int32) cluster.TopicPartition {
		return cluster.TopicPartition{Topic: topic, Partition: p}
	}
	f.controller.ongoing = []cluster.OngoingReassignment{
		{TopicPartition: tp("t", 0), Replicas: []int32{2, 3, 1}, AddingReplicas: []int32{2, 3}, RemovingReplicas: []int32{1}},
		{TopicPartition: tp("t", 0), Replicas: []int32{2, 3, 1}},
		{TopicPartition: tp("u", 4), Replicas: []int32{1, 2}},
	}
	raw := f.do(t, kmsg.NewPtrListPartitionReassignmentsRequest()).(*kmsg.ListPartitionReassignmentsResponse)
	resp := onWire(t, raw)
	if asked := f.controller.listAsked[0]; asked != nil {
		t.Errorf("null topics asked for %v, want nil (every partition)", asked)
	}
	wantCode(t, "top level", resp.ErrorCode, nil)
	if len(resp.Topics) != 2 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[1].Topic != "u" {
		t.Fatalf("answer %+v, want t-0 then u-4", resp.Topics)
	}
	p := resp.Topics[0].Partitions[0]
	if fmt.Sprint(p.Replicas, p.AddingReplicas, p.RemovingReplicas) != "[2 3 1] [2 3] [1]" {
		t.Errorf("t-0: %v %v %v, want [2 3 1] [2 3] [1]", p.Replicas, p.AddingReplicas, p.RemovingReplicas)
	}
	if u := raw.Topics[1].Partitions[0]; u.AddingReplicas == nil || u.RemovingReplicas == nil {
		t.Errorf("u-4: adding %v removing %v, want empty arrays", u.AddingReplicas, u.RemovingReplicas)
	}

	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	rt := kmsg.NewListPartitionReassignmentsRequestTopic()
	rt.Topic, rt.Partitions = "t", []int32{0, 2}
	req.Topics = append(req.Topics, rt)
	f.do(t, req)
	if asked := f.controller.listAsked[1]; fmt.Sprint(asked) != "[{t 0} {t 2}]" {
		t.Errorf("asked for %v, want t-0 and t-2", asked)
	}
}

// TestListPartitionReassignmentsErrors: the controller's refusal (not the
// controller, an unknown topic) is the top-level error.
func TestListPartitionReassignmentsErrors(t *testing.T) {
	f := newSeamFixture(t)
	f.controller.listErr = fmt.Errorf("%w: topic missing", kerr.UnknownTopicOrPartition)
	resp := f.do(t, kmsg.NewPtrListPartitionReassignmentsRequest()).(*kmsg.ListPartitionReassignmentsResponse)
	wantCode(t, "unknown topic", resp.ErrorCode, kerr.UnknownTopicOrPartition)
	wantMessage(t, "unknown topic", resp.ErrorMessage, "topic missing")

	f.controller.notController = true
	resp = f.do(t, kmsg.NewPtrListPartitionReassignmentsRequest()).(*kmsg.ListPartitionReassignmentsResponse)
	wantCode(t, "not controller", resp.ErrorCode, kerr.NotController)
}
