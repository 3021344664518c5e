package replication

import (
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/wire"
)

// The leader's side of replication: a follower's Fetch (its replica id
// set) and OffsetForLeaderEpoch, on a replica connection of the
// CONTROLLER listener. The transport has checked the peer's handshake
// (cluster id, peer set) and says which node it is; a request that claims
// another replica id closes the connection. The client listener never
// serves a replica fetch (CVE-2018-1288: a client claiming a replica id
// would read uncommitted records and move the high watermark).

// Versions of the replica requests: the last non-flexible ones, which
// carry CurrentLeaderEpoch (KIP-320) and need no tagged-field header.
const (
	ReplicaFetchVersion                int16 = 11
	ReplicaOffsetForLeaderEpochVersion int16 = 3
)

// maxReplicaFetchWait bounds a follower's long poll whatever it asks,
// unless ReplicationConfig.MaxFollowerWait says otherwise.
const maxReplicaFetchWait = 5 * time.Second

// ServeReplicaRequest answers a request from peer from on its replica
// connection conn, decoded by the transport with kmsg: the response body
// as chunks (a Fetch's record data as file ranges of this node's
// segments, which the transport sends with sendfile; it calls Done once
// written), or nil to close the connection (an API or version other than
// the two above, or a replica id that is not the peer's). A fetch session
// (session.go) belongs to conn; the transport says when conn closes
// (ReplicaConnClosed).
func (m *Manager) ServeReplicaRequest(from int32, conn uint64, req kmsg.Request) *wire.Body {
	switch req := req.(type) {
	case *kmsg.FetchRequest:
		if req.GetVersion() != ReplicaFetchVersion || req.ReplicaID != from {
			return nil
		}
		return m.serveFetch(from, conn, req)
	case *kmsg.OffsetForLeaderEpochRequest:
		if req.GetVersion() != ReplicaOffsetForLeaderEpochVersion || req.ReplicaID != from {
			return nil
		}
		return &wire.Body{Chunks: []wire.Chunk{{Bytes: m.serveOffsetForLeaderEpoch(req).AppendTo(nil)}}}
	}
	return nil
}

type replicaFetchTarget struct {
	p    *Partition
	err  int16
	part kmsg.FetchRequestTopicPartition
	// cp is the partition in the fetch's session, if it has one.
	cp *cachedPartition
}

// fetchTargetTopic is one topic of the partitions a fetch reads.
type fetchTargetTopic struct {
	topic string
	parts []replicaFetchTarget
}

// serveFetch answers a follower's Fetch on its connection conn: the
// response body with each partition's records as a file range, and the
// Release that lets their segments go. In a fetch session (session.go)
// it reads every partition of the session, named or not, and answers
// those that changed.
func (m *Manager) serveFetch(from int32, conn uint64, req *kmsg.FetchRequest) *wire.Body {
	wait := min(time.Duration(max(req.MaxWaitMillis, 0))*time.Millisecond, m.maxFollowerWait())
	deadline := time.Now().Add(wait)
	ctx, code := m.newFetchContext(from, conn, req)
	if code != 0 {
		// A session the follower has wrong: it fetches in full again.
		return &wire.Body{Chunks: wire.EncodeFetchResponse(req.GetVersion(), 0, code, noSessionID, nil)}
	}
	var targets []fetchTargetTopic
	if ctx.sess != nil {
		targets = m.sessionTargets(ctx.sess)
	} else {
		targets = m.replicaFetchTargets(req)
	}
	// appended wakes this fetch at the next append to any partition it
	// waits on: each registers it as it takes the fetch, before the read
	// below looks for records, so no append between them goes unseen.
	// New records only, as Kafka's delayed fetch: a high watermark that
	// moves alone reaches the follower with its next records or at the
	// end of the wait. Waking on it too costs a round trip per commit.
	waiter := &fetchWaiter{appended: make(chan struct{}, 1)}
	defer waiter.done.Store(true)
	appended := waiter.appended
	// waiting: some partition may get records; failed: some partition
	// has an error, which the follower hears at once, as Kafka's
	// ReplicaManager answers a fetch with a read error without delay.
	// Held, the answer kept a new partition that the follower asked for
	// before its leader hosted it out of the next Fetch for a whole long
	// poll, and so a first acks=all produce to it.
	waiting, failed := false, false
	for i := range targets {
		for j := range targets[i].parts {
			ft := &targets[i].parts[j]
			rp := ft.part
			if ft.p == nil {
				ft.err = kerr.UnknownTopicOrPartition.Code
			} else {
				ft.err = ft.p.followerFetch(from, rp.FetchOffset, rp.CurrentLeaderEpoch, waiter)
			}
			waiting = waiting || ft.err == 0
			failed = failed || ft.err != 0
		}
	}
	if failed {
		waiting = false
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if req.MinBytes <= 0 || !waiting || !time.Now().Before(deadline) || anyReadable(targets) {
			fr := m.readForFollower(from, req, ctx, targets)
			if fr.size >= int64(req.MinBytes) || !waiting || !time.Now().Before(deadline) {
				if timer != nil && fr.size < int64(req.MinBytes) {
					m.sessions.expired.Add(1) // held, woken, and still short at the end
				}
				return m.answerFetch(req, ctx, fr)
			}
			fr.release()
		}
		// Nothing to send yet. An idle follower's fetch comes here
		// without building a response that would only be dropped.
		if timer == nil {
			timer = time.NewTimer(time.Until(deadline))
		}
		if h := m.testHookFetchWaits; h != nil {
			// Between the look for records and the wait: an append here
			// must still wake the fetch (wakeup_test.go).
			h()
		}
		select {
		case <-appended:
		case <-timer.C:
			m.sessions.expired.Add(1)
			return m.answerFetch(req, ctx, m.readForFollower(from, req, ctx, targets))
		case <-m.stopped:
			return m.answerFetch(req, ctx, m.readForFollower(from, req, ctx, targets))
		}
	}
}

