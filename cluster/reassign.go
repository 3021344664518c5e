package cluster

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Partition reassignment (Kafka's AlterPartitionReassignments, KIP-455),
// as pure rules on one partition; the controller commits what they return.
//
// A reassignment to target starts by adding the target's new replicas:
// Replicas becomes the target followed by the replicas being removed,
// with AddingReplicas and RemovingReplicas recorded (Kafka's
// PartitionRecord adding_replicas / removing_replicas). The new replicas
// create their logs and fetch from the leader like any follower, and the
// leader adds them to the ISR once caught up (AlterISR). The ISR change
// that brings the last of them in completes the reassignment in the same
// metadata entry: Replicas becomes the target, the ISR keeps only target
// replicas, and a leader being removed hands over to a target replica in
// the ISR (the first in target order, so the new preferred replica when it
// is in sync). Brokers that no longer hold a replica delete its log.
// Cancelling reverts to the original replicas the same way, in the order
// they have during the reassignment, as Kafka's revert (the original order
// is not recorded, so the preferred replica may change).

// StartReassignment begins moving p to target (nil target: cancel an
// ongoing reassignment). registered says which brokers may hold a
// replica. A target equal to the replicas is a no-op, a reordering of
// them takes effect at once, and a reassignment whose new replicas are
// already in sync completes at once.
func StartReassignment(p PartitionImage, target []int32, registered func(int32) bool, ctx ElectionContext) (PartitionChange, error) {
	original := p.Replicas
	if p.Reassigning() {
		original = minus(p.Replicas, p.AddingReplicas)
	}
	if target == nil {
		if !p.Reassigning() {
			return PartitionChange{}, fmt.Errorf("%w: partition %d has no reassignment to cancel", kerr.NoReassignmentInProgress, p.Partition)
		}
		// Back to the original replicas: a replica being added is the one
		// to drop now. The ones kept were never removed.
		return finishReassignment(p, original, ctx, true), nil
	}
	if err := checkTarget(target, registered); err != nil {
		return PartitionChange{}, err
	}
	if !p.Reassigning() && slices.Equal(target, p.Replicas) {
		return PartitionChange{Before: p, After: p}, nil
	}
	next := p
	next.AddingReplicas = minus(target, original)
	next.RemovingReplicas = minus(original, target)
	next.Replicas = append(slices.Clone(target), next.RemovingReplicas...)
	// A replica no longer assigned (one being added by the reassignment
	// this one replaces) leaves the ISR and the ELR.
	next.ISR = inReplicaOrder(next.Replicas, p.ISR)
	next.ELR = inReplicaOrder(next.Replicas, p.ELR)
	next.PartitionEpoch++
	ch := PartitionChange{Before: p, After: next}
	if next.Leader != NoLeader && !slices.Contains(next.Replicas, next.Leader) {
		// Only a replica being added by the replaced reassignment could
		// lead and now be gone; elect among what is left.
		e := changePartition(next, next.ISR, nil, ElectOnline, ctx)
		e.Before = p
		ch = e
	}
	if c, ok := MaybeCompleteReassignment(ch.After, ctx); ok {
		c.Before = p
		return c, nil
	}
	return ch, nil
}

// MaybeCompleteReassignment completes p's reassignment when every replica
// being added is in the ISR and the ISR holds a target replica; ok is
// false when it cannot complete yet.
func MaybeCompleteReassignment(p PartitionImage, ctx ElectionContext) (PartitionChange, bool) {
	if !p.Reassigning() {
		return PartitionChange{}, false
	}
	target := p.TargetReplicas()
	for _, r := range p.AddingReplicas {
		if !slices.Contains(p.ISR, r) {
			return PartitionChange{}, false
		}
	}
	if len(inReplicaOrder(target, p.ISR)) == 0 {
		return PartitionChange{}, false
	}
	return finishReassignment(p, target, ctx, false), true
}

// finishReassignment sets p's replicas to final and clears the
// reassignment: the ISR and ELR keep final's members, and a leader not in
// final hands over to the first final replica in the ISR. cancel orders
// the leader election as an online one, since the original leader stays.
func finishReassignment(p PartitionImage, final []int32, ctx ElectionContext, cancel bool) PartitionChange {
	next := p
	next.Replicas = slices.Clone(final)
	next.AddingReplicas, next.RemovingReplicas = nil, nil
	next.ISR = inReplicaOrder(final, p.ISR)
	next.ELR = inReplicaOrder(final, p.ELR)
	next.LastKnownELR = inReplicaOrder(final, p.LastKnownELR)
	if !slices.Contains(final, p.Leader) {
		next.Leader = NoLeader
	}
	el := ElectOnline
	if !cancel && next.Leader == NoLeader {
		el = ElectPreferred
	}
	ch := changePartition(next, next.ISR, nil, el, ctx)
	if ch.After.Leader == NoLeader && ctx.Unclean {
		ch = changePartition(next, next.ISR, nil, ElectUnclean, ctx)
	}
	after := ch.After
	// changePartition measured its epochs against next; the leader epoch
	// bumps against p, and the partition epoch once for the whole change.
	after.LeaderEpoch = p.LeaderEpoch
	if after.Leader != p.Leader {
		after.LeaderEpoch++
	}
	after.PartitionEpoch = p.PartitionEpoch + 1
	if after.Leader != NoLeader {
		after.LastKnownELR = nil
	}
	return PartitionChange{Before: p, After: after, DataLoss: ch.DataLoss}
}

// UnderReplicated reports whether p's ISR is smaller than its replica
// set. During a reassignment the replicas being added do not count, as
// Kafka's Partition.isUnderReplicated and kafka-topics have it: the
// replication factor is then the original replicas' (Replicas less
// AddingReplicas), so a move onto new brokers is not reported while the
// replicas it started from are all in sync.
func (p PartitionImage) UnderReplicated() bool {
	return len(p.ISR) < len(p.Replicas)-len(p.AddingReplicas)
}

// checkTarget vets a reassignment's target with Kafka's
// INVALID_REPLICA_ASSIGNMENT: at least one replica, no duplicates, only
// registered brokers.
func checkTarget(target []int32, registered func(int32) bool) error {
	if len(target) == 0 {
		return fmt.Errorf("%w: the target replica list is empty", kerr.InvalidReplicaAssignment)
	}
	for i, r := range target {
		if slices.Contains(target[:i], r) {
			return fmt.Errorf("%w: broker %d is named twice in %v", kerr.InvalidReplicaAssignment, r, target)
		}
		if !registered(r) {
			return fmt.Errorf("%w: broker %d in %v is not registered", kerr.InvalidReplicaAssignment, r, target)
		}
	}
	return nil
}

// minus is a without the members of b, in a's order.
func minus(a, b []int32) []int32 {
	var out []int32
	for _, v := range a {
		if !slices.Contains(b, v) {
			out = append(out, v)
		}
	}
	return out
}
