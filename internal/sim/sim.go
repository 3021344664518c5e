package sim

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/wren-broker/wren/cluster/metalog"
	"github.com/wren-broker/wren/election"
)

// Config is the configuration every simulated node runs: the election
// defaults (heartbeat 500 ms, lease 1.5 s, election timeout 2 s, jitter up
// to 500 ms, a probe round of at most 150 ms, here 200 ms, a retry 500 ms
// plus jitter after a round that did not run) at 100 ms per tick, and a
// fetch held up to 500 ms.
func Config(id election.NodeID, voters []election.NodeID, seed uint64) metalog.Config {
	return metalog.Config{
		Election: election.Config{ID: id, Voters: voters, HeartbeatTicks: 5, LeaseTicks: 15, ElectionTicks: 20,
			ElectionJitterTicks: 5, ProbeTicks: 2, RetryTicks: 5, Seed: seed},
		FetchWaitTicks: 5, FetchTimeoutTicks: 10, MaxFetchEntries: 16, MaxUncommittedEntries: 64,
	}
}

const (
	warmupTicks = 200
	// LivenessBound is the most ticks (at 100 ms) the cluster may take,
	// once the faults stop, to settle on one acting controller known to
	// every node, and then to commit a proposal and apply it everywhere.
	// The worst case seen is well below it; see the tests.
	LivenessBound = 400
	// compactEvery: a node folds its applied entries into a snapshot once
	// this many are in its log, so lagging followers get snapshots.
	compactEvery = 40
	// durabilityCheckEvery: how often every committed entry is checked to
	// be on a majority of disks (it costs a pass over the log).
	durabilityCheckEvery = 25
	// proposePct: the chance per tick that the acting controller, when
	// it may, proposes a record.
	proposePct = 30
)

// Options change how the driver behaves, to show that the checks catch a
// broken driver.
type Options struct {
	// SendBeforePersist breaks the Ready contract: messages leave before
	// the log and hard state are durable, and a crash may fall between.
	SendBeforePersist bool
	// ApplyUncommitted breaks it the other way: the driver applies the
	// entries it appends at once, before they are committed.
	ApplyUncommitted bool
}

// Result is what one run measured.
type Result struct {
	Epochs         int // controller epochs won during the fault phase, counting the one in force at its start
	SettleTicks    int // ticks from the end of the faults to a settled controller
	Messages       int
	Crashes, Pause int
	// Failover: ticks from a scheduled fault of the acting controller to
	// the next node acting in a higher epoch; -1 if no such event.
	Failover  int
	Committed int // entries in the committed sequence at the end
	// CommitTicks: for each proposal that committed, ticks from Propose
	// to its commit at the controller.
	CommitTicks []int
	// TakeOfficeTicks: for each controller, ticks from winning its epoch
	// to committing its leader-change entry (when it may propose).
	TakeOfficeTicks []int
	// LivenessTicks: ticks from a settled controller to a proposal
	// applied on every node, after the faults.
	LivenessTicks int
}

type packet struct {
	m  metalog.Message
	at int64
}

type node struct {
	id     election.NodeID
	cfg    metalog.Config
	n      *metalog.Node // nil while down
	disk   metalog.Stored
	paused bool
	missed int   // ticks missed while paused
	until  int64 // end of the current pause or downtime
	crash  bool  // crash inside the next Ready, before it is fully persisted
	// This incarnation's applied state: the index and a hash of the
	// applied sequence, which the snapshot carries.
	applied     int64
	appliedHash uint64
	commit      int64 // the highest commit index seen in this incarnation
}

// Sim runs metadata-log nodes (each with its election) over a simulated
// network. Everything random comes from one seed, so a run replays
// exactly.
type Sim struct {
	sc     Scenario
	opts   Options
	rng    *rand.Rand
	seed   uint64
	now    int64
	faults Faults
	nodes  []*node
	net    []packet
	cuts   map[[2]election.NodeID]bool // {from, to}
	bounce []Event

	controllers map[int32]election.NodeID    // who won each epoch
	wonAt       map[int32]int64              // when
	votes       map[[2]int32]election.NodeID // {voter, epoch}: the candidate it granted
	// committed is the one committed sequence: entry i+1 at committed[i],
	// and hashes[i] the hash of the sequence up to it (hashes[0] for none).
	committed []metalog.Entry
	hashes    []uint64
	proposed  map[string]int64 // payload -> tick proposed
	nextData  int
	probing   bool // the liveness probe is out: no other proposals

	trace      []string // the last events, for failure reports
	res        Result
	faultStart int32 // the highest epoch won when the faults began
	err        error // the first invariant broken while sending
	failStart  int64
	failEpoch  int32
}

