package groups

import (
	"fmt"
	"slices"
)

// This file is the classic rebalance protocol: JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup and the timers that drive a group between
// Empty, PreparingRebalance, CompletingRebalance and Stable. It follows
// Kafka's GroupCoordinator; where it differs, a comment says so.

func (c *Coordinator) joinError(requestID uint64, memberID string, code int16) {
	c.respond(Response{RequestID: requestID, Join: &JoinResponse{ErrorCode: code, Generation: -1, MemberID: memberID}})
}

func (c *Coordinator) syncError(requestID uint64, code int16) {
	c.respond(Response{RequestID: requestID, Sync: &SyncResponse{ErrorCode: code}})
}

// joinSuccess answers m's waiting JoinGroup with the current generation;
// the leader also gets every member's metadata to compute the assignment.
func (c *Coordinator) joinSuccess(g *Group, requestID uint64, memberID, leaderID string) {
	resp := &JoinResponse{
		Generation:   g.generation,
		ProtocolType: g.protocolType,
		Protocol:     g.protocol,
		LeaderID:     leaderID,
		MemberID:     memberID,
	}
	if memberID == leaderID {
		resp.Members = make([]JoinMember, len(g.members))
		for i, m := range g.members {
			resp.Members[i] = JoinMember{MemberID: m.memberID, InstanceID: m.instanceID, Metadata: m.metadataFor(g.protocol)}
		}
	}
	c.respond(Response{RequestID: requestID, Join: resp})
}

// Join handles a JoinGroup request at nowMs. The answer comes at once for
// an error, MEMBER_ID_REQUIRED, or a member that rejoins a settled
// generation unchanged; otherwise when the join phase ends (a later Join,
// Leave or Tick).
func (c *Coordinator) Join(req JoinRequest, nowMs int64) {
	if code := c.groupStatus(req.Group, false); code != 0 {
		c.joinError(req.RequestID, req.MemberID, code)
		return
	}
	if req.SessionTimeoutMs < c.cfg.MinSessionTimeoutMs || req.SessionTimeoutMs > c.cfg.MaxSessionTimeoutMs {
		c.joinError(req.RequestID, req.MemberID, errInvalidSessionTimeout)
		return
	}
	if req.RebalanceTimeoutMs <= 0 {
		req.RebalanceTimeoutMs = req.SessionTimeoutMs
	}
	g := c.groups[req.Group]
	if g == nil {
		if req.MemberID != "" {
			c.joinError(req.RequestID, req.MemberID, errUnknownMemberID)
			return
		}
		if g = c.createGroup(req.Group, nowMs); g == nil {
			c.joinError(req.RequestID, "", errCoordinatorNotAvailable)
			return
		}
	}
	if g.isConsumer() {
		// A KIP-848 group: classic members cannot join it (Kafka's
		// upgrade path of mixed groups is not implemented).
		c.joinError(req.RequestID, req.MemberID, errInconsistentGroupProtocol)
		return
	}
	switch {
	case !c.acceptJoiningMember(g, req):
		if m := g.memberByID[req.MemberID]; m != nil {
			// Kafka drops an existing member turned away here: in the
			// join phase it is one that had not rejoined yet.
			c.removeMember(g, m)
		}
		delete(g.pendingMembers, req.MemberID)
		c.joinError(req.RequestID, "", errGroupMaxSizeReached)
	case req.MemberID == "":
		c.joinNewMember(g, req, nowMs)
	default:
		c.joinCurrentMember(g, req, nowMs)
	}
	if g.state == PreparingRebalance {
		c.maybeCompleteJoin(g, nowMs)
	}
	c.maybeForget(g, nowMs)
}

// acceptJoiningMember enforces group.max.size. In the join phase it counts
// members that have rejoined, so the last to rejoin of an oversized group
// are the ones turned away. Unlike Kafka, a static member that restarts
// (no member id) counts as the member its instance already is: replacing
// it does not grow the group.
func (c *Coordinator) acceptJoiningMember(g *Group, req JoinRequest) bool {
	id := req.MemberID
	if id == "" && req.InstanceID != "" {
		id = g.staticMembers[req.InstanceID]
	}
	m := g.memberByID[id]
	switch g.state {
	case PreparingRebalance:
		return (m != nil && m.awaitingJoin) || g.numAwaitingJoin < c.cfg.MaxSize
	case CompletingRebalance, Stable:
		return m != nil || len(g.members) < c.cfg.MaxSize
	}
	return true
}

