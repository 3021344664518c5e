package groups

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// This file is transactional offset commits (TxnOffsetCommit, KIP-98 and
// KIP-447): offsets a transactional producer commits for a group wait,
// pending, until the transaction coordinator's marker reaches the
// group's __consumer_offsets partition. A COMMIT marker makes them the
// group's committed offsets, an ABORT marker drops them. Until then
// OffsetFetch does not show them (with RequireStable it answers
// UNSTABLE_OFFSET_COMMIT for their partitions), they do not expire, and
// the group is not empty for deletion. Kafka's GroupMetadata
// pendingTransactionalOffsetCommits and the new coordinator's
// OffsetMetadataManager pendingTransactionalOffsets.

var (
	errUnstableOffsetCommit = kerr.UnstableOffsetCommit.Code
	errInvalidProducerEpoch = kerr.InvalidProducerEpoch.Code
)

// maxTrackedProducerEpochs bounds the producers whose last epoch a
// coordinator remembers once they have nothing pending (see
// txnOffsets.epochs).
const maxTrackedProducerEpochs = 1 << 14

// TxnProducer is the transactional producer a record's batch belongs to:
// a TxnOffsetCommit's records are appended as one transactional batch
// with the producer's id and epoch.
type TxnProducer struct {
	ID    int64
	Epoch int16
}

// pendingOffset is one transactional offset waiting for its marker. seq
// orders it among the pending offsets (log order); superseded is set when
// a later record of the same partition (a regular commit, or another
// producer's offset committed after it was written) means a COMMIT marker
// must not apply it: the latest record wins, as in Kafka.
type pendingOffset struct {
	o          OffsetAndMetadata
	seq        int64
	superseded bool
}

// producerTxn is one producer's pending offsets, by group.
type producerTxn struct {
	epoch  int16
	groups map[string]map[TopicPartition]*pendingOffset
}

// txnOffsets holds the pending transactional offsets of one coordinator
// (or of its loader while it replays: the same rules in log order).
type txnOffsets struct {
	seq        int64
	byProducer map[int64]*producerTxn
	// byGroup indexes the producers with pending offsets in a group (an
	// open transaction of the group, even when its offsets were deleted).
	byGroup map[string]map[int64]struct{}
	// epochs is the highest epoch seen of each producer, in records and
	// markers: the partition's log refuses a batch from an older epoch,
	// so the coordinator refuses it first. Entries of producers with
	// nothing pending are dropped past maxTrackedProducerEpochs; the
	// driver maps the log's refusal then.
	epochs map[int64]int16
}

func newTxnOffsets() *txnOffsets {
	return &txnOffsets{byProducer: map[int64]*producerTxn{}, byGroup: map[string]map[int64]struct{}{}, epochs: map[int64]int16{}}
}

func (t *txnOffsets) seeEpoch(pid int64, epoch int16) {
	if e, ok := t.epochs[pid]; !ok || epoch > e {
		t.epochs[pid] = epoch
	}
	if len(t.epochs) > maxTrackedProducerEpochs {
		for id := range t.epochs {
			if _, open := t.byProducer[id]; !open && id != pid {
				delete(t.epochs, id)
			}
		}
	}
}

// staleEpoch reports whether epoch is older than one seen of pid.
func (t *txnOffsets) staleEpoch(pid int64, epoch int16) bool {
	e, ok := t.epochs[pid]
	return ok && epoch < e
}

// add records a pending offset of producer p for group's tp. A newer
// epoch of the producer replaces the pending offsets of an older one: that
// transaction is over.
func (t *txnOffsets) add(p TxnProducer, group string, tp TopicPartition, o OffsetAndMetadata) {
	t.seeEpoch(p.ID, p.Epoch)
	pt := t.byProducer[p.ID]
	if pt != nil && pt.epoch < p.Epoch {
		t.drop(p.ID)
		pt = nil
	}
	if pt == nil {
		pt = &producerTxn{epoch: p.Epoch, groups: map[string]map[TopicPartition]*pendingOffset{}}
		t.byProducer[p.ID] = pt
	}
	if pt.groups[group] == nil {
		pt.groups[group] = map[TopicPartition]*pendingOffset{}
		if t.byGroup[group] == nil {
			t.byGroup[group] = map[int64]struct{}{}
		}
		t.byGroup[group][p.ID] = struct{}{}
	}
	t.seq++
	pt.groups[group][tp] = &pendingOffset{o: o, seq: t.seq}
}

