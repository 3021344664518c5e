package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups"
)

// ConsumerGroupHeartbeat: v0-1
//
// Behavior:
// * KIP-848 consumer groups: the coordinator runs the assignor
//   (group.consumer.assignors: uniform, range) and each heartbeat moves
//   the member towards its target assignment (groups/consumer.go). The
//   answer waits for the records it caused to be durable.
// * A null field means "unchanged" (the request's Has* flags); the
//   assignment is sent when it changed or the request was a full one.
// * v0 lets a joining member leave its id empty (the coordinator names
//   it); v1 clients name themselves and may subscribe by regex (RE2).
// * A group in use by the classic protocol is GROUP_ID_NOT_FOUND; an Empty
//   classic group (offsets only) becomes a consumer group.
// * Authorization: READ on the group (GROUP_AUTHORIZATION_FAILED), and
//   DESCRIBE on every subscribed topic name (TOPIC_AUTHORIZATION_FAILED), as
//   Kafka. A regex resolves only to the topics the member's principal may
//   DESCRIBE (Kafka's filterTopicDescribeAuthorizedTopics); the others are
//   left out silently, not refused. ACLs changed later take effect on the
//   member's next heartbeat or the next change of topics.
//
// Not implemented:
// * Classic members inside a consumer group (the mixed-protocol upgrade
//   path); rack-aware assignment.

func (s *Server) handleConsumerGroupHeartbeat(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.ConsumerGroupHeartbeatRequest)
	version := r.Version
	hr := groups.ConsumerHeartbeatRequest{
		Group:                   r.Group,
		MemberID:                r.MemberID,
		MemberEpoch:             r.MemberEpoch,
		InstanceID:              derefString(r.InstanceID),
		RackID:                  derefString(r.RackID),
		HasRackID:               r.RackID != nil,
		RebalanceTimeoutMs:      r.RebalanceTimeoutMillis,
		SubscribedTopicNames:    r.SubscribedTopicNames,
		HasSubscribedTopicNames: r.SubscribedTopicNames != nil,
		SubscribedTopicRegex:    derefString(r.SubscribedTopicRegex),
		HasSubscribedTopicRegex: r.SubscribedTopicRegex != nil,
		ServerAssignor:          derefString(r.ServerAssignor),
		HasTopicPartitions:      r.Topics != nil,
		ClientID:                req.Header.ClientID,
		ClientHost:              clientHost(req.Session),
	}
	for _, t := range r.Topics {
		hr.TopicPartitions = append(hr.TopicPartitions, groups.TopicPartitions{TopicID: t.TopicID, Partitions: t.Partitions})
	}
	var call groupCall
	az := s.authz(req)
	switch {
	case !az.allow(kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, r.Group):
		call = groupCall{code: kerr.GroupAuthorizationFailed.Code}
	case !az.allowEvery(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, r.SubscribedTopicNames):
		// As Kafka: a subscription to a topic the member may not
		// DESCRIBE is refused whole.
		call = groupCall{code: kerr.TopicAuthorizationFailed.Code}
	default:
		// The topics a regex resolves to are those the member may
		// DESCRIBE, judged by the coordinator whenever it resolves it.
		hr.TopicDescribable = az.checker(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic)
		call = s.submitGroup(req, r.Group, func(c GroupCore, id uint64, nowMs int64) {
			hr.RequestID = id
			c.ConsumerHeartbeat(hr, nowMs)
		})
	}
	return func(ctx context.Context) (Response, error) {
		resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
		resp.Version = version
		res, code, err := call.wait(ctx)
		if err != nil {
			return Response{}, err
		}
		if code != 0 {
			resp.ErrorCode = code
			return Response{Msg: resp}, nil
		}
		hb := res.ConsumerHB
		resp.ErrorCode = hb.ErrorCode
		if hb.ErrorMessage != "" {
			resp.ErrorMessage = &hb.ErrorMessage
		}
		if hb.MemberID != "" {
			resp.MemberID = &hb.MemberID
		}
		resp.MemberEpoch = hb.MemberEpoch
		resp.HeartbeatIntervalMillis = hb.HeartbeatIntervalMs
		if hb.Assignment != nil {
			a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
			for _, t := range *hb.Assignment {
				rt := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
				rt.TopicID, rt.Partitions = t.TopicID, t.Partitions
				a.Topics = append(a.Topics, rt)
			}
			if a.Topics == nil {
				a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
			}
			resp.Assignment = &a
		}
		return Response{Msg: resp}, nil
	}, nil
}
