package replication

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/internal/vfs"
)

// sessionLeader is node 1 leading t-0 .. t-(n-1) at epoch 1, replicas
// and ISR 1, 2, 3 (or those given), on memory logs.
func sessionLeader(t *testing.T, n int, replicas ...int32) (*Manager, []*Partition) {
	if len(replicas) == 0 {
		replicas = []int32{1, 2, 3}
	}
	t.Helper()
	fsys := vfs.NewMem()
	m := &Manager{nodeID: 1, partitions: map[engine.TopicPartition]*Partition{},
		leaderThrottle: NewThrottle(time.Now), followerThrottle: NewThrottle(time.Now)}
	var ps []*Partition
	for i := range n {
		tp := engine.TopicPartition{Topic: "t", Partition: int32(i)}
		l, _, err := engine.Open(fsys, "/d/"+tp.String(), tp, engine.DefaultOptions(), engine.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		p := newPartition(tp, l, &partitionHooks{nodeID: 1, now: time.Now}, 0)
		p.setMetadata(1, replicas, replicas, 2, 30000)
		if err := p.becomeLeader(1); err != nil {
			t.Fatal(err)
		}
		m.partitions[tp] = p
		ps = append(ps, p)
	}
	return m, ps
}

// sessionFetch is a follower's Fetch of topic t in a session (id, epoch),
// naming partitions at the fetch offsets given, forgetting forget; it
// waits nothing at the leader.
func sessionFetch(id, epoch int32, offsets map[int32]int64, forget ...int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(ReplicaFetchVersion)
	req.ReplicaID, req.MaxBytes, req.MinBytes, req.MaxWaitMillis = 2, 1<<20, 1, 0
	req.SessionID, req.SessionEpoch = id, epoch
	if len(offsets) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "t"
		for _, p := range slices.Sorted(func(yield func(int32) bool) {
			for p := range offsets {
				if !yield(p) {
					return
				}
			}
		}) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes, rp.FetchOffset = p, 1, 1<<20, offsets[p]
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	if len(forget) > 0 {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.Partitions = "t", forget
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	return req
}

// answered is what a Fetch response says: each partition's high
// watermark and record bytes, by partition of topic t.
type answeredPartition struct {
	hw, lso int64
	records int
	err     int16
}

func serveSession(t *testing.T, m *Manager, conn uint64, req *kmsg.FetchRequest) (*kmsg.FetchResponse, map[int32]answeredPartition) {
	t.Helper()
	body := m.ServeReplicaRequest(2, conn, req)
	if body == nil {
		t.Fatal("the leader closed the connection")
	}
	defer body.Done()
	resp := decodeFetch(t, body.Chunks)
	got := map[int32]answeredPartition{}
	for _, rt := range resp.Topics {
		if rt.Topic != "t" {
			t.Fatalf("answer names topic %q", rt.Topic)
		}
		for _, rp := range rt.Partitions {
			got[rp.Partition] = answeredPartition{hw: rp.HighWatermark, lso: rp.LogStartOffset, records: len(rp.RecordBatches), err: rp.ErrorCode}
		}
	}
	return resp, got
}

// appendOne appends a record at leader p with acks=1 and waits until it
// is durable (a follower reads no further).
func appendOne(t *testing.T, p *Partition) {
	t.Helper()
	_, wait, err := p.AppendAsLeaderTimeout(oneRecord(t), 1, time.Minute)
	if err == nil {
		err = wait()
	}
	if err != nil {
		t.Fatal(err)
	}
}

func allAt(n int, offset int64) map[int32]int64 {
	m := map[int32]int64{}
	for i := range n {
		m[int32(i)] = offset
	}
	return m
}

// A full fetch with SessionEpoch 0 opens a session and answers every
// partition; an incremental fetch that names nothing, of idle partitions,
// is answered with none, in the same session.
func TestFetchSessionOpensAndIdles(t *testing.T) {
	m, _ := sessionLeader(t, 5)
	resp, got := serveSession(t, m, 7, sessionFetch(0, 0, allAt(5, 0)))
	if resp.ErrorCode != 0 || resp.SessionID == 0 {
		t.Fatalf("full fetch: error %d, session %d; want a session", resp.ErrorCode, resp.SessionID)
	}
	if len(got) != 5 {
		t.Fatalf("full fetch answered %d partitions, want 5", len(got))
	}
	id := resp.SessionID
	for epoch := int32(1); epoch <= 3; epoch++ {
		resp, got = serveSession(t, m, 7, sessionFetch(id, epoch, nil))
		if resp.ErrorCode != 0 || resp.SessionID != id || len(got) != 0 {
			t.Fatalf("idle incremental fetch at epoch %d: error %d, session %d, %d partitions; want 0, %d, 0",
				epoch, resp.ErrorCode, resp.SessionID, len(got), id)
		}
	}
	st := m.ReplicaFetchStats()
	if st.Requests != 4 || st.Incremental != 3 || st.Partitions != 5 || st.Sessions != 1 {
		t.Fatalf("stats %+v, want 4 requests, 3 incremental, 5 partitions, 1 session", st)
	}
}

// A fetch without a session (SessionEpoch -1, what a follower of an
// older version sends) is answered in full, with SessionID 0, every
// time, and opens no session.
func TestFetchWithoutSessionAnsweredInFull(t *testing.T) {
	m, _ := sessionLeader(t, 3)
	for range 2 {
		resp, got := serveSession(t, m, 7, sessionFetch(0, -1, allAt(3, 0)))
		if resp.ErrorCode != 0 || resp.SessionID != 0 || len(got) != 3 {
			t.Fatalf("sessionless fetch: error %d, session %d, %d partitions; want 0, 0, 3", resp.ErrorCode, resp.SessionID, len(got))
		}
	}
	if st := m.ReplicaFetchStats(); st.Sessions != 0 || st.Incremental != 0 {
		t.Fatalf("stats %+v, want no session", st)
	}
}

// An incremental answer has the partitions with records, and those whose
// high watermark moved since last sent, though the fetch names neither;
// a partition it names is answered whatever changed.
func TestFetchSessionAnswersChanges(t *testing.T) {
	m, ps := sessionLeader(t, 4)
	resp, _ := serveSession(t, m, 7, sessionFetch(0, 0, allAt(4, 0)))
	id := resp.SessionID
	appendOne(t, ps[1])
	// Records at t-1: in the answer, unasked.
	_, got := serveSession(t, m, 7, sessionFetch(id, 1, nil))
	if len(got) != 1 || got[1].records == 0 || got[1].hw != 0 {
		t.Fatalf("answer %+v, want t-1 alone, with records, high watermark 0", got)
	}
	// The follower appended them: it names t-1 at offset 1, and hears of
	// it, high watermark still 0 (node 3 has not fetched).
	_, got = serveSession(t, m, 7, sessionFetch(id, 2, map[int32]int64{1: 1}))
	if len(got) != 1 || got[1].records != 0 || got[1].hw != 0 {
		t.Fatalf("answer %+v, want t-1 alone, no records, high watermark 0", got)
	}
	// Node 3 fetches without a session: the high watermark moves to 1.
	req3 := sessionFetch(0, -1, map[int32]int64{1: 1})
	req3.ReplicaID = 3
	if body := m.ServeReplicaRequest(3, 8, req3); body == nil {
		t.Fatal("node 3's fetch refused")
	} else {
		body.Done()
	}
	if hw := ps[1].HighWatermark(); hw != 1 {
		t.Fatalf("leader high watermark %d, want 1", hw)
	}
	_, got = serveSession(t, m, 7, sessionFetch(id, 3, nil))
	if len(got) != 1 || got[1].hw != 1 || got[1].records != 0 {
		t.Fatalf("answer %+v, want t-1 alone with high watermark 1", got)
	}
	_, got = serveSession(t, m, 7, sessionFetch(id, 4, nil))
	if len(got) != 0 {
		t.Fatalf("answer %+v after the high watermark was sent, want none", got)
	}
	// Named, unchanged: answered.
	_, got = serveSession(t, m, 7, sessionFetch(id, 5, map[int32]int64{2: 0}))
	if len(got) != 1 || got[2].hw != 0 {
		t.Fatalf("answer %+v, want t-2 alone", got)
	}
	// The log start offset moved (DeleteRecords): answered.
	if err := ps[1].log.AdvanceLogStartOffset(1); err != nil {
		t.Fatal(err)
	}
	_, got = serveSession(t, m, 7, sessionFetch(id, 6, nil))
	if len(got) != 1 || got[1].lso != 1 {
		t.Fatalf("answer %+v, want t-1 alone with log start offset 1", got)
	}
	if _, got = serveSession(t, m, 7, sessionFetch(id, 7, nil)); len(got) != 0 {
		t.Fatalf("answer %+v, want none", got)
	}
}

// A session fetch at another epoch than the leader expects, or naming a
// session that is not this follower's on this connection, is refused
// with the error that sends the follower back to a full fetch; the
// answer has no partitions and no session.
func TestFetchSessionErrors(t *testing.T) {
	m, _ := sessionLeader(t, 2)
	resp, _ := serveSession(t, m, 7, sessionFetch(0, 0, allAt(2, 0)))
	id := resp.SessionID
	for _, c := range []struct {
		name      string
		conn      uint64
		id, epoch int32
		want      int16
	}{
		{"epoch ahead", 7, id, 2, kerr.InvalidFetchSessionEpoch.Code},
		{"epoch far ahead", 7, id, 1 << 30, kerr.InvalidFetchSessionEpoch.Code},
		{"unknown id", 7, id + 1, 1, kerr.FetchSessionIDNotFound.Code},
		{"another connection", 8, id, 1, kerr.FetchSessionIDNotFound.Code},
		{"no id", 7, 0, 1, kerr.FetchSessionIDNotFound.Code},
		{"bad epoch", 7, id, -2, kerr.InvalidFetchSessionEpoch.Code},
	} {
		resp, got := serveSession(t, m, c.conn, sessionFetch(c.id, c.epoch, nil))
		if resp.ErrorCode != c.want || resp.SessionID != 0 || len(got) != 0 {
			t.Fatalf("%s: error %d, session %d, %d partitions; want error %d, no session, none", c.name, resp.ErrorCode, resp.SessionID, len(got), c.want)
		}
	}
	// The session itself is still there, at epoch 1.
	if resp, _ := serveSession(t, m, 7, sessionFetch(id, 1, nil)); resp.ErrorCode != 0 || resp.SessionID != id {
		t.Fatalf("session after refused fetches: error %d, session %d", resp.ErrorCode, resp.SessionID)
	}
}

// A session goes with its connection: once the transport says it closed,
// the session is unknown; a new full fetch opens another, which replaces
// the follower's previous one; a sessionless fetch naming a session
// closes it.
func TestFetchSessionBoundToConnection(t *testing.T) {
	m, _ := sessionLeader(t, 2)
	resp, _ := serveSession(t, m, 7, sessionFetch(0, 0, allAt(2, 0)))
	id := resp.SessionID
	m.ReplicaConnClosed(2, 6) // another connection of node 2: no effect
	if m.ReplicaFetchStats().Sessions != 1 {
		t.Fatal("closing another connection dropped the session")
	}
	m.ReplicaConnClosed(2, 7)
	if n := m.ReplicaFetchStats().Sessions; n != 0 {
		t.Fatalf("%d sessions after the connection closed", n)
	}
	if resp, _ := serveSession(t, m, 7, sessionFetch(id, 1, nil)); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("fetch in a closed connection's session: error %d, want FETCH_SESSION_ID_NOT_FOUND", resp.ErrorCode)
	}
	// Two full fetches on two connections: the second session replaces
	// the first.
	first, _ := serveSession(t, m, 8, sessionFetch(0, 0, allAt(2, 0)))
	second, _ := serveSession(t, m, 9, sessionFetch(0, 0, allAt(2, 0)))
	if first.SessionID == second.SessionID || m.ReplicaFetchStats().Sessions != 1 {
		t.Fatalf("sessions %d and %d, %d open; want two ids, one open", first.SessionID, second.SessionID, m.ReplicaFetchStats().Sessions)
	}
	if resp, _ := serveSession(t, m, 8, sessionFetch(first.SessionID, 1, nil)); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("fetch in a replaced session: error %d", resp.ErrorCode)
	}
	// SessionEpoch -1 naming the session closes it.
	if resp, got := serveSession(t, m, 9, sessionFetch(second.SessionID, -1, allAt(2, 0))); resp.SessionID != 0 || len(got) != 2 {
		t.Fatalf("closing fetch: session %d, %d partitions", resp.SessionID, len(got))
	}
	if n := m.ReplicaFetchStats().Sessions; n != 0 {
		t.Fatalf("%d sessions after the follower closed its own", n)
	}
}

