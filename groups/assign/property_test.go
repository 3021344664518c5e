package assign

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"testing"

	"pgregory.net/rapid"
)

// The property tests check every assignor against the invariants in
// doc.go on generated groups. rapid prints the failing case and the flag
// that replays it.

var allAssignors = []string{RangeName, RoundRobinName, StickyName, CooperativeStickyName, UniformName}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// genTopics draws topics t0..tn; withRacks adds replica racks.
func genTopics(t *rapid.T, withRacks bool) []Topic {
	n := rapid.IntRange(1, 4).Draw(t, "numTopics")
	topics := make([]Topic, n)
	for i := range topics {
		topics[i] = Topic{Name: fmt.Sprintf("t%d", i), Partitions: int32(rapid.IntRange(0, 10).Draw(t, "partitions"))}
		if withRacks && rapid.Bool().Draw(t, "hasRacks") {
			topics[i].PartitionRacks = make([][]string, topics[i].Partitions)
			for p := range topics[i].PartitionRacks {
				topics[i].PartitionRacks[p] = rapid.SliceOfDistinct(rapid.SampledFrom([]string{"r1", "r2", "r3"}), rapid.ID).Draw(t, "replicaRacks")
			}
		}
	}
	return topics
}

// genGroup draws a group. Subscriptions are identical when homogeneous,
// and may name a topic missing from the metadata. Claims are none, random
// (out of range, conflicting, stale), or consistent (each partition owned
// by at most one member, one generation).
func genGroup(t *rapid.T, homogeneous, withRacks bool) ([]Member, []Topic) {
	topics := genTopics(t, withRacks)
	names := []string{"gone"}
	for _, tp := range topics {
		names = append(names, tp.Name)
	}
	n := rapid.IntRange(1, 7).Draw(t, "numMembers")
	ids := rapid.SliceOfNDistinct(rapid.IntRange(0, 50), n, n, rapid.ID[int]).Draw(t, "ids")
	common := rapid.SliceOfDistinct(rapid.SampledFrom(names), rapid.ID).Draw(t, "subscription")
	claims := rapid.SampledFrom([]string{"none", "random", "consistent"}).Draw(t, "claims")
	members := make([]Member, n)
	for i := range members {
		m := &members[i]
		m.MemberID = fmt.Sprintf("m%02d", ids[i])
		if rapid.Bool().Draw(t, "static") {
			m.InstanceID = fmt.Sprintf("i%02d", ids[i]*7%51) // a bijection: distinct
		}
		if withRacks {
			m.Rack = rapid.SampledFrom([]string{"", "r1", "r2", "r3"}).Draw(t, "rack")
		}
		m.Topics = common
		if !homogeneous {
			m.Topics = rapid.SliceOfDistinct(rapid.SampledFrom(names), rapid.ID).Draw(t, "topics")
		}
		m.Generation = 1
		if claims == "random" {
			m.Generation = int32(rapid.IntRange(-1, 3).Draw(t, "generation"))
			tp := rapid.Custom(func(t *rapid.T) TopicPartition {
				return TopicPartition{
					Topic:     rapid.SampledFrom(names).Draw(t, "topic"),
					Partition: int32(rapid.IntRange(-1, 11).Draw(t, "partition")),
				}
			})
			m.Owned = rapid.SliceOfN(tp, 0, 12).Draw(t, "owned")
		}
	}
	if claims == "consistent" {
		for _, tp := range topics {
			for p := range tp.Partitions {
				if o := rapid.IntRange(-1, n-1).Draw(t, "owner"); o >= 0 {
					members[o].Owned = append(members[o].Owned, TopicPartition{tp.Name, p})
				}
			}
		}
	}
	return members, topics
}

func cloneMembers(ms []Member) []Member {
	out := slices.Clone(ms)
	for i := range out {
		out[i].Topics = slices.Clone(out[i].Topics)
		out[i].Owned = slices.Clone(out[i].Owned)
	}
	return out
}

func cloneTopics(ts []Topic) []Topic {
	out := slices.Clone(ts)
	for i := range out {
		if out[i].PartitionRacks != nil {
			out[i].PartitionRacks = slices.Clone(out[i].PartitionRacks)
			for p := range out[i].PartitionRacks {
				out[i].PartitionRacks[p] = slices.Clone(out[i].PartitionRacks[p])
			}
		}
	}
	return out
}

