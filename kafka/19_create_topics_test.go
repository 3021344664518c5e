package kafka

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
)

func createTopicsRequest(names ...string) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = 1000
	for _, name := range names {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 2, 1
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// TestCreateTopics: on the controller each topic succeeds or fails on its
// own; validate-only creates nothing.
func TestCreateTopics(t *testing.T) {
	f := newSeamFixture(t)
	f.controller.createErrs = map[string]error{"t": fmt.Errorf("%w: topic t exists", kerr.TopicAlreadyExists)}
	resp := f.do(t, createTopicsRequest("new", "t")).(*kmsg.CreateTopicsResponse)
	wantCode(t, "new", resp.Topics[0].ErrorCode, nil)
	if resp.Topics[0].NumPartitions != 2 || resp.Topics[0].ReplicationFactor != 1 {
		t.Errorf("new: %d partitions RF %d, want 2 and 1", resp.Topics[0].NumPartitions, resp.Topics[0].ReplicationFactor)
	}
	wantCode(t, "t", resp.Topics[1].ErrorCode, kerr.TopicAlreadyExists)
	if resp.Topics[1].ErrorMessage == nil || *resp.Topics[1].ErrorMessage == "" {
		t.Error("t: no error message")
	}
	if len(f.controller.created) != 1 || f.controller.created[0].Name != "new" {
		t.Errorf("created %+v, want new", f.controller.created)
	}

	req := createTopicsRequest("dry")
	req.ValidateOnly = true
	f.do(t, req)
	if len(f.controller.created) != 1 {
		t.Errorf("validate-only created %+v", f.controller.created[1:])
	}
}

// TestCreateTopicsNotController: a node that is not the controller, with
// no controller to forward to, answers NOT_CONTROLLER, so the client
// refreshes its metadata and retries there.
func TestCreateTopicsNotController(t *testing.T) {
	f := newSeamFixture(t)
	f.controller.notController = true
	resp := f.do(t, createTopicsRequest("new")).(*kmsg.CreateTopicsResponse)
	wantCode(t, "new", resp.Topics[0].ErrorCode, kerr.NotController)
}

// TestCreateTopicsForwarded: on a node that is not the controller the
// request goes to the acting controller and the client gets its answer;
// the local controller is not asked.
func TestCreateTopicsForwarded(t *testing.T) {
	f := newSeamFixture(t)
	f.controller.notController = true
	var forwarded *kmsg.CreateTopicsRequest
	f.controller.forward = func(key, version int16, body []byte) ([]byte, error) {
		if kmsg.Key(key) != kmsg.CreateTopics || version != 7 {
			t.Errorf("forwarded %s v%d, want CreateTopics v7", kmsg.NameForKey(key), version)
		}
		forwarded = kmsg.NewPtrCreateTopicsRequest()
		forwarded.SetVersion(version)
		if err := forwarded.ReadFrom(body); err != nil {
			t.Errorf("the forwarded body does not decode: %v", err)
		}
		resp := kmsg.NewPtrCreateTopicsResponse()
		resp.SetVersion(version)
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "new", 2, 1
		rt.TopicID = [16]byte{9}
		resp.Topics = append(resp.Topics, rt)
		return resp.AppendTo(nil), nil
	}
	resp := f.do(t, createTopicsRequest("new")).(*kmsg.CreateTopicsResponse)
	if forwarded == nil || len(forwarded.Topics) != 1 || forwarded.Topics[0].Topic != "new" {
		t.Fatalf("forwarded %+v, want the request for new", forwarded)
	}
	wantCode(t, "new", resp.Topics[0].ErrorCode, nil)
	if resp.Topics[0].TopicID != [16]byte{9} {
		t.Errorf("topic id %v, want the controller's", resp.Topics[0].TopicID)
	}

	// Forwarding fails (the controller does not answer): answered here.
	f.controller.forward = func(int16, int16, []byte) ([]byte, error) {
		return nil, errors.New("controller did not answer in time")
	}
	resp = f.do(t, createTopicsRequest("new")).(*kmsg.CreateTopicsResponse)
	wantCode(t, "new, forwarding failed", resp.Topics[0].ErrorCode, kerr.NotController)
}

// TestCreateTopicsStorageError: while the log dir cannot take new
// partitions nothing is created and every topic says why.
func TestCreateTopicsStorageError(t *testing.T) {
	f := newSeamFixture(t)
	f.partitions.writable = fmt.Errorf("%w: 1 MiB free of 10 GiB", engine.ErrLogDirFull)
	resp := f.do(t, createTopicsRequest("a", "b")).(*kmsg.CreateTopicsResponse)
	for _, rt := range resp.Topics {
		wantCode(t, rt.Topic, rt.ErrorCode, kerr.KafkaStorageError)
	}
	if len(f.controller.created) != 0 {
		t.Errorf("created %+v with the log dir full", f.controller.created)
	}
}
