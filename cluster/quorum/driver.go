package quorum

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wren-broker/wren/cluster/metalog"
	"github.com/wren-broker/wren/election"
)

// Config is a driver's settings and the hooks through which the node's
// applied state (the metadata image) follows the log.
type Config struct {
	Node metalog.Config
	// Tick is the length of one election tick on the monotonic clock.
	Tick time.Duration
	// TickAtStart delivers the node's first tick as soon as the driver
	// runs instead of a Tick later: a quorum of one elects itself at its
	// first tick, so its start need not wait a tick, and its tick can be
	// long enough that an idle node rarely wakes. The node counts one tick
	// more than has passed, which only shortens a lease.
	TickAtStart bool
	// Apply gets the committed entries in order, on the driver goroutine,
	// after they are durable here and before the node moves on. It must
	// not call back into the driver.
	Apply func(ents []metalog.Entry)
	// Restore replaces the applied state with a snapshot's data (a
	// follower that fell behind the controller's log start). Nil refuses
	// snapshots: the driver stops with an error (the cluster package
	// always sets it).
	Restore func(data []byte) error
	// OnSoftState is told every change of role, controller or Acting, on
	// the driver goroutine. May be nil.
	OnSoftState func(election.SoftState)
	Logger      *slog.Logger
}

// Errors of Propose.
var (
	// ErrStopped: the driver stopped (Close, or a storage error).
	ErrStopped = errors.New("quorum: driver stopped")
	// ErrProposalDropped: another entry took the proposal's index (the
	// controller lost its epoch before the entry committed).
	ErrProposalDropped = errors.New("quorum: proposal dropped by a controller change")
)

// Driver runs one metalog.Node: the only goroutine that touches it. It
// feeds the node ticks of the monotonic clock (catching up after a stall),
// messages from the transport and proposals, and does each Ready in the
// order metalog/doc.go gives: snapshot, truncation, append, fdatasync of
// the log, hard state and its fdatasync, then send, then apply, then the
// soft state, then Advance.
type Driver struct {
	cfg   Config
	node  *metalog.Node
	store *Storage
	tr    Transport
	log   *slog.Logger

	proposals chan *proposal
	queries   chan func(*metalog.Node)
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	soft atomic.Pointer[election.SoftState]
	// caughtUp is closed once the node reports metalog.Node.CaughtUp.
	caughtUp     chan struct{}
	caughtUpSeen bool // owned by the loop goroutine
	// heard is when a message from each peer last arrived (monotonic).
	heardMu sync.Mutex
	heard   map[election.NodeID]time.Time
	// err is the storage error that stopped the driver, if any.
	errMu sync.Mutex
	err   error
	// tickOrigin is the monotonic time of the node's tick 0: its tick t
	// fell due at tickOrigin + t*Tick, and the loop delivers every tick
	// due before it handles anything, so what the node did at its tick t
	// happened within a tick after that.
	tickOrigin time.Time

	// followers is what the acting controller last knew of its
	// followers (Followers); followersChanged is closed, and replaced,
	// whenever it is published anew.
	followersMu      sync.Mutex
	followers        map[election.NodeID]FollowerState
	followersChanged chan struct{}

	// Owned by the loop goroutine.
	waiters map[int64]*proposal
}

// FollowerState is what the acting controller knows of one follower from
// its fetches in the current epoch.
type FollowerState struct {
	// Applied is the applied index its last fetch reported: its metadata
	// image shows every entry up to it.
	Applied int64
	// LastFetch is when its last fetch arrived, on the monotonic clock,
	// good to within one tick.
	LastFetch time.Time
}

type proposal struct {
	data  []byte
	index int64
	epoch int32
	done  chan error // buffered, one send
}