// shuffled returns the same group with every list permuted.
func shuffled(t *rapid.T, members []Member, topics []Topic) ([]Member, []Topic) {
	members = rapid.Permutation(cloneMembers(members)).Draw(t, "memberOrder")
	for i := range members {
		members[i].Topics = rapid.Permutation(members[i].Topics).Draw(t, "topicOrder")
		members[i].Owned = rapid.Permutation(members[i].Owned).Draw(t, "ownedOrder")
	}
	topics = rapid.Permutation(cloneTopics(topics)).Draw(t, "metadataOrder")
	for i := range topics {
		for p := range topics[i].PartitionRacks {
			topics[i].PartitionRacks[p] = rapid.Permutation(topics[i].PartitionRacks[p]).Draw(t, "rackOrder")
		}
	}
	return members, topics
}

// model is an independent view of a group, built with maps, to check
// results against.
type model struct {
	members    map[string]*Member
	partitions map[string]int32 // topic → count
	subscribed map[string]map[string]bool
}

func newModel(members []Member, topics []Topic) *model {
	m := &model{members: map[string]*Member{}, partitions: map[string]int32{}, subscribed: map[string]map[string]bool{}}
	for _, t := range topics {
		m.partitions[t.Name] = t.Partitions
	}
	for i := range members {
		mb := &members[i]
		m.members[mb.MemberID] = mb
		m.subscribed[mb.MemberID] = map[string]bool{}
		for _, t := range mb.Topics {
			if _, ok := m.partitions[t]; ok {
				m.subscribed[mb.MemberID][t] = true
			}
		}
	}
	return m
}

func (m *model) exists(tp TopicPartition) bool {
	n, ok := m.partitions[tp.Topic]
	return ok && tp.Partition >= 0 && tp.Partition < n
}

// wanted lists every partition of a topic someone subscribes to.
func (m *model) wanted() []TopicPartition {
	var out []TopicPartition
	for _, topic := range sortedKeys(m.partitions) {
		for id := range m.members {
			if m.subscribed[id][topic] {
				for p := range m.partitions[topic] {
					out = append(out, TopicPartition{topic, p})
				}
				break
			}
		}
	}
	return out
}

// winners resolves claims as doc.go says: highest generation wins, a tie
// frees the partition, a winner not subscribed keeps nothing.
func (m *model) winners(useGenerations bool) map[TopicPartition]string {
	type best struct {
		gen int32
		ids map[string]bool
	}
	claims := map[TopicPartition]*best{}
	for id, mb := range m.members {
		gen := mb.Generation
		if !useGenerations {
			gen = 0
		}
		for _, tp := range mb.Owned {
			if !m.exists(tp) {
				continue
			}
			c := claims[tp]
			switch {
			case c == nil || gen > c.gen:
				claims[tp] = &best{gen, map[string]bool{id: true}}
			case gen == c.gen:
				c.ids[id] = true
			}
		}
	}
	out := map[TopicPartition]string{}
	for tp, c := range claims {
		if len(c.ids) == 1 {
			for id := range c.ids {
				if m.subscribed[id][tp.Topic] {
					out[tp] = id
				}
			}
		}
	}
	return out
}

func owners(a GroupAssignment) map[TopicPartition]string {
	out := map[TopicPartition]string{}
	for id, tps := range a {
		for _, tp := range tps {
			out[tp] = id
		}
	}
	return out
}

// checkValid: an entry per member, sorted lists, existing subscribed
// partitions, none twice, and (if complete) every wanted partition.
func checkValid(t *rapid.T, m *model, a GroupAssignment, complete bool) {
	if len(a) != len(m.members) {
		t.Fatalf("%d entries for %d members", len(a), len(m.members))
	}
	seen := map[TopicPartition]string{}
	for id, tps := range a {
		if _, ok := m.members[id]; !ok {
			t.Fatalf("entry for unknown member %q", id)
		}
		if tps == nil {
			t.Fatalf("member %q has a nil entry", id)
		}
		for i, tp := range tps {
			if i > 0 && !tps[i-1].Less(tp) {
				t.Fatalf("member %q: %v not sorted", id, tps)
			}
			if !m.exists(tp) || !m.subscribed[id][tp.Topic] {
				t.Fatalf("member %q assigned %v: missing or not subscribed", id, tp)
			}
			if other, dup := seen[tp]; dup {
				t.Fatalf("%v assigned to %q and %q", tp, other, id)
			}
			seen[tp] = id
		}
	}
	if complete {
		for _, tp := range m.wanted() {
			if _, ok := seen[tp]; !ok {
				t.Fatalf("%v not assigned", tp)
			}
		}
	}
}

