package groups

// This file is committed offsets and group administration: OffsetCommit,
// OffsetFetch, offset expiry, DescribeGroups and DeleteGroups.

// newCommitResponse is the answer to a commit of offsets, one partition
// result each, and fail, which gives every partition the same error.
func newCommitResponse(offsets []OffsetCommit) (resp *CommitResponse, fail func(code int16)) {
	resp = &CommitResponse{Partitions: make([]PartitionResult, len(offsets))}
	for i, o := range offsets {
		resp.Partitions[i] = PartitionResult{Topic: o.Topic, Partition: o.Partition}
	}
	return resp, func(code int16) {
		for i := range resp.Partitions {
			resp.Partitions[i].ErrorCode = code
		}
	}
}

// CommitOffsets handles an OffsetCommit request at nowMs. A member of an
// active group may commit only for the current generation: a zombie (a
// member that was removed, or that missed a rebalance) gets
// UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION and cannot overwrite the
// progress of the partition's new owner.
func (c *Coordinator) CommitOffsets(req CommitRequest, nowMs int64) {
	resp, fail := newCommitResponse(req.Offsets)
	defer c.respond(Response{RequestID: req.RequestID, Commit: resp})
	if code := c.groupStatus(req.Group, true); code != 0 {
		fail(code)
		return
	}
	g := c.groups[req.Group]
	if g == nil {
		if req.Generation >= 0 {
			// A generation from a group that no longer exists.
			fail(errIllegalGeneration)
			return
		}
		// Offsets stored for a client outside group management.
		if g = c.createGroup(req.Group, nowMs); g == nil {
			fail(errCoordinatorNotAvailable)
			return
		}
	}
	defer c.maybeForget(g, nowMs)
	validate := g.validateOffsetCommit
	// partitionCode, for a KIP-848 member committing from an older
	// epoch, decides partition by partition (KIP-1251).
	var partitionCode func(TopicPartition) int16
	if g.isConsumer() {
		validate = func(req CommitRequest) int16 {
			code, perPartition := c.validateConsumerOffsetCommit(g, req)
			partitionCode = perPartition
			return code
		}
	}
	if code := validate(req); code != 0 {
		fail(code)
		return
	}
	switch state := g.state; {
	case g.isConsumer():
		// Member epochs were checked: nothing is in flight.
	case state == CompletingRebalance:
		// The member has its new generation but not its assignment yet.
		fail(errRebalanceInProgress)
		return
	case state == Stable, state == PreparingRebalance:
		// In the join phase a member of the current generation still owns
		// its partitions and may commit them before it rejoins.
		m := g.memberByID[req.MemberID]
		m.sessionDeadlineMs = nowMs + int64(m.sessionTimeoutMs)
	}
	for i, o := range req.Offsets {
		if len(o.Metadata) > c.cfg.OffsetMetadataMaxBytes {
			resp.Partitions[i].ErrorCode = errOffsetMetadataTooLarge
			continue
		}
		if o.Topic == "" || o.Partition < 0 {
			resp.Partitions[i].ErrorCode = errUnknownTopicOrPartition
			continue
		}
		if partitionCode != nil {
			if code := partitionCode(TopicPartition{Topic: o.Topic, Partition: o.Partition}); code != 0 {
				resp.Partitions[i].ErrorCode = code
				continue
			}
		}
		v := OffsetAndMetadata{
			Offset:            o.Offset,
			LeaderEpoch:       o.LeaderEpoch,
			Metadata:          o.Metadata,
			CommitTimestampMs: nowMs,
			ExpireTimestampMs: -1,
		}
		if req.RetentionTimeMs >= 0 {
			// Stored as value version 1, which has no leader epoch; the
			// memory keeps what a replay will give back. (Requests with a
			// retention, v2-4, carry no leader epoch anyway.)
			v.ExpireTimestampMs = nowMs + req.RetentionTimeMs
			v.LeaderEpoch = -1
		}
		tp := TopicPartition{Topic: o.Topic, Partition: o.Partition}
		c.persist(Record{Kind: OffsetCommitRecord, Group: g.id, TopicPartition: tp, Offset: &v})
		g.offsets[tp] = v
		// A pending transactional offset of tp written before this
		// commit must not overwrite it when its transaction commits.
		c.txn.supersede(g.id, tp, -1)
	}
}

