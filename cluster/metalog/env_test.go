package metalog

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/internal/datadriven"
)

// TestDataDriven runs testdata/*.txt. Commands (ids are node ids; most
// default to every node):
//
//	add-nodes N [max-fetch= fetch-wait= seed=]
//	tick [N] [ids...] [verbose]   tick each node N times
//	timeout id                    tick one node until its election timer fires
//	deliver-msgs [ids...]         deliver the messages queued for ids, once
//	stabilize                     deliver until no message is left
//	run N [verbose] [until=]      N rounds of (tick every node; stabilize),
//	                              printing only role changes, truncations
//	                              and snapshots; until=ID:controller or
//	                              until=ID:last=I stops delivering as soon
//	                              as that holds (it must, within N)
//	propose id data...            the controller appends one entry per word
//	partition a b | cut a b [only=Kind] | isolate a | heal
//	hold a                        a's driver stops doing its Ready (a stall
//	                              inside fdatasync): nothing persisted, sent
//	crash a [keep=K]              kill a; with a held Ready, the first K of
//	                              its entries reached the disk, the rest not
//	restart a
//	compact a                     snapshot a's applied state, trim its log
//	status | log [ids...] | applied [ids...]
//	caught-up [ids...]            CaughtUp, and the applied and known
//	                              controller commit indexes
//	progress [ids...]             on a controller, its clock and each
//	                              follower's last fetch and caught-up ticks
//	                              and the applied index it reported
func TestDataDriven(t *testing.T) {
	datadriven.RunDir(t, "testdata", func(t *testing.T) func(*datadriven.Cmd) string {
		e := &env{t: t, nodes: map[election.NodeID]*envNode{}, cuts: map[[2]election.NodeID]string{},
			controllers: map[int32]election.NodeID{}}
		return e.handle
	})
}

type envNode struct {
	n       *Node
	cfg     Config
	disk    Stored
	down    bool
	held    bool
	applied []string // the applied state: the records' data, in order
	shown   election.SoftState
}

type env struct {
	t           *testing.T
	nodes       map[election.NodeID]*envNode
	ids         []election.NodeID
	queue       []Message
	cuts        map[[2]election.NodeID]string // {from, to}: dropped; "" all messages, else only that kind
	until       func() bool                   // run stops delivering as soon as it holds
	stopped     bool
	controllers map[int32]election.NodeID
	committed   []Entry // the one committed sequence every node's applied entries must follow
	out         strings.Builder
	quiet       bool
}

func (e *env) printf(format string, args ...any) { fmt.Fprintf(&e.out, format+"\n", args...) }

