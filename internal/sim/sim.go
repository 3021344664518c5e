package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/wren-broker/wren/election"
)

// Config is the election configuration every simulated node runs: the
// config defaults (heartbeat 500 ms, lease 1.5 s, election timeout 2 s,
// jitter up to 1 s) at 100 ms per tick.
func Config(id election.NodeID, voters []election.NodeID, seed uint64) election.Config {
	return election.Config{ID: id, Voters: voters, HeartbeatTicks: 5, LeaseTicks: 15, ElectionTicks: 20,
		ElectionJitterTicks: 10, Seed: seed}
}

const (
	warmupTicks = 200
	// LivenessBound is the most ticks (at 100 ms) the cluster may take to
	// settle on one acting controller, known to every node, once the
	// faults stop. The worst case seen is well below it; see the tests.
	LivenessBound = 400
)

// Options change how the driver behaves, to show that the checks catch a
// broken driver.
type Options struct {
	// SendBeforePersist breaks the Ready contract: messages leave before
	// the hard state is durable, and a crash may fall between the two.
	SendBeforePersist bool
}

// Result is what one run measured.
type Result struct {
	Epochs         int // controller epochs won during the fault phase, counting the one in force at its start
	SettleTicks    int // ticks from the end of the faults to a settled controller
	Messages       int
	Crashes, Pause int
	// Failover: ticks from a scheduled fault of the acting controller to
	// the next node acting in a higher epoch; -1 if no such event.
	Failover int
}

type packet struct {
	m   election.Message
	at  int64
	log election.LogPosition // the sender's metadata log, replicated with heartbeats
}

type node struct {
	id     election.NodeID
	cfg    election.Config
	n      *election.Node // nil while down
	disk   election.HardState
	log    election.LogPosition // durable in its own log; the election only reads it
	paused bool
	missed int   // ticks missed while paused
	until  int64 // end of the current pause or downtime
	crash  bool  // crash before persisting the next Ready
}

// Sim runs election state machines over a simulated network. Everything
// random comes from one seed, so a run replays exactly.
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
	votes       map[[2]int32]election.NodeID // {voter, epoch}: the candidate it granted
	trace       []string                     // the last events, for failure reports
	res         Result
	faultStart  int32 // the highest epoch won when the faults began
	err         error // the first invariant broken while sending
	// A scheduled fault hit the acting controller at failStart, in
	// failEpoch; the failover ends when a node acts in a later epoch.
	failStart int64
	failEpoch int32
}

