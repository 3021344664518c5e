package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
)

func describeConfigsRequest(version int16, rt kmsg.ConfigResourceType, names ...string) *kmsg.DescribeConfigsRequest {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(version)
	for _, name := range names {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = rt, name
		req.Resources = append(req.Resources, rr)
	}
	return req
}

// describedConfigs indexes one resource's configs by name.
func describedConfigs(res kmsg.DescribeConfigsResponseResource) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	out := make(map[string]kmsg.DescribeConfigsResponseResourceConfig, len(res.Configs))
	for _, c := range res.Configs {
		out[c.Name] = c
	}
	return out
}

// TestDescribeConfigsTopic: a topic's override is DYNAMIC_TOPIC_CONFIG,
// the rest their defaults; ConfigNames keeps only the names asked (an
// unknown one silently); synonyms and documentation only when asked; and
// nothing is written.
func TestDescribeConfigsTopic(t *testing.T) {
	f := newSeamFixture(t)
	f.addRecords(t, configRecord(cluster.ResourceTopic, "t", "retention.ms", "1000"))
	req := describeConfigsRequest(4, kmsg.ConfigResourceTypeTopic, "t")
	req.Resources[0].ConfigNames = []string{"retention.ms", "cleanup.policy", "no.such.config"}
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	resp := onWire(t, f.do(t, req).(*kmsg.DescribeConfigsResponse))
	res := resp.Resources[0]
	wantCode(t, "t", res.ErrorCode, nil)
	got := describedConfigs(res)
	if len(got) != 2 {
		t.Fatalf("described %d configs, want retention.ms and cleanup.policy: %+v", len(got), res.Configs)
	}
	r := got["retention.ms"]
	if r.Value == nil || *r.Value != "1000" || r.Source != kmsg.ConfigSourceDynamicTopicConfig || r.ReadOnly {
		t.Errorf("retention.ms: value %v source %v read-only %v, want the topic's 1000", derefString(r.Value), r.Source, r.ReadOnly)
	}
	if len(r.ConfigSynonyms) == 0 || r.ConfigSynonyms[0].Name != "retention.ms" || r.ConfigSynonyms[0].Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("retention.ms synonyms %+v, want the topic's override first", r.ConfigSynonyms)
	}
	if r.Documentation == nil || *r.Documentation == "" {
		t.Error("retention.ms: no documentation at v4 with IncludeDocumentation")
	}
	if r.ConfigType != kmsg.ConfigTypeLong {
		t.Errorf("retention.ms: type %v, want LONG", r.ConfigType)
	}
	c := got["cleanup.policy"]
	if c.Value == nil || *c.Value != "delete" || c.Source != kmsg.ConfigSourceDefaultConfig || c.ConfigType != kmsg.ConfigTypeList {
		t.Errorf("cleanup.policy: %+v, want the default delete, a LIST", c)
	}

	// Without the flags: no synonyms, no documentation.
	req.IncludeSynonyms, req.IncludeDocumentation = false, false
	resp = f.do(t, req).(*kmsg.DescribeConfigsResponse)
	for _, c := range resp.Resources[0].Configs {
		if len(c.ConfigSynonyms) != 0 || c.Documentation != nil {
			t.Errorf("%s: synonyms %v, documentation %v not asked for", c.Name, c.ConfigSynonyms, c.Documentation)
		}
	}
	if len(f.controller.alters) != 0 {
		t.Errorf("describing altered configs: %+v", f.controller.alters)
	}
}

// TestDescribeConfigsVersions: documentation and config types exist from
// v3; a v1 or v2 client never gets them. IsDefault is v0's alone (wren
// serves v1+): a default is told by its source, at every version.
func TestDescribeConfigsVersions(t *testing.T) {
	f := newSeamFixture(t)
	for v := int16(1); v <= 4; v++ {
		req := describeConfigsRequest(v, kmsg.ConfigResourceTypeTopic, "t")
		req.Resources[0].ConfigNames = []string{"cleanup.policy"}
		req.IncludeDocumentation = true
		resp := onWire(t, f.do(t, req).(*kmsg.DescribeConfigsResponse))
		if len(resp.Resources) != 1 || len(resp.Resources[0].Configs) != 1 {
			t.Fatalf("v%d: %+v, want cleanup.policy", v, resp.Resources)
		}
		c := resp.Resources[0].Configs[0]
		if c.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("v%d: source %v, want DEFAULT_CONFIG", v, c.Source)
		}
		if docs := c.Documentation != nil; docs != (v >= 3) {
			t.Errorf("v%d: documentation %v, want it only from v3", v, docs)
		}
		if typed := c.ConfigType != kmsg.ConfigTypeUnknown; typed != (v >= 3) {
			t.Errorf("v%d: config type %v, want one only from v3", v, c.ConfigType)
		}
	}
}

