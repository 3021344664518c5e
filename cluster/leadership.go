package cluster

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
)

// LeaderConfig are the broker-wide settings the leader rules fall back to
// when neither the topic nor the cluster-wide dynamic config sets them.
type LeaderConfig struct {
	// MinInsyncReplicas is min.insync.replicas (below 1 reads as 1).
	MinInsyncReplicas int
	// UncleanLeaderElectionEnable is unclean.leader.election.enable.
	UncleanLeaderElectionEnable bool
	// Offsets, if set, returns what the controller last heard of a
	// partition's offsets, for the data-loss ledger; nil: unknown.
	Offsets func(topic UUID, partition int32) *PartitionOffsets
}

// topicSetting returns a topic config: the topic's override, else the
// cluster-wide dynamic default.
func (im *Image) topicSetting(t *TopicImage, key string) (string, bool) {
	if v, ok := t.Configs[key]; ok {
		return v, true
	}
	v, ok := im.brokerConfigs[""][key]
	return v, ok
}

// ElectionContext returns the context of the rules for a topic's
// partitions: live brokers are the registered unfenced ones, with the
// overrides of live (a broker about to be fenced or unfenced in the same
// change); min.insync.replicas and unclean.leader.election.enable come
// from the topic, the cluster-wide dynamic configs, then cfg.
func (im *Image) ElectionContext(t *TopicImage, partition int32, cfg LeaderConfig, live map[int32]bool) ElectionContext {
	ctx := ElectionContext{MinISR: max(cfg.MinInsyncReplicas, 1), Unclean: cfg.UncleanLeaderElectionEnable}
	if v, ok := im.topicSetting(t, "min.insync.replicas"); ok {
		if n, err := strconv.Atoi(v); err == nil && n >= 1 {
			ctx.MinISR = n
		}
	}
	if v, ok := im.topicSetting(t, "unclean.leader.election.enable"); ok {
		if b, err := strconv.ParseBool(v); err == nil {
			ctx.Unclean = b
		}
	}
	ctx.Live = func(b int32) bool {
		if l, ok := live[b]; ok {
			return l
		}
		return im.BrokerUnfenced(b)
	}
	ctx.Writable = im.BrokerWritable
	if cfg.Offsets != nil {
		ctx.Offsets = cfg.Offsets(t.ID, partition)
	}
	return ctx
}

// eachPartition runs rule on every partition of every topic (in name
// order) and returns the changes that changed something.
func (im *Image) eachPartition(cfg LeaderConfig, live map[int32]bool, rule func(p PartitionImage, ctx ElectionContext) PartitionChange) []PartitionChange {
	var out []PartitionChange
	for _, name := range im.TopicNames() {
		t := im.topics[name]
		for _, p := range t.Partitions {
			c := rule(p, im.ElectionContext(t, p.Partition, cfg, live))
			if c.Changed() {
				c.TopicID, c.Topic = t.ID, t.Name
				out = append(out, c)
			}
		}
	}
	return out
}

// BrokerFencedChanges are the partition changes when broker is fenced (its
// session expired, or it crashed): it leaves every ISR, and partitions it
// led elect a new leader.
func BrokerFencedChanges(im *Image, broker int32, cfg LeaderConfig) []PartitionChange {
	return im.eachPartition(cfg, map[int32]bool{broker: false}, func(p PartitionImage, ctx ElectionContext) PartitionChange {
		if p.Leader != broker && !slices.Contains(p.ISR, broker) {
			return PartitionChange{Before: p, After: p}
		}
		return RemoveFromISR(p, broker, ctx)
	})
}

// ControlledShutdownChanges move leadership off broker before it exits
// (Kafka's controlled shutdown): it leaves every ISR, so partitions it led
// get a new leader from the ISR (or the ELR) while it still serves, and
// the next registration finds it a clean ELR member wherever the ISR
// shrank below min.insync.replicas.
func ControlledShutdownChanges(im *Image, broker int32, cfg LeaderConfig) []PartitionChange {
	return BrokerFencedChanges(im, broker, cfg)
}

// LogDirOfflineChanges move a broker whose log dir stopped taking writes
// (below its free-space floor, or failed) out of the way, as a controlled
// shutdown does, while it keeps serving: it leaves the ISR of every
// partition it follows (it cannot append what the leader sends; below
// min.insync.replicas it joins the ELR, as it holds every committed
// record), and a partition it leads gets a new leader from the ISR members
// that are live and can write. Where none can, it keeps the partition and
// its ISR: it serves reads and refuses writes, which beats a partition
// without a leader, and a later round moves it once one can
// (LogDirMovable). im must already show the broker's log dir offline (the
// record goes in the same entry).
func LogDirOfflineChanges(im *Image, broker int32, cfg LeaderConfig) []PartitionChange {
	return im.eachPartition(cfg, map[int32]bool{broker: false}, func(p PartitionImage, ctx ElectionContext) PartitionChange {
		unchanged := PartitionChange{Before: p, After: p}
		if !slices.Contains(p.ISR, broker) {
			return unchanged
		}
		if p.Leader == broker && !slices.ContainsFunc(p.ISR, func(r int32) bool { return r != broker && ctx.Live(r) && ctx.writable(r) }) {
			return unchanged
		}
		return RemoveFromISR(p, broker, ctx)
	})
}

