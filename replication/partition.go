package replication

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/engine"
)

// ErrStaleLeaderEpoch is a leadership change at a leader epoch older than
// the replica's: a late image. The replica keeps what it has.
var ErrStaleLeaderEpoch = errors.New("replication: stale leader epoch")

// Partition is this node's replica of one partition: its log plus the
// leader state that decides what consumers may see. It is the driver of
// the pure replicaCore (core.go): every input goes to the core under mu,
// and the Ready that comes out is done before mu is released (the high
// watermark published, waiters answered) or just after (an ISR change
// sent to the controller, which must not block under the lock).
type Partition struct {
	tp  engine.TopicPartition
	log *engine.Log
	// hooks are the Manager's: the node id, the clock, and where ISR
	// changes go.
	hooks *partitionHooks

	// followMu orders a follower's appends and truncations with
	// leadership changes: none lands after the replica leads.
	followMu sync.Mutex

	mu          sync.Mutex
	started     bool
	isLeader    bool
	leaderEpoch int32
	// Invariant: LogStartOffset <= highWatermark <= LogEndOffset.
	highWatermark int64
	// waits are the waits on this replica (fetches' long polls,
	// followers' fetches, acks=all appends): nil until the first, so an
	// idle partition holds one pointer where it held all of them.
	waits *partitionWaits
	// core is held in place: one allocation a partition, not two.
	core    replicaCore
	topicID cluster.UUID
	// replicaCount is the number of assigned replicas.
	replicaCount int
	// throttled says whether the replication throttle applies to this
	// replica as leader and as follower (the topic's throttled replicas).
	throttled throttledAs
}

// partitionWaits are what waits on a Partition, guarded by its mu.
type partitionWaits struct {
	// hwChanged is closed whenever the high watermark moves: Fetch long
	// polls wait on it. Made when a fetch first asks for it, and nil again
	// once closed (wake), so a partition nobody waits on holds no channel.
	hwChanged chan struct{}
	// appended is closed whenever the leader appends (followers' fetches
	// wait on fetchWaits instead: one channel for all their partitions).
	// Made and dropped as hwChanged.
	appended chan struct{}
	// fetchWaits are the followers' fetches that wait for the leader's
	// next append here, one per follower and fetch still waiting (a
	// follower has one in flight per leader but for the moment it replaces
	// a connection; see waitForAppendLocked), each woken by a send into
	// its buffered channel. One channel per fetch serves every partition it names, so
	// a fetch of thousands of idle partitions waits on one channel, not
	// on thousands. Nil until a follower first fetches.
	fetchWaits []fetchWait
	// waiters are the acks=all appends waiting for the high watermark,
	// by the id the core knows them by; nil until the first.
	waiters    map[uint64]chan error
	nextWaiter uint64
}

// waitsLocked returns p.waits, made now if nothing waited here yet.
func (p *Partition) waitsLocked() *partitionWaits {
	if p.waits == nil {
		p.waits = &partitionWaits{}
	}
	return p.waits
}

// wakeHighWatermarkLocked wakes the long polls waiting for the high
// watermark to move.
func (p *Partition) wakeHighWatermarkLocked() {
	if p.waits != nil {
		wakeLocked(&p.waits.hwChanged)
	}
}

// partitionHooks connect a Partition to its Manager.
type partitionHooks struct {
	nodeID int32
	now    func() time.Time
	// alterISR sends an ISR change to the controller and reports the
	// outcome through done: err nil when the controller took it, with
	// the partition epoch after it.
	alterISR func(tp engine.TopicPartition, topicID cluster.UUID, ch ISRChange, done func(partitionEpoch int32, err error))
	// startDurable runs an append's wait for durability
	// (AppendAsLeaderTimeout) away from the appender; nil: a goroutine.
	// The simulator runs it at a simulated time instead, as it runs the
	// rest of a node.
	startDurable func(wait func())
	// observer is told how long appends took to become durable and to
	// be held by the ISR; nil: nobody.
	observer Observer
}

func defaultHooks() *partitionHooks {
	return &partitionHooks{nodeID: -1, now: time.Now}
}

func newPartition(tp engine.TopicPartition, log *engine.Log, hooks *partitionHooks, hw int64) *Partition {
	if hooks == nil {
		hooks = defaultHooks()
	}
	hw = max(min(hw, log.LogEndOffset()), log.LogStartOffset())
	return &Partition{tp: tp, log: log, hooks: hooks, highWatermark: hw, core: makeReplicaCore(hooks.nodeID, hw)}
}

