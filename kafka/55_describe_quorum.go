package kafka

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster/quorum"
	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/election"
)

// DescribeQuorum: v0-2
//
// Behavior:
// * The metadata quorum as Kafka's kafka-metadata-quorum shows it, for
//   topic __cluster_metadata partition 0: the acting controller (leader),
//   its epoch, the high watermark (commit index) and each voter's log end
//   as the controller last saw it.
// * LastFetchTimestamp and LastCaughtUpTimestamp (v1+), on the acting
//   controller: when each follower's last fetch of this epoch arrived,
//   and the last time its log end reached the controller's (Kafka's
//   rule, cluster/metalog "Follower progress"), -1 before its first fetch
//   of the epoch; the controller itself is "now" in both, as in Kafka, so
//   kafka-metadata-quorum's MaxFollowerLagTimeMs is the age of the most
//   lagging voter's caught-up time. The ages come from the monotonic
//   clock and are stamped on this node's wall clock when answering, good
//   to within one election tick.
// * v2 (KIP-853): Nodes lists each voter listed with its CONTROLLER
//   listener endpoint, from controller.quorum.voters under the first name
//   of controller.listener.names; ErrorMessage says why a partition
//   failed.
// * A node that is not the acting controller forwards the request to the
//   controller (forward.go) and relays its answer, as Kafka's brokers do:
//   Kafka's admin client sends DescribeQuorum to any node it knows, so
//   kafka-metadata-quorum works from every bootstrap node.
// * A request carrying the tagged field QuorumLocalViewTag (wren's own)
//   is answered where it arrives: a node that is not the acting
//   controller answers NOT_LEADER_OR_FOLLOWER on the partition, with the
//   controller it knows, its own epoch and its own log end (the one voter
//   listed, timestamps -1), so `wren cluster quorum` can show every
//   voter's epoch. So does any node when forwarding fails (no controller
//   known, no answer in time): Kafka's client then asks again.
// * A one-voter cluster is its own controller in epoch 0; its log end
//   and high watermark are the image's offset.
// * Authorization: DESCRIBE on the cluster, or CLUSTER_AUTHORIZATION_FAILED.
//
// Not implemented:
// * Observers (every node is a voter).
// * ReplicaDirectoryId is the zero Uuid: the voter set is static
//   (controller.quorum.voters), whose voters Kafka too reports without a
//   directory id.

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
	if !s.authorized(req, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, ClusterResourceName) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return Respond(resp), nil
	}
	listed := map[int32]bool{}
	for _, t := range r.Topics {
		rt := kmsg.NewDescribeQuorumResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeQuorumResponseTopicPartition()
			rp.Partition = p.Partition
			if t.Topic != metadataTopicName || p.Partition != 0 {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				rp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("the metadata quorum is %s partition 0", metadataTopicName))
			} else {
				s.describeMetadataPartition(&rp)
			}
			for _, v := range rp.CurrentVoters {
				listed[v.ReplicaID] = true
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if r.Version >= 2 {
		resp.Nodes = voterNodes(s.node().Config, listed)
	}
	return Respond(resp), nil
}

