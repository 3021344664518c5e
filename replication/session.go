package replication

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/wire"
)

// Incremental fetch sessions (KIP-227) between a follower and its leader.
// Without them every follower names every partition it follows in every
// Fetch, and the leader answers every one, every round
// (replica.fetch.wait.max.ms): an idle cluster's replication cost grew
// with its partition count. With a session, the leader keeps what the
// follower last asked of each partition and what it last sent of it;
// the follower's Fetch names only the partitions whose fetch offset, log
// start offset, maximum bytes or leader epoch changed (and those it
// forgets), and the answer has only the partitions with records, an
// error, or a high watermark or log start offset the follower has not
// been sent.
//
// A full fetch with SessionEpoch 0 creates a session (its id in the
// response; 0 from a leader without sessions, whose follower keeps
// sending full fetches); SessionEpoch -1 fetches without one, as a
// follower of an older version does. A session belongs to one replica
// connection: it goes when the connection closes, so a response lost with
// its connection never leaves the two sides disagreeing about what was
// sent. Each follower has at most one session per leader: a new one
// replaces the old.
//
// One departure from Kafka: a partition the follower names in an
// incremental fetch is always in the answer, with its high watermark and
// log start offset, whether or not they changed. The follower names a
// partition whose own state it changed (truncation, a failed append), and
// so hears the leader's state again without leaving and rejoining the
// session.

// Fetch session ids and epochs (Kafka's FetchMetadata).
const (
	noSessionID         int32 = 0
	initialSessionEpoch int32 = 0
	finalSessionEpoch   int32 = -1
)

// nextSessionEpoch is the epoch after e: 1 after the largest.
func nextSessionEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

// fetchSession is the leader's side of one follower's session. The
// connection it belongs to serves one request at a time, so only that
// connection's requests read or change it (fetchSessions.mu guards the
// index of sessions, not their contents).
type fetchSession struct {
	id       int32
	follower int32
	conn     uint64
	// epoch is the SessionEpoch the next incremental fetch must carry.
	epoch int32
	parts map[engine.TopicPartition]*cachedPartition
	// order is the order the leader reads parts in: as they joined, but
	// a partition whose records an answer carried goes to the end, so
	// that a response's byte budget, spent on the first partitions with
	// records, reaches every partition in turn (Kafka's FetchSession
	// does the same).
	order []*cachedPartition
	// targets is the memory sessionTargets reuses.
	targets []fetchTargetTopic
}

// cachedPartition is one partition of a session: the follower's last
// request for it, and the high watermark and log start offset last sent
// (-1: send them in the next answer).
type cachedPartition struct {
	tp      engine.TopicPartition
	req     kmsg.FetchRequestTopicPartition
	hw, lso int64
	// named: the request being served names the partition.
	named bool
	// toBack: marked for fetchSession.toBack.
	toBack bool
}

// toBack moves the partitions of sent to the end of the session's
// order, keeping their order among themselves.
func (s *fetchSession) toBack(sent []*cachedPartition) {
	if len(sent) == 0 {
		return
	}
	for _, cp := range sent {
		cp.toBack = true
	}
	s.order = slices.DeleteFunc(s.order, func(cp *cachedPartition) bool { return cp.toBack })
	for _, cp := range sent {
		cp.toBack = false
	}
	s.order = append(s.order, sent...)
}

// update takes the partitions a fetch names (added or changed) and
// forgets those it lists as forgotten, in Kafka's order: adds first.
func (s *fetchSession) update(req *kmsg.FetchRequest) {
	for _, t := range req.Topics {
		for _, rp := range t.Partitions {
			tp := engine.TopicPartition{Topic: t.Topic, Partition: rp.Partition}
			cp := s.parts[tp]
			if cp == nil {
				cp = &cachedPartition{tp: tp, hw: -1, lso: -1}
				s.parts[tp] = cp
				s.order = append(s.order, cp)
			}
			cp.req = rp
			cp.named = true
		}
	}
	forgot := false
	for _, t := range req.ForgottenTopics {
		for _, p := range t.Partitions {
			tp := engine.TopicPartition{Topic: t.Topic, Partition: p}
			if _, ok := s.parts[tp]; ok {
				delete(s.parts, tp)
				forgot = true
			}
		}
	}
	if forgot {
		s.order = slices.DeleteFunc(s.order, func(cp *cachedPartition) bool { return s.parts[cp.tp] != cp })
	}
}