func (c *Coordinator) joinNewMember(g *Group, req JoinRequest, nowMs int64) {
	if !g.supportsProtocols(req.ProtocolType, req.Protocols) {
		c.joinError(req.RequestID, "", errInconsistentGroupProtocol)
		return
	}
	prefix := req.ClientID
	if req.InstanceID != "" {
		prefix = req.InstanceID
	}
	newID := c.freshMemberID(g, prefix)
	switch {
	case req.InstanceID != "":
		if oldID, ok := g.staticMembers[req.InstanceID]; ok {
			c.updateStaticMemberAndRebalance(g, oldID, newID, req, nowMs)
		} else {
			c.addMemberAndRebalance(g, newID, req, nowMs)
		}
	case req.RequireKnownMemberID:
		// KIP-394: hand out the id and wait for the member to come back
		// with it, so a client that times out and retries does not leave
		// a stray member behind each time.
		if len(g.pendingMembers) >= c.cfg.MaxSize {
			c.joinError(req.RequestID, "", errGroupMaxSizeReached)
			return
		}
		g.pendingMembers[newID] = nowMs + int64(req.SessionTimeoutMs)
		c.joinError(req.RequestID, newID, errMemberIDRequired)
	default:
		c.addMemberAndRebalance(g, newID, req, nowMs)
	}
}

// freshMemberID draws ids until one is unused in g; a source that keeps
// repeating itself is a bug.
func (c *Coordinator) freshMemberID(g *Group, prefix string) string {
	for range 16 {
		id := c.newMemberID(prefix)
		_, pending := g.pendingMembers[id]
		if id != "" && g.memberByID[id] == nil && !pending {
			return id
		}
	}
	panic(fmt.Sprintf("groups: member id source keeps returning used ids for group %q", g.id))
}

func (c *Coordinator) joinCurrentMember(g *Group, req JoinRequest, nowMs int64) {
	if !g.supportsProtocols(req.ProtocolType, req.Protocols) {
		c.joinError(req.RequestID, req.MemberID, errInconsistentGroupProtocol)
		return
	}
	if _, pending := g.pendingMembers[req.MemberID]; pending {
		if req.InstanceID != "" {
			// Pending ids are handed only to dynamic members. Kafka
			// throws here; a client cannot be trusted not to do it.
			c.joinError(req.RequestID, req.MemberID, errUnknownMemberID)
			return
		}
		c.addMemberAndRebalance(g, req.MemberID, req, nowMs)
		return
	}
	if code := g.validateCurrentMember(req.MemberID, req.InstanceID); code != 0 {
		c.joinError(req.RequestID, req.MemberID, code)
		return
	}
	m := g.memberByID[req.MemberID]
	switch g.state {
	case PreparingRebalance:
		c.updateMember(g, m, req)
	case CompletingRebalance:
		if m.matches(req.Protocols) {
			// It lost the join response: answer it again.
			m.sessionDeadlineMs = nowMs + int64(m.sessionTimeoutMs)
			c.joinSuccess(g, req.RequestID, m.memberID, g.leaderID)
		} else {
			c.updateMember(g, m, req)
			c.prepareRebalance(g, nowMs)
		}
	case Stable:
		if g.leaderID == m.memberID || !m.matches(req.Protocols) {
			// The leader rejoins to have the assignment recomputed
			// (its view of the topics changed); a member with new
			// metadata needs a new assignment.
			c.updateMember(g, m, req)
			c.prepareRebalance(g, nowMs)
		} else {
			m.sessionDeadlineMs = nowMs + int64(m.sessionTimeoutMs)
			c.joinSuccess(g, req.RequestID, m.memberID, g.leaderID)
		}
	default:
		// An Empty group has no members for validation to find.
		panic(fmt.Sprintf("groups: member %s validated in %s group %q", m.memberID, g.state, g.id))
	}
}

