package metalog

import (
	"fmt"
	"slices"

	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/internal/invariants"
)

// Node is one voter's metadata log replica, with the election that picks
// the controller inside it. It is not safe for concurrent use: one
// goroutine (the driver) feeds it ticks, messages and proposals and drains
// its Ready.
type Node struct {
	cfg      Config
	id       election.NodeID
	voters   []election.NodeID
	majority int
	e        *election.Node
	erd      election.Ready // the election's part of the Ready in flight

	log memLog
	// Invariant: snap.Index <= applied <= commit <= log.lastIndex().
	commit  int64
	applied int64 // handed out in CommittedEntries (or restored from a snapshot)
	// appliedDone is applied as of the last Advance: what the driver's
	// applied state (the metadata image) shows. A follower's fetch
	// reports it, so the controller knows which changes each follower
	// already shows (read your writes across nodes).
	//
	// Invariant: appliedDone <= applied.
	appliedDone int64
	// stable is the end of the log as the driver was last told to write
	// it: entries after it go out in the next Ready.
	stable int64
	// Persistence steps not yet handed out.
	pendingSnap     *Snapshot
	truncateAll     bool
	restoreSnapshot bool
	pendingTruncate *int64

	now int64

	// Controller: the epoch it leads, where its leader-change entry sits,
	// the log end each follower proved it holds, and the fetches it holds
	// back until something new arrives.
	leaderEpoch       int32
	leaderChangeIndex int64
	match             map[election.NodeID]int64
	parked            map[election.NodeID]parkedFetch
	progress          map[election.NodeID]progress

	// Follower: the controller it fetches from, in which epoch, and its
	// one fetch in flight.
	fetchFrom    election.NodeID
	fetchEpoch   int32
	fetchSeq     uint64
	fetchElapsed int
	// controllerCommit is the highest commit index the controller of
	// controllerCommitEpoch sent this follower in a fetch answer.
	controllerCommit      int64
	controllerCommitEpoch int32
	// caughtUp is sticky: set once this node applied every entry that was
	// committed when it first heard an acting controller's commit index
	// (or, as controller, its own leader-change entry). Like a KRaft
	// broker's initial catch-up, it says the applied state is no longer
	// the possibly stale one replayed from the local disk.
	caughtUp bool

	msgs     []Message
	ownMsgs  int // how many of msgs the Ready in flight handed out
	prevHard HardState
}

type parkedFetch struct {
	m  Message
	at int64
}

// progress is what the controller saw of one follower's fetches in its
// epoch, in ticks of its clock (Node.now): Kafka's lastFetchTimestamp and
// lastCaughtUpTimestamp, which kafka-metadata-quorum shows.
//
// Invariant: lastCaughtUp <= lastFetch; both -1 until the first fetch.
type progress struct {
	lastFetch    int64
	lastCaughtUp int64
	// endAtLastFetch is this log's end when the previous fetch arrived,
	// -1 until a fetch matched this log.
	endAtLastFetch int64
	// applied is the applied index the follower's last fetch reported
	// (Message.Commit of a MsgFetch).
	applied int64
}

// NewNode starts a node from what its disk holds. The driver restores its
// applied state from st.Snapshot itself; the first Ready hands out the
// committed entries after it.
func NewNode(cfg Config, st Stored) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e, err := election.NewNode(cfg.Election, st.Hard.Election)
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, id: cfg.Election.ID, e: e, fetchFrom: election.None, prevHard: st.Hard}
	n.voters = slices.Sorted(slices.Values(cfg.Election.Voters))
	n.majority = len(n.voters)/2 + 1
	if st.Snapshot.Index < 0 || st.Snapshot.Index == 0 && st.Snapshot.Epoch != 0 {
		return nil, fmt.Errorf("metalog: stored snapshot %v is not valid", st.Snapshot)
	}
	n.log.snap = st.Snapshot
	for _, ent := range st.Entries {
		if ent.Index != n.log.lastIndex()+1 || ent.Epoch < n.log.lastEpoch() {
			return nil, fmt.Errorf("metalog: stored entry %v does not follow %d/%d", ent, n.log.lastEpoch(), n.log.lastIndex())
		}
		n.log.ents = append(n.log.ents, ent)
	}
	if c := st.Hard.Commit; c > n.log.lastIndex() {
		return nil, fmt.Errorf("metalog: stored commit index %d is beyond the stored log end %d", c, n.log.lastIndex())
	}
	n.commit = max(st.Hard.Commit, st.Snapshot.Index)
	n.applied = st.Snapshot.Index
	n.appliedDone = n.applied
	n.stable = n.log.lastIndex()
	n.fetchSeq = cfg.FirstFetchSeq
	n.e.SetLogPosition(n.position())
	return n, nil
}

