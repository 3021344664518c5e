package assign

import (
	"fmt"
	"slices"
)

// Sticky is Kafka's StickyAssignor (AbstractStickyAssignor): a balanced
// assignment that keeps as many current ownerships as balance allows.
//
//   - Claims: a member's Owned partitions are its claims, made in its
//     Generation. For each partition the claim of the highest generation
//     wins; a tie at that generation between two members means one of them
//     is a zombie we cannot tell apart, so neither keeps the partition
//     (Kafka's "multiple previous owners"). A winning claim on a topic the
//     member no longer subscribes to, or on a partition that no longer
//     exists, is dropped.
//   - Identical subscriptions (after dropping topics missing from the
//     metadata): every member gets ⌊N/C⌋ or ⌈N/C⌉ partitions, and the number
//     of partitions taken away from their valid owner is the least that
//     balance allows (Kafka's constrainedAssign).
//   - Different subscriptions: valid claims are kept, free partitions go,
//     the most constrained topics first, to the subscribed member with the
//     fewest partitions, then partitions move one at a time (free ones
//     first) from a member to a subscribed member with at least two fewer,
//     until no such move exists (Kafka's generalAssign balance loop).
//
// Sticky is the eager protocol: the caller revokes everything before the
// next generation, so a partition may change owner within one rebalance.
func Sticky(members []Member, topics []Topic) (GroupAssignment, error) {
	g, err := newGroup(members, topics)
	if err != nil {
		return nil, err
	}
	owner, _ := g.sticky(true)
	return g.result(owner), nil
}

// Uniform is Kafka's server-side UniformAssignor of KIP-848 ("uniform" in
// group.consumer.assignors): the same balanced, sticky assignment as
// Sticky, computed from each member's current assignment, which the
// coordinator keeps itself. Generation is ignored: the coordinator's
// current assignment has no stale claims, and two members claiming one
// partition is a conflict that frees it, as in Sticky.
func Uniform(members []Member, topics []Topic) (GroupAssignment, error) {
	g, err := newGroup(members, topics)
	if err != nil {
		return nil, err
	}
	owner, _ := g.sticky(false)
	return g.result(owner), nil
}

// sticky computes the sticky assignment. It returns owner (partition index
// → member index or -1) and claimed: claimed[p] is the member whose claim
// on p won (the partition's valid current owner) or -1.
func (g *group) sticky(useGenerations bool) (owner, claimed []int) {
	claimed = g.resolveClaims(useGenerations)
	owner = slices.Clone(claimed)
	if len(g.members) == 0 {
		return owner, claimed
	}
	homogeneous := true
	for _, s := range g.subs[1:] {
		if !slices.Equal(s, g.subs[0]) {
			homogeneous = false
			break
		}
	}
	if homogeneous {
		g.constrainedAssign(owner)
	} else {
		g.generalAssign(owner, claimed)
	}
	return owner, claimed
}

// resolveClaims applies the claim rules of Sticky and returns, per
// partition, the member that keeps it, or -1.
func (g *group) resolveClaims(useGenerations bool) []int {
	n := g.numPartitions()
	owner := g.newOwner()
	const (
		unclaimed = iota
		held
		conflicted
	)
	state := make([]uint8, n)
	best := make([]int32, n)
	for mi, m := range g.members {
		gen := int32(0)
		if useGenerations {
			gen = m.Generation
		}
		for _, tp := range m.Owned {
			p, ok := g.index(tp)
			if !ok {
				continue
			}
			switch {
			case state[p] == unclaimed || gen > best[p]:
				owner[p], best[p], state[p] = mi, gen, held
			case gen == best[p] && owner[p] != mi:
				owner[p], state[p] = -1, conflicted
			}
		}
	}
	// Drop the winning claims the winner cannot keep only now: a stale
	// claim must not win a partition because the newer owner unsubscribed,
	// since that owner still holds it until it revokes.
	for p, m := range owner {
		if m >= 0 && !g.subscribed(m, g.topicOf(p)) {
			owner[p] = -1
		}
	}
	return owner
}

