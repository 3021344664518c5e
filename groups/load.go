package groups

import (
	"fmt"
	"slices"
)

// loader gathers the last value of every key while the partition is
// replayed; later records win, tombstones delete, as compaction would.
type loader struct {
	metadata map[string]*GroupMetadataValue
	offsets  map[string]map[TopicPartition]OffsetAndMetadata
	consumer map[string]*consumerLoad
	// txn is the pending transactional offsets as replayed so far.
	txn *txnOffsets
}

// consumerLoad is a KIP-848 group's records as replayed so far.
type consumerLoad struct {
	hasMetadata     bool // the group's own record: without it, no group
	epoch           int32
	assignmentEpoch int32
	members         map[string]*ConsumerGroupMemberMetadataValue
	target          map[string][]TopicPartitions
	current         map[string]*ConsumerGroupCurrentMemberAssignmentValue
}

func newLoader() *loader {
	return &loader{metadata: map[string]*GroupMetadataValue{}, offsets: map[string]map[TopicPartition]OffsetAndMetadata{},
		consumer: map[string]*consumerLoad{}, txn: newTxnOffsets()}
}

func (l *loader) consumerGroup(id string) *consumerLoad {
	cl := l.consumer[id]
	if cl == nil {
		cl = &consumerLoad{members: map[string]*ConsumerGroupMemberMetadataValue{}, target: map[string][]TopicPartitions{},
			current: map[string]*ConsumerGroupCurrentMemberAssignmentValue{}}
		l.consumer[id] = cl
	}
	return cl
}

// Replay applies one record of the coordinator's __consumer_offsets
// partition, in log order, while loading. A record that cannot be true
// (a member list without a leader among it, say) is ErrCorruptRecord.
func (c *Coordinator) Replay(rec Record) error {
	if c.status != loading {
		return ErrNotLoading
	}
	l := c.loader
	switch rec.Kind {
	case OffsetCommitRecord:
		tp := rec.TopicPartition
		if rec.Offset == nil {
			delete(l.offsets[rec.Group], tp)
			l.txn.remove(rec.Group, tp)
			return nil
		}
		if tp.Topic == "" || tp.Partition < 0 {
			return fmt.Errorf("%w: group %q offset for %q/%d", ErrCorruptRecord, rec.Group, tp.Topic, tp.Partition)
		}
		if rec.Producer != nil {
			// A TxnOffsetCommit's: pending until its marker.
			if rec.Producer.ID < 0 || rec.Producer.Epoch < 0 {
				return fmt.Errorf("%w: group %q transactional offset of producer %d epoch %d", ErrCorruptRecord, rec.Group, rec.Producer.ID, rec.Producer.Epoch)
			}
			l.txn.add(*rec.Producer, rec.Group, tp, *rec.Offset)
			return nil
		}
		l.setOffset(rec.Group, tp, *rec.Offset)
		l.txn.supersede(rec.Group, tp, -1)
	case GroupMetadataRecord:
		if rec.Metadata == nil {
			delete(l.metadata, rec.Group)
			return nil
		}
		if err := checkGroupMetadata(rec.Group, rec.Metadata); err != nil {
			return err
		}
		l.metadata[rec.Group] = rec.Metadata
	case ConsumerGroupMetadataRecord:
		if rec.ConsumerMetadata == nil {
			delete(l.consumer, rec.Group)
			return nil
		}
		if rec.ConsumerMetadata.Epoch < 0 {
			return fmt.Errorf("%w: consumer group %q epoch %d", ErrCorruptRecord, rec.Group, rec.ConsumerMetadata.Epoch)
		}
		cl := l.consumerGroup(rec.Group)
		cl.hasMetadata, cl.epoch = true, rec.ConsumerMetadata.Epoch
	case ConsumerGroupPartitionMetadataRecord:
		// Kafka 4.0's subscription metadata: recomputed from the topics.
	case ConsumerGroupMemberMetadataRecord:
		cl := l.consumerGroup(rec.Group)
		if rec.ConsumerMember == nil {
			delete(cl.members, rec.MemberID)
			return nil
		}
		if rec.MemberID == "" {
			return fmt.Errorf("%w: consumer group %q member with empty id", ErrCorruptRecord, rec.Group)
		}
		cl.members[rec.MemberID] = rec.ConsumerMember
	case ConsumerGroupTargetAssignmentMetadataRecord:
		cl := l.consumerGroup(rec.Group)
		cl.assignmentEpoch = 0
		if rec.TargetMetadata != nil {
			cl.assignmentEpoch = rec.TargetMetadata.AssignmentEpoch
		}
	case ConsumerGroupTargetAssignmentMemberRecord:
		cl := l.consumerGroup(rec.Group)
		if rec.TargetMember == nil {
			delete(cl.target, rec.MemberID)
			return nil
		}
		cl.target[rec.MemberID] = rec.TargetMember.TopicPartitions
	case ConsumerGroupCurrentMemberAssignmentRecord:
		cl := l.consumerGroup(rec.Group)
		if rec.CurrentAssignment == nil {
			delete(cl.current, rec.MemberID)
			return nil
		}
		cl.current[rec.MemberID] = rec.CurrentAssignment
	default:
		return fmt.Errorf("%w: kind %d", ErrUnknownRecordType, rec.Kind)
	}
	return nil
}

