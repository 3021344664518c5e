package groups

import "fmt"

// checkInvariants panics when a group's state breaks one of the rules on
// the fields of Group and consumerGroup. Ready runs it over every group
// in a build with the invariants tag (internal/invariants): the driver
// calls Ready after each input, so every input's result is checked
// before its records are persisted and its answers sent. What needs the
// clients' view (a request answered once, offsets that never go back)
// the property tests check.
func (c *Coordinator) checkInvariants() {
	for id, g := range c.groups {
		if g.id != id {
			panic(fmt.Sprintf("groups: group %q is kept as %q", g.id, id))
		}
		if g.state == Dead {
			panic(fmt.Sprintf("groups: Dead group %q kept", id))
		}
		if g.isConsumer() {
			g.consumer.checkInvariants(id)
		} else {
			g.checkInvariants()
		}
	}
	if c.status == active {
		c.txn.checkInvariants(c.groups)
	}
}

// checkInvariants: the producers of a group's open transactions are
// exactly those with pending offsets in it (byGroup indexes byProducer),
// and a group with an open transaction exists (it is kept until the
// marker).
func (t *txnOffsets) checkInvariants(groups map[string]*Group) {
	n := 0
	for pid, pt := range t.byProducer {
		if len(pt.groups) == 0 {
			panic(fmt.Sprintf("groups: producer %d has an open transaction in no group", pid))
		}
		for g := range pt.groups {
			n++
			if _, ok := t.byGroup[g][pid]; !ok {
				panic(fmt.Sprintf("groups: producer %d's pending offsets of group %q are not indexed", pid, g))
			}
			if groups[g] == nil {
				panic(fmt.Sprintf("groups: group %q has an open transaction of producer %d but is gone", g, pid))
			}
		}
		if e, ok := t.epochs[pid]; !ok || e < pt.epoch {
			panic(fmt.Sprintf("groups: producer %d pending at epoch %d, highest epoch seen %d (%v)", pid, pt.epoch, e, ok))
		}
	}
	for g, pids := range t.byGroup {
		for pid := range pids {
			n--
			if t.byProducer[pid] == nil || t.byProducer[pid].groups[g] == nil {
				panic(fmt.Sprintf("groups: group %q indexes producer %d, which has nothing pending in it", g, pid))
			}
		}
	}
	if n != 0 {
		panic(fmt.Sprintf("groups: the open transactions' index is off by %d", n))
	}
}

func (g *Group) checkInvariants() {
	if (g.leaderID == "") != (len(g.members) == 0) || g.leaderID != "" && g.memberByID[g.leaderID] == nil {
		panic(fmt.Sprintf("groups: group %q has leader %q and %d members", g.id, g.leaderID, len(g.members)))
	}
	awaiting, instances := 0, 0
	for _, m := range g.members {
		if g.memberByID[m.memberID] != m {
			panic(fmt.Sprintf("groups: group %q member %s is not indexed by its id", g.id, m.memberID))
		}
		if m.instanceID != "" {
			instances++
			if g.staticMembers[m.instanceID] != m.memberID {
				panic(fmt.Sprintf("groups: group %q instance %s maps to %q, not to its member %s", g.id, m.instanceID, g.staticMembers[m.instanceID], m.memberID))
			}
		}
		if m.awaitingJoin {
			awaiting++
			if g.state != PreparingRebalance {
				panic(fmt.Sprintf("groups: group %q member %s awaits its JoinGroup answer in %s", g.id, m.memberID, g.state))
			}
		}
		if m.awaitingSync && g.state != CompletingRebalance {
			panic(fmt.Sprintf("groups: group %q member %s awaits its SyncGroup answer in %s", g.id, m.memberID, g.state))
		}
		if g.state == Stable && m.assignment == nil {
			panic(fmt.Sprintf("groups: Stable group %q member %s has no assignment", g.id, m.memberID))
		}
	}
	if len(g.memberByID) != len(g.members) || len(g.staticMembers) != instances || awaiting != g.numAwaitingJoin {
		panic(fmt.Sprintf("groups: group %q has %d members, %d indexed by id, %d of %d instances indexed, %d awaiting join counted as %d",
			g.id, len(g.members), len(g.memberByID), len(g.staticMembers), instances, awaiting, g.numAwaitingJoin))
	}
	if g.state == Empty && len(g.members) > 0 {
		panic(fmt.Sprintf("groups: Empty group %q has %d members", g.id, len(g.members)))
	}
}

// checkInvariants: the owner index is exactly the members' assigned and
// pending partitions, each partition held by one member at most (KIP-848:
// a partition the target moves is assigned to its new member only once
// the old one revoked it), and no member is ahead of the group's epoch.
func (cg *consumerGroup) checkInvariants(id string) {
	if cg.assignmentEpoch > cg.epoch {
		panic(fmt.Sprintf("groups: consumer group %q assignment epoch %d is ahead of its epoch %d", id, cg.assignmentEpoch, cg.epoch))
	}
	held := 0
	for mid, m := range cg.members {
		if m.id != mid {
			panic(fmt.Sprintf("groups: consumer group %q member %s is kept as %s", id, m.id, mid))
		}
		if m.epoch > cg.epoch {
			panic(fmt.Sprintf("groups: consumer group %q member %s at epoch %d, ahead of the group's %d", id, mid, m.epoch, cg.epoch))
		}
		if len(m.pending) > 0 && m.state != memberUnrevoked {
			panic(fmt.Sprintf("groups: consumer group %q member %s has %d partitions pending revocation in state %d", id, mid, len(m.pending), m.state))
		}
		if m.instanceID != "" && cg.static[m.instanceID] != mid {
			panic(fmt.Sprintf("groups: consumer group %q instance %s maps to %q, not to its member %s", id, m.instanceID, cg.static[m.instanceID], mid))
		}
		for _, set := range []partSet{m.assigned, m.pending} {
			for k := range set {
				held++
				if cg.owner[k] != mid {
					panic(fmt.Sprintf("groups: consumer group %q member %s holds partition %d of topic %x, owned by %q",
						id, mid, k.partition, k.topic, cg.owner[k]))
				}
			}
		}
	}
	if held != len(cg.owner) {
		panic(fmt.Sprintf("groups: consumer group %q owns %d partitions, its members hold %d", id, len(cg.owner), held))
	}
	for inst, mid := range cg.static {
		if m := cg.members[mid]; m == nil || m.instanceID != inst {
			panic(fmt.Sprintf("groups: consumer group %q instance %s maps to %s, not a member with that instance", id, inst, mid))
		}
	}
}
