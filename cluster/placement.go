package cluster

import (
	"fmt"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// PlacementBroker is a broker as placement sees it.
type PlacementBroker struct {
	ID int32
	// Rack is broker.rack; "" means none (all rackless brokers count as
	// one rack, so a cluster without racks places as if rack-unaware).
	Rack string
	// Fenced brokers get no new replicas.
	Fenced bool
}

// PlaceReplicas assigns replicas for `partitions` new partitions of
// replication factor rf. existing are the replica lists of every partition
// already in the cluster, of every topic: the new replicas balance the
// totals, so adding a topic or partitions keeps the cluster balanced.
//
// Rules, for each new partition in turn:
//   - only unfenced brokers, and never one broker twice;
//   - replica counts: the partition takes the rf brokers with the fewest
//     replicas, so counts per broker stay within one of each other;
//   - the preferred leader (the first replica) is, among those, the one
//     leading the fewest partitions; the followers, among equally loaded
//     brokers, are the ones already leading the most, which keeps the
//     least-leading brokers free to lead the next partitions;
//   - racks first: each further replica goes to a rack the partition does
//     not use yet while there is one (Kafka's rack-aware assignment), even
//     when that costs replica balance (uneven racks cannot be balanced);
//   - ties go to the lower broker id, so the result depends only on the
//     input (not on the order of brokers, not on chance).
//
// From an empty cluster without racks, replica and leader counts per
// broker then never differ by more than one, topic after topic, whatever
// their partition counts and replication factors; with racks of equal
// size, by at most two (the property tests check both).
//
// An rf above the number of unfenced brokers fails with
// INVALID_REPLICATION_FACTOR, naming both numbers.
func PlaceReplicas(brokers []PlacementBroker, existing [][]int32, partitions, rf int) ([][]int32, error) {
	if partitions <= 0 {
		return nil, fmt.Errorf("%w: number of partitions must be larger than 0", kerr.InvalidPartitions)
	}
	if rf <= 0 {
		return nil, fmt.Errorf("%w: replication factor must be larger than 0", kerr.InvalidReplicationFactor)
	}
	usable := make([]PlacementBroker, 0, len(brokers))
	for _, b := range brokers {
		if !b.Fenced && !slices.ContainsFunc(usable, func(u PlacementBroker) bool { return u.ID == b.ID }) {
			usable = append(usable, b)
		}
	}
	if rf > len(usable) {
		return nil, fmt.Errorf("%w: replication factor %d is larger than the %d available (registered and unfenced) broker(s); %d registered, %d fenced",
			kerr.InvalidReplicationFactor, rf, len(usable), len(brokers), len(brokers)-len(usable))
	}
	// sort.Slice, not slices.SortFunc: placement runs per topic created or
	// partitions added, and a generic sort of this struct would instantiate
	// pdqsort for it (9 KiB).
	sort.Slice(usable, func(i, j int) bool { return usable[i].ID < usable[j].ID })
	index := make(map[int32]int, len(usable))
	for i, b := range usable {
		index[b.ID] = i
	}
	replicas := make([]int, len(usable))
	leaders := make([]int, len(usable))
	for _, rs := range existing {
		for j, id := range rs {
			if i, ok := index[id]; ok {
				replicas[i]++
				if j == 0 {
					leaders[i]++
				}
			}
		}
	}
	out := make([][]int32, partitions)
	for p := range out {
		chosen := placeOne(usable, replicas, leaders, rf)
		for j, i := range chosen {
			replicas[i]++
			if j == 0 {
				leaders[i]++
			}
			out[p] = append(out[p], usable[i].ID)
		}
	}
	return out, nil
}

// placeOne picks rf distinct indexes into usable, the preferred leader
// first.
func placeOne(usable []PlacementBroker, replicas, leaders []int, rf int) []int {
	// The leader comes from the brokers whose replica count is at most the
	// rf-th smallest: any rf lowest-loaded brokers may then complete the
	// partition without unbalancing replica counts.
	sorted := slices.Clone(replicas)
	slices.Sort(sorted)
	threshold, most := sorted[rf-1], sorted[len(sorted)-1]
	// A rack's deficit is how many replicas its brokers lack to the most
	// loaded broker: among equal brokers, the one in the rack with the
	// larger deficit goes first, so that a rack's underloaded brokers are
	// not left to be paired with each other, which spreading forbids.
	deficit := map[string]int{}
	for i, b := range usable {
		deficit[b.Rack] += most - replicas[i]
	}
	leader := -1
	for i := range usable {
		if replicas[i] > threshold {
			continue
		}
		if leader == -1 || betterLeader(i, leader, usable, replicas, leaders, deficit) {
			leader = i
		}
	}
	chosen := []int{leader}
	racks := map[string]bool{usable[leader].Rack: true}
	for len(chosen) < rf {
		// A rack not used by this partition yet, if any broker left has one.
		newRack := false
		for i := range usable {
			if !slices.Contains(chosen, i) && !racks[usable[i].Rack] {
				newRack = true
				break
			}
		}
		best := -1
		for i := range usable {
			if slices.Contains(chosen, i) || newRack && racks[usable[i].Rack] {
				continue
			}
			if best == -1 || betterFollower(i, best, usable, replicas, leaders, deficit) {
				best = i
			}
		}
		chosen = append(chosen, best)
		racks[usable[best].Rack] = true
	}
	return chosen
}

// betterLeader: fewer leaderships, then the larger rack deficit, then
// more replicas (a broker with few replicas will be picked again soon,
// and may have to lead then). Equal keys keep the lower index (id).
func betterLeader(i, j int, usable []PlacementBroker, replicas, leaders []int, deficit map[string]int) bool {
	if leaders[i] != leaders[j] {
		return leaders[i] < leaders[j]
	}
	if di, dj := deficit[usable[i].Rack], deficit[usable[j].Rack]; di != dj {
		return di > dj
	}
	return replicas[i] > replicas[j]
}

// betterFollower: fewer replicas, then the larger rack deficit, then more
// leaderships (keeping the least-leading brokers free to lead).
func betterFollower(i, j int, usable []PlacementBroker, replicas, leaders []int, deficit map[string]int) bool {
	if replicas[i] != replicas[j] {
		return replicas[i] < replicas[j]
	}
	if di, dj := deficit[usable[i].Rack], deficit[usable[j].Rack]; di != dj {
		return di > dj
	}
	return leaders[i] > leaders[j]
}

// ValidateAssignment checks a manual replica assignment as Kafka does,
// with INVALID_REPLICA_ASSIGNMENT: no empty replica list, every partition
// with rf replicas (rf -1: as many as the first partition), no broker
// twice in a partition, and only registered, unfenced brokers.
func ValidateAssignment(brokers []PlacementBroker, assignment [][]int32, rf int) error {
	if len(assignment) == 0 {
		return fmt.Errorf("%w: the manual assignment lists no partitions", kerr.InvalidReplicaAssignment)
	}
	if rf == -1 {
		rf = len(assignment[0])
	}
	known := make(map[int32]PlacementBroker, len(brokers))
	for _, b := range brokers {
		known[b.ID] = b
	}
	for p, rs := range assignment {
		if len(rs) == 0 {
			return fmt.Errorf("%w: partition %d of the manual assignment has an empty replica list", kerr.InvalidReplicaAssignment, p)
		}
		if len(rs) != rf {
			return fmt.Errorf("%w: partition %d of the manual assignment has %d replica(s), the others %d", kerr.InvalidReplicaAssignment, p, len(rs), rf)
		}
		for j, id := range rs {
			if slices.Contains(rs[:j], id) {
				return fmt.Errorf("%w: partition %d of the manual assignment names broker %d more than once", kerr.InvalidReplicaAssignment, p, id)
			}
			b, ok := known[id]
			if !ok {
				return fmt.Errorf("%w: partition %d of the manual assignment names broker %d, but no such broker is registered", kerr.InvalidReplicaAssignment, p, id)
			}
			if b.Fenced {
				return fmt.Errorf("%w: partition %d of the manual assignment names broker %d, which is fenced", kerr.InvalidReplicaAssignment, p, id)
			}
		}
	}
	return nil
}

// placementBrokers lists the registered brokers for placement.
func (im *Image) placementBrokers() []PlacementBroker {
	out := make([]PlacementBroker, 0, len(im.brokers))
	for _, b := range im.Brokers() {
		out = append(out, PlacementBroker{ID: b.ID, Rack: b.Rack, Fenced: b.Fenced})
	}
	return out
}

// assignments lists the replicas of every partition of every topic, in
// topic name order.
func (im *Image) assignments() [][]int32 {
	var out [][]int32
	for _, name := range im.TopicNames() {
		for _, p := range im.topics[name].Partitions {
			out = append(out, p.Replicas)
		}
	}
	return out
}
