package kafka

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
)

// incrementalOp is one op of an IncrementalAlterConfigs resource; a nil
// value is the wire's null.
type incrementalOp struct {
	op    kmsg.IncrementalAlterConfigOp
	key   string
	value *string
}

func setOp(key, value string) incrementalOp {
	return incrementalOp{kmsg.IncrementalAlterConfigOpSet, key, &value}
}

func incrementalResource(rt kmsg.ConfigResourceType, name string, ops ...incrementalOp) kmsg.IncrementalAlterConfigsRequestResource {
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = rt, name
	for _, o := range ops {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Op, c.Name, c.Value = o.op, o.key, o.value
		rr.Configs = append(rr.Configs, c)
	}
	return rr
}

func incrementalAlterConfigsRequest(version int16, resources ...kmsg.IncrementalAlterConfigsRequestResource) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.SetVersion(version)
	req.Resources = resources
	return req
}

// TestIncrementalAlterConfigsSetDelete: at v0 and v1, SET and DELETE
// change only the keys named (replace false); deleting a key that is not
// set changes nothing and does not reach the controller.
func TestIncrementalAlterConfigsSetDelete(t *testing.T) {
	for v := int16(0); v <= 1; v++ {
		f := newSeamFixture(t)
		f.addRecords(t, configRecord(cluster.ResourceTopic, "t", "segment.ms", "60000"))
		resp := onWire(t, f.do(t, incrementalAlterConfigsRequest(v, incrementalResource(kmsg.ConfigResourceTypeTopic, "t",
			setOp("retention.ms", "2000"),
			incrementalOp{kmsg.IncrementalAlterConfigOpDelete, "segment.ms", nil},
			incrementalOp{kmsg.IncrementalAlterConfigOpDelete, "never.set", nil},
		))).(*kmsg.IncrementalAlterConfigsResponse))
		wantCode(t, "t", resp.Resources[0].ErrorCode, nil)
		if len(f.controller.alters) != 1 {
			t.Fatalf("v%d: %d AlterConfigs calls, want 1", v, len(f.controller.alters))
		}
		a := f.controller.alters[0]
		if a.replace || len(a.ops) != 2 || a.ops[0].Key != "retention.ms" || derefString(a.ops[0].Value) != "2000" ||
			a.ops[1].Key != "segment.ms" || a.ops[1].Value != nil {
			t.Errorf("v%d: controller asked %+v, want retention.ms set and segment.ms deleted, the rest kept", v, a)
		}

		f.do(t, incrementalAlterConfigsRequest(v, incrementalResource(kmsg.ConfigResourceTypeTopic, "t",
			incrementalOp{kmsg.IncrementalAlterConfigOpDelete, "never.set", nil})))
		if len(f.controller.alters) != 1 {
			t.Errorf("v%d: deleting an unset key asked the controller: %+v", v, f.controller.alters[1:])
		}
	}
}

// TestIncrementalAlterConfigsAppendSubtract: APPEND and SUBTRACT become a
// SET of the list they make, from the value in force: the topic's
// override, else the default; items already there are not added twice.
func TestIncrementalAlterConfigsAppendSubtract(t *testing.T) {
	f := newSeamFixture(t)
	compact := "compact"
	del := "delete"
	resp := f.do(t, incrementalAlterConfigsRequest(1, incrementalResource(kmsg.ConfigResourceTypeTopic, "t",
		incrementalOp{kmsg.IncrementalAlterConfigOpAppend, "cleanup.policy", &compact}))).(*kmsg.IncrementalAlterConfigsResponse)
	wantCode(t, "append", resp.Resources[0].ErrorCode, nil)
	if got := derefString(f.controller.alters[0].ops[0].Value); got != "delete,compact" {
		t.Errorf("APPEND compact to the default: %q, want delete,compact", got)
	}

	f.addRecords(t, configRecord(cluster.ResourceTopic, "t", "cleanup.policy", "compact,delete"))
	f.do(t, incrementalAlterConfigsRequest(1, incrementalResource(kmsg.ConfigResourceTypeTopic, "t",
		incrementalOp{kmsg.IncrementalAlterConfigOpSubtract, "cleanup.policy", &del})))
	if got := derefString(f.controller.alters[1].ops[0].Value); got != "compact" {
		t.Errorf("SUBTRACT delete from compact,delete: %q, want compact", got)
	}
	f.do(t, incrementalAlterConfigsRequest(1, incrementalResource(kmsg.ConfigResourceTypeTopic, "t",
		incrementalOp{kmsg.IncrementalAlterConfigOpAppend, "cleanup.policy", &compact})))
	if got := derefString(f.controller.alters[2].ops[0].Value); got != "compact,delete" {
		t.Errorf("APPEND compact to compact,delete: %q, want it unchanged", got)
	}

	// The cluster-wide layer starts from the built-in default.
	f.do(t, incrementalAlterConfigsRequest(1, incrementalResource(kmsg.ConfigResourceTypeBroker, "",
		incrementalOp{kmsg.IncrementalAlterConfigOpAppend, "log.cleanup.policy", &compact})))
	if a := f.controller.alters[3]; a.rt != cluster.ResourceBroker || a.name != "" || derefString(a.ops[0].Value) != "delete,compact" {
		t.Errorf("APPEND to the cluster-wide log.cleanup.policy: %+v, want delete,compact", a)
	}
}

