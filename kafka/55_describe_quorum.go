package kafka

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/election"
)

// DescribeQuorum: v0-1
//
// Behavior:
// * The metadata quorum as Kafka's kafka-metadata-quorum shows it, for
//   topic __cluster_metadata partition 0: the acting controller (leader),
//   its epoch, the high watermark (commit index) and each voter's log end
//   as the controller last saw it.
// * A node that is not the acting controller forwards the request to the
//   controller (forward.go) and relays its answer, as Kafka's brokers do:
//   Kafka's admin client sends DescribeQuorum to any node it knows, so
//   kafka-metadata-quorum works from every bootstrap node.
// * A request carrying the tagged field QuorumLocalViewTag (wren's own)
//   is answered where it arrives: a node that is not the acting
//   controller answers NOT_LEADER_OR_FOLLOWER on the partition, with the
//   controller it knows, its own epoch and its own log end (the one voter
//   listed), so `wren cluster quorum` can show every voter's epoch. So
//   does any node when forwarding fails (no controller known, no answer
//   in time): Kafka's client then asks again.
// * A one-voter cluster is its own controller in epoch 0; its log end
//   and high watermark are the image's offset.
//
// Not implemented:
// * Observers (every node is a voter); fetch and caught-up timestamps are
//   -1.

const metadataTopicName = "__cluster_metadata"

// QuorumLocalViewTag is the tagged field of a DescribeQuorum request that
// asks the node it is sent to for its own view, not the controller's
// (any value). Far above the tags Kafka assigns (from 0 up). Part of the
// wire format.
const QuorumLocalViewTag uint32 = 0x7772656e // "wren"

// answeredHere reports whether req, of a forwarded key, asks to be
// answered by this node whatever its role.
func answeredHere(req *Request) bool {
	r, ok := req.Body.(*kmsg.DescribeQuorumRequest)
	return ok && tagged(&r.UnknownTags, QuorumLocalViewTag)
}

func (s *Server) handleDescribeQuorum(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.DescribeQuorumRequest)
	resp := r.ResponseKind().(*kmsg.DescribeQuorumResponse)
	c := s.node().Metadata
	for _, t := range r.Topics {
		rt := kmsg.NewDescribeQuorumResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeQuorumResponseTopicPartition()
			rp.Partition = p.Partition
			if t.Topic != metadataTopicName || p.Partition != 0 {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			voter := func(id int32, leo int64) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
				v := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
				v.ReplicaID, v.LogEndOffset, v.LastFetchTimestamp, v.LastCaughtUpTimestamp = id, leo, -1, -1
				return v
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			st, onQuorum, err := c.QuorumStatus(ctx)
			cancel()
			switch {
			case err != nil:
				rp.ErrorCode = kerr.RequestTimedOut.Code
			case !onQuorum:
				off := int64(c.Image().Offset)
				rp.LeaderID, rp.LeaderEpoch, rp.HighWatermark = c.NodeID(), 0, off
				rp.CurrentVoters = append(rp.CurrentVoters, voter(c.NodeID(), off))
			case !st.Election.Soft.Acting:
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
				rp.LeaderID, rp.LeaderEpoch, rp.HighWatermark = int32(st.Election.Soft.Controller), st.Election.Hard.Epoch, st.Commit
				rp.CurrentVoters = append(rp.CurrentVoters, voter(c.NodeID(), st.LastIndex))
			default:
				rp.LeaderID, rp.LeaderEpoch, rp.HighWatermark = c.NodeID(), st.Election.Hard.Epoch, st.Commit
				for _, id := range c.Voters() {
					leo := int64(-1)
					if id == c.NodeID() {
						leo = st.LastIndex
					} else if m, ok := st.Match[election.NodeID(id)]; ok {
						leo = m
					}
					rp.CurrentVoters = append(rp.CurrentVoters, voter(id, leo))
				}
				slices.SortFunc(rp.CurrentVoters, func(a, b kmsg.DescribeQuorumResponseTopicPartitionReplicaState) int {
					return int(a.ReplicaID - b.ReplicaID)
				})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return Respond(resp), nil
}