func (l *loader) setOffset(group string, tp TopicPartition, o OffsetAndMetadata) {
	if l.offsets[group] == nil {
		l.offsets[group] = map[TopicPartition]OffsetAndMetadata{}
	}
	l.offsets[group][tp] = o
}

// ReplayTxnMarker applies a transaction marker of the partition (a
// COMMIT or ABORT control batch of producerID at producerEpoch), in log
// order with Replay, while loading: the producer's pending offsets
// replayed before it become committed offsets or are dropped. Pending
// offsets whose marker is not in the log stay pending after CompleteLoad:
// the transaction coordinator's marker will come.
func (c *Coordinator) ReplayTxnMarker(producerID int64, producerEpoch int16, commit bool) error {
	if c.status != loading {
		return ErrNotLoading
	}
	l := c.loader
	l.txn.complete(producerID, producerEpoch, commit, l.setOffset)
	return nil
}

func checkGroupMetadata(group string, m *GroupMetadataValue) error {
	if m.Generation < 0 {
		return fmt.Errorf("%w: group %q generation %d", ErrCorruptRecord, group, m.Generation)
	}
	if len(m.Members) == 0 {
		return nil
	}
	if m.ProtocolType == "" || m.Protocol == "" {
		return fmt.Errorf("%w: group %q has %d members but protocol %q/%q", ErrCorruptRecord, group, len(m.Members), m.ProtocolType, m.Protocol)
	}
	ids := map[string]bool{}
	instances := map[string]bool{}
	for _, mm := range m.Members {
		if mm.MemberID == "" || ids[mm.MemberID] {
			return fmt.Errorf("%w: group %q member id %q empty or repeated", ErrCorruptRecord, group, mm.MemberID)
		}
		ids[mm.MemberID] = true
		if mm.InstanceID != "" {
			if instances[mm.InstanceID] {
				return fmt.Errorf("%w: group %q instance id %q repeated", ErrCorruptRecord, group, mm.InstanceID)
			}
			instances[mm.InstanceID] = true
		}
	}
	if !ids[m.Leader] {
		return fmt.Errorf("%w: group %q leader %q is not a member", ErrCorruptRecord, group, m.Leader)
	}
	return nil
}

// CompleteLoad ends loading at nowMs: groups with members come back
// Stable in their last stored generation (a rebalance in flight was never
// stored), the others Empty; every member's session starts now. A group
// over group.max.size (the limit was lowered) starts a rebalance, as in
// Kafka, which drops the members that do not make it back in time.
func (c *Coordinator) CompleteLoad(nowMs int64) error {
	if c.status != loading {
		return ErrNotLoading
	}
	l := c.loader
	ids := make([]string, 0, len(l.metadata)+len(l.offsets))
	for id := range l.metadata {
		ids = append(ids, id)
	}
	for id, cl := range l.consumer {
		if _, ok := l.metadata[id]; !ok && cl.hasMetadata {
			ids = append(ids, id)
		}
	}
	for id, offs := range l.offsets {
		_, classic := l.metadata[id]
		cl := l.consumer[id]
		if !classic && (cl == nil || !cl.hasMetadata) && len(offs) > 0 {
			ids = append(ids, id)
		}
	}
	for id := range l.txn.byGroup {
		// A group whose only state is an open transaction's offsets.
		_, classic := l.metadata[id]
		cl := l.consumer[id]
		if !classic && (cl == nil || !cl.hasMetadata) && len(l.offsets[id]) == 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		g := newGroup(id, nowMs)
		if m := l.metadata[id]; m != nil {
			c.restoreMetadata(g, m, nowMs)
		} else if cl := l.consumer[id]; cl != nil && cl.hasMetadata {
			c.restoreConsumerGroup(g, cl, nowMs)
		} else {
			g.stateTimestampMs = -1
		}
		if offs := l.offsets[id]; offs != nil {
			g.offsets = offs
		}
		c.addGroup(g)
	}
	c.misplaced = c.misplaced[:0]
	for _, id := range ids {
		if PartitionFor(id, c.partitionCount) != c.partition {
			c.misplaced = append(c.misplaced, id)
		}
	}
	c.txn = l.txn
	c.loader = nil
	c.status = active
	for _, id := range ids {
		if g := c.groups[id]; len(g.members) > c.cfg.MaxSize {
			c.prepareRebalance(g, nowMs)
		}
	}
	return nil
}

