package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
)

// LeaderConn is a follower's connection to a leader: Kafka requests,
// encoded by kmsg at their version, answered in order with the response
// body (after the response header) for req.ResponseKind() to decode. A
// response body is valid until the next RoundTrip, which may read into
// the same memory: the fetcher is done with one (every partition
// appended) before it sends the next request.
// The CONTROLLER listener's replica connections (peer.ReplicaConn)
// implement it.
type LeaderConn interface {
	RoundTrip(req kmsg.Request, deadline time.Time) ([]byte, error)
	Close() error
}

// FetchConfig are the follower's settings (Kafka's replica.fetch.*).
type FetchConfig struct {
	// Dial opens a connection to a leader.
	Dial           func(leader int32) (LeaderConn, error)
	MaxBytes       int32 // replica.fetch.max.bytes, per partition
	ResponseBytes  int32 // replica.fetch.response.max.bytes
	WaitMaxMs      int32 // replica.fetch.wait.max.ms
	Backoff        time.Duration
	RequestTimeout time.Duration
}

// fetcherManager runs one fetcher per leader this node follows, each
// multiplexing every partition it follows there (Kafka's
// ReplicaFetcherManager with one fetcher thread per source broker).
type fetcherManager struct {
	cfg    FetchConfig
	self   int32
	logger *slog.Logger

	// throttle is the follower's replication throttle (throttle.go); nil
	// throttles nothing.
	throttle *Throttle

	// observer is told how long follower appends took; nil: nobody.
	observer Observer
	// fetchFailures counts the follower's rounds with a leader that
	// failed (ReplicaFetchStats.FetchFailures).
	fetchFailures atomic.Int64

	// sessionResets counts the fetch sessions a leader refused
	// (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH).
	sessionResets atomic.Int64
	// unwritable: the last round found the log dir taking no writes
	// (logged when it changes).
	unwritable atomic.Bool
	// checkpoint writes log-start-offset-checkpoint (engine.Manager.
	// Checkpoint) after a round moved a log start offset; nil writes
	// nothing.
	checkpoint func() error
	// appendFailures limits "follower append failed" to one line per
	// cause per followerLogInterval.
	appendFailures *causeLimiter

	mu       sync.Mutex
	fetchers map[int32]*fetcher
	assigned map[engine.TopicPartition]*followed
	stopped  bool
	wg       sync.WaitGroup
}

// followed is one partition a fetcher follows: immutable but for the
// fields under fetcherManager.mu.
type followed struct {
	p      *Partition
	leader int32
	epoch  int32
	// truncated: the log agrees with the leader's below its end
	// (KIP-101/279 done for this leadership); fetching may start.
	truncated bool
	// backoffUntil: a fetch error that only new metadata mends.
	backoffUntil time.Time
	// caughtUp: the last fetch brought the log up to the leader's high
	// watermark (Kafka's isReplicaInSync of a fetch state); the
	// replication throttle leaves such a replica alone.
	caughtUp atomic.Bool
	// resend: this replica's state changed under what the leader last
	// sent of it (a truncation, a response it could not apply): the next
	// Fetch in a session names it, and the leader answers it whole.
	resend atomic.Bool
}

type fetcher struct {
	leader int32
	parts  map[engine.TopicPartition]*followed
	wake   chan struct{}
	stop   chan struct{}
	conn   LeaderConn
	// polling: a Fetch is in flight on conn, which the leader may hold
	// for up to replica.fetch.wait.max.ms; interrupted: follow closed
	// conn under it, for a partition that Fetch lacks.
	polling, interrupted bool
	// session is the fetch session on conn (session.go); only the
	// fetcher's goroutine uses it.
	session followerSession
}

// followerSession is the follower's side of a fetch session (KIP-227)
// with one leader, on one connection: id 0 is none (the next Fetch is
// full, and asks for one); sent is what the leader holds of each
// partition in it.
type followerSession struct {
	id, epoch int32
	sent      map[engine.TopicPartition]sentPartition
	// round numbers the Fetches: a partition in sent but not in this
	// round's is forgotten.
	round uint64
}