// Run runs scenario sc with seed and returns what it measured, or an error
// naming the broken invariant.
func Run(sc Scenario, seed uint64, opts Options) (res Result, err error) {
	s := &Sim{sc: sc, opts: opts, rng: rand.New(rand.NewPCG(seed, 0x5eed)), seed: seed,
		cuts: map[[2]election.NodeID]bool{}, controllers: map[int32]election.NodeID{}, wonAt: map[int32]int64{},
		votes: map[[2]int32]election.NodeID{}, faults: calm, hashes: []uint64{0}, proposed: map[string]int64{}}
	s.res.Failover = -1
	voters := make([]election.NodeID, sc.Nodes)
	for i := range voters {
		voters[i] = election.NodeID(i + 1)
	}
	for _, id := range voters {
		nd := &node{id: id, cfg: Config(id, voters, seed)}
		nd.disk.Hard.Election.VotedFor = election.None
		s.nodes = append(s.nodes, nd)
		s.start(nd)
	}
	defer func() {
		if r := recover(); r != nil {
			err = s.fail("panic: %v", r)
		}
	}()
	for range warmupTicks {
		if err := s.step(); err != nil {
			return s.res, err
		}
	}
	s.faultStart = s.highestEpoch()
	s.faults = sc.Faults
	for i := range sc.Ticks {
		for _, ev := range sc.Events {
			if ev.At == i {
				s.apply(ev)
			}
		}
		for _, ev := range s.bounce {
			if i > ev.At && (i-ev.At)%ev.For == 0 {
				nd := s.nodes[ev.Node-1]
				if nd.n != nil && nd.n.Acting() {
					s.failStart, s.failEpoch = s.now, nd.n.Status().Election.Soft.Epoch
				}
				s.crash(nd, 0)
			}
		}
		s.randomFaults()
		if err := s.step(); err != nil {
			return s.res, err
		}
	}
	for ep := range s.controllers {
		if ep >= s.faultStart {
			s.res.Epochs++
		}
	}
	if sc.MaxEpochs > 0 && s.res.Epochs > sc.MaxEpochs {
		return s.res, s.fail("%d controller epochs during the faults, at most %d allowed", s.res.Epochs, sc.MaxEpochs)
	}
	// The faults stop: heal, wake and restart everyone.
	s.faults, s.bounce = calm, nil
	clear(s.cuts)
	for _, nd := range s.nodes {
		if nd.n == nil {
			s.start(nd)
		} else if nd.paused {
			s.resume(nd)
		}
		nd.crash = false
	}
	if sc.StayDown != 0 {
		// The controller (else the highest id) goes, and with five nodes
		// the next highest too: a minority, for good.
		down := []election.NodeID{s.pick(0)}
		if sc.Nodes == 5 {
			down = append(down, election.NodeID(slices.IndexFunc(s.nodes, func(nd *node) bool { return nd.id != down[0] })+1))
		}
		for _, id := range down {
			nd := s.nodes[id-1]
			s.crash(nd, 0)
			nd.until = 1 << 62
		}
	}
	if err := s.settle(); err != nil {
		return s.res, err
	}
	if err := s.checkDurable(); err != nil {
		return s.res, err
	}
	s.res.Committed = len(s.committed)
	return s.res, nil
}

// settle is the liveness check: once the faults stop, one node acts and
// every node follows it, then a proposal commits and every node applies
// it, all within LivenessBound ticks.
func (s *Sim) settle() error {
	settledAt, probe, probeEpoch := -1, "", int32(0)
	for t := 0; ; t++ {
		if settledAt < 0 && s.settled() {
			settledAt = t
			s.res.SettleTicks = t
		}
		// A probe proposed by a controller that then lost office may be
		// truncated, as any uncommitted entry: the next controller
		// proposes another.
		if c := s.acting(); settledAt >= 0 && c != nil && c.n.CanPropose() &&
			(probe == "" || c.n.Status().Election.Soft.Epoch != probeEpoch && !s.isCommitted(probe)) {
			probe, probeEpoch = s.propose(c), c.n.Status().Election.Soft.Epoch
		}
		if probe != "" && s.appliedEverywhere(probe) {
			s.res.LivenessTicks = t - settledAt
			return nil
		}
		if t == LivenessBound {
			if settledAt < 0 {
				return s.fail("no settled controller %d ticks after the faults stopped", t)
			}
			return s.fail("no proposal applied on every node %d ticks after the faults stopped (settled after %d, probe %q)", t, settledAt, probe)
		}
		s.probing = true // only the probe from now on, so its latency is the figure
		if err := s.step(); err != nil {
			return err
		}
	}
}

