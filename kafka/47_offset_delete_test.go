package kafka

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

func offsetDeleteRequest() *kmsg.OffsetDeleteRequest {
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = "g"
	for _, topic := range []string{"t", "u"} {
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = topic
		for p := range int32(2) {
			rp := kmsg.NewOffsetDeleteRequestTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// TestOffsetDelete: the partitions named reach the coordinator; each gets
// its code (GROUP_SUBSCRIBED_TO_TOPIC for a topic the members consume),
// grouped by topic.
func TestOffsetDelete(t *testing.T) {
	f, g := groupFixture(t)
	g.answer = func(req any) (groups.Response, error) {
		dr := &groups.OffsetDeleteResponse{}
		for _, tp := range req.(*groups.OffsetDeleteRequest).Partitions {
			code := int16(0)
			if tp.Topic == "u" {
				code = kerr.GroupSubscribedToTopic.Code
			}
			dr.Partitions = append(dr.Partitions, groups.PartitionResult{Topic: tp.Topic, Partition: tp.Partition, ErrorCode: code})
		}
		return groups.Response{OffsetDelete: dr}, nil
	}
	resp := onWire(t, f.do(t, offsetDeleteRequest()).(*kmsg.OffsetDeleteResponse))
	if dr := lastGroupRequest[groups.OffsetDeleteRequest](t, g); dr.Group != "g" || fmt.Sprint(dr.Partitions) != "[{t 0} {t 1} {u 0} {u 1}]" {
		t.Errorf("coordinator got %+v", dr)
	}
	wantCode(t, "top level", resp.ErrorCode, nil)
	if len(resp.Topics) != 2 || resp.Topics[1].Topic != "u" || len(resp.Topics[1].Partitions) != 2 {
		t.Fatalf("answer %+v", resp.Topics)
	}
	wantCode(t, "t-1", resp.Topics[0].Partitions[1].ErrorCode, nil)
	wantCode(t, "u-0", resp.Topics[1].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic)
}

// TestOffsetDeleteGroupErrors: a group-level error (the coordinator's
// failure, or its own such as GROUP_ID_NOT_FOUND) is the top-level code,
// with no partitions.
func TestOffsetDeleteGroupErrors(t *testing.T) {
	for _, c := range groupErrorCodes {
		f, g := groupFixture(t)
		c.setup(t, f, g)
		resp := f.do(t, offsetDeleteRequest()).(*kmsg.OffsetDeleteResponse)
		wantCode(t, c.name, resp.ErrorCode, c.want)
		if len(resp.Topics) != 0 {
			t.Errorf("%s: topics %+v with a group error", c.name, resp.Topics)
		}
	}
	f, g := groupFixture(t)
	g.answer = func(any) (groups.Response, error) {
		return groups.Response{OffsetDelete: &groups.OffsetDeleteResponse{ErrorCode: kerr.GroupIDNotFound.Code}}, nil
	}
	wantCode(t, "unknown group", f.do(t, offsetDeleteRequest()).(*kmsg.OffsetDeleteResponse).ErrorCode, kerr.GroupIDNotFound)
}