// waitChanLocked returns *ch, made now if nobody waits on it yet.
func waitChanLocked(ch *chan struct{}) chan struct{} {
	if *ch == nil {
		*ch = make(chan struct{})
	}
	return *ch
}

// wakeLocked closes *ch, waking whoever waits on it; the next waiter gets
// a new one.
func wakeLocked(ch *chan struct{}) {
	if *ch != nil {
		close(*ch)
		*ch = nil
	}
}

// TopicPartition names the partition.
func (p *Partition) TopicPartition() engine.TopicPartition { return p.tp }

// Log is the partition's log.
func (p *Partition) Log() *engine.Log { return p.log }

func (p *Partition) nowMs() int64 { return p.hooks.now().UnixMilli() }

// localOffset is what this replica counts toward the high watermark: its
// durable offset under flush policy ack, its log end offset under
// interval.
func (p *Partition) localOffset() int64 {
	if p.log.Options().FlushPolicy == engine.FlushAck {
		return p.log.DurableOffset()
	}
	return p.log.LogEndOffset()
}

// becomeLeader makes this replica the leader at epoch.
func (p *Partition) becomeLeader(epoch int32) error {
	return p.becomeLeaderOrFollower(true, epoch)
}

// becomeLeaderOrFollower makes this replica the leader at epoch when lead
// is set, and stops it leading otherwise, so that its appends are refused
// (and the group coordinator, which follows Leader, unloads). An epoch
// older than the replica's is stale and changes nothing: leadership moves
// only forward, as the epochs the controller hands out.
func (p *Partition) becomeLeaderOrFollower(lead bool, epoch int32) error {
	p.followMu.Lock()
	defer p.followMu.Unlock()
	p.mu.Lock()
	if epoch < p.leaderEpoch {
		current := p.leaderEpoch
		p.mu.Unlock()
		return fmt.Errorf("%w: %s at epoch %d, replica at %d", ErrStaleLeaderEpoch, p.tp, epoch, current)
	}
	changed := !p.started || lead != p.isLeader || epoch != p.leaderEpoch
	p.started = true
	p.isLeader, p.leaderEpoch = lead, epoch
	// The log checks the same leadership where each append commits: an
	// append that read the old leadership before this change is refused
	// there rather than landing as the old leader.
	p.log.FenceLeaderAppends(lead, epoch)
	var send func()
	if changed {
		if lead {
			p.core.highWatermark = p.highWatermark
			// The durable offset first: read after the log end offset, a
			// sync in between could put it past the log end read.
			local := p.localOffset()
			p.core.becomeLeader(epoch, p.nowMs(), p.log.LogEndOffset(), local)
		} else {
			p.core.becomeFollower(epoch)
		}
		send = p.applyReadyLocked()
	}
	p.mu.Unlock()
	if send != nil {
		send()
	}
	if !lead {
		return nil
	}
	p.maybeAdvanceHighWatermark()
	return p.log.AssignLeaderEpoch(epoch)
}

// applyReadyLocked does what the core asks: publish the high watermark,
// answer waiters; it returns the ISR change to send once mu is released.
func (p *Partition) applyReadyLocked() func() {
	r := p.core.takeReady()
	if p.isLeader && r.HighWatermark > p.highWatermark {
		p.highWatermark = r.HighWatermark
		p.wakeHighWatermarkLocked()
	}
	for _, rel := range r.Released {
		// The core knows only waiters waitHighWatermark added, which
		// made p.waits.
		if ch := p.waits.waiters[rel.ID]; ch != nil {
			delete(p.waits.waiters, rel.ID)
			ch <- rel.Err
		}
	}
	if r.AlterISR == nil || p.hooks.alterISR == nil {
		return nil
	}
	ch, topicID, alter := *r.AlterISR, p.topicID, p.hooks.alterISR
	return func() {
		alter(p.tp, topicID, ch, func(partitionEpoch int32, err error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			if pend := p.core.pending; pend == nil || pend.PartitionEpoch != ch.PartitionEpoch {
				return
			}
			switch {
			case err == nil && partitionEpoch <= ch.PartitionEpoch, err != nil && alterISRNotApplied(err):
				// Taken without a change, or refused: the next fetch or
				// tick may ask again.
				p.core.alterISRFailed()
			case err != nil:
				// Maybe committed: still pending, sent again later.
				p.core.alterISRUnknown(p.nowMs())
			}
			// Taken with a change: the image settles it.
		})
	}
}