// drop forgets producer pid's pending offsets.
func (t *txnOffsets) drop(pid int64) {
	pt := t.byProducer[pid]
	if pt == nil {
		return
	}
	for g := range pt.groups {
		delete(t.byGroup[g], pid)
		if len(t.byGroup[g]) == 0 {
			delete(t.byGroup, g)
		}
	}
	delete(t.byProducer, pid)
}

// supersede marks the pending offsets of group's tp written before seq
// (all of them when seq < 0) as overtaken by a later record.
func (t *txnOffsets) supersede(group string, tp TopicPartition, seq int64) {
	for pid := range t.byGroup[group] {
		if po := t.byProducer[pid].groups[group][tp]; po != nil && (seq < 0 || po.seq < seq) {
			po.superseded = true
		}
	}
}

// remove drops the pending offsets of group's tp: a tombstone written
// after them (OffsetDelete) deletes them too, as in Kafka.
func (t *txnOffsets) remove(group string, tp TopicPartition) {
	for pid := range t.byGroup[group] {
		delete(t.byProducer[pid].groups[group], tp)
	}
}

// pending reports whether group's tp has pending offsets.
func (t *txnOffsets) pending(group string, tp TopicPartition) bool {
	for pid := range t.byGroup[group] {
		if _, ok := t.byProducer[pid].groups[group][tp]; ok {
			return true
		}
	}
	return false
}

// open reports whether group has an open transaction here.
func (t *txnOffsets) open(group string) bool { return len(t.byGroup[group]) > 0 }

// complete ends producer pid's transaction as its marker at epoch says:
// on commit, apply is called with each pending offset no later record
// overtook, in a fixed order (group, then topic and partition). A marker
// from an epoch older than the pending offsets' changes nothing (the log
// refuses it anyway). It returns the groups the producer had offsets in.
func (t *txnOffsets) complete(pid int64, epoch int16, commit bool, apply func(group string, tp TopicPartition, o OffsetAndMetadata)) []string {
	t.seeEpoch(pid, epoch)
	pt := t.byProducer[pid]
	if pt == nil || epoch < pt.epoch {
		return nil
	}
	groupIDs := make([]string, 0, len(pt.groups))
	for g := range pt.groups {
		groupIDs = append(groupIDs, g)
	}
	slices.Sort(groupIDs)
	t.drop(pid)
	if !commit {
		return groupIDs
	}
	for _, g := range groupIDs {
		offs := pt.groups[g]
		tps := make([]TopicPartition, 0, len(offs))
		for tp := range offs {
			tps = append(tps, tp)
		}
		sortTopicPartitions(tps)
		for _, tp := range tps {
			po := offs[tp]
			if po.superseded {
				continue
			}
			apply(g, tp, po.o)
			t.supersede(g, tp, po.seq)
		}
	}
	return groupIDs
}

// TxnCommitOffsets handles a TxnOffsetCommit request: the offsets are
// persisted as records of the producer's transactional batch
// (Record.Producer) and wait for the producer's marker (CompleteTxn).
// The group checks are Kafka's for a transactional commit (KIP-447): a
// request that names a member, an instance or a generation must match the
// group's (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION); one
// that names none (v0-2) is accepted whatever the group's state. A
// producer epoch older than one this coordinator has seen gets
// INVALID_PRODUCER_EPOCH.
func (c *Coordinator) TxnCommitOffsets(req TxnCommitRequest, nowMs int64) {
	resp, fail := newCommitResponse(req.Offsets)
	defer c.respond(Response{RequestID: req.RequestID, TxnCommit: resp})
	if code := c.groupStatus(req.Group, false); code != 0 {
		fail(code)
		return
	}
	if req.ProducerID < 0 || req.ProducerEpoch < 0 || c.txn.staleEpoch(req.ProducerID, req.ProducerEpoch) {
		fail(errInvalidProducerEpoch)
		return
	}
	g := c.groups[req.Group]
	if g == nil {
		if req.Generation >= 0 || req.MemberID != "" || req.InstanceID != "" {
			fail(errIllegalGeneration)
			return
		}
		if g = c.createGroup(req.Group, nowMs); g == nil {
			fail(errCoordinatorNotAvailable)
			return
		}
	}
	defer c.maybeForget(g, nowMs)
	if code := c.validateTxnOffsetCommit(g, req); code != 0 {
		fail(code)
		return
	}
	p := TxnProducer{ID: req.ProducerID, Epoch: req.ProducerEpoch}
	for i, o := range req.Offsets {
		if len(o.Metadata) > c.cfg.OffsetMetadataMaxBytes {
			resp.Partitions[i].ErrorCode = errOffsetMetadataTooLarge
			continue
		}
		if o.Topic == "" || o.Partition < 0 {
			resp.Partitions[i].ErrorCode = errUnknownTopicOrPartition
			continue
		}
		v := OffsetAndMetadata{
			Offset:            o.Offset,
			LeaderEpoch:       o.LeaderEpoch,
			Metadata:          o.Metadata,
			CommitTimestampMs: nowMs,
			ExpireTimestampMs: -1,
		}
		tp := TopicPartition{Topic: o.Topic, Partition: o.Partition}
		c.persist(Record{Kind: OffsetCommitRecord, Group: g.id, TopicPartition: tp, Offset: &v, Producer: &p})
		c.txn.add(p, g.id, tp, v)
	}
}