// fetchWait is a follower's fetch waiting for a leader's next append.
type fetchWait struct {
	follower int32
	w        *fetchWaiter
}

// fetchWaiter is one follower Fetch's wake-up, shared by every partition
// it names: the next append to any of them sends into appended. done is
// set when the fetch is answered, so its place can go to the follower's
// next fetch.
type fetchWaiter struct {
	appended chan struct{}
	done     atomic.Bool
}

// waitForAppendLocked makes w one that the next append wakes. It takes
// the place of the follower's answered fetch, so an idle partition keeps
// one entry per follower. A fetch still waiting keeps its own: a follower
// normally has one fetch in flight per leader, but one that closed its
// connection to send a new fetch at once (a partition to add) leaves the
// old fetch held here until its answer fails, and the leader may take the
// two in either order. Had the old one's registration replaced the new
// one's, the append would wake only the fetch nobody reads, and the live
// one would wait out its whole long poll (a first acks=all produce to a
// new partition took 4.9 s, or a minute with longer polls).
func (p *Partition) waitForAppendLocked(follower int32, w *fetchWaiter) {
	ws := p.waitsLocked()
	for i := range ws.fetchWaits {
		if fw := &ws.fetchWaits[i]; fw.follower == follower && fw.w.done.Load() {
			fw.w = w
			return
		}
	}
	ws.fetchWaits = append(ws.fetchWaits, fetchWait{follower: follower, w: w})
}

// replicaFetchTargets resolves the partitions a follower's Fetch names,
// under one hold of the Manager's lock: a fetch names every partition the
// follower follows here, thousands on a large cluster, every round.
func (m *Manager) replicaFetchTargets(req *kmsg.FetchRequest) []fetchTargetTopic {
	targets := make([]fetchTargetTopic, len(req.Topics))
	m.mu.RLock()
	defer m.mu.RUnlock()
	for i, t := range req.Topics {
		targets[i] = fetchTargetTopic{topic: t.Topic, parts: make([]replicaFetchTarget, len(t.Partitions))}
		for j, rp := range t.Partitions {
			targets[i].parts[j] = replicaFetchTarget{part: rp, p: m.partitions[engine.TopicPartition{Topic: t.Topic, Partition: rp.Partition}]}
		}
	}
	return targets
}

// anyReadable reports whether readForFollower could return records for
// any of targets: a partition without an error whose fetch offset is
// below the leader's read limit for followers. When none is, the read
// would return no records (Log.ReadWhole returns none at or above its
// limit, and an error at most), and a fetch that needs some waits
// without it.
func anyReadable(targets []fetchTargetTopic) bool {
	for _, ts := range targets {
		for _, ft := range ts.parts {
			if ft.err == 0 && ft.part.FetchOffset < ft.p.readLimitForFollower() {
				return true
			}
		}
	}
	return false
}

