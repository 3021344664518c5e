package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
)

// ElectLeaders: v0-2
//
// Behavior:
// * ElectionType 0 (v0 always) elects each partition's preferred replica
//   (the first of its replicas) when it is live and in the ISR;
//   ELECTION_NOT_NEEDED when it already leads,
//   PREFERRED_LEADER_NOT_AVAILABLE when it may not lead.
// * ElectionType 1 (unclean) elects a leader for a partition that has
//   none, from the ISR or the ELR first, else the first live replica
//   (recorded in the data-loss ledger); ELECTION_NOT_NEEDED when the
//   partition has a leader, ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica
//   is live. Another type is INVALID_REQUEST.
// * Topics null tries every partition and answers only those where an
//   election was needed (succeeded or failed), as Kafka's controller.
//   An unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION; a
//   partition named twice is answered once.
// * Served by the acting controller only: elsewhere every partition (and
//   the top-level error, v1+) is NOT_CONTROLLER, so clients send it again
//   to the controller Metadata names. The elections are one metadata
//   entry, committed before the response leaves.
// * Authorization: ALTER on the cluster, or CLUSTER_AUTHORIZATION_FAILED on
//   the request and every partition.
//
// Not implemented:
// * TimeoutMillis is ignored: the election is synchronous, bounded by the
//   metadata quorum's commit timeout.

// Kafka's ElectionType values. Part of the wire protocol.
const (
	electionPreferred int8 = 0
	electionUnclean   int8 = 1
)

func (s *Server) handleElectLeaders(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.ElectLeadersRequest)
	resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
	var partitions []cluster.TopicPartition
	if r.Topics != nil {
		partitions = []cluster.TopicPartition{}
		seen := map[cluster.TopicPartition]bool{}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				tp := cluster.TopicPartition{Topic: t.Topic, Partition: p}
				if !seen[tp] {
					seen[tp] = true
					partitions = append(partitions, tp)
				}
			}
		}
	}
	var results []cluster.ElectLeadersResult
	var err error
	switch {
	case !s.authorized(req, kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, ClusterResourceName):
		err = kerr.ClusterAuthorizationFailed
	case r.ElectionType == electionPreferred:
		results, err = s.node().Controller.ElectLeaders(req.Session.Context(), cluster.ElectPreferred, partitions)
	case r.ElectionType == electionUnclean:
		results, err = s.node().Controller.ElectLeaders(req.Session.Context(), cluster.ElectUnclean, partitions)
	default:
		err = fmt.Errorf("%w: unknown election type %d", kerr.InvalidRequest, r.ElectionType)
	}
	if err != nil {
		// The whole request failed: every partition named gets the error.
		resp.ErrorCode = errorCode(err)
		results = results[:0]
		for _, tp := range partitions {
			results = append(results, cluster.ElectLeadersResult{TopicPartition: tp, Leader: cluster.NoLeader, Err: err})
		}
	}
	byTopic := map[string]int{}
	for _, res := range results {
		i, ok := byTopic[res.Topic]
		if !ok {
			i = len(resp.Topics)
			byTopic[res.Topic] = i
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = res.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewElectLeadersResponseTopicPartition()
		rp.Partition = res.Partition
		rp.ErrorCode, rp.ErrorMessage = errorCode(res.Err), kafkaMessage(res.Err)
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return Respond(resp), nil
}