// describeMetadataPartition fills rp, the answer for the metadata
// partition, from this node's view of the quorum.
func (s *Server) describeMetadataPartition(rp *kmsg.DescribeQuorumResponseTopicPartition) {
	c := s.node().Metadata
	voter := func(id int32, leo int64) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
		v := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		v.ReplicaID, v.LogEndOffset = id, leo
		return v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	st, onQuorum, err := c.QuorumStatus(ctx)
	cancel()
	switch {
	case err != nil:
		rp.ErrorCode = kerr.RequestTimedOut.Code
		rp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("this node's view of the metadata quorum is unknown: %v", err))
	case !onQuorum:
		off := int64(c.Image().Offset)
		rp.LeaderID, rp.LeaderEpoch, rp.HighWatermark = c.NodeID(), 0, off
		v := voter(c.NodeID(), off)
		now := time.Now().UnixMilli()
		v.LastFetchTimestamp, v.LastCaughtUpTimestamp = now, now
		rp.CurrentVoters = append(rp.CurrentVoters, v)
	case !st.Election.Soft.Acting:
		rp.ErrorCode = kerr.NotLeaderForPartition.Code
		rp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("node %d is not the acting controller; the controller it knows is %d",
			c.NodeID(), int32(st.Election.Soft.Controller)))
		rp.LeaderID, rp.LeaderEpoch, rp.HighWatermark = int32(st.Election.Soft.Controller), st.Election.Hard.Epoch, st.Commit
		rp.CurrentVoters = append(rp.CurrentVoters, voter(c.NodeID(), st.LastIndex))
	default:
		rp.LeaderID, rp.LeaderEpoch, rp.HighWatermark = c.NodeID(), st.Election.Hard.Epoch, st.Commit
		for _, id := range c.Voters() {
			v := voter(id, -1)
			if id == c.NodeID() {
				v.LogEndOffset = st.LastIndex
			} else if m, ok := st.Match[election.NodeID(id)]; ok {
				v.LogEndOffset = m
			}
			v.LastFetchTimestamp, v.LastCaughtUpTimestamp = followerTimestamps(st, id, c.NodeID())
			rp.CurrentVoters = append(rp.CurrentVoters, v)
		}
		// sort.Slice, not slices.SortFunc: an admin request, and a generic
		// sort of these kmsg structs instantiates pdqsort for each (12 KiB).
		vs := rp.CurrentVoters
		sort.Slice(vs, func(i, j int) bool { return vs[i].ReplicaID < vs[j].ReplicaID })
	}
}

// followerTimestamps are voter id's LastFetchTimestamp and
// LastCaughtUpTimestamp in wall-clock milliseconds, as the acting
// controller self knows them: "now" for itself (Kafka's leader reports
// its own so), -1 for what it has not seen in this epoch. The ages are
// the monotonic clock's, so a step of the wall clock since does not skew
// them.
func followerTimestamps(st quorum.Status, id, self int32) (lastFetch, lastCaughtUp int64) {
	nowMs := st.At.UnixMilli()
	if id == self {
		return nowMs, nowMs
	}
	stamp := func(m map[election.NodeID]time.Time) int64 {
		t, ok := m[election.NodeID(id)]
		if !ok {
			return -1
		}
		return nowMs - max(0, st.At.Sub(t)).Milliseconds()
	}
	return stamp(st.LastFetch), stamp(st.LastCaughtUp)
}

// voterNodes are DescribeQuorum v2's Nodes: each listed voter's
// CONTROLLER listener, from controller.quorum.voters.
func voterNodes(cfg *config.Config, listed map[int32]bool) []kmsg.DescribeQuorumResponseNode {
	name := "CONTROLLER"
	if len(cfg.ControllerListenerNames) > 0 {
		name = strings.ToUpper(cfg.ControllerListenerNames[0])
	}
	voters := cfg.Voters
	if !slices.ContainsFunc(voters, func(v config.Voter) bool { return v.ID == cfg.NodeID }) {
		// A one-voter cluster may leave controller.quorum.voters out:
		// its voter is itself, at its CONTROLLER listener.
		for _, l := range cfg.Listeners {
			if strings.EqualFold(l.Name, name) && l.Host != "" {
				voters = append(slices.Clip(voters), config.Voter{ID: cfg.NodeID, Host: l.Host, Port: l.Port})
				break
			}
		}
	}
	var nodes []kmsg.DescribeQuorumResponseNode
	for _, v := range voters {
		if !listed[v.ID] || v.Port <= 0 || v.Port > 65535 {
			continue
		}
		n := kmsg.NewDescribeQuorumResponseNode()
		n.NodeID = v.ID
		l := kmsg.NewDescribeQuorumResponseNodeListener()
		l.Name, l.Host, l.Port = name, v.Host, uint16(v.Port)
		n.Listeners = append(n.Listeners, l)
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].NodeID < nodes[j].NodeID })
	return nodes
}