// answerFetch encodes what readForFollower read and counts it against
// the leader's replication throttle; in a session, it notes what the
// follower was sent (sessionSent).
func (m *Manager) answerFetch(req *kmsg.FetchRequest, ctx fetchContext, fr followerRead) *wire.Body {
	m.leaderThrottle.recordFetch(fr.th)
	id := noSessionID
	if ctx.sess != nil {
		sessionSent(ctx.sess, fr)
		id = ctx.sess.id
	}
	return &wire.Body{Chunks: wire.EncodeFetchResponse(req.GetVersion(), 0, 0, id, fr.topics), Release: fr.release}
}

// followerRead is one read of every partition a follower's fetch names
// (in an incremental session fetch, of those the follower is to hear
// of: sessionSends).
type followerRead struct {
	topics  []wire.FetchTopic
	results []*engine.ReadResult
	size    int64
	th      throttledRead
	// cps are the session's partitions of topics, in their order.
	cps []*cachedPartition
}

func (fr followerRead) release() {
	for _, r := range fr.results {
		r.Release()
	}
}

// readForFollower reads every partition once, up to the leader's log end
// offset (its durable offset under flush policy ack), for follower from:
// whole batches, as file ranges. The leader's replication throttle holds
// back the partitions it throttles for from once its rate is used up;
// what the read took from the throttle is counted when its response is
// sent. In an incremental session fetch it keeps only the partitions the
// follower is to hear of (sessionSends): an idle follower's read
// allocates nothing per partition.
func (m *Manager) readForFollower(from int32, req *kmsg.FetchRequest, ctx fetchContext, targets []fetchTargetTopic) followerRead {
	fr := followerRead{topics: make([]wire.FetchTopic, 0, min(len(targets), 16))}
	budget := int64(req.MaxBytes)
	if budget <= 0 {
		budget = 10 << 20
	}
	throttleAvail := int64(-1)
	for _, t := range targets {
		rt := wire.FetchTopic{Topic: t.topic}
		if !ctx.incremental {
			rt.Partitions = make([]wire.FetchPartition, 0, len(t.parts))
		}
		for _, ft := range t.parts {
			rp := wire.FetchPartition{Partition: ft.part.Partition, ErrorCode: ft.err, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}
			if ft.p != nil {
				l := ft.p.Log()
				hw := ft.p.HighWatermark()
				rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = hw, hw, l.LogStartOffset()
				limit := max(0, min(int64(ft.part.PartitionMaxBytes), budget-fr.size))
				throttled := ft.err == 0 && ft.p.throttled.leader.Load()
				held := false
				if throttled && !ft.p.inISR(from) {
					if throttleAvail < 0 {
						throttleAvail = max(m.leaderThrottle.Available(), 0)
					}
					// Held back when the rate is used up: no records, and
					// the follower asks again.
					held = throttleAvail == 0
					limit = min(limit, throttleAvail)
					if held {
						fr.th.held++
					}
				}
				// The response's budget is spent: no records, the
				// follower asks again next round. Only the first
				// partition with records may go over it, by one batch
				// (KIP-74, as Kafka's minOneMessage): ReadWhole always
				// returns a first batch, so a fetch naming thousands of
				// partitions would otherwise carry one batch of each,
				// far past replica.fetch.response.max.bytes and the
				// peer frame limit, and never get through.
				spent := fr.size > 0 && limit == 0
				if ft.err == 0 && !held && !spent {
					r, err := l.ReadWhole(ft.part.FetchOffset, limit, ft.p.readLimitForFollower())
					if err != nil {
						rp.ErrorCode = errorCodeFor(err)
					} else if r.Slice.Size == 0 {
						r.Release() // nothing held
					} else {
						fr.results = append(fr.results, r)
						rp.Records = r.Slice
						n := r.Slice.Size
						fr.size += n
						if throttled {
							fr.th.bytes += n
							if throttleAvail > 0 {
								throttleAvail = max(throttleAvail-n, 0)
							}
						}
					}
				}
			}
			if ctx.incremental && !sessionSends(ft.cp, rp) {
				continue
			}
			rt.Partitions = append(rt.Partitions, rp)
			if ctx.sess != nil {
				fr.cps = append(fr.cps, ft.cp)
			}
		}
		if len(rt.Partitions) > 0 || !ctx.incremental {
			fr.topics = append(fr.topics, rt)
		}
	}
	return fr
}

