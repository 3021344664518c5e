package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func metadataRequestFor(autoCreate bool, topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.AllowAutoTopicCreation = autoCreate
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// TestMetadata: brokers and topics come from the committed image, this
// node with its own advertised address; a missing topic is
// UNKNOWN_TOPIC_OR_PARTITION, an illegal name INVALID_TOPIC_EXCEPTION.
func TestMetadata(t *testing.T) {
	f := newSeamFixture(t)
	f.metadata.controllerID = 2
	resp := f.do(t, metadataRequestFor(false, "t", "nope", "bad/name")).(*kmsg.MetadataResponse)
	if resp.ClusterID == nil || *resp.ClusterID != "test-cluster" || resp.ControllerID != 2 {
		t.Errorf("cluster %v controller %d, want test-cluster and 2", resp.ClusterID, resp.ControllerID)
	}
	if len(resp.Brokers) != 3 || resp.Brokers[0].Host != "node1.test" || resp.Brokers[1].Host != "node2.test" {
		t.Errorf("brokers %+v, want nodes 1-3, node 1 at its own address", resp.Brokers)
	}
	if len(resp.Topics) != 3 {
		t.Fatalf("%d topics, want 3", len(resp.Topics))
	}
	mt := resp.Topics[0]
	wantCode(t, "t", mt.ErrorCode, nil)
	if len(mt.Partitions) != 3 || mt.Partitions[1].Leader != 2 || mt.Partitions[1].LeaderEpoch != 5 || mt.TopicID != testTopicID {
		t.Errorf("t: %+v, want 3 partitions, partition 1 led by 2 at epoch 5", mt)
	}
	wantCode(t, "nope", resp.Topics[1].ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "bad/name", resp.Topics[2].ErrorCode, kerr.InvalidTopicException)
	if len(f.controller.created) != 0 {
		t.Errorf("created %v without auto-creation", f.controller.created)
	}
}

// TestMetadataAutoCreate: a missing topic is created through the
// controller when the request and auto.create.topics.enable allow it; a
// refusal (here NOT_CONTROLLER) leaves the topic unknown.
func TestMetadataAutoCreate(t *testing.T) {
	f := newSeamFixture(t)
	f.node.Config.AutoCreateTopicsEnable = true
	resp := f.do(t, metadataRequestFor(true, "fresh")).(*kmsg.MetadataResponse)
	if len(f.controller.created) != 1 || f.controller.created[0].Name != "fresh" || f.controller.created[0].NumPartitions != -1 {
		t.Errorf("created %+v, want fresh with the broker's defaults", f.controller.created)
	}
	// The fake's image does not change, so the topic is still unknown.
	wantCode(t, "fresh", resp.Topics[0].ErrorCode, kerr.UnknownTopicOrPartition)

	f.controller.notController = true
	f.controller.created = nil
	resp = f.do(t, metadataRequestFor(true, "fresh")).(*kmsg.MetadataResponse)
	wantCode(t, "fresh from a follower", resp.Topics[0].ErrorCode, kerr.UnknownTopicOrPartition)

	f.node.Config.AutoCreateTopicsEnable = false
	f.controller.notController = false
	f.do(t, metadataRequestFor(true, "fresh"))
	if len(f.controller.created) != 0 {
		t.Errorf("created %+v with auto.create.topics.enable off", f.controller.created)
	}
}
