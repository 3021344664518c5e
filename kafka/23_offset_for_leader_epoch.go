package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
)

// OffsetForLeaderEpoch: v2-4
//
// Behavior:
// * Per partition, for LeaderEpoch: the largest epoch at most LeaderEpoch
//   that the log's leader epoch cache knows and the start offset of the
//   epoch after it, or the log end offset when LeaderEpoch is the latest
//   (Kafka's LeaderEpochFileCache.endOffsetFor, KIP-101/279); an epoch
//   the log has no record of answers epoch -1, end offset -1. Consumers
//   use it to find truncation after a leader change (KIP-320), followers
//   to find where their log diverges.
// * The leader's current epoch counts as begun at the log end offset even
//   before a batch was written in it: Kafka's cache gets that entry when
//   the replica becomes leader, wren's engine only on the first append.
// * CurrentLeaderEpoch (-1: not given) below the leader's epoch is
//   FENCED_LEADER_EPOCH, above it UNKNOWN_LEADER_EPOCH (the client's
//   metadata is newer than ours).
// * NOT_LEADER_OR_FOLLOWER when this node does not lead the partition,
//   UNKNOWN_TOPIC_OR_PARTITION when the metadata does not have it.
// * A follower (ReplicaID v3+, a node id) and a consumer (-1) get the
//   same answer, from the leader.
// * Authorization: a consumer needs DESCRIBE on each topic
//   (TOPIC_AUTHORIZATION_FAILED), a replica CLUSTER_ACTION on the cluster
//   (CLUSTER_AUTHORIZATION_FAILED).
//
// Not implemented:
// * v0-1 (removed in Kafka 4.0, KIP-896).

func (s *Server) handleOffsetForLeaderEpoch(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := r.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	im := s.node().Metadata.Image()
	az := s.authz(req)
	// As Kafka: a replica's request needs CLUSTER_ACTION, a consumer's
	// DESCRIBE on each topic.
	var refusedAll int16
	if r.Version >= 3 && r.ReplicaID >= 0 && !az.allow(kmsg.ACLOperationClusterAction, kmsg.ACLResourceTypeCluster, ClusterResourceName) {
		refusedAll = kerr.ClusterAuthorizationFailed.Code
	}
	for _, t := range r.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		code := refusedAll
		if code == 0 && !az.allow(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, t.Topic) {
			code = kerr.TopicAuthorizationFailed.Code
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition = p.Partition
			if code != 0 {
				rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = code, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			s.endOffsetForEpoch(im, t.Topic, p, &rp)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return Respond(resp), nil
}

func (s *Server) endOffsetForEpoch(im *cluster.Image, topic string, p kmsg.OffsetForLeaderEpochRequestTopicPartition, rp *kmsg.OffsetForLeaderEpochResponseTopicPartition) {
	part, epoch, err := s.leaderPartition(im, topic, p.Partition)
	if err == nil {
		err = checkCurrentLeaderEpoch(p.CurrentLeaderEpoch, epoch)
	}
	if err != nil {
		rp.ErrorCode = err.Code
		return
	}
	rp.LeaderEpoch, rp.EndOffset = endOffsetFor(part, epoch, p.LeaderEpoch)
}

// checkCurrentLeaderEpoch fences a request that carries the leader epoch
// the client believes current, as Kafka's Partition does.
func checkCurrentLeaderEpoch(current, leaderEpoch int32) *kerr.Error {
	switch {
	case current == -1:
		return nil
	case current < leaderEpoch:
		return kerr.FencedLeaderEpoch
	case current > leaderEpoch:
		return kerr.UnknownLeaderEpoch
	}
	return nil
}

// endOffsetFor answers for one partition that this node leads at
// leaderEpoch.
func endOffsetFor(l Replica, leaderEpoch, requested int32) (int32, int64) {
	epoch, end := l.EndOffsetForEpoch(requested)
	if end != -1 || requested < 0 || requested > leaderEpoch {
		return epoch, end
	}
	// The cache ends before requested, which is at most the current
	// epoch: the current epoch has not written yet. Kafka's cache would
	// hold (leaderEpoch, the log end offset at election), and nothing was
	// appended since, so that start is the log end offset now.
	leo := l.LogEndOffset()
	if requested == leaderEpoch {
		return leaderEpoch, leo
	}
	if epochs := l.LeaderEpochs(); len(epochs) > 0 {
		return epochs[len(epochs)-1].Epoch, leo
	}
	return requested, leo
}