func (n *Node) position() election.LogPosition {
	return election.LogPosition{Epoch: n.log.lastEpoch(), Offset: n.log.lastIndex()}
}

// Tick advances the node's clock by one tick; see election.Node.Tick for
// why a driver must catch up the ticks it missed.
func (n *Node) Tick() {
	if invariants.Enabled {
		defer n.checkInvariants()
	}
	n.now++
	n.e.Tick()
	n.sync()
	n.maybeCaughtUp()
	if n.leaderEpoch != 0 {
		// In voter order, not map order, so that a run replays exactly.
		for _, id := range n.voters {
			if p, ok := n.parked[id]; ok && n.now-p.at >= int64(n.cfg.FetchWaitTicks) {
				delete(n.parked, id)
				n.answerFetch(p.m, false)
			}
		}
	}
	if n.fetchFrom != election.None {
		n.fetchElapsed++
		if n.fetchElapsed >= n.cfg.FetchTimeoutTicks {
			n.sendFetch()
		}
	}
}

// Step feeds the node one message from a peer. A message that is not for
// this node, not from a peer voter, or malformed is refused with an error
// and changes nothing.
func (n *Node) Step(m Message) error {
	if invariants.Enabled {
		defer n.checkInvariants()
	}
	if m.To != n.id {
		return fmt.Errorf("metalog: message %v is for %d, this is %d", m, m.To, n.id)
	}
	if m.From == n.id || !slices.Contains(n.voters, m.From) {
		return fmt.Errorf("metalog: message %v is not from a peer voter %v", m, n.voters)
	}
	switch m.Type {
	case MsgElection:
		if m.Election.From != m.From || m.Election.To != m.To {
			return fmt.Errorf("metalog: election message %v inside %d->%d", m.Election, m.From, m.To)
		}
		if err := n.e.Step(m.Election); err != nil {
			return err
		}
		n.sync()
	case MsgFetch:
		if m.LastIndex < 0 || m.Commit > m.LastIndex {
			return fmt.Errorf("metalog: fetch %v has a bad position", m)
		}
		n.handleFetch(m)
	case MsgFetchResp:
		if err := n.checkFetchResp(m); err != nil {
			return err
		}
		n.handleFetchResp(m)
	default:
		return fmt.Errorf("metalog: message %v has an unknown type", m)
	}
	n.maybeCaughtUp()
	return nil
}

// maybeCaughtUp sets caughtUp once the applied state holds everything
// the current controller had committed when this node heard from it.
func (n *Node) maybeCaughtUp() {
	if n.caughtUp {
		return
	}
	switch {
	case n.leaderEpoch != 0 && n.e.Acting() && n.applied >= n.leaderChangeIndex:
		n.caughtUp = true
	case n.fetchFrom != election.None && n.controllerCommitEpoch == n.fetchEpoch && n.applied >= n.controllerCommit:
		// Only a commit index that points at an entry of the
		// controller's own epoch is current: before its leader-change
		// entry commits, a new controller still sends the commit index
		// it inherited, which may lack entries its predecessor
		// committed.
		if ep, ok := n.log.epochAt(n.controllerCommit); ok && ep == n.controllerCommitEpoch {
			n.caughtUp = true
		}
	}
}

// CaughtUp reports whether this node has applied every entry that was
// committed when it first learned the commit index of an acting
// controller (as a follower, from the controller's fetch answer; as the
// controller, once its leader-change entry is applied). Until then its
// applied state is what it replayed from its own disk, which may be
// stale. Once true it stays true.
func (n *Node) CaughtUp() bool { return n.caughtUp }

