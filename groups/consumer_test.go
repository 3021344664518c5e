package groups

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"pgregory.net/rapid"
)

// Tests of the KIP-848 consumer group protocol (consumer.go): the
// scenarios of Kafka's GroupMetadataManager and CurrentAssignmentBuilder,
// driven as a driver would (every record through the codec into a
// simulated __consumer_offsets partition), with the protocol's safety
// property checked after every step: no partition is owned by two members,
// neither as the members were told nor as the coordinator records it.

// fataler is what the helpers need of *testing.T and *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// cgEnv drives one Coordinator for consumer-group tests.
type cgEnv struct {
	t       fataler
	cfg     Config
	c       *Coordinator
	nowMs   int64
	log     []logEntry
	nextReq uint64
	topics  []TopicMeta // as last given to UpdateTopics
	// records are those of the last drain, for tests that look at them.
	records []Record
}

func newCGEnv(t fataler, topics ...TopicMeta) *cgEnv {
	t.Helper()
	e := &cgEnv{t: t, cfg: testConfig()}
	e.c = e.newCoordinator()
	if err := e.c.CompleteLoad(0); err != nil {
		t.Fatalf("CompleteLoad: %v", err)
	}
	e.setTopics(topics...)
	return e
}

func (e *cgEnv) newCoordinator() *Coordinator {
	e.t.Helper()
	n := 0
	c, err := NewCoordinator(e.cfg, 0, 1, func(prefix string) string {
		n++
		return fmt.Sprintf("%s-gen%d", prefix, n)
	})
	if err != nil {
		e.t.Fatalf("NewCoordinator: %v", err)
	}
	return c
}

// topic makes a topic whose id spells its name, so ids sort as names do.
func topic(name string, partitions int32) TopicMeta {
	var id [16]byte
	copy(id[:], name)
	return TopicMeta{Name: name, ID: id, Partitions: partitions}
}

func (e *cgEnv) setTopics(topics ...TopicMeta) {
	e.t.Helper()
	e.topics = slices.Clone(topics)
	e.c.UpdateTopics(topics, e.nowMs)
	if rd := e.drain(); len(rd.Responses) != 0 {
		e.t.Fatalf("UpdateTopics answered %d requests", len(rd.Responses))
	}
}

func (e *cgEnv) tick(ms int64) {
	e.t.Helper()
	e.nowMs += ms
	e.c.Tick(e.nowMs)
	if rd := e.drain(); len(rd.Responses) != 0 {
		e.t.Fatalf("Tick answered %d requests", len(rd.Responses))
	}
}

// drain takes the Ready and appends its records to the log through the
// codec, as the driver does.
func (e *cgEnv) drain() Ready {
	e.t.Helper()
	rd := e.c.Ready()
	for _, rec := range rd.Records {
		key, value := rec.EncodeKey(), rec.EncodeValue()
		back, err := DecodeRecord(key, value)
		if err != nil || !back.Equal(rec) {
			e.t.Fatalf("record does not survive its encoding: %v\n%+v\n%+v", err, rec, back)
		}
		e.log = append(e.log, logEntry{key: key, value: value, producer: rec.Producer})
	}
	e.records = rd.Records
	return rd
}

// answer drains and returns the one response to request r.
func (e *cgEnv) answer(r uint64) Response {
	e.t.Helper()
	rd := e.drain()
	if len(rd.Responses) != 1 || rd.Responses[0].RequestID != r {
		e.t.Fatalf("request %d: want exactly its response, got %+v", r, rd.Responses)
	}
	return rd.Responses[0]
}

func (e *cgEnv) request() uint64 {
	e.nextReq++
	return e.nextReq
}

// send sends a ConsumerGroupHeartbeat and returns its answer.
func (e *cgEnv) send(req ConsumerHeartbeatRequest) ConsumerHeartbeatResponse {
	e.t.Helper()
	req.RequestID = e.request()
	e.c.ConsumerHeartbeat(req, e.nowMs)
	resp := e.answer(req.RequestID).ConsumerHB
	if resp == nil {
		e.t.Fatalf("heartbeat answered with another kind of response")
	}
	if resp.ErrorCode == 0 && req.MemberEpoch >= 0 {
		// The configured interval for a member at rest, a tenth of it
		// for one with a step of its rebalance still to take.
		want := e.cfg.ConsumerHeartbeatIntervalMs
		if m := e.c.groups[req.Group].consumer.members[resp.MemberID]; m.state != memberStable {
			want = reconcilingHeartbeatMs(want)
		}
		if resp.HeartbeatIntervalMs != want {
			e.t.Fatalf("heartbeat interval %d, want %d", resp.HeartbeatIntervalMs, want)
		}
	}
	return *resp
}

func (e *cgEnv) describe(group string) ConsumerDescribeResponse {
	e.t.Helper()
	r := e.request()
	e.c.ConsumerDescribe(ConsumerDescribeRequest{RequestID: r, Group: group})
	if len(e.c.ready.Records) != 0 {
		e.t.Fatalf("ConsumerDescribe wrote records")
	}
	return *e.answer(r).ConsumerDescribe
}

func (e *cgEnv) commit(req CommitRequest) []int16 {
	e.t.Helper()
	req.RequestID = e.request()
	if req.RetentionTimeMs == 0 {
		req.RetentionTimeMs = -1
	}
	e.c.CommitOffsets(req, e.nowMs)
	var codes []int16
	for _, p := range e.answer(req.RequestID).Commit.Partitions {
		codes = append(codes, p.ErrorCode)
	}
	return codes
}

func (e *cgEnv) fetch(group string) []FetchedOffset {
	e.t.Helper()
	r := e.request()
	e.c.FetchOffsets(FetchOffsetsRequest{RequestID: r, Group: group})
	return e.answer(r).Fetch.Offsets
}

func (e *cgEnv) listed() map[string]ListedGroup {
	e.t.Helper()
	gs, code := e.c.ListGroups()
	if code != 0 {
		e.t.Fatalf("ListGroups: %s", errName(code))
	}
	out := map[string]ListedGroup{}
	for _, g := range gs {
		out[g.Group] = g
	}
	return out
}

// replica rebuilds a coordinator from the log as a new leader would:
// Replay every record, CompleteLoad, then the same topics.
func (e *cgEnv) replica() *Coordinator {
	e.t.Helper()
	c := e.newCoordinator()
	for _, le := range e.log {
		rec, err := DecodeRecord(le.key, le.value)
		if err != nil {
			e.t.Fatalf("decode: %v", err)
		}
		if err := c.Replay(rec); err != nil {
			e.t.Fatalf("replay: %v", err)
		}
	}
	if err := c.CompleteLoad(e.nowMs); err != nil {
		e.t.Fatalf("CompleteLoad: %v", err)
	}
	c.UpdateTopics(e.topics, e.nowMs)
	if rd := c.Ready(); !rd.Empty() {
		e.t.Fatalf("loading wrote %d records and %d responses", len(rd.Records), len(rd.Responses))
	}
	return c
}

func (e *cgEnv) fmtParts(s partSet) string { return fmtParts(s) }

// fmtParts prints partitions by topic name (the ids of topic() spell
// it), sorted.
func fmtParts(s partSet) string {
	var out []string
	for _, tp := range s.list() {
		name := strings.TrimRight(string(tp.TopicID[:]), "\x00")
		for _, p := range tp.Partitions {
			out = append(out, fmt.Sprintf("%s/%d", name, p))
		}
	}
	return "[" + strings.Join(out, " ") + "]"
}

// fmtDescribe prints a ConsumerDescribeResponse in a form that compares
// equal whatever the nil-ness of its empty slices.
func fmtDescribe(d ConsumerDescribeResponse) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s state=%s epoch=%d assignmentEpoch=%d assignor=%s", errName(d.ErrorCode), d.Group, d.State, d.Epoch, d.AssignmentEpoch, d.AssignorName)
	for _, m := range d.Members {
		fmt.Fprintf(&b, "\n %s instance=%q rack=%q epoch=%d client=%s/%s topics=%v regex=%q assigned=%v target=%v",
			m.MemberID, m.InstanceID, m.RackID, m.MemberEpoch, m.ClientID, m.ClientHost, m.SubscribedTopicNames,
			m.SubscribedTopicRegex, fmtParts(partSetOf(m.Assignment)), fmtParts(partSetOf(m.TargetAssignment)))
	}
	return b.String()
}

// parts is a set of partitions of one topic.
func parts(t TopicMeta, ps ...int32) partSet {
	s := partSet{}
	for _, p := range ps {
		s[tpID{t.ID, p}] = struct{}{}
	}
	return s
}

func allParts(ts ...TopicMeta) partSet {
	s := partSet{}
	for _, t := range ts {
		for p := range t.Partitions {
			s[tpID{t.ID, p}] = struct{}{}
		}
	}
	return s
}

func union(sets ...partSet) partSet {
	out := partSet{}
	for _, s := range sets {
		maps.Copy(out, s)
	}
	return out
}

func minus(a, b partSet) partSet {
	out := partSet{}
	for k := range a {
		if _, ok := b[k]; !ok {
			out[k] = struct{}{}
		}
	}
	return out
}

// cgClient is a well-behaved KIP-848 consumer: it owns exactly what it
// was last told, and reports that on every heartbeat.
type cgClient struct {
	group, id, instance string
	topics              []string
	regex               string
	rebalanceTimeoutMs  int32
	epoch               int32
	owned               partSet // nil: not in the group
	// revoking: partitions the client was told to give up and still
	// owns while its revocation callback runs; it reports them as owned
	// until then. beat finishes the revocation before it sends.
	revoking partSet
	// lost: the last response never arrived, so the next heartbeat is a
	// full one with the epoch and partitions the client still has, as
	// Kafka's client does after a timeout.
	lost bool
	// sentOwned is the owned partitions last sent and answered: like
	// Kafka's client, a heartbeat may leave them out (null) while they
	// are unchanged.
	sentOwned partSet
	// describable is the member's TopicDescribable (nil: every topic).
	describable func(topic string) bool
}

func newClient(id string, topics ...string) *cgClient {
	return &cgClient{group: "g", id: id, topics: topics, rebalanceTimeoutMs: 30000}
}

func (e *cgEnv) joinRequest(cl *cgClient) ConsumerHeartbeatRequest {
	return ConsumerHeartbeatRequest{
		Group: cl.group, MemberID: cl.id, MemberEpoch: JoinMemberEpoch, InstanceID: cl.instance,
		RebalanceTimeoutMs:   cl.rebalanceTimeoutMs,
		SubscribedTopicNames: cl.topics, HasSubscribedTopicNames: cl.regex == "",
		SubscribedTopicRegex: cl.regex, HasSubscribedTopicRegex: cl.regex != "",
		TopicPartitions: []TopicPartitions{}, HasTopicPartitions: true,
		ClientID: "client-" + cl.id, ClientHost: "/127.0.0.1", TopicDescribable: cl.describable,
	}
}

