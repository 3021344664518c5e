package election

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/wren-broker/wren/internal/invariants"
)

// Node is one voter's election state machine. It is not safe for
// concurrent use: one goroutine (the driver) feeds it ticks and messages
// and drains its Ready.
type Node struct {
	cfg      Config
	rand     *rand.Rand
	majority int

	// Persistent: handed out in Ready.HardState whenever it changes.
	// Invariant: epoch never decreases; votedFor changes only from None
	// within one epoch.
	epoch    int32
	votedFor NodeID

	role       Role
	controller NodeID      // the controller of epoch, None if unknown
	log        LogPosition // the local metadata log, set by the driver

	// now counts this incarnation's ticks. The lease is measured on it.
	now int64
	// quietLeft counts down the ticks during which this node considers a
	// controller live: it neither votes nor runs while it is above zero.
	// A heartbeat of the controller of its epoch, or a vote it grants,
	// sets it to ElectionTicks. Starting sets it to startQuietTicks, for
	// two reasons. Safety: a node that crashed right after acknowledging a
	// heartbeat must not vote sooner than it would have without the
	// crash, or the old controller's lease would not hold. Stability: the
	// peers of a node that restarts (F11: the controller, restarted in a
	// loop) time out and probe within ElectionTicks+ElectionJitterTicks of
	// its last heartbeat (plus message delays), and find it quiet, so they
	// elect among themselves instead of deferring to it.
	quietLeft int
	// quietSource is the node that made this node quiet: the controller
	// it heard, or the candidate it just voted for, which may still ask
	// again. None after a start.
	quietSource NodeID
	// electionElapsed counts ticks since the election timer was reset;
	// at randomizedElectionTicks a node without a controller probes.
	electionElapsed         int
	randomizedElectionTicks int

	// PreCandidate: the probe round's answers, and how long it has run.
	probes       map[NodeID]Message
	probeElapsed int
	// deferred: this node already stood back once in this epoch for a
	// higher id. It does not do so twice, so a higher id that cannot win
	// (it reaches this node but not a majority) cannot stall the cluster.
	deferred bool
	// rankedProbeTick is when a probe last came, for an epoch beyond
	// this node's, from a voter that outranks it (see outranks);
	// heardRankedProbe says one came at all. Such a prober is alive and
	// may run: a probe round then waits for its answer up to the round's
	// end, not only ProbeTicks.
	rankedProbeTick  int64
	heardRankedProbe bool

	// Candidate: the voters that granted their vote in epoch.
	votes map[NodeID]bool

	// Controller.
	becameTick       int64
	heartbeatElapsed int
	acked            map[NodeID]int64 // highest LeaseTick each peer acknowledged

	msgs     []Message
	prevHard HardState
	prevSoft SoftState
}

// NewNode returns a node that starts as a follower with the hard state
// read back from disk (the zero HardState with VotedFor None for a new
// node).
func NewNode(cfg Config, hs HardState) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Voters = slices.Clone(cfg.Voters)
	slices.Sort(cfg.Voters)
	if hs.Epoch < 0 {
		return nil, fmt.Errorf("election: stored epoch %d is negative", hs.Epoch)
	}
	if hs.VotedFor != None && !slices.Contains(cfg.Voters, hs.VotedFor) {
		return nil, fmt.Errorf("election: stored vote for %d, not a voter %v", hs.VotedFor, cfg.Voters)
	}
	n := &Node{
		cfg:         cfg,
		rand:        rand.New(rand.NewPCG(cfg.Seed, uint64(cfg.ID))),
		majority:    len(cfg.Voters)/2 + 1,
		epoch:       hs.Epoch,
		votedFor:    hs.VotedFor,
		role:        Follower,
		controller:  None,
		quietSource: None,
		prevHard:    hs,
	}
	n.quietLeft = startQuietTicks(cfg)
	n.resetElectionTimer()
	n.randomizedElectionTicks += n.quietLeft - cfg.ElectionTicks // the first run comes after the quiet start
	if len(cfg.Voters) == 1 {
		// A lone voter has no peers whose view of its previous
		// incarnation could still run: it runs at its first tick.
		n.quietLeft, n.randomizedElectionTicks = 0, 1
	}
	n.prevSoft = n.softState()
	return n, nil
}

// startQuietTicks is how long a node stays quiet after it starts: the
// window in which its peers may still time out on its previous
// incarnation, plus one more jitter for the messages in flight.
func startQuietTicks(cfg Config) int { return cfg.ElectionTicks + 2*cfg.ElectionJitterTicks }