func (e *env) handle(c *datadriven.Cmd) string {
	e.out.Reset()
	e.quiet = slices.Contains(c.Args, "quiet")
	c.Args = slices.DeleteFunc(c.Args, func(a string) bool { return a == "quiet" })
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
		id := e.pick(c.IntArgs(e.t))[0]
		for i := 0; e.nodes[id].n.Status().Election.Soft.Role == election.Follower; i++ {
			if i == 1000 {
				e.t.Fatalf("%s: node %d still a follower after 1000 ticks", c.Pos, id)
			}
			e.tick(id)
		}
	case "deliver-msgs":
		e.deliver(e.pick(c.IntArgs(e.t)))
	case "stabilize":
		e.stabilize()
	case "run":
		e.quiet = !slices.Contains(c.Args, "verbose")
		ticks, _ := strconv.Atoi(c.Args[0])
		e.until, e.stopped = e.parseUntil(c), false
		for i := 0; i < ticks && !e.stopped; i++ {
			for _, id := range e.ids {
				e.tick(id)
			}
			e.stabilize()
		}
		if e.until != nil && !e.stopped {
			e.t.Fatalf("%s: until=%s did not happen in %d rounds", c.Pos, c.Str("until", ""), ticks)
		}
		e.until, e.stopped = nil, false
	case "propose":
		v, err := strconv.Atoi(c.Args[0])
		if err != nil {
			e.t.Fatalf("%s: propose: %v", c.Pos, err)
		}
		id := election.NodeID(v)
		for _, data := range c.Args[1:] {
			idx, err := e.nodes[id].n.Propose([]byte(data))
			if err != nil {
				e.printf("%d propose %s: %v", id, data, err)
				continue
			}
			e.printf("%d propose %s at %d", id, data, idx)
			e.ready(id)
		}
	case "partition":
		a := e.pick(c.IntArgs(e.t))
		e.cuts[[2]election.NodeID{a[0], a[1]}], e.cuts[[2]election.NodeID{a[1], a[0]}] = "", ""
	case "cut":
		a := e.pick(c.IntArgs(e.t))
		e.cuts[[2]election.NodeID{a[0], a[1]}] = c.Str("only", "")
	case "isolate":
		a := e.pick(c.IntArgs(e.t))[0]
		for _, b := range e.ids {
			e.cuts[[2]election.NodeID{a, b}], e.cuts[[2]election.NodeID{b, a}] = "", ""
		}
	case "heal":
		clear(e.cuts)
	case "hold":
		e.nodes[e.pick(c.IntArgs(e.t))[0]].held = true
	case "crash":
		e.crash(e.pick(c.IntArgs(e.t))[0], c.Int(e.t, "keep", 0))
	case "restart":
		e.restart(e.pick(c.IntArgs(e.t))[0])
	case "compact":
		id := e.pick(c.IntArgs(e.t))[0]
		en := e.nodes[id]
		st := en.n.Status()
		if err := en.n.Compact(st.Applied, []byte(strings.Join(en.applied, ","))); err != nil {
			e.printf("%d compact: %v", id, err)
		}
		e.ready(id)
	case "status":
		for _, id := range e.ids {
			e.printStatus(id)
		}
	case "log":
		for _, id := range e.pick(c.IntArgs(e.t)) {
			en := e.nodes[id]
			if en.down {
				e.printf("%d down; disk: %s", id, logString(en.disk.Snapshot, en.disk.Entries))
				continue
			}
			st := en.n.Status()
			e.printf("%d: %s", id, logString(Snapshot{Index: st.SnapshotIndex}, en.n.Entries(0)))
		}
	case "caught-up":
		for _, id := range e.pick(c.IntArgs(e.t)) {
			if e.nodes[id].down {
				e.printf("%d down", id)
				continue
			}
			st := e.nodes[id].n.Status()
			e.printf("%d caught-up=%t applied=%d controller-commit=%d", id, st.CaughtUp, st.Applied, st.ControllerCommit)
		}
	case "progress":
		for _, id := range e.pick(c.IntArgs(e.t)) {
			st := e.nodes[id].n.Status()
			if st.Followers == nil {
				e.printf("%d not controller", id)
				continue
			}
			line := fmt.Sprintf("%d now=%d", id, st.Now)
			for _, f := range slices.Sorted(maps.Keys(st.Followers)) {
				p := st.Followers[f]
				line += fmt.Sprintf(" %d:fetch=%d,caught-up=%d,applied=%d", f, p.LastFetchTick, p.LastCaughtUpTick, p.Applied)
			}
			e.printf("%s", line)
		}
	case "current":
		for _, id := range e.pick(c.IntArgs(e.t)) {
			e.printf("%d acting-and-current=%t", id, e.nodes[id].n.ActingAndCurrent())
		}
	case "applied":
		for _, id := range e.pick(c.IntArgs(e.t)) {
			e.printf("%d applied [%s]", id, strings.Join(e.nodes[id].applied, " "))
		}
	default:
		e.t.Fatalf("%s: unknown command %q", c.Pos, c.Name)
	}
	return e.out.String()
}

func logString(s Snapshot, ents []Entry) string {
	var parts []string
	if s.Index > 0 {
		parts = append(parts, fmt.Sprintf("[snapshot ..%d]", s.Index))
	}
	for _, ent := range ents {
		if ent.Type == EntryLeaderChange {
			parts = append(parts, fmt.Sprintf("%d/%d:LC", ent.Epoch, ent.Index))
		} else {
			parts = append(parts, fmt.Sprintf("%d/%d:%s", ent.Epoch, ent.Index, ent.Data))
		}
	}
	if len(parts) == 0 {
		return "empty"
	}
	return strings.Join(parts, " ")
}

func (e *env) printStatus(id election.NodeID) {
	en := e.nodes[id]
	if en.down {
		e.printf("%d down", id)
		return
	}
	st := en.n.Status()
	line := fmt.Sprintf("%d %v last=%d/%d commit=%d applied=%d", id, st.Election.Soft, st.LastEpoch, st.LastIndex, st.Commit, st.Applied)
	if st.SnapshotIndex > 0 {
		line += fmt.Sprintf(" snapshot=%d", st.SnapshotIndex)
	}
	if st.Match != nil {
		var m []string
		for _, v := range e.ids {
			if v != id {
				m = append(m, fmt.Sprintf("%d:%d", v, st.Match[v]))
			}
		}
		line += " match=" + strings.Join(m, ",")
	}
	if en.held {
		line += " held"
	}
	e.printf("%s", line)
}