// checkFetchResp refuses an answer that could not have come from a
// correct controller, so a bad peer cannot break the log's invariants.
func (n *Node) checkFetchResp(m Message) error {
	if len(m.Entries) > n.cfg.MaxFetchEntries {
		return fmt.Errorf("metalog: fetch answer from %d carries %d entries, at most %d", m.From, len(m.Entries), n.cfg.MaxFetchEntries)
	}
	prevIndex, prevEpoch := m.PrevIndex, m.PrevEpoch
	for _, ent := range m.Entries {
		if ent.Index != prevIndex+1 || ent.Epoch < prevEpoch || ent.Epoch > m.Epoch {
			return fmt.Errorf("metalog: fetch answer from %d: entry %v does not follow %d/%d in epoch %d", m.From, ent, prevEpoch, prevIndex, m.Epoch)
		}
		prevIndex, prevEpoch = ent.Index, ent.Epoch
	}
	if s := m.Snapshot; s != nil && (s.Index < 1 || s.Epoch > m.Epoch || m.Commit < s.Index) {
		return fmt.Errorf("metalog: fetch answer from %d: bad %v (commit %d)", m.From, *s, m.Commit)
	}
	if m.Commit < 0 || m.PrevIndex < 0 || m.DivergingIndex < 0 {
		return fmt.Errorf("metalog: fetch answer %v has a negative index", m)
	}
	return nil
}

// sync reacts to the election: a node that just won its epoch takes
// office; a follower that learned of a controller starts fetching from it.
func (n *Node) sync() {
	st := n.e.Status().Soft
	switch {
	case st.Role == election.Controller && n.leaderEpoch != st.Epoch:
		n.becomeLeader(st.Epoch)
	case st.Role != election.Controller && n.leaderEpoch != 0:
		n.leaderEpoch, n.match, n.parked, n.progress = 0, nil, nil, nil
	}
	switch {
	case st.Role == election.Follower && st.Controller != election.None:
		if n.fetchFrom != st.Controller || n.fetchEpoch != st.Epoch {
			n.fetchFrom, n.fetchEpoch = st.Controller, st.Epoch
			n.sendFetch()
		}
	default:
		n.fetchFrom, n.fetchEpoch = election.None, 0
	}
}

// becomeLeader takes office. The election's up-to-date rule made this
// log at least as up to date as that of every voter that elected it, so
// it holds every committed entry (see doc.go); it keeps them all, and
// appends a leader-change entry whose commit commits them.
func (n *Node) becomeLeader(epoch int32) {
	n.leaderEpoch = epoch
	n.match = map[election.NodeID]int64{}
	n.parked = map[election.NodeID]parkedFetch{}
	n.progress = map[election.NodeID]progress{}
	n.appendEntry(Entry{Index: n.log.lastIndex() + 1, Epoch: epoch, Type: EntryLeaderChange})
	n.leaderChangeIndex = n.log.lastIndex()
	n.maybeCommit()
}

// Propose appends data as a new entry of the controller's epoch and
// returns its index. Only the acting controller proposes, and only once
// its leader-change entry is committed and applied: before that, its
// applied state may lack committed records, so the changes it would
// validate against it could be wrong.
func (n *Node) Propose(data []byte) (int64, error) {
	if invariants.Enabled {
		defer n.checkInvariants()
	}
	if !n.e.Acting() || n.leaderEpoch == 0 {
		return 0, ErrNotController
	}
	if n.applied < n.leaderChangeIndex {
		return 0, ErrNotCaughtUp
	}
	if n.log.lastIndex()-n.commit >= int64(n.cfg.MaxUncommittedEntries) {
		return 0, ErrTooManyUncommitted
	}
	n.appendEntry(Entry{Index: n.log.lastIndex() + 1, Epoch: n.leaderEpoch, Type: EntryRecords, Data: slices.Clone(data)})
	n.maybeCommit()
	return n.log.lastIndex(), nil
}