// holds is what the client owns: its assignment and what it is still
// revoking.
func (cl *cgClient) holds() partSet { return union(cl.owned, cl.revoking) }

func (e *cgEnv) beatRequest(cl *cgClient) ConsumerHeartbeatRequest {
	req := ConsumerHeartbeatRequest{
		Group: cl.group, MemberID: cl.id, MemberEpoch: cl.epoch, RebalanceTimeoutMs: -1,
		TopicPartitions: cl.holds().list(), HasTopicPartitions: true,
		ClientID: "client-" + cl.id, ClientHost: "/127.0.0.1", TopicDescribable: cl.describable,
	}
	if cl.lost {
		full := e.joinRequest(cl)
		full.MemberEpoch, full.TopicPartitions = cl.epoch, cl.holds().list()
		req = full
	}
	return req
}

// join sends cl's first heartbeat and applies the answer.
func (e *cgEnv) join(cl *cgClient) ConsumerHeartbeatResponse {
	e.t.Helper()
	resp := e.send(e.joinRequest(cl))
	if resp.ErrorCode == 0 {
		if resp.Assignment == nil {
			e.t.Fatalf("join of %s answered without an assignment", cl.id)
		}
		cl.epoch, cl.owned, cl.revoking, cl.lost = resp.MemberEpoch, partSetOf(*resp.Assignment), nil, false
	}
	return resp
}

// beat sends cl's heartbeat (epoch and owned partitions) and applies the
// answer.
func (e *cgEnv) beat(cl *cgClient) ConsumerHeartbeatResponse {
	e.t.Helper()
	cl.revoking = nil
	resp := e.send(e.beatRequest(cl))
	e.apply(cl, resp)
	return resp
}

func (e *cgEnv) apply(cl *cgClient, resp ConsumerHeartbeatResponse) {
	e.t.Helper()
	if resp.ErrorCode != 0 {
		return
	}
	if resp.MemberID != cl.id {
		e.t.Fatalf("heartbeat of %s answered for member %s", cl.id, resp.MemberID)
	}
	if cl.lost && resp.Assignment == nil {
		e.t.Fatalf("full heartbeat of %s answered without the assignment", cl.id)
	}
	cl.epoch, cl.lost = resp.MemberEpoch, false
	if resp.Assignment != nil {
		next := partSetOf(*resp.Assignment)
		cl.revoking = minus(union(cl.revoking, minus(cl.owned, next)), next)
		cl.owned = next
	}
}

// mustBeat is beat expecting no error.
func (e *cgEnv) mustBeat(cl *cgClient) ConsumerHeartbeatResponse {
	e.t.Helper()
	resp := e.beat(cl)
	if resp.ErrorCode != 0 {
		e.t.Fatalf("heartbeat of %s at epoch %d: %s %s", cl.id, cl.epoch, errName(resp.ErrorCode), resp.ErrorMessage)
	}
	return resp
}

func (e *cgEnv) mustJoin(cl *cgClient) ConsumerHeartbeatResponse {
	e.t.Helper()
	resp := e.join(cl)
	if resp.ErrorCode != 0 {
		e.t.Fatalf("join of %s: %s %s", cl.id, errName(resp.ErrorCode), resp.ErrorMessage)
	}
	return resp
}

// settle heartbeats the clients in rounds until a round changes nothing,
// and fails if that takes more than maxRounds.
func (e *cgEnv) settle(maxRounds int, clients ...*cgClient) {
	e.t.Helper()
	for range maxRounds {
		changed := false
		for _, cl := range clients {
			before, epoch := cl.owned, cl.epoch
			e.mustBeat(cl)
			e.checkSafety(clients...)
			if cl.epoch != epoch || !cl.owned.equal(before) {
				changed = true
			}
		}
		if !changed {
			return
		}
	}
	e.t.Fatalf("no fixed point after %d rounds:\n%s", maxRounds, fmtDescribe(e.describe(clients[0].group)))
}

// checkSafety checks the protocol's safety property and the coordinator's
// bookkeeping of it:
//   - no partition is in what two clients were last told they own;
//   - no partition is assigned or pending revocation at two members of
//     a group, and the owner index says exactly that;
//   - what a client owns, the coordinator still counts as its (assigned
//     or pending revocation), so it cannot give it to another;
//   - ConsumerGroupDescribe shows no partition at two members, and no
//     member epoch beyond the group epoch.
func (e *cgEnv) checkSafety(clients ...*cgClient) {
	e.t.Helper()
	told := map[tpID]string{}
	for _, cl := range clients {
		for k := range cl.holds() {
			if other, ok := told[k]; ok {
				e.t.Fatalf("%s told to both %s and %s", e.fmtParts(partSet{k: {}}), other, cl.id)
			}
			told[k] = cl.id
		}
	}
	for _, id := range e.c.sortedGroupIDs() {
		g := e.c.groups[id]
		if !g.isConsumer() {
			continue
		}
		cg := g.consumer
		// The group's own state: the rules the core checks after every
		// input with the invariants tag, run here in every build.
		cg.checkInvariants(id)
		for _, cl := range clients {
			if cl.group != id || cl.owned == nil {
				continue
			}
			m := cg.members[cl.id]
			if m == nil {
				if len(cl.holds()) > 0 {
					e.t.Fatalf("client %s owns %s but is no member", cl.id, e.fmtParts(cl.holds()))
				}
				continue
			}
			if !subsetOf(cl.holds(), union(m.assigned, m.pending)) {
				e.t.Fatalf("client %s owns %s; the coordinator counts only %s (pending %s) as its",
					cl.id, e.fmtParts(cl.holds()), e.fmtParts(m.assigned), e.fmtParts(m.pending))
			}
		}
		d := e.describe(id)
		seen := partSet{}
		for _, m := range d.Members {
			a := partSetOf(m.Assignment)
			if len(minus(a, seen)) != len(a) {
				e.t.Fatalf("ConsumerGroupDescribe shows a partition at two members:\n%s", fmtDescribe(d))
			}
			maps.Copy(seen, a)
			if m.MemberEpoch > d.Epoch {
				e.t.Fatalf("ConsumerGroupDescribe: member epoch > group epoch:\n%s", fmtDescribe(d))
			}
		}
	}
}

// describedMember returns member id of d, failing if absent.
func describedMember(t fataler, d ConsumerDescribeResponse, id string) ConsumerDescribedMember {
	t.Helper()
	for _, m := range d.Members {
		if m.MemberID == id {
			return m
		}
	}
	t.Fatalf("member %s not described:\n%s", id, fmtDescribe(d))
	return ConsumerDescribedMember{}
}

func wantCode(t *testing.T, what string, got, want int16) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: %s, want %s", what, errName(got), errName(want))
	}
}

func wantState(t *testing.T, e *cgEnv, group, state string, epoch, assignmentEpoch int32) ConsumerDescribeResponse {
	t.Helper()
	d := e.describe(group)
	if d.ErrorCode != 0 || d.State != state || d.Epoch != epoch || d.AssignmentEpoch != assignmentEpoch {
		t.Fatalf("want %s epoch=%d assignmentEpoch=%d, got:\n%s", state, epoch, assignmentEpoch, fmtDescribe(d))
	}
	return d
}

func hasKind(recs []Record, kind RecordKind, tombstone bool) bool {
	return slices.ContainsFunc(recs, func(r Record) bool { return r.Kind == kind && r.Tombstone() == tombstone })
}

// TestConsumerFirstMemberGetsAllPartitions: the first member of a new
// group gets every partition in the first group epoch, and the group's
// records say so.
func TestConsumerFirstMemberGetsAllPartitions(t *testing.T) {
	t1 := topic("t1", 6)
	e := newCGEnv(t, t1)
	a := newClient("a", "t1")
	resp := e.mustJoin(a)
	if resp.MemberEpoch != 1 || !a.owned.equal(allParts(t1)) {
		t.Fatalf("join: epoch %d assignment %s", resp.MemberEpoch, e.fmtParts(a.owned))
	}
	for _, kind := range []RecordKind{ConsumerGroupMetadataRecord, ConsumerGroupMemberMetadataRecord,
		ConsumerGroupTargetAssignmentMemberRecord, ConsumerGroupTargetAssignmentMetadataRecord, ConsumerGroupCurrentMemberAssignmentRecord} {
		if !hasKind(e.records, kind, false) {
			t.Errorf("join wrote no record of kind %d: %+v", kind, e.records)
		}
	}
	d := wantState(t, e, "g", "Stable", 1, 1)
	m := describedMember(t, d, "a")
	if m.MemberEpoch != 1 || !partSetOf(m.Assignment).equal(allParts(t1)) || !partSetOf(m.TargetAssignment).equal(allParts(t1)) ||
		!slices.Equal(m.SubscribedTopicNames, []string{"t1"}) || m.ClientID != "client-a" || d.AssignorName != "uniform" {
		t.Fatalf("described:\n%s", fmtDescribe(d))
	}
	if lg := e.listed()["g"]; lg.Type != ConsumerGroupType || lg.State != "Stable" || lg.ProtocolType != ConsumerProtocolType {
		t.Fatalf("ListGroups: %+v", lg)
	}
	// A plain heartbeat changes nothing and writes nothing.
	resp = e.mustBeat(a)
	if resp.MemberEpoch != 1 || resp.Assignment != nil || len(e.records) != 0 {
		t.Fatalf("idle heartbeat: %+v, records %+v", resp, e.records)
	}
	// ConsumerGroupHeartbeat v0 lets the coordinator name the member.
	anon := e.send(ConsumerHeartbeatRequest{Group: "g2", MemberEpoch: 0, RebalanceTimeoutMs: 1000,
		SubscribedTopicNames: []string{"t1"}, HasSubscribedTopicNames: true})
	if anon.ErrorCode != 0 || anon.MemberID == "" || anon.MemberEpoch != 1 {
		t.Fatalf("join without member id: %+v", anon)
	}
	e.checkSafety(a)
}

