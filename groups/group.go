package groups

import (
	"bytes"
	"fmt"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// GroupState is a classic group's state. Its String is the name
// DescribeGroups and ListGroups report.
type GroupState int8

const (
	// Empty: no members; the group may still hold committed offsets.
	Empty GroupState = iota
	// PreparingRebalance: the join phase; members must send JoinGroup.
	PreparingRebalance
	// CompletingRebalance: the join phase ended; the group waits for the
	// leader's SyncGroup with the assignment.
	CompletingRebalance
	// Stable: the generation's assignment is known and stored.
	Stable
	// Dead: deleted, expired or unloaded; the object is no longer used.
	Dead
)

var groupStateNames = [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}

func (s GroupState) String() string {
	if s >= 0 && int(s) < len(groupStateNames) {
		return groupStateNames[s]
	}
	return fmt.Sprintf("GroupState(%d)", int8(s))
}

// canFollow is Kafka's table of valid previous states; any other
// transition is a bug.
func (s GroupState) canFollow(prev GroupState) bool {
	switch s {
	case Empty:
		return prev == PreparingRebalance
	case PreparingRebalance:
		return prev == Stable || prev == CompletingRebalance || prev == Empty
	case CompletingRebalance:
		return prev == PreparingRebalance
	case Stable:
		return prev == CompletingRebalance
	case Dead:
		return true
	}
	return false
}

// member is one member of a group.
type member struct {
	memberID           string
	instanceID         string // "" for a dynamic member
	clientID           string
	clientHost         string
	rebalanceTimeoutMs int32
	sessionTimeoutMs   int32
	protocolType       string
	protocols          []Protocol // preference order
	// assignment is what the leader gave this member for the current
	// generation; nil until the leader's SyncGroup.
	assignment []byte

	// isNew is true from a member's first JoinGroup until its join phase
	// ends: it has no member id to heartbeat with, so its session deadline
	// is the new-member join timeout instead.
	isNew bool
	// A JoinGroup waiting for the join phase to end.
	awaitingJoin  bool
	joinRequestID uint64
	// A SyncGroup waiting for the leader's assignment.
	awaitingSync  bool
	syncRequestID uint64
	// sessionDeadlineMs: the member is removed at this time unless it
	// heartbeats, or has a request waiting (which proves it alive).
	sessionDeadlineMs int64
}

// sessionExempt is Kafka's hasSatisfiedHeartbeat: a member waiting for a
// JoinGroup or SyncGroup answer is alive by definition, unless it is new.
func (m *member) sessionExempt() bool {
	return !m.isNew && (m.awaitingJoin || m.awaitingSync)
}

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	panic(fmt.Sprintf("groups: member %s does not support the group's protocol %q", m.memberID, protocol))
}

// matches reports whether protocols is exactly what m last joined with.
func (m *member) matches(protocols []Protocol) bool {
	return slices.EqualFunc(m.protocols, protocols, func(a, b Protocol) bool {
		return a.Name == b.Name && bytes.Equal(a.Metadata, b.Metadata)
	})
}