// SetLogPosition tells the node where its metadata log ends. Votes and the
// Bully order compare it with the peers'.
func (n *Node) SetLogPosition(p LogPosition) { n.log = p }

// Tick advances the node's clock by one tick. The driver must call it once
// per tick of the monotonic clock that elapsed, catching up after a stall
// (a SIGSTOP, a long GC pause): the lease is only as good as this count.
// The wall clock plays no part.
func (n *Node) Tick() {
	if invariants.Enabled {
		defer n.checkInvariants()
	}
	n.now++
	if n.role == Controller {
		n.tickController()
		return
	}
	if n.quietLeft > 0 {
		n.quietLeft--
	}
	n.electionElapsed++
	if n.role == PreCandidate {
		n.probeElapsed++
		switch {
		case n.probeElapsed >= n.cfg.HeartbeatTicks:
			n.decideProbe(true)
		case n.probeElapsed >= n.cfg.probeTicks():
			n.decideProbe(false)
		}
	}
	if n.role != PreCandidate && n.quietLeft == 0 && n.electionElapsed >= n.randomizedElectionTicks {
		n.startProbe()
	}
}

func (n *Node) tickController() {
	// A new controller gets one lease period to collect its first acks.
	if !n.leaseHeld() && n.now-n.becameTick >= int64(n.cfg.LeaseTicks) {
		n.becomeFollower(n.epoch, None)
		// It heard no majority, so nobody's lease depends on it staying
		// quiet: it may vote at once.
		n.quietLeft = 0
		return
	}
	n.heartbeatElapsed++
	if n.heartbeatElapsed >= n.cfg.HeartbeatTicks {
		n.broadcastHeartbeat()
	}
}

// Acting reports whether this node may act as controller now: it won its
// epoch and a majority of the voters (itself included) acknowledged a
// heartbeat it sent less than LeaseTicks ago.
func (n *Node) Acting() bool { return n.role == Controller && n.leaseHeld() }

func (n *Node) leaseHeld() bool {
	count := 1 // itself
	for id, t := range n.acked {
		if id != n.cfg.ID && n.now-t < int64(n.cfg.LeaseTicks) {
			count++
		}
	}
	return count >= n.majority
}

// Step feeds the node one message from a peer. It returns an error for a
// message that is not addressed to this node or not from a voter; the
// message is then ignored.
func (n *Node) Step(m Message) error {
	if invariants.Enabled {
		defer n.checkInvariants()
	}
	if m.To != n.cfg.ID {
		return fmt.Errorf("election: message %v is for %d, this is %d", m, m.To, n.cfg.ID)
	}
	if m.From == n.cfg.ID || !slices.Contains(n.cfg.Voters, m.From) {
		return fmt.Errorf("election: message %v is not from a peer voter %v", m, n.cfg.Voters)
	}
	if _, ok := msgNames[m.Type]; !ok {
		return fmt.Errorf("election: message %v has an unknown type", m)
	}
	// A probe's epoch is the one the prober would run for; answering it
	// changes nothing here, which is the point of probing.
	if m.Type == MsgProbe {
		n.handleProbe(m)
		return nil
	}
	// An answer to the current probe carries the probed epoch, not a new
	// epoch to adopt.
	if m.Type == MsgProbeResp && m.EpochTaken && m.Epoch > n.epoch && n.role == PreCandidate {
		// The probed epoch is taken: adopt the responder's, ending the
		// round; the next one asks for the epoch after it.
		n.becomeFollower(m.Epoch, None)
		return nil
	}
	if m.Type == MsgProbeResp && m.Epoch == n.epoch+1 {
		if n.role == PreCandidate {
			n.probes[m.From] = m
			n.decideProbe(false)
		}
		return nil
	}
	if m.Epoch > n.epoch {
		if m.Type == MsgVote && n.refuses(m.From) {
			// No preemption: a voter that hears a live controller neither
			// votes nor adopts the candidate's epoch, which would make it
			// reject the live controller's heartbeats.
			n.send(Message{Type: MsgVoteResp, To: m.From, Epoch: n.epoch, Reject: true})
			return nil
		}
		// Every message carries its epoch; the highest seen wins.
		controller := None
		if m.Type == MsgHeartbeat {
			controller = m.From
		}
		n.becomeFollower(m.Epoch, controller)
	}
	if m.Epoch < n.epoch {
		// A stale sender learns the newer epoch from the answer; stale
		// answers are dropped.
		switch m.Type {
		case MsgHeartbeat:
			n.send(Message{Type: MsgHeartbeatResp, To: m.From, Epoch: n.epoch, Reject: true, LeaseTick: m.LeaseTick})
		case MsgVote:
			n.send(Message{Type: MsgVoteResp, To: m.From, Epoch: n.epoch, Reject: true})
		}
		return nil
	}
	switch m.Type {
	case MsgHeartbeat:
		n.handleHeartbeat(m)
	case MsgHeartbeatResp:
		// The epoch check above fences acks of an earlier incarnation;
		// a tick from the future cannot be ours.
		if t, ok := n.acked[m.From]; n.role == Controller && !m.Reject && m.LeaseTick <= n.now && (!ok || m.LeaseTick > t) {
			n.acked[m.From] = m.LeaseTick
		}
	case MsgVote:
		n.handleVote(m)
	case MsgVoteResp:
		if n.role == Candidate && !m.Reject {
			n.votes[m.From] = true
			if len(n.votes) >= n.majority {
				n.becomeController()
			}
		}
	}
	return nil
}