// Start makes the node from what st read back, and runs it until Close.
func Start(cfg Config, store *Storage, stored metalog.Stored, tr Transport) (*Driver, error) {
	if cfg.Tick <= 0 {
		return nil, fmt.Errorf("quorum: tick %v must be positive", cfg.Tick)
	}
	if cfg.Node.FirstFetchSeq == 0 {
		// Fetch numbers of this incarnation never meet those of the
		// last one (metalog.Config.FirstFetchSeq); half the range keeps
		// them far from overflowing.
		cfg.Node.FirstFetchSeq = rand.Uint64() >> 1
	}
	node, err := metalog.NewNode(cfg.Node, stored)
	if err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	d := &Driver{cfg: cfg, node: node, store: store, tr: tr, log: cfg.Logger,
		proposals: make(chan *proposal), queries: make(chan func(*metalog.Node)),
		stop: make(chan struct{}), done: make(chan struct{}), waiters: map[int64]*proposal{},
		caughtUp: make(chan struct{}), heard: map[election.NodeID]time.Time{}, followersChanged: make(chan struct{})}
	ss := node.Status().Election.Soft
	d.soft.Store(&ss)
	start := time.Since(monotonicBase)
	if cfg.TickAtStart {
		start -= cfg.Tick
	}
	d.tickOrigin = monotonicBase.Add(start)
	go d.run(start)
	return d, nil
}

// monotonicBase anchors time.Since, whose result uses the monotonic clock.
var monotonicBase = time.Now()

func (d *Driver) run(start time.Duration) {
	defer close(d.done)
	ticks := tickCounter{start: start, tick: d.cfg.Tick}
	ticker := time.NewTicker(d.cfg.Tick)
	defer ticker.Stop()
	firstTick := make(chan struct{}, 1)
	if d.cfg.TickAtStart {
		firstTick <- struct{}{}
	}
	for {
		var event func()
		// publish: what the node knows of its followers may change (a
		// fetch arrived, or the role changed).
		publish := false
		select {
		case <-d.stop:
			d.failWaiters(ErrStopped)
			return
		case <-ticker.C:
		case <-firstTick:
		case m := <-d.tr.Receive():
			d.heardMu.Lock()
			d.heard[m.From] = time.Now()
			d.heardMu.Unlock()
			publish = m.Type == metalog.MsgFetch
			event = func() {
				if err := d.node.Step(m); err != nil {
					d.log.Debug("metadata quorum: message refused", "msg", m.String(), "err", err)
				}
			}
		case p := <-d.proposals:
			event = func() { d.propose(p) }
		case q := <-d.queries:
			event = func() { q(d.node) }
		}
		// Every missed tick first: the lease must see the stall before the
		// node acts on anything that arrived during it.
		for n := ticks.due(time.Since(monotonicBase)); n > 0; n-- {
			d.node.Tick()
		}
		if event != nil {
			event()
		}
		if d.node.HasReady() {
			roleChanged, err := d.handleReady()
			publish = publish || roleChanged
			if err != nil {
				if errors.Is(err, errClosedWaitingForSpace) {
					d.failWaiters(ErrStopped)
					return
				}
				d.errMu.Lock()
				d.err = err
				d.errMu.Unlock()
				d.log.Error("metadata quorum: storage failed; this node stops taking part in the quorum", "err", err)
				d.failWaiters(fmt.Errorf("%w: %w", ErrStopped, err))
				return
			}
		}
		if publish {
			d.publishFollowers()
		}
		if !d.caughtUpSeen && d.node.CaughtUp() {
			d.caughtUpSeen = true
			close(d.caughtUp)
		}
	}
}

// CaughtUp is closed once this node has applied everything the acting
// controller had committed when this node first heard from it (see
// metalog.Node.CaughtUp): from then on its applied state is current, not
// the one it replayed from its own disk.
func (d *Driver) CaughtUp() <-chan struct{} { return d.caughtUp }

// LastHeard is when a message from each peer last reached this node, on
// the monotonic clock (peers never heard from since it started are
// absent). Any message counts: a fetch, a fetch answer, a heartbeat or
// its ack, a vote or a probe.
func (d *Driver) LastHeard() map[election.NodeID]time.Time {
	d.heardMu.Lock()
	defer d.heardMu.Unlock()
	out := make(map[election.NodeID]time.Time, len(d.heard))
	for id, t := range d.heard {
		out[id] = t
	}
	return out
}