func (e *env) addNodes(c *datadriven.Cmd) {
	count, _ := strconv.Atoi(c.Args[0])
	voters := make([]election.NodeID, count)
	for i := range voters {
		voters[i] = election.NodeID(i + 1)
	}
	for _, id := range voters {
		cfg := Config{
			Election: election.Config{ID: id, Voters: voters, HeartbeatTicks: 2, LeaseTicks: 6, ElectionTicks: 10,
				ElectionJitterTicks: 5, Seed: uint64(c.Int(e.t, "seed", 1))},
			FetchWaitTicks:        c.Int(e.t, "fetch-wait", 3),
			FetchTimeoutTicks:     c.Int(e.t, "fetch-wait", 3) + 3,
			MaxFetchEntries:       c.Int(e.t, "max-fetch", 8),
			MaxUncommittedEntries: 100,
		}
		en := &envNode{cfg: cfg, disk: Stored{Hard: HardState{Election: election.HardState{VotedFor: election.None}}}}
		e.nodes[id] = en
		e.ids = append(e.ids, id)
		e.start(id)
	}
}

func (e *env) start(id election.NodeID) {
	en := e.nodes[id]
	n, err := NewNode(en.cfg, en.disk)
	if err != nil {
		e.t.Fatalf("node %d: %v", id, err)
	}
	en.n, en.down, en.held = n, false, false
	en.applied = nil
	if d := en.disk.Snapshot.Data; len(d) > 0 {
		en.applied = strings.Split(string(d), ",")
	}
}

func (e *env) restart(id election.NodeID) {
	e.start(id)
	en := e.nodes[id]
	e.printf("%d restarted: %v, %s", id, en.disk.Hard, logString(en.disk.Snapshot, en.disk.Entries))
	e.ready(id)
}

// crash kills a node. If its driver held a Ready, the first keep entries
// of it reached the disk (written, not yet synced, and the page cache
// happened to flush them); nothing else of it did, and nothing was sent.
func (e *env) crash(id election.NodeID, keep int) {
	en := e.nodes[id]
	if en.held && en.n.HasReady() {
		rd := en.n.Ready()
		if rd.Snapshot != nil || rd.Truncate != nil {
			e.t.Fatalf("crash keep=: the held Ready of %d has a snapshot or a truncation", id)
		}
		ents := rd.Entries[:min(keep, len(rd.Entries))]
		en.disk.Entries = append(en.disk.Entries, ents...)
		e.printf("%d crash: %d of %d unsynced entries reached the disk", id, len(ents), len(rd.Entries))
	}
	en.n, en.down, en.held = nil, true, false
}

func (e *env) pick(args []int) []election.NodeID {
	if len(args) == 0 {
		return e.ids
	}
	out := make([]election.NodeID, len(args))
	for i, a := range args {
		if e.nodes[election.NodeID(a)] == nil {
			e.t.Fatalf("no node %d", a)
		}
		out[i] = election.NodeID(a)
	}
	return out
}

func (e *env) tick(id election.NodeID) {
	if en := e.nodes[id]; !en.down {
		en.n.Tick()
		e.ready(id)
	}
}

func (e *env) deliver(ids []election.NodeID) int {
	queue := e.queue
	e.queue = nil
	delivered := 0
	for _, m := range queue {
		en := e.nodes[m.To]
		switch {
		case !slices.Contains(ids, m.To) || en.held:
			e.queue = append(e.queue, m)
		case e.stopped:
			e.queue = append(e.queue, m)
		case e.dropped(m) || en.down:
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
			if e.until != nil && e.until() {
				e.stopped = true
			}
		}
	}
	if e.stopped {
		return 0
	}
	return delivered
}

func (e *env) dropped(m Message) bool {
	only, ok := e.cuts[[2]election.NodeID{m.From, m.To}]
	if !ok || only == "" {
		return ok
	}
	kind := map[MsgType]string{MsgFetch: "Fetch", MsgFetchResp: "FetchResp"}[m.Type]
	if m.Type == MsgElection {
		kind = m.Election.Type.String()
	}
	return kind == only
}

