package groups

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testEnv drives one Coordinator for a datadriven script. The records of
// every Ready are encoded and kept as the bytes of a simulated
// __consumer_offsets partition, which "load" and "check-replay" decode and
// replay: the codec is exercised on every script.
type testEnv struct {
	t          *testing.T
	cfg        Config
	partitions int32
	nowMs      int64
	c          *Coordinator
	log        []logEntry
	nextID     int // member id counter, shared by every coordinator of the env
	nextReq    uint64
}

// logEntry is one record of the simulated partition, or (marker set) one
// transaction marker; producer is the transactional batch's.
type logEntry struct {
	key, value []byte
	producer   *TxnProducer
	marker     *markerEntry
}

type markerEntry struct {
	producer TxnProducer
	commit   bool
}

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.InitialRebalanceDelayMs = 0
	cfg.MinSessionTimeoutMs = 1000
	cfg.OffsetsRetentionMs = 60000
	return cfg
}

func newTestEnv(t *testing.T) *testEnv {
	e := &testEnv{t: t, cfg: testConfig(), partitions: 1}
	e.c = e.newCoordinator(0)
	if err := e.c.CompleteLoad(0); err != nil {
		t.Fatal(err)
	}
	return e
}

// memberIDs makes readable ids: prefix-1, prefix-2, ...
func (e *testEnv) memberIDs(prefix string) string {
	e.nextID++
	return fmt.Sprintf("%s-%d", prefix, e.nextID)
}