// TestConsumerSecondMemberWaitsForRevocation walks one rebalance step by
// step: the first member gives up half its partitions (keeping its
// epoch) before the second gets them; the second gets at once what no
// one holds.
func TestConsumerSecondMemberWaitsForRevocation(t *testing.T) {
	t1, t2 := topic("t1", 6), topic("t2", 2)
	e := newCGEnv(t, t1, t2)
	a, b := newClient("a", "t1"), newClient("b", "t1", "t2")
	clients := []*cgClient{a, b}
	e.mustJoin(a)
	e.checkSafety(clients...)
	wantState(t, e, "g", "Stable", 1, 1)

	// b joins: a new epoch and target. b gets only what is free (t2);
	// its share of t1 is still a's.
	resp := e.mustJoin(b)
	e.checkSafety(clients...)
	d := wantState(t, e, "g", "Reconciling", 2, 2)
	targetA := partSetOf(describedMember(t, d, "a").TargetAssignment)
	targetB := partSetOf(describedMember(t, d, "b").TargetAssignment)
	if len(targetA) != 4 || len(targetB) != 4 || len(union(targetA, targetB)) != 8 {
		t.Fatalf("target not balanced over 8 partitions: a %s b %s", e.fmtParts(targetA), e.fmtParts(targetB))
	}
	withheld := minus(targetB, allParts(t2))
	if resp.MemberEpoch != 2 || !b.owned.equal(allParts(t2)) || len(withheld) == 0 {
		t.Fatalf("b joined at epoch %d with %s; target %s", resp.MemberEpoch, e.fmtParts(b.owned), e.fmtParts(targetB))
	}
	if m := e.c.groups["g"].consumer.members["b"]; m.state != memberUnreleased {
		t.Fatalf("b in state %d, want unreleased", m.state)
	}

	// a's next heartbeat: a smaller assignment, same epoch.
	resp = e.mustBeat(a)
	e.checkSafety(clients...)
	if resp.MemberEpoch != 1 || resp.Assignment == nil || !a.owned.equal(targetA) {
		t.Fatalf("a told epoch %d assignment %v, want epoch 1 and %s", resp.MemberEpoch, resp.Assignment, e.fmtParts(targetA))
	}
	if m := e.c.groups["g"].consumer.members["a"]; m.state != memberUnrevoked || !m.pending.equal(withheld) {
		t.Fatalf("a: state %d pending %s, want unrevoked with %s", m.state, e.fmtParts(m.pending), e.fmtParts(withheld))
	}
	wantState(t, e, "g", "Reconciling", 2, 2)

	// b heartbeats before a acknowledged: still nothing of t1.
	resp = e.mustBeat(b)
	e.checkSafety(clients...)
	if resp.Assignment != nil || !b.owned.equal(allParts(t2)) {
		t.Fatalf("b given %v before a revoked", resp.Assignment)
	}

	// a acknowledges (owned = its new assignment): it moves to epoch 2.
	resp = e.mustBeat(a)
	e.checkSafety(clients...)
	if resp.MemberEpoch != 2 || !a.owned.equal(targetA) {
		t.Fatalf("a after revoking: epoch %d owns %s", resp.MemberEpoch, e.fmtParts(a.owned))
	}
	wantState(t, e, "g", "Reconciling", 2, 2)

	// b's next heartbeat gets the rest.
	resp = e.mustBeat(b)
	e.checkSafety(clients...)
	if resp.MemberEpoch != 2 || !b.owned.equal(targetB) {
		t.Fatalf("b: epoch %d owns %s, want %s", resp.MemberEpoch, e.fmtParts(b.owned), e.fmtParts(targetB))
	}
	d = wantState(t, e, "g", "Stable", 2, 2)
	for _, m := range d.Members {
		if m.MemberEpoch != 2 || !partSetOf(m.Assignment).equal(partSetOf(m.TargetAssignment)) {
			t.Fatalf("not reconciled:\n%s", fmtDescribe(d))
		}
	}
}

// twoStable returns an env with members a and b Stable at epoch 2 over
// t1 (6 partitions), a having revoked once (previous epoch 1).
func twoStable(t *testing.T) (*cgEnv, *cgClient, *cgClient) {
	e := newCGEnv(t, topic("t1", 6))
	a, b := newClient("a", "t1"), newClient("b", "t1")
	e.mustJoin(a)
	e.mustJoin(b)
	e.settle(5, a, b)
	wantState(t, e, "g", "Stable", 2, 2)
	return e, a, b
}

// TestConsumerFencing: epochs a member cannot be at are fenced; the
// previous epoch is accepted when a response was lost and the member
// owns no more than it has now.
func TestConsumerFencing(t *testing.T) {
	e, a, b := twoStable(t)
	m := e.c.groups["g"].consumer.members["a"]
	if m.epoch != 2 || m.previousEpoch != 1 {
		t.Fatalf("a at epoch %d previous %d, want 2 and 1", m.epoch, m.previousEpoch)
	}
	before := fmtDescribe(e.describe("g"))
	logLen := len(e.log)
	fenced := func(what string, req ConsumerHeartbeatRequest, want int16) {
		t.Helper()
		resp := e.send(req)
		wantCode(t, what, resp.ErrorCode, want)
		if resp.Assignment != nil || resp.HeartbeatIntervalMs != 0 {
			t.Fatalf("%s: error response carries %+v", what, resp)
		}
		if after := fmtDescribe(e.describe("g")); after != before || len(e.log) != logLen {
			t.Fatalf("%s changed the group:\n%s\n%s", what, before, after)
		}
	}
	req := e.beatRequest(a)
	req.MemberEpoch = 3
	fenced("epoch ahead of the member's", req, errFencedMemberEpoch)
	req = e.beatRequest(a)
	req.MemberEpoch, req.TopicPartitions = 1, allParts(topic("t1", 6)).list()
	fenced("previous epoch owning more than its assignment", req, errFencedMemberEpoch)
	req = e.beatRequest(a)
	req.MemberEpoch, req.TopicPartitions, req.HasTopicPartitions = 1, nil, false
	fenced("previous epoch without owned partitions", req, errFencedMemberEpoch)
	req = e.beatRequest(b) // b joined at epoch 2: its previous epoch is 0
	req.MemberEpoch = 1
	fenced("an epoch b never had", req, errFencedMemberEpoch)
	req = e.beatRequest(a)
	req.MemberID = "nobody"
	fenced("unknown member", req, errUnknownMemberID)
	req = e.beatRequest(a)
	req.Group = "other"
	resp := e.send(req)
	wantCode(t, "heartbeat to a group that does not exist", resp.ErrorCode, errUnknownMemberID)
	if _, ok := e.listed()["other"]; ok {
		t.Fatalf("a heartbeat created group other")
	}

	// The response moving a to epoch 2 was lost: a asks again from epoch
	// 1 with what it has, and is answered with epoch 2.
	req = e.beatRequest(a)
	req.MemberEpoch = 1
	resp = e.send(req)
	if resp.ErrorCode != 0 || resp.MemberEpoch != 2 {
		t.Fatalf("lost-response retry: %s epoch %d", errName(resp.ErrorCode), resp.MemberEpoch)
	}
	// A subset of its assignment is fine too (it had not taken all yet).
	req = e.beatRequest(a)
	req.MemberEpoch, req.TopicPartitions = 1, nil
	if resp := e.send(req); resp.ErrorCode != 0 || resp.MemberEpoch != 2 {
		t.Fatalf("lost-response retry owning nothing: %s epoch %d", errName(resp.ErrorCode), resp.MemberEpoch)
	}
	e.checkSafety(a, b)

	// A fenced member rejoins with epoch 0 and its member id: it starts
	// over as a new member, in a new epoch.
	a.owned = partSet{}
	resp = e.mustJoin(a)
	if resp.MemberEpoch != 4 {
		t.Fatalf("rejoin at epoch %d, want 4 (leave and join)", resp.MemberEpoch)
	}
	e.checkSafety(a, b)
	e.settle(5, a, b)
	wantState(t, e, "g", "Stable", 4, 4)
}

// TestConsumerSessionTimeout: a member that stops heartbeating is
// removed when its session ends, in a new epoch that hands its
// partitions to the others.
func TestConsumerSessionTimeout(t *testing.T) {
	e, a, b := twoStable(t)
	session := int64(e.cfg.ConsumerSessionTimeoutMs)
	e.tick(session - 1000)
	e.mustBeat(a) // a stays alive, b is silent
	e.tick(999)
	wantState(t, e, "g", "Stable", 2, 2)
	e.tick(1) // b's session ends: last heartbeat at 0
	if !hasKind(e.records, ConsumerGroupMemberMetadataRecord, true) || !hasKind(e.records, ConsumerGroupCurrentMemberAssignmentRecord, true) {
		t.Fatalf("removal wrote %+v", e.records)
	}
	d := wantState(t, e, "g", "Reconciling", 3, 3)
	if len(d.Members) != 1 || d.Members[0].MemberID != "a" {
		t.Fatalf("after b's session:\n%s", fmtDescribe(d))
	}
	b.owned, b.revoking = nil, nil // b is gone
	resp := e.mustBeat(a)
	if resp.MemberEpoch != 3 || !a.owned.equal(allParts(topic("t1", 6))) {
		t.Fatalf("a after b left: epoch %d owns %s", resp.MemberEpoch, e.fmtParts(a.owned))
	}
	wantState(t, e, "g", "Stable", 3, 3)
	wantCode(t, "b after its session", e.beat(b).ErrorCode, errUnknownMemberID)
	// The last member's session ends: the group is Empty, and kept (its
	// epoch is stored).
	e.tick(session)
	wantState(t, e, "g", "Empty", 4, 4)
}

// TestConsumerRevocationTimeout: a member that keeps heartbeating but
// does not give up partitions within its rebalance timeout is removed.
func TestConsumerRevocationTimeout(t *testing.T) {
	e := newCGEnv(t, topic("t1", 6))
	a, b := newClient("a", "t1"), newClient("b", "t1")
	a.rebalanceTimeoutMs = 10000
	e.mustJoin(a)
	e.mustJoin(b)
	e.tick(1000)
	all := a.owned
	e.mustBeat(a) // told to revoke at 1000
	if e.c.groups["g"].consumer.members["a"].state != memberUnrevoked {
		t.Fatalf("a not revoking")
	}
	// a keeps heartbeating but still owns everything it had.
	for range 3 {
		e.tick(3000)
		req := e.beatRequest(a)
		req.TopicPartitions = all.list()
		if resp := e.send(req); resp.ErrorCode != 0 || resp.MemberEpoch != 1 {
			t.Fatalf("unrevoked heartbeat: %+v", resp)
		}
		e.mustBeat(b)
		if len(b.owned) != 0 {
			t.Fatalf("b given %s while a still owns it", e.fmtParts(b.owned))
		}
	}
	e.tick(999) // 10999: the deadline is 11000
	if e.c.groups["g"].consumer.members["a"] == nil {
		t.Fatalf("a removed before its rebalance timeout")
	}
	e.tick(1)
	if e.c.groups["g"].consumer.members["a"] != nil {
		t.Fatalf("a not removed at its rebalance timeout")
	}
	wantState(t, e, "g", "Reconciling", 3, 3)
	a.owned, a.revoking = nil, nil
	resp := e.mustBeat(b)
	if resp.MemberEpoch != 3 || !b.owned.equal(all) {
		t.Fatalf("b after a's removal: epoch %d owns %s", resp.MemberEpoch, e.fmtParts(b.owned))
	}
	wantCode(t, "a after removal", e.beat(a).ErrorCode, errUnknownMemberID)
}