func (c *Coordinator) restoreMetadata(g *Group, m *GroupMetadataValue, nowMs int64) {
	g.generation = m.Generation
	g.protocolType = m.ProtocolType
	g.stateTimestampMs = m.CurrentStateTimestampMs
	if len(m.Members) == 0 {
		g.computeSubscribedTopics()
		return
	}
	g.protocol = m.Protocol
	for _, mm := range m.Members {
		// The log keeps only the selected protocol's metadata: the
		// member's other protocols come back when it next joins.
		g.add(&member{
			memberID:           mm.MemberID,
			instanceID:         mm.InstanceID,
			clientID:           mm.ClientID,
			clientHost:         mm.ClientHost,
			rebalanceTimeoutMs: mm.RebalanceTimeoutMs,
			sessionTimeoutMs:   mm.SessionTimeoutMs,
			protocolType:       m.ProtocolType,
			protocols:          []Protocol{{Name: m.Protocol, Metadata: mm.Subscription}},
			assignment:         nonNil(mm.Assignment),
			sessionDeadlineMs:  nowMs + int64(mm.SessionTimeoutMs),
		})
	}
	g.leaderID = m.Leader
	// Empty → Stable is not a transition a live group makes; a loaded
	// group simply starts there, as in Kafka.
	g.state = Stable
	g.computeSubscribedTopics()
}

// restoreConsumerGroup rebuilds a KIP-848 group: members keep their epochs
// and assignments, and their sessions (and revocation timeouts) start now.
func (c *Coordinator) restoreConsumerGroup(g *Group, cl *consumerLoad, nowMs int64) {
	cg := newConsumerGroup()
	g.consumer = cg
	g.protocolType = ConsumerProtocolType
	cg.epoch, cg.assignmentEpoch = cl.epoch, cl.assignmentEpoch
	ids := make([]string, 0, len(cl.members))
	for id := range cl.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		mv := cl.members[id]
		m := &consumerMember{
			id: id, instanceID: mv.InstanceID, rackID: mv.RackID, clientID: mv.ClientID, clientHost: mv.ClientHost,
			topics: slices.Clone(mv.SubscribedTopicNames), regex: mv.SubscribedTopicRegex,
			rebalanceTimeoutMs: mv.RebalanceTimeoutMs, serverAssignor: mv.ServerAssignor,
			state: memberStable, assigned: partSet{}, pending: partSet{},
			sessionDeadlineMs: nowMs + int64(c.cfg.ConsumerSessionTimeoutMs),
		}
		slices.Sort(m.topics)
		cg.members[id] = m
		if m.instanceID != "" {
			cg.static[m.instanceID] = id
		}
		if t, ok := cl.target[id]; ok {
			cg.target[id] = partSetOf(t)
		}
		if cur := cl.current[id]; cur != nil {
			m.epoch, m.previousEpoch, m.state = cur.MemberEpoch, cur.PreviousMemberEpoch, cur.State
			if m.state != memberUnrevoked && m.state != memberUnreleased {
				m.state = memberStable
			}
			cg.setAssignment(m, partSetOf(cur.AssignedPartitions), partSetOf(cur.PartitionsPendingRevocation))
			m.leftStatic = m.epoch == StaticLeaveMemberEpoch
			if m.state == memberUnrevoked && !m.leftStatic {
				m.revokeDeadlineMs = nowMs + int64(m.rebalanceTimeoutMs)
			}
		}
	}
	for _, id := range ids {
		// Until its first heartbeat here, a member's regex resolves only
		// to topics it holds or is assigned (consumerMember.loadedHeld).
		m := cg.members[id]
		m.loadedHeld = map[[16]byte]bool{}
		for _, set := range []partSet{m.assigned, m.pending, cg.target[id]} {
			for k := range set {
				m.loadedHeld[k.topic] = true
			}
		}
	}
	if len(cg.members) > 0 {
		g.state = Stable
	} else {
		g.stateTimestampMs = -1
	}
	// The subscription the target was computed for is taken from the
	// first UpdateTopics (see there).
	cg.subscription = nil
}

// Misplaced lists the groups the last load found in this partition that
// Kafka's mapping (PartitionFor) places in another one, with their
// committed offsets as "topic:partition:offset", sorted. wren before it
// matched Kafka's Utils.abs mapped the groups whose id hashes negative to
// other partitions; their commits stay where they were written, and
// FindCoordinator no longer names this partition's leader for them, so
// their consumers start from auto.offset.reset. The driver logs these so
// an operator can seek the groups back.
func (c *Coordinator) Misplaced() map[string][]string {
	if len(c.misplaced) == 0 {
		return nil
	}
	out := make(map[string][]string, len(c.misplaced))
	for _, id := range c.misplaced {
		var offs []string
		if g := c.groups[id]; g != nil {
			for tp, o := range g.offsets {
				offs = append(offs, fmt.Sprintf("%s:%d:%d", tp.Topic, tp.Partition, o.Offset))
			}
		}
		slices.Sort(offs)
		out[id] = offs
	}
	return out
}