func (d *Driver) propose(p *proposal) {
	index, err := d.node.Propose(p.data)
	if err != nil {
		p.done <- err
		return
	}
	p.index = index
	p.epoch = d.node.Entries(index - 1)[0].Epoch
	if old := d.waiters[index]; old != nil {
		// Its entry was truncated and this node took the index again.
		old.done <- ErrProposalDropped
	}
	d.waiters[index] = p
}

// publishFollowers hands out what the node knows of its followers now
// (none unless it is the controller), on the loop goroutine.
func (d *Driver) publishFollowers() {
	st := d.node.Status()
	var out map[election.NodeID]FollowerState
	if st.Followers != nil {
		out = make(map[election.NodeID]FollowerState, len(st.Followers))
		for id, p := range st.Followers {
			out[id] = FollowerState{Applied: p.Applied, LastFetch: d.tickOrigin.Add(time.Duration(p.LastFetchTick) * d.cfg.Tick)}
		}
	}
	d.followersMu.Lock()
	d.followers = out
	close(d.followersChanged)
	d.followersChanged = make(chan struct{})
	d.followersMu.Unlock()
}

// Followers is, on the acting controller, what each follower that
// fetched in its epoch last reported (empty elsewhere), and a channel
// closed when that is next published: after each fetch the node takes,
// and each change of role.
func (d *Driver) Followers() (map[election.NodeID]FollowerState, <-chan struct{}) {
	d.followersMu.Lock()
	defer d.followersMu.Unlock()
	return d.followers, d.followersChanged
}

// FetchTimeout is how long a follower waits for an answer to its fetch
// before it sends another (metalog.Config.FetchTimeoutTicks): a follower
// that is up and reaches the controller has fetched within it.
func (d *Driver) FetchTimeout() time.Duration {
	return time.Duration(d.cfg.Node.FetchTimeoutTicks) * d.cfg.Tick
}

// handleReady does one Ready, and reports whether it changed the soft
// state (the role, and with it what the followers are).
func (d *Driver) handleReady() (roleChanged bool, err error) {
	rd := d.node.Ready()
	s := d.store
	synced := false
	if rd.Snapshot != nil {
		if err := d.untilSpace(func() error { return s.SaveSnapshot(*rd.Snapshot, rd.TruncateAll) }); err != nil {
			return false, err
		}
		synced = true
	}
	if rd.Truncate != nil {
		if err := s.TruncateAfter(*rd.Truncate); err != nil {
			return false, err
		}
	}
	if len(rd.Entries) > 0 {
		ents := rd.Entries
		err := d.untilSpace(func() error {
			// The entries before the one that met the full disk are
			// written; the rest follow them.
			ents = ents[min(int64(len(ents)), s.nextIndex()-ents[0].Index):]
			if len(ents) == 0 {
				return nil
			}
			return s.Append(ents)
		})
		if err != nil {
			return false, err
		}
		synced = false
	}
	if !synced && (len(rd.Entries) > 0 || rd.Truncate != nil) {
		if err := s.Sync(); err != nil {
			return false, err
		}
	}
	if rd.HardState != nil {
		if err := s.SetHardState(*rd.HardState); err != nil {
			return false, err
		}
	}
	for _, m := range rd.Messages {
		d.tr.Send(m)
	}
	if rd.RestoreSnapshot {
		if d.cfg.Restore == nil {
			return false, fmt.Errorf("quorum: a snapshot at %d arrived and this node cannot restore one", rd.Snapshot.Index)
		}
		if err := d.cfg.Restore(rd.Snapshot.Data); err != nil {
			return false, fmt.Errorf("quorum: restore snapshot %d: %w", rd.Snapshot.Index, err)
		}
		for i, p := range d.waiters {
			if i <= rd.Snapshot.Index {
				// Its fate is folded into the snapshot, unseen.
				p.done <- ErrProposalDropped
				delete(d.waiters, i)
			}
		}
	}
	if len(rd.CommittedEntries) > 0 {
		if d.cfg.Apply != nil {
			d.cfg.Apply(rd.CommittedEntries)
		}
		for _, e := range rd.CommittedEntries {
			if p := d.waiters[e.Index]; p != nil {
				delete(d.waiters, e.Index)
				if e.Epoch == p.epoch {
					p.done <- nil
				} else {
					p.done <- ErrProposalDropped
				}
			}
		}
	}
	if rd.SoftState != nil {
		roleChanged = true
		ss := *rd.SoftState
		d.soft.Store(&ss)
		if d.cfg.OnSoftState != nil {
			d.cfg.OnSoftState(ss)
		}
	}
	d.node.Advance(rd)
	return roleChanged, nil
}