// parseUntil reads until=ID:controller or until=ID:last=I, a condition
// checked after every delivery.
func (e *env) parseUntil(c *datadriven.Cmd) func() bool {
	u := c.Str("until", "")
	if u == "" {
		return nil
	}
	ids, cond, _ := strings.Cut(u, ":")
	v, err := strconv.Atoi(ids)
	if err != nil || e.nodes[election.NodeID(v)] == nil {
		e.t.Fatalf("%s: until=%q: no such node", c.Pos, u)
	}
	en := e.nodes[election.NodeID(v)]
	switch {
	case cond == "controller":
		return func() bool { return !en.down && en.n.Acting() }
	case strings.HasPrefix(cond, "last="):
		want, err := strconv.ParseInt(strings.TrimPrefix(cond, "last="), 10, 64)
		if err != nil {
			e.t.Fatalf("%s: until=%q: %v", c.Pos, u, err)
		}
		return func() bool { return !en.down && en.n.Status().LastIndex == want }
	}
	e.t.Fatalf("%s: until=%q: want ID:controller or ID:last=N", c.Pos, u)
	return nil
}

func (e *env) stabilize() {
	for range 200 {
		if e.deliver(e.ids) == 0 {
			return
		}
	}
	e.t.Fatal("stabilize: still delivering after 200 rounds")
}

// ready does the Ready contract for one node (persist, then send, then
// apply) and checks on the way that every applied entry is the committed
// one at its index.
func (e *env) ready(id election.NodeID) {
	en := e.nodes[id]
	if en.held || !en.n.HasReady() {
		return
	}
	// The node's own rules (indexes in order, a commit index never below
	// the one on disk, a contiguous log): what the core checks after
	// every input with the invariants tag, run here in every build.
	en.n.checkInvariants()
	rd := en.n.Ready()
	d := &en.disk
	if s := rd.Snapshot; s != nil {
		if rd.TruncateAll {
			d.Entries = nil
		} else {
			d.Entries = slices.Clone(d.Entries[s.Index-d.Snapshot.Index:])
		}
		d.Snapshot = *s
		e.printf("%d snapshot %d/%d installed=%v", id, s.Epoch, s.Index, rd.RestoreSnapshot)
	}
	if t := rd.Truncate; t != nil {
		e.printf("%d truncate after %d: drop %s", id, *t, logString(Snapshot{}, d.Entries[*t-d.Snapshot.Index:]))
		d.Entries = d.Entries[:*t-d.Snapshot.Index]
	}
	if len(rd.Entries) > 0 {
		first := rd.Entries[0].Index
		if first != d.Snapshot.Index+int64(len(d.Entries))+1 {
			e.t.Fatalf("node %d: entries from %d do not follow the disk's %d", id, first, d.Snapshot.Index+int64(len(d.Entries)))
		}
		d.Entries = append(d.Entries, rd.Entries...)
		if !e.quiet {
			e.printf("%d append %s", id, logString(Snapshot{}, rd.Entries))
		}
	}
	if hs := rd.HardState; hs != nil {
		d.Hard = *hs
		if !e.quiet {
			e.printf("%d persist %v", id, *hs)
		}
	}
	for _, m := range rd.Messages {
		if !e.quiet {
			e.printf("  %v", m)
		}
		e.queue = append(e.queue, m)
	}
	if rd.RestoreSnapshot {
		en.applied = nil
		if len(rd.Snapshot.Data) > 0 {
			en.applied = strings.Split(string(rd.Snapshot.Data), ",")
		}
	}
	for _, ent := range rd.CommittedEntries {
		i := int(ent.Index) - 1
		switch {
		case i < len(e.committed) && !entryEqual(e.committed[i], ent):
			e.t.Fatalf("node %d applies %v, but %v was committed at %d", id, ent, e.committed[i], ent.Index)
		case i == len(e.committed):
			e.committed = append(e.committed, ent)
		case i > len(e.committed):
			e.t.Fatalf("node %d applies %v past the committed sequence's end %d", id, ent, len(e.committed))
		}
		if ent.Type == EntryRecords {
			en.applied = append(en.applied, string(ent.Data))
			if !e.quiet {
				e.printf("%d apply %d/%d:%s", id, ent.Epoch, ent.Index, ent.Data)
			}
		}
	}
	if ss := rd.SoftState; ss != nil {
		if !e.quiet || ss.Role != election.PreCandidate && *ss != en.shown {
			e.printf("%d %v", id, *ss)
			en.shown = *ss
		}
		if ss.Role == election.Controller {
			if w, ok := e.controllers[ss.Epoch]; ok && w != id {
				e.t.Fatalf("two controllers in epoch %d: %d and %d", ss.Epoch, w, id)
			}
			e.controllers[ss.Epoch] = id
		}
	}
	en.n.Advance(rd)
}

func entryEqual(a, b Entry) bool {
	return a.Index == b.Index && a.Epoch == b.Epoch && a.Type == b.Type && string(a.Data) == string(b.Data)
}
