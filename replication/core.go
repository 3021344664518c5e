package replication

import (
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/internal/invariants"
)

// replicaCore is the pure state machine of one partition's replica on
// this node: the leader's view of its followers, the in-sync replicas,
// the high watermark, and the acks=all appends waiting for it. It does no
// I/O and reads no clock: the Partition (its driver) feeds it the
// follower fetches, the local log's offsets, the metadata image and the
// time in milliseconds, and after each input collects a Ready (the high
// watermark to publish, an ISR change to send to the controller, waiters
// to answer).
//
// Rules (Kafka's Partition, with KIP-966):
//   - A follower is caught up at a fetch whose offset reaches the leader's
//     log end offset, or the leader's log end offset at its previous fetch
//     (Kafka's lastCaughtUpTimeMs). An ISR member not caught up for
//     replica.lag.time.max.ms is shrunk out; a replica outside the ISR
//     whose fetch offset reaches both the high watermark and the start of
//     the leader's epoch is expanded in.
//   - ISR changes go to the controller one at a time; the committed ISR
//     comes back in the metadata image, and only then counts. While one
//     is in flight the high watermark counts the maximal ISR (the
//     committed ISR plus any replica being added), so it never runs
//     ahead of a replica that may be in the ISR. A change stays in flight
//     until the image settles it or the controller refuses it outright; a
//     timeout or any other answer that leaves its outcome unknown keeps
//     it, and it is sent again.
//   - The high watermark is the minimum fetch offset over the maximal ISR
//     (the leader's own: its durable offset under flush policy ack, the
//     log end offset under interval); it moves only forward, and only
//     while the committed ISR has at least min(min.insync.replicas,
//     replicas) members (KIP-966): below that, the replicas that left
//     hold every committed record and stay eligible to lead.
//   - An acks=all waiter is answered when the high watermark reaches its
//     offset; NOT_ENOUGH_REPLICAS_AFTER_APPEND when the committed ISR
//     falls below the minimum first; NOT_LEADER_OR_FOLLOWER when the
//     replica stops leading.
//
// Invariant: while leading, highWatermark <= localOffset <= logEndOffset.
type replicaCore struct {
	self    int32
	leading bool
	// leaderEpoch bumps on every leader change, partitionEpoch on every
	// change the controller commits (ISR included).
	leaderEpoch    int32
	partitionEpoch int32
	replicas       []int32
	isr            []int32
	minISR         int
	lagTimeMaxMs   int64

	// leaderEpochStartOffset is the log end offset when this replica
	// became leader: a follower joins the ISR only once it has that much.
	leaderEpochStartOffset int64
	// logEndOffset is the local log's; localOffset is what this replica
	// counts toward the high watermark (its durable offset under flush
	// policy ack).
	logEndOffset int64
	localOffset  int64
	// Invariant: highWatermark only moves forward while leading.
	highWatermark int64

	followers map[int32]*followerState
	// pending is the ISR change sent to the controller and not yet seen
	// committed (or refused); nil when none.
	pending *ISRChange
	// resendAtMs, when not zero, is when tick sends pending again: its
	// outcome is unknown (alterISRUnknown).
	resendAtMs int64
	waiters    []waiter

	ready Ready
}

type followerState struct {
	// fetchOffset is the follower's last fetch offset (its log end
	// offset, durable under flush policy ack), -1 before its first fetch
	// under this leadership.
	fetchOffset    int64
	lastCaughtUpMs int64
	lastFetchMs    int64
	// lastFetchReadLimit is what a follower could read at its last fetch
	// (the leader's localOffset then): Kafka's lastFetchLeaderLogEndOffset.
	lastFetchReadLimit int64
}

type waiter struct {
	id     uint64
	offset int64
}

// ISRChange is an AlterPartition request: the ISR the leader asks for, at
// its leader and partition epochs.
type ISRChange struct {
	ISR            []int32
	LeaderEpoch    int32
	PartitionEpoch int32
}

// Release answers one acks=all waiter: Err nil when its records are
// committed.
type Release struct {
	ID  uint64
	Err error
}

// Ready is what the driver must do after an input.
type Ready struct {
	// HighWatermarkChanged: publish HighWatermark (wake fetchers).
	HighWatermarkChanged bool
	HighWatermark        int64
	// AlterISR, when set, is to be sent to the controller.
	AlterISR *ISRChange
	Released []Release
}