func homogeneousModel(m *model) bool {
	var first map[string]bool
	for _, id := range sortedKeys(m.members) {
		if first == nil {
			first = m.subscribed[id]
		} else if !maps.Equal(first, m.subscribed[id]) {
			return false
		}
	}
	return true
}

func checkTotalBalance(t *rapid.T, a GroupAssignment) {
	lo, hi := -1, -1
	for _, tps := range a {
		if lo < 0 || len(tps) < lo {
			lo = len(tps)
		}
		hi = max(hi, len(tps))
	}
	if hi-lo > 1 {
		t.Fatalf("unbalanced: %d to %d partitions\n%s", lo, hi, format(a))
	}
}

// checkLocalBalance: no partition can move to a subscribed member holding
// two or more fewer than its owner.
func checkLocalBalance(t *rapid.T, m *model, a GroupAssignment) {
	for id, tps := range a {
		for _, tp := range tps {
			for other := range m.members {
				if m.subscribed[other][tp.Topic] && len(tps) > len(a[other])+1 {
					t.Fatalf("%v could move from %q (%d) to %q (%d)\n%s", tp, id, len(tps), other, len(a[other]), format(a))
				}
			}
		}
	}
}

// checkRangeBalance: with Range, every subscriber of a topic gets ⌊P/C⌋ or
// ⌈P/C⌉ of its partitions, racks or not.
func checkRangeBalance(t *rapid.T, m *model, a GroupAssignment) {
	for topic, n := range m.partitions {
		var subs []string
		for id := range m.members {
			if m.subscribed[id][topic] {
				subs = append(subs, id)
			}
		}
		for _, id := range subs {
			got := 0
			for _, tp := range a[id] {
				if tp.Topic == topic {
					got++
				}
			}
			lo := int(n) / len(subs)
			hi := lo
			if int(n)%len(subs) != 0 {
				hi++
			}
			if got < lo || got > hi {
				t.Fatalf("topic %s: %q got %d, want %d..%d\n%s", topic, id, got, lo, hi, format(a))
			}
		}
	}
}

// minimalMoves returns how many validly owned partitions a balanced
// assignment of a homogeneous group must take from their owner: each
// member keeps at most ⌊N/C⌋, or ⌈N/C⌉ for N mod C of them.
func minimalMoves(m *model, win map[TopicPartition]string) int {
	n := len(m.wanted())
	c := len(m.members)
	minQuota, extra := n/c, n%c
	owned := map[string]int{}
	for _, id := range win {
		owned[id]++
	}
	kept, over, total := 0, 0, 0
	for _, o := range owned {
		total += o
		kept += min(o, minQuota)
		if o > minQuota {
			over++
		}
	}
	kept += min(extra, over)
	return total - kept
}

func moves(win map[TopicPartition]string, a GroupAssignment) int {
	now := owners(a)
	moved := 0
	for tp, id := range win {
		if now[tp] != id {
			moved++
		}
	}
	return moved
}

// naiveRange and naiveRoundRobin compute Kafka's javadoc definitions
// directly, as a second implementation to cross-check with.
func naiveMemberOrder(ms []Member) []Member {
	out := slices.Clone(ms)
	key := func(m Member) string {
		if m.InstanceID != "" {
			return "0" + m.InstanceID + "\x00" + m.MemberID
		}
		return "1" + m.MemberID
	}
	sort.Slice(out, func(i, j int) bool { return key(out[i]) < key(out[j]) })
	return out
}