// A forgotten partition leaves the session: records there are not in the
// answer; named again, it is back, answered in full.
func TestFetchSessionForgetsPartitions(t *testing.T) {
	m, ps := sessionLeader(t, 3)
	resp, _ := serveSession(t, m, 7, sessionFetch(0, 0, allAt(3, 0)))
	id := resp.SessionID
	if _, got := serveSession(t, m, 7, sessionFetch(id, 1, nil, 2)); len(got) != 0 {
		t.Fatalf("answer %+v to a fetch forgetting t-2", got)
	}
	appendOne(t, ps[2])
	if _, got := serveSession(t, m, 7, sessionFetch(id, 2, nil)); len(got) != 0 {
		t.Fatalf("answer %+v has the forgotten t-2", got)
	}
	if _, got := serveSession(t, m, 7, sessionFetch(id, 3, map[int32]int64{2: 0})); len(got) != 1 || got[2].records == 0 {
		t.Fatalf("answer %+v, want t-2 back with its records", got)
	}
}

// An error is always answered, and the partition answered again once it
// is gone: the leader forgets what it sent of a partition in error.
func TestFetchSessionResendsAfterError(t *testing.T) {
	m, ps := sessionLeader(t, 2)
	resp, _ := serveSession(t, m, 7, sessionFetch(0, 0, allAt(2, 0)))
	id := resp.SessionID
	// The partition goes away and comes back.
	m.mu.Lock()
	delete(m.partitions, ps[0].tp)
	m.mu.Unlock()
	for epoch := int32(1); epoch <= 2; epoch++ {
		if _, got := serveSession(t, m, 7, sessionFetch(id, epoch, nil)); len(got) != 1 || got[0].err != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("answer %+v, want t-0 with UNKNOWN_TOPIC_OR_PARTITION", got)
		}
	}
	m.mu.Lock()
	m.partitions[ps[0].tp] = ps[0]
	m.mu.Unlock()
	if _, got := serveSession(t, m, 7, sessionFetch(id, 3, nil)); len(got) != 1 || got[0].err != 0 || got[0].hw != 0 {
		t.Fatalf("answer %+v, want t-0 without error", got)
	}
	if _, got := serveSession(t, m, 7, sessionFetch(id, 4, nil)); len(got) != 0 {
		t.Fatalf("answer %+v, want none", got)
	}
}