func (s *Sim) isCommitted(data string) bool {
	return slices.ContainsFunc(s.committed, func(ent metalog.Entry) bool { return string(ent.Data) == data })
}

func (s *Sim) appliedEverywhere(data string) bool {
	idx := -1
	for i, ent := range s.committed {
		if string(ent.Data) == data {
			idx = i + 1
		}
	}
	if idx < 0 {
		return false
	}
	for _, nd := range s.nodes {
		if nd.n != nil && nd.applied < int64(idx) {
			return false
		}
	}
	return true
}

// step is one tick of simulated time: every running node ticks, due
// messages arrive in random order, each node's Ready is done (persist,
// then send, then apply), the acting controller may propose, and the
// invariants are checked.
func (s *Sim) step() error {
	s.now++
	for _, nd := range s.nodes {
		switch {
		case nd.n == nil:
			if s.now >= nd.until {
				s.start(nd)
			}
		case nd.paused:
			if s.now >= nd.until {
				s.resume(nd)
			} else {
				nd.missed++
			}
		default:
			nd.n.Tick()
		}
	}
	var due, later []packet
	for _, p := range s.net {
		nd := s.nodes[p.m.To-1]
		if p.at > s.now || nd.paused { // a stopped process's socket buffers hold them
			later = append(later, p)
		} else {
			due = append(due, p)
		}
	}
	s.net = later
	s.rng.Shuffle(len(due), func(i, j int) { due[i], due[j] = due[j], due[i] })
	for _, p := range due {
		nd := s.nodes[p.m.To-1]
		if nd.n == nil || s.cuts[[2]election.NodeID{p.m.From, p.m.To}] {
			continue
		}
		if err := nd.n.Step(p.m); err != nil {
			return s.fail("step %v: %v", p.m, err)
		}
	}
	for _, nd := range s.nodes {
		if nd.n != nil && !nd.paused {
			if err := s.ready(nd); err != nil {
				return err
			}
		}
	}
	if c := s.acting(); c != nil && c.n.CanPropose() && !s.probing && s.rng.IntN(100) < proposePct {
		s.propose(c)
		if err := s.ready(c); err != nil {
			return err
		}
	}
	if s.now%durabilityCheckEvery == 0 {
		if err := s.checkDurable(); err != nil {
			return err
		}
	}
	return s.check()
}

func (s *Sim) acting() *node {
	for _, nd := range s.nodes {
		if nd.n != nil && !nd.paused && nd.n.Acting() {
			return nd
		}
	}
	return nil
}

func (s *Sim) propose(nd *node) string {
	s.nextData++
	data := fmt.Sprintf("r%d", s.nextData)
	idx, err := nd.n.Propose([]byte(data))
	if err != nil {
		panic(fmt.Sprintf("propose on %d after CanPropose: %v", nd.id, err))
	}
	s.proposed[data] = s.now
	s.record("%d propose %s at %d", nd.id, data, idx)
	return data
}