// quiet: this node hears a live controller (maybe itself), voted a moment
// ago, or started recently. A quiet node does not run, and a prober must
// not defer to it.
func (n *Node) quiet() bool {
	return n.role == Controller || n.quietLeft > 0
}

// refuses reports whether this node will not vote for from, whatever the
// logs. Quiet refuses, except for the node it is quiet for: the candidate
// it voted for may need to ask again. Staying quiet after a vote keeps a
// third node from deposing a controller elected a moment ago, before its
// first heartbeat arrives. A candidate refuses too: it may win in a
// moment, and a grant to a probe for the next epoch would let the prober
// run and, at the higher epoch, reject the new controller's heartbeats.
func (n *Node) refuses(from NodeID) bool {
	return n.role == Controller || n.role == Candidate || n.quietLeft > 0 && from != n.quietSource
}

// mayVote reports whether this node would vote for from in epoch, whose log
// ends at log. The same rule answers probes and votes, so a probe predicts
// the vote.
func (n *Node) mayVote(from NodeID, epoch int32, log LogPosition) bool {
	if n.refuses(from) || log.Less(n.log) {
		return false
	}
	return epoch > n.epoch || (epoch == n.epoch && (n.votedFor == None || n.votedFor == from))
}

// outranks reports whether voter id, whose log ends at log, comes before
// this node in the Bully order: its log is further ahead, or as far and
// its id is higher. The voters rank the same way (logs aside, which
// change only as a controller replicates), so two probers never both
// defer to the other; and a node with a log behind another's, though the
// highest, is refused by it, so both running at once can split the votes.
func (n *Node) outranks(id NodeID, log LogPosition) bool {
	return n.log.Less(log) || id > n.cfg.ID && !log.Less(n.log)
}

func (n *Node) handleProbe(m Message) {
	if m.Epoch > n.epoch && n.outranks(m.From, m.Log) {
		n.rankedProbeTick, n.heardRankedProbe = n.now, true
		// It answered this node's probe while it was still quiet, and
		// probes now itself: it is no longer quiet, and it hears this
		// node, as a fresh answer would say.
		if r, ok := n.probes[m.From]; ok && n.role == PreCandidate && r.Quiet {
			r.Quiet, r.Log = false, m.Log
			n.probes[m.From] = r
			defer n.decideProbe(false)
		}
	}
	resp := Message{Type: MsgProbeResp, To: m.From, Epoch: max(m.Epoch, n.epoch), Log: n.log, Quiet: n.quiet()}
	resp.Reject = !n.mayVote(m.From, m.Epoch, m.Log)
	resp.EpochTaken = n.epoch > m.Epoch || n.epoch == m.Epoch && n.votedFor != None && n.votedFor != m.From
	n.send(resp)
}

func (n *Node) handleHeartbeat(m Message) {
	if n.role == Controller {
		panic(fmt.Sprintf("election: node %d is controller of epoch %d and got a heartbeat from %d in the same epoch",
			n.cfg.ID, n.epoch, m.From))
	}
	if n.controller != None && n.controller != m.From {
		panic(fmt.Sprintf("election: node %d follows %d in epoch %d and got a heartbeat from %d in the same epoch",
			n.cfg.ID, n.controller, n.epoch, m.From))
	}
	n.role = Follower
	n.controller = m.From
	n.probes, n.votes = nil, nil
	n.quietLeft, n.quietSource = n.cfg.ElectionTicks, m.From
	n.resetElectionTimer()
	n.send(Message{Type: MsgHeartbeatResp, To: m.From, Epoch: n.epoch, LeaseTick: m.LeaseTick})
}