// sentPartition is what a session's leader was last told of a partition.
type sentPartition struct {
	fl                     *followed
	fetchOffset, logStart  int64
	maxBytes, currentEpoch int32
	round                  uint64
}

// reset ends the session: the next Fetch is full.
func (s *followerSession) reset() {
	s.id, s.epoch = noSessionID, initialSessionEpoch
	clear(s.sent)
}

func newFetcherManager(self int32, cfg FetchConfig, logger *slog.Logger) *fetcherManager {
	if cfg.WaitMaxMs <= 0 {
		cfg.WaitMaxMs = 500
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 1 << 20
	}
	if cfg.ResponseBytes <= 0 {
		cfg.ResponseBytes = 10 << 20
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	return &fetcherManager{cfg: cfg, self: self, logger: logger, fetchers: map[int32]*fetcher{}, assigned: map[engine.TopicPartition]*followed{},
		appendFailures: newCauseLimiter(followerLogInterval, nil)}
}

// follow makes tp fetched from leader at epoch (a no-op when it already
// is); leader < 0 or this node stops fetching it.
func (fm *fetcherManager) follow(tp engine.TopicPartition, p *Partition, leader, epoch int32) {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	old := fm.assigned[tp]
	if old != nil && old.leader == leader && old.epoch == epoch && old.p == p {
		return
	}
	if old != nil {
		delete(fm.fetchers[old.leader].parts, tp)
		delete(fm.assigned, tp)
	}
	if leader < 0 || leader == fm.self || fm.stopped || fm.cfg.Dial == nil {
		return
	}
	f := fm.fetchers[leader]
	if f == nil {
		f = &fetcher{leader: leader, parts: map[engine.TopicPartition]*followed{}, wake: make(chan struct{}, 1), stop: make(chan struct{})}
		fm.fetchers[leader] = f
		fm.wg.Add(1)
		go fm.run(f)
	}
	fl := &followed{p: p, leader: leader, epoch: epoch}
	f.parts[tp] = fl
	fm.assigned[tp] = fl
	select {
	case f.wake <- struct{}{}:
	default:
	}
	if f.polling && f.conn != nil {
		// The Fetch in flight lacks the new partition, and the leader
		// may hold it for the whole wait: nothing it waits on is the new
		// partition's. Closing the connection ends it now; the fetcher
		// dials again and its next Fetch has every partition it follows
		// (Kafka's fetcher thread, too, adds partitions to its next
		// fetch). Waiting for the poll held a new partition's first
		// acks=all produce for up to replica.fetch.wait.max.ms. At most
		// one interruption per Fetch, however many partitions an image
		// brings.
		f.polling, f.interrupted = false, true
		f.conn.Close()
	}
}

// startPolling marks a Fetch in flight on f's connection, unless a
// partition was followed since the round's snapshot (its wake pending):
// follow interrupts only a Fetch marked so, and sends the wake under the
// same lock.
func (fm *fetcherManager) startPolling(f *fetcher) bool {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	select {
	case <-f.wake:
		return false
	default:
	}
	f.polling = true
	return true
}

// setPolling marks whether a Fetch is in flight on f's connection.
func (fm *fetcherManager) setPolling(f *fetcher, polling bool) {
	fm.mu.Lock()
	f.polling = polling
	fm.mu.Unlock()
}

// takeInterrupted reports, once, whether follow closed f's connection
// under its Fetch.
func (fm *fetcherManager) takeInterrupted(f *fetcher) bool {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	was := f.interrupted
	f.interrupted = false
	return was
}

// stopAll stops every fetcher and waits for them.
func (fm *fetcherManager) stopAll() {
	fm.mu.Lock()
	fm.stopped = true
	for _, f := range fm.fetchers {
		close(f.stop)
		if f.conn != nil {
			f.conn.Close()
		}
	}
	fm.mu.Unlock()
	fm.wg.Wait()
}

func (fm *fetcherManager) snapshot(f *fetcher) []*followed {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	// The snapshot has every partition followed so far: a wake left
	// from before it is spent (startPolling looks for a later one).
	select {
	case <-f.wake:
	default:
	}
	out := make([]*followed, 0, len(f.parts))
	for _, fl := range f.parts {
		out = append(out, fl)
	}
	return out
}

func (fm *fetcherManager) setConn(f *fetcher, c LeaderConn) bool {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	if fm.stopped {
		return false
	}
	f.conn = c
	return true
}

func (fm *fetcherManager) run(f *fetcher) {
	defer fm.wg.Done()
	var conn LeaderConn
	closeConn := func() {
		if conn != nil {
			conn.Close()
			conn = nil
			fm.setConn(f, nil)
		}
		// The leader drops a session with its connection.
		f.session.reset()
	}
	defer closeConn()
	pause := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-f.stop:
			return false
		case <-f.wake:
			return true
		case <-t.C:
			return true
		}
	}
	var lastErr string
	for {
		select {
		case <-f.stop:
			return
		default:
		}
		parts := fm.snapshot(f)
		if len(parts) == 0 {
			closeConn()
			select {
			case <-f.stop:
				return
			case <-f.wake:
			}
			continue
		}
		if conn == nil {
			c, err := fm.cfg.Dial(f.leader)
			if err == nil && !fm.setConn(f, c) {
				c.Close()
				return
			}
			if err != nil {
				if err.Error() != lastErr {
					fm.logger.Info("replica fetcher cannot reach the leader; retrying", "leader", f.leader, "err", err)
					lastErr = err.Error()
				}
				if !pause(fm.cfg.Backoff) {
					return
				}
				continue
			}
			conn, lastErr = c, ""
		}
		err := fm.round(f, conn, parts)
		if fm.takeInterrupted(f) {
			// A new partition to fetch: at once, on a new connection.
			closeConn()
			continue
		}
		if err != nil {
			select {
			case <-f.stop:
				return
			default:
			}
			fm.fetchFailures.Add(1)
			fm.logger.Debug("replica fetcher: connection to the leader failed", "leader", f.leader, "err", err)
			closeConn()
			if !pause(fm.cfg.Backoff) {
				return
			}
		}
	}
}