// ready is the driver's Ready loop for one node.
func (s *Sim) ready(nd *node) error {
	if !nd.n.HasReady() {
		return nil
	}
	rd := nd.n.Ready()
	if s.opts.SendBeforePersist {
		s.send(nd, rd.Messages)
	}
	if nd.crash {
		// The crash falls somewhere in the persist steps: a prefix of them
		// reached the disk (the snapshot, the truncation, some entries, the
		// hard state), the rest did not, and nothing was sent.
		steps := 2 + len(rd.Entries) + 1
		if err := s.persist(nd, rd, s.rng.IntN(steps+1)); err != nil {
			return err
		}
		s.crash(nd, s.rng.IntN(51))
		return nil
	}
	if err := s.persist(nd, rd, -1); err != nil {
		return err
	}
	if !s.opts.SendBeforePersist {
		s.send(nd, rd.Messages)
	}
	if s.opts.ApplyUncommitted {
		// Apply what is appended, as if it were committed: the entries
		// past those already applied.
		for _, ent := range rd.Entries {
			if ent.Index > nd.applied && (len(rd.CommittedEntries) == 0 || ent.Index > rd.CommittedEntries[len(rd.CommittedEntries)-1].Index) {
				rd.CommittedEntries = append(rd.CommittedEntries, ent)
			}
		}
	}
	if err := s.applyReady(nd, rd); err != nil {
		return err
	}
	if ss := rd.SoftState; ss != nil {
		s.record("%d %v", nd.id, *ss)
		if ss.Role == election.Controller {
			if w, ok := s.controllers[ss.Epoch]; ok && w != nd.id {
				return s.fail("two controllers in epoch %d: %d and %d", ss.Epoch, w, nd.id)
			}
			if _, ok := s.controllers[ss.Epoch]; !ok {
				s.wonAt[ss.Epoch] = s.now
			}
			s.controllers[ss.Epoch] = nd.id
		}
	}
	nd.n.Advance(rd)
	// Compaction: the driver snapshots its applied state now and then.
	if st := nd.n.Status(); st.Applied-st.SnapshotIndex >= compactEvery && s.rng.IntN(4) == 0 {
		if err := nd.n.Compact(st.Applied, hashBytes(nd.applied, nd.appliedHash)); err != nil {
			return s.fail("node %d compact: %v", nd.id, err)
		}
	}
	return nil
}

// persist does the first steps of the Ready (all of them if upTo < 0),
// checking on the way that nothing overwrites what it must not.
func (s *Sim) persist(nd *node, rd metalog.Ready, upTo int) error {
	d := &nd.disk
	step := 0
	done := func() bool { step++; return upTo >= 0 && step > upTo }
	if done() {
		return nil
	}
	if sn := rd.Snapshot; sn != nil {
		if sn.Index <= d.Snapshot.Index {
			return s.fail("node %d writes %v over its snapshot at %d", nd.id, *sn, d.Snapshot.Index)
		}
		if rd.TruncateAll {
			d.Entries = nil
		} else if last := d.Snapshot.Index + int64(len(d.Entries)); last <= sn.Index {
			// The entries up to the snapshot were not all written yet:
			// the snapshot covers them, and this Ready's Entries follow it.
			d.Entries = nil
		} else {
			d.Entries = slices.Clone(d.Entries[sn.Index-d.Snapshot.Index:])
		}
		d.Snapshot = *sn
		s.record("%d snapshot %d/%d restore=%v", nd.id, sn.Epoch, sn.Index, rd.RestoreSnapshot)
	}
	if done() {
		return nil
	}
	if t := rd.Truncate; t != nil {
		if *t < d.Hard.Commit {
			return s.fail("node %d truncates after %d, below its durable commit %d", nd.id, *t, d.Hard.Commit)
		}
		if k := *t - d.Snapshot.Index; k < int64(len(d.Entries)) {
			s.record("%d truncate after %d (drops %d)", nd.id, *t, int64(len(d.Entries))-k)
			d.Entries = d.Entries[:k]
		}
	}
	for _, ent := range rd.Entries {
		if done() {
			return nil
		}
		if want := d.Snapshot.Index + int64(len(d.Entries)) + 1; ent.Index != want {
			return s.fail("node %d appends %v, its disk log ends at %d", nd.id, ent, want-1)
		}
		d.Entries = append(d.Entries, ent)
	}
	if done() {
		return nil
	}
	if hs := rd.HardState; hs != nil {
		o := d.Hard
		if hs.Election.Epoch < o.Election.Epoch || hs.Election.Epoch == o.Election.Epoch &&
			o.Election.VotedFor != election.None && hs.Election.VotedFor != o.Election.VotedFor {
			return s.fail("node %d would write %v over %v on disk", nd.id, *hs, o)
		}
		if hs.Commit < o.Commit {
			return s.fail("node %d would write commit index %d over %d on disk", nd.id, hs.Commit, o.Commit)
		}
		if last := d.Snapshot.Index + int64(len(d.Entries)); hs.Commit > last {
			return s.fail("node %d persists commit index %d beyond its disk log end %d", nd.id, hs.Commit, last)
		}
		if o.Election != hs.Election {
			s.record("%d persist %v", nd.id, hs.Election)
		}
		d.Hard = *hs
	}
	return nil
}

