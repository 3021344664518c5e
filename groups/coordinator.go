package groups

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/internal/invariants"
)

// Kafka error codes the coordinator answers with.
var (
	errCoordinatorLoadInProgress = kerr.CoordinatorLoadInProgress.Code
	errCoordinatorNotAvailable   = kerr.CoordinatorNotAvailable.Code
	errNotCoordinator            = kerr.NotCoordinator.Code
	errIllegalGeneration         = kerr.IllegalGeneration.Code
	errInconsistentGroupProtocol = kerr.InconsistentGroupProtocol.Code
	errInvalidGroupID            = kerr.InvalidGroupID.Code
	errUnknownMemberID           = kerr.UnknownMemberID.Code
	errInvalidSessionTimeout     = kerr.InvalidSessionTimeout.Code
	errRebalanceInProgress       = kerr.RebalanceInProgress.Code
	errOffsetMetadataTooLarge    = kerr.OffsetMetadataTooLarge.Code
	errNonEmptyGroup             = kerr.NonEmptyGroup.Code
	errGroupIDNotFound           = kerr.GroupIDNotFound.Code
	errMemberIDRequired          = kerr.MemberIDRequired.Code
	errGroupMaxSizeReached       = kerr.GroupMaxSizeReached.Code
	errFencedInstanceID          = kerr.FencedInstanceID.Code
	errUnknownTopicOrPartition   = kerr.UnknownTopicOrPartition.Code
)

type coordinatorStatus int8

const (
	loading coordinatorStatus = iota
	active
	unloaded
)

// Coordinator is the group coordinator for the groups of one
// __consumer_offsets partition, as a pure state machine (see doc.go). The
// driver creates one when this node becomes the partition's leader,
// replays the partition into it, and calls Unload when it stops leading.
//
// A Coordinator is not safe for concurrent use: one goroutine owns it.
type Coordinator struct {
	cfg            Config
	partition      int32
	partitionCount int32
	// misplaced are the loaded groups PartitionFor places elsewhere.
	misplaced   []string
	newMemberID func(prefix string) string
	status      coordinatorStatus
	// Invariant: every group in groups is in a state other than Dead.
	groups map[string]*Group
	// groupIDs caches the sorted keys of groups (nil: recompute), for
	// the deterministic order of every walk over the groups. A walk may
	// drop groups from groups as it goes: the slice it holds stays valid.
	groupIDs []string
	loader   *loader
	ready    Ready
	// txn holds the pending transactional offsets (txn.go).
	txn *txnOffsets
	// topics are the cluster's topics (UpdateTopics): KIP-848 groups are
	// assigned from them. nil until the first UpdateTopics.
	topics    map[string]TopicMeta
	topicByID map[[16]byte]TopicMeta
	// topicsGen counts the UpdateTopics calls: a member's cached regex
	// resolution (consumerMember.regexGen) is good while it matches.
	topicsGen uint64
}

// NewCoordinator returns a coordinator for partition of a __consumer_offsets
// topic with partitionCount partitions, in the loading state: requests get
// COORDINATOR_LOAD_IN_PROGRESS until CompleteLoad. newMemberID makes member
// ids (SeededMemberIDs, or any deterministic source).
func NewCoordinator(cfg Config, partition, partitionCount int32, newMemberID func(prefix string) string) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if partitionCount <= 0 || partition < 0 || partition >= partitionCount {
		return nil, fmt.Errorf("%w: partition %d of %d", ErrInvalidConfig, partition, partitionCount)
	}
	if newMemberID == nil {
		return nil, fmt.Errorf("%w: no member id source", ErrInvalidConfig)
	}
	return &Coordinator{
		cfg:            cfg,
		partition:      partition,
		partitionCount: partitionCount,
		newMemberID:    newMemberID,
		status:         loading,
		groups:         map[string]*Group{},
		loader:         newLoader(),
		txn:            newTxnOffsets(),
	}, nil
}