// Group is one classic group's state: its members, generation and
// committed offsets. The Coordinator owns it and changes it; callers read
// it through Describe and Offsets.
type Group struct {
	id string
	// Invariant: state only changes through transitionTo.
	state GroupState
	// stateTimestampMs is when state was entered; -1 if unknown (loaded
	// from a record without it). An Empty group's offsets expire counted
	// from it.
	stateTimestampMs int64
	// Invariant: generation never decreases while the group lives.
	generation   int32
	protocolType string
	protocol     string // selected at the end of a join phase; "" if none
	// Invariant: leaderID == "" if and only if members is empty, and
	// otherwise names a member.
	leaderID string
	// members in join order: the first is the leader when the leader
	// must be chosen again, so the choice is deterministic.
	members       []*member
	memberByID    map[string]*member
	staticMembers map[string]string // instance id → member id
	// pendingMembers were given a member id with MEMBER_ID_REQUIRED
	// (KIP-394) and have until the deadline (ms) to join with it.
	pendingMembers map[string]int64
	// pendingSync holds the members that have not sent SyncGroup for the
	// current generation; those still missing at syncDeadlineMs are
	// removed.
	pendingSync    map[string]struct{}
	syncDeadlineMs int64
	// Invariant: numAwaitingJoin == number of members with awaitingJoin.
	numAwaitingJoin int
	// The join phase (PreparingRebalance) ends at joinDeadlineMs, or as
	// soon as every member has joined unless initialDelay is set.
	joinDeadlineMs int64
	// initialDelay: this join phase started from Empty and waits out
	// group.initial.rebalance.delay.ms; each period in which a new member
	// arrived (newMemberAdded) earns another, within
	// initialDelayRemainingMs of the rebalance timeout.
	initialDelay            bool
	newMemberAdded          bool
	initialDelayRemainingMs int64
	// subscribedTopics is the union of the consumer-protocol members'
	// topics for this generation; nil when unknown (not a consumer group,
	// or metadata that does not parse).
	subscribedTopics map[string]struct{}
	offsets          map[TopicPartition]OffsetAndMetadata
	// consumer is non-nil for a KIP-848 consumer group (consumer.go);
	// then state is Empty or Stable (members or none), and the classic
	// fields above other than id, offsets and stateTimestampMs are unused.
	consumer *consumerGroup
}

func newGroup(id string, nowMs int64) *Group {
	return &Group{
		id:               id,
		state:            Empty,
		stateTimestampMs: nowMs,
		memberByID:       map[string]*member{},
		staticMembers:    map[string]string{},
		pendingMembers:   map[string]int64{},
		pendingSync:      map[string]struct{}{},
		offsets:          map[TopicPartition]OffsetAndMetadata{},
	}
}

func (g *Group) transitionTo(s GroupState, nowMs int64) {
	if !s.canFollow(g.state) {
		panic(fmt.Sprintf("groups: group %q cannot go from %s to %s", g.id, g.state, s))
	}
	g.state = s
	g.stateTimestampMs = nowMs
}

// add makes m a member.
func (g *Group) add(m *member) {
	if _, dup := g.memberByID[m.memberID]; dup {
		panic(fmt.Sprintf("groups: group %q already has member %s", g.id, m.memberID))
	}
	if m.instanceID != "" {
		if old, dup := g.staticMembers[m.instanceID]; dup {
			panic(fmt.Sprintf("groups: group %q instance %s is already member %s", g.id, m.instanceID, old))
		}
		g.staticMembers[m.instanceID] = m.memberID
	}
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	if g.leaderID == "" {
		g.leaderID = m.memberID
	}
	g.members = append(g.members, m)
	g.memberByID[m.memberID] = m
	if m.awaitingJoin {
		g.numAwaitingJoin++
	}
	delete(g.pendingMembers, m.memberID)
}

// drop takes m out of the group. Its waiting requests must have been
// answered.
func (g *Group) drop(m *member) {
	if m.awaitingJoin || m.awaitingSync {
		panic(fmt.Sprintf("groups: dropping member %s of %q with a request waiting", m.memberID, g.id))
	}
	i := slices.Index(g.members, m)
	if i < 0 {
		panic(fmt.Sprintf("groups: dropping member %s not in %q", m.memberID, g.id))
	}
	g.members = slices.Delete(g.members, i, i+1)
	delete(g.memberByID, m.memberID)
	if m.instanceID != "" && g.staticMembers[m.instanceID] == m.memberID {
		delete(g.staticMembers, m.instanceID)
	}
	delete(g.pendingSync, m.memberID)
	if g.leaderID == m.memberID {
		g.leaderID = ""
		if len(g.members) > 0 {
			g.leaderID = g.members[0].memberID
		}
	}
}

// allMembersJoined is Kafka's hasAllMembersJoined: the join phase may end
// early.
func (g *Group) allMembersJoined() bool {
	return g.numAwaitingJoin == len(g.members) && len(g.pendingMembers) == 0
}