// LogDirRecords are what setting broker's log dir to d commits: its
// BrokerLogDirRecord when the state changes (Dir, Offline or Reason; a
// new Detail alone is not news), then the partition changes it brings
// (LogDirOfflineChanges while offline, LogDirOnlineChanges when back),
// computed against the image with the record applied. Offline again with
// nothing new recorded moves what LogDirMovable finds.
func LogDirRecords(im *Image, broker int32, d BrokerLogDir, cfg LeaderConfig) ([]Record, []PartitionChange, error) {
	b, ok := im.Broker(broker)
	if !ok {
		return nil, nil, unknownBroker(broker)
	}
	if !d.Offline {
		d = BrokerLogDir{Dir: d.Dir}
	}
	rec := Record{Kind: KindBrokerLogDir, BrokerLogDir: &BrokerLogDirRecord{BrokerID: broker, Dir: d.Dir, Offline: d.Offline, Reason: d.Reason, Detail: d.Detail}}
	var recs []Record
	next := im
	if b.LogDir.Dir != d.Dir || b.LogDir.Offline != d.Offline || b.LogDir.Reason != d.Reason {
		var err error
		if next, err = im.apply(im.Offset+1, rec); err != nil {
			return nil, nil, err
		}
		recs = append(recs, rec)
	}
	if d.Offline {
		return recs, LogDirOfflineChanges(next, broker, cfg), nil
	}
	if len(recs) == 0 {
		return nil, nil, nil
	}
	return recs, LogDirOnlineChanges(next, broker, cfg), nil
}

// LogDirMovable reports whether LogDirOfflineChanges would change
// anything for broker: it is in the ISR of a partition it does not lead,
// or leads one where a live ISR member can write. The acting controller
// asks every round while the broker's log dir is offline, since a
// follower that can write may join the ISR of a partition it kept.
func LogDirMovable(im *Image, broker int32) bool {
	for _, name := range im.TopicNames() {
		for _, p := range im.topics[name].Partitions {
			if !slices.Contains(p.ISR, broker) {
				continue
			}
			if p.Leader != broker {
				return true
			}
			for _, r := range p.ISR {
				if r != broker && im.BrokerUnfenced(r) && im.BrokerWritable(r) {
					return true
				}
			}
		}
	}
	return false
}

// LogDirOnlineChanges elect leaders, now that broker's log dir takes
// writes again, for the partitions without one that it could lead. It
// rejoins ISRs as any follower does, once caught up (the leader's
// AlterISR), and takes back its preferred leaderships by the preferred
// leader rebalance. im must already show its log dir online.
func LogDirOnlineChanges(im *Image, broker int32, cfg LeaderConfig) []PartitionChange {
	return BrokerUnfencedChanges(im, broker, cfg)
}

// BrokerUnfencedChanges elect leaders, now that broker may lead, for the
// partitions without one that it could lead.
func BrokerUnfencedChanges(im *Image, broker int32, cfg LeaderConfig) []PartitionChange {
	return im.eachPartition(cfg, map[int32]bool{broker: true}, func(p PartitionImage, ctx ElectionContext) PartitionChange {
		if p.Leader != NoLeader || !slices.Contains(p.Replicas, broker) {
			return PartitionChange{Before: p, After: p}
		}
		return ElectLeader(p, ElectOnline, ctx)
	})
}

// LeaderlessElections elect, by the online rules (an unclean election
// only where the topic, the cluster-wide config or cfg allows it), a
// leader for every partition that has none.
func LeaderlessElections(im *Image, cfg LeaderConfig) []PartitionChange {
	return im.eachPartition(cfg, nil, func(p PartitionImage, ctx ElectionContext) PartitionChange {
		if p.Leader != NoLeader {
			return PartitionChange{Before: p, After: p}
		}
		return ElectLeader(p, ElectOnline, ctx)
	})
}

// UncleanShutdownChanges apply the registration of a broker that did not
// shut down cleanly (it may have lost records it acknowledged): it leaves
// every ISR and ELR. It is not live until unfenced.
func UncleanShutdownChanges(im *Image, broker int32, cfg LeaderConfig) []PartitionChange {
	return im.eachPartition(cfg, map[int32]bool{broker: false}, func(p PartitionImage, ctx ElectionContext) PartitionChange {
		if p.Leader != broker && !slices.Contains(p.ISR, broker) && !slices.Contains(p.ELR, broker) {
			return PartitionChange{Before: p, After: p}
		}
		return UncleanShutdown(p, broker, ctx)
	})
}