// validateTxnOffsetCommit is Kafka's ClassicGroup and ConsumerGroup
// validateOffsetCommit for a transactional commit.
func (c *Coordinator) validateTxnOffsetCommit(g *Group, req TxnCommitRequest) int16 {
	named := req.Generation >= 0 || req.MemberID != "" || req.InstanceID != ""
	if g.isConsumer() {
		cg := g.consumer
		if !named || req.Generation < 0 && len(cg.members) == 0 {
			return 0
		}
		m := cg.members[req.MemberID]
		switch {
		case m == nil:
			return errUnknownMemberID
		case req.InstanceID != "" && m.instanceID != req.InstanceID:
			return errFencedInstanceID
		case req.Generation != m.epoch:
			return errIllegalGeneration
		}
		return 0
	}
	if req.Generation < 0 && g.state == Empty || !named {
		return 0
	}
	if code := g.validateCurrentMember(req.MemberID, req.InstanceID); code != 0 {
		return code
	}
	if req.Generation != g.generation {
		return errIllegalGeneration
	}
	return 0
}

// CompleteTxn applies a transaction marker the driver appended (and will
// deliver the answer of once durable): on COMMIT the producer's pending
// offsets become committed offsets of their groups (unless a later record
// of the same partition overtook them), on ABORT they are dropped. A
// marker for a producer with nothing pending here changes nothing. It
// persists nothing: the marker is the record.
func (c *Coordinator) CompleteTxn(req TxnMarkerRequest, nowMs int64) {
	resp := &TxnMarkerResponse{}
	defer c.respond(Response{RequestID: req.RequestID, TxnMarker: resp})
	switch c.status {
	case loading:
		resp.ErrorCode = errCoordinatorLoadInProgress
		return
	case unloaded:
		resp.ErrorCode = errNotCoordinator
		return
	}
	touched := c.txn.complete(req.ProducerID, req.ProducerEpoch, req.Commit, func(group string, tp TopicPartition, o OffsetAndMetadata) {
		g := c.groups[group]
		if g == nil {
			// A group with pending offsets is kept (maybeForget,
			// DeleteGroup, ExpireOffsets): this cannot happen, but the
			// offset is committed all the same.
			if g = c.createGroup(group, nowMs); g == nil {
				return
			}
		}
		g.offsets[tp] = o
	})
	for _, id := range touched {
		if g := c.groups[id]; g != nil {
			c.maybeForget(g, nowMs)
		}
	}
}

// PendingTxnOffsets lists group's pending transactional offsets as
// "producer:topic:partition:offset", sorted (for tools and tests).
func (c *Coordinator) PendingTxnOffsets(group string) []string {
	var out []string
	for pid := range c.txn.byGroup[group] {
		for tp, po := range c.txn.byProducer[pid].groups[group] {
			s := fmtPending(pid, tp, po)
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

func fmtPending(pid int64, tp TopicPartition, po *pendingOffset) string {
	s := fmt.Sprintf("%d:%s:%d:%d", pid, tp.Topic, tp.Partition, po.o.Offset)
	if po.superseded {
		s += "(superseded)"
	}
	return s
}
