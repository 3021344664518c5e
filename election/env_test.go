package election

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wren-broker/wren/internal/datadriven"
)

// TestDataDriven runs testdata/*.txt. Commands (ids are node ids; most
// default to every node):
//
//	add-nodes N [heartbeat= lease= election= jitter= probe= retry= seed=]
//	tick [N] [ids...] [verbose]  tick each node N times
//	deliver-msgs [ids...]      deliver the messages queued for ids, once
//	stabilize                  deliver until no message is left
//	run N [verbose]            N rounds of (tick every node; stabilize),
//	                           printing only persists and role changes
//	partition a b | cut a b | isolate a | heal
//	pause a | resume a [catchup=false] | crash a | restart a
//	set-log a epoch= offset=
//	status | history
func TestDataDriven(t *testing.T) {
	datadriven.RunDir(t, "testdata", func(t *testing.T) func(*datadriven.Cmd) string {
		e := &env{t: t, nodes: map[NodeID]*envNode{}, cuts: map[[2]NodeID]bool{}, controllers: map[int32]NodeID{}}
		return e.handle
	})
}

type envNode struct {
	n      *Node
	cfg    Config
	disk   HardState
	log    LogPosition
	paused bool
	missed int // ticks missed while paused
	down   bool
	shown  SoftState // the last soft state printed in quiet mode
}

type env struct {
	t           *testing.T
	nodes       map[NodeID]*envNode
	ids         []NodeID
	queue       []Message
	cuts        map[[2]NodeID]bool // {from, to}: dropped
	controllers map[int32]NodeID   // who won each epoch
	// slowClock: a node resumed without catching up its ticks, so the
	// lease alone no longer keeps two nodes from acting at once.
	slowClock bool
	out       strings.Builder
	quiet     bool // print only persists and role changes
	pos       string
}

func (e *env) printf(format string, args ...any) { fmt.Fprintf(&e.out, format+"\n", args...) }

func (e *env) handle(c *datadriven.Cmd) string {
	e.out.Reset()
	e.quiet = false
	e.pos = c.Pos
	switch c.Name {
	case "add-nodes":
		e.addNodes(c)
	case "tick":
		e.quiet = !slices.Contains(c.Args, "verbose")
		c.Args = slices.DeleteFunc(c.Args, func(a string) bool { return a == "verbose" })
		args := c.IntArgs(e.t)
		ticks := 1
		if len(args) > 0 {
			ticks, args = args[0], args[1:]
		}
		for range ticks {
			for _, id := range e.pick(args) {
				e.tick(id)
			}
		}
	case "timeout":
		// Tick one node until its election timer fires.
		id := e.pick(c.IntArgs(e.t))[0]
		for i := 0; e.nodes[id].n.Status().Soft.Role == Follower; i++ {
			if i == 1000 {
				e.t.Fatalf("%s: node %d still a follower after 1000 ticks", c.Pos, id)
			}
			e.tick(id)
		}
	case "inject":
		e.inject(c)
	case "deliver-msgs":
		e.deliver(e.pick(c.IntArgs(e.t)))
	case "stabilize":
		e.stabilize()
	case "run":
		e.quiet = !slices.Contains(c.Args, "verbose")
		ticks, _ := strconv.Atoi(c.Args[0])
		bounce, every := NodeID(c.Int(e.t, "bounce", 0)), c.Int(e.t, "every", 0)
		for i := range ticks {
			if bounce != 0 && i > 0 && i%every == 0 {
				e.restart(bounce)
			}
			for _, id := range e.ids {
				e.tick(id)
			}
			e.stabilize()
		}
	case "partition":
		a := e.pick(c.IntArgs(e.t))
		e.cuts[[2]NodeID{a[0], a[1]}], e.cuts[[2]NodeID{a[1], a[0]}] = true, true
	case "cut":
		a := e.pick(c.IntArgs(e.t))
		e.cuts[[2]NodeID{a[0], a[1]}] = true
	case "isolate":
		a := e.pick(c.IntArgs(e.t))[0]
		for _, b := range e.ids {
			e.cuts[[2]NodeID{a, b}], e.cuts[[2]NodeID{b, a}] = true, true
		}
	case "heal":
		clear(e.cuts)
	case "pause":
		e.nodes[e.pick(c.IntArgs(e.t))[0]].paused = true
	case "resume":
		id := e.pick(c.IntArgs(e.t))[0]
		en := e.nodes[id]
		en.paused = false
		if c.Str("catchup", "true") == "true" {
			// The driver sees on the monotonic clock how long it was
			// stopped and ticks for all of it before anything else.
			for range en.missed {
				en.n.Tick()
			}
			e.ready(id)
		} else {
			e.slowClock = true
			e.printf("%d resumed without catching up %d ticks", id, en.missed)
		}
		en.missed = 0
	case "crash":
		en := e.nodes[e.pick(c.IntArgs(e.t))[0]]
		en.down, en.n = true, nil
	case "restart":
		e.restart(e.pick(c.IntArgs(e.t))[0])
	case "set-log":
		id := e.pick(c.IntArgs(e.t))[0]
		en := e.nodes[id]
		en.log = LogPosition{Epoch: int32(c.Int(e.t, "epoch", 0)), Offset: int64(c.Int(e.t, "offset", 0))}
		if en.n != nil {
			en.n.SetLogPosition(en.log)
		}
	case "status":
		for _, id := range e.ids {
			en := e.nodes[id]
			if en.down {
				e.printf("%d down, disk %v", id, en.disk)
				continue
			}
			st := en.n.Status()
			var flags string
			if en.paused {
				flags = " paused"
			}
			e.printf("%d %v voted=%s log=%v%s", id, st.Soft, nodeName(st.Hard.VotedFor), st.Log, flags)
		}
	case "history":
		epochs := make([]int32, 0, len(e.controllers))
		for ep := range e.controllers {
			epochs = append(epochs, ep)
		}
		slices.Sort(epochs)
		for _, ep := range epochs {
			e.printf("epoch %d: controller %d", ep, e.controllers[ep])
		}
		e.printf("%d controller epoch(s)", len(epochs))
	default:
		e.t.Fatalf("%s: unknown command %q", c.Pos, c.Name)
	}
	return e.out.String()
}