// TestConsumerLeave: a member leaving with epoch -1 is gone at once, in a
// new epoch.
func TestConsumerLeave(t *testing.T) {
	e, a, b := twoStable(t)
	resp := e.send(ConsumerHeartbeatRequest{Group: "g", MemberID: "b", MemberEpoch: LeaveMemberEpoch, RebalanceTimeoutMs: -1})
	if resp.ErrorCode != 0 || resp.MemberEpoch != LeaveMemberEpoch || resp.MemberID != "b" {
		t.Fatalf("leave: %+v", resp)
	}
	b.owned, b.revoking = nil, nil
	d := wantState(t, e, "g", "Reconciling", 3, 3)
	if len(d.Members) != 1 {
		t.Fatalf("after leave:\n%s", fmtDescribe(d))
	}
	e.mustBeat(a)
	if !a.owned.equal(allParts(topic("t1", 6))) || a.epoch != 3 {
		t.Fatalf("a after b left: epoch %d owns %s", a.epoch, e.fmtParts(a.owned))
	}
	wantCode(t, "b after leaving", e.beat(b).ErrorCode, errUnknownMemberID)
	resp = e.send(ConsumerHeartbeatRequest{Group: "g", MemberID: "b", MemberEpoch: LeaveMemberEpoch, RebalanceTimeoutMs: -1})
	wantCode(t, "second leave", resp.ErrorCode, errUnknownMemberID)
}

// TestConsumerStaticMemberRejoins: a static member leaving with epoch -2
// keeps its partitions; the same instance rejoining under a new member id
// gets them back without a new epoch, while a second live member with the
// instance id is refused.
func TestConsumerStaticMemberRejoins(t *testing.T) {
	t1 := topic("t1", 6)
	e := newCGEnv(t, t1)
	a, b := newClient("a", "t1"), newClient("b", "t1")
	a.instance, b.instance = "ia", "ib"
	e.mustJoin(a)
	e.mustJoin(b)
	e.settle(5, a, b)
	wantState(t, e, "g", "Stable", 2, 2)
	held := b.owned

	resp := e.send(ConsumerHeartbeatRequest{Group: "g", MemberID: "b", InstanceID: "ib", MemberEpoch: StaticLeaveMemberEpoch, RebalanceTimeoutMs: -1})
	if resp.ErrorCode != 0 || resp.MemberEpoch != StaticLeaveMemberEpoch {
		t.Fatalf("static leave: %+v", resp)
	}
	b.owned, b.revoking = nil, nil // the client closed
	// As Kafka (isReconciledTo): a member away at epoch -2 is not
	// reconciled, so the group reports Reconciling until it is back.
	wantState(t, e, "g", "Reconciling", 2, 2)
	if r := e.mustBeat(a); r.Assignment != nil || r.MemberEpoch != 2 {
		t.Fatalf("a after b's static leave: %+v", r)
	}

	b2 := newClient("b2", "t1")
	b2.instance = "ib"
	resp = e.mustJoin(b2)
	if resp.MemberEpoch != 2 || !b2.owned.equal(held) {
		t.Fatalf("b2 rejoined at epoch %d with %s, want epoch 2 with %s", resp.MemberEpoch, e.fmtParts(b2.owned), e.fmtParts(held))
	}
	e.checkSafety(a, b2)
	d := wantState(t, e, "g", "Stable", 2, 2)
	if len(d.Members) != 2 || describedMember(t, d, "b2").InstanceID != "ib" || !partSetOf(describedMember(t, d, "b2").TargetAssignment).equal(held) {
		t.Fatalf("after static rejoin:\n%s", fmtDescribe(d))
	}
	if r := e.mustBeat(a); r.Assignment != nil || r.MemberEpoch != 2 {
		t.Fatalf("a after b2 replaced b: %+v", r)
	}
	wantCode(t, "old static member id", e.beat(b).ErrorCode, errUnknownMemberID)

	b3 := newClient("b3", "t1")
	b3.instance = "ib"
	logLen := len(e.log)
	wantCode(t, "second live member with instance ib", e.join(b3).ErrorCode, errUnreleasedInstanceID)
	if len(e.log) != logLen {
		t.Fatalf("refused join wrote records")
	}
	wantState(t, e, "g", "Stable", 2, 2)

	// A static member that left and never came back is removed when its
	// session ends.
	resp = e.send(ConsumerHeartbeatRequest{Group: "g", MemberID: "b2", InstanceID: "ib", MemberEpoch: StaticLeaveMemberEpoch, RebalanceTimeoutMs: -1})
	wantCode(t, "static leave of b2", resp.ErrorCode, 0)
	b2.owned, b2.revoking = nil, nil
	e.tick(int64(e.cfg.ConsumerSessionTimeoutMs) - 1)
	e.mustBeat(a)
	e.tick(1)
	d = wantState(t, e, "g", "Reconciling", 3, 3)
	if len(d.Members) != 1 {
		t.Fatalf("b2 kept after its session:\n%s", fmtDescribe(d))
	}
	e.mustBeat(a)
	if !a.owned.equal(allParts(t1)) {
		t.Fatalf("a after b2 expired owns %s", e.fmtParts(a.owned))
	}
}

// TestConsumerStaticLeaveSurvivesReplay: a static member's leave (epoch
// -2) is a state the next coordinator must know, as Kafka stores it (a
// current-assignment record with member epoch -2): otherwise the restarted
// instance is refused with UNRELEASED_INSTANCE_ID by the new coordinator
// until the old member's session ends.
func TestConsumerStaticLeaveSurvivesReplay(t *testing.T) {
	e := newCGEnv(t, topic("t1", 4))
	a := newClient("a", "t1")
	a.instance = "ia"
	e.mustJoin(a)
	held := a.owned
	resp := e.send(ConsumerHeartbeatRequest{Group: "g", MemberID: "a", InstanceID: "ia", MemberEpoch: StaticLeaveMemberEpoch, RebalanceTimeoutMs: -1})
	wantCode(t, "static leave", resp.ErrorCode, 0)
	e.c = e.replica()
	a2 := newClient("a2", "t1")
	a2.instance = "ia"
	resp = e.join(a2)
	if resp.ErrorCode != 0 || !a2.owned.equal(held) {
		t.Fatalf("a static leave (epoch -2) is not stored; after a coordinator move the restarted instance gets %s (want NONE with %s)",
			errName(resp.ErrorCode), e.fmtParts(held))
	}
}

// TestConsumerZombieStaticLeaveIsFenced: a static member removed by its
// session timeout, whose instance id a new member has since taken, leaves
// (epoch -1 with its old member id and the instance id). As in Kafka
// (consumerGroupLeave: throwIfInstanceIdIsFenced) it must get
// FENCED_INSTANCE_ID and the instance's new member must stay.
func TestConsumerZombieStaticLeaveIsFenced(t *testing.T) {
	e := newCGEnv(t, topic("t1", 4))
	old := newClient("old", "t1")
	old.instance = "i1"
	e.mustJoin(old)
	e.tick(int64(e.cfg.ConsumerSessionTimeoutMs)) // old's session ends
	old.owned, old.revoking = nil, nil
	cur := newClient("new", "t1")
	cur.instance = "i1"
	e.mustJoin(cur)
	d := wantState(t, e, "g", "Stable", 3, 3)
	for _, epoch := range []int32{LeaveMemberEpoch, StaticLeaveMemberEpoch} {
		resp := e.send(ConsumerHeartbeatRequest{Group: "g", MemberID: "old", InstanceID: "i1", MemberEpoch: epoch, RebalanceTimeoutMs: -1})
		after := e.describe("g")
		m := e.c.groups["g"].consumer.members["new"]
		if resp.ErrorCode != errFencedInstanceID || fmtDescribe(after) != fmtDescribe(d) || m == nil || m.leftStatic {
			t.Fatalf("leave with epoch %d by zombie member old (instance i1 now held by new) answered %s and left the group as:\n%s\n(want FENCED_INSTANCE_ID, group unchanged:\n%s)",
				epoch, errName(resp.ErrorCode), fmtDescribe(after), fmtDescribe(d))
		}
	}
}

