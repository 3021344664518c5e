package assign

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
)

// Assignor names as they appear on the wire: in a classic JoinGroup's
// protocol list and in KIP-848's ServerAssignor / group.consumer.assignors.
const (
	RangeName             = "range"
	RoundRobinName        = "roundrobin"
	StickyName            = "sticky"
	CooperativeStickyName = "cooperative-sticky"
	UniformName           = "uniform"
)

// MaxPartitions bounds the partitions one assignment may cover (the sum of
// the partition counts of the topics passed in). The work and memory of
// every assignor grow with it.
const MaxPartitions = 1 << 20

// DefaultGeneration is the generation of a claim that carries none: Kafka's
// AbstractStickyAssignor.DEFAULT_GENERATION.
const DefaultGeneration int32 = -1

var (
	ErrDuplicateMember       = errors.New("assign: duplicate member id")
	ErrInvalidMember         = errors.New("assign: invalid member")
	ErrDuplicateTopic        = errors.New("assign: duplicate topic")
	ErrInvalidTopic          = errors.New("assign: invalid topic")
	ErrTooManyPartitions     = errors.New("assign: too many partitions")
	ErrInvalidPartitionRacks = errors.New("assign: partition racks do not match the partition count")
)

// TopicPartition names a partition. It has the same shape as
// engine.TopicPartition (groups does not import engine).
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return tp.Topic + "-" + strconv.Itoa(int(tp.Partition)) }

// Less orders partitions by topic, then partition.
func (tp TopicPartition) Less(o TopicPartition) bool {
	return tp.Topic < o.Topic || tp.Topic == o.Topic && tp.Partition < o.Partition
}

// Member is one group member as an assignor sees it.
type Member struct {
	MemberID string
	// InstanceID is group.instance.id (static membership); "" for a dynamic
	// member (Kafka forbids an empty instance id). Range and RoundRobin order
	// static members by it, so a restarted static member, which comes back
	// with a new MemberID, gets the same partitions.
	InstanceID string
	// Rack is client.rack; "" when unknown.
	Rack string
	// Topics the member subscribes to. Topics missing from the metadata
	// passed to the assignor are ignored, as Kafka does.
	Topics []string
	// Owned is what the member says it owns now (classic protocol:
	// ConsumerProtocolSubscription.OwnedPartitions or the sticky user data)
	// or, for KIP-848, the member's current assignment. Only the sticky
	// assignors read it.
	Owned []TopicPartition
	// Generation is the group generation Owned was assigned in;
	// DefaultGeneration if unknown. Only Sticky and CooperativeSticky read it.
	Generation int32
}

// Topic is a subscribed topic's metadata.
type Topic struct {
	Name       string
	Partitions int32
	// PartitionRacks, if not nil, holds for each partition the racks of its
	// replicas (len(PartitionRacks) == Partitions). Range uses it to prefer
	// consumers in a replica's rack (KIP-881); the others ignore it.
	PartitionRacks [][]string
}

// GroupAssignment maps each member id to the partitions it is assigned,
// sorted by topic then partition. Every member passed in has an entry,
// possibly empty.
type GroupAssignment map[string][]TopicPartition

// Assignor computes a GroupAssignment. Every assignor in this package is a
// pure, deterministic function: the result depends only on the contents of
// its arguments, not on their order nor on map iteration order, and it
// never modifies them.
type Assignor func(members []Member, topics []Topic) (GroupAssignment, error)

// ByName returns the assignor Kafka knows by name, client side or server
// side ("range" is both).
func ByName(name string) (Assignor, bool) {
	switch name {
	case RangeName:
		return Range, true
	case RoundRobinName:
		return RoundRobin, true
	case StickyName:
		return Sticky, true
	case CooperativeStickyName:
		return CooperativeSticky, true
	case UniformName:
		return Uniform, true
	}
	return nil, false
}

// memberLess is Kafka's MemberInfo order (AbstractPartitionAssignor): static
// members first, by instance id, then dynamic members by member id. Equal
// instance ids (a fenced member not yet removed) fall back to the member id
// so that the order stays total.
func memberLess(a, b *Member) bool {
	switch {
	case a.InstanceID != "" && b.InstanceID != "":
		if a.InstanceID != b.InstanceID {
			return a.InstanceID < b.InstanceID
		}
	case a.InstanceID != "":
		return true
	case b.InstanceID != "":
		return false
	}
	return a.MemberID < b.MemberID
}

// group is the validated, indexed input every assignor works on. Members
// and topics are sorted, and partitions are numbered globally: partition p
// of topic t is index base[t]+p, so index order is topic-then-partition
// order. Assignors work on indexes and never iterate a map.
type group struct {
	members []*Member // in memberLess order
	topics  []Topic   // by name
	byName  map[string]int
	base    []int // len(topics)+1; base[len(topics)] is the partition total

	// subs[m] lists the topic indexes member m subscribes to, ascending;
	// subscribers[t] lists the members subscribed to topic t, ascending.
	subs        [][]int
	subscribers [][]int
}