// constrainedAssign is the identical-subscriptions path. Each member keeps
// its valid claims up to its quota; the r = N mod C members allowed the
// larger quota are the first (in member order) that claim more than the
// smaller one. That keeps Σ min(owned, ⌊N/C⌋) + min(r, #members owning
// more) partitions in place, which no balanced assignment can beat.
func (g *group) constrainedAssign(owner []int) {
	topics := g.subs[0]
	n := 0
	for _, t := range topics {
		n += int(g.topics[t].Partitions)
	}
	c := len(g.members)
	minQuota := n / c
	slots := n % c // members that may still take minQuota+1

	owned := make([][]int, c)
	for _, t := range topics {
		for p := g.base[t]; p < g.base[t+1]; p++ {
			if m := owner[p]; m >= 0 {
				owned[m] = append(owned[m], p)
			}
		}
	}
	counts := make([]int, c)
	for m := range owned {
		quota := minQuota
		if len(owned[m]) > minQuota && slots > 0 {
			quota++
			slots--
		}
		for _, p := range owned[m][min(quota, len(owned[m])):] {
			owner[p] = -1
		}
		counts[m] = min(quota, len(owned[m]))
	}

	var free []int
	for _, t := range topics {
		for p := g.base[t]; p < g.base[t+1]; p++ {
			if owner[p] < 0 {
				free = append(free, p)
			}
		}
	}
	next := 0
	for m := range counts {
		for ; counts[m] < minQuota; counts[m]++ {
			owner[free[next]] = m
			next++
		}
	}
	for m := 0; m < c && slots > 0; m++ {
		if counts[m] == minQuota {
			owner[free[next]] = m
			next++
			counts[m]++
			slots--
		}
	}
	if next != len(free) || slots != 0 {
		panic(fmt.Sprintf("assign: constrained assignment left %d of %d free partitions and %d extra slots",
			len(free)-next, len(free), slots))
	}
}

// generalAssign is the different-subscriptions path.
func (g *group) generalAssign(owner, claimed []int) {
	counts := make([]int, len(g.members))
	for _, m := range owner {
		if m >= 0 {
			counts[m]++
		}
	}
	// The topics with the fewest subscribers have the fewest places to go:
	// place their partitions first, as Kafka's sortPartitions does.
	order := make([]int, 0, len(g.topics))
	for t := range g.topics {
		if len(g.subscribers[t]) > 0 {
			order = append(order, t)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return len(g.subscribers[a]) - len(g.subscribers[b])
	})
	for _, t := range order {
		for p := g.base[t]; p < g.base[t+1]; p++ {
			if owner[p] < 0 {
				m := leastLoaded(g.subscribers[t], counts)
				owner[p] = m
				counts[m]++
			}
		}
	}
	// Moving a partition that was free costs no stickiness, so try those
	// first and come back to them after every move of a claimed one. Each
	// move lowers Σ counts², so the loop ends.
	moved := make([]bool, len(owner)) // the partition left its valid owner
	for p := range owner {
		moved[p] = owner[p] != claimed[p]
	}
	for {
		if g.balancePass(owner, counts, moved, true) {
			continue
		}
		if !g.balancePass(owner, counts, moved, false) {
			return
		}
	}
}

// balancePass moves partitions to a subscribed member with at least two
// fewer partitions than their owner and reports whether it moved any. With
// onlyMoved it considers only partitions already away from their valid
// owner.
func (g *group) balancePass(owner, counts []int, moved []bool, onlyMoved bool) bool {
	movedAny := false
	for t := range g.topics {
		subs := g.subscribers[t]
		if len(subs) < 2 {
			continue
		}
		for p := g.base[t]; p < g.base[t+1]; p++ {
			if onlyMoved && !moved[p] {
				continue
			}
			from := owner[p]
			to := leastLoaded(subs, counts)
			if counts[from] > counts[to]+1 {
				owner[p] = to
				counts[from]--
				counts[to]++
				moved[p] = true
				movedAny = true
			}
		}
	}
	return movedAny
}

// leastLoaded returns the member of candidates with the fewest partitions,
// the first in member order on a tie.
func leastLoaded(candidates, counts []int) int {
	best := candidates[0]
	for _, m := range candidates[1:] {
		if counts[m] < counts[best] {
			best = m
		}
	}
	return best
}