// recordingConn passes a follower's requests to conn and records, for
// each Fetch, its session id and epoch and the partitions it names.
type recordingConn struct {
	LeaderConn
	mu      sync.Mutex
	fetches []recordedFetch
}

type recordedFetch struct {
	id, epoch          int32
	named, forgotten   int
	errCode, sessionID int32
}

func (c *recordingConn) RoundTrip(r kmsg.Request, deadline time.Time) ([]byte, error) {
	body, err := c.LeaderConn.RoundTrip(r, deadline)
	if req, ok := r.(*kmsg.FetchRequest); ok {
		f := recordedFetch{id: req.SessionID, epoch: req.SessionEpoch}
		for _, t := range req.Topics {
			f.named += len(t.Partitions)
		}
		for _, t := range req.ForgottenTopics {
			f.forgotten += len(t.Partitions)
		}
		if err == nil {
			resp := req.ResponseKind().(*kmsg.FetchResponse)
			if resp.ReadFrom(body) == nil {
				f.errCode, f.sessionID = int32(resp.ErrorCode), resp.SessionID
			}
		}
		c.mu.Lock()
		c.fetches = append(c.fetches, f)
		c.mu.Unlock()
	}
	return body, err
}

func (c *recordingConn) since(i int) []recordedFetch {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.fetches[min(i, len(c.fetches)):])
}