// newReplicaCore starts as the partition's only replica until metadata
// says otherwise.
func newReplicaCore(self int32, hw int64) *replicaCore {
	c := makeReplicaCore(self, hw)
	return &c
}

// makeReplicaCore is newReplicaCore as a value, for a Partition to hold
// in place (one allocation a partition, not two).
func makeReplicaCore(self int32, hw int64) replicaCore {
	return replicaCore{self: self, highWatermark: hw, leaderEpoch: -1,
		replicas: []int32{self}, isr: []int32{self}, minISR: 1}
}

// addFollower starts tracking replica r. followers is nil until the first
// (a partition with one replica, or not leading, holds no map).
func (c *replicaCore) addFollower(r int32, f *followerState) {
	if c.followers == nil {
		c.followers = map[int32]*followerState{}
	}
	c.followers[r] = f
}

// takeReady returns and clears the outputs gathered so far.
func (c *replicaCore) takeReady() Ready {
	r := c.ready
	r.HighWatermark = c.highWatermark
	c.ready = Ready{}
	return r
}

// effectiveMinISR is min.insync.replicas bounded by the replica count, as
// Kafka's Partition.effectiveMinIsr: a one-replica partition is never
// under its minimum.
func (c *replicaCore) effectiveMinISR() int {
	return max(1, min(c.minISR, len(c.replicas)))
}

// becomeLeader starts leading at epoch with the log at logEndOffset
// (localOffset of it counting). Every follower starts unknown, and ISR
// members count as caught up now, as Kafka resets them.
func (c *replicaCore) becomeLeader(epoch int32, nowMs, logEndOffset, localOffset int64) {
	if invariants.Enabled {
		defer c.checkInvariants()
	}
	c.leading, c.leaderEpoch = true, epoch
	c.leaderEpochStartOffset = logEndOffset
	c.logEndOffset, c.localOffset = logEndOffset, localOffset
	c.pending, c.resendAtMs = nil, 0
	c.followers = nil
	for _, r := range c.replicas {
		if r != c.self {
			c.addFollower(r, &followerState{fetchOffset: -1, lastCaughtUpMs: nowMs, lastFetchMs: nowMs})
		}
	}
	if c.highWatermark > logEndOffset {
		c.highWatermark = logEndOffset
	}
	c.maybeAdvanceHighWatermark()
	c.checkWaiters()
}

// becomeFollower stops leading at epoch: waiters are answered
// NOT_LEADER_OR_FOLLOWER, and the high watermark comes from the leader
// from now on.
func (c *replicaCore) becomeFollower(epoch int32) {
	if invariants.Enabled {
		defer c.checkInvariants()
	}
	c.leading, c.leaderEpoch = false, epoch
	c.pending, c.resendAtMs = nil, 0
	c.followers = nil
	for _, w := range c.waiters {
		c.ready.Released = append(c.ready.Released, Release{ID: w.id,
			Err: fmt.Errorf("%w: leadership moved before the records were committed", kerr.NotLeaderForPartition)})
	}
	c.waiters = nil
}

// setMetadata takes the partition's state from a committed image. An
// image at or past the pending change's partition epoch settles it,
// whether it took it or not.
func (c *replicaCore) setMetadata(partitionEpoch int32, replicas, isr []int32, minISR int, lagTimeMaxMs int64) {
	if invariants.Enabled {
		defer c.checkInvariants()
	}
	c.partitionEpoch = partitionEpoch
	c.replicas, c.isr = slices.Clone(replicas), slices.Clone(isr)
	c.minISR, c.lagTimeMaxMs = minISR, lagTimeMaxMs
	if c.pending != nil && partitionEpoch > c.pending.PartitionEpoch {
		c.pending, c.resendAtMs = nil, 0
	}
	if c.leading {
		for _, r := range replicas {
			if _, ok := c.followers[r]; !ok && r != c.self {
				c.addFollower(r, &followerState{fetchOffset: -1})
			}
		}
		c.maybeAdvanceHighWatermark()
		c.checkWaiters()
	}
}

// alterISRFailed settles a pending change the controller refused (and so
// never applied) or took without a change; the next tick or fetch may ask
// again.
func (c *replicaCore) alterISRFailed() { c.pending, c.resendAtMs = nil, 0 }

// alterISRRetryMs is how long a change whose outcome is unknown waits
// before tick sends it again (Kafka's AlterPartitionManager retries too).
const alterISRRetryMs = 500