// round truncates the partitions that need it, then fetches once.
func (fm *fetcherManager) round(f *fetcher, conn LeaderConn, parts []*followed) error {
	if len(parts) > 0 && !fm.writable(parts[0].p.log) {
		// A log dir that takes no writes (below its free-space floor, or
		// failed) fetches nothing: it could append nothing, or only into
		// the headroom the floor keeps for retention and compaction. Its
		// heartbeats take it out of every ISR meanwhile (the controller's
		// log dir rule), so no leader waits for it; it catches up and
		// rejoins once the dir takes writes again.
		t := time.NewTimer(min(fm.cfg.Backoff, 100*time.Millisecond))
		defer t.Stop()
		select {
		case <-f.stop:
		case <-f.wake:
		case <-t.C:
		}
		return nil
	}
	now := time.Now()
	var truncate, fetch []*followed
	fm.mu.Lock()
	for _, fl := range parts {
		switch {
		case now.Before(fl.backoffUntil):
		case !fl.truncated:
			truncate = append(truncate, fl)
		default:
			fetch = append(fetch, fl)
		}
	}
	fm.mu.Unlock()
	if len(truncate) > 0 {
		// A truncation may lower the high watermark: the leader, in a
		// session, sends it again.
		for _, fl := range truncate {
			fl.resend.Store(true)
		}
		if err := fm.truncate(conn, truncate); err != nil {
			return err
		}
		// Those done fetch in this round's Fetch: the next round comes
		// only after its long poll.
		fm.mu.Lock()
		for _, fl := range truncate {
			if fl.truncated && !now.Before(fl.backoffUntil) {
				fetch = append(fetch, fl)
			}
		}
		fm.mu.Unlock()
	}
	// Each partition may ask its share of the response (fetchsize.go);
	// the throttle may lower that for throttled ones.
	fetch, limits := fm.followerBudget(fetch, partitionFetchBytes(fm.cfg.MaxBytes, fm.cfg.ResponseBytes, len(fetch)))
	if len(fetch) == 0 {
		// Everything waits on a backoff or a truncation: look again soon.
		t := time.NewTimer(min(fm.cfg.Backoff, 100*time.Millisecond))
		defer t.Stop()
		select {
		case <-f.stop:
		case <-f.wake:
		case <-t.C:
		}
		return nil
	}
	if !fm.startPolling(f) {
		// A partition was followed since this round's snapshot: the
		// next round's Fetch has it.
		return nil
	}
	defer fm.setPolling(f, false)
	return fm.fetch(f, conn, fetch, limits, fm.fetchWaitMs(parts))
}