// updateMember records m's new JoinGroup, which now waits for the join
// phase to end. A JoinGroup it had waiting is superseded (the client gave
// up on it): it is answered REBALANCE_IN_PROGRESS, so every request gets
// exactly one answer.
func (c *Coordinator) updateMember(g *Group, m *member, req JoinRequest) {
	if m.awaitingJoin {
		c.joinError(m.joinRequestID, m.memberID, errRebalanceInProgress)
	} else {
		g.numAwaitingJoin++
	}
	m.awaitingJoin = true
	m.joinRequestID = req.RequestID
	m.protocols = cloneProtocols(req.Protocols)
	m.rebalanceTimeoutMs = req.RebalanceTimeoutMs
	m.sessionTimeoutMs = req.SessionTimeoutMs
}

func (c *Coordinator) addMemberAndRebalance(g *Group, memberID string, req JoinRequest, nowMs int64) {
	m := &member{
		memberID:           memberID,
		instanceID:         req.InstanceID,
		clientID:           req.ClientID,
		clientHost:         req.ClientHost,
		rebalanceTimeoutMs: req.RebalanceTimeoutMs,
		sessionTimeoutMs:   req.SessionTimeoutMs,
		protocolType:       req.ProtocolType,
		protocols:          cloneProtocols(req.Protocols),
		isNew:              true,
		awaitingJoin:       true,
		joinRequestID:      req.RequestID,
		sessionDeadlineMs:  nowMs + c.cfg.NewMemberJoinTimeoutMs,
	}
	if g.state == PreparingRebalance && g.generation == 0 {
		g.newMemberAdded = true
	}
	g.add(m)
	c.maybePrepareRebalance(g, nowMs)
}

// updateStaticMemberAndRebalance gives a static member's instance a new
// member id (KIP-345): the old id is fenced. In a Stable group whose
// protocol and the member's subscription stay the same there is no
// rebalance: the member gets its old assignment back. Kafka looks only at
// the protocol; we also compare the subscription, or a member that came
// back asking for other topics would not get them.
func (c *Coordinator) updateStaticMemberAndRebalance(g *Group, oldID, newID string, req JoinRequest, nowMs int64) {
	currentLeader := g.leaderID
	m := c.replaceStaticMember(g, req.InstanceID, oldID, newID)
	var oldSubscription []byte
	if g.state == Stable {
		oldSubscription = m.metadataFor(g.protocol)
	}
	c.updateMember(g, m, req)
	m.sessionDeadlineMs = nowMs + int64(m.sessionTimeoutMs)
	switch g.state {
	case Stable:
		if g.selectProtocol() == g.protocol && g.sameSubscription(oldSubscription, m.metadataFor(g.protocol)) {
			m.awaitingJoin = false
			g.numAwaitingJoin--
			c.persist(Record{Kind: GroupMetadataRecord, Group: g.id, Metadata: g.metadataValue()})
			// The old leader id goes back, even if this member was the
			// leader: a Stable group would not pass on an assignment the
			// member computed, so it must not think it leads.
			c.joinSuccess(g, req.RequestID, newID, currentLeader)
		} else {
			c.prepareRebalance(g, nowMs)
		}
	case CompletingRebalance:
		c.prepareRebalance(g, nowMs)
	case PreparingRebalance:
		// It waits for the join phase like everyone else.
	default:
		panic(fmt.Sprintf("groups: static member %s replaced in %s group %q", oldID, g.state, g.id))
	}
}

// replaceStaticMember moves instanceID's member from oldID to newID. A
// request the old id had waiting is answered FENCED_INSTANCE_ID: that
// client is a zombie or a duplicate.
func (c *Coordinator) replaceStaticMember(g *Group, instanceID, oldID, newID string) *member {
	m := g.memberByID[oldID]
	if m == nil {
		panic(fmt.Sprintf("groups: group %q instance %s maps to missing member %s", g.id, instanceID, oldID))
	}
	if m.awaitingJoin {
		c.joinError(m.joinRequestID, oldID, errFencedInstanceID)
		m.awaitingJoin = false
		g.numAwaitingJoin--
	}
	if m.awaitingSync {
		c.syncError(m.syncRequestID, errFencedInstanceID)
		m.awaitingSync = false
	}
	delete(g.memberByID, oldID)
	m.memberID = newID
	g.memberByID[newID] = m
	g.staticMembers[instanceID] = newID
	if g.leaderID == oldID {
		g.leaderID = newID
	}
	if _, ok := g.pendingSync[oldID]; ok {
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = struct{}{}
	}
	return m
}

