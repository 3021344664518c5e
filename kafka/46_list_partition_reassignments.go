package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
)

// ListPartitionReassignments: v0
//
// Behavior:
// * Lists the partitions being reassigned, of the topics and partitions
//   named (Topics null: of every topic), with their replicas (the target
//   followed by the replicas being removed), the replicas being added and
//   those being removed. Partitions not being reassigned, and partition
//   numbers the topic does not have, are left out, as Kafka does; an
//   unknown topic is a top-level UNKNOWN_TOPIC_OR_PARTITION.
// * Served by the acting controller only: elsewhere the top-level error
//   is NOT_CONTROLLER.
// * Authorization: DESCRIBE on the cluster, or CLUSTER_AUTHORIZATION_FAILED.
//
// Not implemented:
// * TimeoutMillis is ignored: the answer comes from the controller's
//   image at once.

func (s *Server) handleListPartitionReassignments(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.ListPartitionReassignmentsRequest)
	resp := r.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !s.authorized(req, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, ClusterResourceName) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return Respond(resp), nil
	}
	var partitions []cluster.TopicPartition
	if r.Topics != nil {
		partitions = []cluster.TopicPartition{}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				partitions = append(partitions, cluster.TopicPartition{Topic: t.Topic, Partition: p})
			}
		}
	}
	ongoing, err := s.node().Controller.ListPartitionReassignments(partitions)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), kafkaMessage(err)
		return Respond(resp), nil
	}
	byTopic := map[string]int{}
	seen := map[cluster.TopicPartition]bool{}
	for _, o := range ongoing {
		if seen[o.TopicPartition] {
			continue
		}
		seen[o.TopicPartition] = true
		i, ok := byTopic[o.Topic]
		if !ok {
			i = len(resp.Topics)
			byTopic[o.Topic] = i
			rt := kmsg.NewListPartitionReassignmentsResponseTopic()
			rt.Topic = o.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		rp.Partition = o.Partition
		rp.Replicas, rp.AddingReplicas, rp.RemovingReplicas = nonNilIDs(o.Replicas), nonNilIDs(o.AddingReplicas), nonNilIDs(o.RemovingReplicas)
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return Respond(resp), nil
}

// nonNilIDs keeps an empty broker list an empty array on the wire.
func nonNilIDs(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}
