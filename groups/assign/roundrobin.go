package assign

// RoundRobin is Kafka's RoundRobinAssignor: all subscribed partitions,
// sorted by topic then partition, are dealt in turn to the members in
// memberLess order, skipping a member not subscribed to the partition's
// topic. With identical subscriptions the counts differ by at most one;
// with different subscriptions nothing is promised (Kafka's javadoc shows
// a 1/2/3 split).
//
// RoundRobin ignores Owned, Generation and racks.
func RoundRobin(members []Member, topics []Topic) (GroupAssignment, error) {
	g, err := newGroup(members, topics)
	if err != nil {
		return nil, err
	}
	owner := g.newOwner()
	next := 0 // the member the circular iterator points at
	for t := range g.topics {
		if len(g.subscribers[t]) == 0 {
			continue
		}
		for p := g.base[t]; p < g.base[t+1]; p++ {
			for !g.subscribed(next, t) {
				next = (next + 1) % len(g.members)
			}
			owner[p] = next
			next = (next + 1) % len(g.members)
		}
	}
	return g.result(owner), nil
}