func (c *Coordinator) maybePrepareRebalance(g *Group, nowMs int64) {
	if PreparingRebalance.canFollow(g.state) {
		c.prepareRebalance(g, nowMs)
	}
}

// prepareRebalance starts a join phase. Members waiting in SyncGroup are
// told REBALANCE_IN_PROGRESS and must rejoin.
func (c *Coordinator) prepareRebalance(g *Group, nowMs int64) {
	if g.state == CompletingRebalance {
		for _, m := range g.members {
			m.assignment = nil
		}
		c.propagateAssignment(g, errRebalanceInProgress, nowMs)
	}
	clear(g.pendingSync)
	g.newMemberAdded = false
	if g.state == Empty && c.cfg.InitialRebalanceDelayMs > 0 {
		g.initialDelay = true
		g.joinDeadlineMs = nowMs + c.cfg.InitialRebalanceDelayMs
		g.initialDelayRemainingMs = max(g.rebalanceTimeoutMs()-c.cfg.InitialRebalanceDelayMs, 0)
	} else {
		g.initialDelay = false
		g.joinDeadlineMs = nowMs + g.rebalanceTimeoutMs()
	}
	g.transitionTo(PreparingRebalance, nowMs)
	c.maybeCompleteJoin(g, nowMs)
}

// maybeCompleteJoin ends the join phase early once every member has
// rejoined, except while the initial rebalance delay runs.
func (c *Coordinator) maybeCompleteJoin(g *Group, nowMs int64) {
	if g.state == PreparingRebalance && !g.initialDelay && g.allMembersJoined() {
		c.completeJoin(g, nowMs)
	}
}

func (c *Coordinator) onJoinDeadline(g *Group, nowMs int64) {
	if g.initialDelay && g.newMemberAdded && g.initialDelayRemainingMs > 0 {
		g.newMemberAdded = false
		d := min(c.cfg.InitialRebalanceDelayMs, g.initialDelayRemainingMs)
		g.initialDelayRemainingMs -= d
		g.joinDeadlineMs = nowMs + d
		return
	}
	c.completeJoin(g, nowMs)
}

// completeJoin ends the join phase: dynamic members that did not rejoin
// are dropped (static ones stay until their session ends: KIP-345), a new
// generation begins, and every waiting JoinGroup is answered. A group left
// without members becomes Empty and is stored so.
func (c *Coordinator) completeJoin(g *Group, nowMs int64) {
	g.initialDelay = false
	for _, m := range slices.Clone(g.members) {
		if !m.awaitingJoin && m.instanceID == "" {
			c.removeMember(g, m)
		}
	}
	// Static members that did not rejoin stay only while the group is
	// within group.max.size (the last to join go first). Kafka keeps them
	// all, so new static members could grow a group past its limit one
	// rebalance after another.
	for i := len(g.members) - 1; i >= 0 && len(g.members) > c.cfg.MaxSize; i-- {
		if m := g.members[i]; !m.awaitingJoin {
			c.removeMember(g, m)
		}
	}
	if !c.maybeElectJoinedLeader(g) && len(g.members) > 0 {
		// Only static members that have not rejoined are left: wait
		// another rebalance timeout for them to rejoin or time out.
		g.joinDeadlineMs = nowMs + g.rebalanceTimeoutMs()
		return
	}
	g.generation++
	if len(g.members) == 0 {
		g.protocol = ""
		g.transitionTo(Empty, nowMs)
		g.computeSubscribedTopics()
		c.persist(Record{Kind: GroupMetadataRecord, Group: g.id, Metadata: g.metadataValue()})
		return
	}
	g.protocol = g.selectProtocol()
	g.transitionTo(CompletingRebalance, nowMs)
	g.computeSubscribedTopics()
	for _, m := range g.members {
		g.pendingSync[m.memberID] = struct{}{}
	}
	g.syncDeadlineMs = nowMs + g.rebalanceTimeoutMs()
	for _, m := range g.members {
		if m.awaitingJoin {
			m.awaitingJoin = false
			g.numAwaitingJoin--
			c.joinSuccess(g, m.joinRequestID, m.memberID, g.leaderID)
		}
		m.isNew = false
		m.sessionDeadlineMs = nowMs + int64(m.sessionTimeoutMs)
	}
}