// alterISRUnknown is a pending change whose outcome the leader does not
// know: a timeout, a controller change, a stale partition epoch. The
// controller may have committed it, so it stays pending and its maximal
// ISR keeps counting: dropping a pending expansion would let the high
// watermark pass the replica it added, which the controller may count in
// the ISR and elect (Kafka keeps the pending state on every error but
// INELIGIBLE_REPLICA and OPERATION_NOT_ATTEMPTED). The image settles it,
// or tick sends it again after alterISRRetryMs.
func (c *replicaCore) alterISRUnknown(nowMs int64) {
	if invariants.Enabled {
		defer c.checkInvariants()
	}
	if c.pending != nil {
		c.resendAtMs = max(nowMs+alterISRRetryMs, 1)
	}
}

// alterISRNotApplied reports an AlterISR error that proves the change was
// not applied and never will be: the controller checked the request at
// the partition's current epochs and refused it.
func alterISRNotApplied(err error) bool {
	return errors.Is(err, kerr.IneligibleReplica) || errors.Is(err, kerr.InvalidRequest) || errors.Is(err, kerr.OperationNotAttempted)
}

// localAppend moves the local log's offsets.
func (c *replicaCore) localAppend(logEndOffset, localOffset int64) {
	if invariants.Enabled {
		defer c.checkInvariants()
	}
	c.logEndOffset, c.localOffset = logEndOffset, localOffset
	if c.leading {
		c.maybeAdvanceHighWatermark()
		c.checkWaiters()
	}
}

// followerFetch records a follower's fetch at fetchOffset.
func (c *replicaCore) followerFetch(id int32, fetchOffset, nowMs int64) {
	if invariants.Enabled {
		defer c.checkInvariants()
	}
	f := c.followers[id]
	if !c.leading || f == nil {
		return
	}
	// Caught up is measured against what a follower can read, the
	// leader's localOffset (readLimitForFollower: its durable offset under
	// flush policy ack), not its log end: under steady load the log end
	// is always ahead of what is synced, and a follower that reads all it
	// may would never count as caught up and would leave the ISR after
	// replica.lag.time.max.ms.
	switch {
	case fetchOffset >= c.localOffset:
		f.lastCaughtUpMs = max(f.lastCaughtUpMs, nowMs)
	case fetchOffset >= f.lastFetchReadLimit:
		f.lastCaughtUpMs = max(f.lastCaughtUpMs, f.lastFetchMs)
	}
	f.fetchOffset = fetchOffset
	f.lastFetchMs, f.lastFetchReadLimit = nowMs, c.localOffset
	c.maybeExpandISR(id)
	c.maybeAdvanceHighWatermark()
	c.checkWaiters()
}