func newGroup(members []Member, topics []Topic) (*group, error) {
	g := &group{
		members: make([]*Member, len(members)),
		topics:  slices.Clone(topics),
		byName:  make(map[string]int, len(topics)),
	}
	// sort.Slice, not slices.SortFunc: once per rebalance, over a handful
	// of topics, and a generic sort of Topic would instantiate pdqsort for
	// it (12 KiB of the binary).
	sort.Slice(g.topics, func(i, j int) bool { return g.topics[i].Name < g.topics[j].Name })
	total := 0
	g.base = make([]int, len(g.topics)+1)
	for i := range g.topics {
		t := &g.topics[i]
		if t.Name == "" || t.Partitions < 0 {
			return nil, fmt.Errorf("%w: %q with %d partitions", ErrInvalidTopic, t.Name, t.Partitions)
		}
		if i > 0 && g.topics[i-1].Name == t.Name {
			return nil, fmt.Errorf("%w: %q", ErrDuplicateTopic, t.Name)
		}
		if t.PartitionRacks != nil && len(t.PartitionRacks) != int(t.Partitions) {
			return nil, fmt.Errorf("%w: topic %q has %d partitions, %d rack lists",
				ErrInvalidPartitionRacks, t.Name, t.Partitions, len(t.PartitionRacks))
		}
		g.byName[t.Name] = i
		g.base[i] = total
		total += int(t.Partitions)
		if total > MaxPartitions {
			return nil, fmt.Errorf("%w: more than %d", ErrTooManyPartitions, MaxPartitions)
		}
	}
	g.base[len(g.topics)] = total

	for i := range members {
		if members[i].MemberID == "" {
			return nil, fmt.Errorf("%w: empty member id", ErrInvalidMember)
		}
		g.members[i] = &members[i]
	}
	sort.SliceStable(g.members, func(i, j int) bool { return memberLess(g.members[i], g.members[j]) })
	seen := make(map[string]struct{}, len(members))
	for _, m := range g.members {
		if _, dup := seen[m.MemberID]; dup {
			return nil, fmt.Errorf("%w: %q", ErrDuplicateMember, m.MemberID)
		}
		seen[m.MemberID] = struct{}{}
	}

	g.subs = make([][]int, len(g.members))
	g.subscribers = make([][]int, len(g.topics))
	for mi, m := range g.members {
		var ts []int
		for _, name := range m.Topics {
			if t, ok := g.byName[name]; ok {
				ts = append(ts, t)
			}
		}
		slices.Sort(ts)
		ts = slices.Compact(ts)
		g.subs[mi] = ts
		for _, t := range ts {
			g.subscribers[t] = append(g.subscribers[t], mi)
		}
	}
	return g, nil
}

func (g *group) numPartitions() int { return g.base[len(g.topics)] }

// topicOf returns the topic index of global partition index p.
func (g *group) topicOf(p int) int {
	// base is ascending; the topic is the last t with base[t] <= p. Empty
	// topics share their base with the next one, hence the search for the
	// first base above p.
	return sort.SearchInts(g.base, p+1) - 1
}

func (g *group) partition(p int) TopicPartition {
	t := g.topicOf(p)
	return TopicPartition{Topic: g.topics[t].Name, Partition: int32(p - g.base[t])}
}

// index returns the global index of tp, or false if the topic is not in the
// metadata or the partition is out of range.
func (g *group) index(tp TopicPartition) (int, bool) {
	t, ok := g.byName[tp.Topic]
	if !ok || tp.Partition < 0 || tp.Partition >= g.topics[t].Partitions {
		return 0, false
	}
	return g.base[t] + int(tp.Partition), true
}

func (g *group) subscribed(m, t int) bool {
	_, ok := slices.BinarySearch(g.subs[m], t)
	return ok
}

// result turns owner (global partition index → member index, or -1) into
// a GroupAssignment with an entry for every member.
func (g *group) result(owner []int) GroupAssignment {
	out := make(GroupAssignment, len(g.members))
	counts := make([]int, len(g.members))
	for _, m := range owner {
		if m >= 0 {
			counts[m]++
		}
	}
	for mi, m := range g.members {
		out[m.MemberID] = make([]TopicPartition, 0, counts[mi])
	}
	for p, m := range owner {
		if m >= 0 {
			id := g.members[m].MemberID
			out[id] = append(out[id], g.partition(p))
		}
	}
	return out
}

// newOwner returns an owner table with every partition unassigned.
func (g *group) newOwner() []int {
	owner := make([]int, g.numPartitions())
	for i := range owner {
		owner[i] = -1
	}
	return owner
}