func (e *testEnv) newCoordinator(partition int32) *Coordinator {
	c, err := NewCoordinator(e.cfg, partition, e.partitions, e.memberIDs)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *testEnv) handle(d *ddCmd) string {
	t := e.t
	switch d.name {
	case "config":
		e.cfg.InitialRebalanceDelayMs = d.int(t, "delay", e.cfg.InitialRebalanceDelayMs)
		e.cfg.MinSessionTimeoutMs = int32(d.int(t, "min-session", int64(e.cfg.MinSessionTimeoutMs)))
		e.cfg.MaxSessionTimeoutMs = int32(d.int(t, "max-session", int64(e.cfg.MaxSessionTimeoutMs)))
		e.cfg.MaxSize = int(d.int(t, "max-size", int64(e.cfg.MaxSize)))
		e.cfg.MaxGroups = int(d.int(t, "max-groups", int64(e.cfg.MaxGroups)))
		e.cfg.OffsetsRetentionMs = d.int(t, "retention", e.cfg.OffsetsRetentionMs)
		e.cfg.OffsetMetadataMaxBytes = int(d.int(t, "metadata-max", int64(e.cfg.OffsetMetadataMaxBytes)))
		e.cfg.NewMemberJoinTimeoutMs = d.int(t, "new-member-timeout", e.cfg.NewMemberJoinTimeoutMs)
		e.partitions = int32(d.int(t, "partitions", int64(e.partitions)))
		e.c = e.newCoordinator(int32(d.int(t, "partition", 0)))
		e.log = nil
		e.nextID = 0
		if err := e.c.CompleteLoad(e.nowMs); err != nil {
			t.Fatal(err)
		}
		return "ok"
	case "tick":
		e.nowMs += d.int(t, "ms", 0)
		e.c.Tick(e.nowMs)
		return e.drain(fmt.Sprintf("now=%d", e.nowMs))
	case "join":
		r := e.request()
		e.c.Join(JoinRequest{
			RequestID:            r,
			Group:                d.str("g", "g"),
			MemberID:             d.str("member", ""),
			InstanceID:           d.str("instance", ""),
			RequireKnownMemberID: d.has("require-id"),
			ClientID:             d.str("client", "c"),
			ClientHost:           d.str("host", "h"),
			SessionTimeoutMs:     int32(d.int(t, "session", 10000)),
			RebalanceTimeoutMs:   int32(d.int(t, "rebalance", 20000)),
			ProtocolType:         d.str("type", ConsumerProtocolType),
			Protocols:            parseProtocols(d.str("type", ConsumerProtocolType), d.str("protocols", "range:t1")),
		}, e.nowMs)
		return e.drainFor(r)
	case "sync":
		r := e.request()
		req := SyncRequest{
			RequestID:  r,
			Group:      d.str("g", "g"),
			Generation: int32(d.int(t, "gen", 0)),
			MemberID:   d.str("member", ""),
			InstanceID: d.str("instance", ""),
			Protocol:   d.str("protocol", ""),
		}
		if a := d.str("assign", ""); a != "" {
			for _, one := range strings.Split(a, ",") {
				id, assignment, _ := strings.Cut(one, "=")
				req.Assignments = append(req.Assignments, MemberAssignment{MemberID: id, Assignment: []byte(assignment)})
			}
		}
		e.c.Sync(req, e.nowMs)
		return e.drainFor(r)
	case "heartbeat":
		r := e.request()
		e.c.Heartbeat(HeartbeatRequest{
			RequestID:  r,
			Group:      d.str("g", "g"),
			Generation: int32(d.int(t, "gen", 0)),
			MemberID:   d.str("member", ""),
			InstanceID: d.str("instance", ""),
		}, e.nowMs)
		return e.drainFor(r)
	case "leave":
		r := e.request()
		req := LeaveRequest{RequestID: r, Group: d.str("g", "g")}
		for _, one := range strings.Split(d.str("members", ""), ",") {
			id, instance, _ := strings.Cut(one, "@")
			req.Members = append(req.Members, LeavingMember{MemberID: id, InstanceID: instance})
		}
		e.c.Leave(req, e.nowMs)
		return e.drainFor(r)
	case "commit":
		r := e.request()
		req := CommitRequest{
			RequestID:       r,
			Group:           d.str("g", "g"),
			Generation:      int32(d.int(t, "gen", -1)),
			MemberID:        d.str("member", ""),
			InstanceID:      d.str("instance", ""),
			RetentionTimeMs: d.int(t, "retention", -1),
		}
		meta := d.str("meta", "")
		if n := d.int(t, "meta-bytes", 0); n > 0 {
			meta = strings.Repeat("x", int(n))
		}
		epoch := int32(d.int(t, "epoch", -1))
		for _, one := range strings.Split(d.str("offsets", ""), ",") {
			tpStr, off, _ := strings.Cut(one, "@")
			tp := parseTopicPartition(t, tpStr)
			n, err := strconv.ParseInt(off, 10, 64)
			if err != nil {
				t.Fatalf("%s: offset %q: %v", d.pos, one, err)
			}
			req.Offsets = append(req.Offsets, OffsetCommit{Topic: tp.Topic, Partition: tp.Partition, Offset: n, LeaderEpoch: epoch, Metadata: meta})
		}
		e.c.CommitOffsets(req, e.nowMs)
		return e.drainFor(r)
	case "txn-commit":
		r := e.request()
		req := TxnCommitRequest{
			RequestID:     r,
			Group:         d.str("g", "g"),
			ProducerID:    d.int(t, "pid", 1),
			ProducerEpoch: int16(d.int(t, "pepoch", 0)),
			Generation:    int32(d.int(t, "gen", -1)),
			MemberID:      d.str("member", ""),
			InstanceID:    d.str("instance", ""),
		}
		for _, one := range strings.Split(d.str("offsets", ""), ",") {
			tpStr, off, _ := strings.Cut(one, "@")
			tp := parseTopicPartition(t, tpStr)
			n, err := strconv.ParseInt(off, 10, 64)
			if err != nil {
				t.Fatalf("%s: offset %q: %v", d.pos, one, err)
			}
			req.Offsets = append(req.Offsets, OffsetCommit{Topic: tp.Topic, Partition: tp.Partition, Offset: n, LeaderEpoch: -1})
		}
		e.c.TxnCommitOffsets(req, e.nowMs)
		return e.drainFor(r)
	case "marker":
		// The driver appends the marker, then tells the core.
		r := e.request()
		m := markerEntry{producer: TxnProducer{ID: d.int(t, "pid", 1), Epoch: int16(d.int(t, "pepoch", 0))}, commit: d.has("commit")}
		if !m.commit && !d.has("abort") {
			t.Fatalf("%s: marker needs commit or abort", d.pos)
		}
		e.log = append(e.log, logEntry{marker: &m})
		e.c.CompleteTxn(TxnMarkerRequest{RequestID: r, ProducerID: m.producer.ID, ProducerEpoch: m.producer.Epoch, Commit: m.commit}, e.nowMs)
		return e.drainFor(r)
	case "offset-delete":
		r := e.request()
		req := OffsetDeleteRequest{RequestID: r, Group: d.str("g", "g")}
		for _, one := range strings.Split(d.str("partitions", ""), ",") {
			req.Partitions = append(req.Partitions, parseTopicPartition(t, one))
		}
		e.c.DeleteOffsets(req, e.nowMs)
		return e.drainFor(r)
	case "pending":
		out := e.c.PendingTxnOffsets(d.str("g", "g"))
		if len(out) == 0 {
			return "none"
		}
		return strings.Join(out, "\n")
	case "fetch":
		r := e.request()
		req := FetchOffsetsRequest{RequestID: r, Group: d.str("g", "g"), RequireStable: d.has("stable")}
		if ps := d.str("partitions", ""); ps != "" {
			for _, one := range strings.Split(ps, ",") {
				req.Partitions = append(req.Partitions, parseTopicPartition(t, one))
			}
		}
		e.c.FetchOffsets(req)
		return e.drainFor(r)
	case "describe":
		r := e.request()
		e.c.DescribeGroup(DescribeGroupRequest{RequestID: r, Group: d.str("g", "g")})
		return e.drainFor(r)
	case "delete":
		r := e.request()
		e.c.DeleteGroup(DeleteGroupRequest{RequestID: r, Group: d.str("g", "g")}, e.nowMs)
		return e.drainFor(r)
	case "list":
		groups, code := e.c.ListGroups()
		var b strings.Builder
		fmt.Fprintf(&b, "%s", errName(code))
		for _, g := range groups {
			fmt.Fprintf(&b, " %s(%s,%s)", g.Group, g.State, g.ProtocolType)
		}
		return b.String()
	case "expire":
		e.c.ExpireOffsets(e.nowMs)
		return e.drain("")
	case "partitions-changed":
		e.c.PartitionCountChanged(d.str("topic", ""), e.nowMs)
		return e.drain("")
	case "unload":
		e.c.Unload()
		return e.drain("unloaded")
	case "load":
		// The partition's leadership moves to a new coordinator, which
		// rebuilds its groups from the log; config changes may come with
		// it.
		e.cfg.MaxSize = int(d.int(t, "max-size", int64(e.cfg.MaxSize)))
		c := e.newCoordinator(e.c.partition)
		if err := e.replayInto(c); err != nil {
			t.Fatalf("%s: replay: %v", d.pos, err)
		}
		e.c = c
		if d.has("pause") {
			return fmt.Sprintf("loading %d records", len(e.log))
		}
		fallthrough
	case "complete-load":
		if err := e.c.CompleteLoad(e.nowMs); err != nil {
			t.Fatal(err)
		}
		out := e.drain(fmt.Sprintf("loaded %d records", len(e.log)))
		return out + "\n" + e.state()
	case "state":
		return e.state()
	case "check-replay":
		return e.checkReplay()
	}
	t.Fatalf("%s: unknown command %q", d.pos, d.name)
	return ""
}