func errorCodeFor(err error) int16 {
	if ke, ok := err.(*kerr.Error); ok {
		return ke.Code
	}
	for _, ke := range []*kerr.Error{kerr.OffsetOutOfRange, kerr.KafkaStorageError, kerr.NotLeaderForPartition} {
		if errorsIs(err, ke) {
			return ke.Code
		}
	}
	if errorsIs(err, engine.ErrOffsetOutOfRange) {
		return kerr.OffsetOutOfRange.Code
	}
	return kerr.KafkaStorageError.Code
}

func (m *Manager) serveOffsetForLeaderEpoch(req *kmsg.OffsetForLeaderEpochRequest) *kmsg.OffsetForLeaderEpochResponse {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, rp := range t.Partitions {
			out := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			out.Partition = rp.Partition
			out.LeaderEpoch, out.EndOffset = -1, -1
			p := m.Partition(engine.TopicPartition{Topic: t.Topic, Partition: rp.Partition})
			if p == nil {
				out.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else if code := p.checkLeader(rp.CurrentLeaderEpoch); code != 0 {
				out.ErrorCode = code
			} else {
				out.LeaderEpoch, out.EndOffset = p.log.EndOffsetForEpoch(rp.LeaderEpoch)
			}
			rt.Partitions = append(rt.Partitions, out)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// checkLeader checks that this replica leads at the epoch a follower
// believes current (KIP-320).
func (p *Partition) checkLeader(currentLeaderEpoch int32) int16 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.checkLeaderLocked(currentLeaderEpoch)
}

func (p *Partition) checkLeaderLocked(currentLeaderEpoch int32) int16 {
	switch {
	case !p.isLeader:
		return kerr.NotLeaderForPartition.Code
	case currentLeaderEpoch >= 0 && currentLeaderEpoch < p.leaderEpoch:
		return kerr.FencedLeaderEpoch.Code
	case currentLeaderEpoch > p.leaderEpoch:
		return kerr.UnknownLeaderEpoch.Code
	}
	return 0
}

// followerFetch records a follower's fetch position (its log end offset:
// durable under flush policy ack, since a follower appends with
// fdatasync before it fetches again) and returns the partition's error
// code for the fetch. With appended set, the leader's next append here
// sends into it (notifyAppended): the fetch waits on it for new records.
func (p *Partition) followerFetch(from int32, fetchOffset int64, currentLeaderEpoch int32, waiter *fetchWaiter) int16 {
	lso, leo := p.log.LogStartOffset(), p.log.LogEndOffset()
	p.mu.Lock()
	if code := p.checkLeaderLocked(currentLeaderEpoch); code != 0 {
		p.mu.Unlock()
		return code
	}
	if !slices.Contains(p.core.replicas, from) {
		p.mu.Unlock()
		return kerr.NotLeaderForPartition.Code
	}
	if fetchOffset < lso || fetchOffset > leo {
		p.mu.Unlock()
		return kerr.OffsetOutOfRange.Code
	}
	p.core.followerFetch(from, fetchOffset, p.nowMs())
	if waiter != nil {
		p.waitForAppendLocked(from, waiter)
	}
	send := p.applyReadyLocked()
	p.mu.Unlock()
	if send != nil {
		send()
	}
	return 0
}

func errorsIs(err error, target error) bool { return errors.Is(err, target) }

// readLimitForFollower is where a follower's fetch stops: the leader's
// durable offset under flush policy ack, its log end offset under
// interval. A follower never holds a record its leader could lose in a
// crash, so a leader that restarts before the controller fences it, and
// leads again at the same leader epoch without the records it had not
// synced, appends new ones where no follower holds others of that epoch
// (they would pass the epoch check and diverge below the high watermark).
func (p *Partition) readLimitForFollower() int64 { return p.localOffset() }

// notifyAppended wakes followers' fetches waiting for new records.
func (p *Partition) notifyAppended() {
	p.mu.Lock()
	if p.waits == nil {
		p.mu.Unlock()
		return // nobody waits
	}
	wakeLocked(&p.waits.appended)
	for _, fw := range p.waits.fetchWaits {
		if fw.w.done.Load() {
			continue
		}
		// A fetch already woken needs no second wake-up.
		select {
		case fw.w.appended <- struct{}{}:
		default:
		}
	}
	p.mu.Unlock()
}
