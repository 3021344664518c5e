package kafka

import (
	"errors"
	"fmt"
	"strings"
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

// TestCreateTopicsNotInEffect: a config wren does not apply yet is refused
// by CreateTopics exactly as AlterConfigs and IncrementalAlterConfigs
// refuse it on a topic (same code, same message), and the controller never
// sees that topic; the other topics of the request go on. A key in effect,
// unclean.leader.election.enable among them, passes.
func TestCreateTopicsNotInEffect(t *testing.T) {
	f := newSeamFixture(t)
	req := createTopicsRequest("gz", "unclean", "plain")
	setConfig := func(i int, k, v string) {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, &v
		req.Topics[i].Configs = append(req.Topics[i].Configs, c)
	}
	setConfig(0, "retention.ms", "1000")
	setConfig(0, "compression.type", "gzip")
	setConfig(1, "unclean.leader.election.enable", "true")
	resp := f.do(t, req).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 3 || resp.Topics[0].Topic != "gz" || resp.Topics[1].Topic != "unclean" || resp.Topics[2].Topic != "plain" {
		t.Fatalf("answers %+v, want gz, unclean, plain in order", resp.Topics)
	}
	wantCode(t, "gz", resp.Topics[0].ErrorCode, kerr.InvalidConfig)
	wantCode(t, "unclean", resp.Topics[1].ErrorCode, nil)
	wantCode(t, "plain", resp.Topics[2].ErrorCode, nil)
	var created []string
	for _, c := range f.controller.created {
		created = append(created, c.Name)
	}
	if fmt.Sprint(created) != "[unclean plain]" {
		t.Errorf("the controller was asked for %v, want [unclean plain]", created)
	}

	alter := f.do(t, alterConfigsRequest(2, alterConfigsResource(kmsg.ConfigResourceTypeTopic, "t", "compression.type", "gzip"))).(*kmsg.AlterConfigsResponse)
	incr := f.do(t, incrementalAlterConfigsRequest(1, incrementalResource(kmsg.ConfigResourceTypeTopic, "t", setOp("compression.type", "gzip")))).(*kmsg.IncrementalAlterConfigsResponse)
	create := resp.Topics[0]
	for what, got := range map[string]struct {
		code int16
		msg  *string
	}{
		"AlterConfigs":            {alter.Resources[0].ErrorCode, alter.Resources[0].ErrorMessage},
		"IncrementalAlterConfigs": {incr.Resources[0].ErrorCode, incr.Resources[0].ErrorMessage},
	} {
		if got.code != create.ErrorCode || derefString(got.msg) != derefString(create.ErrorMessage) {
			t.Errorf("%s refuses compression.type with %d %q; CreateTopics with %d %q", what, got.code, derefString(got.msg), create.ErrorCode, derefString(create.ErrorMessage))
		}
	}
	if !strings.HasPrefix(derefString(create.ErrorMessage), "compression.type is not in effect in wren yet") {
		t.Errorf("CreateTopics' message %q does not name the key", derefString(create.ErrorMessage))
	}
}