func (n *Node) appendEntry(ent Entry) {
	n.log.append(ent)
	n.e.SetLogPosition(n.position())
	n.answerParked()
}

// maybeCommit moves the controller's commit index to the highest entry
// a majority holds, if that entry is of its own epoch (raft's rule: an
// inherited entry stored on a majority can still be overwritten by a
// controller whose log ends in a later epoch, unless an entry of the
// current epoch is committed after it). The controller counts its own
// log end: nothing it sends or applies leaves before that end is durable.
func (n *Node) maybeCommit() {
	ends := make([]int64, 0, len(n.voters))
	for _, v := range n.voters {
		if v == n.id {
			ends = append(ends, n.log.lastIndex())
		} else {
			ends = append(ends, n.match[v])
		}
	}
	slices.Sort(ends)
	c := ends[len(ends)-n.majority]
	if c > n.commit && n.log.mustEpochAt(c) == n.leaderEpoch {
		n.commit = c
		n.answerParked()
	}
}

func (n *Node) answerParked() {
	for _, id := range n.voters {
		if p, ok := n.parked[id]; ok {
			delete(n.parked, id)
			n.answerFetch(p.m, false)
		}
	}
}

func (n *Node) handleFetch(m Message) {
	if n.leaderEpoch == 0 || m.Epoch != n.leaderEpoch {
		// Not this epoch's controller: the election's epoch fence tells
		// the sender about newer epochs, and stale fetches are dropped.
		return
	}
	n.recordFetch(m)
	n.answerFetch(m, true)
}

// recordFetch notes when a follower fetched and when it was last caught
// up, by Kafka's rule (LeaderState.ReplicaState.updateFollowerState): a
// follower is caught up now if its log end reaches this log's end, and
// was caught up at its previous fetch if its log end now reaches what
// this log's end was then. Only a fetch whose log end this log holds
// counts towards caught up: a diverging log end proves nothing.
func (n *Node) recordFetch(m Message) {
	p, ok := n.progress[m.From]
	if !ok {
		p = progress{lastFetch: -1, lastCaughtUp: -1, endAtLastFetch: -1}
	}
	if ep, ok := n.log.epochAt(m.LastIndex); ok && ep == m.LastEpoch {
		end := n.log.lastIndex()
		switch {
		case m.LastIndex >= end:
			p.lastCaughtUp = n.now
		case p.endAtLastFetch >= 0 && m.LastIndex >= p.endAtLastFetch:
			p.lastCaughtUp = max(p.lastCaughtUp, p.lastFetch)
		}
		p.endAtLastFetch = end
	}
	p.lastFetch = n.now
	p.applied = m.Commit
	n.progress[m.From] = p
}

// answerFetch is the controller's side of the pull. The follower's log
// ends at (LastIndex, LastEpoch). If this log holds that entry, the
// follower's log equals this one up to it (one controller per epoch, and
// each only appends), so that is its proven end, and it gets the entries
// after it. If not, the logs diverge: the answer names the last entry at
// or below the follower's end whose epoch is at most the follower's last
// epoch, and the follower truncates after it (KIP-279's end offset for
// the epoch). Below the log start, it gets the snapshot.
func (n *Node) answerFetch(m Message, mayPark bool) {
	resp := Message{Type: MsgFetchResp, To: m.From, Epoch: n.leaderEpoch, Seq: m.Seq,
		LastIndex: m.LastIndex, LastEpoch: m.LastEpoch}
	snap := n.log.snap
	if m.LastIndex < snap.Index || m.LastIndex == snap.Index && m.LastEpoch != snap.Epoch {
		s := snap
		s.Data = slices.Clone(snap.Data)
		resp.Snapshot, resp.Commit = &s, n.commit
		n.send(resp)
		return
	}
	if ep, ok := n.log.epochAt(m.LastIndex); ok && ep == m.LastEpoch {
		if m.LastIndex > n.match[m.From] {
			n.match[m.From] = m.LastIndex
			n.maybeCommit()
		}
		last := n.log.lastIndex()
		// Held only once the follower holds the whole log and shows
		// every committed entry: a follower that has not applied the
		// commit index yet is answered at once, so its next fetch (sent
		// after that apply) tells the controller it shows the entries.
		if mayPark && m.LastIndex == last && m.Commit == n.commit {
			n.parked[m.From] = parkedFetch{m: m, at: n.now}
			return
		}
		to := min(last, m.LastIndex+int64(n.cfg.MaxFetchEntries))
		resp.PrevIndex, resp.PrevEpoch = m.LastIndex, m.LastEpoch
		resp.Entries = boundBytes(n.log.slice(m.LastIndex, to), n.cfg.MaxFetchBytes)
		resp.Commit = n.commit
		n.send(resp)
		return
	}
	i := min(m.LastIndex, n.log.lastIndex())
	for i > snap.Index && n.log.mustEpochAt(i) > m.LastEpoch {
		i--
	}
	resp.Diverging, resp.DivergingIndex, resp.DivergingEpoch = true, i, n.log.mustEpochAt(i)
	resp.Commit = n.commit
	n.send(resp)
}

