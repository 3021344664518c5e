package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
)

// ListOffsets: v1-8
//
// Behavior:
// * -1 (latest): the high watermark; under read_committed (isolation
//   level 1, v2+) the last stable offset, which also bounds timestamp
//   lookups.
// * -2 (earliest) and -4 (earliest local): the log start offset.
// * -3 (max timestamp, v7+): the record with the largest timestamp.
// * A timestamp: the first record whose timestamp is at or after it, below
//   the high watermark; none gives offset -1 and timestamp -1.
// * The leader epoch of the answer (v4+) comes from the leader epoch cache.
// * CurrentLeaderEpoch (v4+) is fenced as for Fetch.
// * A leader whose high watermark is still below its leader epoch start
//   offset (the log end offset when it became leader: a new leader, or
//   one restarted with the high watermark of its checkpoint, or 0, until
//   its followers fetch) answers a consumer's lookup, of any kind,
//   OFFSET_NOT_AVAILABLE (retriable), as Kafka's
//   Partition.fetchOffsetForTimestamp does: its high watermark would name
//   an offset below records that are already committed, and a consumer
//   that starts at "latest" would read them again.
// * Authorization: DESCRIBE on each topic, or TOPIC_AUTHORIZATION_FAILED on
//   each of its partitions.
//
// Not implemented:
// * -5 (earliest pending upload, tiered storage): UNSUPPORTED_VERSION.

func (s *Server) handleListOffsets(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.ListOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
	replicas := s.node().Partitions
	az := s.authz(req)
	for _, t := range r.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		denied := !az.allow(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Timestamp, rp.Offset, rp.LeaderEpoch = -1, -1, -1
			if denied {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			part := replicas.Partition(engine.TopicPartition{Topic: t.Topic, Partition: p.Partition})
			if part == nil {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			leader, epoch, hw, epochStart := part.LeaderState()
			switch {
			case !leader:
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
			case p.CurrentLeaderEpoch >= 0 && p.CurrentLeaderEpoch < epoch:
				rp.ErrorCode = kerr.FencedLeaderEpoch.Code
			case p.CurrentLeaderEpoch > epoch:
				rp.ErrorCode = kerr.UnknownLeaderEpoch.Code
			case r.ReplicaID == consumerReplicaID && epochStart > hw:
				rp.ErrorCode = kerr.OffsetNotAvailable.Code
			default:
				bound := hw
				if r.IsolationLevel == readCommitted {
					// read_committed: latest is the last stable offset,
					// and no lookup answers past it (Kafka's
					// fetchOffsetForTimestamp).
					bound = part.LastStableOffset(hw)
				}
				listOffset(part, bound, p.Timestamp, &rp)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return Respond(resp), nil
}

// consumerReplicaID is the replica id of a client's ListOffsets (Kafka's
// CONSUMER_REPLICA_ID); -2 is a debugging tool's, which Kafka answers
// without the high watermark check.
const consumerReplicaID = -1

func listOffset(l Replica, hw, ts int64, rp *kmsg.ListOffsetsResponseTopicPartition) {
	switch ts {
	case engine.LatestTimestamp:
		rp.Offset = hw
		_, _, rp.LeaderEpoch, _, _ = l.OffsetForTimestamp(engine.LatestTimestamp)
		return
	case engine.EarliestTimestamp, -4:
		ts = engine.EarliestTimestamp
	case engine.MaxTimestamp:
	default:
		if ts < 0 {
			rp.ErrorCode = kerr.UnsupportedVersion.Code
			return
		}
	}
	off, t, epoch, found, err := l.OffsetForTimestamp(ts)
	if err != nil {
		rp.ErrorCode = errorCode(err)
		return
	}
	if !found || (ts != engine.EarliestTimestamp && off >= hw) {
		return
	}
	rp.Offset, rp.Timestamp, rp.LeaderEpoch = off, t, epoch
}