// setISR records the partition's state from the metadata image: its
// replicas, ISR (committed), partition epoch, and min.insync.replicas.
func (p *Partition) setISR(isr []int32, minISR int) {
	p.setMetadata(p.core.partitionEpoch, nil, isr, minISR, 0)
}

func (p *Partition) setMetadata(partitionEpoch int32, replicas, isr []int32, minISR int, lagTimeMaxMs int64) {
	p.mu.Lock()
	if replicas == nil {
		replicas = isr
	}
	p.replicaCount = len(replicas)
	p.core.setMetadata(partitionEpoch, replicas, isr, minISR, lagTimeMaxMs)
	send := p.applyReadyLocked()
	p.mu.Unlock()
	if send != nil {
		send()
	}
}

// ISR is the partition's in-sync replicas as the metadata image says.
func (p *Partition) ISR() []int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.core.isr)
}

// Leader reports whether this replica leads, and at which epoch.
func (p *Partition) Leader() (bool, int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.isLeader, p.leaderEpoch
}

// LeaderState reports whether this replica leads, at which epoch, its
// high watermark, and the log end offset when it became leader at that
// epoch (Kafka's leader epoch start offset). Until the high watermark
// reaches that offset, the records of earlier leaders that this replica
// holds may have been committed without it knowing yet: a reader that
// must see every committed record (the group coordinator's load) waits
// for it.
func (p *Partition) LeaderState() (leader bool, epoch int32, highWatermark, epochStartOffset int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.isLeader {
		return false, p.leaderEpoch, p.highWatermark, -1
	}
	return true, p.leaderEpoch, p.highWatermark, p.core.leaderEpochStartOffset
}

// HighWatermark is the offset below which consumers may read.
func (p *Partition) HighWatermark() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.highWatermark
}

// HighWatermarkChanged returns a channel closed when the high watermark
// next moves.
func (p *Partition) HighWatermarkChanged() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return waitChanLocked(&p.waitsLocked().hwChanged)
}

// appendedOrHighWatermarkChanged returns channels closed at the leader's
// next append and its next high watermark move: a follower's fetch waits
// for either (new records, or a high watermark to carry).
func (p *Partition) appendedOrHighWatermarkChanged() (<-chan struct{}, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.waitsLocked()
	return waitChanLocked(&w.appended), waitChanLocked(&w.hwChanged)
}

// maybeAdvanceHighWatermark tells the core what the local log holds: its
// log end offset and what counts (durable under flush policy ack).
func (p *Partition) maybeAdvanceHighWatermark() {
	// The durable offset first, as in becomeLeader: localOffset <= logEndOffset.
	local := p.localOffset()
	leo := p.log.LogEndOffset()
	p.mu.Lock()
	p.core.localAppend(leo, local)
	send := p.applyReadyLocked()
	p.mu.Unlock()
	if send != nil {
		send()
	}
}

// tick lets the core look for followers that fell behind.
func (p *Partition) tick() {
	p.mu.Lock()
	if !p.isLeader {
		p.mu.Unlock()
		return
	}
	p.core.tick(p.nowMs())
	send := p.applyReadyLocked()
	p.mu.Unlock()
	if send != nil {
		send()
	}
}

// clampHighWatermark follows a log whose start moved past the high
// watermark or whose end fell below it (a truncation).
func (p *Partition) clampHighWatermark() {
	lso, leo := p.log.LogStartOffset(), p.log.LogEndOffset()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.highWatermark > leo {
		p.highWatermark = leo
	}
	if p.highWatermark < lso {
		p.highWatermark = lso
	}
	p.core.highWatermark = p.highWatermark
}

// setFollowerHighWatermark takes the high watermark a fetch response
// carried, bounded by what this follower holds.
func (p *Partition) setFollowerHighWatermark(hw int64) {
	hw = min(hw, p.log.LogEndOffset())
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.isLeader || hw <= p.highWatermark {
		return
	}
	p.highWatermark, p.core.highWatermark = hw, hw
	p.wakeHighWatermarkLocked()
}