// TestConsumerHeartbeatValidation: malformed requests are refused before
// they touch any group.
func TestConsumerHeartbeatValidation(t *testing.T) {
	e := newCGEnv(t, topic("t1", 3))
	base := func() ConsumerHeartbeatRequest { return e.joinRequest(newClient("a", "t1")) }
	for _, tc := range []struct {
		name   string
		mutate func(*ConsumerHeartbeatRequest)
		want   int16
	}{
		{"empty group", func(r *ConsumerHeartbeatRequest) { r.Group = "" }, errInvalidGroupID},
		{"no rebalance timeout on join", func(r *ConsumerHeartbeatRequest) { r.RebalanceTimeoutMs = -1 }, errInvalidRequest},
		{"negative rebalance timeout", func(r *ConsumerHeartbeatRequest) { r.RebalanceTimeoutMs = -5 }, errInvalidRequest},
		{"no subscription on join", func(r *ConsumerHeartbeatRequest) {
			r.HasSubscribedTopicNames, r.SubscribedTopicNames = false, nil
		}, errInvalidRequest},
		{"owned partitions on join", func(r *ConsumerHeartbeatRequest) {
			r.TopicPartitions = parts(topic("t1", 3), 0).list()
		}, errInvalidRequest},
		{"bad regex", func(r *ConsumerHeartbeatRequest) {
			r.HasSubscribedTopicNames, r.SubscribedTopicNames = false, nil
			r.HasSubscribedTopicRegex, r.SubscribedTopicRegex = true, "t1(["
		}, errInvalidRegex},
		{"unknown server assignor", func(r *ConsumerHeartbeatRequest) { r.ServerAssignor = "sticky" }, errUnsupportedAssignor},
		{"epoch below -2", func(r *ConsumerHeartbeatRequest) { r.MemberEpoch = -3 }, errInvalidRequest},
		{"static leave without instance id", func(r *ConsumerHeartbeatRequest) { r.MemberEpoch = StaticLeaveMemberEpoch }, errInvalidRequest},
		{"heartbeat without member id", func(r *ConsumerHeartbeatRequest) { r.MemberEpoch, r.MemberID = 1, "" }, errInvalidRequest},
		{"too many topics", func(r *ConsumerHeartbeatRequest) {
			r.SubscribedTopicNames = make([]string, maxSubscribedTopics+1)
		}, errInvalidRequest},
	} {
		req := base()
		tc.mutate(&req)
		resp := e.send(req)
		wantCode(t, tc.name, resp.ErrorCode, tc.want)
		if resp.ErrorMessage == "" {
			t.Errorf("%s: no error message", tc.name)
		}
		if len(e.log) != 0 || len(e.listed()) != 0 {
			t.Fatalf("%s: refused request left records %d or groups %v", tc.name, len(e.log), e.listed())
		}
	}
	// The same request, valid, is accepted (the table's base is sound).
	if resp := e.send(base()); resp.ErrorCode != 0 {
		t.Fatalf("valid join: %s", errName(resp.ErrorCode))
	}
	// A known assignor is accepted and becomes the group's.
	req := e.joinRequest(newClient("b", "t1"))
	req.ServerAssignor = "range"
	req.Group = "g2"
	if resp := e.send(req); resp.ErrorCode != 0 {
		t.Fatalf("range assignor: %s", errName(resp.ErrorCode))
	}
	if d := e.describe("g2"); d.AssignorName != "range" {
		t.Fatalf("assignor %q, want range", d.AssignorName)
	}
}

// TestConsumerRegexSubscription: a regex subscription follows the topics:
// a matching topic created later, or a subscribed topic that grows, makes
// a new epoch whose target the member picks up.
func TestConsumerRegexSubscription(t *testing.T) {
	oa, ob, pay := topic("orders-a", 2), topic("orders-b", 2), topic("payments", 3)
	e := newCGEnv(t, oa, ob, pay)
	a := &cgClient{group: "g", id: "a", regex: ".*orders-.*", rebalanceTimeoutMs: 30000}
	e.mustJoin(a)
	if !a.owned.equal(allParts(oa, ob)) {
		t.Fatalf("regex member owns %s", e.fmtParts(a.owned))
	}
	if m := describedMember(t, e.describe("g"), "a"); m.SubscribedTopicRegex != ".*orders-.*" {
		t.Fatalf("described regex %q", m.SubscribedTopicRegex)
	}
	// A topic the regex does not match changes nothing.
	e.setTopics(oa, ob, pay, topic("other", 4))
	wantState(t, e, "g", "Stable", 1, 1)

	oc := topic("orders-c", 2)
	e.setTopics(oa, ob, pay, oc)
	wantState(t, e, "g", "Reconciling", 2, 2)
	e.mustBeat(a)
	if a.epoch != 2 || !a.owned.equal(allParts(oa, ob, oc)) {
		t.Fatalf("after orders-c: epoch %d owns %s", a.epoch, e.fmtParts(a.owned))
	}
	wantState(t, e, "g", "Stable", 2, 2)

	// orders-a grows to 4 partitions: a new epoch, the new partitions
	// assigned.
	oa4 := topic("orders-a", 4)
	e.setTopics(oa4, ob, pay, oc)
	wantState(t, e, "g", "Reconciling", 3, 3)
	e.mustBeat(a)
	if a.epoch != 3 || !a.owned.equal(allParts(oa4, ob, oc)) {
		t.Fatalf("after growth: epoch %d owns %s", a.epoch, e.fmtParts(a.owned))
	}
	// A named subscription and a regex in one group: both resolve.
	b := newClient("b", "payments")
	e.mustJoin(b)
	e.settle(5, a, b)
	d := wantState(t, e, "g", "Stable", 4, 4)
	if got := union(partSetOf(describedMember(t, d, "a").Assignment), partSetOf(describedMember(t, d, "b").Assignment)); !got.equal(allParts(oa4, ob, oc, pay)) {
		t.Fatalf("group covers %s", e.fmtParts(got))
	}
	if !subsetOf(allParts(pay), b.owned) {
		t.Fatalf("b (payments only) owns %s", e.fmtParts(b.owned))
	}
	// A subscribed topic deleted: a new epoch without it.
	e.setTopics(oa4, ob, pay)
	wantState(t, e, "g", "Reconciling", 5, 5)
	e.settle(5, a, b)
	if _, ok := a.owned[tpID{oc.ID, 0}]; ok {
		t.Fatalf("a still owns the deleted orders-c: %s", e.fmtParts(a.owned))
	}
	e.checkSafety(a, b)
}

// TestConsumerRegexAuthorizedTopics: a regex resolves only to the topics
// the member may describe (Kafka's filterTopicDescribeAuthorizedTopics),
// each member by its own rights; a right granted or taken away counts
// from the member's next heartbeat; a member loaded from the log, whose
// rights are unknown until it heartbeats, resolves only to topics it
// already has partitions of.
func TestConsumerRegexAuthorizedTopics(t *testing.T) {
	a1, a2, b1 := topic("a-1", 2), topic("a-2", 2), topic("b-1", 1)
	e := newCGEnv(t, a1, a2, b1)
	rights := map[string]map[string]bool{"a": {"a-1": true}, "b": {"a-2": true}}
	client := func(id string) *cgClient {
		return &cgClient{group: "g", id: id, regex: "a-.*", rebalanceTimeoutMs: 30000,
			describable: func(topic string) bool { return rights[id][topic] }}
	}
	a := client("a")
	e.mustJoin(a)
	if !a.owned.equal(allParts(a1)) {
		t.Fatalf("a may describe a-1 only, owns %s", e.fmtParts(a.owned))
	}
	// A matching topic a may not describe changes nothing.
	a3 := topic("a-3", 1)
	e.setTopics(a1, a2, b1, a3)
	wantState(t, e, "g", "Stable", 1, 1)

	// b, in the same group, may describe a-2 only.
	b := client("b")
	e.mustJoin(b)
	e.settle(5, a, b)
	if !a.owned.equal(allParts(a1)) || !b.owned.equal(allParts(a2)) {
		t.Fatalf("a owns %s, b owns %s", e.fmtParts(a.owned), e.fmtParts(b.owned))
	}
	// A right granted counts from a's next heartbeat.
	rights["a"]["a-3"] = true
	e.mustBeat(a)
	e.settle(5, a, b)
	if !a.owned.equal(allParts(a1, a3)) {
		t.Fatalf("after a-3 is granted a owns %s", e.fmtParts(a.owned))
	}
	// A right taken away: a gives a-1 up, and nobody else may have it.
	delete(rights["a"], "a-1")
	e.mustBeat(a)
	e.settle(5, a, b)
	if !a.owned.equal(allParts(a3)) || !b.owned.equal(allParts(a2)) {
		t.Fatalf("after a-1 is taken away a owns %s, b owns %s", e.fmtParts(a.owned), e.fmtParts(b.owned))
	}
	e.checkSafety(a, b)

	// A new leader: until they heartbeat, the members resolve to what
	// they hold, not to every match.
	c := e.replica()
	g := c.groups["g"]
	for id, want := range map[string][]string{"a": {"a-3"}, "b": {"a-2"}} {
		if got := c.subscribedTopics(g.consumer.members[id]); !slices.Equal(got, want) {
			t.Fatalf("loaded member %s resolves to %v, want %v", id, got, want)
		}
	}
	// Without authorization a regex resolves to every match.
	e2 := newCGEnv(t, a1, a2, b1)
	free := &cgClient{group: "g", id: "f", regex: "a-.*", rebalanceTimeoutMs: 30000}
	e2.mustJoin(free)
	if !free.owned.equal(allParts(a1, a2)) {
		t.Fatalf("without authorization the member owns %s", e2.fmtParts(free.owned))
	}
}

// TestConsumerRegexMatchesEveryTopic: a regex is matched in full against
// every topic name, as Kafka's GroupMetadataManager does over its metadata
// image: a user topic whose name starts with "__" is no different, and a
// regex that names an internal topic gets it.
func TestConsumerRegexMatchesEveryTopic(t *testing.T) {
	orders, uorders := topic("orders", 2), topic("__orders", 3)
	offsets := topic(OffsetsTopic, 4)
	ordersX := topic("orders-x", 1)
	all := []TopicMeta{orders, uorders, offsets, ordersX}
	for _, tc := range []struct {
		regex string
		want  partSet
	}{
		{"__orders", allParts(uorders)},
		{".*orders", allParts(orders, uorders)},
		{"__.*", allParts(uorders, offsets)},
		{"__consumer_offsets", allParts(offsets)},
		// In full: "orders" is not "orders-x", nor "__orders".
		{"orders", allParts(orders)},
		{"orders|orders-x", allParts(orders, ordersX)},
		{"_*orders", allParts(orders, uorders)},
	} {
		t.Run(tc.regex, func(t *testing.T) {
			e := newCGEnv(t, all...)
			a := &cgClient{group: "g", id: "a", regex: tc.regex, rebalanceTimeoutMs: 30000}
			e.mustJoin(a)
			if !a.owned.equal(tc.want) {
				t.Fatalf("regex %q: member owns %s, want %s", tc.regex, e.fmtParts(a.owned), e.fmtParts(tc.want))
			}
		})
	}

	// A user topic named __orders created later is picked up like any
	// other.
	e := newCGEnv(t, orders)
	a := &cgClient{group: "g", id: "a", regex: ".*orders", rebalanceTimeoutMs: 30000}
	e.mustJoin(a)
	e.setTopics(orders, uorders)
	wantState(t, e, "g", "Reconciling", 2, 2)
	e.mustBeat(a)
	if !a.owned.equal(allParts(orders, uorders)) {
		t.Fatalf("after __orders was created: member owns %s", e.fmtParts(a.owned))
	}
}

