package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

// OffsetDelete: v0
//
// Behavior:
// * Drops a group's committed offsets for the named partitions
//   (tombstones, answered once durable). Partitions of topics the group's
//   members subscribe to get GROUP_SUBSCRIBED_TO_TOPIC; a classic group
//   in a rebalance, or one whose subscriptions are unknown, gets
//   NON_EMPTY_GROUP; an unknown group GROUP_ID_NOT_FOUND.
// * A partition with no committed offset succeeds, as in Kafka.
// * Authorization: DELETE on the group (GROUP_AUTHORIZATION_FAILED), and
//   READ on each topic (TOPIC_AUTHORIZATION_FAILED on its partitions, whose
//   offsets stay).

func (s *Server) handleOffsetDelete(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.OffsetDeleteRequest)
	version := r.Version
	dr := groups.OffsetDeleteRequest{Group: r.Group}
	az := s.authz(req)
	groupAllowed := az.allow(kmsg.ACLOperationDelete, kmsg.ACLResourceTypeGroup, r.Group)
	// refused are the partitions of topics the principal may not READ:
	// not deleted, answered TOPIC_AUTHORIZATION_FAILED.
	var refused []groups.PartitionResult
	for _, t := range r.Topics {
		topicAllowed := !groupAllowed || az.allow(kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, t.Topic)
		for _, p := range t.Partitions {
			if !topicAllowed {
				refused = append(refused, groups.PartitionResult{Topic: t.Topic, Partition: p.Partition, ErrorCode: kerr.TopicAuthorizationFailed.Code})
				continue
			}
			dr.Partitions = append(dr.Partitions, groups.TopicPartition{Topic: t.Topic, Partition: p.Partition})
		}
	}
	call := groupCall{code: kerr.GroupAuthorizationFailed.Code}
	if groupAllowed {
		call = s.submitGroup(req, r.Group, func(c GroupCore, id uint64, nowMs int64) {
			dr.RequestID = id
			c.DeleteOffsets(dr, nowMs)
		})
	}
	return func(ctx context.Context) (Response, error) {
		resp := kmsg.NewPtrOffsetDeleteResponse()
		resp.Version = version
		res, code, err := call.wait(ctx)
		if err != nil {
			return Response{}, err
		}
		if code == 0 && res.OffsetDelete != nil {
			code = res.OffsetDelete.ErrorCode
		}
		resp.ErrorCode = code
		if code != 0 {
			return Response{Msg: resp}, nil
		}
		for _, p := range append(res.OffsetDelete.Partitions, refused...) {
			if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != p.Topic {
				rt := kmsg.NewOffsetDeleteResponseTopic()
				rt.Topic = p.Topic
				resp.Topics = append(resp.Topics, rt)
			}
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, p.ErrorCode
			rt := &resp.Topics[len(resp.Topics)-1]
			rt.Partitions = append(rt.Partitions, rp)
		}
		return Response{Msg: resp}, nil
	}, nil
}