// fetchWaitMs is how long a Fetch may wait at the leader: up to
// replica.fetch.wait.max.ms, but no longer than the first backoff among
// parts lasts, so that a partition waiting it out fetches when it ends,
// not a whole long poll later (a new partition that the follower asked
// for before its leader hosted it waits its backoff, not more).
func (fm *fetcherManager) fetchWaitMs(parts []*followed) int32 {
	wait := time.Duration(fm.cfg.WaitMaxMs) * time.Millisecond
	now := time.Now()
	fm.mu.Lock()
	for _, fl := range parts {
		if now.Before(fl.backoffUntil) {
			wait = min(wait, fl.backoffUntil.Sub(now)+time.Millisecond)
		}
	}
	fm.mu.Unlock()
	return int32(wait / time.Millisecond)
}

// writable reports whether the log's dir takes writes (one dir holds
// every log of this node), and logs when that changes.
func (fm *fetcherManager) writable(l *engine.Log) bool {
	err := l.CheckWritable()
	switch was := fm.unwritable.Load(); {
	case err != nil && !was:
		if fm.unwritable.CompareAndSwap(false, true) {
			fm.logger.Warn("follower stops fetching: its log dir takes no writes", "err", err)
		}
	case err == nil && was:
		if fm.unwritable.CompareAndSwap(true, false) {
			fm.logger.Info("follower fetches again: its log dir takes writes")
		}
	}
	return err == nil
}

func (fm *fetcherManager) backoff(fl *followed) {
	fm.mu.Lock()
	fl.backoffUntil = time.Now().Add(fm.cfg.Backoff)
	fm.mu.Unlock()
}

func (fm *fetcherManager) setTruncated(fl *followed, done bool) {
	fm.mu.Lock()
	fl.truncated = done
	fm.mu.Unlock()
}

// truncate finds where each log diverges from the leader's by leader
// epoch and cuts it there (KIP-101), asking again while a step is not
// conclusive (KIP-279); bounded in rounds.
func (fm *fetcherManager) truncate(conn LeaderConn, parts []*followed) error {
	for round := 0; round < 16 && len(parts) > 0; round++ {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.SetVersion(ReplicaOffsetForLeaderEpochVersion)
		req.ReplicaID = fm.self
		byTopic := map[string]int{}
		var asked []*followed
		for _, fl := range parts {
			epochs := fl.p.log.LeaderEpochs()
			if len(epochs) == 0 {
				// Nothing written under any epoch: nothing to cut.
				fm.setTruncated(fl, true)
				continue
			}
			i, ok := byTopic[fl.p.tp.Topic]
			if !ok {
				i = len(req.Topics)
				byTopic[fl.p.tp.Topic] = i
				t := kmsg.NewOffsetForLeaderEpochRequestTopic()
				t.Topic = fl.p.tp.Topic
				req.Topics = append(req.Topics, t)
			}
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.Partition = fl.p.tp.Partition
			rp.CurrentLeaderEpoch = fl.epoch
			rp.LeaderEpoch = epochs[len(epochs)-1].Epoch
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
			asked = append(asked, fl)
		}
		if len(asked) == 0 {
			return nil
		}
		body, err := conn.RoundTrip(req, time.Now().Add(fm.cfg.RequestTimeout))
		if err != nil {
			return err
		}
		resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
		if err := resp.ReadFrom(body); err != nil {
			return fmt.Errorf("replication: OffsetForLeaderEpoch response: %w", err)
		}
		answers := map[engine.TopicPartition]kmsg.OffsetForLeaderEpochResponseTopicPartition{}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				answers[engine.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p
			}
		}
		parts = parts[:0]
		for _, fl := range asked {
			a, ok := answers[fl.p.tp]
			if !ok || a.ErrorCode != 0 {
				fm.backoff(fl)
				continue
			}
			st := truncationStep(fl.p.log.LeaderEpochs(), fl.p.log.LogEndOffset(), a.LeaderEpoch, a.EndOffset)
			if err := fl.p.truncateAsFollower(fl.epoch, st.TruncateTo); err != nil {
				fm.logger.Log(context.Background(), followerErrorLevel(err), "follower truncation failed", "partition", fl.p.tp.String(), "offset", st.TruncateTo, "err", err)
				fm.backoff(fl)
				continue
			}
			if st.Done {
				fm.setTruncated(fl, true)
			} else {
				parts = append(parts, fl)
			}
		}
	}
	return nil
}