// applyReady applies the Ready's snapshot and committed entries to the
// node's state, checking each against the one committed sequence.
func (s *Sim) applyReady(nd *node, rd metalog.Ready) error {
	if rd.RestoreSnapshot {
		if err := s.restore(nd, *rd.Snapshot); err != nil {
			return err
		}
	}
	for _, ent := range rd.CommittedEntries {
		if ent.Index != nd.applied+1 {
			return s.fail("node %d applies %v after %d", nd.id, ent, nd.applied)
		}
		i := int(ent.Index) - 1
		switch {
		case i < len(s.committed):
			if c := s.committed[i]; !sameEntry(c, ent) {
				return s.fail("node %d applies %v, but %v was committed at %d", nd.id, ent, c, ent.Index)
			}
		case i == len(s.committed):
			// The first node to apply it: it must be on a majority of
			// disks, or it is not committed.
			if held := s.holders(ent); held < len(s.nodes)/2+1 {
				return s.fail("node %d applies %v, held by only %d nodes' disks", nd.id, ent, held)
			}
			s.committed = append(s.committed, ent)
			s.hashes = append(s.hashes, chain(s.hashes[i], ent))
			if t, ok := s.proposed[string(ent.Data)]; ok && ent.Type == metalog.EntryRecords {
				s.res.CommitTicks = append(s.res.CommitTicks, int(s.now-t))
				delete(s.proposed, string(ent.Data))
			}
		default:
			return s.fail("node %d applies %v beyond the committed sequence's end %d", nd.id, ent, len(s.committed))
		}
		if ent.Type == metalog.EntryLeaderChange && s.controllers[ent.Epoch] == nd.id &&
			nd.n.Status().Election.Soft == (election.SoftState{Role: election.Controller, Epoch: ent.Epoch, Controller: nd.id, Acting: nd.n.Acting()}) {
			// The controller applies its own leader-change entry: from
			// now on it may propose.
			s.res.TakeOfficeTicks = append(s.res.TakeOfficeTicks, int(s.now-s.wonAt[ent.Epoch]))
		}
		nd.applied, nd.appliedHash = ent.Index, chain(nd.appliedHash, ent)
	}
	return nil
}

func (s *Sim) restore(nd *node, sn metalog.Snapshot) error {
	idx, h := unhashBytes(sn.Data)
	if idx != sn.Index {
		return s.fail("node %d restores %v whose state is as of %d", nd.id, sn, idx)
	}
	if idx >= int64(len(s.hashes)) || s.hashes[idx] != h {
		return s.fail("node %d restores %v, which is not the committed sequence up to %d", nd.id, sn, idx)
	}
	nd.applied, nd.appliedHash = idx, h
	return nil
}

// holders counts the nodes whose disk holds ent (or a snapshot past it,
// which holds only committed entries).
func (s *Sim) holders(ent metalog.Entry) int {
	held := 0
	for _, nd := range s.nodes {
		d := nd.disk
		if ent.Index <= d.Snapshot.Index {
			held++
			continue
		}
		if k := ent.Index - d.Snapshot.Index - 1; k < int64(len(d.Entries)) && sameEntry(d.Entries[k], ent) {
			held++
		}
	}
	return held
}

// checkDurable: a committed entry is never lost: every one is on a
// majority of disks, so any majority that elects a controller holds it.
func (s *Sim) checkDurable() error {
	for _, ent := range s.committed {
		if held := s.holders(ent); held < len(s.nodes)/2+1 {
			return s.fail("committed entry %v is held by only %d nodes' disks", ent, held)
		}
	}
	return nil
}

func sameEntry(a, b metalog.Entry) bool {
	return a.Index == b.Index && a.Epoch == b.Epoch && a.Type == b.Type && string(a.Data) == string(b.Data)
}

func chain(h uint64, ent metalog.Entry) uint64 {
	f := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], h)
	f.Write(b[:])
	fmt.Fprintf(f, "%d/%d/%d/%s", ent.Epoch, ent.Index, ent.Type, ent.Data)
	return f.Sum64()
}

func hashBytes(idx int64, h uint64) []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint64(b, uint64(idx))
	binary.LittleEndian.PutUint64(b[8:], h)
	return b
}

