package cluster

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// NoLeader is the leader of a partition that has none.
const NoLeader int32 = -1

// Election says how a change picks the leader.
type Election int8

const (
	// ElectOnline keeps the partition online: the current leader while it
	// may lead, else the first live replica in assignment order that is in
	// the ISR, else (ISR empty) one in the ELR; an unclean election only if
	// the topic enables unclean.leader.election.enable.
	ElectOnline Election = iota
	// ElectPreferred moves leadership to the first replica when it is live
	// and in the ISR (ElectLeaders PREFERRED, auto.leader.rebalance);
	// never unclean.
	ElectPreferred
	// ElectUnclean is ElectOnline with unclean election allowed whatever
	// the topic says: ElectLeaders UNCLEAN, an operator's explicit choice.
	ElectUnclean
)

// ElectionContext is what the rules know besides the partition.
type ElectionContext struct {
	// Live reports whether a broker may lead: registered, unfenced and not
	// shutting down.
	Live func(broker int32) bool
	// Writable reports whether a broker's log dir takes writes (nil: every
	// broker's does). A live broker whose dir does not (below its
	// free-space floor, or failed) is elected only where no live replica
	// that can write may lead: it serves reads and refuses writes, which
	// beats a partition without a leader. It joins no ISR.
	Writable func(broker int32) bool
	// MinISR is the topic's min.insync.replicas.
	MinISR int
	// Unclean is the topic's unclean.leader.election.enable.
	Unclean bool
	// Offsets, when the controller knows them, let an unclean election
	// name the offsets it may lose; nil means unknown.
	Offsets *PartitionOffsets
}

// PartitionOffsets are the offsets last reported for a partition.
type PartitionOffsets struct {
	// HighWatermark is -1 when unknown.
	HighWatermark int64
	LogEndOffsets map[int32]int64
}

// PartitionChange is the outcome of a rule for one partition.
type PartitionChange struct {
	TopicID UUID
	Topic   string
	Before  PartitionImage
	After   PartitionImage
	// DataLoss is set when After's leader was elected uncleanly: the
	// ledger entry to record with the change.
	DataLoss *DataLossRecord
}

// Changed reports whether the rule changed the partition.
func (c PartitionChange) Changed() bool { return c.After.PartitionEpoch != c.Before.PartitionEpoch }

// LeaderChanged reports whether the partition has a new leader (or lost
// it).
func (c PartitionChange) LeaderChanged() bool { return c.After.Leader != c.Before.Leader }

// Records are the metadata records of the change: the partition's new
// state, then its ledger entry if the election was unclean.
func (c PartitionChange) Records() []Record {
	if !c.Changed() {
		return nil
	}
	a := c.After
	recs := []Record{{Kind: KindPartition, Partition: &PartitionRecord{
		TopicID: c.TopicID, Partition: a.Partition, Replicas: a.Replicas, ISR: a.ISR, ELR: a.ELR, LastKnownELR: a.LastKnownELR,
		Leader: a.Leader, LeaderEpoch: a.LeaderEpoch, PartitionEpoch: a.PartitionEpoch,
		AddingReplicas: a.AddingReplicas, RemovingReplicas: a.RemovingReplicas,
	}}}
	if c.DataLoss != nil {
		d := *c.DataLoss
		d.TopicID, d.Topic = c.TopicID, c.Topic
		recs = append(recs, Record{Kind: KindDataLoss, DataLoss: &d})
	}
	return recs
}

// ElectLeader runs an election on p with its ISR unchanged: the leader
// stays while it may lead, unless el is ElectPreferred and the preferred
// replica may lead.
func ElectLeader(p PartitionImage, el Election, ctx ElectionContext) PartitionChange {
	return changePartition(p, p.ISR, nil, el, ctx)
}

// RemoveFromISR takes broker out of p's ISR, as when it is fenced or shuts
// down: below min.insync.replicas it joins the ELR (it held every
// committed record, and the high watermark stops now), and if it led, a
// new leader is elected. ctx.Live must already report broker as not
// live.
func RemoveFromISR(p PartitionImage, broker int32, ctx ElectionContext) PartitionChange {
	if !slices.Contains(p.ISR, broker) && p.Leader != broker {
		return ElectLeader(p, ElectOnline, ctx)
	}
	return changePartition(p, without(p.ISR, broker), nil, ElectOnline, ctx)
}

