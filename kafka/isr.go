package kafka

import (
	"fmt"

	"github.com/wren-broker/wren/cluster"
)

// Until partition replication lands, the only replica that holds a
// partition's data is its leader: that is the ISR reported (Metadata) and
// the ISR acks=all counts against min.insync.replicas. Reporting the
// assigned replicas as in sync, or acknowledging acks=all with one copy
// where the topic asks for more, would be a durability promise broken
// silently.

// trueISR is the replicas that really hold the partition's data.
func trueISR(p cluster.PartitionImage) []int32 {
	if p.Leader < 0 {
		return []int32{}
	}
	return []int32{p.Leader}
}

// notEnoughReplicas says why an acks=all produce to topic cannot be
// acknowledged, or "" when it can: the topic's min.insync.replicas (its
// override, the cluster-wide dynamic default, then the broker default)
// above the true ISR's size of one.
func (s *Server) notEnoughReplicas(topic string) string {
	n := s.node()
	im := n.Controller.Image()
	t := im.Topic(topic)
	if t == nil {
		return ""
	}
	minISR := im.ElectionContext(t, 0, cluster.LeaderConfig{MinInsyncReplicas: int(n.Config.TopicDefaults.MinInsyncReplicas)}, nil).MinISR
	if minISR <= 1 {
		return ""
	}
	return fmt.Sprintf("min.insync.replicas is %d for topic %s, and only the leader holds its data (replication across nodes is not running yet)", minISR, topic)
}