// DefaultAckTimeout bounds an acks=all wait whose caller gives none.
const DefaultAckTimeout = 30 * time.Second

// AppendAsLeader is AppendAsLeaderTimeout with DefaultAckTimeout.
func (p *Partition) AppendAsLeader(records []byte, acks int16) (engine.AppendInfo, func() error, error) {
	return p.AppendAsLeaderTimeout(records, acks, DefaultAckTimeout)
}

// AppendAsLeaderTimeout appends a Produce request's records for this
// partition, in the caller's order, and returns a wait function that
// completes when the append is as durable as acks require: acks=1 once
// the leader holds it under its flush policy; acks=-1 once the high
// watermark passes it (every ISR member holds it, durably under flush
// policy ack), within timeout (REQUEST_TIMED_OUT after: the write may
// still commit). acks=0 callers need not wait.
func (p *Partition) AppendAsLeaderTimeout(records []byte, acks int16, timeout time.Duration) (engine.AppendInfo, func() error, error) {
	return p.appendAsLeader(acks, timeout, func(epoch int32) (engine.AppendInfo, func() error, error) {
		return p.log.AppendAsync(records, epoch)
	})
}

// AppendTxnMarkerAsLeader appends a transaction marker (a COMMIT or ABORT
// control batch, engine.Log.AppendTxnMarkerAsync: producer and
// coordinator epochs fenced) as this partition's leader, and returns a
// wait function as AppendAsLeader does: with acks -1 it completes once
// the high watermark passes the marker (every ISR member holds it).
func (p *Partition) AppendTxnMarkerAsLeader(m engine.TxnMarker, acks int16) (engine.AppendInfo, func() error, error) {
	return p.appendAsLeader(acks, DefaultAckTimeout, func(epoch int32) (engine.AppendInfo, func() error, error) {
		return p.log.AppendTxnMarkerAsync(m, epoch)
	})
}

// appendAsLeader is AppendAsLeaderTimeout's body for any append:
// appendAsync writes at the leader epoch it is given.
func (p *Partition) appendAsLeader(acks int16, timeout time.Duration, appendAsync func(epoch int32) (engine.AppendInfo, func() error, error)) (engine.AppendInfo, func() error, error) {
	p.mu.Lock()
	leader, epoch := p.isLeader, p.leaderEpoch
	isr, minISR, minSet := len(p.core.isr), p.core.effectiveMinISR(), p.core.minISR > 0
	p.mu.Unlock()
	if !leader {
		return engine.AppendInfo{}, nil, fmt.Errorf("%w: %s is not led by this node", kerr.NotLeaderForPartition, p.tp)
	}
	if acks == -1 && minSet && isr < minISR {
		return engine.AppendInfo{}, nil, fmt.Errorf("%w: %s has %d in-sync replica(s), min.insync.replicas is %d", kerr.NotEnoughReplicas, p.tp, isr, minISR)
	}
	obs := p.hooks.observer
	var start time.Time
	if obs != nil {
		start = time.Now()
	}
	// The engine refuses the append where it commits unless this replica
	// still leads at epoch (FenceLeaderAppends), so a leadership change
	// between the check above and the write cannot land it as a deposed
	// leader.
	info, wait, err := appendAsync(epoch)
	if err != nil {
		return engine.AppendInfo{}, nil, err
	}
	ack := p.log.Options().FlushPolicy == engine.FlushAck
	if !info.Duplicate && !ack {
		// Under interval followers may read it now. Under ack they read
		// only what is durable (readLimitForFollower): waking them before
		// the fdatasync would only have them read nothing and wait again.
		p.notifyAppended()
		p.maybeAdvanceHighWatermark()
	}
	// The fdatasync starts now, not when the caller waits. The wire layer
	// waits on a connection's writer in request order, so a pipelined
	// request's wait starts only once the request before it was answered,
	// and acks=all answers only after the followers fetched, appended
	// and fetched again: a sync started by the wait put one leader
	// fdatasync, and one round of replication, in series behind every
	// request ahead of it on the connection, and its followers slept in
	// their long poll meanwhile. Started here, it runs while the request
	// before it replicates, and followers are woken the moment it is
	// durable (waitDurable).
	durable := make(chan durableOutcome, 1)
	if run := p.hooks.startDurable; run != nil {
		run(func() { p.waitDurable(info, wait, start, durable) })
	} else {
		go p.waitDurable(info, wait, start, durable)
	}
	return info, func() error {
		var awaited time.Time
		if obs != nil && acks == -1 {
			awaited = time.Now()
		}
		d := <-durable
		if d.err != nil {
			return d.err
		}
		if acks != -1 {
			return nil
		}
		// A retried batch (Duplicate) waits for its original's commit
		// like a new one: the original may not be committed yet.
		err := p.waitHighWatermark(info.LastOffset+1, timeout)
		if obs != nil && err == nil {
			// Held by the ISR from the later of durable and awaited: a
			// wait that began late (the answers before it on the
			// connection) counts only what it waited itself.
			if d.at.After(awaited) {
				awaited = d.at
			}
			obs.AcksAllISRWait(time.Since(awaited))
		}
		return err
	}, nil
}