// maybeElectJoinedLeader keeps the leader if it rejoined, else makes the
// first member (in join order) that rejoined the leader. False if none
// rejoined.
func (c *Coordinator) maybeElectJoinedLeader(g *Group) bool {
	if g.leaderID == "" {
		return false
	}
	if g.memberByID[g.leaderID].awaitingJoin {
		return true
	}
	for _, m := range g.members {
		if m.awaitingJoin {
			g.leaderID = m.memberID
			return true
		}
	}
	return false
}

// onSyncDeadline drops the members that never sent SyncGroup for this
// generation, and rebalances without them.
func (c *Coordinator) onSyncDeadline(g *Group, nowMs int64) {
	ids := make([]string, 0, len(g.pendingSync))
	for id := range g.pendingSync {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if m := g.memberByID[id]; m != nil {
			c.removeMember(g, m)
		}
	}
	c.prepareRebalance(g, nowMs)
}

// removeMember answers m's waiting requests UNKNOWN_MEMBER_ID and drops it.
func (c *Coordinator) removeMember(g *Group, m *member) {
	if m.awaitingJoin {
		c.joinError(m.joinRequestID, "", errUnknownMemberID)
		m.awaitingJoin = false
		g.numAwaitingJoin--
	}
	if m.awaitingSync {
		// Kafka leaves this one unanswered; we answer every request.
		c.syncError(m.syncRequestID, errUnknownMemberID)
		m.awaitingSync = false
	}
	g.drop(m)
}

// removeMemberAndUpdateGroup removes m and rebalances without it.
func (c *Coordinator) removeMemberAndUpdateGroup(g *Group, m *member, nowMs int64) {
	c.removeMember(g, m)
	switch g.state {
	case Stable, CompletingRebalance:
		c.prepareRebalance(g, nowMs)
	case PreparingRebalance:
		c.maybeCompleteJoin(g, nowMs)
	}
}

// propagateAssignment answers every waiting SyncGroup: with the member's
// assignment, or with code.
func (c *Coordinator) propagateAssignment(g *Group, code int16, nowMs int64) {
	for _, m := range g.members {
		if !m.awaitingSync {
			continue
		}
		resp := &SyncResponse{ErrorCode: code}
		if code == 0 {
			resp.ProtocolType = g.protocolType
			resp.Protocol = g.protocol
			resp.Assignment = m.assignment
		}
		c.respond(Response{RequestID: m.syncRequestID, Sync: resp})
		m.awaitingSync = false
		// Its session was on hold while it waited.
		m.sessionDeadlineMs = nowMs + int64(m.sessionTimeoutMs)
	}
}

// Sync handles a SyncGroup request at nowMs. The leader's request carries
// the assignment: the generation is stored and every waiting member
// answered. A follower that syncs first waits for the leader.
func (c *Coordinator) Sync(req SyncRequest, nowMs int64) {
	code := c.groupStatus(req.Group, false)
	if code == errCoordinatorLoadInProgress {
		// The rebalance in flight is lost with the old coordinator: make
		// the member rejoin at once. Old clients do not expect
		// COORDINATOR_LOAD_IN_PROGRESS here.
		code = errRebalanceInProgress
	}
	if code != 0 {
		c.syncError(req.RequestID, code)
		return
	}
	g := c.groups[req.Group]
	if g == nil {
		c.syncError(req.RequestID, errUnknownMemberID)
		return
	}
	if code := g.validateCurrentMember(req.MemberID, req.InstanceID); code != 0 {
		c.syncError(req.RequestID, code)
		return
	}
	switch {
	case req.Generation != g.generation:
		c.syncError(req.RequestID, errIllegalGeneration)
		return
	case req.ProtocolType != "" && req.ProtocolType != g.protocolType,
		req.Protocol != "" && req.Protocol != g.protocol:
		c.syncError(req.RequestID, errInconsistentGroupProtocol)
		return
	}
	m := g.memberByID[req.MemberID]
	switch g.state {
	case PreparingRebalance:
		c.syncError(req.RequestID, errRebalanceInProgress)
	case CompletingRebalance:
		if m.awaitingSync {
			c.syncError(m.syncRequestID, errRebalanceInProgress) // superseded
		}
		m.awaitingSync = true
		m.syncRequestID = req.RequestID
		delete(g.pendingSync, m.memberID)
		if g.leaderID != m.memberID {
			return
		}
		assigned := make(map[string][]byte, len(req.Assignments))
		for _, a := range req.Assignments {
			assigned[a.MemberID] = a.Assignment
		}
		// Members the leader left out get an empty assignment; ids it
		// made up are ignored.
		for _, mm := range g.members {
			mm.assignment = append([]byte{}, assigned[mm.memberID]...)
		}
		c.persist(Record{Kind: GroupMetadataRecord, Group: g.id, Metadata: g.metadataValue()})
		c.propagateAssignment(g, 0, nowMs)
		g.transitionTo(Stable, nowMs)
	case Stable:
		delete(g.pendingSync, m.memberID)
		m.sessionDeadlineMs = nowMs + int64(m.sessionTimeoutMs)
		c.respond(Response{RequestID: req.RequestID, Sync: &SyncResponse{
			ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: m.assignment,
		}})
	default:
		panic(fmt.Sprintf("groups: member %s validated in %s group %q", m.memberID, g.state, g.id))
	}
}

