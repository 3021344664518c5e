package cli

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/groups/assign"
)

// ErrUnknownAssignor: a classic group protocol that groups/assign does not
// serve client side.
var ErrUnknownAssignor = errors.New("cli: unknown assignor")

// classicAssignors are the protocol names a classic group member may offer
// (KIP-848's "uniform" runs on the broker only).
var classicAssignors = []string{
	assign.RangeName, assign.RoundRobinName, assign.StickyName, assign.CooperativeStickyName,
}

// assignBalancer is a kgo.GroupBalancer that runs one of wren's own
// assignors (groups/assign) when this client leads a classic group, so a
// group's assignment is computed by the same code whether the broker (for
// KIP-848 groups) or a wren client (classic groups) computes it. The
// subscription and assignment bytes are Kafka's ConsumerProtocol, written
// as the Java client writes them for the same protocol name, so wren,
// franz-go, Java and librdkafka members share a group and any of them may
// lead it.
//
// One balancer serves one client (one member): for "sticky" it remembers
// the member's last assignment, as Kafka's StickyAssignor does.
type assignBalancer struct {
	name     string
	assignor assign.Assignor

	mu sync.Mutex
	// sticky only. lastAssignment is the member's latest assignment, as
	// ParseSyncAssignment decoded it, and lastGeneration the generation
	// it was assigned in (DefaultGeneration until known). fresh is set
	// when an assignment was parsed since the last JoinGroupMetadata,
	// whose generation argument is then the assignment's: franz-go stores
	// a join's generation before the sync that follows it.
	lastAssignment []assign.TopicPartition
	lastGeneration int32
	fresh          bool
}

var _ kgo.GroupBalancer = (*assignBalancer)(nil)

// newAssignBalancer returns the balancer of the classic protocol name:
// range, roundrobin, sticky or cooperative-sticky.
func newAssignBalancer(name string) (*assignBalancer, error) {
	if !slices.Contains(classicAssignors, name) {
		return nil, fmt.Errorf("%w: %q", ErrUnknownAssignor, name)
	}
	a, ok := assign.ByName(name)
	if !ok {
		panic(fmt.Sprintf("cli: groups/assign has no assignor %q of classicAssignors", name))
	}
	return &assignBalancer{name: name, assignor: a, lastGeneration: assign.DefaultGeneration}, nil
}

// ProtocolName is the JoinGroup protocol name, which is the assignor's name.
func (b *assignBalancer) ProtocolName() string { return b.name }

// IsCooperative tells franz-go to revoke only what it lost (KIP-429) and
// rejoin, rather than everything before each join: true for
// cooperative-sticky alone.
func (b *assignBalancer) IsCooperative() bool { return b.name == assign.CooperativeStickyName }

// JoinGroupMetadata encodes the subscription as the Java client does for
// this protocol (assign.EncodeSubscription): cooperative-sticky claims the
// current assignment in OwnedPartitions, at this generation; sticky claims
// its last assignment, at the generation it was assigned in, in its user
// data. Range and roundrobin are eager: the Java client revokes everything
// before it joins, so it claims nothing; neither do we, so that what a
// member claims is what it owns, whoever reads it.
//
// franz-go passes an eager member no current assignment: it forgets it
// when it revokes everything before rejoining, which is right for
// OwnedPartitions but would make sticky claim nothing and move partitions
// at every rebalance. Kafka's StickyAssignor remembers the assignment
// itself (onAssignment); sticky here does the same with what
// ParseSyncAssignment decoded.
func (b *assignBalancer) JoinGroupMetadata(topics []string, current map[string][]int32, generation int32) []byte {
	m := assign.Member{Topics: topics, Generation: generation}
	switch b.name {
	case assign.CooperativeStickyName:
		m.Owned = flatten(current)
	case assign.StickyName:
		b.mu.Lock()
		if b.fresh {
			b.lastGeneration, b.fresh = generation, false
		}
		m.Owned, m.Generation = slices.Clone(b.lastAssignment), b.lastGeneration
		b.mu.Unlock()
		if len(current) > 0 {
			// Not after an eager revoke: franz-go knows best.
			m.Owned, m.Generation = flatten(current), generation
		}
	}
	return assign.EncodeSubscription(b.name, m)
}