// durableOutcome is how an append's wait for durability ended: its error,
// and when it ended (set only with an Observer).
type durableOutcome struct {
	err error
	at  time.Time
}

// waitDurable waits for an append to be as durable as the flush policy
// promises, then wakes the followers' fetches (they read only what is
// durable under flush policy ack) and lets the high watermark count it,
// and sends the outcome to done. start is when the append began (set
// only with an Observer).
func (p *Partition) waitDurable(info engine.AppendInfo, wait func() error, start time.Time, done chan<- durableOutcome) {
	err := wait()
	var at time.Time
	if err == nil && !start.IsZero() {
		at = time.Now()
	}
	if err == nil && !info.Duplicate {
		p.notifyAppended()
	}
	p.maybeAdvanceHighWatermark()
	done <- durableOutcome{err: err, at: at}
	// Observed last: the followers' wake-up and the answer come first.
	if obs := p.hooks.observer; obs != nil && !at.IsZero() {
		obs.LeaderDurable(at.Sub(start))
	}
}

// waitHighWatermark waits until the high watermark reaches offset.
func (p *Partition) waitHighWatermark(offset int64, timeout time.Duration) error {
	ch := make(chan error, 1)
	p.mu.Lock()
	w := p.waitsLocked()
	w.nextWaiter++
	id := w.nextWaiter
	if w.waiters == nil {
		w.waiters = map[uint64]chan error{}
	}
	w.waiters[id] = ch
	p.core.addWaiter(id, offset)
	send := p.applyReadyLocked()
	p.mu.Unlock()
	if send != nil {
		send()
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-ch:
		return err
	case <-t.C:
	}
	p.mu.Lock()
	delete(p.waits.waiters, id)
	p.core.removeWaiter(id)
	p.mu.Unlock()
	select {
	case err := <-ch: // answered as the timer fired
		return err
	default:
	}
	return fmt.Errorf("%w: %s: the in-sync replicas did not all hold offset %d within %v", kerr.RequestTimedOut, p.tp, offset-1, timeout)
}

// Fetch isolation levels, as Kafka numbers them.
const (
	ReadUncommitted int8 = 0
	ReadCommitted   int8 = 1
)

// ReadForConsumer reads from offset up to the high watermark (a consumer
// never sees what is not yet committed). It returns the high watermark and
// log start offset the response carries.
func (p *Partition) ReadForConsumer(offset, maxBytes int64, minOneMessage bool) (*engine.ReadResult, int64, int64, error) {
	hw := p.HighWatermark()
	r, err := p.log.Read(offset, maxBytes, hw, minOneMessage)
	return r, hw, p.log.LogStartOffset(), err
}

// ReadCommittedForConsumer is ReadForConsumer for a read_committed
// consumer: it reads below the last stable offset, and returns it too,
// with the aborted transactions of the records read.
func (p *Partition) ReadCommittedForConsumer(offset, maxBytes int64, minOneMessage bool) (engine.CommittedRead, error) {
	hw := p.HighWatermark()
	r, lso, aborted, err := p.log.ReadCommitted(offset, maxBytes, hw, minOneMessage)
	return engine.CommittedRead{Result: r, HighWatermark: hw, LastStableOffset: lso, LogStartOffset: p.log.LogStartOffset(), Aborted: aborted}, err
}

// LastStableOffset is the last stable offset given the high watermark hw.
func (p *Partition) LastStableOffset(hw int64) int64 { return p.log.LastStableOffset(hw) }
