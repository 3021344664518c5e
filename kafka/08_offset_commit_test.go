package kafka

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

// offsetCommitRequest commits offset 42 (leader epoch 5, metadata "m")
// for each partition of topic.
func offsetCommitRequest(version int16, topic string, partitions ...int32) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(version)
	req.Group, req.Generation, req.MemberID = "g", 3, "m1"
	req.InstanceID = kmsg.StringPtr("i1")
	req.RetentionTimeMillis = 60000
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for _, p := range partitions {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p, 42, 5, kmsg.StringPtr("m")
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// TestOffsetCommitRequestByVersion: what reaches the coordinator at each
// version: no generation or member in v0, a retention time in v2-4 only,
// leader epochs from v6, group.instance.id from v7, the version itself
// (KIP-848 groups check it).
func TestOffsetCommitRequestByVersion(t *testing.T) {
	for v := int16(0); v <= 9; v++ {
		f, g := groupFixture(t)
		resp := onWire(t, f.do(t, offsetCommitRequest(v, "t", 0)).(*kmsg.OffsetCommitResponse))
		wantCode(t, fmt.Sprintf("v%d", v), resp.Topics[0].Partitions[0].ErrorCode, nil)
		cr := lastGroupRequest[groups.CommitRequest](t, g)
		what := fmt.Sprintf("v%d", v)
		if cr.Group != "g" || cr.Version != v || len(cr.Offsets) != 1 {
			t.Fatalf("%s: coordinator got %+v", what, cr)
		}
		if o := cr.Offsets[0]; o.Topic != "t" || o.Partition != 0 || o.Offset != 42 || o.Metadata != "m" {
			t.Errorf("%s: offset %+v", what, o)
		}
		wantGen, wantMember := int32(3), "m1"
		if v == 0 {
			wantGen, wantMember = -1, ""
		}
		if cr.Generation != wantGen || cr.MemberID != wantMember {
			t.Errorf("%s: generation %d member %q, want %d %q", what, cr.Generation, cr.MemberID, wantGen, wantMember)
		}
		wantRetention := int64(-1)
		if v >= 2 && v <= 4 {
			wantRetention = 60000
		}
		if cr.RetentionTimeMs != wantRetention {
			t.Errorf("%s: retention %d, want %d", what, cr.RetentionTimeMs, wantRetention)
		}
		wantEpoch := int32(-1)
		if v >= 6 {
			wantEpoch = 5
		}
		if cr.Offsets[0].LeaderEpoch != wantEpoch {
			t.Errorf("%s: leader epoch %d, want %d", what, cr.Offsets[0].LeaderEpoch, wantEpoch)
		}
		if (cr.InstanceID == "i1") != (v >= 7) {
			t.Errorf("%s: instance %q", what, cr.InstanceID)
		}
	}
}

// TestOffsetCommitUnknownPartitions: partitions of a topic that does not
// exist, or beyond its count, are UNKNOWN_TOPIC_OR_PARTITION here and
// never reach the coordinator; the others get the coordinator's codes in
// their places.
func TestOffsetCommitUnknownPartitions(t *testing.T) {
	f, g := groupFixture(t)
	g.answer = func(req any) (groups.Response, error) {
		cr := &groups.CommitResponse{}
		for _, o := range req.(*groups.CommitRequest).Offsets {
			code := int16(0)
			if o.Partition == 2 {
				code = kerr.OffsetMetadataTooLarge.Code
			}
			cr.Partitions = append(cr.Partitions, groups.PartitionResult{Topic: o.Topic, Partition: o.Partition, ErrorCode: code})
		}
		return groups.Response{Commit: cr}, nil
	}
	resp := f.do(t, offsetCommitRequest(9, "t", 0, 3, 2, -1)).(*kmsg.OffsetCommitResponse)
	codes := resp.Topics[0].Partitions
	wantCode(t, "t-0", codes[0].ErrorCode, nil)
	wantCode(t, "t-3", codes[1].ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "t-2", codes[2].ErrorCode, kerr.OffsetMetadataTooLarge)
	wantCode(t, "t--1", codes[3].ErrorCode, kerr.UnknownTopicOrPartition)
	if cr := lastGroupRequest[groups.CommitRequest](t, g); len(cr.Offsets) != 2 {
		t.Errorf("coordinator got %+v, want t-0 and t-2", cr.Offsets)
	}

	resp = f.do(t, offsetCommitRequest(9, "missing", 0)).(*kmsg.OffsetCommitResponse)
	wantCode(t, "missing-0", resp.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
	if len(g.submitted) != 1 {
		t.Errorf("a commit of unknown partitions only reached the coordinator: %v", g.submitted)
	}
}

// TestOffsetCommitCoordinatorErrors: every submitted partition gets the
// coordinator's failure; the unknown ones keep theirs.
func TestOffsetCommitCoordinatorErrors(t *testing.T) {
	for _, c := range groupErrorCodes {
		f, g := groupFixture(t)
		c.setup(t, f, g)
		resp := f.do(t, offsetCommitRequest(8, "t", 0, 1, 9)).(*kmsg.OffsetCommitResponse)
		ps := resp.Topics[0].Partitions
		wantCode(t, c.name+" t-0", ps[0].ErrorCode, c.want)
		wantCode(t, c.name+" t-1", ps[1].ErrorCode, c.want)
		wantCode(t, c.name+" t-9", ps[2].ErrorCode, kerr.UnknownTopicOrPartition)
	}
}
