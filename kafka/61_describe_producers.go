package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
)

// DescribeProducers: v0
//
// Behavior:
// * Per partition led here, the idempotent producers its state tracks:
//   id, epoch, last sequence, last timestamp; coordinator epoch -1 and no
//   open transaction (there are no transactions yet).
// * UNKNOWN_TOPIC_OR_PARTITION for partitions not hosted here,
//   NOT_LEADER_OR_FOLLOWER for those it does not lead.
// * Authorization: READ on each topic, or TOPIC_AUTHORIZATION_FAILED on each
//   of its partitions.

func (s *Server) handleDescribeProducers(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.DescribeProducersRequest)
	resp := r.ResponseKind().(*kmsg.DescribeProducersResponse)
	replicas := s.node().Partitions
	az := s.authz(req)
	for _, t := range r.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		denied := !az.allow(kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = p
			if denied {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			part := replicas.Partition(engine.TopicPartition{Topic: t.Topic, Partition: p})
			if part == nil {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if leader, _ := part.Leader(); !leader {
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			for _, e := range part.ProducerStates() {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID, ap.ProducerEpoch = e.ProducerID, int32(e.ProducerEpoch)
				ap.LastSequence = e.LastSequence()
				ap.LastTimestamp = e.LastTimestamp
				ap.CoordinatorEpoch = -1
				ap.CurrentTxnStartOffset = -1
				rp.ActiveProducers = append(rp.ActiveProducers, ap)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return Respond(resp), nil
}