// noSpaceRetry is how often a node whose disk is full tries its Ready's
// write again.
const noSpaceRetry = 100 * time.Millisecond

// errClosedWaitingForSpace: Close came while a Ready waited for space.
var errClosedWaitingForSpace = errors.New("quorum: closed while waiting for space")

// untilSpace runs persist, a write step of a Ready, again every
// noSpaceRetry while it fails for lack of space and leaves the storage
// sound (the wal undid the write; a snapshot is written aside and renamed
// into place), until it succeeds, fails otherwise, or the driver closes.
// A full disk is thus a stall, as of a slow disk: the node persists
// nothing, so it sends and acknowledges nothing, and on resume it first
// catches up the ticks that passed (see run), so a controller whose lease
// lapsed meanwhile stops acting before it answers anyone. Stopping the
// driver instead left a running broker with a metadata image that never
// moved again until a restart.
func (d *Driver) untilSpace(persist func() error) error {
	var first error
	for {
		err := persist()
		if err == nil || !d.store.isNoSpace(err) {
			if err == nil && first != nil {
				d.log.Info("metadata quorum: the metadata log has space again; this node takes part in the quorum again")
			}
			return err
		}
		if first == nil {
			first = err
			d.log.Warn("metadata quorum: no space left for the metadata log; this node waits for space, and takes no part in the quorum meanwhile", "err", err)
		}
		t := time.NewTimer(noSpaceRetry)
		select {
		case <-d.stop:
			t.Stop()
			return errClosedWaitingForSpace
		case <-t.C:
		}
	}
}

func (d *Driver) failWaiters(err error) {
	for i, p := range d.waiters {
		p.done <- err
		delete(d.waiters, i)
	}
}