// validateOffsetCommit is Kafka's: a request that names a member or a
// generation must match the group's current member and generation; one
// that names neither is accepted only while the group is Empty.
func (g *Group) validateOffsetCommit(req CommitRequest) int16 {
	if req.Generation >= 0 || req.MemberID != "" || req.InstanceID != "" {
		if code := g.validateCurrentMember(req.MemberID, req.InstanceID); code != 0 {
			return code
		}
		if req.Generation != g.generation {
			return errIllegalGeneration
		}
		return 0
	}
	if g.state != Empty {
		return errUnknownMemberID
	}
	return 0
}

// FetchOffsets handles one group of an OffsetFetch request. Its answer
// follows the records of earlier inputs through Ready, so a client never
// reads an offset that is not durable yet.
func (c *Coordinator) FetchOffsets(req FetchOffsetsRequest) {
	resp := &FetchOffsetsResponse{}
	defer c.respond(Response{RequestID: req.RequestID, Fetch: resp})
	if code := c.groupStatus(req.Group, true); code != 0 {
		resp.ErrorCode = code
		return
	}
	g := c.groups[req.Group]
	fetched := func(tp TopicPartition) FetchedOffset {
		f := FetchedOffset{Topic: tp.Topic, Partition: tp.Partition, Offset: -1, LeaderEpoch: -1}
		if g == nil {
			return f
		}
		if req.RequireStable && c.txn.pending(g.id, tp) {
			// KIP-447: a transaction's offsets for tp are pending; the
			// client retries until its marker.
			f.ErrorCode = errUnstableOffsetCommit
			return f
		}
		if o, ok := g.offsets[tp]; ok {
			f.Offset, f.LeaderEpoch, f.Metadata = o.Offset, o.LeaderEpoch, o.Metadata
		}
		return f
	}
	if req.Partitions != nil {
		resp.Offsets = make([]FetchedOffset, 0, len(req.Partitions))
		for _, tp := range req.Partitions {
			resp.Offsets = append(resp.Offsets, fetched(tp))
		}
		return
	}
	if g != nil {
		for _, tp := range g.sortedTopicPartitions() {
			resp.Offsets = append(resp.Offsets, fetched(tp))
		}
	}
}

// ExpireOffsets removes the offsets whose retention ended by nowMs
// (Kafka 2.1+, KIP-211): in an Empty group, offsets.retention.minutes
// after the group became Empty; in a Stable consumer group, that long
// after the commit for topics no member subscribes to any more; in a group
// used only to store offsets, that long after the commit. A commit made
// with its own retention (OffsetCommit v2-4) expires at its own time. An
// Empty group left without offsets is deleted. The driver calls it every
// offsets.retention.check.interval.ms.
func (c *Coordinator) ExpireOffsets(nowMs int64) {
	if c.status != active {
		return
	}
	for _, id := range c.sortedGroupIDs() {
		g := c.groups[id]
		for _, tp := range g.expiredOffsets(nowMs, c.cfg.OffsetsRetentionMs) {
			if c.txn.pending(g.id, tp) {
				// A transaction's offset for tp is pending: the partition
				// is in use (Kafka's new coordinator keeps it too).
				continue
			}
			delete(g.offsets, tp)
			c.persist(Record{Kind: OffsetCommitRecord, Group: g.id, TopicPartition: tp})
		}
		if g.state == Empty && len(g.offsets) == 0 && !c.txn.open(g.id) {
			c.removeGroup(g, nowMs)
		}
	}
}

func (g *Group) expiredOffsets(nowMs, retentionMs int64) []TopicPartition {
	commitTime := func(o OffsetAndMetadata) int64 { return o.CommitTimestampMs }
	base := commitTime
	var subscribed map[string]struct{}
	switch {
	case g.isConsumer():
		if len(g.consumer.members) > 0 {
			subscribed = g.consumer.subscribedNames()
		} else if g.stateTimestampMs >= 0 {
			base = func(OffsetAndMetadata) int64 { return g.stateTimestampMs }
		}
	case g.protocolType != "" && g.state == Empty:
		if g.stateTimestampMs >= 0 {
			base = func(OffsetAndMetadata) int64 { return g.stateTimestampMs }
		}
	case g.protocolType == ConsumerProtocolType && g.state == Stable && g.subscribedTopics != nil:
		subscribed = g.subscribedTopics
	case g.protocolType == "":
	default:
		return nil
	}
	var out []TopicPartition
	for _, tp := range g.sortedTopicPartitions() {
		if _, ok := subscribed[tp.Topic]; ok {
			continue
		}
		o := g.offsets[tp]
		if o.ExpireTimestampMs >= 0 {
			if nowMs >= o.ExpireTimestampMs {
				out = append(out, tp)
			}
		} else if nowMs-base(o) >= retentionMs {
			out = append(out, tp)
		}
	}
	return out
}

