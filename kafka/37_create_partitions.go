package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
)

// CreatePartitions: v0-3
//
// Behavior:
// * Raises each topic's partition count to Count; each topic succeeds or
//   fails on its own. A count that is not an increase is INVALID_PARTITIONS
//   (partitions are never removed: keys would move to other partitions);
//   a missing topic UNKNOWN_TOPIC_OR_PARTITION.
// * Assignment, when given, lists the replicas of each new partition; it
//   must name one list per new partition, each of the topic's replication
//   factor, of distinct known nodes (INVALID_REPLICA_ASSIGNMENT). Without
//   it the controller spreads the new replicas as it does for a new topic.
// * A topic named twice is INVALID_REQUEST ("Duplicate topic name."), as
//   Kafka's controller answers.
// * Internal topics are refused with TOPIC_AUTHORIZATION_FAILED: adding
//   partitions to __consumer_offsets would move every group to another
//   coordinator partition. Kafka's tools refuse this; its broker leaves it
//   to the authorizer; wren refuses it whatever the ACLs.
// * ValidateOnly checks everything and writes nothing.
// * While the log dir is failed or below its free-space floor, each topic
//   gets KAFKA_STORAGE_ERROR with the reason.
// * The new partitions are durable in the metadata log, and their logs
//   open, before the response leaves.
// * Authorization: ALTER on each topic, or TOPIC_AUTHORIZATION_FAILED.
//
// Not implemented:
// * TimeoutMillis is ignored: creation is synchronous.

func (s *Server) handleCreatePartitions(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.CreatePartitionsRequest)
	resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
	count := make(map[string]int, len(r.Topics))
	for _, t := range r.Topics {
		count[t.Topic]++
	}
	az := s.authz(req)
	for i := range r.Topics {
		t := &r.Topics[i]
		var err error
		if count[t.Topic] > 1 {
			err = fmt.Errorf("%w: Duplicate topic name.", kerr.InvalidRequest)
		} else if !az.allow(kmsg.ACLOperationAlter, kmsg.ACLResourceTypeTopic, t.Topic) {
			err = kerr.TopicAuthorizationFailed
		} else {
			err = s.createPartitions(req.Session.Context(), t, r.ValidateOnly)
		}
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		rt.ErrorCode, rt.ErrorMessage = errorCode(err), kafkaMessage(err)
		resp.Topics = append(resp.Topics, rt)
	}
	return Respond(resp), nil
}

func (s *Server) createPartitions(ctx context.Context, t *kmsg.CreatePartitionsRequestTopic, validateOnly bool) error {
	if cluster.IsInternalTopic(t.Topic) {
		return fmt.Errorf("%w: the number of partitions of internal topic %s cannot be changed", kerr.TopicAuthorizationFailed, t.Topic)
	}
	if err := logDirWritable(s.node()); err != nil {
		return err
	}
	var assignment [][]int32
	if t.Assignment != nil {
		assignment = make([][]int32, len(t.Assignment))
		for i, a := range t.Assignment {
			assignment[i] = a.Replicas
		}
	}
	return s.node().Controller.CreatePartitions(ctx, t.Topic, t.Count, assignment, validateOnly)
}