// UncleanShutdown applies the registration of a broker that did not shut
// down cleanly: its log may lack records it had acknowledged, so it leaves
// the ISR and the ELR (KIP-966) and can lead again only after catching up
// into the ISR, or by an unclean election.
func UncleanShutdown(p PartitionImage, broker int32, ctx ElectionContext) PartitionChange {
	return changePartition(p, without(p.ISR, broker), []int32{broker}, ElectOnline, ctx)
}

// AlterISR applies an ISR change the leader asks for (Kafka's
// AlterPartition), with Kafka's error codes: the request must come from
// the current leader with the current leader and partition epochs; the new
// ISR holds the leader, only replicas, no duplicates, and adds no replica
// that may not lead (fenced or shutting down: INELIGIBLE_REPLICA).
func AlterISR(p PartitionImage, leader, leaderEpoch, partitionEpoch int32, isr []int32, ctx ElectionContext) (PartitionChange, error) {
	switch {
	case leader != p.Leader:
		return PartitionChange{}, fmt.Errorf("%w: broker %d is not the leader of partition %d (%d is)", kerr.NotLeaderForPartition, leader, p.Partition, p.Leader)
	case leaderEpoch != p.LeaderEpoch:
		return PartitionChange{}, fmt.Errorf("%w: leader epoch %d, the partition is at %d", kerr.FencedLeaderEpoch, leaderEpoch, p.LeaderEpoch)
	case partitionEpoch != p.PartitionEpoch:
		return PartitionChange{}, fmt.Errorf("%w: partition epoch %d, the partition is at %d", kerr.InvalidUpdateVersion, partitionEpoch, p.PartitionEpoch)
	case !slices.Contains(isr, leader):
		return PartitionChange{}, fmt.Errorf("%w: the new ISR %v leaves out the leader %d", kerr.InvalidRequest, isr, leader)
	}
	for i, r := range isr {
		if !slices.Contains(p.Replicas, r) || slices.Contains(isr[:i], r) {
			return PartitionChange{}, fmt.Errorf("%w: the new ISR %v is not a set of the replicas %v", kerr.InvalidRequest, isr, p.Replicas)
		}
		if !slices.Contains(p.ISR, r) && !ctx.Live(r) {
			return PartitionChange{}, fmt.Errorf("%w: broker %d is fenced or shutting down and cannot join the ISR", kerr.IneligibleReplica, r)
		}
		if !slices.Contains(p.ISR, r) && !ctx.writable(r) {
			return PartitionChange{}, fmt.Errorf("%w: broker %d reports that its log dir takes no writes and cannot join the ISR", kerr.IneligibleReplica, r)
		}
	}
	return changePartition(p, inReplicaOrder(p.Replicas, isr), nil, ElectOnline, ctx), nil
}

// changePartition is the one place the rules meet, in the order of
// Kafka's PartitionChangeBuilder: maintain the ELR for the target ISR,
// elect, then the last known leader and the epochs.
func changePartition(p PartitionImage, isr, uncleanShutdown []int32, el Election, ctx ElectionContext) PartitionChange {
	next := p
	next.ISR = slices.Clone(isr)
	next.ELR = slices.Clone(p.ELR)
	next.LastKnownELR = slices.Clone(p.LastKnownELR)

	// ELR (KIP-966). At or above min.insync.replicas the high watermark
	// moves with the ISR alone, so nothing outside it is eligible. Below,
	// the high watermark stands still, so every replica that was in the
	// ISR (or already in the ELR) holds every committed record and stays
	// eligible, unless it came back from an unclean shutdown.
	if len(next.ISR) >= ctx.MinISR {
		next.ELR = nil
	} else {
		var elr []int32
		for _, r := range p.Replicas {
			was := slices.Contains(p.ISR, r) || slices.Contains(p.ELR, r)
			if was && !slices.Contains(next.ISR, r) && !slices.Contains(uncleanShutdown, r) {
				elr = append(elr, r)
			}
		}
		next.ELR = elr
	}

	leader, reason := electLeader(p, next, el, ctx)
	var loss *DataLossRecord
	if leader != p.Leader && leader != NoLeader {
		switch {
		case reason != "":
			// Unclean: the new leader's log is the truth from now on.
			loss = dataLoss(p, next, leader, reason, ctx.Offsets)
			next.ISR, next.ELR, next.LastKnownELR = []int32{leader}, nil, nil
		case len(next.ISR) == 0 && slices.Contains(next.ELR, leader):
			next.ISR, next.ELR = []int32{leader}, without(next.ELR, leader)
		}
	}
	next.Leader = leader

	// The last known leader is kept from the moment the ISR becomes empty
	// until the partition has a leader again.
	switch {
	case next.Leader != NoLeader:
		next.LastKnownELR = nil
	case len(next.ISR) == 0 && len(p.ISR) > 0 && p.Leader != NoLeader:
		next.LastKnownELR = []int32{p.Leader}
	}

	if next.Leader != p.Leader {
		next.LeaderEpoch++
	}
	if next.Leader != p.Leader || !slices.Equal(next.ISR, p.ISR) || !slices.Equal(next.ELR, p.ELR) || !slices.Equal(next.LastKnownELR, p.LastKnownELR) {
		next.PartitionEpoch++
	} else {
		next = p // keep the image's slices when nothing changed
	}
	return PartitionChange{Before: p, After: next, DataLoss: loss}
}