func (n *Node) sendFetch() {
	n.fetchSeq++
	n.fetchElapsed = 0
	n.send(Message{Type: MsgFetch, To: n.fetchFrom, Epoch: n.fetchEpoch, Seq: n.fetchSeq,
		LastIndex: n.log.lastIndex(), LastEpoch: n.log.lastEpoch(), Commit: n.appliedDone})
}

// handleFetchResp is the follower's side. An answer counts only from the
// controller it follows, in that epoch; answers to earlier fetches of
// that epoch still apply when they fit the log (a duplicate or a late one
// changes nothing), but only the answer to the fetch in flight sends the
// next one.
func (n *Node) handleFetchResp(m Message) {
	if n.fetchFrom != m.From || n.fetchEpoch != m.Epoch {
		return
	}
	// Only the answer to the fetch in flight tells the commit index as of
	// a moment after this node started: an earlier answer may be one the
	// controller held for a previous incarnation.
	if m.Seq == n.fetchSeq && (n.controllerCommitEpoch != m.Epoch || m.Commit > n.controllerCommit) {
		n.controllerCommit, n.controllerCommitEpoch = m.Commit, m.Epoch
	}
	switch {
	case m.Snapshot != nil:
		n.installSnapshot(*m.Snapshot)
	case m.Diverging:
		// Only if the log still ends where the fetch said: a late answer
		// must not truncate entries fetched since.
		if n.log.lastIndex() == m.LastIndex && n.log.lastEpoch() == m.LastEpoch {
			n.truncateAfter(n.divergencePoint(m.DivergingIndex, m.DivergingEpoch))
		}
	default:
		n.maybeAppend(m)
	}
	if m.Seq == n.fetchSeq {
		n.sendFetch()
	}
}

// divergencePoint is where a follower truncates when the controller says
// its log agrees at most up to index, whose epoch there is epoch: after
// its own last entry of an epoch at most epoch, and at most index (as
// Kafka's follower takes the lower of the two end offsets for the epoch).
// The log then ends in an epoch no later than epoch, so the next fetch
// either matches or names an earlier epoch: the exchange ends.
func (n *Node) divergencePoint(index int64, epoch int32) int64 {
	i := min(index, n.log.lastIndex())
	for i > n.log.snap.Index && n.log.mustEpochAt(i) > epoch {
		i--
	}
	return i
}

// maybeAppend appends the entries of a fetch answer if this log holds the
// entry they follow, truncating first at the first entry whose epoch
// differs (raft's rule), and learns the commit index for the part of the
// log now known to equal the controller's.
func (n *Node) maybeAppend(m Message) {
	if ep, ok := n.log.epochAt(m.PrevIndex); !ok || ep != m.PrevEpoch {
		return
	}
	for _, ent := range m.Entries {
		if ep, ok := n.log.epochAt(ent.Index); ok {
			if ep == ent.Epoch {
				continue
			}
			n.truncateAfter(ent.Index - 1)
		}
		n.log.append(ent)
	}
	n.e.SetLogPosition(n.position())
	if c := min(m.Commit, m.PrevIndex+int64(len(m.Entries))); c > n.commit {
		n.commit = c
	}
}

