package groups

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/groups/assign"
)

// This file is the KIP-848 consumer group protocol: the coordinator owns
// the assignment. Each member heartbeats (ConsumerGroupHeartbeat) with its
// member epoch and what it owns; the coordinator keeps three things per
// group, as Kafka does:
//
//   - the group epoch, bumped whenever what the assignment depends on
//     changes (a member joins or leaves, a subscription changes, a
//     subscribed topic's partition count changes);
//   - the target assignment, computed by the group's server-side assignor
//     for one group epoch (the assignment epoch);
//   - each member's current assignment and member epoch, which converge
//     towards the target one heartbeat at a time: a member first gives up
//     (revokes) what the target takes from it, keeping its epoch, and only
//     then advances to the target's epoch; a partition the target gives it
//     is withheld while another member still owns it (unreleased).
//
// So no partition is ever owned by two members at once, which is the
// protocol's safety property, and no member waits for another to rejoin.
//
// All of it is stored in __consumer_offsets with Kafka's records (group
// metadata, member metadata, target assignment, current assignment), so a
// new coordinator carries on where the old one stopped: members keep their
// epochs and assignments across a coordinator change or a restart.

// Member states, with Kafka's MemberState values as stored.
const (
	memberStable     int8 = 0
	memberUnrevoked  int8 = 1 // must revoke partitionsPendingRevocation first
	memberUnreleased int8 = 2 // waits for partitions other members still own
)

// Kafka's error codes the consumer protocol adds.
var (
	errInvalidRequest       = kerr.InvalidRequest.Code
	errFencedMemberEpoch    = kerr.FencedMemberEpoch.Code
	errStaleMemberEpoch     = kerr.StaleMemberEpoch.Code
	errUnsupportedAssignor  = kerr.UnsupportedAssignor.Code
	errUnreleasedInstanceID = kerr.UnreleasedInstanceID.Code
	errInvalidRegex         = kerr.InvalidRegularExpression.Code
	errGroupSubscribed      = kerr.GroupSubscribedToTopic.Code
)

// tpID is one partition by topic id.
type tpID struct {
	topic     [16]byte
	partition int32
}

// partSet is a set of partitions.
type partSet map[tpID]struct{}

func partSetOf(tps []TopicPartitions) partSet {
	s := partSet{}
	for _, t := range tps {
		for _, p := range t.Partitions {
			s[tpID{t.TopicID, p}] = struct{}{}
		}
	}
	return s
}