// writable is ctx.Writable, true when unset.
func (ctx ElectionContext) writable(r int32) bool { return ctx.Writable == nil || ctx.Writable(r) }

// electLeader picks the leader of next (its ISR and ELR already set) and,
// for an unclean election, its reason.
func electLeader(p, next PartitionImage, el Election, ctx ElectionContext) (int32, string) {
	// Clean: a live ISR member, or with the ISR empty a live ELR member.
	valid := func(r int32) bool {
		return r != NoLeader && ctx.Live(r) && (slices.Contains(next.ISR, r) || len(next.ISR) == 0 && slices.Contains(next.ELR, r))
	}
	// A preferred election never moves leadership to a replica whose log
	// dir takes no writes; a new leader is one that can write if any is
	// valid. The current leader stays while valid: moving it off a dir
	// that stopped taking writes is LogDirOfflineChanges' decision.
	if el == ElectPreferred && len(next.Replicas) > 0 && valid(next.Replicas[0]) && ctx.writable(next.Replicas[0]) {
		return next.Replicas[0], ""
	}
	if valid(p.Leader) {
		return p.Leader, ""
	}
	for _, r := range next.Replicas {
		if valid(r) && ctx.writable(r) {
			return r, ""
		}
	}
	for _, r := range next.Replicas {
		if valid(r) {
			return r, ""
		}
	}
	if el == ElectPreferred || el == ElectOnline && !ctx.Unclean {
		return NoLeader, ""
	}
	// Unclean. The last known leader first: with the ISR and ELR empty it
	// is the replica likely to hold the most. Kafka elects it without
	// unclean.leader.election.enable (its "balanced" recovery); wren does
	// not, since it is in this state only after an unclean shutdown, and
	// may lack acknowledged records.
	if len(next.ISR) == 0 && len(next.ELR) == 0 && len(next.LastKnownELR) == 1 {
		if r := next.LastKnownELR[0]; slices.Contains(next.Replicas, r) && ctx.Live(r) {
			return r, "last_known_leader"
		}
	}
	for _, r := range next.Replicas {
		if ctx.Live(r) {
			return r, "unclean"
		}
	}
	return NoLeader, ""
}

// dataLoss describes what an unclean election of leader may lose: from
// its log end offset up to the most any replica that could not lead was
// known to hold.
func dataLoss(p, next PartitionImage, leader int32, reason string, o *PartitionOffsets) *DataLossRecord {
	prev := p.Leader
	if prev == NoLeader && len(p.LastKnownELR) == 1 {
		prev = p.LastKnownELR[0]
	}
	d := &DataLossRecord{
		Partition: p.Partition, LeaderEpoch: p.LeaderEpoch + 1, PreviousLeader: prev, NewLeader: leader,
		PreviousISR: slices.Clone(p.ISR), PreviousELR: slices.Clone(p.ELR), Reason: reason, FromOffset: -1, ToOffset: -1,
	}
	if d.PreviousISR == nil {
		d.PreviousISR = []int32{}
	}
	if o == nil {
		return d
	}
	if leo, ok := o.LogEndOffsets[leader]; ok {
		d.FromOffset = leo
	}
	d.ToOffset = o.HighWatermark
	for _, r := range p.Replicas {
		if leo, ok := o.LogEndOffsets[r]; ok && r != leader && leo > d.ToOffset {
			d.ToOffset = leo
		}
	}
	return d
}

func without(s []int32, x int32) []int32 {
	out := make([]int32, 0, len(s))
	for _, v := range s {
		if v != x {
			out = append(out, v)
		}
	}
	return out
}

// inReplicaOrder returns the members of set in the order of replicas, so
// equal ISRs compare equal.
func inReplicaOrder(replicas, set []int32) []int32 {
	out := make([]int32, 0, len(set))
	for _, r := range replicas {
		if slices.Contains(set, r) {
			out = append(out, r)
		}
	}
	return out
}