// truncateAfter drops a divergent suffix. A committed entry is never
// divergent: the controller holds every committed entry, so a divergence
// always lies above this node's commit index.
func (n *Node) truncateAfter(i int64) {
	if i < n.commit {
		panic(fmt.Sprintf("metalog: node %d truncating after %d, below its commit index %d", n.id, i, n.commit))
	}
	if i >= n.log.lastIndex() {
		return
	}
	n.log.truncateAfter(i)
	if i < n.stable {
		if n.pendingTruncate == nil || i < *n.pendingTruncate {
			n.pendingTruncate = &i
		}
		n.stable = i
	}
	n.e.SetLogPosition(n.position())
}

// installSnapshot takes the controller's snapshot when it is ahead of this
// node's commit index. If this log holds the snapshot's last entry, the
// entries after it stay; otherwise the log becomes the snapshot alone.
func (n *Node) installSnapshot(s Snapshot) {
	if s.Index <= n.commit {
		return
	}
	ep, ok := n.log.epochAt(s.Index)
	keep := ok && ep == s.Epoch
	n.log.compact(s, keep)
	if keep {
		n.stable = max(n.stable, s.Index)
	} else {
		n.stable = s.Index
		n.truncateAll, n.pendingTruncate = true, nil
	}
	n.pendingSnap = &s
	n.restoreSnapshot = true
	n.commit, n.applied = s.Index, s.Index
	n.e.SetLogPosition(n.position())
}

// Compact folds the log up to index into a snapshot whose Data is the
// applied state as of index, so the log can drop those entries. index must
// be applied (handed out and Advanced) and above the current snapshot.
func (n *Node) Compact(index int64, data []byte) error {
	if invariants.Enabled {
		defer n.checkInvariants()
	}
	if index <= n.log.snap.Index || index > n.applied {
		return fmt.Errorf("metalog: compact to %d: must be above the snapshot %d and at most the applied index %d",
			index, n.log.snap.Index, n.applied)
	}
	s := Snapshot{Index: index, Epoch: n.log.mustEpochAt(index), Data: slices.Clone(data)}
	n.log.compact(s, true)
	n.stable = max(n.stable, index)
	n.pendingSnap = &s
	return nil
}

func (n *Node) send(m Message) {
	m.From = n.id
	n.msgs = append(n.msgs, m)
}

func (n *Node) hardState() HardState {
	return HardState{Election: n.e.Status().Hard, Commit: n.commit}
}

// HasReady reports whether Ready has anything to do.
func (n *Node) HasReady() bool {
	return n.e.HasReady() || len(n.msgs) > 0 || n.pendingSnap != nil || n.pendingTruncate != nil ||
		n.log.lastIndex() > n.stable || n.commit > n.applied || n.hardState() != n.prevHard
}

// Ready returns what the driver must do now, in the order Ready documents.
// The driver calls Advance with it once done, before any other call.
func (n *Node) Ready() Ready {
	n.erd = n.e.Ready()
	rd := Ready{Snapshot: n.pendingSnap, TruncateAll: n.truncateAll, RestoreSnapshot: n.restoreSnapshot,
		Truncate: n.pendingTruncate, SoftState: n.erd.SoftState}
	if n.log.lastIndex() > n.stable {
		rd.Entries = n.log.slice(n.stable, n.log.lastIndex())
	}
	if hs := n.hardState(); hs != n.prevHard {
		rd.HardState = &hs
	}
	for _, em := range n.erd.Messages {
		rd.Messages = append(rd.Messages, Message{Type: MsgElection, From: em.From, To: em.To, Epoch: em.Epoch, Election: em})
	}
	rd.Messages = append(rd.Messages, n.msgs...)
	n.ownMsgs = len(n.msgs)
	if n.commit > n.applied {
		rd.CommittedEntries = n.log.slice(n.applied, n.commit)
	}
	return rd
}