// fetchSessions are a leader's sessions, at most one per follower.
type fetchSessions struct {
	mu         sync.Mutex
	byFollower map[int32]*fetchSession
	lastID     int32

	// What followers' Fetches asked (ReplicaFetchStats); expired: those
	// answered at the end of their wait, nothing new having come.
	requests, incremental, partitions, expired atomic.Int64
}

// ReplicaFetchStats counts the follower Fetches this leader served.
type ReplicaFetchStats struct {
	// Requests: every follower Fetch; Incremental: those in a session
	// that named only what changed.
	Requests, Incremental int64
	// Partitions named in them, in all: an idle follower in a session
	// names none.
	Partitions int64
	// Sessions open now.
	Sessions int
	// Expired: follower Fetches this leader held for their whole wait
	// and answered at its end, with nothing new (an idle partition's, or
	// a wake-up that never came).
	Expired int64
	// FetchFailures: this node's own fetch rounds, as follower, that
	// failed (the leader unreachable or closing the connection, a
	// response it refused or that did not decode); each waits out
	// replica.fetch.backoff.ms.
	FetchFailures int64
}

// ReplicaFetchStats says what the followers' Fetches asked of this leader.
func (m *Manager) ReplicaFetchStats() ReplicaFetchStats {
	s := &m.sessions
	s.mu.Lock()
	n := len(s.byFollower)
	s.mu.Unlock()
	st := ReplicaFetchStats{Requests: s.requests.Load(), Incremental: s.incremental.Load(), Partitions: s.partitions.Load(), Sessions: n,
		Expired: s.expired.Load()}
	m.mu.RLock()
	fm := m.fetchers
	m.mu.RUnlock()
	if fm != nil {
		st.FetchFailures = fm.fetchFailures.Load()
	}
	return st
}

// ReplicaConnClosed drops the session of follower from's replica
// connection conn, which closed (peer.ReplicaClosed).
func (m *Manager) ReplicaConnClosed(from int32, conn uint64) {
	s := &m.sessions
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.byFollower[from]; old != nil && old.conn == conn {
		delete(s.byFollower, from)
	}
}

// open creates follower from's session on conn from a full fetch, in
// place of any it had.
func (s *fetchSessions) open(from int32, conn uint64, req *kmsg.FetchRequest) *fetchSession {
	sess := &fetchSession{follower: from, conn: conn, epoch: 1, parts: map[engine.TopicPartition]*cachedPartition{}}
	sess.update(req)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byFollower == nil {
		s.byFollower = map[int32]*fetchSession{}
	}
	if s.lastID == 0 {
		s.lastID = rand.Int32N(math.MaxInt32)
	}
	// Ids in use are at most one per follower: the next free one.
	for {
		s.lastID = nextSessionEpoch(s.lastID)
		if !s.inUseLocked(s.lastID) {
			break
		}
	}
	sess.id = s.lastID
	s.byFollower[from] = sess
	return sess
}

func (s *fetchSessions) inUseLocked(id int32) bool {
	for _, o := range s.byFollower {
		if o.id == id {
			return true
		}
	}
	return false
}

// closeSession drops follower from's session id, which a fetch without a
// session (SessionEpoch -1) names.
func (s *fetchSessions) closeSession(from int32, id int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.byFollower[from]; old != nil && old.id == id {
		delete(s.byFollower, from)
	}
}

// lookup finds the session an incremental fetch names: follower from's,
// on this connection, at the epoch it expects, or an error code for the
// follower to go back to a full fetch.
func (s *fetchSessions) lookup(from int32, conn uint64, id, epoch int32) (*fetchSession, int16) {
	s.mu.Lock()
	sess := s.byFollower[from]
	s.mu.Unlock()
	switch {
	case sess == nil || sess.id != id || sess.conn != conn:
		return nil, kerr.FetchSessionIDNotFound.Code
	case sess.epoch != epoch:
		return nil, kerr.InvalidFetchSessionEpoch.Code
	}
	return sess, 0
}