func (e *testEnv) request() uint64 {
	e.nextReq++
	return e.nextReq
}

// drainFor drains Ready and says so when request r is still waiting.
func (e *testEnv) drainFor(r uint64) string {
	rd := e.c.Ready()
	answered := slices.ContainsFunc(rd.Responses, func(resp Response) bool { return resp.RequestID == r })
	out := e.format(rd)
	if !answered {
		out = append([]string{fmt.Sprintf("r%d waiting", r)}, out...)
	}
	return strings.Join(out, "\n")
}

func (e *testEnv) drain(header string) string {
	out := e.format(e.c.Ready())
	if header != "" {
		out = append([]string{header}, out...)
	}
	return strings.Join(out, "\n")
}

// format persists rd's records (encoded, as a driver would) and prints
// them, then its responses.
func (e *testEnv) format(rd Ready) []string {
	var out []string
	for _, rec := range rd.Records {
		key, value := rec.EncodeKey(), rec.EncodeValue()
		back, err := DecodeRecord(key, value)
		if err != nil || !back.Equal(rec) {
			e.t.Fatalf("record does not survive its encoding: %v\n%+v\n%+v", err, rec, back)
		}
		e.log = append(e.log, logEntry{key: key, value: value, producer: rec.Producer})
		line := "persist " + fmtRecord(rec)
		if rec.Producer != nil {
			line = fmt.Sprintf("persist txn(pid=%d,epoch=%d) %s", rec.Producer.ID, rec.Producer.Epoch, fmtRecord(rec))
		}
		out = append(out, line)
	}
	for _, resp := range rd.Responses {
		out = append(out, fmtResponse(resp))
	}
	return out
}