// tick looks for ISR members that fell behind, and sends again a
// pending change whose outcome is unknown.
func (c *replicaCore) tick(nowMs int64) {
	if invariants.Enabled {
		defer c.checkInvariants()
	}
	if c.leading && c.pending != nil && c.resendAtMs != 0 && nowMs >= c.resendAtMs {
		ch := *c.pending
		ch.ISR = slices.Clone(ch.ISR)
		c.ready.AlterISR, c.resendAtMs = &ch, 0
	}
	if !c.leading || c.pending != nil {
		return
	}
	var out []int32
	for _, r := range c.isr {
		f := c.followers[r]
		if r == c.self || f == nil {
			continue
		}
		if f.fetchOffset < c.localOffset && nowMs-f.lastCaughtUpMs > c.lagTimeMaxMs {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return
	}
	var isr []int32
	for _, r := range c.isr {
		if !slices.Contains(out, r) {
			isr = append(isr, r)
		}
	}
	c.propose(isr)
}

// maybeExpandISR asks for the fetching follower id to join the ISR once
// it caught up, as Kafka's maybeExpandIsr does for the replica that
// fetched. Only the fetching follower: a dead one's last position stays
// caught up, and asking for it on every other follower's fetch while the
// controller refuses it (fenced) spun a request per fetch.
func (c *replicaCore) maybeExpandISR(id int32) {
	if c.pending != nil || id == c.self || slices.Contains(c.isr, id) || !slices.Contains(c.replicas, id) {
		return
	}
	f := c.followers[id]
	if f == nil || f.fetchOffset < c.highWatermark || f.fetchOffset < c.leaderEpochStartOffset {
		return
	}
	c.propose(append(slices.Clone(c.isr), id))
}

func (c *replicaCore) propose(isr []int32) {
	c.pending, c.resendAtMs = &ISRChange{ISR: isr, LeaderEpoch: c.leaderEpoch, PartitionEpoch: c.partitionEpoch}, 0
	ch := *c.pending
	ch.ISR = slices.Clone(isr)
	c.ready.AlterISR = &ch
}

// maximalISR is the committed ISR plus any replica a pending change adds.
func (c *replicaCore) maximalISR() []int32 {
	out := slices.Clone(c.isr)
	if c.pending != nil {
		for _, r := range c.pending.ISR {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

func (c *replicaCore) maybeAdvanceHighWatermark() {
	if !c.leading || len(c.isr) < c.effectiveMinISR() {
		return
	}
	hw := c.localOffset
	for _, r := range c.maximalISR() {
		if r == c.self {
			continue
		}
		f := c.followers[r]
		if f == nil || f.fetchOffset < 0 {
			return
		}
		hw = min(hw, f.fetchOffset)
	}
	if hw > c.highWatermark {
		c.highWatermark = hw
		c.ready.HighWatermarkChanged = true
	}
}

// addWaiter registers an acks=all append whose records end before
// offset.
func (c *replicaCore) addWaiter(id uint64, offset int64) {
	if invariants.Enabled {
		defer c.checkInvariants()
	}
	c.waiters = append(c.waiters, waiter{id: id, offset: offset})
	c.checkWaiters()
}

// removeWaiter forgets a waiter whose request timed out.
func (c *replicaCore) removeWaiter(id uint64) {
	if invariants.Enabled {
		defer c.checkInvariants()
	}
	c.waiters = slices.DeleteFunc(c.waiters, func(w waiter) bool { return w.id == id })
}

func (c *replicaCore) checkWaiters() {
	if len(c.waiters) == 0 {
		return
	}
	if !c.leading {
		c.becomeFollower(c.leaderEpoch)
		return
	}
	under := len(c.isr) < c.effectiveMinISR()
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		switch {
		case c.highWatermark >= w.offset:
			c.ready.Released = append(c.ready.Released, Release{ID: w.id})
		case under:
			c.ready.Released = append(c.ready.Released, Release{ID: w.id,
				Err: fmt.Errorf("%w: the ISR %v fell below min.insync.replicas %d before the records were committed", kerr.NotEnoughReplicasAfterAppend, c.isr, c.effectiveMinISR())})
		default:
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

// checkInvariants panics when the core's own state breaks a rule every
// input must keep. Each input runs it last in a build with the
// invariants tag (internal/invariants); what only the cluster can show
// (no acknowledged record lost, replicas identical below the high
// watermark) the replication simulator checks across nodes.
func (c *replicaCore) checkInvariants() {
	if !c.leading {
		if c.pending != nil || len(c.waiters) > 0 || len(c.followers) > 0 {
			panic(fmt.Sprintf("replication: replica %d follows at epoch %d with pending ISR change %v, %d acks=all waiters and %d followers tracked",
				c.self, c.leaderEpoch, c.pending, len(c.waiters), len(c.followers)))
		}
		return
	}
	if c.highWatermark > c.localOffset || c.localOffset > c.logEndOffset {
		panic(fmt.Sprintf("replication: replica %d leads epoch %d with high watermark %d, local offset %d, log end offset %d: want high watermark <= local offset <= log end offset",
			c.self, c.leaderEpoch, c.highWatermark, c.localOffset, c.logEndOffset))
	}
	if c.pending != nil && c.pending.LeaderEpoch != c.leaderEpoch {
		panic(fmt.Sprintf("replication: replica %d leads epoch %d with an ISR change %v of epoch %d pending",
			c.self, c.leaderEpoch, c.pending.ISR, c.pending.LeaderEpoch))
	}
	for _, w := range c.waiters {
		if w.offset <= c.highWatermark {
			panic(fmt.Sprintf("replication: replica %d holds acks=all waiter %d for offset %d, at or below its high watermark %d",
				c.self, w.id, w.offset, c.highWatermark))
		}
	}
	if _, ok := c.followers[c.self]; ok {
		panic(fmt.Sprintf("replication: replica %d tracks itself as a follower", c.self))
	}
}
