package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/groups"
)

// ConsumerGroupDescribe: v0-1
//
// Behavior:
// * Each group is described by its coordinator, behind the records of
//   earlier requests (never what is not durable): state (Empty,
//   Assigning, Reconciling, Stable), group and assignment epochs, the
//   assignor, and every member's current and target assignment, with
//   topic names from the metadata image.
// * A classic group, or none, is GROUP_ID_NOT_FOUND.
// * v1: MemberType 1 (consumer protocol) for every member.
// * Authorization: DESCRIBE on each group, or GROUP_AUTHORIZATION_FAILED;
//   its authorized operations computed when asked. A group whose members
//   are assigned a topic the principal may not DESCRIBE is answered
//   TOPIC_AUTHORIZATION_FAILED without its members, as Kafka.

func (s *Server) handleConsumerGroupDescribe(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.ConsumerGroupDescribeRequest)
	version := r.Version
	names := r.Groups
	az := s.authz(req)
	calls := make([]groupCall, len(names))
	for i, name := range names {
		calls[i] = s.submitGroupAuthorized(req, kmsg.ACLOperationDescribe, name, func(c GroupCore, id uint64, _ int64) {
			c.ConsumerDescribe(groups.ConsumerDescribeRequest{RequestID: id, Group: name})
		})
	}
	n := s.node()
	return func(ctx context.Context) (Response, error) {
		resp := kmsg.NewPtrConsumerGroupDescribeResponse()
		resp.Version = version
		im := n.Metadata.Image()
		assignment := func(tps []groups.TopicPartitions) kmsg.Assignment {
			a := kmsg.Assignment{TopicPartitions: []kmsg.AssignmentTopicPartition{}}
			for _, tp := range tps {
				at := kmsg.AssignmentTopicPartition{TopicID: tp.TopicID, Partitions: tp.Partitions}
				if t := im.TopicByID(cluster.UUID(tp.TopicID)); t != nil {
					at.Topic = t.Name
				}
				a.TopicPartitions = append(a.TopicPartitions, at)
			}
			return a
		}
		for i, call := range calls {
			rg := kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group = names[i]
			res, code, err := call.wait(ctx)
			if err != nil {
				return Response{}, err
			}
			if code != 0 || res.ConsumerDescribe == nil {
				rg.ErrorCode = code
				resp.Groups = append(resp.Groups, rg)
				continue
			}
			d := res.ConsumerDescribe
			if !az.describesAssigned(im, d.Members) {
				// As Kafka: a group that shows a topic the principal may
				// not DESCRIBE is not shown at all.
				rg.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rg.ErrorMessage = kmsg.StringPtr("The group has described topic(s) that the client is not authorized to describe.")
				resp.Groups = append(resp.Groups, rg)
				continue
			}
			rg.ErrorCode = d.ErrorCode
			if d.ErrorMessage != "" {
				rg.ErrorMessage = &d.ErrorMessage
			}
			rg.State, rg.Epoch, rg.AssignmentEpoch, rg.AssignorName = d.State, d.Epoch, d.AssignmentEpoch, d.AssignorName
			if r.IncludeAuthorizedOperations {
				rg.AuthorizedOperations = az.operations(kmsg.ACLResourceTypeGroup, names[i])
			}
			for _, m := range d.Members {
				rm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
				rm.MemberID, rm.MemberEpoch, rm.ClientID, rm.ClientHost = m.MemberID, m.MemberEpoch, m.ClientID, m.ClientHost
				rm.InstanceID, rm.RackID = optionalString(m.InstanceID), optionalString(m.RackID)
				rm.SubscribedTopics = m.SubscribedTopicNames
				if rm.SubscribedTopics == nil {
					rm.SubscribedTopics = []string{}
				}
				rm.SubscribedTopicRegex = optionalString(m.SubscribedTopicRegex)
				rm.Assignment, rm.TargetAssignment = assignment(m.Assignment), assignment(m.TargetAssignment)
				rm.MemberType = 1
				rg.Members = append(rg.Members, rm)
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return Response{Msg: resp}, nil
	}, nil
}

// describesAssigned reports whether the principal may DESCRIBE every
// topic in the members' assignments and target assignments.
func (z authz) describesAssigned(im *cluster.Image, members []groups.ConsumerDescribedMember) bool {
	if !z.on() {
		return true
	}
	seen := map[[16]byte]bool{}
	for _, m := range members {
		for _, tps := range [][]groups.TopicPartitions{m.Assignment, m.TargetAssignment} {
			for _, tp := range tps {
				if seen[tp.TopicID] {
					continue
				}
				seen[tp.TopicID] = true
				t := im.TopicByID(cluster.UUID(tp.TopicID))
				if t != nil && !z.allow(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, t.Name) {
					return false
				}
			}
		}
	}
	return true
}

// optionalString is nil for "", the wire's null.
func optionalString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