func (e *testEnv) replayInto(c *Coordinator) error {
	for _, le := range e.log {
		if m := le.marker; m != nil {
			if err := c.ReplayTxnMarker(m.producer.ID, m.producer.Epoch, m.commit); err != nil {
				return err
			}
			continue
		}
		rec, err := DecodeRecord(le.key, le.value)
		if err != nil {
			return err
		}
		rec.Producer = le.producer
		if err := c.Replay(rec); err != nil {
			return err
		}
	}
	return nil
}

// checkReplay rebuilds the groups from the log and compares them with the
// live ones that are at rest (Stable or Empty).
func (e *testEnv) checkReplay() string {
	replica := e.newCoordinator(e.c.partition)
	if err := e.replayInto(replica); err != nil {
		e.t.Fatalf("replay: %v", err)
	}
	if err := replica.CompleteLoad(e.nowMs); err != nil {
		e.t.Fatal(err)
	}
	out := replayDiffs(e.c, replica)
	if len(out) == 0 {
		return "replay matches"
	}
	e.t.Errorf("replay differs:\n%s", strings.Join(out, "\n"))
	return strings.Join(out, "\n")
}

// replayDiffs compares the persisted view of every at-rest live group with
// the replica's; groups in a rebalance are skipped (their in-flight state
// is by design not stored).
func replayDiffs(live, replica *Coordinator) []string {
	var diffs []string
	for _, id := range live.sortedGroupIDs() {
		g := live.groups[id]
		if g.state != Stable && g.state != Empty {
			continue
		}
		if g.state == Empty && g.generation == 0 && len(g.offsets) == 0 && !live.txn.open(id) {
			continue // holds only members waiting with MEMBER_ID_REQUIRED
		}
		r := replica.groups[id]
		if r == nil {
			diffs = append(diffs, fmt.Sprintf("group %s: live %s, missing after replay", id, g.state))
			continue
		}
		if a, b := persistedView(g)+pendingView(live, id), persistedView(r)+pendingView(replica, id); a != b {
			diffs = append(diffs, fmt.Sprintf("group %s:\nlive:\n%s\nreplay:\n%s", id, a, b))
		}
	}
	for _, id := range replica.sortedGroupIDs() {
		if g := live.groups[id]; g == nil {
			diffs = append(diffs, fmt.Sprintf("group %s: replayed but not live", id))
		}
	}
	return diffs
}

// pendingView prints a group's pending transactional offsets.
func pendingView(c *Coordinator, id string) string {
	var b strings.Builder
	for _, p := range c.PendingTxnOffsets(id) {
		fmt.Fprintf(&b, "\n pending %s", p)
	}
	return b.String()
}

// persistedView prints what the log must preserve of a group at rest.
func persistedView(g *Group) string {
	var b strings.Builder
	fmt.Fprintf(&b, "state=%s gen=%d type=%q protocol=%q leader=%q", g.state, g.generation, g.protocolType, g.protocol, g.leaderID)
	if g.state == Empty && g.protocolType != "" {
		// The start of its offsets' retention.
		fmt.Fprintf(&b, " since=%d", g.stateTimestampMs)
	}
	if g.state == Stable {
		for _, m := range g.metadataValue().Members {
			fmt.Fprintf(&b, "\n member %+v", m)
		}
	}
	for _, o := range g.Offsets() {
		fmt.Fprintf(&b, "\n offset %+v", o)
	}
	return b.String()
}