// pollUntil polls cond until it holds, for at most a minute.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within a minute", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sessionCluster is node 1 leading n partitions of topic t and node 2's
// fetcher following them over a recorded loopback connection.
func sessionCluster(t *testing.T, n int) (*Manager, *fetcherManager, []*Partition, func() *recordingConn) {
	m, _ := sessionLeader(t, n, 1, 2)
	var mu sync.Mutex
	var last *recordingConn
	dial := func(int32) (LeaderConn, error) {
		c := &recordingConn{LeaderConn: &loopbackConn{leader: m, from: 2, id: loopbackConns.Add(1), closed: make(chan struct{})}}
		mu.Lock()
		last = c
		mu.Unlock()
		return c, nil
	}
	fm := newFetcherManager(2, FetchConfig{Dial: dial, WaitMaxMs: 20, Backoff: 20 * time.Millisecond}, slog.New(slog.DiscardHandler))
	t.Cleanup(fm.stopAll)
	fsys := vfs.NewMem()
	var ps []*Partition
	for i := range n {
		tp := engine.TopicPartition{Topic: "t", Partition: int32(i)}
		l, _, err := engine.Open(fsys, "/f/"+tp.String(), tp, engine.DefaultOptions(), engine.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		p := newPartition(tp, l, &partitionHooks{nodeID: 2, now: time.Now}, 0)
		if err := p.becomeLeaderOrFollower(false, 1); err != nil {
			t.Fatal(err)
		}
		fm.follow(tp, p, 1, 1)
		ps = append(ps, p)
	}
	return m, fm, ps, func() *recordingConn {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}

// idleFetches waits until the follower's Fetches on its connection name
// nothing: k of them in a row in a session, none refused.
func idleFetches(t *testing.T, conn func() *recordingConn, k int) {
	t.Helper()
	pollUntil(t, fmt.Sprintf("%d idle incremental fetches in a row", k), func() bool {
		c := conn()
		if c == nil {
			return false
		}
		fs := c.since(0)
		run := 0
		for _, f := range fs {
			if f.epoch > 0 && f.named == 0 && f.forgotten == 0 && f.errCode == 0 {
				run++
			} else {
				run = 0
			}
		}
		return run >= k
	})
}

// An idle follower in a session names no partition; records and a moved
// high watermark still reach it; a partition it stops following is
// forgotten, one it follows again named.
func TestFollowerSessionIdleAndChanges(t *testing.T) {
	m, fm, ps, conn := sessionCluster(t, 20)
	idleFetches(t, conn, 3)
	if st := m.ReplicaFetchStats(); st.Sessions != 1 {
		t.Fatalf("stats %+v, want one session", st)
	}
	// Records at the leader reach the follower, and the high watermark
	// they move after.
	lp := m.partitions[ps[5].tp]
	appendOne(t, lp)
	pollUntil(t, "t-5's record and high watermark at the follower", func() bool {
		return ps[5].Log().LogEndOffset() == 1 && ps[5].HighWatermark() == 1
	})
	idleFetches(t, conn, 3)
	// Stop following t-3: the next Fetch forgets it, and then the
	// follower idles again.
	c := conn()
	mark := len(c.since(0))
	fm.follow(ps[3].tp, ps[3], -1, 0)
	pollUntil(t, "a fetch forgetting t-3", func() bool {
		for _, f := range c.since(mark) {
			if f.forgotten == 1 && f.named == 0 && f.errCode == 0 {
				return true
			}
		}
		return false
	})
	idleFetches(t, conn, 3)
	if conn() != c {
		t.Fatal("the follower dialed again")
	}
}

// A leader that loses the session (restarted, evicted it) refuses the
// follower's next incremental fetch; the follower fetches in full again,
// opening a new session on the same connection, and goes back to idle
// fetches naming nothing.
func TestFollowerFallsBackToFullFetch(t *testing.T) {
	m, fm, _, conn := sessionCluster(t, 10)
	idleFetches(t, conn, 2)
	c := conn()
	mark := len(c.since(0))
	// The leader forgets every session, as a restarted one would.
	m.sessions.mu.Lock()
	clear(m.sessions.byFollower)
	m.sessions.mu.Unlock()
	pollUntil(t, "a refused fetch, then a full one, then an idle one", func() bool {
		refused, full, idle := false, false, false
		for _, f := range c.since(mark) {
			switch {
			case !refused:
				refused = f.errCode == int32(kerr.FetchSessionIDNotFound.Code)
			case !full:
				full = f.epoch == 0 && f.named == 10 && f.sessionID != 0
			case !idle:
				idle = f.epoch == 1 && f.named == 0
			}
		}
		return idle
	})
	if conn() != c {
		t.Fatal("the follower dialed again; it should keep its connection")
	}
	if n := fm.sessionResets.Load(); n != 1 {
		t.Fatalf("%d session resets, want 1", n)
	}
}

// sessionlessLeader answers every Fetch as a leader without sessions
// does: every partition it names, SessionID 0.
type sessionlessLeader struct {
	LeaderConn
}

func (c sessionlessLeader) RoundTrip(r kmsg.Request, deadline time.Time) ([]byte, error) {
	if req, ok := r.(*kmsg.FetchRequest); ok {
		req.SessionID, req.SessionEpoch = 0, -1
		req.ForgottenTopics = nil
	}
	return c.LeaderConn.RoundTrip(r, deadline)
}

// A follower whose leader answers SessionID 0 keeps sending full fetches.
func TestFollowerWithoutSessionFetchesInFull(t *testing.T) {
	m, _ := sessionLeader(t, 4)
	rc := &recordingConn{}
	dial := func(int32) (LeaderConn, error) {
		rc.LeaderConn = sessionlessLeader{&loopbackConn{leader: m, from: 2, id: loopbackConns.Add(1), closed: make(chan struct{})}}
		return rc, nil
	}
	fm := newFetcherManager(2, FetchConfig{Dial: dial, WaitMaxMs: 20}, slog.New(slog.DiscardHandler))
	defer fm.stopAll()
	fsys := vfs.NewMem()
	for i := range 4 {
		tp := engine.TopicPartition{Topic: "t", Partition: int32(i)}
		l, _, err := engine.Open(fsys, "/f/"+tp.String(), tp, engine.DefaultOptions(), engine.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		p := newPartition(tp, l, &partitionHooks{nodeID: 2, now: time.Now}, 0)
		if err := p.becomeLeaderOrFollower(false, 1); err != nil {
			t.Fatal(err)
		}
		fm.follow(tp, p, 1, 1)
	}
	// The first Fetches may come before every partition is followed.
	full := func() int {
		for i, f := range rc.since(0) {
			if f.named == 4 {
				return i
			}
		}
		return -1
	}
	pollUntil(t, "five fetches after one naming every partition", func() bool {
		i := full()
		return i >= 0 && len(rc.since(i)) >= 5
	})
	for i, f := range rc.since(full()) {
		if f.named != 4 || f.sessionID != 0 {
			t.Fatalf("fetch %d: %+v; want every partition named, no session", i, f)
		}
	}
	if st := m.ReplicaFetchStats(); st.Sessions != 0 || st.Incremental != 0 {
		t.Fatalf("leader stats %+v, want no session", st)
	}
}

// A session's answer spends its byte budget on the partitions with
// records in turn: one whose records an answer carried goes to the back,
// so a follower behind on many partitions gets each of them, not the
// first ones over and over.
func TestFetchSessionTakesTurns(t *testing.T) {
	m, ps := sessionLeader(t, 3)
	resp, _ := serveSession(t, m, 7, sessionFetch(0, 0, allAt(3, 0)))
	id := resp.SessionID
	for _, p := range ps {
		appendOne(t, p)
	}
	got := map[int32]int{}
	for epoch := int32(1); epoch <= 3; epoch++ {
		req := sessionFetch(id, epoch, nil)
		req.MaxBytes = 1 // room for one partition's first batch
		_, answered := serveSession(t, m, 7, req)
		for p, a := range answered {
			if a.records > 0 {
				got[p]++
			}
		}
	}
	if len(got) != 3 || got[0] != 1 || got[1] != 1 || got[2] != 1 {
		t.Fatalf("records per partition over three answers: %v, want one each", got)
	}
}

// A partition the follower asks for before its leader hosts it is
// answered with an error, waits out its backoff outside the session, and
// joins it once the leader has it: its records reach the follower, and
// the follower goes back to idle fetches.
func TestFollowerSessionPartitionLeaderHostsLater(t *testing.T) {
	m, fm, _, conn := sessionCluster(t, 4)
	idleFetches(t, conn, 2)
	tp := engine.TopicPartition{Topic: "late", Partition: 0}
	open := func(dir string, node int32) *Partition {
		l, _, err := engine.Open(vfs.NewMem(), dir, tp, engine.DefaultOptions(), engine.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return newPartition(tp, l, &partitionHooks{nodeID: node, now: time.Now}, 0)
	}
	fp := open("/f/late-0", 2)
	if err := fp.becomeLeaderOrFollower(false, 1); err != nil {
		t.Fatal(err)
	}
	fm.follow(tp, fp, 1, 1)
	// The leader answers UNKNOWN_TOPIC_OR_PARTITION: the follower backs
	// off from late-0.
	pollUntil(t, "the follower backing off from late-0", func() bool {
		fm.mu.Lock()
		defer fm.mu.Unlock()
		return !fm.assigned[tp].backoffUntil.IsZero()
	})
	lp := open("/l/late-0", 1)
	lp.setMetadata(1, []int32{1, 2}, []int32{1, 2}, 2, 30000)
	if err := lp.becomeLeader(1); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	m.partitions[tp] = lp
	m.mu.Unlock()
	appendOne(t, lp)
	pollUntil(t, "late-0's record and high watermark at the follower", func() bool {
		return fp.Log().LogEndOffset() == 1 && fp.HighWatermark() == 1
	})
	idleFetches(t, conn, 3)
}