// DescribeGroup handles one group of a DescribeGroups request.
func (c *Coordinator) DescribeGroup(req DescribeGroupRequest) {
	resp := &DescribeGroupResponse{Group: req.Group}
	defer c.respond(Response{RequestID: req.RequestID, Describe: resp})
	if code := c.groupStatus(req.Group, true); code != 0 {
		resp.ErrorCode = code
		return
	}
	g := c.groups[req.Group]
	if g == nil || g.isConsumer() {
		// Kafka answers a consumer group as not found here: it is
		// described by ConsumerGroupDescribe.
		resp.ErrorCode = errGroupIDNotFound
		resp.State = Dead.String()
		return
	}
	resp.State = g.state.String()
	resp.ProtocolType = g.protocolType
	stable := g.state == Stable
	if stable {
		resp.Protocol = g.protocol
	}
	for _, m := range g.members {
		d := DescribedMember{MemberID: m.memberID, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost}
		if stable {
			d.Metadata = m.metadataFor(g.protocol)
			d.Assignment = m.assignment
		}
		resp.Members = append(resp.Members, d)
	}
}

// DeleteGroup handles one group of a DeleteGroups request: only an Empty
// group may go; its offsets and metadata get tombstones.
func (c *Coordinator) DeleteGroup(req DeleteGroupRequest, nowMs int64) {
	resp := &DeleteGroupResponse{}
	defer c.respond(Response{RequestID: req.RequestID, Delete: resp})
	if code := c.groupStatus(req.Group, true); code != 0 {
		resp.ErrorCode = code
		return
	}
	g := c.groups[req.Group]
	switch {
	case g == nil:
		resp.ErrorCode = errGroupIDNotFound
	case g.state != Empty || g.isConsumer() && len(g.consumer.members) > 0:
		resp.ErrorCode = errNonEmptyGroup
	case c.txn.open(g.id):
		// An open transaction holds offsets of the group: it is not
		// empty until the transaction's marker.
		resp.ErrorCode = errNonEmptyGroup
	default:
		for _, tp := range g.sortedTopicPartitions() {
			c.persist(Record{Kind: OffsetCommitRecord, Group: g.id, TopicPartition: tp})
		}
		clear(g.offsets)
		c.removeGroup(g, nowMs)
	}
}

// DeleteOffsets handles an OffsetDelete request: the named partitions'
// committed offsets get tombstones, except those of topics the group's
// members subscribe to (GROUP_SUBSCRIBED_TO_TOPIC), whose offsets are in
// use. A classic group may lose offsets only while Empty, or while it is a
// consumer-protocol group whose subscriptions are known.
func (c *Coordinator) DeleteOffsets(req OffsetDeleteRequest, nowMs int64) {
	resp := &OffsetDeleteResponse{}
	defer c.respond(Response{RequestID: req.RequestID, OffsetDelete: resp})
	if code := c.groupStatus(req.Group, false); code != 0 {
		resp.ErrorCode = code
		return
	}
	g := c.groups[req.Group]
	if g == nil {
		resp.ErrorCode = errGroupIDNotFound
		return
	}
	subscribed := func(string) bool { return false }
	switch {
	case g.isConsumer():
		subscribed = func(topic string) bool { return c.consumerSubscribes(g, topic) }
	case g.state == Empty:
	case g.protocolType == ConsumerProtocolType && g.subscribedTopics != nil:
		subscribed = func(topic string) bool { _, ok := g.subscribedTopics[topic]; return ok }
	default:
		resp.ErrorCode = errNonEmptyGroup
		return
	}
	resp.Partitions = make([]PartitionResult, len(req.Partitions))
	for i, tp := range req.Partitions {
		resp.Partitions[i] = PartitionResult{Topic: tp.Topic, Partition: tp.Partition}
		if subscribed(tp.Topic) {
			resp.Partitions[i].ErrorCode = errGroupSubscribed
			continue
		}
		if _, ok := g.offsets[tp]; ok || c.txn.pending(g.id, tp) {
			// The tombstone deletes a pending transactional offset of tp
			// too (it is later in the log), as in Kafka.
			delete(g.offsets, tp)
			c.txn.remove(g.id, tp)
			c.persist(Record{Kind: OffsetCommitRecord, Group: g.id, TopicPartition: tp})
		}
	}
	if g.state == Empty && len(g.offsets) == 0 && !g.isConsumer() && g.generation == 0 && !c.txn.open(g.id) {
		// A group that only held offsets is gone with them.
		c.removeGroup(g, nowMs)
	}
}