// Ready returns what the coordinator produced since the last call, and
// forgets it. The driver persists Records, then delivers Responses.
func (c *Coordinator) Ready() Ready {
	if invariants.Enabled {
		c.checkInvariants()
	}
	rd := c.ready
	c.ready = Ready{}
	return rd
}

// HasReady reports whether Ready has anything.
func (c *Coordinator) HasReady() bool { return !c.ready.Empty() }

// Group returns the group, or nil if this coordinator has none by that id.
// The caller must not keep it across inputs.
func (c *Coordinator) Group(id string) *Group { return c.groups[id] }

// ListGroups lists the groups, sorted by id. Unlike the other requests it
// answers at once; it may show groups whose records are not durable yet.
func (c *Coordinator) ListGroups() ([]ListedGroup, int16) {
	switch c.status {
	case loading:
		return nil, errCoordinatorLoadInProgress
	case unloaded:
		return nil, errNotCoordinator
	}
	out := make([]ListedGroup, 0, len(c.groups))
	for _, id := range c.sortedGroupIDs() {
		g := c.groups[id]
		lg := ListedGroup{Group: id, ProtocolType: g.protocolType, Type: ClassicGroupType, State: g.state.String()}
		if g.isConsumer() {
			lg.Type, lg.State = ConsumerGroupType, g.consumer.stateName()
		}
		out = append(out, lg)
	}
	return out, 0
}

func (c *Coordinator) respond(r Response) { c.ready.Responses = append(c.ready.Responses, r) }
func (c *Coordinator) persist(r Record)   { c.ready.Records = append(c.ready.Records, r) }

// groupStatus is Kafka's validateGroupStatus: the error a request for
// groupID gets before its group is looked at, 0 if none. OffsetCommit,
// OffsetFetch, DescribeGroups and DeleteGroups accept the empty group id,
// as Kafka does for old clients.
func (c *Coordinator) groupStatus(groupID string, allowEmptyID bool) int16 {
	if groupID == "" && !allowEmptyID {
		return errInvalidGroupID
	}
	if PartitionFor(groupID, c.partitionCount) != c.partition {
		return errNotCoordinator
	}
	switch c.status {
	case loading:
		return errCoordinatorLoadInProgress
	case unloaded:
		return errNotCoordinator
	}
	return 0
}

