package assign

import "slices"

// Range is Kafka's RangeAssignor. Per topic, the subscribed members in
// memberLess order each get a contiguous range of partitions; the first
// (partitions % members) of them get one extra. Topics with the same
// subscribers and partition count are thus co-partitioned: partition p of
// each goes to the same member, which is what joins on co-partitioned
// topics rely on.
//
// Rack awareness (KIP-881): when members have racks and topics carry
// PartitionRacks whose racks are not all alike, a first pass gives each
// member, within its range quota, partitions with a replica in its rack
// (keeping co-partitioned topics together), and the usual range pass
// places the rest. Per-topic balance is unchanged: every subscribed member
// gets partitions/members or one more of each topic.
//
// Range ignores Owned and Generation: it is not sticky.
func Range(members []Member, topics []Topic) (GroupAssignment, error) {
	g, err := newGroup(members, topics)
	if err != nil {
		return nil, err
	}
	owner := g.newOwner()
	states := make([]*rangeTopic, 0, len(g.topics))
	rackAware := false
	for t := range g.topics {
		if len(g.subscribers[t]) == 0 || g.topics[t].Partitions == 0 {
			continue
		}
		s := newRangeTopic(g, t)
		rackAware = rackAware || s.rackAware
		states = append(states, s)
	}
	if rackAware {
		assignRangesWithRackMatching(g, states, owner)
	}
	for _, s := range states {
		s.assignRanges(g, owner, false)
	}
	return g.result(owner), nil
}

// rangeTopic is one topic's state in Range: Kafka's TopicAssignmentState.
type rangeTopic struct {
	t         int
	base      int
	consumers []int // member indexes, memberLess order
	count     []int // partitions given so far, per position in consumers
	assigned  []bool
	left      int
	// perConsumer is partitions/consumers; withExtra counts the consumers
	// that may still take one more than that.
	// Invariant: withExtra >= 0.
	perConsumer int
	withExtra   int
	rackAware   bool
}

func newRangeTopic(g *group, t int) *rangeTopic {
	n := int(g.topics[t].Partitions)
	c := len(g.subscribers[t])
	s := &rangeTopic{
		t:           t,
		base:        g.base[t],
		consumers:   g.subscribers[t],
		count:       make([]int, c),
		assigned:    make([]bool, n),
		left:        n,
		perConsumer: n / c,
		withExtra:   n % c,
	}
	s.rackAware = s.useRackAwareAssignment(g)
	return s
}

// useRackAwareAssignment is Kafka's AbstractPartitionAssignor rule: rack
// matching is worth it only if some consumer has a rack that some replica
// is in, and the partitions do not all sit in the same racks.
func (s *rangeTopic) useRackAwareAssignment(g *group) bool {
	racks := g.topics[s.t].PartitionRacks
	if racks == nil {
		return false
	}
	var union []string
	for _, rs := range racks {
		union = append(union, rs...)
	}
	slices.Sort(union)
	union = slices.Compact(union)
	overlap := false
	for _, m := range s.consumers {
		if r := g.members[m].Rack; r != "" {
			if _, ok := slices.BinarySearch(union, r); ok {
				overlap = true
				break
			}
		}
	}
	if !overlap {
		return false
	}
	for _, rs := range racks {
		rs = slices.Clone(rs)
		slices.Sort(rs)
		if !slices.Equal(slices.Compact(rs), union) {
			return true
		}
	}
	return false
}

func (s *rangeTopic) racksMatch(g *group, ci, p int) bool {
	rack := g.members[s.consumers[ci]].Rack
	if rack == "" {
		return true
	}
	racks := g.topics[s.t].PartitionRacks
	return racks != nil && slices.Contains(racks[p], rack)
}

func (s *rangeTopic) maxAssignable(ci int) int {
	limit := s.perConsumer
	if s.withExtra > 0 {
		limit++
	}
	return max(0, limit-s.count[ci])
}

func (s *rangeTopic) assign(ci, p int, owner []int) {
	if s.assigned[p] {
		panic("assign: range assigns a partition twice")
	}
	s.assigned[p] = true
	s.left--
	s.count[ci]++
	if s.count[ci] == s.perConsumer+1 {
		s.withExtra--
		if s.withExtra < 0 {
			panic("assign: range gave more consumers an extra partition than partitions % consumers")
		}
	}
	owner[s.base+p] = s.consumers[ci]
}

// assignRanges gives each consumer in turn the lowest unassigned
// partitions up to its quota; with matchRacks, only partitions with a
// replica in its rack.
func (s *rangeTopic) assignRanges(g *group, owner []int, matchRacks bool) {
	for ci := range s.consumers {
		if s.left == 0 {
			return
		}
		k := s.maxAssignable(ci)
		for p := 0; p < len(s.assigned) && k > 0; p++ {
			if !s.assigned[p] && (!matchRacks || s.racksMatch(g, ci, p)) {
				s.assign(ci, p, owner)
				k--
			}
		}
	}
}

// assignRangesWithRackMatching is the rack pass of Kafka's RangeAssignor:
// topics with the same consumers and partition count are matched together,
// partition by partition, so that co-partitioning survives; a topic alone
// is matched with its own ranges.
func assignRangesWithRackMatching(g *group, states []*rangeTopic, owner []int) {
	var coGroups [][]*rangeTopic
	for _, s := range states {
		placed := false
		for i, cg := range coGroups {
			if slices.Equal(cg[0].consumers, s.consumers) && len(cg[0].assigned) == len(s.assigned) {
				coGroups[i] = append(cg, s)
				placed = true
				break
			}
		}
		if !placed {
			coGroups = append(coGroups, []*rangeTopic{s})
		}
	}
	for _, cg := range coGroups {
		if len(cg) == 1 {
			if cg[0].rackAware {
				cg[0].assignRanges(g, owner, true)
			}
			continue
		}
		assignCoPartitionedWithRackMatching(g, cg, owner)
	}
}

func assignCoPartitionedWithRackMatching(g *group, cg []*rangeTopic, owner []int) {
	consumers := len(cg[0].consumers)
	remaining := make([]bool, consumers)
	left := consumers
	for ci := range remaining {
		remaining[ci] = true
	}
	for p := 0; p < len(cg[0].assigned) && left > 0; p++ {
		for ci := range consumers {
			if !remaining[ci] || !allMatch(cg, func(s *rangeTopic) bool {
				return s.racksMatch(g, ci, p) && s.maxAssignable(ci) > 0
			}) {
				continue
			}
			for _, s := range cg {
				s.assign(ci, p, owner)
			}
			if allMatch(cg, func(s *rangeTopic) bool { return s.maxAssignable(ci) == 0 }) {
				remaining[ci] = false
				left--
			}
			break
		}
	}
}

func allMatch(cg []*rangeTopic, f func(*rangeTopic) bool) bool {
	for _, s := range cg {
		if !f(s) {
			return false
		}
	}
	return true
}