// TestConsumerOffsetCommit: a consumer group's commits carry member
// epochs (OffsetCommit v9+); OffsetDelete spares subscribed topics;
// DeleteGroups waits for the members to leave and then leaves nothing of
// the group in the log.
func TestConsumerOffsetCommit(t *testing.T) {
	e, a, b := twoStable(t)
	off := func(topic string) []OffsetCommit {
		return []OffsetCommit{{Topic: topic, Partition: 0, Offset: 42, LeaderEpoch: -1}}
	}
	codes := e.commit(CommitRequest{Group: "g", MemberID: "a", Generation: 2, Version: 9, Offsets: append(off("t1"), off("old")...)})
	if !slices.Equal(codes, []int16{0, 0}) || !hasKind(e.records, OffsetCommitRecord, false) {
		t.Fatalf("commit at the member's epoch: %v", codes)
	}
	for _, tc := range []struct {
		name string
		req  CommitRequest
		want int16
	}{
		{"stale epoch", CommitRequest{MemberID: "a", Generation: 0, Version: 9}, errStaleMemberEpoch},
		{"epoch from the future", CommitRequest{MemberID: "a", Generation: 3, Version: 9}, errStaleMemberEpoch},
		{"OffsetCommit v8", CommitRequest{MemberID: "a", Generation: 2, Version: 8}, kerr.UnsupportedVersion.Code},
		{"outside group management while members exist", CommitRequest{Generation: -1, Version: 9}, errUnknownMemberID},
		{"unknown member", CommitRequest{MemberID: "zz", Generation: 2, Version: 9}, errUnknownMemberID},
	} {
		tc.req.Group, tc.req.Offsets = "g", off("t1")
		codes := e.commit(tc.req)
		wantCode(t, tc.name, codes[0], tc.want)
		if len(e.records) != 0 {
			t.Fatalf("%s: refused commit wrote %+v", tc.name, e.records)
		}
	}

	// OffsetDelete: the subscribed topic is in use, the other goes.
	r := e.request()
	e.c.DeleteOffsets(OffsetDeleteRequest{RequestID: r, Group: "g", Partitions: []TopicPartition{{"t1", 0}, {"old", 0}}}, e.nowMs)
	od := e.answer(r).OffsetDelete
	if od.ErrorCode != 0 || len(od.Partitions) != 2 || od.Partitions[0].ErrorCode != errGroupSubscribed || od.Partitions[1].ErrorCode != 0 {
		t.Fatalf("OffsetDelete: %+v", od)
	}
	if len(e.records) != 1 || e.records[0].Kind != OffsetCommitRecord || !e.records[0].Tombstone() || e.records[0].TopicPartition.Topic != "old" {
		t.Fatalf("OffsetDelete wrote %+v", e.records)
	}
	if f := e.fetch("g"); len(f) != 1 || f[0].Topic != "t1" || f[0].Offset != 42 {
		t.Fatalf("offsets after OffsetDelete: %+v", f)
	}

	// DeleteGroups: not while members are in it.
	r = e.request()
	e.c.DeleteGroup(DeleteGroupRequest{RequestID: r, Group: "g"}, e.nowMs)
	wantCode(t, "delete with members", e.answer(r).Delete.ErrorCode, errNonEmptyGroup)
	for _, cl := range []*cgClient{a, b} {
		resp := e.send(ConsumerHeartbeatRequest{Group: "g", MemberID: cl.id, MemberEpoch: LeaveMemberEpoch, RebalanceTimeoutMs: -1})
		wantCode(t, "leave "+cl.id, resp.ErrorCode, 0)
	}
	wantState(t, e, "g", "Empty", 4, 4)
	// An Empty consumer group takes commits from outside group management.
	wantCode(t, "commit to the Empty group", e.commit(CommitRequest{Group: "g", Generation: -1, Version: 9, Offsets: off("t2")})[0], 0)
	r = e.request()
	e.c.DeleteGroup(DeleteGroupRequest{RequestID: r, Group: "g"}, e.nowMs)
	wantCode(t, "delete when Empty", e.answer(r).Delete.ErrorCode, 0)
	if _, ok := e.listed()["g"]; ok {
		t.Fatalf("group listed after delete")
	}
	// Compacted, the log holds nothing of the group: every key's last
	// value is a tombstone.
	last := map[string][]byte{}
	for _, le := range e.log {
		last[string(le.key)] = le.value
	}
	for k, v := range last {
		if len(v) != 0 {
			rec, _ := DecodeRecord([]byte(k), v)
			t.Errorf("after DeleteGroups the log still holds %+v", rec)
		}
	}
	if c := e.replica(); len(c.groups) != 0 {
		t.Fatalf("replay after delete gives groups %v", c.sortedGroupIDs())
	}
}

// TestConsumerClassicInterplay: the two protocols do not mix in one
// group, except that an Empty classic group holding only offsets becomes
// a consumer group keeping them.
func TestConsumerClassicInterplay(t *testing.T) {
	e := newCGEnv(t, topic("t1", 3))
	classicJoin := func(group string) *JoinResponse {
		r := e.request()
		e.c.Join(JoinRequest{RequestID: r, Group: group, ClientID: "c", SessionTimeoutMs: 10000, RebalanceTimeoutMs: 10000,
			ProtocolType: ConsumerProtocolType, Protocols: parseProtocols(ConsumerProtocolType, "range:t1")}, e.nowMs)
		return e.answer(r).Join
	}
	// A classic group with a member.
	j := classicJoin("classic")
	wantCode(t, "classic join", j.ErrorCode, 0)
	resp := e.send(e.joinRequest(&cgClient{group: "classic", id: "x", topics: []string{"t1"}, rebalanceTimeoutMs: 1000}))
	wantCode(t, "ConsumerGroupHeartbeat on a classic group in use", resp.ErrorCode, errGroupIDNotFound)
	if g := e.c.groups["classic"]; g.isConsumer() || len(g.members) != 1 {
		t.Fatalf("classic group changed by the refused heartbeat")
	}

	// A classic group that had a generation and emptied: its metadata
	// must give way to the consumer group's, or a replay brings back the
	// classic one.
	r := e.request()
	e.c.Sync(SyncRequest{RequestID: r, Group: "classic", Generation: j.Generation, MemberID: j.MemberID,
		Assignments: []MemberAssignment{{MemberID: j.MemberID, Assignment: []byte{}}}}, e.nowMs)
	wantCode(t, "sync", e.answer(r).Sync.ErrorCode, 0)
	r = e.request()
	e.c.Leave(LeaveRequest{RequestID: r, Group: "classic", Members: []LeavingMember{{MemberID: j.MemberID}}}, e.nowMs)
	wantCode(t, "leave", e.answer(r).Leave.ErrorCode, 0)
	if g := e.c.groups["classic"]; g.state != Empty || g.generation == 0 {
		t.Fatalf("classic group %s gen %d", g.state, g.generation)
	}
	wantCode(t, "commit to the emptied classic group", e.commit(CommitRequest{Group: "classic", Generation: -1,
		Offsets: []OffsetCommit{{Topic: "t1", Partition: 1, Offset: 7, LeaderEpoch: -1}}})[0], 0)
	c1 := newClient("c1", "t1")
	c1.group = "classic"
	e.mustJoin(c1)
	if !hasKind(e.records, GroupMetadataRecord, true) {
		t.Fatalf("conversion of a classic group with a generation wrote no group tombstone: %+v", e.records)
	}

	// An Empty classic group holding only offsets becomes a consumer
	// group, keeping them.
	wantCode(t, "offsets-only commit", e.commit(CommitRequest{Group: "offsets", Generation: -1,
		Offsets: []OffsetCommit{{Topic: "t1", Partition: 0, Offset: 5, LeaderEpoch: -1}}})[0], 0)
	if lg := e.listed()["offsets"]; lg.Type != ClassicGroupType || lg.State != "Empty" {
		t.Fatalf("offsets-only group listed as %+v", lg)
	}
	o := newClient("o", "t1")
	o.group = "offsets"
	e.mustJoin(o)
	if f := e.fetch("offsets"); len(f) != 1 || f[0].Offset != 5 {
		t.Fatalf("offsets after conversion: %+v", f)
	}

	// A consumer group refuses classic joins and classic describes.
	j = classicJoin("offsets")
	wantCode(t, "JoinGroup on a consumer group", j.ErrorCode, errInconsistentGroupProtocol)
	r = e.request()
	e.c.DescribeGroup(DescribeGroupRequest{RequestID: r, Group: "offsets"})
	wantCode(t, "DescribeGroups on a consumer group", e.answer(r).Describe.ErrorCode, errGroupIDNotFound)
	r = e.request()
	e.c.ConsumerDescribe(ConsumerDescribeRequest{RequestID: r, Group: "fresh"})
	wantCode(t, "ConsumerGroupDescribe of no group", e.answer(r).ConsumerDescribe.ErrorCode, errGroupIDNotFound)
	classicJoin("fresh")
	r = e.request()
	e.c.ConsumerDescribe(ConsumerDescribeRequest{RequestID: r, Group: "fresh"})
	wantCode(t, "ConsumerGroupDescribe of a classic group", e.answer(r).ConsumerDescribe.ErrorCode, errGroupIDNotFound)

	lg := e.listed()
	for id, want := range map[string]ListedGroup{
		"classic": {Type: ConsumerGroupType, State: "Stable"},
		"offsets": {Type: ConsumerGroupType, State: "Stable"},
		"fresh":   {Type: ClassicGroupType, State: lg["fresh"].State},
	} {
		if lg[id].Type != want.Type || lg[id].State != want.State {
			t.Errorf("ListGroups %s: %+v, want %+v", id, lg[id], want)
		}
	}
	if s := lg["fresh"].State; s != PreparingRebalance.String() && s != CompletingRebalance.String() {
		t.Errorf("classic group fresh listed in state %q", s)
	}

	// After a coordinator move both converted groups are consumer groups
	// with their offsets.
	c := e.replica()
	for _, id := range []string{"classic", "offsets"} {
		g := c.groups[id]
		if g == nil || !g.isConsumer() || len(g.offsets) != 1 {
			t.Fatalf("replayed group %s: %+v", id, g)
		}
	}
}