func (c *Coordinator) sortedGroupIDs() []string {
	if c.groupIDs == nil {
		ids := make([]string, 0, len(c.groups))
		for id := range c.groups {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		c.groupIDs = ids
	}
	return c.groupIDs
}

func (c *Coordinator) addGroup(g *Group) {
	c.groups[g.id] = g
	c.groupIDs = nil
}

func (c *Coordinator) dropGroup(g *Group) {
	delete(c.groups, g.id)
	c.groupIDs = nil
}

// createGroup adds an Empty group, or returns nil when MaxGroups is
// reached.
func (c *Coordinator) createGroup(id string, nowMs int64) *Group {
	if len(c.groups) >= c.cfg.MaxGroups {
		return nil
	}
	g := newGroup(id, nowMs)
	c.addGroup(g)
	return g
}

// maybeForget drops a group that holds nothing and has never been
// written to the log (generation 0, no offsets), so a failed join does not
// leave a husk behind and the live groups equal a replay of the log.
func (c *Coordinator) maybeForget(g *Group, nowMs int64) {
	if g.state == Empty && g.generation == 0 && len(g.members) == 0 && len(g.pendingMembers) == 0 &&
		len(g.offsets) == 0 && c.groups[g.id] == g && (g.consumer == nil || g.consumer.epoch == 0) && !c.txn.open(g.id) {
		g.transitionTo(Dead, nowMs)
		c.dropGroup(g)
	}
}

// removeGroup makes g Dead and drops it, with a tombstone for its
// metadata if it ever had any (generation > 0; a generation-0 group only
// stored offsets, as in Kafka).
func (c *Coordinator) removeGroup(g *Group, nowMs int64) {
	g.transitionTo(Dead, nowMs)
	c.dropGroup(g)
	if g.isConsumer() {
		c.persistConsumerGroupTombstones(g)
	} else if g.generation > 0 {
		c.persist(Record{Kind: GroupMetadataRecord, Group: g.id})
	}
}

// Tick advances time to nowMs: members whose session ran out are removed,
// members given an id by MEMBER_ID_REQUIRED that did not come back are
// forgotten, join phases whose time is up end, and members that did not
// send SyncGroup within the rebalance timeout are removed. The driver
// calls it periodically; the coarser the period, the later timeouts fire.
func (c *Coordinator) Tick(nowMs int64) {
	if c.status != active {
		return
	}
	for _, id := range c.sortedGroupIDs() {
		if g := c.groups[id]; g != nil {
			c.tickGroup(g, nowMs)
			c.maybeForget(g, nowMs)
		}
	}
}

func (c *Coordinator) tickGroup(g *Group, nowMs int64) {
	if g.isConsumer() {
		c.tickConsumerGroup(g, nowMs)
		return
	}
	if len(g.pendingMembers) > 0 {
		expired := false
		for id, deadline := range g.pendingMembers {
			if nowMs >= deadline {
				delete(g.pendingMembers, id)
				expired = true
			}
		}
		if expired && g.state == PreparingRebalance {
			c.maybeCompleteJoin(g, nowMs)
		}
	}
	if slices.ContainsFunc(g.members, func(m *member) bool { return sessionExpired(m, nowMs) }) {
		for _, m := range slices.Clone(g.members) {
			// An earlier removal may have ended the join phase and
			// answered m (renewing its session), or removed m.
			if g.memberByID[m.memberID] == m && sessionExpired(m, nowMs) {
				c.removeMemberAndUpdateGroup(g, m, nowMs)
			}
		}
	}
	if g.state == PreparingRebalance && nowMs >= g.joinDeadlineMs {
		c.onJoinDeadline(g, nowMs)
	}
	if (g.state == CompletingRebalance || g.state == Stable) && len(g.pendingSync) > 0 && nowMs >= g.syncDeadlineMs {
		c.onSyncDeadline(g, nowMs)
	}
}

func sessionExpired(m *member, nowMs int64) bool {
	return nowMs >= m.sessionDeadlineMs && !m.sessionExempt()
}

// PartitionCountChanged starts a rebalance in every group that has
// finished its join phase and whose members subscribe to topic, so the
// leader assigns the new partitions. Groups already in their join phase
// will see the new count anyway.
func (c *Coordinator) PartitionCountChanged(topic string, nowMs int64) {
	if c.status != active {
		return
	}
	for _, id := range c.sortedGroupIDs() {
		g := c.groups[id]
		if g.state != Stable && g.state != CompletingRebalance {
			continue
		}
		if _, ok := g.subscribedTopics[topic]; ok {
			c.prepareRebalance(g, nowMs)
		}
	}
}

// Unload ends this coordinator: the partition's leadership moved. Every
// waiting JoinGroup and SyncGroup is answered NOT_COORDINATOR, so its
// client finds the new coordinator, and every later request gets
// NOT_COORDINATOR. The new coordinator rebuilds the groups from the log,
// where a rebalance in flight was never written: its members' retries
// start it again there.
func (c *Coordinator) Unload() {
	if c.status == active {
		for _, id := range c.sortedGroupIDs() {
			g := c.groups[id]
			for _, m := range g.members {
				if m.awaitingJoin {
					c.joinError(m.joinRequestID, m.memberID, errNotCoordinator)
					m.awaitingJoin = false
					g.numAwaitingJoin--
				}
				if m.awaitingSync {
					c.syncError(m.syncRequestID, errNotCoordinator)
					m.awaitingSync = false
				}
			}
			g.transitionTo(Dead, 0)
		}
	}
	c.groups = map[string]*Group{}
	c.groupIDs = nil
	c.loader = nil
	c.txn = newTxnOffsets()
	c.status = unloaded
}