// Run runs scenario sc with seed and returns what it measured, or an error
// naming the broken invariant.
func Run(sc Scenario, seed uint64, opts Options) (res Result, err error) {
	s := &Sim{sc: sc, opts: opts, rng: rand.New(rand.NewPCG(seed, 0x5eed)), seed: seed,
		cuts: map[[2]election.NodeID]bool{}, controllers: map[int32]election.NodeID{},
		votes: map[[2]int32]election.NodeID{}, faults: calm}
	s.res.Failover = -1
	voters := make([]election.NodeID, sc.Nodes)
	for i := range voters {
		voters[i] = election.NodeID(i + 1)
	}
	for _, id := range voters {
		cfg := Config(id, voters, seed)
		nd := &node{id: id, cfg: cfg, disk: election.HardState{VotedFor: election.None}}
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
					s.failStart, s.failEpoch = s.now, nd.n.Status().Soft.Epoch
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
	for t := 0; ; t++ {
		if s.settled() {
			s.res.SettleTicks = t
			return s.res, nil
		}
		if t == LivenessBound {
			return s.res, s.fail("no settled controller %d ticks after the faults stopped", t)
		}
		if err := s.step(); err != nil {
			return s.res, err
		}
	}
}

// step is one tick of simulated time: every running node ticks, due
// messages arrive in random order, each node's Ready is done (persist,
// then send), the controller appends to its log, and the invariants are
// checked.
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
		if st := nd.n.Status(); p.m.Type == election.MsgHeartbeat && st.Soft.Epoch == p.m.Epoch && st.Soft.Controller == p.m.From {
			nd.log = p.log // replication, reduced to its effect on log positions
			nd.n.SetLogPosition(nd.log)
		}
	}
	for _, nd := range s.nodes {
		if nd.n != nil && !nd.paused {
			if err := s.ready(nd); err != nil {
				return err
			}
		}
	}
	for _, nd := range s.nodes {
		if nd.n != nil && !nd.paused && nd.n.Acting() && s.rng.IntN(2) == 0 {
			st := nd.n.Status()
			nd.log = election.LogPosition{Epoch: st.Soft.Epoch, Offset: nd.log.Offset + 1}
			nd.n.SetLogPosition(nd.log)
		}
	}
	return s.check()
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
		s.crash(nd, s.rng.IntN(51))
		return nil
	}
	if hs := rd.HardState; hs != nil {
		d := nd.disk
		if hs.Epoch < d.Epoch || hs.Epoch == d.Epoch && d.VotedFor != election.None && hs.VotedFor != d.VotedFor {
			return s.fail("node %d would write %v over %v on disk", nd.id, *hs, d)
		}
		nd.disk = *hs
		s.record("%d persist %v", nd.id, *hs)
	}
	if !s.opts.SendBeforePersist {
		s.send(nd, rd.Messages)
	}
	if ss := rd.SoftState; ss != nil {
		s.record("%d %v", nd.id, *ss)
		if ss.Role == election.Controller {
			if w, ok := s.controllers[ss.Epoch]; ok && w != nd.id {
				return s.fail("two controllers in epoch %d: %d and %d", ss.Epoch, w, nd.id)
			}
			s.controllers[ss.Epoch] = nd.id
		}
	}
	nd.n.Advance(rd)
	return nil
}

func (s *Sim) send(nd *node, msgs []election.Message) {
	for _, m := range msgs {
		s.res.Messages++
		if m.Type == election.MsgVoteResp && !m.Reject {
			k := [2]int32{int32(nd.id), m.Epoch}
			if c, ok := s.votes[k]; ok && c != m.To && s.err == nil {
				s.err = s.fail("node %d voted for %d and for %d in epoch %d", nd.id, c, m.To, m.Epoch)
			}
			s.votes[k] = m.To
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
			s.net = append(s.net, packet{m: m, at: s.now + int64(delay), log: nd.log})
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
		if st := s.nodes[acting[0]-1].n.Status(); st.Soft.Epoch > s.failEpoch {
			s.res.Failover = int(s.now - s.failStart)
			s.failStart = 0
		}
	}
	return nil
}

// settled: one node acts as controller and every node follows it.
func (s *Sim) settled() bool {
	var c election.NodeID = election.None
	var epoch int32
	for _, nd := range s.nodes {
		if nd.n != nil && nd.n.Acting() {
			st := nd.n.Status()
			c, epoch = nd.id, st.Soft.Epoch
		}
	}
	if c == election.None {
		return false
	}
	for _, nd := range s.nodes {
		if st := nd.n.Status(); st.Soft.Controller != c || st.Soft.Epoch != epoch {
			return false
		}
	}
	return true
}

func (s *Sim) start(nd *node) {
	n, err := election.NewNode(nd.cfg, nd.disk)
	if err != nil {
		panic(err) // the disk holds only what the node wrote
	}
	n.SetLogPosition(nd.log)
	nd.n, nd.paused, nd.crash, nd.missed = n, false, false, 0
	s.record("%d start from %v", nd.id, nd.disk)
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
		s.failStart, s.failEpoch = s.now, nd.n.Status().Soft.Epoch
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
		for _, nd := range s.nodes {
			if nd.n != nil && nd.n.Acting() {
				return nd.id
			}
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
	return fmt.Errorf("scenario %s seed %d tick %d: %s\nlast events:\n  %s", s.sc.Name, s.seed, s.now,
		fmt.Sprintf(format, args...), strings.Join(s.trace, "\n  "))
}