func (e *env) addNodes(c *datadriven.Cmd) {
	count, _ := strconv.Atoi(c.Args[0])
	voters := make([]NodeID, count)
	for i := range voters {
		voters[i] = NodeID(i + 1)
	}
	for _, id := range voters {
		cfg := Config{
			ID: id, Voters: voters,
			HeartbeatTicks:      c.Int(e.t, "heartbeat", 2),
			LeaseTicks:          c.Int(e.t, "lease", 6),
			ElectionTicks:       c.Int(e.t, "election", 10),
			ElectionJitterTicks: c.Int(e.t, "jitter", 5),
			ProbeTicks:          c.Int(e.t, "probe", 0),
			RetryTicks:          c.Int(e.t, "retry", 0),
			Seed:                uint64(c.Int(e.t, "seed", 1)),
		}
		n, err := NewNode(cfg, HardState{VotedFor: None})
		if err != nil {
			e.t.Fatalf("%s: %v", c.Pos, err)
		}
		e.nodes[id] = &envNode{n: n, cfg: cfg, disk: HardState{VotedFor: None}}
		e.ids = append(e.ids, id)
	}
}

// restart brings a node back from what its disk holds; anything it did
// not persist is gone.
func (e *env) restart(id NodeID) {
	en := e.nodes[id]
	n, err := NewNode(en.cfg, en.disk)
	if err != nil {
		e.t.Fatal(err)
	}
	n.SetLogPosition(en.log)
	en.n, en.down, en.paused = n, false, false
	e.printf("%d restarted with %v", id, en.disk)
}

// inject hands a node a message made up by the script.
func (e *env) inject(c *datadriven.Cmd) {
	var m Message
	for t, name := range msgNames {
		if name == c.Str("type", "") {
			m.Type = t
		}
	}
	m.From, m.To = NodeID(c.Int(e.t, "from", 0)), NodeID(c.Int(e.t, "to", 0))
	m.Epoch = int32(c.Int(e.t, "epoch", 0))
	if l := c.Str("log", ""); l != "" {
		ep, off, _ := strings.Cut(l, "/")
		epoch, err1 := strconv.Atoi(ep)
		offset, err2 := strconv.Atoi(off)
		if err1 != nil || err2 != nil {
			e.t.Fatalf("%s: log=%q: want epoch/offset", c.Pos, l)
		}
		m.Log = LogPosition{Epoch: int32(epoch), Offset: int64(offset)}
	}
	m.Reject, m.Quiet = slices.Contains(c.Args, "reject"), slices.Contains(c.Args, "quiet")
	m.LeaseTick = int64(c.Int(e.t, "lease-tick", 0))
	at := NodeID(c.Int(e.t, "at", int(m.To)))
	e.printf("deliver %v", m)
	if err := e.nodes[at].n.Step(m); err != nil {
		e.printf("error: %v", err)
		return
	}
	e.ready(at)
}