// TestConsumerReplay: a scenario stopped at every step is rebuilt from
// the log with the same epochs, members, assignments, targets and state,
// and its members carry on with the new coordinator unfenced.
func TestConsumerReplay(t *testing.T) {
	t1, t2 := topic("t1", 6), topic("t2", 3)
	e := newCGEnv(t, t1, t2)
	a, b, c, d := newClient("a", "t1", "t2"), newClient("b", "t1"), newClient("c", "t1", "t2"), newClient("d", "t2")
	c.instance = "ic"
	clients := []*cgClient{a, b, c, d}
	check := func(step string) {
		t.Helper()
		e.checkSafety(clients...)
		r := e.replica()
		live := fmtDescribe(e.describe("g"))
		req := e.request()
		r.ConsumerDescribe(ConsumerDescribeRequest{RequestID: req, Group: "g"})
		replayed := fmtDescribe(*r.Ready().Responses[0].ConsumerDescribe)
		if live != replayed {
			t.Fatalf("after %s the replay differs:\nlive:\n%s\nreplay:\n%s", step, live, replayed)
		}
		lg, rg := e.c.groups["g"].consumer, r.groups["g"].consumer
		for id, m := range lg.members {
			rm := rg.members[id]
			if rm.previousEpoch != m.previousEpoch || rm.state != m.state || !rm.pending.equal(m.pending) {
				t.Fatalf("after %s member %s: live prev=%d state=%d pending=%s, replay prev=%d state=%d pending=%s", step, id,
					m.previousEpoch, m.state, e.fmtParts(m.pending), rm.previousEpoch, rm.state, e.fmtParts(rm.pending))
			}
		}
		if !maps.Equal(lg.owner, rg.owner) {
			t.Fatalf("after %s owners differ: %v vs %v", step, lg.owner, rg.owner)
		}
	}
	e.mustJoin(a)
	check("a joined")
	e.mustJoin(b)
	check("b joined")
	e.mustBeat(a) // a revoking
	check("a told to revoke")
	e.mustJoin(c)
	check("c joined while a revokes")
	e.commit(CommitRequest{Group: "g", MemberID: "a", Generation: a.epoch, Version: 9,
		Offsets: []OffsetCommit{{Topic: "t1", Partition: 0, Offset: 10, LeaderEpoch: 3, Metadata: "m"}}})
	e.mustJoin(d)
	check("d joined")
	e.mustBeat(b)
	e.mustBeat(a)
	check("a revoked")
	resp := e.send(ConsumerHeartbeatRequest{Group: "g", MemberID: "d", MemberEpoch: LeaveMemberEpoch, RebalanceTimeoutMs: -1})
	wantCode(t, "d leaves", resp.ErrorCode, 0)
	d.owned, d.revoking = nil, nil
	clients = clients[:3]
	check("d left")
	e.mustBeat(c)
	e.mustBeat(a)
	check("mid-reconciliation")

	// The coordinator moves now, in the middle of a reconciliation.
	before := e.fetch("g")
	e.c = e.replica()
	if after := e.fetch("g"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("offsets after the move: %+v, before %+v", after, before)
	}
	for _, cl := range clients {
		epoch := cl.epoch
		if resp := e.beat(cl); resp.ErrorCode != 0 || resp.MemberEpoch < epoch {
			t.Fatalf("%s at epoch %d on the new coordinator: %s epoch %d", cl.id, epoch, errName(resp.ErrorCode), resp.MemberEpoch)
		}
		e.checkSafety(clients...)
	}
	e.settle(6, clients...)
	dd := e.describe("g")
	if dd.State != "Stable" {
		t.Fatalf("not Stable after the move:\n%s", fmtDescribe(dd))
	}
	check("settled on the new coordinator")
}

// TestConsumerGroupInvariants runs random sequences of joins, heartbeats
// (some of whose responses are lost), leaves, static restarts, ticks and
// topic changes against one consumer group, checking the safety property
// after every step, and then checks that the group converges once its
// members just heartbeat. rapid prints the seed of a failure
// (-rapid.seed replays it; -rapid.checks=2000 runs longer).
func TestConsumerGroupInvariants(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		topics := map[string]TopicMeta{"t1": topic("t1", 3), "t2": topic("t2", 2)}
		topicList := func() []TopicMeta {
			var out []TopicMeta
			for _, name := range slices.Sorted(maps.Keys(topics)) {
				out = append(out, topics[name])
			}
			return out
		}
		e := newCGEnv(rt, topicList()...)
		if rapid.Bool().Draw(rt, "rangeAssignor") {
			e.cfg.ConsumerAssignors = []string{"range", "uniform"}
			e.c = e.newCoordinator()
			if err := e.c.CompleteLoad(0); err != nil {
				rt.Fatalf("%v", err)
			}
			e.setTopics(topicList()...)
		}
		var clients []*cgClient // live: joined or about to (re)join
		var left []*cgClient    // static members that left with -2
		nextID := 0
		newID := func() string { nextID++; return fmt.Sprintf("m%d", nextID) }
		subscriptions := []func(*cgClient){
			func(cl *cgClient) { cl.topics = []string{"t1"} },
			func(cl *cgClient) { cl.topics = []string{"t1", "t2"} },
			func(cl *cgClient) { cl.topics = []string{"t2", "t3"} },
			func(cl *cgClient) { cl.topics, cl.regex = nil, "t[0-9]" },
		}
		member := func(cl *cgClient) *consumerMember {
			if g := e.c.groups["g"]; g != nil && g.isConsumer() {
				return g.consumer.members[cl.id]
			}
			return nil
		}
		// instanceTaken reports whether a member other than cl's holds
		// cl's instance id.
		instanceTaken := func(cl *cgClient) bool {
			h := snapshotHolder(e.c, cl.instance)
			return cl.instance != "" && h != nil && h.id != cl.id
		}
		drop := func(cl *cgClient) {
			clients = slices.DeleteFunc(clients, func(o *cgClient) bool { return o == cl })
		}
		// join sends cl's join and checks the answer against the
		// instance's holder; it reports whether cl is in the group.
		join := func(cl *cgClient, lose bool) bool {
			var holder *staticHolder
			if cl.instance != "" {
				if holder = snapshotHolder(e.c, cl.instance); holder != nil && holder.id == cl.id {
					holder = nil // its own old member: it starts over
				}
			}
			resp := e.send(e.joinRequest(cl))
			switch {
			case holder != nil && !holder.leftStatic:
				// Another live member has the instance: Kafka's
				// client gives up.
				if resp.ErrorCode != errUnreleasedInstanceID {
					rt.Fatalf("join of %s with instance %s held by live %s: %s", cl.id, cl.instance, holder.id, errName(resp.ErrorCode))
				}
				return false
			case resp.ErrorCode != 0:
				rt.Fatalf("join of %s: %s %s", cl.id, errName(resp.ErrorCode), resp.ErrorMessage)
			case holder != nil:
				holder.checkRestart(e, cl, resp)
				left = slices.DeleteFunc(left, func(o *cgClient) bool { return o.id == holder.id })
			}
			if !lose {
				cl.epoch, cl.owned, cl.revoking, cl.lost = resp.MemberEpoch, partSetOf(*resp.Assignment), nil, false
			}
			// Else the client never learns it joined: it joins again,
			// which starts it over.
			return true
		}
		// step runs one heartbeat of cl; lose drops its response.
		step := func(cl *cgClient, lose bool) {
			if cl.owned == nil {
				if !join(cl, lose) {
					drop(cl)
				}
				return
			}
			if len(cl.revoking) > 0 && rapid.Bool().Draw(rt, "revoked") {
				cl.revoking = nil // the revocation callback finished
			}
			req := e.beatRequest(cl)
			if !cl.lost && cl.sentOwned != nil && cl.sentOwned.equal(cl.holds()) && rapid.Bool().Draw(rt, "omitOwned") {
				req.TopicPartitions, req.HasTopicPartitions = nil, false
			}
			resp := e.send(req)
			switch resp.ErrorCode {
			case 0:
				if !lose {
					if req.HasTopicPartitions {
						cl.sentOwned = partSetOf(req.TopicPartitions)
					}
					e.apply(cl, resp)
				} else {
					cl.lost, cl.sentOwned = true, nil
				}
			case errFencedMemberEpoch, errUnknownMemberID:
				// Kafka's client gives up its partitions and joins
				// again with epoch 0 and the same member id.
				cl.owned, cl.revoking, cl.epoch, cl.lost, cl.sentOwned = nil, nil, 0, false, nil
			default:
				rt.Fatalf("heartbeat of %s: %s %s", cl.id, errName(resp.ErrorCode), resp.ErrorMessage)
			}
		}
		// zombies: a client whose member the coordinator removed (its
		// session or rebalance timeout ran out) stopped in the meantime,
		// as far as ownership goes: it lost its partitions. It comes back
		// with its old member id and epoch, and must be turned away.
		reapZombies := func() {
			for _, cl := range clients {
				if len(cl.holds()) > 0 && member(cl) == nil {
					cl.owned, cl.revoking, cl.sentOwned = partSet{}, nil, nil
				}
			}
		}
		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for range steps {
			switch op := rapid.IntRange(0, 13).Draw(rt, "op"); {
			case op <= 1 && len(clients) < 4: // a new member
				cl := &cgClient{group: "g", id: newID(), rebalanceTimeoutMs: rapid.SampledFrom([]int32{5000, 20000}).Draw(rt, "rebalanceTimeout")}
				rapid.SampledFrom(subscriptions).Draw(rt, "subscription")(cl)
				if rapid.Bool().Draw(rt, "static") {
					cl.instance = rapid.SampledFrom([]string{"i1", "i2"}).Draw(rt, "instance")
				}
				if join(cl, false) {
					clients = append(clients, cl)
				}
			case op <= 6 && len(clients) > 0: // heartbeat
				cl := rapid.SampledFrom(clients).Draw(rt, "beater")
				step(cl, rapid.IntRange(0, 9).Draw(rt, "lose") == 0)
			case op == 7 && len(clients) > 0: // leave
				cl := rapid.SampledFrom(clients).Draw(rt, "leaver")
				if member(cl) == nil && instanceTaken(cl) {
					// A zombie static member whose instance another
					// member holds now is fenced, and goes away.
					req := ConsumerHeartbeatRequest{Group: "g", MemberID: cl.id, InstanceID: cl.instance, MemberEpoch: LeaveMemberEpoch, RebalanceTimeoutMs: -1}
					if resp := e.send(req); resp.ErrorCode != errFencedInstanceID {
						rt.Fatalf("leave of zombie %s: %s, want FENCED_INSTANCE_ID", cl.id, errName(resp.ErrorCode))
					}
					drop(cl)
					continue
				}
				static := cl.instance != "" && cl.owned != nil && rapid.Bool().Draw(rt, "staticLeave")
				req := ConsumerHeartbeatRequest{Group: "g", MemberID: cl.id, InstanceID: cl.instance, MemberEpoch: LeaveMemberEpoch, RebalanceTimeoutMs: -1}
				if static {
					req.MemberEpoch = StaticLeaveMemberEpoch
				}
				want := int16(0)
				if member(cl) == nil {
					want = errUnknownMemberID
				}
				if resp := e.send(req); resp.ErrorCode != want {
					rt.Fatalf("leave of %s: %s, want %s", cl.id, errName(resp.ErrorCode), errName(want))
				}
				drop(cl)
				if static {
					left = append(left, cl)
				}
				cl.owned, cl.revoking = nil, nil
			case op == 8 && len(left) > 0: // a static member that left restarts
				old := rapid.SampledFrom(left).Draw(rt, "restarter")
				left = slices.DeleteFunc(left, func(o *cgClient) bool { return o == old })
				holder := snapshotHolder(e.c, old.instance)
				if holder == nil || holder.id != old.id {
					continue // its session ended
				}
				cl := &cgClient{group: "g", id: newID(), instance: old.instance, topics: old.topics, regex: old.regex, rebalanceTimeoutMs: old.rebalanceTimeoutMs}
				if !join(cl, false) {
					rt.Fatalf("static restart of %s refused", cl.instance)
				}
				clients = append(clients, cl)
			case op <= 10: // time passes
				e.tick(rapid.SampledFrom([]int64{500, 4000, 15000, 46000}).Draw(rt, "ms"))
				reapZombies()
				left = slices.DeleteFunc(left, func(o *cgClient) bool { return member(o) == nil })
			case op == 11: // a topic grows
				name := rapid.SampledFrom([]string{"t1", "t2"}).Draw(rt, "grow")
				if t := topics[name]; t.Partitions < 8 {
					t.Partitions += int32(rapid.IntRange(1, 2).Draw(rt, "by"))
					topics[name] = t
				}
				e.setTopics(topicList()...)
			case op == 12: // t3 is created or deleted
				if _, ok := topics["t3"]; ok {
					delete(topics, "t3")
				} else {
					topics["t3"] = topic("t3", 2)
				}
				e.setTopics(topicList()...)
			}
			e.checkSafety(clients...)
		}

		// Convergence: the static members that left come back, then
		// everyone just heartbeats, with no other change.
		for _, old := range slices.Clone(left) {
			if m := member(old); m != nil {
				cl := &cgClient{group: "g", id: newID(), instance: old.instance, topics: old.topics, regex: old.regex, rebalanceTimeoutMs: old.rebalanceTimeoutMs}
				if !join(cl, false) {
					rt.Fatalf("static restart of %s refused", cl.instance)
				}
				clients = append(clients, cl)
			}
		}
		if len(clients) == 0 {
			return
		}
		for range 3 {
			for _, cl := range slices.Clone(clients) {
				if cl.owned == nil || cl.lost || member(cl) == nil {
					step(cl, false)
				}
			}
		}
		if len(clients) == 0 {
			return
		}
		e.checkSafety(clients...)
		e.settle(8, clients...)
		d := e.describe("g")
		if d.State != "Stable" || d.Epoch != d.AssignmentEpoch || len(d.Members) != len(clients) {
			rt.Fatalf("not converged (%d clients):\n%s", len(clients), fmtDescribe(d))
		}
		covered := partSet{}
		subscribed := partSet{}
		for _, m := range d.Members {
			a := partSetOf(m.Assignment)
			if m.MemberEpoch != d.Epoch || !a.equal(partSetOf(m.TargetAssignment)) {
				rt.Fatalf("member %s not at the target:\n%s", m.MemberID, fmtDescribe(d))
			}
			if len(minus(a, covered)) != len(a) {
				rt.Fatalf("partition assigned twice:\n%s", fmtDescribe(d))
			}
			maps.Copy(covered, a)
			for _, name := range e.c.subscribedTopics(e.c.groups["g"].consumer.members[m.MemberID]) {
				maps.Copy(subscribed, allParts(topics[name]))
			}
		}
		if !covered.equal(subscribed) {
			rt.Fatalf("assignments cover %s, subscribed %s:\n%s", e.fmtParts(covered), e.fmtParts(subscribed), fmtDescribe(d))
		}
		for _, cl := range clients {
			if m := describedMember(rt, d, cl.id); !cl.owned.equal(partSetOf(m.Assignment)) {
				rt.Fatalf("client %s owns %s, described %s", cl.id, e.fmtParts(cl.owned), e.fmtParts(partSetOf(m.Assignment)))
			}
		}
		// The converged group is what the log rebuilds.
		r := e.replica()
		req := e.request()
		r.ConsumerDescribe(ConsumerDescribeRequest{RequestID: req, Group: "g"})
		if live, replayed := fmtDescribe(d), fmtDescribe(*r.Ready().Responses[0].ConsumerDescribe); live != replayed {
			rt.Fatalf("replay differs:\nlive:\n%s\nreplay:\n%s", live, replayed)
		}
	})
}

