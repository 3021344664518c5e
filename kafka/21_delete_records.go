package kafka

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/engine"
)

// DeleteRecords: v0-2
//
// Behavior:
// * Moves each partition's log start offset up to Offset, -1 meaning the
//   high watermark, and answers the new low watermark (the log start
//   offset). The new start is durable (log-start-offset-checkpoint) before
//   the response; segments wholly below it are deleted.
// * An offset above the high watermark, or negative other than -1, is
//   OFFSET_OUT_OF_RANGE; one at or below the log start offset changes
//   nothing and answers the current low watermark, as Kafka does.
// * A topic whose cleanup.policy lacks delete is POLICY_VIOLATION, as
//   Kafka: a compacted log keeps the last record of every key.
// * UNKNOWN_TOPIC_OR_PARTITION for a partition the metadata does not
//   have, NOT_LEADER_OR_FOLLOWER for one this node does not lead. An
//   error answers low watermark -1.
// * Followers follow: the leader's replica fetch responses carry its log
//   start offset, and each follower moves its own up to it (never past
//   its high watermark), deletes its segments below and checkpoints it,
//   as Kafka's LeaderOffsetIncremented: the deleted records do not come
//   back when a follower leads, nor after it restarts.
// * Authorization: DELETE on each topic, or TOPIC_AUTHORIZATION_FAILED on
//   each of its partitions.
//
// Not implemented:
// * TimeoutMillis is ignored: the answer comes once the leader's start
//   moved; Kafka waits, up to it, for the followers' log start offsets
//   too. Here they follow with their next fetch round (at most
//   replica.fetch.wait.max.ms later), unawaited.

func (s *Server) handleDeleteRecords(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.DeleteRecordsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteRecordsResponse)
	n := s.node()
	im := n.Metadata.Image()
	az := s.authz(req)
	for _, t := range r.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		policyErr := deletePolicy(n, im, t.Topic)
		denied := !az.allow(kmsg.ACLOperationDelete, kmsg.ACLResourceTypeTopic, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition = p.Partition
			if denied {
				rp.LowWatermark, rp.ErrorCode = -1, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			rp.LowWatermark, rp.ErrorCode = s.deleteRecords(im, t.Topic, p, policyErr)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return Respond(resp), nil
}

func (s *Server) deleteRecords(im *cluster.Image, topic string, p kmsg.DeleteRecordsRequestTopicPartition, policyErr *kerr.Error) (int64, int16) {
	_, _, kerrLeader := s.leaderPartition(im, topic, p.Partition)
	switch {
	case kerrLeader != nil:
		return -1, kerrLeader.Code
	case policyErr != nil:
		return -1, policyErr.Code
	}
	lowWatermark, err := s.node().Partitions.DeleteRecords(engine.TopicPartition{Topic: topic, Partition: p.Partition}, p.Offset)
	if err != nil {
		return -1, errorCode(err)
	}
	return lowWatermark, 0
}

// deletePolicy is POLICY_VIOLATION for a topic whose effective
// cleanup.policy does not include delete, nil otherwise (a topic that does
// not exist is left to the per-partition checks).
func deletePolicy(n *Node, im *cluster.Image, topic string) *kerr.Error {
	t := im.Topic(topic)
	if t == nil {
		return nil
	}
	tc, err := n.Config.Topic(t.Configs, dynamicConfigs(n, im))
	if err != nil || slices.Contains(tc.CleanupPolicy, "delete") {
		// Overrides that no longer resolve were validated when set; the
		// log runs with the broker defaults then, which delete.
		return nil
	}
	return kerr.PolicyViolation
}

// leaderPartition finds a partition that a per-partition request needs
// this node to lead, with its leader epoch, or the error Kafka answers:
// UNKNOWN_TOPIC_OR_PARTITION when the metadata does not have the
// partition, NOT_LEADER_OR_FOLLOWER when it does but this node does not
// lead it (or has not opened it yet).
func (s *Server) leaderPartition(im *cluster.Image, topic string, partition int32) (Replica, int32, *kerr.Error) {
	p := s.node().Partitions.Partition(engine.TopicPartition{Topic: topic, Partition: partition})
	if p == nil {
		if t := im.Topic(topic); t != nil && partition >= 0 && int(partition) < len(t.Partitions) {
			return nil, 0, kerr.NotLeaderForPartition
		}
		return nil, 0, kerr.UnknownTopicOrPartition
	}
	leader, epoch := p.Leader()
	if !leader {
		return nil, 0, kerr.NotLeaderForPartition
	}
	return p, epoch, nil
}