// pick maps the ints of a command to node ids; none means every node.
func (e *env) pick(args []int) []NodeID {
	if len(args) == 0 {
		return e.ids
	}
	out := make([]NodeID, len(args))
	for i, a := range args {
		if e.nodes[NodeID(a)] == nil {
			e.t.Fatalf("no node %d", a)
		}
		out[i] = NodeID(a)
	}
	return out
}

func (e *env) tick(id NodeID) {
	en := e.nodes[id]
	switch {
	case en.down:
	case en.paused:
		en.missed++
	default:
		en.n.Tick()
		e.ready(id)
	}
}

// deliver hands each queued message for ids to its recipient once; what
// that produces waits for the next call. Messages for a paused node stay
// queued (its socket buffers hold them); messages on a cut link or for a
// crashed node are lost.
func (e *env) deliver(ids []NodeID) int {
	queue := e.queue
	e.queue = nil
	delivered := 0
	for _, m := range queue {
		en := e.nodes[m.To]
		switch {
		case !slices.Contains(ids, m.To) || en.paused:
			e.queue = append(e.queue, m)
		case e.cuts[[2]NodeID{m.From, m.To}] || en.down:
			if !e.quiet {
				e.printf("drop %v", m)
			}
		default:
			delivered++
			if !e.quiet {
				e.printf("deliver %v", m)
			}
			if err := en.n.Step(m); err != nil {
				e.t.Fatal(err)
			}
			e.ready(m.To)
		}
	}
	return delivered
}

func (e *env) stabilize() {
	for range 100 {
		if e.deliver(e.ids) == 0 && !e.anyDeliverable() {
			return
		}
	}
	e.t.Fatal("stabilize: still delivering after 100 rounds")
}

func (e *env) anyDeliverable() bool {
	for _, m := range e.queue {
		if !e.nodes[m.To].paused {
			return true
		}
	}
	return false
}

// ready does the Ready contract for one node (persist, then send) and
// checks the safety invariants on the way.
func (e *env) ready(id NodeID) {
	en := e.nodes[id]
	if !en.n.HasReady() {
		return
	}
	// The node's own rules (a hard state never behind the one on disk, a
	// role that agrees with its vote): what the core checks after every
	// input with the invariants tag, run here in every build.
	en.n.checkInvariants()
	rd := en.n.Ready()
	if hs := rd.HardState; hs != nil {
		en.disk = *hs
		e.printf("%d persist %v", id, *hs)
	}
	for _, m := range rd.Messages {
		// Persist before send: a vote that leaves is already on disk.
		if (m.Type == MsgVoteResp && !m.Reject && en.disk != HardState{Epoch: m.Epoch, VotedFor: m.To}) ||
			(m.Type == MsgVote && en.disk != HardState{Epoch: m.Epoch, VotedFor: id}) {
			e.t.Fatalf("node %d sends %v with %v on disk", id, m, en.disk)
		}
		if !e.quiet {
			e.printf("  %v", m)
		}
		e.queue = append(e.queue, m)
	}
	if ss := rd.SoftState; ss != nil {
		// Quiet mode leaves out the probe rounds that change nothing.
		if !e.quiet || ss.Role != PreCandidate && *ss != en.shown {
			e.printf("%d %v", id, *ss)
			en.shown = *ss
		}
		if ss.Role == Controller {
			if w, ok := e.controllers[ss.Epoch]; ok && w != id {
				e.t.Fatalf("two controllers in epoch %d: %d and %d", ss.Epoch, w, id)
			}
			e.controllers[ss.Epoch] = id
		}
	}
	en.n.Advance(rd)
	e.checkActing()
}

// checkActing: with every clock ticking at one rate (catching up after a
// pause), at most one running node holds a lease at any moment.
func (e *env) checkActing() {
	if e.slowClock {
		return
	}
	var acting []NodeID
	for _, id := range e.ids {
		if en := e.nodes[id]; !en.down && !en.paused && en.n.Acting() {
			acting = append(acting, id)
		}
	}
	if len(acting) > 1 {
		e.t.Fatalf("%s: nodes %v act as controller at once\n%s", e.pos, acting, e.out.String())
	}
}
