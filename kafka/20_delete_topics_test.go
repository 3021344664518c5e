package kafka

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
)

// deleteTopicsRequest names topics by name: in TopicNames below v6, in
// Topics from v6.
func deleteTopicsRequest(version int16, names ...string) *kmsg.DeleteTopicsRequest {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.SetVersion(version)
	req.TimeoutMillis = 1000
	for _, name := range names {
		if version < 6 {
			req.TopicNames = append(req.TopicNames, name)
			continue
		}
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// TestDeleteTopics: at every version a topic named by name is deleted
// and answered with its name (and, from v6, its id); an unknown one is
// UNKNOWN_TOPIC_OR_PARTITION and never reaches the controller.
func TestDeleteTopics(t *testing.T) {
	for v := int16(1); v <= 6; v++ {
		f := newSeamFixture(t)
		resp := onWire(t, f.do(t, deleteTopicsRequest(v, "t", "missing")).(*kmsg.DeleteTopicsResponse))
		if len(resp.Topics) != 2 {
			t.Fatalf("v%d: %d topics answered, want 2", v, len(resp.Topics))
		}
		wantCode(t, fmt.Sprintf("v%d t", v), resp.Topics[0].ErrorCode, nil)
		if derefString(resp.Topics[0].Topic) != "t" {
			t.Errorf("v%d: answered %q, want t", v, derefString(resp.Topics[0].Topic))
		}
		if wantID := v >= 6; (resp.Topics[0].TopicID == testTopicID) != wantID {
			t.Errorf("v%d: topic id %v in the answer, want it from v6 only", v, resp.Topics[0].TopicID)
		}
		wantCode(t, fmt.Sprintf("v%d missing", v), resp.Topics[1].ErrorCode, kerr.UnknownTopicOrPartition)
		if len(f.controller.deleted) != 1 || f.controller.deleted[0] != "t" {
			t.Errorf("v%d: controller deleted %v, want t only", v, f.controller.deleted)
		}
	}
}

// TestDeleteTopicsByID: v6 names a topic by id or by name, exactly one of
// the two; the duplicates Kafka's controller refuses are INVALID_REQUEST
// with its messages.
func TestDeleteTopicsByID(t *testing.T) {
	f := newSeamFixture(t)
	other := cluster.UUID{4, 5, 6}
	f.addRecords(t, cluster.Record{Kind: cluster.KindTopic, Topic: &cluster.TopicRecord{Name: "u", ID: other}})
	entry := func(name string, id cluster.UUID) kmsg.DeleteTopicsRequestTopic {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		if name != "" {
			rt.Topic = kmsg.StringPtr(name)
		}
		rt.TopicID = id
		return rt
	}
	req := deleteTopicsRequest(6)
	req.Topics = []kmsg.DeleteTopicsRequestTopic{
		entry("", testTopicID),       // t by id
		entry("", cluster.UUID{9}),   // unknown id
		entry("", cluster.UUID{}),    // neither
		entry("u", other),            // both
		entry("v", cluster.UUID{}),   // unknown name
		entry("dup", cluster.UUID{}), // twice by name
		entry("dup", cluster.UUID{}),
	}
	resp := f.do(t, req).(*kmsg.DeleteTopicsResponse)
	want := []struct {
		err     *kerr.Error
		message string
	}{
		{nil, ""},
		{kerr.UnknownTopicID, kerr.UnknownTopicID.Description},
		{kerr.InvalidRequest, "Neither topic name nor id were specified."},
		{kerr.InvalidRequest, "You may not specify both topic name and topic id."},
		{kerr.UnknownTopicOrPartition, kerr.UnknownTopicOrPartition.Description},
		{kerr.InvalidRequest, "Duplicate topic name."},
		{kerr.InvalidRequest, "Duplicate topic name."},
	}
	for i, w := range want {
		what := fmt.Sprintf("entry %d", i)
		wantCode(t, what, resp.Topics[i].ErrorCode, w.err)
		if w.err != nil {
			wantMessage(t, what, resp.Topics[i].ErrorMessage, w.message)
		}
	}
	if derefString(resp.Topics[0].Topic) != "t" || resp.Topics[0].TopicID != testTopicID {
		t.Errorf("entry 0 answered as %q %v, want t and its id", derefString(resp.Topics[0].Topic), resp.Topics[0].TopicID)
	}
	if len(f.controller.deleted) != 1 || f.controller.deleted[0] != "t" {
		t.Errorf("controller deleted %v, want t only", f.controller.deleted)
	}

	// A name and the id it resolves to, in one request.
	req.Topics = []kmsg.DeleteTopicsRequestTopic{entry("u", cluster.UUID{}), entry("", other)}
	resp = f.do(t, req).(*kmsg.DeleteTopicsResponse)
	for i, rt := range resp.Topics {
		wantCode(t, fmt.Sprintf("u, entry %d", i), rt.ErrorCode, kerr.InvalidRequest)
		wantMessage(t, fmt.Sprintf("u, entry %d", i), rt.ErrorMessage, "The provided topic name maps to an ID that was already supplied.")
	}
}

// TestDeleteTopicsInternal: the brokers' own topics cannot be deleted.
func TestDeleteTopicsInternal(t *testing.T) {
	f := newSeamFixture(t)
	id := cluster.UUID{7}
	f.addRecords(t, cluster.Record{Kind: cluster.KindTopic, Topic: &cluster.TopicRecord{Name: "__consumer_offsets", ID: id}})
	resp := f.do(t, deleteTopicsRequest(5, "__consumer_offsets")).(*kmsg.DeleteTopicsResponse)
	wantCode(t, "__consumer_offsets", resp.Topics[0].ErrorCode, kerr.TopicAuthorizationFailed)
	if len(f.controller.deleted) != 0 {
		t.Errorf("controller deleted %v", f.controller.deleted)
	}
}

// TestDeleteTopicsNotController: each topic is NOT_CONTROLLER when there
// is no controller to forward to; the controller's per-topic errors are
// the topics' codes.
func TestDeleteTopicsNotController(t *testing.T) {
	f := newSeamFixture(t)
	f.controller.notController = true
	resp := f.do(t, deleteTopicsRequest(6, "t")).(*kmsg.DeleteTopicsResponse)
	wantCode(t, "t", resp.Topics[0].ErrorCode, kerr.NotController)

	f = newSeamFixture(t)
	f.controller.deleteErrs = map[string]error{"t": fmt.Errorf("%w: metadata quorum did not commit in time", kerr.RequestTimedOut)}
	resp = f.do(t, deleteTopicsRequest(6, "t")).(*kmsg.DeleteTopicsResponse)
	wantCode(t, "t", resp.Topics[0].ErrorCode, kerr.RequestTimedOut)
	wantMessage(t, "t", resp.Topics[0].ErrorMessage, "metadata quorum did not commit in time")
}