// fetchContext is how a follower's Fetch is served: with sess nil,
// without a session (every partition named, every one answered); with
// incremental, from sess's partitions, answering those that changed.
type fetchContext struct {
	sess        *fetchSession
	incremental bool
}

// newFetchContext resolves the session a follower's Fetch asks for
// (Kafka's FetchManager.newContext), or returns the top-level error code
// that refuses it.
func (m *Manager) newFetchContext(from int32, conn uint64, req *kmsg.FetchRequest) (fetchContext, int16) {
	s := &m.sessions
	s.requests.Add(1)
	n := 0
	for _, t := range req.Topics {
		n += len(t.Partitions)
	}
	s.partitions.Add(int64(n))
	switch {
	case req.SessionEpoch == finalSessionEpoch:
		if req.SessionID != noSessionID {
			s.closeSession(from, req.SessionID)
		}
		return fetchContext{}, 0
	case req.SessionEpoch == initialSessionEpoch:
		return fetchContext{sess: s.open(from, conn, req)}, 0
	case req.SessionEpoch < finalSessionEpoch:
		return fetchContext{}, kerr.InvalidFetchSessionEpoch.Code
	}
	sess, code := s.lookup(from, conn, req.SessionID, req.SessionEpoch)
	if code != 0 {
		return fetchContext{}, code
	}
	s.incremental.Add(1)
	sess.update(req)
	sess.epoch = nextSessionEpoch(sess.epoch)
	return fetchContext{sess: sess, incremental: true}, 0
}

// sessionTargets resolves a session's partitions, in its order, under
// one hold of the Manager's lock: consecutive partitions of a topic are
// one topic of the answer (a topic may come more than once). It reuses
// the memory of the session's last fetch, done with once answered.
func (m *Manager) sessionTargets(sess *fetchSession) []fetchTargetTopic {
	targets := sess.targets[:0]
	m.mu.RLock()
	for _, cp := range sess.order {
		if n := len(targets); n == 0 || targets[n-1].topic != cp.tp.Topic {
			if n < cap(targets) {
				targets = targets[:n+1]
				targets[n].topic, targets[n].parts = cp.tp.Topic, targets[n].parts[:0]
			} else {
				targets = append(targets, fetchTargetTopic{topic: cp.tp.Topic})
			}
		}
		t := &targets[len(targets)-1]
		t.parts = append(t.parts, replicaFetchTarget{part: cp.req, p: m.partitions[cp.tp], cp: cp})
	}
	m.mu.RUnlock()
	sess.targets = targets
	return targets
}

// sessionSends reports whether an incremental fetch's answer has rp, the
// session's partition cp as read now: when the fetch named it, or it has
// records, an error, or a high watermark or log start offset other than
// last sent.
func sessionSends(cp *cachedPartition, rp wire.FetchPartition) bool {
	return cp.named || rp.Records.Size > 0 || rp.ErrorCode != 0 || rp.HighWatermark != cp.hw || rp.LogStartOffset != cp.lso
}

// sessionSent notes, in the session, what an answer sends the follower:
// each partition's high watermark and log start offset, but for one in
// error a high watermark of -1, so that it is sent again once the error
// is gone (Kafka's CachedPartition); partitions with records go to the
// back of the session's order.
func sessionSent(sess *fetchSession, fr followerRead) {
	var withRecords []*cachedPartition
	k := 0
	for _, t := range fr.topics {
		for _, fp := range t.Partitions {
			cp := fr.cps[k]
			k++
			cp.named = false
			cp.hw, cp.lso = fp.HighWatermark, fp.LogStartOffset
			if fp.ErrorCode != 0 {
				cp.hw = -1
			}
			if fp.Records.Size > 0 {
				withRecords = append(withRecords, cp)
			}
		}
	}
	sess.toBack(withRecords)
}
