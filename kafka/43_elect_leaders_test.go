package kafka

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
)

// electLeadersRequest names partitions as "topic", p, p, ..., "topic",
// ...; none at all is the null list (every partition).
func electLeadersRequest(version int16, electionType int8, spec ...any) *kmsg.ElectLeadersRequest {
	req := kmsg.NewPtrElectLeadersRequest()
	req.SetVersion(version)
	req.ElectionType = electionType
	req.TimeoutMillis = 1000
	for _, s := range spec {
		switch s := s.(type) {
		case string:
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic = s
			req.Topics = append(req.Topics, rt)
		case int:
			rt := &req.Topics[len(req.Topics)-1]
			rt.Partitions = append(rt.Partitions, int32(s))
		}
	}
	return req
}

// electedCodes maps each answered partition to its code.
func electedCodes(resp *kmsg.ElectLeadersResponse) map[cluster.TopicPartition]int16 {
	out := map[cluster.TopicPartition]int16{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			out[cluster.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] = rp.ErrorCode
		}
	}
	return out
}

// TestElectLeaders: the partitions named (each once) reach the controller
// with the election type; each gets the controller's answer, grouped by
// topic.
func TestElectLeaders(t *testing.T) {
	f := newSeamFixture(t)
	f.controller.elect = func(_ cluster.Election, partitions []cluster.TopicPartition) ([]cluster.ElectLeadersResult, error) {
		var out []cluster.ElectLeadersResult
		for _, tp := range partitions {
			res := cluster.ElectLeadersResult{TopicPartition: tp, Leader: tp.Partition + 1}
			switch {
			case tp.Topic == "missing":
				res.Leader, res.Err = cluster.NoLeader, kerr.UnknownTopicOrPartition
			case tp.Partition == 1:
				res.Err = fmt.Errorf("%w: partition t-1 is led by its preferred replica", kerr.ElectionNotNeeded)
			}
			out = append(out, res)
		}
		return out, nil
	}
	resp := onWire(t, f.do(t, electLeadersRequest(2, electionPreferred, "t", 0, 1, 0, "missing", 0)).(*kmsg.ElectLeadersResponse))
	wantCode(t, "top level", resp.ErrorCode, nil)
	call := f.controller.elections[0]
	if call.election != cluster.ElectPreferred || fmt.Sprint(call.partitions) != "[{t 0} {t 1} {missing 0}]" {
		t.Errorf("controller asked %v for %v, want preferred for t-0, t-1, missing-0", call.election, call.partitions)
	}
	if len(resp.Topics) != 2 || resp.Topics[0].Topic != "t" || len(resp.Topics[0].Partitions) != 2 {
		t.Fatalf("answer %+v, want t's two partitions, then missing's", resp.Topics)
	}
	codes := electedCodes(resp)
	wantCode(t, "t-0", codes[cluster.TopicPartition{Topic: "t", Partition: 0}], nil)
	wantCode(t, "t-1", codes[cluster.TopicPartition{Topic: "t", Partition: 1}], kerr.ElectionNotNeeded)
	wantCode(t, "missing-0", codes[cluster.TopicPartition{Topic: "missing", Partition: 0}], kerr.UnknownTopicOrPartition)
	if m := resp.Topics[0].Partitions[1].ErrorMessage; m == nil || *m != "partition t-1 is led by its preferred replica" {
		t.Errorf("t-1: message %q, want the controller's", derefString(m))
	}

	// Null topics: every partition, the controller's list is the answer.
	f.do(t, electLeadersRequest(2, electionUnclean))
	if call := f.controller.elections[1]; call.election != cluster.ElectUnclean || call.partitions != nil {
		t.Errorf("null topics asked %v for %v, want unclean for every partition (nil)", call.election, call.partitions)
	}
}

// TestElectLeadersVersions: v0 has no election type (always preferred)
// and no top-level error: a refusal is on every partition named.
func TestElectLeadersVersions(t *testing.T) {
	f := newSeamFixture(t)
	f.controller.notController = true
	for v := int16(0); v <= 2; v++ {
		resp := onWire(t, f.do(t, electLeadersRequest(v, electionPreferred, "t", 0, 2)).(*kmsg.ElectLeadersResponse))
		if v == 0 {
			wantCode(t, "v0 top level (not on the wire)", resp.ErrorCode, nil)
		} else {
			wantCode(t, fmt.Sprintf("v%d top level", v), resp.ErrorCode, kerr.NotController)
		}
		codes := electedCodes(resp)
		if len(codes) != 2 {
			t.Fatalf("v%d: %d partitions answered, want 2", v, len(codes))
		}
		for tp, code := range codes {
			wantCode(t, fmt.Sprintf("v%d %v", v, tp), code, kerr.NotController)
		}
	}
}

// TestElectLeadersUnknownType: an election type Kafka does not define is
// INVALID_REQUEST and asks the controller nothing.
func TestElectLeadersUnknownType(t *testing.T) {
	f := newSeamFixture(t)
	resp := f.do(t, electLeadersRequest(2, 7, "t", 0)).(*kmsg.ElectLeadersResponse)
	wantCode(t, "top level", resp.ErrorCode, kerr.InvalidRequest)
	wantCode(t, "t-0", electedCodes(resp)[cluster.TopicPartition{Topic: "t", Partition: 0}], kerr.InvalidRequest)
	if len(f.controller.elections) != 0 {
		t.Errorf("controller asked %+v", f.controller.elections)
	}
}