// fetch sends one Fetch for parts, asking at most limits[i] bytes of
// parts[i] and waiting at most waitMs at the leader, and appends what
// comes back. In f's fetch session it names only the partitions that
// changed since the last Fetch, and forgets those no longer fetched.
func (fm *fetcherManager) fetch(f *fetcher, conn LeaderConn, parts []*followed, limits []int32, waitMs int32) error {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(ReplicaFetchVersion)
	req.ReplicaID = fm.self
	req.MaxWaitMillis = waitMs
	req.MinBytes = 1
	req.MaxBytes = fm.cfg.ResponseBytes
	sess := &f.session
	if sess.sent == nil {
		sess.sent = map[engine.TopicPartition]sentPartition{}
	}
	sess.round++
	full := sess.id == noSessionID
	if full {
		// Asks for a session; a leader without them answers SessionID 0
		// and serves it as one without (SessionEpoch -1).
		clear(sess.sent)
		req.SessionID, req.SessionEpoch = noSessionID, initialSessionEpoch
	} else {
		req.SessionID, req.SessionEpoch = sess.id, sess.epoch
	}
	// named: the partitions this Fetch names (all, in a full one), each
	// with its limit.
	named := parts
	if !full {
		named = make([]*followed, 0, 8)
	}
	namedLimits := limits
	if !full {
		namedLimits = make([]int32, 0, 8)
	}
	for j, fl := range parts {
		st := sentPartition{fl: fl, fetchOffset: fl.p.log.LogEndOffset(), logStart: fl.p.log.LogStartOffset(),
			maxBytes: limits[j], currentEpoch: fl.epoch, round: sess.round}
		prev, ok := sess.sent[fl.p.tp]
		sess.sent[fl.p.tp] = st
		resend := fl.resend.Swap(false)
		if full {
			continue
		}
		prev.round = st.round
		if ok && prev == st && !resend {
			continue
		}
		named = append(named, fl)
		namedLimits = append(namedLimits, limits[j])
	}
	if !full {
		// Partitions in the session that this round does not fetch (no
		// longer followed here, waiting out a backoff, truncating): the
		// leader forgets them; they come back named in full.
		forgotten := map[string]int{}
		for tp, st := range sess.sent {
			if st.round == sess.round {
				continue
			}
			delete(sess.sent, tp)
			i, ok := forgotten[tp.Topic]
			if !ok {
				i = len(req.ForgottenTopics)
				forgotten[tp.Topic] = i
				ft := kmsg.NewFetchRequestForgottenTopic()
				ft.Topic = tp.Topic
				req.ForgottenTopics = append(req.ForgottenTopics, ft)
			}
			req.ForgottenTopics[i].Partitions = append(req.ForgottenTopics[i].Partitions, tp.Partition)
		}
	}
	// asked[i][k] is the partition req.Topics[i].Partitions[k] names: the
	// leader answers a fetch without a session in the request's order, so
	// a response partition is found by its place (checked), not looked up
	// by name. Each topic's place is found once per partition, and its
	// arrays are made once.
	byTopic := map[string]int{}
	topicOf := make([]int, len(named))
	var counts []int
	for j, fl := range named {
		i, ok := byTopic[fl.p.tp.Topic]
		if !ok {
			i = len(counts)
			byTopic[fl.p.tp.Topic] = i
			counts = append(counts, 0)
		}
		topicOf[j] = i
		counts[i]++
	}
	req.Topics = make([]kmsg.FetchRequestTopic, len(counts))
	asked := make([][]*followed, len(counts))
	for i, n := range counts {
		req.Topics[i] = kmsg.NewFetchRequestTopic()
		req.Topics[i].Partitions = make([]kmsg.FetchRequestTopicPartition, 0, n)
		asked[i] = make([]*followed, 0, n)
	}
	for j, fl := range named {
		i := topicOf[j]
		st := sess.sent[fl.p.tp]
		req.Topics[i].Topic = fl.p.tp.Topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = fl.p.tp.Partition
		rp.CurrentLeaderEpoch = fl.epoch
		rp.FetchOffset = st.fetchOffset
		rp.LogStartOffset = st.logStart
		rp.PartitionMaxBytes = namedLimits[j]
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		asked[i] = append(asked[i], fl)
	}
	deadline := time.Now().Add(time.Duration(waitMs)*time.Millisecond + fm.cfg.RequestTimeout)
	body, err := conn.RoundTrip(req, deadline)
	if err != nil {
		return err
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if err := resp.ReadFrom(body); err != nil {
		return fmt.Errorf("replication: Fetch response: %w", err)
	}
	switch resp.ErrorCode {
	case 0:
	case kerr.FetchSessionIDNotFound.Code, kerr.InvalidFetchSessionEpoch.Code:
		// The leader has no such session (it restarted, or evicted it):
		// the next Fetch is full and opens a new one. Nothing was read.
		fm.logger.Debug("replica fetcher: fetch session refused; fetching in full", "leader", f.leader,
			"err", kerr.ErrorForCode(resp.ErrorCode))
		fm.sessionResets.Add(1)
		sess.reset()
		return nil
	default:
		return fmt.Errorf("replication: Fetch refused: %w", kerr.ErrorForCode(resp.ErrorCode))
	}
	switch {
	case full:
		// SessionID 0: a leader without sessions, or one that keeps
		// none for this follower; the next Fetch is full again.
		sess.id, sess.epoch = resp.SessionID, 1
	case resp.SessionID == sess.id:
		sess.epoch = nextSessionEpoch(sess.epoch)
	default:
		// Not the session asked for: apply the answer, then start over.
		sess.reset()
	}
	// Partitions with records append (and fdatasync, under flush policy
	// ack) concurrently: one round costs about one fdatasync. One of them
	// appends on this goroutine, as do those without records, once the
	// others started: a goroutine for it would only add a wake-up before
	// the next fetch, the one that moves the leader's high watermark.
	var wg sync.WaitGroup
	// Partitions as places in resp, not closures over copies: an idle
	// round answers thousands.
	type answered struct {
		fl *followed
		rp *kmsg.FetchResponseTopicPartition
	}
	here := make([]answered, 0, len(parts))
	withRecords := false
	var logStartMoved atomic.Bool
	handle := func(a answered) {
		moved, applied := fm.handlePartition(a.fl, *a.rp)
		if moved {
			logStartMoved.Store(true)
		}
		if !applied {
			// The leader, in a session, takes its high watermark and
			// log start offset as sent: name the partition next time.
			a.fl.resend.Store(true)
		}
		fm.noteCaughtUp(a.fl, *a.rp)
	}
	var byTP map[engine.TopicPartition]*followed
	lookup := func(ti, pi int, topic string, partition int32) *followed {
		if ti < len(asked) && req.Topics[ti].Topic == topic && pi < len(asked[ti]) && asked[ti][pi].p.tp.Partition == partition {
			return asked[ti][pi]
		}
		// Out of the request's order, or not named in it (a session's
		// answer): by name, among every partition this round fetches.
		if byTP == nil {
			byTP = make(map[engine.TopicPartition]*followed, len(parts))
			for _, fl := range parts {
				byTP[fl.p.tp] = fl
			}
		}
		return byTP[engine.TopicPartition{Topic: topic, Partition: partition}]
	}
	for ti := range resp.Topics {
		t := &resp.Topics[ti]
		for pi := range t.Partitions {
			rp := &t.Partitions[pi]
			fl := lookup(ti, pi, t.Topic, rp.Partition)
			if fl == nil {
				continue
			}
			fm.recordFollower(fl, len(rp.RecordBatches))
			a := answered{fl: fl, rp: rp}
			switch {
			case len(rp.RecordBatches) == 0:
				here = append(here, a)
			case !withRecords:
				withRecords = true
				here = append(here, a)
			default:
				wg.Add(1)
				go func() {
					defer wg.Done()
					handle(a)
				}()
			}
		}
	}
	for _, a := range here {
		handle(a)
	}
	wg.Wait()
	if logStartMoved.Load() && fm.checkpoint != nil {
		// Once per round, however many partitions moved: a follower
		// that restarts keeps the leader's log start offset, as the
		// leader keeps its own (engine.Manager.DeleteRecords).
		if err := fm.checkpoint(); err != nil {
			fm.logger.Log(context.Background(), followerErrorLevel(err), "follower cannot checkpoint its log start offsets", "err", err)
		}
	}
	return nil
}

// handlePartition applies one partition of a fetch response; it reports
// whether the log start offset moved (the caller checkpoints it), and
// whether the leader's high watermark and log start offset were taken
// (not so after an error: the next Fetch in a session names the
// partition, for the leader to send them again).
func (fm *fetcherManager) handlePartition(fl *followed, rp kmsg.FetchResponseTopicPartition) (logStartMoved, applied bool) {
	switch err := kerr.ErrorForCode(rp.ErrorCode); {
	case err == nil:
	case errors.Is(err, kerr.OffsetOutOfRange):
		if fl.p.log.LogEndOffset() < rp.LogStartOffset {
			// Behind the leader's log start: start over there.
			if err := fl.p.truncateFullyAsFollower(fl.epoch, rp.LogStartOffset); err != nil {
				fm.logger.Log(context.Background(), followerErrorLevel(err), "follower cannot restart its log at the leader's log start", "partition", fl.p.tp.String(), "err", err)
				fm.backoff(fl)
			}
			return false, false
		}
		fm.setTruncated(fl, false)
		return false, false
	default:
		// Fenced, unknown epoch, not the leader: new metadata mends it.
		fm.backoff(fl)
		return false, false
	}
	if len(rp.RecordBatches) > 0 {
		var start time.Time
		if fm.observer != nil {
			start = time.Now()
		}
		err := fl.p.appendAsFollower(fl.epoch, rp.RecordBatches)
		if err == nil && fm.observer != nil {
			fm.observer.FollowerAppend(time.Since(start))
		}
		if err != nil {
			if errors.Is(err, engine.ErrInvalidOffsets) {
				fm.setTruncated(fl, false)
			} else {
				fm.appendFailed(fl, err)
				fm.backoff(fl)
			}
			return false, false
		}
	}
	fl.p.setFollowerHighWatermark(rp.HighWatermark)
	moved, err := fl.p.maybeIncrementLogStartOffset(fl.epoch, rp.LogStartOffset)
	if err != nil {
		fm.logger.Log(context.Background(), followerErrorLevel(err), "follower cannot move its log start offset to the leader's",
			"partition", fl.p.tp.String(), "leader_log_start_offset", rp.LogStartOffset, "err", err)
		return moved, false
	}
	return moved, true
}

// appendFailed logs a follower's failed append: at DEBUG when its
// leadership moved on or its log closed meanwhile (nothing an operator
// needs), else at WARN, at most one line per cause per
// followerLogInterval, saying how many it held back: a full disk or a
// shortage of descriptors fails every partition on every round.
func (fm *fetcherManager) appendFailed(fl *followed, err error) {
	if followerErrorLevel(err) == slog.LevelDebug {
		fm.logger.Debug("follower append failed", "partition", fl.p.tp.String(), "err", err)
		return
	}
	cause := appendFailureCause(err)
	if ok, suppressed := fm.appendFailures.allow(cause); ok {
		fm.logger.Warn("follower append failed", "partition", fl.p.tp.String(), "cause", cause, "err", err,
			"suppressed_since_last", suppressed)
	}
}

// errNotFollowing: the replica's leadership moved on since the fetch.
var errNotFollowing = errors.New("replication: replica no longer follows at this epoch")

// followerErrorLevel is how loud a follower's failed truncation is: a
// replica whose leadership moved on meanwhile, or whose log closed under
// it (the node stopping, the partition deleted), failed nothing that
// needs an operator: DEBUG. Anything else is a disk problem: ERROR.
func followerErrorLevel(err error) slog.Level {
	if errors.Is(err, errNotFollowing) || errors.Is(err, engine.ErrClosed) {
		return slog.LevelDebug
	}
	return slog.LevelError
}

// appendAsFollower appends records fetched from the leader at epoch,
// unless this replica's leadership moved meanwhile. Under flush policy
// ack it returns once they are durable, so the next fetch offset counts
// toward the leader's high watermark.
func (p *Partition) appendAsFollower(epoch int32, records []byte) error {
	p.followMu.Lock()
	defer p.followMu.Unlock()
	if lead, e := p.Leader(); lead || e != epoch {
		return errNotFollowing
	}
	_, err := p.log.AppendAsFollower(records)
	return err
}

// maybeIncrementLogStartOffset moves this follower's log start offset up
// to the leader's (Kafka's maybeIncrementLogStartOffset with reason
// LeaderOffsetIncremented), so records the leader deleted (DeleteRecords,
// retention) do not come back when this replica leads: never past its
// high watermark, and only while it follows at epoch. It reports whether
// the start moved; the caller makes it durable
// (log-start-offset-checkpoint).
func (p *Partition) maybeIncrementLogStartOffset(epoch int32, leaderLogStartOffset int64) (bool, error) {
	if leaderLogStartOffset <= p.log.LogStartOffset() {
		// Every round of an idle follower: no need to order it.
		return false, nil
	}
	p.followMu.Lock()
	defer p.followMu.Unlock()
	if lead, e := p.Leader(); lead || e != epoch {
		return false, errNotFollowing
	}
	offset := min(leaderLogStartOffset, p.HighWatermark())
	if offset <= p.log.LogStartOffset() {
		return false, nil
	}
	if err := p.log.AdvanceLogStartOffset(offset); err != nil {
		return false, err
	}
	return true, nil
}

func (p *Partition) truncateAsFollower(epoch int32, offset int64) error {
	p.followMu.Lock()
	defer p.followMu.Unlock()
	if lead, e := p.Leader(); lead || e != epoch {
		return errNotFollowing
	}
	// Even at or above the log end: the log drops a leader epoch that
	// starts there with no batch in it (engine.Log.TruncateTo).
	if err := p.log.TruncateTo(offset); err != nil {
		return err
	}
	p.clampHighWatermark()
	return nil
}

func (p *Partition) truncateFullyAsFollower(epoch int32, offset int64) error {
	p.followMu.Lock()
	defer p.followMu.Unlock()
	if lead, e := p.Leader(); lead || e != epoch {
		return errNotFollowing
	}
	if err := p.log.TruncateFullyAndStartAt(offset); err != nil {
		return err
	}
	p.clampHighWatermark()
	return nil
}