func (e *testEnv) state() string {
	var out []string
	for _, id := range e.c.sortedGroupIDs() {
		g := e.c.groups[id]
		line := fmt.Sprintf("%s %s gen=%d", id, g.state, g.generation)
		if g.protocolType != "" {
			line += " type=" + g.protocolType
		}
		if g.protocol != "" {
			line += " protocol=" + g.protocol
		}
		if g.leaderID != "" {
			line += " leader=" + g.leaderID
		}
		out = append(out, line)
		for _, m := range g.members {
			line := " member " + m.memberID
			if m.instanceID != "" {
				line += " instance=" + m.instanceID
			}
			line += " sub=" + fmtMetadata(g.protocolType, m.protocols[0].Metadata)
			if m.assignment != nil {
				line += fmt.Sprintf(" assign=%q", m.assignment)
			}
			if m.awaitingJoin {
				line += fmt.Sprintf(" join=r%d", m.joinRequestID)
			}
			if m.awaitingSync {
				line += fmt.Sprintf(" sync=r%d", m.syncRequestID)
			}
			out = append(out, line)
		}
		for _, p := range g.Describe().PendingMembers {
			out = append(out, " pending "+p)
		}
		for _, o := range g.Offsets() {
			out = append(out, " offset "+fmtOffset(o.TopicPartition, o.OffsetAndMetadata))
		}
		for _, p := range e.c.PendingTxnOffsets(id) {
			out = append(out, " pending "+p)
		}
	}
	if len(out) == 0 {
		return "no groups"
	}
	return strings.Join(out, "\n")
}

// parseProtocols reads name:topic+topic,...: consumer subscriptions for
// the consumer protocol type, the raw text for others.
func parseProtocols(protocolType, s string) []Protocol {
	var out []Protocol
	for _, one := range strings.Split(s, ",") {
		name, topics, _ := strings.Cut(one, ":")
		if protocolType != ConsumerProtocolType {
			out = append(out, Protocol{Name: name, Metadata: []byte(topics)})
			continue
		}
		meta := kmsg.NewConsumerMemberMetadata()
		meta.Topics = strings.Split(topics, "+")
		out = append(out, Protocol{Name: name, Metadata: meta.AppendTo(nil)})
	}
	return out
}

func parseTopicPartition(t *testing.T, s string) TopicPartition {
	topic, p, _ := strings.Cut(s, "/")
	n, err := strconv.ParseInt(p, 10, 32)
	if err != nil {
		t.Fatalf("partition %q: %v", s, err)
	}
	return TopicPartition{Topic: topic, Partition: int32(n)}
}

func errName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	var ke *kerr.Error
	if err := kerr.ErrorForCode(code); errors.As(err, &ke) {
		return ke.Message
	}
	return fmt.Sprintf("ERROR(%d)", code)
}

func fmtMetadata(protocolType string, meta []byte) string {
	if protocolType == ConsumerProtocolType {
		if topics, ok := consumerTopics(meta); ok {
			return strings.Join(topics, "+")
		}
	}
	return strconv.Quote(string(meta))
}

func fmtOffset(tp TopicPartition, o OffsetAndMetadata) string {
	s := fmt.Sprintf("%s/%d@%d epoch=%d meta=%q commit=%d", tp.Topic, tp.Partition, o.Offset, o.LeaderEpoch, o.Metadata, o.CommitTimestampMs)
	if o.ExpireTimestampMs >= 0 {
		s += fmt.Sprintf(" expire=%d", o.ExpireTimestampMs)
	}
	if len(s) > 120 {
		s = s[:100] + "…"
	}
	return s
}

func fmtRecord(r Record) string {
	switch r.Kind {
	case OffsetCommitRecord:
		if r.Offset == nil {
			return fmt.Sprintf("offset %s %s/%d tombstone", r.Group, r.TopicPartition.Topic, r.TopicPartition.Partition)
		}
		return fmt.Sprintf("offset %s %s", r.Group, fmtOffset(r.TopicPartition, *r.Offset))
	case GroupMetadataRecord:
		if r.Metadata == nil {
			return fmt.Sprintf("group %s tombstone", r.Group)
		}
		m := r.Metadata
		s := fmt.Sprintf("group %s gen=%d type=%s protocol=%q leader=%q since=%d members=[", r.Group, m.Generation, m.ProtocolType, m.Protocol, m.Leader, m.CurrentStateTimestampMs)
		for i, mm := range m.Members {
			if i > 0 {
				s += " "
			}
			s += mm.MemberID
			if mm.InstanceID != "" {
				s += "@" + mm.InstanceID
			}
			s += fmt.Sprintf(":%s:%q", fmtMetadata(m.ProtocolType, mm.Subscription), mm.Assignment)
		}
		return s + "]"
	}
	return fmt.Sprintf("record of kind %d", r.Kind)
}