func unhashBytes(b []byte) (int64, uint64) {
	if len(b) != 16 {
		return -1, 0
	}
	return int64(binary.LittleEndian.Uint64(b)), binary.LittleEndian.Uint64(b[8:])
}

func (s *Sim) send(nd *node, msgs []metalog.Message) {
	for _, m := range msgs {
		s.res.Messages++
		if em := m.Election; m.Type == metalog.MsgElection && em.Type == election.MsgVoteResp && !em.Reject {
			k := [2]int32{int32(nd.id), em.Epoch}
			if c, ok := s.votes[k]; ok && c != em.To && s.err == nil {
				s.err = s.fail("node %d voted for %d and for %d in epoch %d", nd.id, c, em.To, em.Epoch)
			}
			s.votes[k] = em.To
		}
		if s.rng.IntN(100) < s.faults.LossPct {
			continue
		}
		copies := 1
		if s.rng.IntN(100) < s.faults.DupPct {
			copies = 2
		}
		for range copies {
			delay := s.faults.DelayMin + s.rng.IntN(s.faults.DelayMax-s.faults.DelayMin+1)
			s.net = append(s.net, packet{m: m, at: s.now + int64(delay)})
		}
	}
}

// check tests the invariants that must hold after every step.
func (s *Sim) check() error {
	if s.err != nil {
		return s.err
	}
	// With every node's ticks at one rate (a paused node catches up on
	// resume), at most one running node holds a lease at any step.
	var acting []election.NodeID
	for _, nd := range s.nodes {
		if nd.n != nil && !nd.paused && nd.n.Acting() {
			acting = append(acting, nd.id)
		}
	}
	if len(acting) > 1 {
		return s.fail("nodes %v act as controller at once", acting)
	}
	if len(acting) == 1 && s.failStart > 0 {
		if st := s.nodes[acting[0]-1].n.Status(); st.Election.Soft.Epoch > s.failEpoch {
			s.res.Failover = int(s.now - s.failStart)
			s.failStart = 0
		}
	}
	for _, nd := range s.nodes {
		if nd.n == nil {
			continue
		}
		st := nd.n.Status()
		if st.Commit < nd.commit {
			return s.fail("node %d commit index went from %d to %d", nd.id, nd.commit, st.Commit)
		}
		nd.commit = st.Commit
		if st.Applied != nd.applied {
			return s.fail("node %d reports applied %d, its driver applied %d", nd.id, st.Applied, nd.applied)
		}
	}
	return nil
}

// settled: one node acts as controller and every node follows it.
func (s *Sim) settled() bool {
	c := s.acting()
	if c == nil {
		return false
	}
	epoch := c.n.Status().Election.Soft.Epoch
	for _, nd := range s.nodes {
		if nd.n == nil {
			continue // down for good (StayDown)
		}
		if st := nd.n.Status().Election; st.Soft.Controller != c.id || st.Soft.Epoch != epoch {
			return false
		}
	}
	return true
}

func (s *Sim) start(nd *node) {
	n, err := metalog.NewNode(nd.cfg, nd.disk)
	if err != nil {
		panic(err) // the disk holds only what the node wrote
	}
	nd.n, nd.paused, nd.crash, nd.missed = n, false, false, 0
	nd.applied, nd.appliedHash, nd.commit = 0, 0, 0
	if sn := nd.disk.Snapshot; sn.Index > 0 {
		if err := s.restore(nd, sn); err != nil {
			panic(err)
		}
	}
	s.record("%d start from %v, snapshot %d, %d entries", nd.id, nd.disk.Hard, nd.disk.Snapshot.Index, len(nd.disk.Entries))
}

func (s *Sim) crash(nd *node, down int) {
	if nd.n == nil {
		return
	}
	nd.n, nd.paused, nd.crash, nd.until = nil, false, false, s.now+int64(down)
	s.res.Crashes++
	s.record("%d crash, down %d", nd.id, down)
}

// resume is SIGCONT: the driver reads on the monotonic clock how long it
// was stopped and ticks for all of it before it does anything else.
func (s *Sim) resume(nd *node) {
	for range nd.missed {
		nd.n.Tick()
	}
	s.record("%d resume after %d ticks", nd.id, nd.missed)
	nd.paused, nd.missed = false, 0
}

func (s *Sim) pause(nd *node, ticks int) {
	if nd.n == nil || nd.paused {
		return
	}
	nd.paused, nd.until = true, s.now+int64(ticks)
	s.res.Pause++
	s.record("%d pause %d", nd.id, ticks)
}