// list returns s sorted by topic id, then partition: the stored and wire
// form.
func (s partSet) list() []TopicPartitions {
	keys := make([]tpID, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	// sort.Slice, not slices.SortFunc: run when an assignment changes or
	// is described, never per record, and a generic sort of tpID would
	// instantiate pdqsort for it (9 KiB of the binary).
	sort.Slice(keys, func(i, j int) bool {
		if c := bytes.Compare(keys[i].topic[:], keys[j].topic[:]); c != 0 {
			return c < 0
		}
		return keys[i].partition < keys[j].partition
	})
	out := []TopicPartitions{}
	for _, k := range keys {
		if n := len(out); n > 0 && out[n-1].TopicID == k.topic {
			out[n-1].Partitions = append(out[n-1].Partitions, k.partition)
			continue
		}
		out = append(out, TopicPartitions{TopicID: k.topic, Partitions: []int32{k.partition}})
	}
	return out
}

func (s partSet) equal(o partSet) bool {
	if len(s) != len(o) {
		return false
	}
	for k := range s {
		if _, ok := o[k]; !ok {
			return false
		}
	}
	return true
}

// consumerMember is one member of a consumer group.
type consumerMember struct {
	id         string
	instanceID string
	rackID     string
	clientID   string
	clientHost string
	topics     []string // subscribed by name, sorted
	regex      string   // "" if none
	// re is regex compiled (compiledRegex), reFor the regex it was
	// compiled from; nil if it does not compile (a loaded record).
	re    *regexp.Regexp
	reFor string
	// describable is the TopicDescribable of the member's latest
	// heartbeat on this coordinator (nil: every topic). loadedHeld is,
	// for a member loaded from the log and until that heartbeat, the ids
	// of the topics it holds or is assigned partitions of: who it is, and
	// so which topics it may describe, is not in the log.
	describable func(topic string) bool
	loadedHeld  map[[16]byte]bool
	// regexTopics caches what the regex resolves to (sorted), good while
	// regexGen is the coordinator's topicsGen and regexFor the regex.
	regexTopics []string
	regexGen    uint64
	regexFor    string
	regexCached bool

	rebalanceTimeoutMs int32
	serverAssignor     string // "" if none

	epoch         int32
	previousEpoch int32
	state         int8
	assigned      partSet
	pending       partSet // pending revocation
	// assignedAt is the member epoch each partition of assigned and
	// pending was given in (KIP-1251's assignment epoch), for commits
	// from an older epoch. Not stored: a loaded member's partitions count
	// from its loaded epoch.
	assignedAt map[tpID]int32

	sessionDeadlineMs int64
	// revokeDeadlineMs: a member in memberUnrevoked that has not revoked
	// by then is removed (its rebalance timeout). 0 when not revoking.
	revokeDeadlineMs int64
	// leftStatic: a static member that left with StaticLeaveMemberEpoch;
	// it keeps its partitions until its session ends.
	leftStatic bool
}

func (m *consumerMember) metadataValue() *ConsumerGroupMemberMetadataValue {
	return &ConsumerGroupMemberMetadataValue{
		InstanceID: m.instanceID, RackID: m.rackID, ClientID: m.clientID, ClientHost: m.clientHost,
		SubscribedTopicNames: slices.Clone(m.topics), SubscribedTopicRegex: m.regex,
		RebalanceTimeoutMs: m.rebalanceTimeoutMs, ServerAssignor: m.serverAssignor,
	}
}

func (m *consumerMember) assignmentValue() *ConsumerGroupCurrentMemberAssignmentValue {
	return &ConsumerGroupCurrentMemberAssignmentValue{
		MemberEpoch: m.epoch, PreviousMemberEpoch: m.previousEpoch, State: m.state,
		AssignedPartitions: m.assigned.list(), PartitionsPendingRevocation: m.pending.list(),
	}
}

// consumerGroup is the KIP-848 part of a Group (Group.consumer); the
// Group keeps the id, the committed offsets, and state Empty or Stable
// (members or none) for the code the two protocols share.
type consumerGroup struct {
	epoch           int32
	assignmentEpoch int32
	members         map[string]*consumerMember
	target          map[string]partSet
	static          map[string]string // instance id → member id
	// owner is who holds each partition now, as assigned or pending
	// revocation: a partition the target moves stays here until the old
	// member revoked it.
	owner map[tpID]string
	// subscription is the topics the target was computed for (name →
	// id and partition count); when it differs from what the members
	// subscribe to now, the group epoch is bumped.
	subscription map[string]TopicMeta
	// assignor is the server-side assignor of the last target.
	assignor string
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{
		members: map[string]*consumerMember{}, target: map[string]partSet{},
		static: map[string]string{}, owner: map[tpID]string{}, subscription: map[string]TopicMeta{},
	}
}

func (cg *consumerGroup) sortedMemberIDs() []string {
	ids := make([]string, 0, len(cg.members))
	for id := range cg.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// stateName is the group's state as ListGroups and ConsumerGroupDescribe
// report it.
func (cg *consumerGroup) stateName() string {
	switch {
	case len(cg.members) == 0:
		return "Empty"
	case cg.epoch != cg.assignmentEpoch:
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.state != memberStable || m.epoch != cg.assignmentEpoch {
			return "Reconciling"
		}
	}
	return "Stable"
}

// setAssignment replaces m's assigned and pending partitions, keeping the
// owner index.
func (cg *consumerGroup) setAssignment(m *consumerMember, assigned, pending partSet) {
	for k := range m.assigned {
		if cg.owner[k] == m.id {
			delete(cg.owner, k)
		}
	}
	for k := range m.pending {
		if cg.owner[k] == m.id {
			delete(cg.owner, k)
		}
	}
	m.assigned, m.pending = assigned, pending
	for k := range m.assignedAt {
		_, a := assigned[k]
		_, p := pending[k]
		if !a && !p {
			delete(m.assignedAt, k)
		}
	}
	if m.assignedAt == nil {
		m.assignedAt = map[tpID]int32{}
	}
	for k := range assigned {
		cg.owner[k] = m.id
		if _, ok := m.assignedAt[k]; !ok {
			m.assignedAt[k] = m.epoch
		}
	}
	for k := range pending {
		cg.owner[k] = m.id
	}
}

// isConsumer reports whether g is a KIP-848 consumer group.
func (g *Group) isConsumer() bool { return g.consumer != nil }

// UpdateTopics gives the coordinator the cluster's topics, replacing what
// it had. The driver calls it after CompleteLoad and whenever the
// metadata changes. A classic group subscribed to a topic whose partition
// count changed rebalances (PartitionCountChanged); a consumer group whose
// subscribed topics changed (created, deleted, grown) gets a new epoch and
// target assignment, which its members pick up on their next heartbeat.
func (c *Coordinator) UpdateTopics(topics []TopicMeta, nowMs int64) {
	old := c.topics
	c.topicsGen++
	c.topics = make(map[string]TopicMeta, len(topics))
	c.topicByID = make(map[[16]byte]TopicMeta, len(topics))
	for _, t := range topics {
		c.topics[t.Name] = t
		c.topicByID[t.ID] = t
	}
	if c.status != active {
		return
	}
	if old == nil {
		// The first topics after a load: the loaded targets were computed
		// for what the members subscribe to now, as far as we know (the
		// log does not keep the partition counts).
		for _, id := range c.sortedGroupIDs() {
			if g := c.groups[id]; g.isConsumer() && g.consumer.subscription == nil {
				g.consumer.subscription = c.groupSubscription(g)
			}
		}
		return
	}
	var grown []string
	for name, t := range c.topics {
		if o, ok := old[name]; ok && o.ID == t.ID && o.Partitions != t.Partitions {
			grown = append(grown, name)
		}
	}
	slices.Sort(grown)
	for _, name := range grown {
		c.PartitionCountChanged(name, nowMs)
	}
	for _, id := range c.sortedGroupIDs() {
		if g := c.groups[id]; g.isConsumer() && len(g.consumer.members) > 0 {
			c.maybeBumpForSubscription(g)
			c.maybeUpdateTarget(g)
		}
	}
}

// subscribedTopics resolves what m subscribes to against the topics that
// exist: its names, and every topic its regex matches in full that the
// member may describe. As Kafka's GroupMetadataManager resolves a regex
// over every topic name in the metadata image, internal ones included: a
// user topic named __orders is matched like any other, and a regex that
// names __consumer_offsets gets it (a pattern such as ".*" does too, in
// Kafka as here), if the member may describe it.
func (c *Coordinator) subscribedTopics(m *consumerMember) []string {
	var out []string
	for _, name := range m.topics {
		if _, ok := c.topics[name]; ok {
			out = append(out, name)
		}
	}
	for _, name := range c.regexTopics(m) {
		if !slices.Contains(m.topics, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// regexTopics is what m's regex resolves to: the topics it matches in
// full that the member's principal may DESCRIBE (Kafka's
// filterTopicDescribeAuthorizedTopics), sorted. Kafka judges a group's
// regexes by the principal of the member whose heartbeat refreshed them;
// here each member's regex is judged by its own principal, which is never
// more permissive. A member loaded from the log, whose principal is not
// known until its first heartbeat here, gets only the matched topics it
// already holds partitions of or is assigned: an earlier coordinator
// found it might describe those. The result is cached until the topics,
// the regex or the member's rights (a heartbeat) change.
func (c *Coordinator) regexTopics(m *consumerMember) []string {
	if m.regex == "" {
		return nil
	}
	if m.regexCached && m.regexGen == c.topicsGen && m.regexFor == m.regex {
		return m.regexTopics
	}
	var out []string
	if re := m.compiledRegex(); re != nil {
		for name, t := range c.topics {
			if !re.MatchString(name) {
				continue
			}
			if held := m.loadedHeld; held != nil && !held[t.ID] || held == nil && m.describable != nil && !m.describable(name) {
				continue
			}
			out = append(out, name)
		}
	}
	slices.Sort(out)
	m.regexTopics, m.regexGen, m.regexFor, m.regexCached = out, c.topicsGen, m.regex, true
	return out
}

// compiledRegex compiles the member's regex once, not on every heartbeat
// of every member.
func (m *consumerMember) compiledRegex() *regexp.Regexp {
	if m.reFor != m.regex || m.re == nil && m.regex != "" {
		m.re, _ = compileSubscription(m.regex)
		m.reFor = m.regex
	}
	return m.re
}

func compileSubscription(expr string) (*regexp.Regexp, error) {
	return regexp.Compile("^(?:" + expr + ")$")
}

// groupSubscription is every topic the group's members subscribe to, with
// its metadata now.
func (c *Coordinator) groupSubscription(g *Group) map[string]TopicMeta {
	out := map[string]TopicMeta{}
	for _, m := range g.consumer.members {
		for _, name := range c.subscribedTopics(m) {
			out[name] = c.topics[name]
		}
	}
	return out
}

func sameSubscription(a, b map[string]TopicMeta) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// bumpEpoch starts a new group epoch and stores it.
func (c *Coordinator) bumpEpoch(g *Group) {
	cg := g.consumer
	cg.epoch++
	c.persist(Record{Kind: ConsumerGroupMetadataRecord, Group: g.id, ConsumerMetadata: &ConsumerGroupMetadataValue{Epoch: cg.epoch}})
}

func (c *Coordinator) maybeBumpForSubscription(g *Group) {
	cg := g.consumer
	if cg.epoch == cg.assignmentEpoch && !sameSubscription(cg.subscription, c.groupSubscription(g)) {
		c.bumpEpoch(g)
	}
}

// groupAssignor is the assignor the most members ask for, ties going to
// the one listed first in group.consumer.assignors, which is also the
// default.
func (c *Coordinator) groupAssignor(g *Group) string {
	votes := map[string]int{}
	for _, m := range g.consumer.members {
		if m.serverAssignor != "" {
			votes[m.serverAssignor]++
		}
	}
	best := c.cfg.ConsumerAssignors[0]
	for _, name := range c.cfg.ConsumerAssignors {
		if votes[name] > votes[best] {
			best = name
		}
	}
	return best
}

// maybeUpdateTarget computes the target assignment for the group epoch
// when it is behind, and stores what changed.
func (c *Coordinator) maybeUpdateTarget(g *Group) {
	cg := g.consumer
	if cg.epoch == cg.assignmentEpoch {
		return
	}
	sub := c.groupSubscription(g)
	names := make([]string, 0, len(sub))
	for name := range sub {
		names = append(names, name)
	}
	slices.Sort(names)
	topics := make([]assign.Topic, len(names))
	for i, name := range names {
		topics[i] = assign.Topic{Name: name, Partitions: sub[name].Partitions}
	}
	ids := cg.sortedMemberIDs()
	members := make([]assign.Member, len(ids))
	for i, id := range ids {
		m := cg.members[id]
		am := assign.Member{MemberID: id, InstanceID: m.instanceID, Rack: m.rackID, Topics: c.subscribedTopics(m), Generation: assign.DefaultGeneration}
		for k := range cg.target[id] {
			if t, ok := c.topicByID[k.topic]; ok && k.partition < t.Partitions {
				am.Owned = append(am.Owned, assign.TopicPartition{Topic: t.Name, Partition: k.partition})
			}
		}
		// sort.Slice: see assign's groupByTopic.
		owned := am.Owned
		sort.Slice(owned, func(i, j int) bool { return owned[i].Less(owned[j]) })
		members[i] = am
	}
	name := c.groupAssignor(g)
	fn, _ := assign.ByName(name)
	result, err := fn(members, topics)
	if err != nil {
		// The inputs are built here from validated state: an assignor
		// refusing them is a bug in this file.
		panic(fmt.Sprintf("groups: assignor %s refused group %q: %v", name, g.id, err))
	}
	for _, id := range ids {
		next := partSet{}
		for _, tp := range result[id] {
			next[tpID{sub[tp.Topic].ID, tp.Partition}] = struct{}{}
		}
		if old, ok := cg.target[id]; !ok || !old.equal(next) {
			cg.target[id] = next
			c.persist(Record{Kind: ConsumerGroupTargetAssignmentMemberRecord, Group: g.id, MemberID: id,
				TargetMember: &ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: next.list()}})
		}
	}
	cg.assignmentEpoch = cg.epoch
	cg.subscription = sub
	cg.assignor = name
	c.persist(Record{Kind: ConsumerGroupTargetAssignmentMetadataRecord, Group: g.id,
		TargetMetadata: &ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: cg.assignmentEpoch}})
}

// reconcile moves m's current assignment towards its target (Kafka's
// CurrentAssignmentBuilder). owned is what the member says it owns, nil
// if it did not say. It stores the member's assignment if it changed.
func (c *Coordinator) reconcile(g *Group, m *consumerMember, owned partSet, nowMs int64) {
	cg := g.consumer
	before := *m
	switch m.state {
	case memberStable:
		if m.epoch != cg.assignmentEpoch {
			c.computeNext(g, m, nowMs)
		}
	case memberUnrevoked:
		// The member may advance only once it owns none of what it must
		// give up; if it did not say what it owns, it still owns it.
		if owned == nil {
			return
		}
		for k := range m.pending {
			if _, ok := owned[k]; ok {
				return
			}
		}
		cg.setAssignment(m, m.assigned, partSet{})
		m.revokeDeadlineMs = 0
		c.computeNext(g, m, nowMs)
	case memberUnreleased:
		c.computeNext(g, m, nowMs)
	}
	if m.epoch != before.epoch || m.state != before.state || !m.assigned.equal(before.assigned) || !m.pending.equal(before.pending) {
		c.persist(Record{Kind: ConsumerGroupCurrentMemberAssignmentRecord, Group: g.id, MemberID: m.id, CurrentAssignment: m.assignmentValue()})
	}
}

// computeNext is one step towards the target: revoke first, then take the
// new epoch with the partitions no one else holds.
func (c *Coordinator) computeNext(g *Group, m *consumerMember, nowMs int64) {
	cg := g.consumer
	target := cg.target[m.id]
	keep, revoke := partSet{}, partSet{}
	for k := range m.assigned {
		if _, ok := target[k]; ok {
			keep[k] = struct{}{}
		} else {
			revoke[k] = struct{}{}
		}
	}
	if len(revoke) > 0 {
		cg.setAssignment(m, keep, revoke)
		m.state = memberUnrevoked
		m.revokeDeadlineMs = nowMs + int64(m.rebalanceTimeoutMs)
		return
	}
	unreleased := false
	for k := range target {
		if _, ok := keep[k]; ok {
			continue
		}
		if owner, held := cg.owner[k]; held && owner != m.id {
			unreleased = true
			continue
		}
		keep[k] = struct{}{}
	}
	if m.epoch != cg.assignmentEpoch {
		m.previousEpoch = m.epoch
		m.epoch = cg.assignmentEpoch
	}
	// After the epoch moved: partitions new to the member are given in it.
	cg.setAssignment(m, keep, partSet{})
	m.state = memberStable
	if unreleased {
		m.state = memberUnreleased
	}
}

// removeConsumerMember drops m, stores that, and starts a new epoch so
// the others take its partitions.
func (c *Coordinator) removeConsumerMember(g *Group, m *consumerMember, nowMs int64) {
	cg := g.consumer
	cg.setAssignment(m, partSet{}, partSet{})
	delete(cg.members, m.id)
	delete(cg.target, m.id)
	if m.instanceID != "" && cg.static[m.instanceID] == m.id {
		delete(cg.static, m.instanceID)
	}
	c.persist(Record{Kind: ConsumerGroupCurrentMemberAssignmentRecord, Group: g.id, MemberID: m.id})
	c.persist(Record{Kind: ConsumerGroupTargetAssignmentMemberRecord, Group: g.id, MemberID: m.id})
	c.persist(Record{Kind: ConsumerGroupMemberMetadataRecord, Group: g.id, MemberID: m.id})
	c.bumpEpoch(g)
	if len(cg.members) == 0 {
		g.state = Empty
		g.stateTimestampMs = nowMs
	}
	c.maybeUpdateTarget(g)
}

// ConsumerHeartbeat handles a ConsumerGroupHeartbeat request at nowMs:
// join, heartbeat, or leave.
func (c *Coordinator) ConsumerHeartbeat(req ConsumerHeartbeatRequest, nowMs int64) {
	resp := &ConsumerHeartbeatResponse{MemberID: req.MemberID, MemberEpoch: req.MemberEpoch, HeartbeatIntervalMs: c.cfg.ConsumerHeartbeatIntervalMs}
	defer c.respond(Response{RequestID: req.RequestID, ConsumerHB: resp})
	fail := func(code int16, msg string) {
		resp.ErrorCode, resp.ErrorMessage = code, msg
		resp.HeartbeatIntervalMs = 0
	}
	if code, msg := c.validateConsumerHeartbeat(req); code != 0 {
		fail(code, msg)
		return
	}
	if code := c.groupStatus(req.Group, false); code != 0 {
		fail(code, "")
		return
	}
	g := c.groups[req.Group]
	if req.MemberEpoch < 0 {
		fail(c.consumerLeave(g, req, nowMs), "")
		return
	}
	if g == nil {
		if req.MemberEpoch != JoinMemberEpoch {
			fail(errUnknownMemberID, "the group does not exist")
			return
		}
		if g = c.createGroup(req.Group, nowMs); g == nil {
			fail(errCoordinatorNotAvailable, "too many groups on this coordinator")
			return
		}
	}
	if !g.isConsumer() {
		if len(g.members) > 0 || g.state != Empty {
			fail(errGroupIDNotFound, fmt.Sprintf("group %s is a classic group in use", g.id))
			return
		}
		// An Empty classic group (offsets only) becomes a consumer group,
		// keeping its offsets, as in Kafka.
		if g.generation > 0 {
			c.persist(Record{Kind: GroupMetadataRecord, Group: g.id})
		}
		g.consumer = newConsumerGroup()
		g.protocolType = ConsumerProtocolType
		g.generation = 0
	}
	defer c.maybeForget(g, nowMs)
	cg := g.consumer
	if req.MemberID == "" {
		req.MemberID = c.newMemberID("")[1:] // v0: the coordinator names the member
		resp.MemberID = req.MemberID
	}
	m := cg.members[req.MemberID]
	bump := false
	switch {
	case req.MemberEpoch == JoinMemberEpoch:
		if m != nil {
			// A member that lost its state rejoins: it starts over.
			c.removeConsumerMember(g, m, nowMs)
			m = nil
		}
		if req.InstanceID != "" {
			if oldID, ok := cg.static[req.InstanceID]; ok {
				old := cg.members[oldID]
				if !old.leftStatic {
					fail(errUnreleasedInstanceID, fmt.Sprintf("static member %s is still in the group as %s", req.InstanceID, oldID))
					return
				}
				m = c.replaceStaticConsumerMember(g, old, req.MemberID)
			}
		}
		if m == nil {
			if len(cg.members) >= c.cfg.ConsumerMaxSize {
				fail(errGroupMaxSizeReached, "")
				return
			}
			m = &consumerMember{id: req.MemberID, instanceID: req.InstanceID, state: memberStable, assigned: partSet{}, pending: partSet{}}
			cg.members[m.id] = m
			if m.instanceID != "" {
				cg.static[m.instanceID] = m.id
			}
			bump = true
		}
	case m == nil:
		fail(errUnknownMemberID, "")
		return
	case req.MemberEpoch != m.epoch:
		// A response lost on the way: the member asks again from its
		// previous epoch, owning no more than it has now.
		if req.MemberEpoch == m.previousEpoch && req.HasTopicPartitions && subsetOf(partSetOf(req.TopicPartitions), m.assigned) {
			break
		}
		fail(errFencedMemberEpoch, fmt.Sprintf("member epoch %d, expected %d", req.MemberEpoch, m.epoch))
		return
	}
	if len(cg.members) > 0 {
		g.state = Stable
	}
	if c.updateConsumerMember(g, m, req) {
		bump = true
	}
	m.sessionDeadlineMs = nowMs + int64(c.cfg.ConsumerSessionTimeoutMs)
	if bump {
		c.bumpEpoch(g)
	} else {
		c.maybeBumpForSubscription(g)
	}
	c.maybeUpdateTarget(g)
	before := m.assigned
	var owned partSet
	if req.HasTopicPartitions {
		owned = partSetOf(req.TopicPartitions)
	}
	c.reconcile(g, m, owned, nowMs)
	resp.MemberID, resp.MemberEpoch = m.id, m.epoch
	if m.state != memberStable {
		resp.HeartbeatIntervalMs = reconcilingHeartbeatMs(c.cfg.ConsumerHeartbeatIntervalMs)
	}
	full := req.MemberEpoch == JoinMemberEpoch ||
		req.RebalanceTimeoutMs != -1 && (req.HasSubscribedTopicNames || req.HasSubscribedTopicRegex) && req.HasTopicPartitions
	if full || !before.equal(m.assigned) {
		a := m.assigned.list()
		resp.Assignment = &a
	}
}

// reconcilingHeartbeatMs is the heartbeat interval a member is told
// while it has partitions to revoke or waits for partitions others still
// hold. A member learns of a released partition only on a heartbeat, so
// at the full interval every step of a rebalance would cost up to one
// interval (group.consumer.heartbeat.interval.ms, 5 s by default); a
// tenth of it, for the few heartbeats a rebalance takes, keeps steady
// state as quiet as configured and rebalances quick. Clients take the
// interval from every response (KIP-848).
func reconcilingHeartbeatMs(intervalMs int32) int32 {
	return min(intervalMs, max(intervalMs/10, 50))
}

func subsetOf(a, b partSet) bool {
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

// validateConsumerHeartbeat is Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid.
func (c *Coordinator) validateConsumerHeartbeat(req ConsumerHeartbeatRequest) (int16, string) {
	switch {
	case req.Group == "":
		return errInvalidGroupID, "GroupId can't be empty."
	case req.MemberEpoch < StaticLeaveMemberEpoch:
		return errInvalidRequest, "MemberEpoch is invalid."
	case req.MemberEpoch == StaticLeaveMemberEpoch && req.InstanceID == "":
		return errInvalidRequest, "InstanceId can't be null when leaving with MemberEpoch -2."
	case req.MemberEpoch != JoinMemberEpoch && req.MemberID == "":
		return errInvalidRequest, "MemberId can't be empty."
	case req.MemberEpoch == JoinMemberEpoch && req.RebalanceTimeoutMs == -1:
		return errInvalidRequest, "RebalanceTimeoutMs must be provided in first request."
	case req.MemberEpoch == JoinMemberEpoch && !req.HasSubscribedTopicNames && !req.HasSubscribedTopicRegex:
		return errInvalidRequest, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
	case req.MemberEpoch == JoinMemberEpoch && len(req.TopicPartitions) > 0:
		return errInvalidRequest, "TopicPartitions must be empty when (re-)joining."
	case req.RebalanceTimeoutMs < -1:
		return errInvalidRequest, "RebalanceTimeoutMs is invalid."
	}
	if req.ServerAssignor != "" && !slices.Contains(c.cfg.ConsumerAssignors, req.ServerAssignor) {
		return errUnsupportedAssignor, fmt.Sprintf("ServerAssignor %s is not supported. Supported assignors: %s.",
			req.ServerAssignor, strings.Join(c.cfg.ConsumerAssignors, ", "))
	}
	if req.HasSubscribedTopicRegex && req.SubscribedTopicRegex != "" {
		if _, err := compileSubscription(req.SubscribedTopicRegex); err != nil {
			return errInvalidRegex, err.Error()
		}
	}
	if len(req.SubscribedTopicNames) > maxSubscribedTopics {
		return errInvalidRequest, fmt.Sprintf("more than %d subscribed topics", maxSubscribedTopics)
	}
	return 0, ""
}

// maxSubscribedTopics bounds a member's subscription list: it is stored
// and walked on every heartbeat.
const maxSubscribedTopics = 10000

// updateConsumerMember applies the request's non-null fields to m and
// stores its metadata if it changed. It reports whether the change needs
// a new assignment (a new subscription or assignor).
func (c *Coordinator) updateConsumerMember(g *Group, m *consumerMember, req ConsumerHeartbeatRequest) bool {
	before := *m
	m.clientID, m.clientHost = req.ClientID, req.ClientHost
	if req.HasRackID {
		m.rackID = req.RackID
	}
	if req.RebalanceTimeoutMs != -1 {
		m.rebalanceTimeoutMs = req.RebalanceTimeoutMs
	}
	if req.HasSubscribedTopicNames {
		topics := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(topics)
		m.topics = slices.Compact(topics)
	}
	if req.HasSubscribedTopicRegex {
		m.regex = req.SubscribedTopicRegex
	}
	if req.ServerAssignor != "" || req.MemberEpoch == JoinMemberEpoch {
		m.serverAssignor = req.ServerAssignor
	}
	// The member's rights are judged afresh on every heartbeat: an ACL
	// added or removed since changes what its regex resolves to, which
	// needs a new assignment even when the group's topics stay the same.
	var resolvedBefore []string
	if before.regex != "" && before.regex == m.regex {
		resolvedBefore = c.regexTopics(m)
	}
	m.describable, m.loadedHeld, m.regexCached = req.TopicDescribable, nil, false
	reresolved := m.regex != "" && before.regex == m.regex && !slices.Equal(resolvedBefore, c.regexTopics(m))
	resubscribed := !slices.Equal(before.topics, m.topics) || before.regex != m.regex || before.serverAssignor != m.serverAssignor || reresolved
	if resubscribed || before.rackID != m.rackID || before.clientID != m.clientID || before.clientHost != m.clientHost ||
		before.rebalanceTimeoutMs != m.rebalanceTimeoutMs || before.instanceID != m.instanceID || req.MemberEpoch == JoinMemberEpoch {
		c.persist(Record{Kind: ConsumerGroupMemberMetadataRecord, Group: g.id, MemberID: m.id, ConsumerMember: m.metadataValue()})
	}
	return resubscribed
}

// replaceStaticConsumerMember hands a static member's place, partitions and
// epoch to the same instance rejoining under a new member id.
func (c *Coordinator) replaceStaticConsumerMember(g *Group, old *consumerMember, newID string) *consumerMember {
	cg := g.consumer
	m := *old
	m.id, m.leftStatic = newID, false
	if old.leftStatic {
		m.epoch = old.previousEpoch
	}
	assigned, pending := old.assigned, old.pending
	cg.setAssignment(old, partSet{}, partSet{})
	delete(cg.members, old.id)
	c.persist(Record{Kind: ConsumerGroupCurrentMemberAssignmentRecord, Group: g.id, MemberID: old.id})
	c.persist(Record{Kind: ConsumerGroupTargetAssignmentMemberRecord, Group: g.id, MemberID: old.id})
	c.persist(Record{Kind: ConsumerGroupMemberMetadataRecord, Group: g.id, MemberID: old.id})
	m.assigned, m.pending, m.assignedAt = partSet{}, partSet{}, nil
	cg.members[newID] = &m
	cg.setAssignment(&m, assigned, pending)
	cg.static[m.instanceID] = newID
	if t, ok := cg.target[old.id]; ok {
		delete(cg.target, old.id)
		cg.target[newID] = t
		c.persist(Record{Kind: ConsumerGroupTargetAssignmentMemberRecord, Group: g.id, MemberID: newID,
			TargetMember: &ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: t.list()}})
	}
	c.persist(Record{Kind: ConsumerGroupCurrentMemberAssignmentRecord, Group: g.id, MemberID: newID, CurrentAssignment: m.assignmentValue()})
	return &m
}

// consumerLeave handles MemberEpoch -1 (leave) and -2 (a static member
// leaving for now).
func (c *Coordinator) consumerLeave(g *Group, req ConsumerHeartbeatRequest, nowMs int64) int16 {
	if g == nil || !g.isConsumer() {
		return errUnknownMemberID
	}
	cg := g.consumer
	var m *consumerMember
	if req.InstanceID != "" {
		// A static member is known by its instance id: a zombie that
		// was replaced must not take its successor out.
		m = cg.members[cg.static[req.InstanceID]]
		if m != nil && m.id != req.MemberID {
			return errFencedInstanceID
		}
	} else {
		m = cg.members[req.MemberID]
	}
	if m == nil {
		return errUnknownMemberID
	}
	if req.MemberEpoch == StaticLeaveMemberEpoch {
		// Stored as Kafka does: epoch -2, nothing pending revocation
		// (the instance owns nothing while away); the partitions stay
		// assigned to it until its session ends or it comes back.
		if !m.leftStatic {
			m.leftStatic = true
			m.previousEpoch, m.epoch = m.epoch, StaticLeaveMemberEpoch
			cg.setAssignment(m, m.assigned, partSet{})
			// Its state stays: back under a new member id, it carries
			// on reconciling from where it stopped.
			m.revokeDeadlineMs = 0
			c.persist(Record{Kind: ConsumerGroupCurrentMemberAssignmentRecord, Group: g.id, MemberID: m.id, CurrentAssignment: m.assignmentValue()})
		}
		return 0
	}
	c.removeConsumerMember(g, m, nowMs)
	c.maybeForget(g, nowMs)
	return 0
}

// tickConsumerGroup removes members whose session ended or that did not
// revoke within their rebalance timeout.
func (c *Coordinator) tickConsumerGroup(g *Group, nowMs int64) {
	cg := g.consumer
	for _, id := range cg.sortedMemberIDs() {
		m := cg.members[id]
		if m == nil {
			continue
		}
		if nowMs >= m.sessionDeadlineMs || m.state == memberUnrevoked && m.revokeDeadlineMs > 0 && nowMs >= m.revokeDeadlineMs {
			c.removeConsumerMember(g, m, nowMs)
		}
	}
}

// ConsumerDescribe handles one group of a ConsumerGroupDescribe request.
func (c *Coordinator) ConsumerDescribe(req ConsumerDescribeRequest) {
	resp := &ConsumerDescribeResponse{Group: req.Group}
	defer c.respond(Response{RequestID: req.RequestID, ConsumerDescribe: resp})
	if code := c.groupStatus(req.Group, false); code != 0 {
		resp.ErrorCode = code
		return
	}
	g := c.groups[req.Group]
	if g == nil || !g.isConsumer() {
		resp.ErrorCode = errGroupIDNotFound
		resp.ErrorMessage = fmt.Sprintf("group %s is not a consumer group", req.Group)
		if g == nil {
			resp.ErrorMessage = fmt.Sprintf("group %s not found", req.Group)
		}
		return
	}
	cg := g.consumer
	resp.State, resp.Epoch, resp.AssignmentEpoch = cg.stateName(), cg.epoch, cg.assignmentEpoch
	resp.AssignorName = cg.assignor
	if resp.AssignorName == "" {
		resp.AssignorName = c.groupAssignor(g)
	}
	for _, id := range cg.sortedMemberIDs() {
		m := cg.members[id]
		resp.Members = append(resp.Members, ConsumerDescribedMember{
			MemberID: m.id, InstanceID: m.instanceID, RackID: m.rackID, MemberEpoch: m.epoch,
			ClientID: m.clientID, ClientHost: m.clientHost, SubscribedTopicNames: slices.Clone(m.topics),
			SubscribedTopicRegex: m.regex, Assignment: m.assigned.list(), TargetAssignment: cg.target[id].list(),
		})
	}
}

// validateConsumerOffsetCommit is Kafka's ConsumerGroup.validateOffsetCommit:
// a commit outside group management needs an Empty group; a member's
// must carry its member epoch. A member may also commit from an older
// epoch, as Kafka 4.3 allows (KIP-1251): a client commits what it
// consumed while a heartbeat may already have moved it on (franz-go and
// the Java client commit on revocation). Then each partition is decided
// alone (the returned func): accepted if the member still owns it and was
// given it no later than that epoch, else STALE_MEMBER_EPOCH, so a zombie
// never writes over a partition's new owner.
func (c *Coordinator) validateConsumerOffsetCommit(g *Group, req CommitRequest) (int16, func(TopicPartition) int16) {
	cg := g.consumer
	if req.Generation < 0 && len(cg.members) == 0 {
		return 0, nil
	}
	m := cg.members[req.MemberID]
	switch {
	case m == nil:
		return errUnknownMemberID, nil
	case req.Version < 9:
		// Only OffsetCommit v9+ carries a member epoch (KIP-848).
		return kerr.UnsupportedVersion.Code, nil
	case req.Generation == m.epoch:
		return 0, nil
	case req.Generation < 0 || req.Generation > m.epoch:
		return errStaleMemberEpoch, nil
	}
	return 0, func(tp TopicPartition) int16 {
		t, ok := c.topics[tp.Topic]
		if !ok {
			return errStaleMemberEpoch
		}
		if at, held := m.assignedAt[tpID{t.ID, tp.Partition}]; held && at <= req.Generation {
			return 0
		}
		return errStaleMemberEpoch
	}
}

// subscribedNames is the topics the group's target was computed for.
func (cg *consumerGroup) subscribedNames() map[string]struct{} {
	out := make(map[string]struct{}, len(cg.subscription))
	for name := range cg.subscription {
		out[name] = struct{}{}
	}
	return out
}

// consumerSubscribes reports whether a member of the consumer group
// subscribes to topic.
func (c *Coordinator) consumerSubscribes(g *Group, topic string) bool {
	for _, m := range g.consumer.members {
		if slices.Contains(c.subscribedTopics(m), topic) || slices.Contains(m.topics, topic) {
			return true
		}
	}
	return false
}

// consumerRecords are the records that delete a consumer group's state.
func (c *Coordinator) persistConsumerGroupTombstones(g *Group) {
	cg := g.consumer
	for _, id := range cg.sortedMemberIDs() {
		c.persist(Record{Kind: ConsumerGroupCurrentMemberAssignmentRecord, Group: g.id, MemberID: id})
		c.persist(Record{Kind: ConsumerGroupTargetAssignmentMemberRecord, Group: g.id, MemberID: id})
		c.persist(Record{Kind: ConsumerGroupMemberMetadataRecord, Group: g.id, MemberID: id})
	}
	c.persist(Record{Kind: ConsumerGroupTargetAssignmentMetadataRecord, Group: g.id})
	c.persist(Record{Kind: ConsumerGroupMetadataRecord, Group: g.id})
}