// Propose appends data as one entry and returns its index once it is
// committed and applied on this node. It fails with metalog.ErrNotController
// (or ErrNotCaughtUp, ErrTooManyUncommitted) at once, ErrProposalDropped if
// a controller change replaced it, ErrStopped, or the context's error; a
// proposal whose context ended may still commit later.
func (d *Driver) Propose(ctx context.Context, data []byte) (int64, error) {
	p := &proposal{data: data, done: make(chan error, 1)}
	select {
	case d.proposals <- p:
	case <-d.done:
		return 0, d.stoppedErr()
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	select {
	case err := <-p.done:
		return p.index, err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (d *Driver) stoppedErr() error {
	if err := d.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrStopped, err)
	}
	return ErrStopped
}

// Status is a node's metalog status, with the controller's record of its
// followers' fetches (metalog.Status.Followers, in ticks) read on the
// monotonic clock.
type Status struct {
	metalog.Status
	// At is when the status was read.
	At time.Time
	// LastFetch and LastCaughtUp are, on the controller, when each
	// follower's last fetch of its epoch arrived and when the follower
	// was last caught up with the controller's log end (absent: not in
	// this epoch). Good to within one tick; readings of the monotonic
	// clock, so their ages (At.Sub) survive a change of the wall clock.
	LastFetch, LastCaughtUp map[election.NodeID]time.Time
}

// Status returns the node's status, read on the driver goroutine.
func (d *Driver) Status(ctx context.Context) (Status, error) {
	var st metalog.Status
	got := make(chan struct{})
	select {
	case d.queries <- func(n *metalog.Node) { st = n.Status(); close(got) }:
	case <-d.done:
		return Status{Status: st}, d.stoppedErr()
	case <-ctx.Done():
		return Status{Status: st}, ctx.Err()
	}
	<-got
	return d.timed(st, time.Now()), nil
}

// timed turns the ticks of st's follower progress into times. A tick t
// fell due at tickOrigin + t*Tick.
func (d *Driver) timed(st metalog.Status, at time.Time) Status {
	out := Status{Status: st, At: at}
	if st.Followers == nil {
		return out
	}
	at0 := func(tick int64) time.Time { return d.tickOrigin.Add(time.Duration(tick) * d.cfg.Tick) }
	out.LastFetch = make(map[election.NodeID]time.Time, len(st.Followers))
	out.LastCaughtUp = make(map[election.NodeID]time.Time, len(st.Followers))
	for id, p := range st.Followers {
		if p.LastFetchTick >= 0 {
			out.LastFetch[id] = at0(p.LastFetchTick)
		}
		if p.LastCaughtUpTick >= 0 {
			out.LastCaughtUp[id] = at0(p.LastCaughtUpTick)
		}
	}
	return out
}

// ActingAndCurrent reports whether this node is the acting controller
// and has applied its leader-change entry, so its applied state holds
// every committed entry (metalog.Node.ActingAndCurrent). Read on the
// driver goroutine.
func (d *Driver) ActingAndCurrent(ctx context.Context) (bool, error) {
	var ok bool
	got := make(chan struct{})
	select {
	case d.queries <- func(n *metalog.Node) { ok = n.ActingAndCurrent(); close(got) }:
	case <-d.done:
		return false, d.stoppedErr()
	case <-ctx.Done():
		return false, ctx.Err()
	}
	<-got
	return ok, nil
}

// SoftState is the node's latest role, controller and Acting, as the
// driver last handed them out.
func (d *Driver) SoftState() election.SoftState { return *d.soft.Load() }

// Err is the storage error that stopped the driver, if any.
func (d *Driver) Err() error {
	d.errMu.Lock()
	defer d.errMu.Unlock()
	return d.err
}

// Close stops the driver and the transport, and closes the storage.
func (d *Driver) Close() error {
	var err error
	d.closeOnce.Do(func() {
		close(d.stop)
		<-d.done
		err = errors.Join(d.tr.Close(), d.store.Close())
	})
	return err
}

// Compact folds the applied log into a snapshot when at least minEntries
// entries were applied since the last one: encode is called on the driver
// goroutine, where the applied state is exactly the applied index, and
// its data becomes the snapshot's. It returns the snapshot's index, or 0
// when the log is too short yet. The snapshot is persisted, and the log
// trimmed, with the next Ready.
func (d *Driver) Compact(ctx context.Context, minEntries int64, encode func() ([]byte, error)) (int64, error) {
	var index int64
	var err error
	got := make(chan struct{})
	q := func(n *metalog.Node) {
		defer close(got)
		st := n.Status()
		if st.Applied-st.SnapshotIndex < minEntries {
			return
		}
		var data []byte
		if data, err = encode(); err != nil {
			return
		}
		if err = n.Compact(st.Applied, data); err == nil {
			index = st.Applied
		}
	}
	select {
	case d.queries <- q:
	case <-d.done:
		return 0, d.stoppedErr()
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	<-got
	return index, err
}

// Entries returns a copy of the log's entries after index from (not yet
// compacted), read on the driver goroutine. For tests and tools.
func (d *Driver) Entries(ctx context.Context, from int64) ([]metalog.Entry, error) {
	var ents []metalog.Entry
	got := make(chan struct{})
	select {
	case d.queries <- func(n *metalog.Node) { ents = n.Entries(from); close(got) }:
	case <-d.done:
		return nil, d.stoppedErr()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	<-got
	return ents, nil
}