func (s *Sim) randomFaults() {
	f := s.faults
	if f.PartitionPerMille > 0 && s.rng.IntN(1000) < f.PartitionPerMille {
		clear(s.cuts)
		if s.rng.IntN(3) > 0 {
			for _, a := range s.nodes {
				for _, b := range s.nodes {
					if a != b && s.rng.IntN(4) == 0 {
						s.cuts[[2]election.NodeID{a.id, b.id}] = true
					}
				}
			}
		}
		s.record("network %v", s.cutList())
	}
	for _, nd := range s.nodes {
		if f.PausePerMille > 0 && s.rng.IntN(1000) < f.PausePerMille {
			s.pause(nd, 1+s.rng.IntN(100))
		}
		if f.CrashPerMille > 0 && nd.n != nil && s.rng.IntN(1000) < f.CrashPerMille {
			nd.crash = true
		}
	}
}

func (s *Sim) apply(ev Event) {
	id := s.pick(ev.Node)
	s.record("event %s %d %d %d", ev.Kind, id, ev.Peer, ev.For)
	if nd := s.nodes[id-1]; ev.Kind != Heal && nd.n != nil && nd.n.Acting() {
		s.failStart, s.failEpoch = s.now, nd.n.Status().Election.Soft.Epoch
	}
	switch ev.Kind {
	case Isolate:
		for _, b := range s.nodes {
			s.cuts[[2]election.NodeID{id, b.id}], s.cuts[[2]election.NodeID{b.id, id}] = true, true
		}
	case Deaf:
		for _, b := range s.nodes {
			s.cuts[[2]election.NodeID{b.id, id}] = true
		}
	case Partition:
		p := election.NodeID(ev.Peer)
		s.cuts[[2]election.NodeID{id, p}], s.cuts[[2]election.NodeID{p, id}] = true, true
	case Heal:
		clear(s.cuts)
	case Pause:
		s.pause(s.nodes[id-1], ev.For)
	case Crash:
		s.crash(s.nodes[id-1], ev.For)
	case Bounce:
		s.bounce = append(s.bounce, Event{At: ev.At, Node: int(id), For: ev.For})
	default:
		panic(fmt.Sprintf("sim: unknown event %q", ev.Kind))
	}
}

// pick resolves an event's node: 0 is the acting controller (else the
// highest id), -1 the highest id.
func (s *Sim) pick(n int) election.NodeID {
	if n > 0 {
		return election.NodeID(n)
	}
	if n == 0 {
		if c := s.acting(); c != nil {
			return c.id
		}
	}
	return election.NodeID(len(s.nodes))
}

func (s *Sim) highestEpoch() int32 {
	var h int32
	for ep := range s.controllers {
		h = max(h, ep)
	}
	return h
}

func (s *Sim) cutList() string {
	var cuts []string
	for k := range s.cuts {
		cuts = append(cuts, fmt.Sprintf("%d-x->%d", k[0], k[1]))
	}
	slices.Sort(cuts)
	return "[" + strings.Join(cuts, " ") + "]"
}

const traceLen = 60

func (s *Sim) record(format string, args ...any) {
	if len(s.trace) == traceLen {
		s.trace = s.trace[1:]
	}
	s.trace = append(s.trace, fmt.Sprintf("t=%d ", s.now)+fmt.Sprintf(format, args...))
}

func (s *Sim) fail(format string, args ...any) error {
	var nodes []string
	for _, nd := range s.nodes {
		if nd.n == nil {
			nodes = append(nodes, fmt.Sprintf("%d down, disk %v snapshot %d entries %d", nd.id, nd.disk.Hard, nd.disk.Snapshot.Index, len(nd.disk.Entries)))
			continue
		}
		st := nd.n.Status()
		nodes = append(nodes, fmt.Sprintf("%d %v last=%d/%d commit=%d applied=%d snapshot=%d match=%v", nd.id, st.Election.Soft,
			st.LastEpoch, st.LastIndex, st.Commit, st.Applied, st.SnapshotIndex, st.Match))
	}
	return fmt.Errorf("scenario %s seed %d tick %d: %s\nnodes:\n  %s\nlast events:\n  %s", s.sc.Name, s.seed, s.now,
		fmt.Sprintf(format, args...), strings.Join(nodes, "\n  "), strings.Join(s.trace, "\n  "))
}
