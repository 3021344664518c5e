package kafka

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/engine"
)

func createPartitionsRequest(version int16, count int32, names ...string) *kmsg.CreatePartitionsRequest {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.SetVersion(version)
	req.TimeoutMillis = 1000
	for _, name := range names {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = name, count
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// TestCreatePartitions: at every version each topic's count, and its
// assignment when given (null when not), reach the controller; each topic
// gets the controller's answer.
func TestCreatePartitions(t *testing.T) {
	for v := int16(0); v <= 3; v++ {
		f := newSeamFixture(t)
		f.controller.partitionErrs = map[string]error{
			"missing": fmt.Errorf("%w: topic %q", kerr.UnknownTopicOrPartition, "missing"),
		}
		req := createPartitionsRequest(v, 5, "t", "missing")
		a := kmsg.NewCreatePartitionsRequestTopicAssignment()
		a.Replicas = []int32{2, 3}
		req.Topics[0].Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{a, a}
		resp := onWire(t, f.do(t, req).(*kmsg.CreatePartitionsResponse))
		wantCode(t, fmt.Sprintf("v%d t", v), resp.Topics[0].ErrorCode, nil)
		wantCode(t, fmt.Sprintf("v%d missing", v), resp.Topics[1].ErrorCode, kerr.UnknownTopicOrPartition)
		if resp.Topics[0].Topic != "t" || resp.Topics[1].Topic != "missing" {
			t.Errorf("v%d: answered %q and %q, want t and missing", v, resp.Topics[0].Topic, resp.Topics[1].Topic)
		}
		calls := f.controller.partitionCalls
		if len(calls) != 2 {
			t.Fatalf("v%d: %d calls, want 2", v, len(calls))
		}
		if c := calls[0]; c.topic != "t" || c.count != 5 || len(c.assignment) != 2 || fmt.Sprint(c.assignment[1]) != "[2 3]" || c.validateOnly {
			t.Errorf("v%d: controller asked %+v, want t to 5 partitions on [2 3] twice", v, c)
		}
		if c := calls[1]; c.assignment != nil {
			t.Errorf("v%d: missing asked with assignment %v, want none", v, c.assignment)
		}

		req = createPartitionsRequest(v, 4, "t")
		req.ValidateOnly = true
		f.do(t, req)
		if c := f.controller.partitionCalls[2]; !c.validateOnly {
			t.Errorf("v%d: validate-only asked as %+v", v, c)
		}
	}
}

// TestCreatePartitionsRefused: a topic named twice (every copy), an
// internal topic and a full log dir are refused here; the controller's own
// refusals are the topic's code. Only t2 reaches the controller.
func TestCreatePartitionsRefused(t *testing.T) {
	f := newSeamFixture(t)
	f.addRecords(t, cluster.Record{Kind: cluster.KindTopic, Topic: &cluster.TopicRecord{Name: "__consumer_offsets", ID: cluster.UUID{7}}})
	f.controller.partitionErrs = map[string]error{
		"t2": fmt.Errorf("%w: topic currently has 3 partitions, 2 would not be an increase", kerr.InvalidPartitions),
	}
	resp := f.do(t, createPartitionsRequest(3, 2, "t", "t", "__consumer_offsets", "t2")).(*kmsg.CreatePartitionsResponse)
	wantCode(t, "t (first)", resp.Topics[0].ErrorCode, kerr.InvalidRequest)
	wantMessage(t, "t", resp.Topics[0].ErrorMessage, "Duplicate topic name.")
	wantCode(t, "t (second)", resp.Topics[1].ErrorCode, kerr.InvalidRequest)
	wantCode(t, "__consumer_offsets", resp.Topics[2].ErrorCode, kerr.TopicAuthorizationFailed)
	wantCode(t, "t2", resp.Topics[3].ErrorCode, kerr.InvalidPartitions)
	wantMessage(t, "t2", resp.Topics[3].ErrorMessage, "topic currently has 3 partitions, 2 would not be an increase")
	if len(f.controller.partitionCalls) != 1 || f.controller.partitionCalls[0].topic != "t2" {
		t.Errorf("controller asked %+v, want t2 only", f.controller.partitionCalls)
	}

	f.partitions.writable = fmt.Errorf("%w: 1 MiB free of 10 GiB", engine.ErrLogDirFull)
	resp = f.do(t, createPartitionsRequest(3, 5, "t")).(*kmsg.CreatePartitionsResponse)
	wantCode(t, "t, log dir full", resp.Topics[0].ErrorCode, kerr.KafkaStorageError)
	if len(f.controller.partitionCalls) != 1 {
		t.Errorf("the controller was asked with the log dir full: %+v", f.controller.partitionCalls[1:])
	}
}

// TestCreatePartitionsNotController: NOT_CONTROLLER per topic when there
// is no controller to forward to.
func TestCreatePartitionsNotController(t *testing.T) {
	f := newSeamFixture(t)
	f.controller.notController = true
	resp := f.do(t, createPartitionsRequest(3, 5, "t")).(*kmsg.CreatePartitionsResponse)
	wantCode(t, "t", resp.Topics[0].ErrorCode, kerr.NotController)
}