// checkPartition is UNKNOWN_TOPIC_OR_PARTITION, saying which of the two
// is missing, unless the image has the partition.
func (im *Image) checkPartition(topic string, partition int32) error {
	t := im.Topic(topic)
	switch {
	case t == nil:
		return fmt.Errorf("%w: topic %q does not exist", kerr.UnknownTopicOrPartition, topic)
	case partition < 0 || int(partition) >= len(t.Partitions):
		return fmt.Errorf("%w: topic %q has no partition %d (it has %d, from 0)", kerr.UnknownTopicOrPartition, topic, partition, len(t.Partitions))
	}
	return nil
}

// ElectLeadersChange is one partition of ElectLeaders, with Kafka's
// errors: PREFERRED gets ELECTION_NOT_NEEDED when the preferred replica
// leads and PREFERRED_LEADER_NOT_AVAILABLE when it may not; UNCLEAN gets
// ELECTION_NOT_NEEDED when the partition has a leader and
// ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is live.
func ElectLeadersChange(im *Image, topic string, partition int32, el Election, cfg LeaderConfig) (PartitionChange, error) {
	if err := im.checkPartition(topic, partition); err != nil {
		return PartitionChange{}, err
	}
	t := im.Topic(topic)
	p := t.Partitions[partition]
	switch el {
	case ElectPreferred:
		if p.Leader == p.Replicas[0] {
			return PartitionChange{}, fmt.Errorf("%w: the preferred replica %d leads %s-%d", kerr.ElectionNotNeeded, p.Leader, topic, partition)
		}
	case ElectUnclean:
		if p.Leader != NoLeader {
			return PartitionChange{}, fmt.Errorf("%w: %s-%d has leader %d", kerr.ElectionNotNeeded, topic, partition, p.Leader)
		}
	default:
		return PartitionChange{}, fmt.Errorf("%w: election type %d", kerr.InvalidRequest, el)
	}
	c := ElectLeader(p, el, im.ElectionContext(t, partition, cfg, nil))
	c.TopicID, c.Topic = t.ID, t.Name
	switch {
	case el == ElectPreferred && c.After.Leader != p.Replicas[0] && !im.BrokerWritable(p.Replicas[0]):
		return PartitionChange{}, fmt.Errorf("%w: the log dir of the preferred replica %d of %s-%d takes no writes", kerr.PreferredLeaderNotAvailable, p.Replicas[0], topic, partition)
	case el == ElectPreferred && c.After.Leader != p.Replicas[0]:
		return PartitionChange{}, fmt.Errorf("%w: the preferred replica %d of %s-%d is not live or not in the ISR %v", kerr.PreferredLeaderNotAvailable, p.Replicas[0], topic, partition, p.ISR)
	case c.After.Leader == NoLeader:
		return PartitionChange{}, fmt.Errorf("%w: no replica of %s-%d (%v) is live", kerr.EligibleLeadersNotAvailable, topic, partition, p.Replicas)
	}
	return c, nil
}

// BrokerLeaderImbalance is one broker's share of Kafka's leader
// imbalance: of the partitions whose preferred replica (the first) it is,
// how many it does not lead.
type BrokerLeaderImbalance struct {
	Broker     int32
	Preferred  int
	NotLeading int
}

// Percentage is NotLeading as a percentage of Preferred (0 with none).
func (b BrokerLeaderImbalance) Percentage() float64 {
	if b.Preferred == 0 {
		return 0
	}
	return 100 * float64(b.NotLeading) / float64(b.Preferred)
}

// LeaderImbalance is every preferred broker's imbalance, by broker id.
func LeaderImbalance(im *Image) map[int32]BrokerLeaderImbalance {
	out := map[int32]BrokerLeaderImbalance{}
	for _, name := range im.TopicNames() {
		for _, p := range im.topics[name].Partitions {
			if len(p.Replicas) == 0 {
				continue
			}
			b := out[p.Replicas[0]]
			b.Broker = p.Replicas[0]
			b.Preferred++
			if p.Leader != p.Replicas[0] {
				b.NotLeading++
			}
			out[b.Broker] = b
		}
	}
	return out
}

// RebalanceLeadersChanges are auto.leader.rebalance's elections, with
// Kafka's rule: a broker whose imbalance is above percentPerBroker
// (leader.imbalance.per.broker.percentage) gets back the leadership of
// each partition it prefers where it is live and in the ISR. Brokers at
// or below the threshold are left alone, so a cluster does not move
// leaders for one partition out of place. Partitions being reassigned are
// skipped: the reassignment decides their leader.
func RebalanceLeadersChanges(im *Image, percentPerBroker int, cfg LeaderConfig) []PartitionChange {
	imbalance := LeaderImbalance(im)
	return im.eachPartition(cfg, nil, func(p PartitionImage, ctx ElectionContext) PartitionChange {
		unchanged := PartitionChange{Before: p, After: p}
		if len(p.Replicas) == 0 || p.Leader == p.Replicas[0] || p.Reassigning() {
			return unchanged
		}
		if imbalance[p.Replicas[0]].Percentage() <= float64(percentPerBroker) {
			return unchanged
		}
		c := ElectLeader(p, ElectPreferred, ctx)
		if c.After.Leader != p.Replicas[0] {
			return unchanged
		}
		return c
	})
}