// staticHolder is what a static restart is checked against: the member
// holding the instance id before the new one joined.
type staticHolder struct {
	id, regex  string
	topics     []string
	leftStatic bool
	epoch      int32
	groupEpoch int32
	assigned   partSet
	reconciled bool // stable at the assignment epoch
}

func snapshotHolder(c *Coordinator, instance string) *staticHolder {
	g := c.groups["g"]
	if g == nil || !g.isConsumer() {
		return nil
	}
	cg := g.consumer
	m := cg.members[cg.static[instance]]
	if m == nil {
		return nil
	}
	return &staticHolder{id: m.id, regex: m.regex, topics: slices.Clone(m.topics), leftStatic: m.leftStatic, epoch: m.epoch,
		groupEpoch: cg.epoch, assigned: maps.Clone(m.assigned), reconciled: m.state == memberStable && m.epoch == cg.assignmentEpoch}
}

// checkRestart: the instance rejoining takes its old member's place
// without a new group epoch (unless it subscribes differently); a member
// that was reconciled gets its partitions and epoch back as they were.
func (h *staticHolder) checkRestart(e *cgEnv, cl *cgClient, resp ConsumerHeartbeatResponse) {
	e.t.Helper()
	cg := e.c.groups["g"].consumer
	if cg.members[h.id] != nil || cg.static[cl.instance] != cl.id {
		e.t.Fatalf("static restart of %s: old member %s kept or instance not handed over", cl.instance, h.id)
	}
	same := slices.Equal(h.topics, cl.topics) && h.regex == cl.regex
	if same && cg.epoch != h.groupEpoch {
		e.t.Fatalf("static restart of %s bumped the group epoch %d→%d", cl.instance, h.groupEpoch, cg.epoch)
	}
	if got := partSetOf(*resp.Assignment); same && h.reconciled && (!got.equal(h.assigned) || resp.MemberEpoch != h.epoch) {
		e.t.Fatalf("static restart of %s: epoch %d %s; the old member had epoch %d %s",
			cl.instance, resp.MemberEpoch, e.fmtParts(got), h.epoch, e.fmtParts(h.assigned))
	}
}

// TestConsumerOffsetsExpire: offsets.retention.minutes for a consumer
// group. While members subscribe to a topic its offsets stay however old
// they are; an unsubscribed topic's offsets go retention after their
// commit; once the group is Empty, everything goes retention after it
// became Empty, and the group with it (every record a tombstone).
func TestConsumerOffsetsExpire(t *testing.T) {
	e, a, b := twoStable(t)
	retention := e.cfg.OffsetsRetentionMs
	off := func(topic string) OffsetCommit {
		return OffsetCommit{Topic: topic, Partition: 0, Offset: 7, LeaderEpoch: -1}
	}
	codes := e.commit(CommitRequest{Group: "g", MemberID: "a", Generation: 2, Version: 9, Offsets: []OffsetCommit{off("t1"), off("gone")}})
	if !slices.Equal(codes, []int16{0, 0}) {
		t.Fatalf("commit: %v", codes)
	}
	e.nowMs += retention
	e.c.ExpireOffsets(e.nowMs)
	e.drain()
	if f := e.fetch("g"); len(f) != 1 || f[0].Topic != "t1" {
		t.Fatalf("after retention with members: %+v (want only the subscribed t1)", f)
	}
	// The members keep their sessions alive and then leave.
	for _, cl := range []*cgClient{a, b} {
		e.mustBeat(cl)
		resp := e.send(ConsumerHeartbeatRequest{Group: "g", MemberID: cl.id, MemberEpoch: LeaveMemberEpoch, RebalanceTimeoutMs: -1})
		wantCode(t, "leave "+cl.id, resp.ErrorCode, 0)
	}
	e.drain()
	e.nowMs += retention - 1
	e.c.ExpireOffsets(e.nowMs)
	e.drain()
	if f := e.fetch("g"); len(f) != 1 {
		t.Fatalf("Empty for less than the retention: %+v", f)
	}
	e.nowMs++
	e.c.ExpireOffsets(e.nowMs)
	rd := e.drain()
	if _, ok := e.listed()["g"]; ok {
		t.Fatalf("group still listed once its offsets expired")
	}
	if len(rd.Records) == 0 {
		t.Fatalf("expiry wrote nothing")
	}
	for _, r := range rd.Records {
		if !r.Tombstone() {
			t.Fatalf("expiry wrote %+v, want only tombstones", r)
		}
	}
	if !hasKind(rd.Records, ConsumerGroupMetadataRecord, true) || !hasKind(rd.Records, OffsetCommitRecord, true) {
		t.Fatalf("expiry records %+v: want the group's and the offset's tombstones", rd.Records)
	}
}

// TestConsumerCommitFromOlderEpoch: KIP-1251. A member whose epoch moved
// on may still commit, from its older epoch, the partitions it has held
// since then (a client commits on revocation while its heartbeat already
// advanced it); a partition it does not hold, or was given later, is
// STALE_MEMBER_EPOCH, so a zombie never overwrites the new owner.
func TestConsumerCommitFromOlderEpoch(t *testing.T) {
	e, a, b := twoStable(t) // a joined at epoch 1 with all, kept half at 2
	commit := func(member string, epoch int32, p int32) int16 {
		return e.commit(CommitRequest{Group: "g", MemberID: member, Generation: epoch, Version: 9,
			Offsets: []OffsetCommit{{Topic: "t1", Partition: p, Offset: 1, LeaderEpoch: -1}}})[0]
	}
	var mine, theirs int32 = -1, -1
	for k := range a.owned {
		mine = k.partition
	}
	for k := range b.owned {
		theirs = k.partition
	}
	if mine < 0 || theirs < 0 {
		t.Fatalf("a owns %v, b owns %v", a.owned, b.owned)
	}
	wantCode(t, "a's partition from epoch 1", commit("a", 1, mine), 0)
	wantCode(t, "b's partition from a's epoch 1", commit("a", 1, theirs), errStaleMemberEpoch)
	// b was given its partitions at epoch 2: epoch 1 is before that.
	wantCode(t, "b's partition from b's epoch 1", commit("b", 1, theirs), errStaleMemberEpoch)
	wantCode(t, "b's partition from b's epoch 2", commit("b", 2, theirs), 0)
}