// rebalanceTimeoutMs is the longest rebalance timeout of the members.
func (g *Group) rebalanceTimeoutMs() int64 {
	var t int32
	for _, m := range g.members {
		t = max(t, m.rebalanceTimeoutMs)
	}
	return int64(t)
}

// validProtocols reports whether a member's protocol list can be used:
// non-empty, named, without repeats.
func validProtocols(protocolType string, protocols []Protocol) bool {
	if protocolType == "" || len(protocols) == 0 {
		return false
	}
	for i, p := range protocols {
		if p.Name == "" {
			return false
		}
		for _, q := range protocols[:i] {
			if q.Name == p.Name {
				return false
			}
		}
	}
	return true
}

// supportsProtocols is Kafka's check that a joining member can be in the
// group: same protocol type, and at least one protocol every member
// (counting the joiner's old list if it is a member) supports.
func (g *Group) supportsProtocols(protocolType string, protocols []Protocol) bool {
	if !validProtocols(protocolType, protocols) {
		return false
	}
	if g.state == Empty {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range protocols {
		if g.allSupport(p.Name) {
			return true
		}
	}
	return false
}

func (g *Group) allSupport(name string) bool {
	for _, m := range g.members {
		if !slices.ContainsFunc(m.protocols, func(p Protocol) bool { return p.Name == name }) {
			return false
		}
	}
	return true
}

// selectProtocol picks the group's protocol: among those every member
// supports, the one most members prefer. Ties go to the earliest in the
// first member's preference list, so the choice is deterministic.
func (g *Group) selectProtocol() string {
	if len(g.members) == 0 {
		panic(fmt.Sprintf("groups: selecting a protocol for %q without members", g.id))
	}
	var candidates []string
	for _, p := range g.members[0].protocols {
		if g.allSupport(p.Name) {
			candidates = append(candidates, p.Name)
		}
	}
	if len(candidates) == 0 {
		panic(fmt.Sprintf("groups: no protocol common to the %d members of %q", len(g.members), g.id))
	}
	votes := make(map[string]int, len(candidates))
	for _, m := range g.members {
		for _, p := range m.protocols {
			if slices.Contains(candidates, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best := candidates[0]
	for _, name := range candidates[1:] {
		if votes[name] > votes[best] {
			best = name
		}
	}
	return best
}

// consumerTopics parses consumer-protocol metadata (ConsumerProtocolSubscription).
func consumerTopics(metadata []byte) ([]string, bool) {
	var s kmsg.ConsumerMemberMetadata
	if err := s.ReadFrom(metadata); err != nil || s.Version < 0 {
		return nil, false
	}
	return s.Topics, true
}

// sameSubscription decides whether a static member that rejoins changed
// what it asks for. For consumers only the topics count: a restarted
// consumer sends different owned partitions and generation (KIP-429) but
// needs no rebalance for that.
func (g *Group) sameSubscription(old, new []byte) bool {
	if g.protocolType == ConsumerProtocolType {
		a, okA := consumerTopics(old)
		b, okB := consumerTopics(new)
		if okA && okB {
			slices.Sort(a)
			slices.Sort(b)
			return slices.Equal(slices.Compact(a), slices.Compact(b))
		}
	}
	return bytes.Equal(old, new)
}

func (g *Group) computeSubscribedTopics() {
	g.subscribedTopics = nil
	if g.protocolType != ConsumerProtocolType {
		return
	}
	set := map[string]struct{}{}
	for _, m := range g.members {
		topics, ok := consumerTopics(m.metadataFor(g.protocol))
		if !ok {
			return
		}
		for _, t := range topics {
			set[t] = struct{}{}
		}
	}
	g.subscribedTopics = set
}

// validateCurrentMember is Kafka's check of a request's member: with an
// instance id, it must map to this member id (else FENCED_INSTANCE_ID: a
// newer instance took over); without, the member must exist.
func (g *Group) validateCurrentMember(memberID, instanceID string) int16 {
	if instanceID != "" {
		current, ok := g.staticMembers[instanceID]
		switch {
		case !ok:
			return errUnknownMemberID
		case current != memberID:
			return errFencedInstanceID
		}
		return 0
	}
	if g.memberByID[memberID] == nil {
		return errUnknownMemberID
	}
	return 0
}

// metadataValue is the record of the group's current generation.
func (g *Group) metadataValue() *GroupMetadataValue {
	v := &GroupMetadataValue{
		ProtocolType:            g.protocolType,
		Generation:              g.generation,
		Protocol:                g.protocol,
		Leader:                  g.leaderID,
		CurrentStateTimestampMs: g.stateTimestampMs,
		Members:                 make([]MemberMetadataValue, len(g.members)),
	}
	for i, m := range g.members {
		v.Members[i] = MemberMetadataValue{
			MemberID:           m.memberID,
			InstanceID:         m.instanceID,
			ClientID:           m.clientID,
			ClientHost:         m.clientHost,
			RebalanceTimeoutMs: m.rebalanceTimeoutMs,
			SessionTimeoutMs:   m.sessionTimeoutMs,
			Subscription:       m.metadataFor(g.protocol),
			Assignment:         nonNil(m.assignment),
		}
	}
	return v
}

func (g *Group) sortedTopicPartitions() []TopicPartition {
	tps := make([]TopicPartition, 0, len(g.offsets))
	for tp := range g.offsets {
		tps = append(tps, tp)
	}
	sortTopicPartitions(tps)
	return tps
}

func sortTopicPartitions(tps []TopicPartition) {
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
}

// MemberDescription is one member as Group.Describe reports it.
type MemberDescription struct {
	MemberID           string
	InstanceID         string
	ClientID           string
	ClientHost         string
	SessionTimeoutMs   int32
	RebalanceTimeoutMs int32
	Protocols          []Protocol
	Assignment         []byte // nil until the leader's SyncGroup
	AwaitingJoin       bool
	AwaitingSync       bool
}

// GroupDescription is a copy of a group's state.
type GroupDescription struct {
	Group            string
	State            GroupState
	StateTimestampMs int64
	Generation       int32
	ProtocolType     string
	Protocol         string
	LeaderID         string
	Members          []MemberDescription // in join order
	PendingMembers   []string            // sorted
}

// Describe returns a copy of the group's state.
func (g *Group) Describe() GroupDescription {
	d := GroupDescription{
		Group:            g.id,
		State:            g.state,
		StateTimestampMs: g.stateTimestampMs,
		Generation:       g.generation,
		ProtocolType:     g.protocolType,
		Protocol:         g.protocol,
		LeaderID:         g.leaderID,
	}
	for _, m := range g.members {
		d.Members = append(d.Members, MemberDescription{
			MemberID:           m.memberID,
			InstanceID:         m.instanceID,
			ClientID:           m.clientID,
			ClientHost:         m.clientHost,
			SessionTimeoutMs:   m.sessionTimeoutMs,
			RebalanceTimeoutMs: m.rebalanceTimeoutMs,
			Protocols:          slices.Clone(m.protocols),
			Assignment:         m.assignment,
			AwaitingJoin:       m.awaitingJoin,
			AwaitingSync:       m.awaitingSync,
		})
	}
	for id := range g.pendingMembers {
		d.PendingMembers = append(d.PendingMembers, id)
	}
	slices.Sort(d.PendingMembers)
	return d
}

// CommittedOffset is one committed partition as Group.Offsets reports it.
type CommittedOffset struct {
	TopicPartition
	OffsetAndMetadata
}

// Offsets returns the group's committed offsets sorted by topic and
// partition.
func (g *Group) Offsets() []CommittedOffset {
	tps := g.sortedTopicPartitions()
	out := make([]CommittedOffset, len(tps))
	for i, tp := range tps {
		out[i] = CommittedOffset{tp, g.offsets[tp]}
	}
	return out
}