// Advance tells the node that rd was done: its log and hard state are
// durable, its messages handed to the transport, its entries applied.
func (n *Node) Advance(rd Ready) {
	if invariants.Enabled {
		defer n.checkInvariants()
	}
	n.e.Advance(n.erd)
	n.erd = election.Ready{}
	n.pendingSnap, n.truncateAll, n.restoreSnapshot, n.pendingTruncate = nil, false, false, nil
	if len(rd.Entries) > 0 {
		n.stable = rd.Entries[len(rd.Entries)-1].Index
	}
	if len(rd.CommittedEntries) > 0 {
		n.applied = rd.CommittedEntries[len(rd.CommittedEntries)-1].Index
	}
	n.appliedDone = n.applied
	if rd.HardState != nil {
		n.prevHard = *rd.HardState
	}
	n.msgs = slices.Clone(n.msgs[n.ownMsgs:])
	n.ownMsgs = 0
	n.maybeCaughtUp()
}

// Acting reports whether this node is the acting controller (see
// election.Node.Acting).
func (n *Node) Acting() bool { return n.e.Acting() }

// CanPropose reports whether Propose would take an entry now.
func (n *Node) CanPropose() bool {
	return n.ActingAndCurrent() && n.log.lastIndex()-n.commit < int64(n.cfg.MaxUncommittedEntries)
}

// ActingAndCurrent reports whether this node is the acting controller
// and has applied its leader-change entry, so that its applied state
// holds every committed entry and a change may be validated against it.
func (n *Node) ActingAndCurrent() bool {
	return n.e.Acting() && n.leaderEpoch != 0 && n.applied >= n.leaderChangeIndex
}

// Status is a snapshot of a node for tests, logs and the operations
// endpoints.
type Status struct {
	Election      election.Status
	SnapshotIndex int64
	LastIndex     int64
	LastEpoch     int32
	Commit        int64
	Applied       int64
	// CaughtUp: see Node.CaughtUp.
	CaughtUp bool
	// ControllerCommit is the highest commit index this follower heard
	// from the controller it fetches from (0 before any answer).
	ControllerCommit int64
	// Match is, on the controller, the log end each follower proved it
	// holds (nil elsewhere).
	Match map[election.NodeID]int64
	// Now is the node's clock: the ticks it was given since it started.
	Now int64
	// Followers is, on the controller, when each follower that fetched
	// in its epoch last fetched and was last caught up, in ticks of Now
	// (nil elsewhere).
	Followers map[election.NodeID]FollowerProgress
}

// FollowerProgress is what the controller saw of one follower's fetches
// in its epoch, in ticks of its own clock (Status.Now).
type FollowerProgress struct {
	// LastFetchTick is when its last fetch arrived.
	LastFetchTick int64
	// LastCaughtUpTick is the last time its log end reached this
	// controller's (Kafka's lastCaughtUpTimestamp); -1 if not since this
	// epoch began.
	LastCaughtUpTick int64
	// Applied is the applied index its last fetch reported: its applied
	// state shows every entry up to it.
	Applied int64
}

// Status returns the node's current state, persisted or not.
func (n *Node) Status() Status {
	st := Status{Election: n.e.Status(), SnapshotIndex: n.log.snap.Index, LastIndex: n.log.lastIndex(),
		LastEpoch: n.log.lastEpoch(), Commit: n.commit, Applied: n.applied, CaughtUp: n.caughtUp, Now: n.now}
	if n.fetchFrom != election.None && n.controllerCommitEpoch == n.fetchEpoch {
		st.ControllerCommit = n.controllerCommit
	}
	if n.match != nil {
		st.Match = make(map[election.NodeID]int64, len(n.match))
		for k, v := range n.match {
			st.Match[k] = v
		}
	}
	if n.progress != nil {
		st.Followers = make(map[election.NodeID]FollowerProgress, len(n.progress))
		for k, p := range n.progress {
			st.Followers[k] = FollowerProgress{LastFetchTick: p.lastFetch, LastCaughtUpTick: p.lastCaughtUp, Applied: p.applied}
		}
	}
	return st
}