// Heartbeat handles a Heartbeat request at nowMs: it keeps the member's
// session alive and tells it when to rejoin (REBALANCE_IN_PROGRESS).
func (c *Coordinator) Heartbeat(req HeartbeatRequest, nowMs int64) {
	answer := func(code int16) {
		c.respond(Response{RequestID: req.RequestID, Heartbeat: &HeartbeatResponse{ErrorCode: code}})
	}
	code := c.groupStatus(req.Group, false)
	if code == errCoordinatorLoadInProgress {
		// As Kafka: the session is not known yet, keep the member calm.
		code = 0
		answer(code)
		return
	}
	if code != 0 {
		answer(code)
		return
	}
	g := c.groups[req.Group]
	if g == nil {
		answer(errUnknownMemberID)
		return
	}
	if code := g.validateCurrentMember(req.MemberID, req.InstanceID); code != 0 {
		answer(code)
		return
	}
	if req.Generation != g.generation {
		answer(errIllegalGeneration)
		return
	}
	m := g.memberByID[req.MemberID]
	m.sessionDeadlineMs = nowMs + int64(m.sessionTimeoutMs)
	if g.state == PreparingRebalance {
		answer(errRebalanceInProgress)
		return
	}
	answer(0)
}

// Leave handles a LeaveGroup request at nowMs: each named member leaves
// and the group rebalances without it.
func (c *Coordinator) Leave(req LeaveRequest, nowMs int64) {
	resp := &LeaveResponse{}
	defer c.respond(Response{RequestID: req.RequestID, Leave: resp})
	if code := c.groupStatus(req.Group, false); code != 0 {
		resp.ErrorCode = code
		return
	}
	g := c.groups[req.Group]
	for _, lm := range req.Members {
		r := LeaveMemberResult{MemberID: lm.MemberID, InstanceID: lm.InstanceID}
		r.ErrorCode = c.leaveOne(g, lm, nowMs)
		resp.Members = append(resp.Members, r)
	}
	if g != nil {
		c.maybeForget(g, nowMs)
	}
}

func (c *Coordinator) leaveOne(g *Group, lm LeavingMember, nowMs int64) int16 {
	if g == nil || g.state == Dead {
		return errUnknownMemberID
	}
	if lm.MemberID == "" {
		// An administrator removes a static member by instance id.
		id, ok := g.staticMembers[lm.InstanceID]
		if lm.InstanceID == "" || !ok {
			return errUnknownMemberID
		}
		c.removeMemberAndUpdateGroup(g, g.memberByID[id], nowMs)
		return 0
	}
	if _, pending := g.pendingMembers[lm.MemberID]; pending {
		delete(g.pendingMembers, lm.MemberID)
		c.maybeCompleteJoin(g, nowMs)
		return 0
	}
	if code := g.validateCurrentMember(lm.MemberID, lm.InstanceID); code != 0 {
		return code
	}
	c.removeMemberAndUpdateGroup(g, g.memberByID[lm.MemberID], nowMs)
	return 0
}

func cloneProtocols(ps []Protocol) []Protocol {
	out := make([]Protocol, len(ps))
	for i, p := range ps {
		out[i] = Protocol{Name: p.Name, Metadata: append([]byte{}, p.Metadata...)}
	}
	return out
}
