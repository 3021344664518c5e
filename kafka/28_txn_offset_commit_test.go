package kafka

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

// txnOffsetCommitRequest commits offset 42 (leader epoch 5, metadata "m")
// for each partition of topic, in producer 7's transaction at epoch 2.
func txnOffsetCommitRequest(version int16, topic string, partitions ...int32) *kmsg.TxnOffsetCommitRequest {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.SetVersion(version)
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx", "g", 7, 2
	req.Generation, req.MemberID, req.InstanceID = 3, "m1", kmsg.StringPtr("i1")
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	for _, p := range partitions {
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p, 42, 5, kmsg.StringPtr("m")
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// TestTxnOffsetCommitRequestByVersion: what reaches the coordinator at
// each version: the producer always, leader epochs from v2, the member,
// generation and instance (KIP-447) from v3 only.
func TestTxnOffsetCommitRequestByVersion(t *testing.T) {
	for v := int16(0); v <= 4; v++ {
		what := fmt.Sprintf("v%d", v)
		f, g := groupFixture(t)
		resp := onWire(t, f.do(t, txnOffsetCommitRequest(v, "t", 0)).(*kmsg.TxnOffsetCommitResponse))
		wantCode(t, what, resp.Topics[0].Partitions[0].ErrorCode, nil)
		tr := lastGroupRequest[groups.TxnCommitRequest](t, g)
		if tr.Group != "g" || tr.ProducerID != 7 || tr.ProducerEpoch != 2 || len(tr.Offsets) != 1 {
			t.Fatalf("%s: coordinator got %+v", what, tr)
		}
		if o := tr.Offsets[0]; o.Topic != "t" || o.Partition != 0 || o.Offset != 42 || o.Metadata != "m" {
			t.Errorf("%s: offset %+v", what, o)
		}
		wantEpoch := int32(-1)
		if v >= 2 {
			wantEpoch = 5
		}
		if tr.Offsets[0].LeaderEpoch != wantEpoch {
			t.Errorf("%s: leader epoch %d, want %d", what, tr.Offsets[0].LeaderEpoch, wantEpoch)
		}
		wantGen, wantMember, wantInstance := int32(-1), "", ""
		if v >= 3 {
			wantGen, wantMember, wantInstance = 3, "m1", "i1"
		}
		if tr.Generation != wantGen || tr.MemberID != wantMember || tr.InstanceID != wantInstance {
			t.Errorf("%s: generation %d member %q instance %q, want %d %q %q", what, tr.Generation, tr.MemberID, tr.InstanceID, wantGen, wantMember, wantInstance)
		}
	}
}

// TestTxnOffsetCommitPartitions: unknown partitions never reach the
// coordinator; the others get the coordinator's codes in their places,
// and a coordinator-level failure lands on each of them.
func TestTxnOffsetCommitPartitions(t *testing.T) {
	f, g := groupFixture(t)
	g.answer = func(req any) (groups.Response, error) {
		cr := &groups.CommitResponse{}
		for _, o := range req.(*groups.TxnCommitRequest).Offsets {
			code := int16(0)
			if o.Partition == 2 {
				code = kerr.InvalidProducerEpoch.Code
			}
			cr.Partitions = append(cr.Partitions, groups.PartitionResult{Topic: o.Topic, Partition: o.Partition, ErrorCode: code})
		}
		return groups.Response{TxnCommit: cr}, nil
	}
	resp := f.do(t, txnOffsetCommitRequest(4, "t", 0, 3, 2, -1)).(*kmsg.TxnOffsetCommitResponse)
	codes := resp.Topics[0].Partitions
	wantCode(t, "t-0", codes[0].ErrorCode, nil)
	wantCode(t, "t-3", codes[1].ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "t-2", codes[2].ErrorCode, kerr.InvalidProducerEpoch)
	wantCode(t, "t--1", codes[3].ErrorCode, kerr.UnknownTopicOrPartition)
	if tr := lastGroupRequest[groups.TxnCommitRequest](t, g); len(tr.Offsets) != 2 {
		t.Errorf("coordinator got %+v, want t-0 and t-2", tr.Offsets)
	}
	resp = f.do(t, txnOffsetCommitRequest(4, "missing", 0)).(*kmsg.TxnOffsetCommitResponse)
	wantCode(t, "missing-0", resp.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
	if len(g.submitted) != 1 {
		t.Errorf("a commit of unknown partitions only reached the coordinator: %v", g.submitted)
	}

	for _, c := range groupErrorCodes {
		f, g := groupFixture(t)
		c.setup(t, f, g)
		resp := f.do(t, txnOffsetCommitRequest(3, "t", 0, 9)).(*kmsg.TxnOffsetCommitResponse)
		ps := resp.Topics[0].Partitions
		wantCode(t, c.name+" t-0", ps[0].ErrorCode, c.want)
		wantCode(t, c.name+" t-9", ps[1].ErrorCode, kerr.UnknownTopicOrPartition)
	}
}

// TestTxnOffsetCommitAuthorization: WRITE on the transactional id first,
// then READ on the group, then READ on each topic, as Kafka's KafkaApis.
func TestTxnOffsetCommitAuthorization(t *testing.T) {
	for _, c := range []struct {
		name  string
		allow func(authQuestion) bool
		want  *kerr.Error
	}{
		{"no transactional id", func(q authQuestion) bool { return q.rt != kmsg.ACLResourceTypeTransactionalId }, kerr.TransactionalIDAuthorizationFailed},
		{"no group", func(q authQuestion) bool { return q.rt != kmsg.ACLResourceTypeGroup }, kerr.GroupAuthorizationFailed},
		{"no topic", func(q authQuestion) bool { return q.rt != kmsg.ACLResourceTypeTopic }, kerr.TopicAuthorizationFailed},
		{"all", allowAll, nil},
	} {
		f, g := authFixture(t, &fakeAuthorizer{allow: c.allow})
		resp := f.do(t, txnOffsetCommitRequest(4, "t", 0)).(*kmsg.TxnOffsetCommitResponse)
		wantCode(t, c.name, resp.Topics[0].Partitions[0].ErrorCode, c.want)
		if reached := len(g.submitted) > 0; reached != (c.want == nil) {
			t.Errorf("%s: reached the coordinator %v", c.name, reached)
		}
	}
}

// TestOffsetFetchRequireStable: OffsetFetch v7+ passes RequireStable to
// the coordinator (v8+ for each group); older versions never ask it.
func TestOffsetFetchRequireStable(t *testing.T) {
	for v := int16(6); v <= 9; v++ {
		f, g := groupFixture(t)
		req := kmsg.NewPtrOffsetFetchRequest()
		req.SetVersion(v)
		req.RequireStable = true
		if v < 8 {
			req.Group = "g"
		} else {
			rg := kmsg.NewOffsetFetchRequestGroup()
			rg.Group = "g"
			req.Groups = append(req.Groups, rg)
		}
		f.do(t, req)
		fr := lastGroupRequest[groups.FetchOffsetsRequest](t, g)
		if fr.RequireStable != (v >= 7) {
			t.Errorf("v%d: RequireStable %v", v, fr.RequireStable)
		}
	}
}