// TestDescribeConfigsTopicErrors: an unknown topic and an illegal name
// are errors of their resource only.
func TestDescribeConfigsTopicErrors(t *testing.T) {
	f := newSeamFixture(t)
	resp := f.do(t, describeConfigsRequest(4, kmsg.ConfigResourceTypeTopic, "missing", "bad/name", "t")).(*kmsg.DescribeConfigsResponse)
	wantCode(t, "missing", resp.Resources[0].ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "bad/name", resp.Resources[1].ErrorCode, kerr.InvalidTopicException)
	wantCode(t, "t", resp.Resources[2].ErrorCode, nil)
	if len(resp.Resources[0].Configs) != 0 || len(resp.Resources[2].Configs) == 0 {
		t.Errorf("configs: %d for missing, %d for t", len(resp.Resources[0].Configs), len(resp.Resources[2].Configs))
	}
	if resp.Resources[1].ErrorMessage == nil {
		t.Error("bad/name: no error message")
	}
}

// TestDescribeConfigsBroker: this node's id lists every broker setting
// (node.id read-only); "" lists only what was altered cluster-wide;
// another id or a name that is no number is INVALID_REQUEST with Kafka's
// message, as are resource types wren does not serve.
func TestDescribeConfigsBroker(t *testing.T) {
	f := newSeamFixture(t)
	f.addRecords(t, configRecord(cluster.ResourceBroker, "", "log.retention.ms", "5000"),
		configRecord(cluster.ResourceBroker, "1", "message.max.bytes", "2000000"))
	resp := f.do(t, describeConfigsRequest(4, kmsg.ConfigResourceTypeBroker, "1", "", "2", "x")).(*kmsg.DescribeConfigsResponse)

	own := describedConfigs(resp.Resources[0])
	wantCode(t, "broker 1", resp.Resources[0].ErrorCode, nil)
	if id := own["node.id"]; id.Value == nil || *id.Value != "1" || !id.ReadOnly {
		t.Errorf("node.id: %+v, want 1, read-only", id)
	}
	if m := own["message.max.bytes"]; m.Value == nil || *m.Value != "2000000" || m.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Errorf("message.max.bytes: %+v, want this broker's 2000000", m)
	}
	if r := own["log.retention.ms"]; r.Value == nil || *r.Value != "5000" || r.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("log.retention.ms: %+v, want the cluster-wide 5000", r)
	}

	wantCode(t, "cluster-wide", resp.Resources[1].ErrorCode, nil)
	if cw := resp.Resources[1].Configs; len(cw) != 1 || cw[0].Name != "log.retention.ms" {
		t.Errorf("cluster-wide resource: %+v, want only log.retention.ms", cw)
	}

	wantCode(t, "broker 2", resp.Resources[2].ErrorCode, kerr.InvalidRequest)
	wantMessage(t, "broker 2", resp.Resources[2].ErrorMessage, "Unexpected broker id, expected 1 or empty string, but received 2")
	wantCode(t, "broker x", resp.Resources[3].ErrorCode, kerr.InvalidRequest)
	wantMessage(t, "broker x", resp.Resources[3].ErrorMessage, "Broker id must be an integer, but it is: x")

	resp = f.do(t, describeConfigsRequest(4, kmsg.ConfigResourceTypeBrokerLogger, "1")).(*kmsg.DescribeConfigsResponse)
	wantCode(t, "BROKER_LOGGER", resp.Resources[0].ErrorCode, kerr.InvalidRequest)
}

// TestDescribeConfigsBounded: one response holds at most
// maxDescribedConfigs configs; the resources beyond get INVALID_REQUEST,
// the ones before their configs.
func TestDescribeConfigsBounded(t *testing.T) {
	f := newSeamFixture(t)
	names := make([]string, 2000)
	for i := range names {
		names[i] = "t"
	}
	resp := f.do(t, describeConfigsRequest(4, kmsg.ConfigResourceTypeTopic, names...)).(*kmsg.DescribeConfigsResponse)
	total, refused := 0, 0
	for i, res := range resp.Resources {
		switch res.ErrorCode {
		case 0:
			if refused > 0 {
				t.Fatalf("resource %d described after one was refused", i)
			}
			total += len(res.Configs)
		case kerr.InvalidRequest.Code:
			refused++
		default:
			t.Fatalf("resource %d: %s", i, codeName(res.ErrorCode))
		}
	}
	if total > maxDescribedConfigs || refused == 0 || total == 0 {
		t.Errorf("%d configs described, %d resources refused; want at most %d and some refused", total, refused, maxDescribedConfigs)
	}
}

// wantMessage checks a response's error message.
func wantMessage(t *testing.T, what string, got *string, want string) {
	t.Helper()
	if got == nil || *got != want {
		t.Errorf("%s: message %q, want %q", what, derefString(got), want)
	}
}