func flatten(tps map[string][]int32) []assign.TopicPartition {
	var out []assign.TopicPartition
	for t, ps := range tps {
		for _, p := range ps {
			out = append(out, assign.TopicPartition{Topic: t, Partition: p})
		}
	}
	return out
}

// ParseSyncAssignment decodes the leader's assignment for this member.
func (b *assignBalancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	tps, err := assign.DecodeAssignment(assignment)
	if err != nil {
		return nil, fmt.Errorf("cli: %s assignment: %w", b.name, err)
	}
	if b.name == assign.StickyName {
		b.mu.Lock()
		b.lastAssignment, b.fresh = tps, true
		b.mu.Unlock()
	}
	out := make(map[string][]int32)
	for _, tp := range tps {
		out[tp.Topic] = append(out[tp.Topic], tp.Partition)
	}
	return out, nil
}

// MemberBalancer decodes every member's subscription. A malformed one is an
// error, which makes franz-go fail this join rather than assign from
// guesses; it returns the union of the members' topics, whose partition
// counts franz-go then passes to Balance.
func (b *assignBalancer) MemberBalancer(joined []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	mb := &assignMemberBalancer{balancer: b, members: make([]assign.Member, 0, len(joined))}
	topics := make(map[string]struct{})
	for _, jm := range joined {
		var instanceID string
		if jm.InstanceID != nil {
			instanceID = *jm.InstanceID
		}
		m, err := assign.DecodeSubscription(b.name, jm.MemberID, instanceID, jm.ProtocolMetadata)
		if err != nil {
			return nil, nil, fmt.Errorf("cli: %s subscription of member %s: %w", b.name, jm.MemberID, err)
		}
		for _, t := range m.Topics {
			topics[t] = struct{}{}
		}
		mb.members = append(mb.members, m)
	}
	return mb, topics, nil
}

// assignMemberBalancer is one rebalance's decoded members.
type assignMemberBalancer struct {
	balancer *assignBalancer
	members  []assign.Member
}

var _ kgo.GroupMemberBalancerOrError = (*assignMemberBalancer)(nil)

// BalanceOrError runs the assignor on the partition counts franz-go
// loaded. An assignor error (a duplicate member id from a buggy
// coordinator, more than assign.MaxPartitions partitions) fails the join.
func (mb *assignMemberBalancer) BalanceOrError(counts map[string]int32) (kgo.IntoSyncAssignment, error) {
	topics := make([]assign.Topic, 0, len(counts))
	for name, n := range counts {
		topics = append(topics, assign.Topic{Name: name, Partitions: n})
	}
	// The assignors do not depend on the order; sorting keeps any error
	// message the same from run to run.
	// sort.Slice, not slices.SortFunc: no pdqsort instantiated for
	// assign.Topic (groups/assign sorts it the same way).
	sort.Slice(topics, func(i, j int) bool { return topics[i].Name < topics[j].Name })
	ga, err := mb.balancer.assignor(mb.members, topics)
	if err != nil {
		return nil, fmt.Errorf("cli: %s assignment: %w", mb.balancer.name, err)
	}
	return syncAssignment(ga), nil
}

// Balance is GroupMemberBalancer's; franz-go calls BalanceOrError instead.
// A nil plan is what franz-go reports as a failed balance, if it ever
// calls this.
func (mb *assignMemberBalancer) Balance(counts map[string]int32) kgo.IntoSyncAssignment {
	into, err := mb.BalanceOrError(counts)
	if err != nil {
		return nil
	}
	return into
}

// syncAssignment is a computed assignment ready for SyncGroup.
type syncAssignment assign.GroupAssignment

// IntoSyncAssignment encodes each member's partitions, members sorted by
// id so that the request is the same bytes for the same assignment. Every
// member gets an entry, empty or not: the assignor gives each one.
func (a syncAssignment) IntoSyncAssignment() []kmsg.SyncGroupRequestGroupAssignment {
	ids := make([]string, 0, len(a))
	for id := range a {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]kmsg.SyncGroupRequestGroupAssignment, 0, len(ids))
	for _, id := range ids {
		sa := kmsg.NewSyncGroupRequestGroupAssignment()
		sa.MemberID = id
		sa.MemberAssignment = assign.EncodeAssignment(a[id])
		out = append(out, sa)
	}
	return out
}
