package kafka

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/internal/health"
)

func describeClusterRequest(version int16, endpointType int8) *kmsg.DescribeClusterRequest {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.SetVersion(version)
	req.EndpointType = endpointType
	return req
}

// TestDescribeCluster: at both versions, the cluster id, the acting
// controller and every live broker: this node at the address it
// advertises, the others at the one they registered.
func TestDescribeCluster(t *testing.T) {
	f := newSeamFixture(t)
	f.node.Host, f.node.Port = "advertised.test", 19092
	for v := int16(0); v <= 1; v++ {
		resp := onWire(t, f.do(t, describeClusterRequest(v, endpointTypeBroker)).(*kmsg.DescribeClusterResponse))
		wantCode(t, fmt.Sprintf("v%d", v), resp.ErrorCode, nil)
		if resp.ClusterID != "test-cluster" || resp.ControllerID != 1 {
			t.Errorf("v%d: cluster %q controller %d, want test-cluster and 1", v, resp.ClusterID, resp.ControllerID)
		}
		var got []string
		for _, b := range resp.Brokers {
			got = append(got, fmt.Sprintf("%d@%s:%d", b.NodeID, b.Host, b.Port))
		}
		if fmt.Sprint(got) != "[1@advertised.test:19092 2@node2.test:9092 3@node3.test:9092]" {
			t.Errorf("v%d: brokers %v", v, got)
		}
		if v >= 1 && resp.EndpointType != endpointTypeBroker {
			t.Errorf("v1: endpoint type %d, want broker (1)", resp.EndpointType)
		}
		if resp.ClusterAuthorizedOperations != -2147483648 {
			t.Errorf("v%d: authorized operations %d, want not computed", v, resp.ClusterAuthorizedOperations)
		}
	}

	// During an election no controller is known.
	f.metadata.controllerID = -1
	if resp := f.do(t, describeClusterRequest(1, endpointTypeBroker)).(*kmsg.DescribeClusterResponse); resp.ControllerID != -1 {
		t.Errorf("controller %d during an election, want -1", resp.ControllerID)
	}
}

// TestDescribeClusterEndpointType: v1 asking for controllers is
// MISMATCHED_ENDPOINT_TYPE, an unknown type UNSUPPORTED_ENDPOINT_TYPE,
// with Kafka's messages and no brokers.
func TestDescribeClusterEndpointType(t *testing.T) {
	f := newSeamFixture(t)
	resp := f.do(t, describeClusterRequest(1, endpointTypeController)).(*kmsg.DescribeClusterResponse)
	wantCode(t, "controllers", resp.ErrorCode, kerr.MismatchedEndpointType)
	wantMessage(t, "controllers", resp.ErrorMessage, "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER")
	if len(resp.Brokers) != 0 {
		t.Errorf("brokers %+v with an error", resp.Brokers)
	}
	resp = f.do(t, describeClusterRequest(1, 9)).(*kmsg.DescribeClusterResponse)
	wantCode(t, "type 9", resp.ErrorCode, kerr.UnsupportedEndpointType)
	wantMessage(t, "type 9", resp.ErrorMessage, "Unsupported endpoint type 9")
}

// TestDescribeClusterControlPlaneTag: a request carrying wren's tag gets
// the control plane's facts from the image (fenced brokers, the data-loss
// ledger) in the same tag; a Kafka client's request gets no tag.
func TestDescribeClusterControlPlaneTag(t *testing.T) {
	f := newSeamFixture(t)
	f.addRecords(t,
		cluster.Record{Kind: cluster.KindBrokerRegistration, BrokerRegistration: &cluster.BrokerRegistrationRecord{BrokerID: 3}},
		cluster.Record{Kind: cluster.KindBrokerFence, BrokerFence: &cluster.BrokerFenceRecord{BrokerID: 3, Fenced: true}},
		cluster.Record{Kind: cluster.KindDataLoss, DataLoss: &cluster.DataLossRecord{TopicID: testTopicID, Topic: "t", Partition: 2,
			LeaderEpoch: 6, PreviousLeader: 3, NewLeader: 1, PreviousISR: []int32{3}, Reason: "unclean", FromOffset: 10, ToOffset: -1}},
	)
	resp := f.do(t, describeClusterRequest(1, endpointTypeBroker)).(*kmsg.DescribeClusterResponse)
	if tagged(&resp.UnknownTags, ControlPlaneTag) {
		t.Error("a request without the tag got it back")
	}

	req := describeClusterRequest(1, endpointTypeBroker)
	req.UnknownTags.Set(ControlPlaneTag, []byte{1})
	resp = onWire(t, f.do(t, req).(*kmsg.DescribeClusterResponse))
	var raw []byte
	resp.UnknownTags.Each(func(k uint32, v []byte) {
		if k == ControlPlaneTag {
			raw = v
		}
	})
	var facts health.ControlPlane
	if err := json.Unmarshal(raw, &facts); err != nil {
		t.Fatalf("the tag %q does not decode: %v", raw, err)
	}
	if facts.ControllerEpoch != 1 || fmt.Sprint(facts.FencedNodes) != "[3]" || len(facts.DataLossLedger) != 1 {
		t.Fatalf("facts %+v, want epoch 1, node 3 fenced, one ledger entry", facts)
	}
	if e := facts.DataLossLedger[0]; e.Topic != "t" || e.Partition != 2 || e.NewLeader != 1 || e.Reason != "unclean" || e.FromOffset != 10 {
		t.Errorf("ledger entry %+v", e)
	}
}