// Entries returns a copy of the entries in the log after index from (not
// yet compacted), durable or not. For tests and tools.
func (n *Node) Entries(from int64) []Entry {
	from = max(from, n.log.snap.Index)
	if from >= n.log.lastIndex() {
		return nil
	}
	return n.log.slice(from, n.log.lastIndex())
}

// boundBytes keeps the first entries of ents whose data add up to at most
// limit bytes, and always the first (0: no limit).
func boundBytes(ents []Entry, limit int) []Entry {
	if limit <= 0 {
		return ents
	}
	size := 0
	for i, e := range ents {
		size += len(e.Data)
		if i > 0 && size > limit {
			return ents[:i]
		}
	}
	return ents
}

// checkInvariants panics when the node's own state breaks a rule of the
// metadata log. Every input (Tick, Step, Propose, Advance, Compact) runs
// it last in a build with the invariants tag (internal/invariants). What
// needs every node (one committed sequence, no committed entry lost, no
// entry applied before a majority holds it) internal/sim checks.
func (n *Node) checkInvariants() {
	last := n.log.lastIndex()
	if snap := n.log.snap.Index; snap > n.applied || n.applied > n.commit || n.commit > last || n.appliedDone > n.applied {
		panic(fmt.Sprintf("metalog: node %d has snapshot %d, applied %d (%d done), commit %d, last index %d: want snapshot <= done <= applied <= commit <= last",
			n.id, snap, n.applied, n.appliedDone, n.commit, last))
	}
	if n.commit < n.prevHard.Commit {
		panic(fmt.Sprintf("metalog: node %d commit index %d is below the persisted %d", n.id, n.commit, n.prevHard.Commit))
	}
	if n.stable > last {
		panic(fmt.Sprintf("metalog: node %d stable to %d, past its last index %d", n.id, n.stable, last))
	}
	n.checkLogOrder()
	if n.leaderEpoch != 0 {
		// A controller never truncates: its log ends in its own epoch,
		// with its leader-change entry or an entry it proposed.
		st := n.e.Status().Soft
		if st.Role != election.Controller || st.Epoch != n.leaderEpoch || n.log.lastEpoch() != n.leaderEpoch || n.leaderChangeIndex > last {
			panic(fmt.Sprintf("metalog: node %d leads epoch %d (leader change at %d) as %v of epoch %d, its log ending %d/%d",
				n.id, n.leaderEpoch, n.leaderChangeIndex, st.Role, st.Epoch, n.log.lastEpoch(), last))
		}
	}
	if n.fetchFrom == n.id {
		panic(fmt.Sprintf("metalog: node %d fetches from itself", n.id))
	}
}

// checkLogOrder panics unless the log's entries follow the snapshot and
// each other: index one more than the one before, epoch no lower. It
// checks the first entry against the snapshot (compact moves both) and
// then only the entries after the prefix an earlier check passed
// (memLog.checked): every entry was checked against the one before it
// when it was appended, and the log changes only at its ends, so the
// whole log stays in order without a walk over it after every input.
func (n *Node) checkLogOrder() {
	l := &n.log
	start := min(l.checked, len(l.ents))
	if start > 0 {
		n.checkEntryOrder(0, Entry{Index: l.snap.Index, Epoch: l.snap.Epoch})
	}
	for i := start; i < len(l.ents); i++ {
		prev := Entry{Index: l.snap.Index, Epoch: l.snap.Epoch}
		if i > 0 {
			prev = l.ents[i-1]
		}
		n.checkEntryOrder(i, prev)
	}
	l.checked = len(l.ents)
}

// checkEntryOrder panics unless entry i follows prev, the entry before
// it or the snapshot.
func (n *Node) checkEntryOrder(i int, prev Entry) {
	if ent := n.log.ents[i]; ent.Index != prev.Index+1 || ent.Epoch < prev.Epoch {
		panic(fmt.Sprintf("metalog: node %d holds entry %d/%d at position %d after snapshot %d/%d, following epoch %d",
			n.id, ent.Epoch, ent.Index, i, n.log.snap.Epoch, n.log.snap.Index, prev.Epoch))
	}
}
