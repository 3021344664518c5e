package groups

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// propEnv drives one group ("g") of a Coordinator with random requests
// from plausible clients and checks the invariants after every step. The
// records of every Ready go through the codec into a simulated
// __consumer_offsets partition, which the reload step and the replay
// cross-check read back.
type propEnv struct {
	t       *rapid.T
	cfg     Config
	c       *Coordinator
	nowMs   int64
	log     []logEntry
	nextID  int
	nextReq uint64

	// waiting: JoinGroup and SyncGroup requests not answered yet.
	waiting map[uint64]bool
	// issued: every request id handed to the coordinator.
	issued map[uint64]bool
	// syncGen: the generation a SyncGroup request named.
	syncGen map[uint64]int32
	// known: every member id the coordinator handed out.
	known []string
	// Per coordinator lifetime: the only member that received the member
	// list for a generation, and the highest generation seen.
	listedTo map[int32]string
	maxGen   int32
	// stored[gen][member]: assignments as persisted in group records.
	stored map[int32]map[string][]byte
}

func newPropEnv(t *rapid.T) *propEnv {
	e := &propEnv{
		t:        t,
		cfg:      testConfig(),
		waiting:  map[uint64]bool{},
		issued:   map[uint64]bool{},
		syncGen:  map[uint64]int32{},
		listedTo: map[int32]string{},
		stored:   map[int32]map[string][]byte{},
	}
	e.cfg.MaxSize = rapid.IntRange(2, 4).Draw(t, "maxSize")
	e.cfg.InitialRebalanceDelayMs = rapid.SampledFrom([]int64{0, 3000}).Draw(t, "delay")
	e.c = e.newCoordinator()
	if err := e.c.CompleteLoad(0); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *propEnv) newCoordinator() *Coordinator {
	c, err := NewCoordinator(e.cfg, 0, 1, func(prefix string) string {
		e.nextID++
		return fmt.Sprintf("%s-%d", prefix, e.nextID)
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *propEnv) request() uint64 {
	e.nextReq++
	e.issued[e.nextReq] = true
	return e.nextReq
}

func (e *propEnv) group() *Group { return e.c.groups["g"] }

var propProtocols = [][]Protocol{
	parseProtocols(ConsumerProtocolType, "range:t1"),
	parseProtocols(ConsumerProtocolType, "range:t1+t2"),
	parseProtocols(ConsumerProtocolType, "roundrobin:t1,range:t1"),
	parseProtocols(ConsumerProtocolType, "roundrobin:t2"),
}

// drawMember picks mostly a current member, sometimes any id ever handed
// out (a zombie), sometimes a made-up one.
func (e *propEnv) drawMember(label string) (memberID, instanceID string) {
	var ids []string
	if g := e.group(); g != nil {
		for _, m := range g.members {
			ids = append(ids, m.memberID)
		}
	}
	switch k := rapid.IntRange(0, 9).Draw(e.t, label+"Kind"); {
	case k < 7 && len(ids) > 0:
		memberID = rapid.SampledFrom(ids).Draw(e.t, label)
	case k < 9 && len(e.known) > 0:
		memberID = rapid.SampledFrom(e.known).Draw(e.t, label)
	default:
		memberID = "bogus"
	}
	if g := e.group(); g != nil {
		if m := g.memberByID[memberID]; m != nil && m.instanceID != "" {
			return memberID, m.instanceID
		}
	}
	// A zombie of a static member still sends its instance id.
	if len(memberID) > 2 && memberID[0] == 'i' && rapid.Bool().Draw(e.t, label+"WithInstance") {
		return memberID, memberID[:2]
	}
	return memberID, ""
}

func (e *propEnv) drawGeneration(label string) int32 {
	gen := int32(0)
	if g := e.group(); g != nil {
		gen = g.generation
	}
	switch rapid.IntRange(0, 5).Draw(e.t, label) {
	case 0:
		return gen - 1
	case 1:
		return -1
	case 2:
		return gen + 1
	}
	return gen
}

func (e *propEnv) step() {
	t := e.t
	switch op := rapid.IntRange(0, 21).Draw(t, "op"); op {
	case 16, 17, 18, 19, 20, 21:
		e.cooperate()
	case 0, 1, 2: // JoinGroup
		req := JoinRequest{
			RequestID:          e.request(),
			Group:              "g",
			ClientID:           "c",
			SessionTimeoutMs:   rapid.SampledFrom([]int32{3000, 10000}).Draw(t, "session"),
			RebalanceTimeoutMs: rapid.SampledFrom([]int32{5000, 20000}).Draw(t, "rebalance"),
			ProtocolType:       ConsumerProtocolType,
			Protocols:          rapid.SampledFrom(propProtocols).Draw(t, "protocols"),
		}
		switch rapid.IntRange(0, 3).Draw(t, "joinKind") {
		case 0: // a new dynamic member
			req.RequireKnownMemberID = rapid.Bool().Draw(t, "requireID")
		case 1: // a static member, new or restarting
			req.InstanceID = rapid.SampledFrom([]string{"i1", "i2"}).Draw(t, "instance")
			req.ClientID = req.InstanceID
		default:
			req.MemberID, req.InstanceID = e.drawMember("joiner")
		}
		e.c.Join(req, e.nowMs)
		e.drain(req.RequestID, true)
	case 3, 4, 5: // SyncGroup
		id, instance := e.drawMember("syncer")
		req := SyncRequest{RequestID: e.request(), Group: "g", MemberID: id, InstanceID: instance, Generation: e.drawGeneration("syncGen")}
		if g := e.group(); g != nil && g.leaderID == id {
			for _, m := range g.members {
				if rapid.IntRange(0, 9).Draw(t, "assignSkip") > 0 {
					req.Assignments = append(req.Assignments, MemberAssignment{MemberID: m.memberID, Assignment: fmt.Appendf(nil, "%s@%d", m.memberID, req.Generation)})
				}
			}
		}
		e.syncGen[req.RequestID] = req.Generation
		e.c.Sync(req, e.nowMs)
		e.drain(req.RequestID, true)
	case 6, 7: // Heartbeat
		id, instance := e.drawMember("beater")
		r := e.request()
		e.c.Heartbeat(HeartbeatRequest{RequestID: r, Group: "g", MemberID: id, InstanceID: instance, Generation: e.drawGeneration("beatGen")}, e.nowMs)
		e.drain(r, false)
	case 8: // OffsetCommit
		id, instance := e.drawMember("committer")
		if rapid.IntRange(0, 4).Draw(t, "anonymous") == 0 {
			id, instance = "", ""
		}
		req := CommitRequest{
			RequestID: e.request(), Group: "g", MemberID: id, InstanceID: instance, Generation: e.drawGeneration("commitGen"), RetentionTimeMs: -1,
			Offsets: []OffsetCommit{{Topic: rapid.SampledFrom([]string{"t1", "t2", "t3"}).Draw(t, "topic"), Offset: e.nowMs, LeaderEpoch: -1}},
		}
		before := e.snapshot()
		e.c.CommitOffsets(req, e.nowMs)
		resp := e.drain(req.RequestID, false)
		e.checkCommit(before, req, resp)
	case 9: // LeaveGroup
		id, instance := e.drawMember("leaver")
		if rapid.IntRange(0, 3).Draw(t, "leaveByInstance") == 0 && instance != "" {
			id = "" // an administrator names the instance only
		}
		r := e.request()
		e.c.Leave(LeaveRequest{RequestID: r, Group: "g", Members: []LeavingMember{{MemberID: id, InstanceID: instance}}}, e.nowMs)
		e.drain(r, false)
	case 10, 11, 12: // time passes
		e.nowMs += rapid.SampledFrom([]int64{0, 1000, 2500, 6000, 12000}).Draw(t, "ms")
		e.c.Tick(e.nowMs)
		e.drain(0, false)
	case 13:
		if rapid.Bool().Draw(t, "expire") {
			e.c.ExpireOffsets(e.nowMs)
		} else {
			e.c.PartitionCountChanged("t1", e.nowMs)
		}
		e.drain(0, false)
	case 14:
		r := e.request()
		if rapid.Bool().Draw(t, "delete") {
			e.c.DeleteGroup(DeleteGroupRequest{RequestID: r, Group: "g"}, e.nowMs)
		} else {
			e.c.FetchOffsets(FetchOffsetsRequest{RequestID: r, Group: "g"})
		}
		e.drain(r, false)
	case 15: // the coordinator moves
		if rapid.IntRange(0, 2).Draw(t, "reload") == 0 {
			e.reload()
		}
	}
	e.checkInvariants()
}

// cooperate is what a well-behaved client does next, so that runs reach
// Stable groups with several members: rejoin during a join phase, sync
// after one, heartbeat otherwise.
func (e *propEnv) cooperate() {
	g := e.group()
	if g == nil || len(g.members) == 0 {
		return
	}
	m := rapid.SampledFrom(g.members).Draw(e.t, "cooperator")
	switch g.state {
	case PreparingRebalance:
		if m.awaitingJoin {
			return
		}
		req := JoinRequest{
			RequestID: e.request(), Group: "g", MemberID: m.memberID, InstanceID: m.instanceID, ClientID: m.clientID,
			SessionTimeoutMs: m.sessionTimeoutMs, RebalanceTimeoutMs: m.rebalanceTimeoutMs,
			ProtocolType: m.protocolType, Protocols: m.protocols,
		}
		e.c.Join(req, e.nowMs)
		e.drain(req.RequestID, true)
	case CompletingRebalance:
		if _, pending := g.pendingSync[g.leaderID]; pending {
			m = g.memberByID[g.leaderID]
		}
		if m.awaitingSync {
			return
		}
		req := SyncRequest{RequestID: e.request(), Group: "g", MemberID: m.memberID, InstanceID: m.instanceID, Generation: g.generation}
		if m.memberID == g.leaderID {
			for _, mm := range g.members {
				req.Assignments = append(req.Assignments, MemberAssignment{MemberID: mm.memberID, Assignment: fmt.Appendf(nil, "%s@%d", mm.memberID, g.generation)})
			}
		}
		e.syncGen[req.RequestID] = req.Generation
		e.c.Sync(req, e.nowMs)
		e.drain(req.RequestID, true)
	case Stable:
		if _, pending := g.pendingSync[m.memberID]; pending {
			req := SyncRequest{RequestID: e.request(), Group: "g", MemberID: m.memberID, InstanceID: m.instanceID, Generation: g.generation}
			e.syncGen[req.RequestID] = req.Generation
			e.c.Sync(req, e.nowMs)
			e.drain(req.RequestID, false)
			return
		}
		r := e.request()
		e.c.Heartbeat(HeartbeatRequest{RequestID: r, Group: "g", MemberID: m.memberID, InstanceID: m.instanceID, Generation: g.generation}, e.nowMs)
		e.drain(r, false)
	}
}

// drain takes the Ready, persists its records through the codec and checks
// its responses. request is the id of the input just given (0 for none):
// unless it may wait (JoinGroup, SyncGroup), it must be answered now.
func (e *propEnv) drain(request uint64, mayWait bool) *Response {
	t := e.t
	rd := e.c.Ready()
	for _, rec := range rd.Records {
		key, value := rec.EncodeKey(), rec.EncodeValue()
		back, err := DecodeRecord(key, value)
		if err != nil || !back.Equal(rec) {
			t.Fatalf("record does not survive its encoding: %v: %+v", err, rec)
		}
		e.log = append(e.log, logEntry{key: key, value: value, producer: rec.Producer})
		if rec.Kind == GroupMetadataRecord && rec.Metadata != nil {
			m := rec.Metadata
			if e.stored[m.Generation] == nil {
				e.stored[m.Generation] = map[string][]byte{}
			}
			for _, mm := range m.Members {
				e.stored[m.Generation][mm.MemberID] = mm.Assignment
			}
		}
	}
	var mine *Response
	for i, r := range rd.Responses {
		if !e.issued[r.RequestID] {
			t.Fatalf("response to request %d, which was never made or was already answered: %+v", r.RequestID, r)
		}
		delete(e.issued, r.RequestID)
		delete(e.waiting, r.RequestID)
		if r.RequestID == request {
			mine = &rd.Responses[i]
		}
		e.checkResponse(r)
	}
	if request != 0 && mine == nil {
		if !mayWait {
			t.Fatalf("request %d was not answered at once", request)
		}
		e.waiting[request] = true
	}
	return mine
}

func (e *propEnv) checkResponse(r Response) {
	t := e.t
	switch {
	case r.Join != nil && r.Join.ErrorCode == 0:
		j := r.Join
		if !slices.Contains(e.known, j.MemberID) {
			e.known = append(e.known, j.MemberID)
		}
		if j.Members != nil {
			// At most one leader per generation: one member computes the
			// assignment.
			if prev, ok := e.listedTo[j.Generation]; ok && prev != j.MemberID {
				t.Fatalf("generation %d: both %s and %s got the member list", j.Generation, prev, j.MemberID)
			}
			e.listedTo[j.Generation] = j.MemberID
		}
	case r.Join != nil && r.Join.ErrorCode == errMemberIDRequired:
		e.known = append(e.known, r.Join.MemberID)
	case r.Sync != nil && r.Sync.ErrorCode == 0:
		// The assignment a member is told is the one persisted for it in
		// that generation (persist before respond).
		gen := e.syncGen[r.RequestID]
		g := e.group()
		var id string
		for _, m := range g.members {
			if m.syncRequestID == r.RequestID || bytes.Equal(m.assignment, r.Sync.Assignment) {
				id = m.memberID
			}
		}
		stored, ok := e.stored[gen]
		if !ok {
			t.Fatalf("sync of generation %d answered but no record of it was persisted", gen)
		}
		found := false
		for _, a := range stored {
			if bytes.Equal(a, r.Sync.Assignment) {
				found = true
			}
		}
		if !found {
			t.Fatalf("sync answered %q to %s in generation %d; persisted: %q", r.Sync.Assignment, id, gen, stored)
		}
	}
}

// groupSnapshot is what checkCommit needs of the group before a commit.
type groupSnapshot struct {
	exists     bool
	state      GroupState
	generation int32
	members    map[string]string // member id → instance id
}

func (e *propEnv) snapshot() groupSnapshot {
	g := e.group()
	if g == nil {
		return groupSnapshot{}
	}
	s := groupSnapshot{exists: true, state: g.state, generation: g.generation, members: map[string]string{}}
	for _, m := range g.members {
		s.members[m.memberID] = m.instanceID
	}
	return s
}

// checkCommit: a commit to an active group is accepted only from a current
// member (with its current instance mapping) for the current generation,
// and never while the assignment is being decided.
func (e *propEnv) checkCommit(before groupSnapshot, req CommitRequest, resp *Response) {
	accepted := resp.Commit.Partitions[0].ErrorCode == 0
	active := before.exists && before.state != Empty
	if active {
		instance, member := before.members[req.MemberID]
		valid := member && req.Generation == before.generation && before.state != CompletingRebalance &&
			(req.InstanceID == "" || req.InstanceID == instance)
		if accepted != valid {
			e.t.Fatalf("commit %+v to %+v: accepted=%v, want %v", req, before, accepted, valid)
		}
	} else if accepted && (req.MemberID != "" || req.Generation >= 0) {
		e.t.Fatalf("commit %+v to group without members %+v accepted", req, before)
	}
	if accepted {
		o, ok := e.group().offsets[TopicPartition{req.Offsets[0].Topic, 0}]
		if !ok || o.Offset != req.Offsets[0].Offset {
			e.t.Fatalf("accepted commit not applied: %+v", o)
		}
	}
}

// reload moves the coordinator: Unload must answer everything waiting, and
// the new coordinator, rebuilt from the log, starts from the last stored
// generation.
func (e *propEnv) reload() {
	lastGen := int32(0)
	for _, le := range e.log {
		rec, err := DecodeRecord(le.key, le.value)
		if err != nil {
			e.t.Fatal(err)
		}
		if rec.Kind == GroupMetadataRecord && rec.Group == "g" {
			lastGen = 0
			if rec.Metadata != nil {
				lastGen = rec.Metadata.Generation
			}
		}
	}
	e.c.Unload()
	e.drain(0, false)
	if len(e.waiting) != 0 {
		e.t.Fatalf("requests %v left waiting by Unload", e.waiting)
	}
	e.c = e.newCoordinator()
	for _, le := range e.log {
		rec, _ := DecodeRecord(le.key, le.value)
		if err := e.c.Replay(rec); err != nil {
			e.t.Fatal(err)
		}
	}
	if err := e.c.CompleteLoad(e.nowMs); err != nil {
		e.t.Fatal(err)
	}
	e.drain(0, false)
	if g := e.group(); g != nil && g.generation != lastGen {
		e.t.Fatalf("loaded generation %d, last stored %d", g.generation, lastGen)
	}
	// A new lifetime: generations not stored may be numbered again.
	e.listedTo = map[int32]string{}
	e.maxGen = lastGen
}

func (e *propEnv) checkInvariants() {
	t := e.t
	g := e.group()
	if g == nil {
		// Deleted, expired or never created: only then may the
		// generation start over.
		e.maxGen = 0
		e.listedTo = map[int32]string{}
		e.stored = map[int32]map[string][]byte{}
		if len(e.waiting) != 0 {
			t.Fatalf("no group but requests %v waiting", e.waiting)
		}
		return
	}
	// The group's own bookkeeping: the rules the core checks after every
	// input with the invariants tag, run here in every build.
	e.c.checkInvariants()
	// Generation only grows.
	if g.generation < e.maxGen {
		t.Fatalf("generation went from %d to %d", e.maxGen, g.generation)
	}
	e.maxGen = g.generation
	// group.max.size holds outside the join phase; during it, the members
	// of the last generation plus at most that many newcomers.
	if limit := e.cfg.MaxSize; len(g.members) > limit && (g.state != PreparingRebalance || len(g.members) > 2*limit) {
		t.Fatalf("%d members in %s, group.max.size %d", len(g.members), g.state, limit)
	}
	// The requests the group holds.
	held := map[uint64]bool{}
	for _, m := range g.members {
		if m.awaitingJoin {
			held[m.joinRequestID] = true
		}
		if m.awaitingSync {
			held[m.syncRequestID] = true
		}
	}
	// Every request the group holds is one still waiting, and vice versa:
	// none lost, none answered twice.
	if len(held) != len(e.waiting) {
		t.Fatalf("group holds %v, waiting %v", held, e.waiting)
	}
	for r := range e.waiting {
		if !held[r] {
			t.Fatalf("request %d is waiting but the group does not hold it", r)
		}
	}
	// The log rebuilds every group at rest.
	if g.state == Stable || g.state == Empty {
		replica := e.newCoordinator()
		for _, le := range e.log {
			rec, _ := DecodeRecord(le.key, le.value)
			if err := replica.Replay(rec); err != nil {
				t.Fatal(err)
			}
		}
		if err := replica.CompleteLoad(e.nowMs); err != nil {
			t.Fatal(err)
		}
		if diffs := replayDiffs(e.c, replica); len(diffs) > 0 {
			t.Fatalf("replay differs from the live group:\n%v", diffs)
		}
	}
}

// TestGroupInvariants runs random request sequences against one group
// (rapid prints the seed of a failure; -rapid.seed replays it, and
// -rapid.checks=5000 runs longer).
func TestGroupInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e := newPropEnv(t)
		steps := rapid.IntRange(1, 120).Draw(t, "steps")
		for range steps {
			e.step()
		}
	})
}
