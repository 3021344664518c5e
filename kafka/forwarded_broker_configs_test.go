package kafka

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// deleteBrokerConfigRequest deletes key on BROKER resource name, as
// kafka-reassign-partitions --verify does for the throttles of every
// broker once a reassignment is done.
func deleteBrokerConfigRequest(name, key string) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.SetVersion(1)
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, name
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op = key, kmsg.IncrementalAlterConfigOpDelete
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	return req
}

// A broker's own configs, sent to that broker by Kafka's admin client and
// forwarded by it to the controller, are served by the controller
// whatever its own id; sent to a broker directly, another broker's id is
// still INVALID_REQUEST, with Kafka's message.
func TestBrokerConfigsForwardedFromAnotherBroker(t *testing.T) {
	f := newSeamFixture(t) // node 1, the controller
	req := deleteBrokerConfigRequest("2", "log.retention.ms")
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	out, err := f.s.ServeForwarded(ctx, int16(kmsg.IncrementalAlterConfigs), req.GetVersion(), req.AppendTo(nil))
	if err != nil {
		t.Fatalf("forwarded IncrementalAlterConfigs: %v", err)
	}
	resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(out); err != nil || len(resp.Resources) != 1 {
		t.Fatalf("forwarded answer %+v does not decode to one resource: %v", resp, err)
	}
	wantCode(t, "forwarded, broker 2", resp.Resources[0].ErrorCode, nil)

	direct := f.do(t, deleteBrokerConfigRequest("2", "log.retention.ms")).(*kmsg.IncrementalAlterConfigsResponse)
	wantCode(t, "direct, broker 2", direct.Resources[0].ErrorCode, kerr.InvalidRequest)
	if m := direct.Resources[0].ErrorMessage; m == nil || *m != "Unexpected broker id, expected 1, but received 2" {
		t.Errorf("direct, broker 2: message %v, want Kafka's", m)
	}
}
