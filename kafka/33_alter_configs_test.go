package kafka

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
)

// alterConfigsResource is one resource of an AlterConfigs request; kv
// alternates keys and values, "<null>" standing for a null value.
func alterConfigsResource(rt kmsg.ConfigResourceType, name string, kv ...string) kmsg.AlterConfigsRequestResource {
	rr := kmsg.NewAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = rt, name
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name = kv[i]
		if kv[i+1] != "<null>" {
			c.Value = kmsg.StringPtr(kv[i+1])
		}
		rr.Configs = append(rr.Configs, c)
	}
	return rr
}

func alterConfigsRequest(version int16, resources ...kmsg.AlterConfigsRequestResource) *kmsg.AlterConfigsRequest {
	req := kmsg.NewPtrAlterConfigsRequest()
	req.SetVersion(version)
	req.Resources = resources
	return req
}

// TestAlterConfigsReplacesTopicConfigs: at every version the topic's
// overrides are replaced whole (replace true: the keys not given are
// deleted by the controller), and validate-only reaches the controller as
// such.
func TestAlterConfigsReplacesTopicConfigs(t *testing.T) {
	for v := int16(0); v <= 2; v++ {
		f := newSeamFixture(t)
		f.addRecords(t, configRecord(cluster.ResourceTopic, "t", "segment.ms", "60000"))
		req := alterConfigsRequest(v, alterConfigsResource(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", "2000"))
		resp := onWire(t, f.do(t, req).(*kmsg.AlterConfigsResponse))
		wantCode(t, "t", resp.Resources[0].ErrorCode, nil)
		if resp.Resources[0].ResourceName != "t" || resp.Resources[0].ResourceType != kmsg.ConfigResourceTypeTopic {
			t.Errorf("v%d: answered %v %q, want TOPIC t", v, resp.Resources[0].ResourceType, resp.Resources[0].ResourceName)
		}
		if len(f.controller.alters) != 1 {
			t.Fatalf("v%d: %d AlterConfigs calls, want 1", v, len(f.controller.alters))
		}
		a := f.controller.alters[0]
		if a.rt != cluster.ResourceTopic || a.name != "t" || !a.replace || a.validateOnly ||
			len(a.ops) != 1 || a.ops[0].Key != "retention.ms" || derefString(a.ops[0].Value) != "2000" {
			t.Errorf("v%d: controller asked %+v, want t's configs replaced by retention.ms=2000", v, a)
		}

		req.ValidateOnly = true
		f.do(t, req)
		if len(f.controller.alters) != 2 || !f.controller.alters[1].validateOnly {
			t.Errorf("v%d: validate-only reached the controller as %+v", v, f.controller.alters[1:])
		}
	}
}

// TestAlterConfigsRefused: what is refused here never reaches the
// controller, and each resource gets its own code and Kafka's message.
func TestAlterConfigsRefused(t *testing.T) {
	f := newSeamFixture(t)
	topic := kmsg.ConfigResourceTypeTopic
	broker := kmsg.ConfigResourceTypeBroker
	cases := []struct {
		name     string
		resource kmsg.AlterConfigsRequestResource
		want     *kerr.Error
		message  string // a prefix of the message
	}{
		{"bad value", alterConfigsResource(topic, "t", "retention.ms", "abc"), kerr.InvalidConfig, "Invalid value abc for configuration retention.ms"},
		{"unknown topic config", alterConfigsResource(topic, "t", "no.such.config", "1"), kerr.InvalidConfig, "Unknown topic config name: no.such.config"},
		{"missing topic", alterConfigsResource(topic, "missing", "retention.ms", "1"), kerr.UnknownTopicOrPartition, "The topic 'missing' does not exist."},
		{"null value", alterConfigsResource(topic, "t", "retention.ms", "<null>"), kerr.InvalidRequest, "Null value not supported for : retention.ms"},
		{"key twice", alterConfigsResource(topic, "t", "retention.ms", "1", "retention.ms", "2"), kerr.InvalidRequest, "Error due to duplicate config keys"},
		{"other broker", alterConfigsResource(broker, "2", "log.retention.ms", "1"), kerr.InvalidRequest, "Unexpected broker id, expected 1, but received 2"},
		{"broker not a number", alterConfigsResource(broker, "x", "log.retention.ms", "1"), kerr.InvalidRequest, "Node id must be an integer, but it is: x"},
		// Kafka answers broker config errors with INVALID_REQUEST (KAFKA-13609).
		{"read-only broker setting", alterConfigsResource(broker, "1", "node.id", "7"), kerr.InvalidRequest, ""},
		{"start-only broker setting", alterConfigsResource(broker, "1", "log.cleaner.backoff.ms", "100"), kerr.InvalidConfig, "wren reads log.cleaner.backoff.ms only at start"},
		{"topic setting not in effect", alterConfigsResource(topic, "t", "segment.jitter.ms", "100"), kerr.InvalidConfig, "segment.jitter.ms is not in effect in wren yet"},
		{"cluster-wide setting for one broker", alterConfigsResource(broker, "1", "unclean.leader.election.enable", "true"), kerr.InvalidConfig, "unclean.leader.election.enable cannot be set for one broker"},
		{"unknown resource type", alterConfigsResource(kmsg.ConfigResourceTypeBrokerLogger, "1", "x", "y"), kerr.InvalidRequest, "Unknown resource type 8"},
	}
	for _, c := range cases {
		resp := f.do(t, alterConfigsRequest(2, c.resource)).(*kmsg.AlterConfigsResponse)
		res := resp.Resources[0]
		wantCode(t, c.name, res.ErrorCode, c.want)
		if res.ErrorMessage == nil || !strings.HasPrefix(*res.ErrorMessage, c.message) {
			t.Errorf("%s: message %q, want one starting %q", c.name, derefString(res.ErrorMessage), c.message)
		}
	}
	if len(f.controller.alters) != 0 {
		t.Errorf("refused changes reached the controller: %+v", f.controller.alters)
	}
}

// TestAlterConfigsDuplicateResource: a resource named twice is refused in
// every copy; the others of the request still apply.
func TestAlterConfigsDuplicateResource(t *testing.T) {
	f := newSeamFixture(t)
	twice := alterConfigsResource(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", "1")
	resp := f.do(t, alterConfigsRequest(1, twice, alterConfigsResource(kmsg.ConfigResourceTypeBroker, "1", "log.retention.ms", "5000"), twice)).(*kmsg.AlterConfigsResponse)
	wantCode(t, "t (first)", resp.Resources[0].ErrorCode, kerr.InvalidRequest)
	wantCode(t, "broker 1", resp.Resources[1].ErrorCode, nil)
	wantCode(t, "t (second)", resp.Resources[2].ErrorCode, kerr.InvalidRequest)
	wantMessage(t, "t", resp.Resources[0].ErrorMessage, "Each resource must appear at most once.")
	if len(f.controller.alters) != 1 || f.controller.alters[0].rt != cluster.ResourceBroker || f.controller.alters[0].name != "1" {
		t.Errorf("controller asked %+v, want broker 1's change only", f.controller.alters)
	}
}

// TestAlterConfigsBrokerLayers: "" is the cluster-wide layer, this node's
// id its own; emptying a layer that is already empty asks nothing.
func TestAlterConfigsBrokerLayers(t *testing.T) {
	f := newSeamFixture(t)
	resp := f.do(t, alterConfigsRequest(2,
		alterConfigsResource(kmsg.ConfigResourceTypeBroker, "", "log.retention.ms", "5000"),
		alterConfigsResource(kmsg.ConfigResourceTypeBroker, "1", "message.max.bytes", "2000000"),
	)).(*kmsg.AlterConfigsResponse)
	for _, res := range resp.Resources {
		wantCode(t, "broker "+res.ResourceName, res.ErrorCode, nil)
	}
	if len(f.controller.alters) != 2 || f.controller.alters[0].name != "" || f.controller.alters[1].name != "1" {
		t.Fatalf("controller asked %+v, want the cluster-wide layer, then broker 1's", f.controller.alters)
	}

	f.do(t, alterConfigsRequest(2, alterConfigsResource(kmsg.ConfigResourceTypeBroker, "1")))
	if len(f.controller.alters) != 2 {
		t.Errorf("emptying an empty layer asked the controller: %+v", f.controller.alters[2:])
	}
}

// TestAlterConfigsNotController: with no controller to forward to, each
// resource is NOT_CONTROLLER, so the client retries at the controller.
func TestAlterConfigsNotController(t *testing.T) {
	f := newSeamFixture(t)
	f.controller.notController = true
	resp := f.do(t, alterConfigsRequest(2, alterConfigsResource(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", "1"))).(*kmsg.AlterConfigsResponse)
	wantCode(t, "t", resp.Resources[0].ErrorCode, kerr.NotController)
}

// TestAlterConfigsControllerError: the controller's refusal is the
// resource's code and message.
func TestAlterConfigsControllerError(t *testing.T) {
	f := newSeamFixture(t)
	f.controller.alterErr = kerr.PolicyViolation
	resp := f.do(t, alterConfigsRequest(2, alterConfigsResource(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", "1"))).(*kmsg.AlterConfigsResponse)
	wantCode(t, "t", resp.Resources[0].ErrorCode, kerr.PolicyViolation)
	wantMessage(t, "t", resp.Resources[0].ErrorMessage, kerr.PolicyViolation.Description)
}