func (n *Node) handleVote(m Message) {
	grant := n.mayVote(m.From, m.Epoch, m.Log)
	if grant {
		n.votedFor = m.From
		n.quietLeft, n.quietSource = n.cfg.ElectionTicks, m.From
		n.resetElectionTimer()
	}
	n.send(Message{Type: MsgVoteResp, To: m.From, Epoch: n.epoch, Reject: !grant})
}

// startProbe begins a probe round: would a majority vote for this node in
// epoch+1, and is a live higher id at least as up to date around?
func (n *Node) startProbe() {
	n.role = PreCandidate
	n.controller = None
	n.votes = nil
	n.probes = map[NodeID]Message{}
	n.probeElapsed = 0
	n.resetElectionTimer()
	for _, v := range n.cfg.Voters {
		if v != n.cfg.ID {
			n.send(Message{Type: MsgProbe, To: v, Epoch: n.epoch + 1, Log: n.log})
		}
	}
	n.decideProbe(false)
}

// decideProbe ends the probe round when it can. Bully order: a live voter
// (not quiet) that outranks this node makes it stand back once per epoch.
// Otherwise it runs with a majority of grants, after every higher id
// answered or the round timed out.
func (n *Node) decideProbe(timedOut bool) {
	granted, higherAnswered, deferTo := 1, true, None
	// Once ProbeTicks passed, a majority of grants is enough: a higher id
	// that has not answered yet is likely down. Not if one probed a
	// moment ago: it is up, and probably running for the same epoch, and
	// two candidates at once can split the votes (with five voters, two
	// and two), which costs an election timeout, since the voters stay
	// quiet after their vote. Its answer is a message delay behind its
	// probe; the round's end bounds the wait, for a higher id that sends
	// but does not hear (F09).
	higherWaitOver := n.probeElapsed >= n.cfg.probeTicks() &&
		!(n.heardRankedProbe && n.now-n.rankedProbeTick < int64(n.cfg.HeartbeatTicks))
	for _, v := range n.cfg.Voters {
		if v == n.cfg.ID {
			continue
		}
		r, ok := n.probes[v]
		if ok && !r.Reject {
			granted++
		}
		if ok && !r.Quiet && n.outranks(v, r.Log) {
			deferTo = v
		}
		if v > n.cfg.ID && !ok {
			higherAnswered = false
		}
	}
	switch {
	case deferTo != None && !n.deferred:
		n.deferred = true
		n.role = Follower
		n.probes = nil
		// A whole election timeout, not RetryTicks: lower ids retrying
		// soon would compete with the higher id's own run (with five
		// voters the simulator's p99 failover got worse by half).
		n.resetElectionTimer()
	case granted >= n.majority && (higherAnswered || higherWaitOver || timedOut || n.deferred):
		n.becomeCandidate()
	case timedOut || len(n.probes) == len(n.cfg.Voters)-1:
		n.role = Follower
		n.probes = nil
		// Most often a voter refused because it was still quiet, by a
		// tick or two: its window ends at once, not an election timeout
		// from now. A probe changes nothing at the receivers, so probing
		// again soon is harmless.
		n.retrySoon()
	}
}

func (n *Node) becomeCandidate() {
	n.epoch++
	n.votedFor = n.cfg.ID
	n.deferred = false
	n.role = Candidate
	n.controller = None
	n.probes = nil
	n.votes = map[NodeID]bool{n.cfg.ID: true}
	n.resetElectionTimer()
	for _, v := range n.cfg.Voters {
		if v != n.cfg.ID {
			n.send(Message{Type: MsgVote, To: v, Epoch: n.epoch, Log: n.log})
		}
	}
	if len(n.votes) >= n.majority {
		n.becomeController()
	}
}

func (n *Node) becomeController() {
	n.role = Controller
	n.controller = n.cfg.ID
	n.votes = nil
	n.becameTick = n.now
	n.acked = map[NodeID]int64{}
	n.broadcastHeartbeat()
}

func (n *Node) becomeFollower(epoch int32, controller NodeID) {
	if epoch > n.epoch {
		n.epoch = epoch
		n.votedFor = None
		n.deferred = false
	}
	n.role = Follower
	n.controller = controller
	n.probes, n.votes, n.acked = nil, nil, nil
}

func (n *Node) broadcastHeartbeat() {
	n.heartbeatElapsed = 0
	for _, v := range n.cfg.Voters {
		if v != n.cfg.ID {
			n.send(Message{Type: MsgHeartbeat, To: v, Epoch: n.epoch, LeaseTick: n.now})
		}
	}
}

