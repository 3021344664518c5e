package kafka

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
)

// reassignPartition is one partition of an AlterPartitionReassignments
// request; nil replicas cancel its reassignment.
type reassignPartition struct {
	topic     string
	partition int32
	replicas  []int32
}

func alterReassignmentsRequest(version int16, parts ...reassignPartition) *kmsg.AlterPartitionAssignmentsRequest {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.SetVersion(version)
	req.TimeoutMillis = 1000
	for _, p := range parts {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != p.topic {
			rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			rt.Topic = p.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = p.partition, p.replicas
		rt := &req.Topics[len(req.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	return req
}

// TestAlterPartitionReassignments: targets and cancellations (null
// replicas) reach the controller as given; each partition gets its
// answer, grouped by topic.
func TestAlterPartitionReassignments(t *testing.T) {
	f := newSeamFixture(t)
	f.controller.reassignErrs = map[cluster.TopicPartition]error{
		{Topic: "t", Partition: 1}: fmt.Errorf("%w: no reassignment of t-1 in progress", kerr.NoReassignmentInProgress),
		{Topic: "u", Partition: 0}: kerr.UnknownTopicOrPartition,
	}
	resp := onWire(t, f.do(t, alterReassignmentsRequest(1,
		reassignPartition{"t", 0, []int32{2, 3}},
		reassignPartition{"t", 1, nil},
		reassignPartition{"u", 0, []int32{1}},
	)).(*kmsg.AlterPartitionAssignmentsResponse))
	wantCode(t, "top level", resp.ErrorCode, nil)
	if len(f.controller.reassignCalls) != 1 {
		t.Fatalf("%d calls, want 1", len(f.controller.reassignCalls))
	}
	reqs := f.controller.reassignCalls[0].reqs
	if len(reqs) != 3 || fmt.Sprint(reqs[0].Replicas) != "[2 3]" || reqs[1].Replicas != nil || reqs[2].Topic != "u" {
		t.Errorf("controller asked %+v, want t-0 to [2 3], t-1 cancelled, u-0 to [1]", reqs)
	}
	if len(resp.Topics) != 2 || len(resp.Topics[0].Partitions) != 2 || resp.Topics[1].Topic != "u" {
		t.Fatalf("answer %+v, want t's two partitions then u's", resp.Topics)
	}
	wantCode(t, "t-0", resp.Topics[0].Partitions[0].ErrorCode, nil)
	wantCode(t, "t-1", resp.Topics[0].Partitions[1].ErrorCode, kerr.NoReassignmentInProgress)
	wantMessage(t, "t-1", resp.Topics[0].Partitions[1].ErrorMessage, "no reassignment of t-1 in progress")
	wantCode(t, "u-0", resp.Topics[1].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
}

// TestAlterPartitionReassignmentsVersions: v0 has no
// AllowReplicationFactorChange and allows the change; v1 passes the
// client's choice on and echoes it.
func TestAlterPartitionReassignmentsVersions(t *testing.T) {
	for _, c := range []struct {
		version int16
		allow   bool
		want    bool
	}{{0, false, true}, {1, false, false}, {1, true, true}} {
		f := newSeamFixture(t)
		req := alterReassignmentsRequest(c.version, reassignPartition{"t", 0, []int32{2, 3}})
		req.AllowReplicationFactorChange = c.allow
		resp := onWire(t, f.do(t, req).(*kmsg.AlterPartitionAssignmentsResponse))
		if got := f.controller.reassignCalls[0].allowRFChange; got != c.want {
			t.Errorf("v%d allow %v: the controller was told %v, want %v", c.version, c.allow, got, c.want)
		}
		if c.version >= 1 && resp.AllowReplicationFactorChange != c.allow {
			t.Errorf("v%d allow %v: echoed %v", c.version, c.allow, resp.AllowReplicationFactorChange)
		}
	}
}

// TestAlterPartitionReassignmentsNotController: a refusal of the whole
// request is the top-level error, with no partitions.
func TestAlterPartitionReassignmentsNotController(t *testing.T) {
	f := newSeamFixture(t)
	f.controller.notController = true
	resp := f.do(t, alterReassignmentsRequest(1, reassignPartition{"t", 0, []int32{2}})).(*kmsg.AlterPartitionAssignmentsResponse)
	wantCode(t, "top level", resp.ErrorCode, kerr.NotController)
	if resp.ErrorMessage == nil || len(resp.Topics) != 0 {
		t.Errorf("message %q, topics %+v; want a message and no topics", derefString(resp.ErrorMessage), resp.Topics)
	}
}
