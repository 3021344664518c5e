package assign

// CooperativeSticky is Kafka's CooperativeStickyAssignor (KIP-429): the
// Sticky assignment, less every partition that would change owner in this
// rebalance. Such a partition is left out of its new owner's assignment;
// its old owner, no longer assigned it, revokes it and rejoins, and the
// next rebalance, where nobody claims it any more, gives it to the new
// owner. So no partition is ever owned by two members at once, and members
// keep consuming everything that does not move.
//
// The "revoke first" rule here is slightly stricter than Kafka's
// computePartitionsTransferringOwnership: a partition that any member
// claims (in Owned, whatever its generation or subscription) is given in
// this rebalance only to the member whose claim won (see Sticky), never to
// a member with a losing, stale claim, which Kafka would allow. The cost is
// one more rebalance in a case that needs a zombie to arise.
func CooperativeSticky(members []Member, topics []Topic) (GroupAssignment, error) {
	g, err := newGroup(members, topics)
	if err != nil {
		return nil, err
	}
	owner, claimed := g.sticky(true)
	contested := make([]bool, len(owner))
	for _, m := range g.members {
		for _, tp := range m.Owned {
			if p, ok := g.index(tp); ok {
				contested[p] = true
			}
		}
	}
	for p, m := range owner {
		if m >= 0 && contested[p] && claimed[p] != m {
			owner[p] = -1
		}
	}
	return g.result(owner), nil
}