// TestIncrementalAlterConfigsRefused: the request errors Kafka's clients
// and tools rely on, each with Kafka's message; none reaches the
// controller.
func TestIncrementalAlterConfigsRefused(t *testing.T) {
	f := newSeamFixture(t)
	topic, broker := kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker
	one := "1"
	cases := []struct {
		name     string
		resource kmsg.IncrementalAlterConfigsRequestResource
		want     *kerr.Error
		message  string // a prefix of the message
	}{
		{"append to a long", incrementalResource(topic, "t", incrementalOp{kmsg.IncrementalAlterConfigOpAppend, "retention.ms", &one}),
			kerr.InvalidConfig, "Can't APPEND to key retention.ms because its type is not LIST."},
		{"subtract from an unknown topic config", incrementalResource(topic, "t", incrementalOp{kmsg.IncrementalAlterConfigOpSubtract, "no.such.config", &one}),
			kerr.InvalidConfig, "Unknown topic config name: no.such.config"},
		{"append to a broker long", incrementalResource(broker, "1", incrementalOp{kmsg.IncrementalAlterConfigOpAppend, "log.retention.ms", &one}),
			kerr.InvalidConfig, "Config value append is not allowed for config key: log.retention.ms"},
		{"bad value", incrementalResource(topic, "t", setOp("retention.ms", "abc")), kerr.InvalidConfig, "Invalid value abc for configuration retention.ms"},
		{"null SET", incrementalResource(topic, "t", incrementalOp{kmsg.IncrementalAlterConfigOpSet, "retention.ms", nil}),
			kerr.InvalidRequest, "Null value not supported for : retention.ms"},
		{"unknown op", incrementalResource(topic, "t", incrementalOp{7, "retention.ms", &one}), kerr.InvalidRequest, "Unknown operations type 7"},
		{"key twice", incrementalResource(topic, "t", setOp("retention.ms", "1"), setOp("retention.ms", "2")), kerr.InvalidRequest, "Error due to duplicate config keys"},
		{"missing topic", incrementalResource(topic, "missing", setOp("retention.ms", "1")), kerr.UnknownTopicOrPartition, "The topic 'missing' does not exist."},
		{"other broker", incrementalResource(broker, "2", setOp("log.retention.ms", "1")), kerr.InvalidRequest, "Unexpected broker id, expected 1, but received 2"},
		{"read-only broker setting", incrementalResource(broker, "1", setOp("node.id", "7")), kerr.InvalidRequest, ""},
		{"unknown resource type", incrementalResource(kmsg.ConfigResourceTypeGroupConfig, "g", setOp("x", "y")), kerr.InvalidRequest, "Unknown resource type 32"},
	}
	for _, c := range cases {
		resp := f.do(t, incrementalAlterConfigsRequest(1, c.resource)).(*kmsg.IncrementalAlterConfigsResponse)
		res := resp.Resources[0]
		wantCode(t, c.name, res.ErrorCode, c.want)
		if res.ErrorMessage == nil || !strings.HasPrefix(*res.ErrorMessage, c.message) {
			t.Errorf("%s: message %q, want one starting %q", c.name, derefString(res.ErrorMessage), c.message)
		}
	}
	if len(f.controller.alters) != 0 {
		t.Errorf("refused changes reached the controller: %+v", f.controller.alters)
	}

	twice := incrementalResource(topic, "t", setOp("retention.ms", "1"))
	resp := f.do(t, incrementalAlterConfigsRequest(1, twice, twice)).(*kmsg.IncrementalAlterConfigsResponse)
	wantCode(t, "t (first)", resp.Resources[0].ErrorCode, kerr.InvalidRequest)
	wantCode(t, "t (second)", resp.Resources[1].ErrorCode, kerr.InvalidRequest)
}

// TestIncrementalAlterConfigsNotController: NOT_CONTROLLER per resource
// when there is no controller to forward to.
func TestIncrementalAlterConfigsNotController(t *testing.T) {
	f := newSeamFixture(t)
	f.controller.notController = true
	resp := f.do(t, incrementalAlterConfigsRequest(1, incrementalResource(kmsg.ConfigResourceTypeTopic, "t", setOp("retention.ms", "1")))).(*kmsg.IncrementalAlterConfigsResponse)
	wantCode(t, "t", resp.Resources[0].ErrorCode, kerr.NotController)
}

// TestUncleanElectionSettable: unclean.leader.election.enable reaches the
// controller when set on a topic or as the cluster-wide default, through
// AlterConfigs and IncrementalAlterConfigs alike; one broker's own layer
// is refused by both (the controller reads only the cluster-wide value).
func TestUncleanElectionSettable(t *testing.T) {
	const key = "unclean.leader.election.enable"
	topic, broker := kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker
	for _, tc := range []struct {
		rt   kmsg.ConfigResourceType
		name string
		want *kerr.Error
	}{
		{topic, "t", nil},
		{broker, "", nil},
		{broker, "1", kerr.InvalidConfig},
	} {
		f := newSeamFixture(t)
		legacy := f.do(t, alterConfigsRequest(2, alterConfigsResource(tc.rt, tc.name, key, "true"))).(*kmsg.AlterConfigsResponse)
		incr := f.do(t, incrementalAlterConfigsRequest(1, incrementalResource(tc.rt, tc.name, setOp(key, "true")))).(*kmsg.IncrementalAlterConfigsResponse)
		what := fmt.Sprintf("%s %q", tc.rt, tc.name)
		wantCode(t, "AlterConfigs "+what, legacy.Resources[0].ErrorCode, tc.want)
		wantCode(t, "IncrementalAlterConfigs "+what, incr.Resources[0].ErrorCode, tc.want)
		reached := 0
		for _, a := range f.controller.alters {
			if len(a.ops) == 1 && a.ops[0].Key == key && derefString(a.ops[0].Value) == "true" {
				reached++
			}
		}
		if want := map[bool]int{true: 2, false: 0}[tc.want == nil]; reached != want {
			t.Errorf("%s: the controller got %d of the 2 changes, want %d (%+v)", what, reached, want, f.controller.alters)
		}
	}
}