// retrySoon sets the timer of a node whose probe round ended without
// running to RetryTicks plus a jitter; with RetryTicks 0 the timer runs
// on as it was (a whole election timeout from the probe's start, or from
// the stand-back).
func (n *Node) retrySoon() {
	if n.cfg.RetryTicks > 0 {
		n.electionElapsed = 0
		n.randomizedElectionTicks = n.cfg.RetryTicks + n.rand.IntN(n.cfg.ElectionJitterTicks)
	}
}

func (n *Node) resetElectionTimer() {
	n.electionElapsed = 0
	n.randomizedElectionTicks = n.cfg.ElectionTicks + n.rand.IntN(n.cfg.ElectionJitterTicks)
}

func (n *Node) send(m Message) {
	m.From = n.cfg.ID
	n.msgs = append(n.msgs, m)
}

func (n *Node) hardState() HardState { return HardState{Epoch: n.epoch, VotedFor: n.votedFor} }

func (n *Node) softState() SoftState {
	return SoftState{Role: n.role, Epoch: n.epoch, Controller: n.controller, Acting: n.Acting()}
}

// HasReady reports whether Ready has anything to do.
func (n *Node) HasReady() bool {
	return len(n.msgs) > 0 || n.hardState() != n.prevHard || n.softState() != n.prevSoft
}

// Ready returns what the driver must do now, in the order Ready documents.
// The driver calls Advance with it once done.
func (n *Node) Ready() Ready {
	rd := Ready{Messages: n.msgs[:len(n.msgs):len(n.msgs)]}
	if hs := n.hardState(); hs != n.prevHard {
		rd.HardState = &hs
	}
	if ss := n.softState(); ss != n.prevSoft {
		rd.SoftState = &ss
	}
	return rd
}

// Advance tells the node that rd was done: its hard state is durable and
// its messages handed to the transport.
func (n *Node) Advance(rd Ready) {
	if rd.HardState != nil {
		n.prevHard = *rd.HardState
	}
	if rd.SoftState != nil {
		n.prevSoft = *rd.SoftState
	}
	n.msgs = slices.Clone(n.msgs[len(rd.Messages):])
}

// Status is a snapshot of a node for tests, logs and the operations
// endpoints.
type Status struct {
	ID   NodeID
	Hard HardState
	Soft SoftState
	Log  LogPosition
	// Tick is this incarnation's tick count.
	Tick int64
}

// Status returns the node's current state, persisted or not.
func (n *Node) Status() Status {
	return Status{ID: n.cfg.ID, Hard: n.hardState(), Soft: n.softState(), Log: n.log, Tick: n.now}
}

// checkInvariants panics when the node's own state breaks a rule of the
// election. Tick and Step run it last in a build with the invariants tag
// (internal/invariants). At most one controller per epoch across the
// voters is the simulator's to check (internal/sim): no node sees it.
func (n *Node) checkInvariants() {
	// The hard state never goes behind what was handed out to persist.
	if d := n.prevHard; n.epoch < d.Epoch || n.epoch == d.Epoch && d.VotedFor != None && n.votedFor != d.VotedFor {
		panic(fmt.Sprintf("election: node %d holds epoch %d, vote %d, behind the persisted epoch %d, vote %d",
			n.cfg.ID, n.epoch, n.votedFor, d.Epoch, d.VotedFor))
	}
	if n.votedFor != None && !slices.Contains(n.cfg.Voters, n.votedFor) {
		panic(fmt.Sprintf("election: node %d voted for %d in epoch %d, not a voter %v", n.cfg.ID, n.votedFor, n.epoch, n.cfg.Voters))
	}
	switch n.role {
	case Controller:
		// A controller won its own epoch: it voted for itself in it.
		if n.controller != n.cfg.ID || n.votedFor != n.cfg.ID || n.acked == nil {
			panic(fmt.Sprintf("election: node %d is controller of epoch %d with controller %d, vote %d",
				n.cfg.ID, n.epoch, n.controller, n.votedFor))
		}
	case Candidate:
		if n.votedFor != n.cfg.ID || !n.votes[n.cfg.ID] || len(n.votes) >= n.majority {
			panic(fmt.Sprintf("election: node %d is candidate of epoch %d with vote %d and %d of %d votes needed",
				n.cfg.ID, n.epoch, n.votedFor, len(n.votes), n.majority))
		}
	default:
		if n.controller == n.cfg.ID {
			panic(fmt.Sprintf("election: node %d names itself controller of epoch %d as %v", n.cfg.ID, n.epoch, n.role))
		}
	}
	if n.quietLeft < 0 {
		panic(fmt.Sprintf("election: node %d quiet for %d ticks", n.cfg.ID, n.quietLeft))
	}
}
