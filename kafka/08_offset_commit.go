package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

// OffsetCommit: v0-9
//
// Behavior:
// * A partition of a topic that does not exist (or beyond its partition
//   count) gets UNKNOWN_TOPIC_OR_PARTITION here and never reaches the
//   coordinator: committed partitions are bounded by the topics that
//   exist.
// * The rest is one groups.CommitRequest, persisted as one batch (all or
//   nothing), answered once durable.
// * v0: no generation (a commit outside group management). v1's
//   per-partition timestamp is ignored, as Kafka 3+ does. v2-4's
//   retention time gives the commit its own expiry. v9: for a KIP-848
//   group the generation is the member epoch (STALE_MEMBER_EPOCH when it
//   is behind); a KIP-848 member committing with v8 or below gets
//   UNSUPPORTED_VERSION, as in Kafka.
// * Authorization: READ on the group, or GROUP_AUTHORIZATION_FAILED on every
//   partition; then READ on each topic, or TOPIC_AUTHORIZATION_FAILED on its
//   partitions, which are not committed.
//
// Not implemented:
// * v10+ (topic ids).

func (s *Server) handleOffsetCommit(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.OffsetCommitRequest)
	cr := groups.CommitRequest{
		Group:           r.Group,
		Generation:      r.Generation,
		MemberID:        r.MemberID,
		InstanceID:      derefString(r.InstanceID),
		RetentionTimeMs: -1,
		Version:         r.Version,
	}
	if r.Version == 0 {
		cr.Generation, cr.MemberID = -1, ""
	}
	if r.Version >= 2 && r.Version <= 4 {
		cr.RetentionTimeMs = r.RetentionTimeMillis
	}
	resp := kmsg.NewPtrOffsetCommitResponse()
	resp.Version = r.Version
	// index[i] is where the i-th submitted partition sits in resp.
	type slot struct{ t, p int }
	var index []slot
	im := s.node().Metadata.Image()
	az := s.authz(req)
	groupDenied := !az.allow(kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, r.Group)
	for ti, t := range r.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		topic := im.Topic(t.Topic)
		topicDenied := !groupDenied && !az.allow(kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, t.Topic)
		for pi, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			if groupDenied {
				rp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			} else if topicDenied {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			} else if topic == nil || p.Partition < 0 || int(p.Partition) >= len(topic.Partitions) {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				leaderEpoch := p.LeaderEpoch
				if r.Version < 6 {
					leaderEpoch = -1
				}
				cr.Offsets = append(cr.Offsets, groups.OffsetCommit{
					Topic: t.Topic, Partition: p.Partition, Offset: p.Offset,
					LeaderEpoch: leaderEpoch, Metadata: derefString(p.Metadata),
				})
				index = append(index, slot{ti, pi})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(cr.Offsets) == 0 {
		return Respond(resp), nil
	}
	call := s.submitGroup(req, r.Group, func(c GroupCore, id uint64, nowMs int64) {
		cr.RequestID = id
		c.CommitOffsets(cr, nowMs)
	})
	return func(ctx context.Context) (Response, error) {
		res, code, err := call.wait(ctx)
		if err != nil {
			return Response{}, err
		}
		for i, at := range index {
			c := code
			if res.Commit != nil && i < len(res.Commit.Partitions) {
				c = res.Commit.Partitions[i].ErrorCode
			}
			resp.Topics[at.t].Partitions[at.p].ErrorCode = c
		}
		return Response{Msg: resp}, nil
	}, nil
}