func naiveRange(m *model, ms []Member) GroupAssignment {
	out := GroupAssignment{}
	for _, mb := range ms {
		out[mb.MemberID] = []TopicPartition{}
	}
	for _, topic := range sortedKeys(m.partitions) {
		var subs []string
		for _, mb := range naiveMemberOrder(ms) {
			if m.subscribed[mb.MemberID][topic] {
				subs = append(subs, mb.MemberID)
			}
		}
		if len(subs) == 0 {
			continue
		}
		n := int(m.partitions[topic])
		per, extra := n/len(subs), n%len(subs)
		for i, id := range subs {
			start := per*i + min(i, extra)
			length := per
			if i+1 <= extra {
				length++
			}
			for p := start; p < start+length; p++ {
				out[id] = append(out[id], TopicPartition{topic, int32(p)})
			}
		}
	}
	for id := range out {
		sort.Slice(out[id], func(i, j int) bool { return out[id][i].Less(out[id][j]) })
	}
	return out
}

func naiveRoundRobin(m *model, ms []Member) GroupAssignment {
	out := GroupAssignment{}
	for _, mb := range ms {
		out[mb.MemberID] = []TopicPartition{}
	}
	order := naiveMemberOrder(ms)
	i := 0
	for _, tp := range m.wanted() {
		for !m.subscribed[order[i%len(order)].MemberID][tp.Topic] {
			i++
		}
		id := order[i%len(order)].MemberID
		out[id] = append(out[id], tp)
		i++
	}
	return out
}

func run(t *rapid.T, name string, members []Member, topics []Topic) GroupAssignment {
	a, _ := ByName(name)
	got, err := a(members, topics)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return got
}

// TestPropertyAllAssignors: validity, completeness, determinism under
// shuffled input, inputs left unmodified, and each assignor's balance.
func TestPropertyAllAssignors(t *testing.T) {
	for _, name := range allAssignors {
		for _, homogeneous := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/homogeneous=%v", name, homogeneous), func(t *testing.T) {
				rapid.Check(t, func(t *rapid.T) {
					members, topics := genGroup(t, homogeneous, name == RangeName)
					m := newModel(members, topics)
					before, beforeTopics := cloneMembers(members), cloneTopics(topics)
					got := run(t, name, members, topics)
					if !reflect.DeepEqual(members, before) || !reflect.DeepEqual(topics, beforeTopics) {
						t.Fatalf("%s modified its input", name)
					}
					checkValid(t, m, got, name != CooperativeStickyName)

					sm, st := shuffled(t, members, topics)
					if again := run(t, name, sm, st); !reflect.DeepEqual(got, again) {
						t.Fatalf("shuffled input changed the result:\n%s\nvs\n%s", format(got), format(again))
					}

					hom := homogeneousModel(m)
					switch name {
					case RangeName:
						checkRangeBalance(t, m, got)
						racks := false
						for _, tp := range topics {
							racks = racks || tp.PartitionRacks != nil
						}
						if !racks {
							if w := naiveRange(m, members); !reflect.DeepEqual(got, w) {
								t.Fatalf("Range disagrees with the javadoc definition:\n%s\nvs\n%s", format(got), format(w))
							}
						}
					case RoundRobinName:
						if w := naiveRoundRobin(m, members); !reflect.DeepEqual(got, w) {
							t.Fatalf("RoundRobin disagrees with the javadoc definition:\n%s\nvs\n%s", format(got), format(w))
						}
						if hom {
							checkTotalBalance(t, got)
						}
					case StickyName, UniformName:
						checkLocalBalance(t, m, got)
						if hom {
							checkTotalBalance(t, got)
							win := m.winners(name == StickyName)
							if moved, least := moves(win, got), minimalMoves(m, win); moved != least {
								t.Fatalf("moved %d partitions from their owner, balance needs %d\n%s", moved, least, format(got))
							}
						}
					}
				})
			})
		}
	}
}

// TestPropertyStickyStable: feeding a sticky result back as the members'
// ownership, one generation later, changes nothing.
func TestPropertyStickyStable(t *testing.T) {
	for _, name := range []string{StickyName, UniformName, CooperativeStickyName} {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				members, topics := genGroup(t, rapid.Bool().Draw(t, "homogeneous"), false)
				first := run(t, StickyName, members, topics)
				next := cloneMembers(members)
				for i := range next {
					next[i].Owned = first[next[i].MemberID]
					next[i].Generation = 5
				}
				if again := run(t, name, next, topics); !reflect.DeepEqual(first, again) {
					t.Fatalf("a balanced group moved:\n%s\nvs\n%s", format(first), format(again))
				}
			})
		})
	}
}

