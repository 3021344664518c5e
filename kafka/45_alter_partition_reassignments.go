package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
)

// AlterPartitionReassignments: v0-1
//
// Behavior:
// * Replicas starts moving a partition to those brokers (KIP-455): the
//   new replicas are added and fetch from the leader; once every one is
//   in the ISR the partition's replicas become the target, a leader being
//   removed hands over to a target replica in the ISR, and the brokers
//   left out delete their copies. A target equal to the replicas does
//   nothing; a reordering of them takes effect at once.
// * Replicas null cancels the partition's reassignment
//   (NO_REASSIGNMENT_IN_PROGRESS when there is none): the partition goes
//   back to its original replicas and the replicas being added are
//   dropped.
// * A new target for a partition under reassignment replaces the old one,
//   counted from the original replicas.
// * An empty target, a broker named twice or one not registered is
//   INVALID_REPLICA_ASSIGNMENT; a missing topic or partition
//   UNKNOWN_TOPIC_OR_PARTITION; a partition named twice INVALID_REQUEST;
//   with AllowReplicationFactorChange false (v1), a target of another size
//   INVALID_REPLICATION_FACTOR.
// * Served by the acting controller only: elsewhere the top-level error
//   is NOT_CONTROLLER. The changes are one metadata entry, committed
//   before the response leaves; progress is ListPartitionReassignments'.
// * Authorization: ALTER on the cluster, or CLUSTER_AUTHORIZATION_FAILED on
//   the request and every partition.
//
// Not implemented:
// * Replication throttles (leader.replication.throttled.rate and the
//   throttled replica lists): new replicas fetch at full speed.
// * TimeoutMillis is ignored: starting is synchronous.

func (s *Server) handleAlterPartitionReassignments(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := r.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = r.AllowReplicationFactorChange
	var reqs []cluster.Reassignment
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			reqs = append(reqs, cluster.Reassignment{TopicPartition: cluster.TopicPartition{Topic: t.Topic, Partition: p.Partition}, Replicas: p.Replicas})
		}
	}
	allowRF := r.AllowReplicationFactorChange || r.Version < 1
	var results []cluster.ReassignmentResult
	var err error
	if !s.authorized(req, kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, ClusterResourceName) {
		// As Kafka: the refusal on the request and on every partition.
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		for _, rq := range reqs {
			results = append(results, cluster.ReassignmentResult{TopicPartition: rq.TopicPartition, Err: kerr.ClusterAuthorizationFailed})
		}
	} else {
		results, err = s.node().Controller.AlterPartitionReassignments(req.Session.Context(), reqs, allowRF)
	}
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), kafkaMessage(err)
		return Respond(resp), nil
	}
	byTopic := map[string]int{}
	for _, res := range results {
		i, ok := byTopic[res.Topic]
		if !ok {
			i = len(resp.Topics)
			byTopic[res.Topic] = i
			rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			rt.Topic = res.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
		rp.Partition = res.Partition
		rp.ErrorCode, rp.ErrorMessage = errorCode(res.Err), kafkaMessage(res.Err)
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return Respond(resp), nil
}