func fmtResponse(r Response) string {
	p := fmt.Sprintf("r%d ", r.RequestID)
	switch {
	case r.Join != nil:
		j := r.Join
		if j.ErrorCode != 0 {
			return p + fmt.Sprintf("join: %s member=%q", errName(j.ErrorCode), j.MemberID)
		}
		s := p + fmt.Sprintf("join: NONE gen=%d member=%s leader=%s protocol=%s/%s", j.Generation, j.MemberID, j.LeaderID, j.ProtocolType, j.Protocol)
		if j.Members != nil {
			s += " members=["
			for i, m := range j.Members {
				if i > 0 {
					s += " "
				}
				s += m.MemberID
				if m.InstanceID != "" {
					s += "@" + m.InstanceID
				}
				s += ":" + fmtMetadata(j.ProtocolType, m.Metadata)
			}
			s += "]"
		}
		return s
	case r.Sync != nil:
		if r.Sync.ErrorCode != 0 {
			return p + "sync: " + errName(r.Sync.ErrorCode)
		}
		return p + fmt.Sprintf("sync: NONE protocol=%s/%s assign=%q", r.Sync.ProtocolType, r.Sync.Protocol, r.Sync.Assignment)
	case r.Heartbeat != nil:
		return p + "heartbeat: " + errName(r.Heartbeat.ErrorCode)
	case r.Leave != nil:
		s := p + "leave: " + errName(r.Leave.ErrorCode)
		for _, m := range r.Leave.Members {
			s += fmt.Sprintf(" %s@%s:%s", m.MemberID, m.InstanceID, errName(m.ErrorCode))
		}
		return s
	case r.Commit != nil:
		s := p + "commit:"
		for _, pr := range r.Commit.Partitions {
			s += fmt.Sprintf(" %s/%d:%s", pr.Topic, pr.Partition, errName(pr.ErrorCode))
		}
		return s
	case r.Fetch != nil:
		s := p + "fetch: " + errName(r.Fetch.ErrorCode)
		for _, o := range r.Fetch.Offsets {
			s += fmt.Sprintf(" %s/%d@%d(epoch=%d,meta=%q,%s)", o.Topic, o.Partition, o.Offset, o.LeaderEpoch, o.Metadata, errName(o.ErrorCode))
		}
		return s
	case r.Describe != nil:
		d := r.Describe
		s := p + fmt.Sprintf("describe: %s state=%s type=%s protocol=%s", errName(d.ErrorCode), d.State, d.ProtocolType, d.Protocol)
		for _, m := range d.Members {
			s += fmt.Sprintf("\n  %s instance=%s client=%s host=%s", m.MemberID, m.InstanceID, m.ClientID, m.ClientHost)
			if m.Metadata != nil {
				s += fmt.Sprintf(" sub=%s assign=%q", fmtMetadata(d.ProtocolType, m.Metadata), m.Assignment)
			}
		}
		return s
	case r.Delete != nil:
		return p + "delete: " + errName(r.Delete.ErrorCode)
	case r.TxnCommit != nil:
		s := p + "txn-commit:"
		for _, pr := range r.TxnCommit.Partitions {
			s += fmt.Sprintf(" %s/%d:%s", pr.Topic, pr.Partition, errName(pr.ErrorCode))
		}
		return s
	case r.OffsetDelete != nil:
		s := p + "offset-delete: " + errName(r.OffsetDelete.ErrorCode)
		for _, pr := range r.OffsetDelete.Partitions {
			s += fmt.Sprintf(" %s/%d:%s", pr.Topic, pr.Partition, errName(pr.ErrorCode))
		}
		return s
	case r.TxnMarker != nil:
		return p + "marker: " + errName(r.TxnMarker.ErrorCode)
	}
	return p + "empty response"
}