// TestPropertyStickyMembershipChange: from a balanced assignment, members
// leave and join; the sticky assignors move exactly as many partitions as
// the new balance requires. CooperativeSticky gets there in two
// rebalances and never hands over a partition in the rebalance that
// revokes it.
func TestPropertyStickyMembershipChange(t *testing.T) {
	for _, name := range []string{StickyName, UniformName, CooperativeStickyName} {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				members, topics := genGroup(t, true, false)
				for i := range members {
					members[i].Owned = nil
				}
				first := run(t, StickyName, members, topics)
				var next []Member
				for i, mb := range members {
					if rapid.Bool().Draw(t, "stays") || i == 0 {
						mb.Owned = first[mb.MemberID]
						mb.Generation = 2
						next = append(next, mb)
					}
				}
				for i := range rapid.IntRange(0, 3).Draw(t, "joins") {
					next = append(next, Member{MemberID: fmt.Sprintf("new%d", i), Topics: members[0].Topics, Generation: DefaultGeneration})
				}
				m := newModel(next, topics)
				win := m.winners(true)
				least := minimalMoves(m, win)
				got := run(t, name, next, topics)
				if name == CooperativeStickyName {
					checkValid(t, m, got, false)
					for tp, id := range owners(got) {
						if old, ok := win[tp]; ok && old != id {
							t.Fatalf("%v handed from %q to %q in one rebalance", tp, old, id)
						}
					}
					for i := range next {
						next[i].Owned = got[next[i].MemberID]
						next[i].Generation = 3
					}
					got = run(t, name, next, topics)
				}
				checkValid(t, m, got, true)
				checkTotalBalance(t, got)
				if moved := moves(win, got); moved != least {
					t.Fatalf("moved %d partitions, balance needs %d\nbefore:\n%safter:\n%s", moved, least, format(first), format(got))
				}
			})
		})
	}
}

// TestPropertyCooperativeRevokeFirst: on any claims, CooperativeSticky is
// Sticky less the partitions changing hands; a partition it assigns is
// claimed by nobody else unless the assignee's claim is the newer one;
// with identical subscriptions the next rebalance completes the move.
func TestPropertyCooperativeRevokeFirst(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		homogeneous := rapid.Bool().Draw(t, "homogeneous")
		members, topics := genGroup(t, homogeneous, false)
		m := newModel(members, topics)
		coop := run(t, CooperativeStickyName, members, topics)
		sticky := run(t, StickyName, members, topics)
		checkValid(t, m, coop, false)

		win := m.winners(true)
		claimed := map[TopicPartition]bool{}
		for _, mb := range members {
			for _, tp := range mb.Owned {
				claimed[tp] = true
			}
		}
		for id, tps := range sticky {
			var w []TopicPartition
			for _, tp := range tps {
				if !claimed[tp] || win[tp] == id {
					w = append(w, tp)
				}
			}
			if !slices.Equal(coop[id], w) {
				t.Fatalf("member %q: cooperative %v, want sticky less transfers %v", id, coop[id], w)
			}
		}
		for id, tps := range coop {
			self := m.members[id]
			for _, tp := range tps {
				for _, other := range members {
					if other.MemberID != id && slices.Contains(other.Owned, tp) &&
						(!slices.Contains(self.Owned, tp) || other.Generation >= self.Generation) {
						t.Fatalf("%v given to %q (generation %d) while %q (generation %d) claims it",
							tp, id, self.Generation, other.MemberID, other.Generation)
					}
				}
			}
		}

		if !homogeneous {
			return
		}
		next := cloneMembers(members)
		for i := range next {
			next[i].Owned = coop[next[i].MemberID]
			next[i].Generation = 9
		}
		second := run(t, CooperativeStickyName, next, topics)
		checkValid(t, newModel(next, topics), second, true)
		checkTotalBalance(t, second)
	})
}
