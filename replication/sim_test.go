package replication

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/engine/producer"
	"github.com/wren-broker/wren/internal/vfs"
)

// The data-plane simulator: one partition replicated on three nodes, each
// a real Partition (the driver of the pure replica core) over a real
// engine.Log on its own crashable in-memory file system, with a simulated
// controller that commits leader and ISR changes through cluster's pure
// rules, a simulated network carrying Fetch, OffsetForLeaderEpoch,
// AlterISR and Produce, and idempotent acks=all producers. Time is a fake
// millisecond clock, there are no goroutines of the simulator's own, and
// every choice comes from the seed, so a failure replays exactly.
//
// The real wire handlers and fetcher goroutines are not used: the
// simulator does what serve.go and fetcher.go do, message by message, by
// calling the same Partition methods (followerFetch, appendAsFollower,
// truncateAsFollower, truncationStep, setFollowerHighWatermark).

const (
	simTopic       = "t"
	simNodes       = 3
	simSessionMs   = 60  // the controller fences a node it has not heard from for this long
	simLagMs       = 100 // replica.lag.time.max.ms
	simTickEveryMs = 10  // the leader looks for laggards this often
	simRequestMs   = 40  // a follower's request timeout
	simProduceMs   = 150 // a producer's request timeout
	simWaiterMs    = 120 // an acks=all append waits this long for the high watermark
	simAlterISRMs  = 200 // an AlterISR request's timeout
	simProducers   = 2
)

var simTP = engine.TopicPartition{Topic: simTopic, Partition: 0}

// replScenario is one fault schedule for the data-plane simulator: random
// faults at the given rates, plus scheduled events, for FaultMs simulated
// milliseconds; then every fault stops, every node restarts, and the
// partition must settle with every replica in the ISR. Scenarios are data.
type replScenario struct {
	Name    string
	MinISR  int
	FaultMs int
	Faults  replFaults
	Events  []replEvent
}

// replFaults are the random faults; rates are per mille per millisecond
// over the whole cluster unless said otherwise.
type replFaults struct {
	LossPct, DupPct int
	DelayMaxMs      int // a message takes 1 to DelayMaxMs ms; unequal delays reorder
	// CrashPerMille: a random node loses power now (or, for one crash in
	// three, inside one of its next few file system operations: between a
	// write and its fdatasync, in a checkpoint's rename); it is down for
	// up to DownMaxMs.
	CrashPerMille int
	DownMaxMs     int
	// PartitionPerMille: the links change, to healed or to a random set of
	// cut ones (node to node, some one-way, and node to controller).
	PartitionPerMille int
}

// replEventKind is a scheduled fault. Events run in order: each waits At
// ms after the one before it ran, and then until its condition holds.
type replEventKind string

const (
	evCrashLeader    replEventKind = "crash-leader"     // crash the leader, remember it in Slot
	evCrashNewLeader replEventKind = "crash-new-leader" // once a node other than Other leads, crash it (Slot)
	evRestart        replEventKind = "restart"          // restart the node in Slot
	evCrashAll       replEventKind = "crash-all"        // every node loses power at once
	evRestartAll     replEventKind = "restart-all"      // restart every node that is down
	evCutFollowers   replEventKind = "cut-followers"    // cut the leader (Slot) off its followers
	evISRIsLeader    replEventKind = "isr-is-leader"    // wait until the ISR is just the node in Slot
	evCrashSlot      replEventKind = "crash"            // crash the node in Slot
	evHeal           replEventKind = "heal"             // remove every cut link
)

type replEvent struct {
	At    int
	Kind  replEventKind
	Slot  string
	Other string
}

// simBug plants a known bug in the driver, so a test can show that the
// checker catches it.
type simBug int

const (
	bugNone simBug = iota
	// bugCountUnsyncedFollower: a follower's fetch offset counts toward
	// the high watermark before its append is durable (the follower
	// reports its log end offset ahead of its fdatasync).
	bugCountUnsyncedFollower
	// bugTruncateToHighWatermark: a follower truncates to its own high
	// watermark before asking the leader (KIP-101's first scenario).
	bugTruncateToHighWatermark
	// bugFlushInterval is not a bug but flush policy interval: appends
	// count when written, and a power loss drops what the page cache
	// held.
	bugFlushInterval
)

type simMsgKind int

const (
	msgFetch simMsgKind = iota
	msgFetchResp
	msgOffsetForEpoch
	msgOffsetForEpochResp
	msgAlterISR
	msgAlterISRResp
	msgProduce
	msgProduceResp
)

// simController is the node id of the controller in messages.
const simController int32 = 0

// simMsg is one message in flight. A request names the incarnation of
// the node that sent it, and so does its reply: a reply to a node that
// restarted since is dropped, as a closed connection would drop it.
type simMsg struct {
	kind     simMsgKind
	from, to int32
	// toInc is, on a reply, the incarnation of the node that asked.
	toInc       int
	deliverAt   int64
	order       uint64
	reqID       uint64
	epoch       int32 // CurrentLeaderEpoch of a request, or the follow epoch
	offset      int64 // Fetch: fetch offset
	askEpoch    int32 // OffsetForLeaderEpoch: the epoch asked about
	code        int16
	records     []byte
	hw, lso     int64
	endEpoch    int32
	endOffset   int64
	alter       ISRChange
	err         error
	pe          int32
	producer    int
	first, last int64
	duplicate   bool
}

type simNode struct {
	id   int32
	up   bool
	inc  int
	fs   *vfs.MemFS
	logs *engine.Manager
	p    *Partition
	// downUntil is when a crashed node restarts (-1: only by an event).
	downUntil int64
	// appliedPE is the partition epoch of the image last applied.
	appliedPE int32
	// Follower state, as fetcher.go's followed.
	leader    int32
	epoch     int32
	truncated bool
	inflight  uint64
	deadline  int64
	nextFetch int64
	// Leader state: appends written but not yet synced, and acks=all
	// waiters.
	syncs   []simSync
	waiters []simWaiter
	alters  []simAlter
	// lastHW is the high watermark this incarnation last reported.
	lastHW int64
	// pendingFollowerSync is, under bugCountUnsyncedFollower, the
	// follower append written but not yet synced.
	pendingFollowerSync *simMsg
	// durable is the durability wait the last leader append started
	// (partitionHooks.startDurable), taken by serveProduce.
	durable func()
}

type simAlter struct {
	reqID    uint64
	deadline int64
	pe       int32
	done     func(partitionEpoch int32, err error)
}

type simSync struct {
	at int64
	// durable is the append's wait for its fdatasync, which the
	// Partition starts at once (partitionHooks.startDurable) and the
	// simulator runs at; wait is then the rest of the acknowledgement.
	durable func()
	wait    func() error
	info    engine.AppendInfo
	req     *simMsg
}

type simWaiter struct {
	id       uint64
	ch       chan error
	deadline int64
	info     engine.AppendInfo
	req      *simMsg
}

type simProducer struct {
	pid      int64
	seq      int32
	values   [][]byte
	leader   int32
	inflight uint64
	deadline int64
	nextSend int64
	acked    []simAck
	retries  int
}

type simAck struct {
	seq         int32
	first, last int64
	at          int64
}

// modelBatch is one committed batch: below some high watermark a replica
// reported.
type modelBatch struct {
	base, last int64
	pid        int64
	seq        int32
	pos        int // byte position in model.bytes
}

type simModel struct {
	batches []modelBatch
	bytes   []byte
	end     int64
	bySeq   map[[2]int64]int64
}

type replSim struct {
	sc    replScenario
	seed  uint64
	rng   *rand.Rand
	bug   simBug
	now   int64
	nodes []*simNode
	msgs  []*simMsg
	order uint64
	reqID uint64
	trace []string
	// cut[a][b]: messages from a to b are lost; node 0 is the controller.
	cut [simNodes + 1][simNodes + 1]bool
	// Controller state: the image, and every one before it, by
	// partition epoch.
	img       cluster.PartitionImage
	history   []cluster.PartitionImage
	fenced    map[int32]bool
	lastHeard map[int32]int64
	producers []*simProducer
	model     simModel
	slots     map[string]int32
	nextEvent int
	eventAt   int64
	faults    bool
	stats     simStats
}

type simStats struct {
	crashes, acked, retries, leaderChanges, messages, truncations int
}

func newReplSim(sc replScenario, seed uint64, bug simBug) *replSim {
	s := &replSim{sc: sc, seed: seed, bug: bug, rng: rand.New(rand.NewPCG(seed, 0x5e1)),
		fenced: map[int32]bool{}, lastHeard: map[int32]int64{}, slots: map[string]int32{},
		model: simModel{bySeq: map[[2]int64]int64{}}}
	if s.sc.MinISR == 0 {
		s.sc.MinISR = 2
	}
	replicas := []int32{1, 2, 3}
	s.img = cluster.PartitionImage{Replicas: replicas, ISR: slices.Clone(replicas), Leader: 1, LeaderEpoch: 0, PartitionEpoch: 0}
	s.history = []cluster.PartitionImage{s.img}
	for i := range simNodes {
		n := &simNode{id: int32(i + 1), fs: vfs.NewMem(), appliedPE: -1, leader: -1, epoch: -1, downUntil: -1}
		s.nodes = append(s.nodes, n)
		s.lastHeard[n.id] = 0
		if err := s.start(n); err != nil {
			panic(err)
		}
	}
	for i := range simProducers {
		s.producers = append(s.producers, &simProducer{pid: int64(1000 * (i + 1)), leader: -1})
	}
	return s
}

func (s *replSim) logf(format string, args ...any) {
	s.trace = append(s.trace, fmt.Sprintf("%6d ", s.now)+fmt.Sprintf(format, args...))
	if len(s.trace) > 4000 {
		s.trace = s.trace[len(s.trace)-3000:]
	}
}

func (s *replSim) clock() time.Time { return time.UnixMilli(1_700_000_000_000 + s.now) }

func (s *replSim) options() engine.Options {
	o := engine.DefaultOptions()
	o.SegmentBytes = 4096
	o.IndexIntervalBytes = 256
	o.RetentionMs, o.RetentionBytes = -1, -1
	o.Now = s.clock
	if s.bug == bugFlushInterval {
		o.FlushPolicy = engine.FlushInterval
	}
	return o
}

// start opens a node's data directory (recovering it) and its replica.
func (s *replSim) start(n *simNode) error {
	cfg := engine.ManagerConfig{ClusterID: "sim", NodeID: n.id, Defaults: s.options()}
	logs, err := engine.OpenManager(n.fs, "/data", cfg)
	if err != nil {
		return fmt.Errorf("node %d: recovery: %w", n.id, err)
	}
	l, err := logs.GetOrCreateLog(simTP)
	if err != nil {
		return fmt.Errorf("node %d: open log: %w", n.id, err)
	}
	hws, err := logs.ReadHighWatermarks()
	if err != nil {
		return fmt.Errorf("node %d: replication-offset-checkpoint: %w", n.id, err)
	}
	hooks := &partitionHooks{nodeID: n.id, now: s.clock, alterISR: func(_ engine.TopicPartition, _ cluster.UUID, ch ISRChange, done func(int32, error)) {
		// As Manager.sendAlterISR: the answer, or a refusal at the
		// request's timeout.
		s.reqID++
		n.alters = append(n.alters, simAlter{reqID: s.reqID, deadline: s.now + simAlterISRMs, pe: ch.PartitionEpoch, done: done})
		s.request(n, &simMsg{kind: msgAlterISR, to: simController, reqID: s.reqID, alter: ch})
	}, startDurable: func(wait func()) { n.durable = wait }}
	n.logs, n.p = logs, newPartition(simTP, l, hooks, hws[simTP])
	n.up, n.inc = true, n.inc+1
	n.appliedPE, n.leader, n.epoch, n.truncated, n.inflight = -1, -1, -1, false, 0
	n.syncs, n.waiters, n.alters, n.pendingFollowerSync = nil, nil, nil, nil
	n.lastHW = n.p.HighWatermark()
	s.logf("node %d up (incarnation %d): leo=%d hw=%d epochs=%v", n.id, n.inc, l.LogEndOffset(), n.lastHW, l.LeaderEpochs())
	return nil
}

// crash takes power from a node: every byte it had not synced is lost
// (or, with keep, some of them survive and the last may be torn).
func (s *replSim) crash(n *simNode, keep bool, why string) {
	if !n.up {
		return
	}
	opts := vfs.CrashOptions{}
	if keep {
		opts = vfs.CrashOptions{Rand: rand.New(rand.NewPCG(s.rng.Uint64(), 7)), KeepUnsynced: s.rng.IntN(2) == 0, TearLastWrite: true}
	}
	n.fs = n.fs.Crash(opts)
	n.up = false
	n.logs, n.p = nil, nil
	s.stats.crashes++
	s.logf("node %d crashes (%s)", n.id, why)
}

// crashedInside reports a node whose file system crashed inside an
// operation (a scheduled SetCrashAfter), and takes it down.
func (s *replSim) crashedInside(n *simNode) bool {
	if n.up && n.fs.CrashState() != nil {
		s.crash(n, false, "inside a file system operation")
		return true
	}
	return !n.up
}

// send puts a message in flight. Ids: 1..simNodes the nodes, 0 the
// controller, -1-i producer i (outside the cluster: no cut links).
func (s *replSim) send(m *simMsg) {
	if m.from > 0 {
		n := s.nodes[m.from-1]
		if !n.up || n.fs.CrashState() != nil {
			return // a dead node sends nothing
		}
	}
	s.stats.messages++
	if s.faults && m.from >= 0 && m.to >= 0 && s.cut[m.from][m.to] {
		return
	}
	delay := int64(1)
	if s.faults {
		if s.rng.IntN(100) < s.sc.Faults.LossPct {
			return
		}
		if d := s.sc.Faults.DelayMaxMs; d > 1 {
			delay = 1 + s.rng.Int64N(int64(d))
		}
		if s.rng.IntN(100) < s.sc.Faults.DupPct {
			c := *m
			c.deliverAt, c.order = s.now+delay+s.rng.Int64N(5), s.nextOrder()
			s.msgs = append(s.msgs, &c)
		}
	}
	m.deliverAt, m.order = s.now+delay, s.nextOrder()
	s.msgs = append(s.msgs, m)
}

func (s *replSim) nextOrder() uint64 { s.order++; return s.order }

func (s *replSim) reply(req *simMsg, m *simMsg) {
	m.from, m.to, m.reqID, m.producer = req.to, req.from, req.reqID, req.producer
	m.epoch = req.epoch
	if req.from > 0 {
		m.toInc = req.toInc
	}
	s.send(m)
}

// request sends a node's request, naming its incarnation for the reply.
func (s *replSim) request(n *simNode, m *simMsg) {
	m.from, m.toInc = n.id, n.inc
	s.send(m)
}

// run runs the scenario; the error names the seed and carries the trace's
// tail.
func (s *replSim) run() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
		if err != nil {
			tail := s.trace
			if len(tail) > 80 {
				tail = tail[len(tail)-80:]
			}
			err = fmt.Errorf("seed %d, scenario %s, at %d ms: %w\ntrace (last %d lines):\n%s", s.seed, s.sc.Name, s.now, err, len(tail), strings.Join(tail, "\n"))
		}
	}()
	const warmupMs = 100
	end := int64(warmupMs + s.sc.FaultMs)
	for ; s.now < end; s.now++ {
		s.faults = s.now >= warmupMs
		if s.faults {
			if err := s.injectFaults(); err != nil {
				return err
			}
		}
		if err := s.step(true); err != nil {
			return err
		}
	}
	return s.settle()
}

// settle stops the faults, restarts every node, and waits (bounded) for
// the partition to be whole again: one leader, every replica in the ISR
// and caught up, every producer's last batch acknowledged. Then the final
// checks.
func (s *replSim) settle() error {
	s.faults = false
	s.cut = [simNodes + 1][simNodes + 1]bool{}
	s.logf("faults stop")
	for _, n := range s.nodes {
		if n.up {
			n.fs.SetCrashAfter(-1, vfs.CrashOptions{})
		}
		s.crashedInside(n)
		if !n.up {
			if err := s.start(n); err != nil {
				return err
			}
		}
	}
	const settleBoundMs = 3000
	deadline := s.now + settleBoundMs
	for ; s.now < deadline; s.now++ {
		if err := s.step(false); err != nil {
			return err
		}
		if s.settled() {
			s.logf("settled")
			return s.finalChecks()
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "not settled %d ms after the faults stopped: image %+v", settleBoundMs, s.img)
	for _, n := range s.nodes {
		fmt.Fprintf(&b, "\n node %d up=%v leo=%d hw=%d", n.id, n.up, n.p.Log().LogEndOffset(), n.p.HighWatermark())
	}
	for _, pr := range s.producers {
		fmt.Fprintf(&b, "\n producer %d seq %d inflight %d leader %d", pr.pid, pr.seq, pr.inflight, pr.leader)
	}
	return errors.New(b.String())
}

func (s *replSim) settled() bool {
	if s.img.Leader == cluster.NoLeader || len(s.img.ISR) != simNodes {
		return false
	}
	leader := s.nodes[s.img.Leader-1]
	leo := leader.p.Log().LogEndOffset()
	for _, n := range s.nodes {
		if n.appliedPE != s.img.PartitionEpoch || n.p.Log().LogEndOffset() != leo || n.p.HighWatermark() != leo {
			return false
		}
	}
	for _, pr := range s.producers {
		if pr.values != nil {
			return false
		}
	}
	return true
}

func (s *replSim) injectFaults() error {
	f := s.sc.Faults
	if f.CrashPerMille > 0 && s.rng.IntN(1000) < f.CrashPerMille {
		n := s.nodes[s.rng.IntN(simNodes)]
		if n.up {
			n.downUntil = s.now + 1 + s.rng.Int64N(int64(max(f.DownMaxMs, 1)))
			if s.rng.IntN(3) == 0 {
				// Inside one of its next operations: maybe between a
				// write and its fdatasync.
				n.fs.SetCrashAfter(s.rng.Int64N(6), vfs.CrashOptions{})
			} else {
				s.crash(n, s.rng.IntN(2) == 0, "power loss")
			}
		}
	}
	if f.PartitionPerMille > 0 && s.rng.IntN(1000) < f.PartitionPerMille {
		s.cut = [simNodes + 1][simNodes + 1]bool{}
		if s.rng.IntN(3) > 0 {
			for a := 0; a <= simNodes; a++ {
				for b := 0; b <= simNodes; b++ {
					if a != b && s.rng.IntN(6) == 0 {
						s.cut[a][b] = true
						if s.rng.IntN(2) == 0 {
							s.cut[b][a] = true
						}
					}
				}
			}
		}
		s.logf("links cut: %v", s.cut)
	}
	for _, n := range s.nodes {
		if !n.up && n.downUntil >= 0 && s.now >= n.downUntil {
			if err := s.start(n); err != nil {
				return err
			}
		}
	}
	return s.runEvents()
}

func (s *replSim) node(slot string) *simNode {
	id, ok := s.slots[slot]
	if !ok {
		panic(fmt.Sprintf("scenario %s: slot %q is not set", s.sc.Name, slot))
	}
	return s.nodes[id-1]
}

// leadingNode is the node the image names leader, if it runs and leads at
// that epoch.
func (s *replSim) leadingNode() *simNode {
	if s.img.Leader == cluster.NoLeader {
		return nil
	}
	n := s.nodes[s.img.Leader-1]
	if !n.up {
		return nil
	}
	if lead, e := n.p.Leader(); !lead || e != s.img.LeaderEpoch {
		return nil
	}
	return n
}

func (s *replSim) runEvents() error {
	for s.nextEvent < len(s.sc.Events) {
		ev := s.sc.Events[s.nextEvent]
		if s.now < s.eventAt+int64(ev.At) {
			return nil
		}
		switch ev.Kind {
		case evCrashLeader:
			n := s.leadingNode()
			if n == nil {
				return nil
			}
			s.slots[ev.Slot] = n.id
			n.downUntil = -1
			s.crash(n, false, "scheduled: "+string(ev.Kind))
		case evCrashNewLeader:
			n := s.leadingNode()
			if n == nil || n.id == s.slots[ev.Other] {
				return nil
			}
			s.slots[ev.Slot] = n.id
			n.downUntil = -1
			s.crash(n, false, "scheduled: "+string(ev.Kind))
		case evCrashSlot:
			n := s.node(ev.Slot)
			n.downUntil = -1
			s.crash(n, false, "scheduled")
		case evRestart:
			if n := s.node(ev.Slot); !n.up {
				if err := s.start(n); err != nil {
					return err
				}
			}
		case evCrashAll:
			for _, n := range s.nodes {
				n.downUntil = -1
				s.crash(n, false, "scheduled: all nodes lose power")
			}
		case evRestartAll:
			for _, n := range s.nodes {
				if !n.up {
					if err := s.start(n); err != nil {
						return err
					}
				}
			}
		case evCutFollowers:
			n := s.leadingNode()
			if n == nil {
				return nil
			}
			s.slots[ev.Slot] = n.id
			for _, o := range s.nodes {
				if o != n {
					s.cut[n.id][o.id], s.cut[o.id][n.id] = true, true
				}
			}
			s.logf("scheduled: leader %d cut off its followers", n.id)
		case evISRIsLeader:
			if !slices.Equal(s.img.ISR, []int32{s.slots[ev.Slot]}) {
				return nil
			}
			s.logf("scheduled: ISR is %v", s.img.ISR)
		case evHeal:
			s.cut = [simNodes + 1][simNodes + 1]bool{}
			s.logf("scheduled: heal")
		}
		s.nextEvent++
		s.eventAt = s.now
	}
	return nil
}

// step is one millisecond: deliver due messages, run the controller, the
// nodes and the producers, then check the invariants.
func (s *replSim) step(faults bool) error {
	// Deliver what is due, in deliver order.
	var due, rest []*simMsg
	for _, m := range s.msgs {
		if m.deliverAt <= s.now {
			due = append(due, m)
		} else {
			rest = append(rest, m)
		}
	}
	s.msgs = rest
	slices.SortFunc(due, func(a, b *simMsg) int {
		if a.deliverAt != b.deliverAt {
			return int(a.deliverAt - b.deliverAt)
		}
		return int(a.order - b.order)
	})
	for _, m := range due {
		if err := s.deliver(m); err != nil {
			return err
		}
	}
	s.controller()
	for _, n := range s.nodes {
		if s.crashedInside(n) {
			continue
		}
		if err := s.nodeStep(n); err != nil {
			return err
		}
		s.crashedInside(n)
	}
	for i, pr := range s.producers {
		s.producerStep(i, pr, faults)
	}
	for _, n := range s.nodes {
		s.crashedInside(n)
	}
	return s.check()
}

func (s *replSim) liveCtx() cluster.ElectionContext {
	return cluster.ElectionContext{Live: func(b int32) bool { return !s.fenced[b] }, MinISR: s.sc.MinISR}
}

func (s *replSim) commitChange(ch cluster.PartitionChange, why string) {
	if !ch.Changed() {
		return
	}
	if ch.After.Leader != s.img.Leader {
		s.stats.leaderChanges++
	}
	s.img = ch.After
	if int(s.img.PartitionEpoch) != len(s.history) {
		panic(fmt.Sprintf("partition epoch %d after %d images", s.img.PartitionEpoch, len(s.history)))
	}
	s.history = append(s.history, s.img)
	s.logf("controller: %s: leader %d epoch %d isr %v elr %v pe %d", why, s.img.Leader, s.img.LeaderEpoch, s.img.ISR, s.img.ELR, s.img.PartitionEpoch)
}

// controller is the simulated controller: heartbeats (a running node that
// reaches it), fencing after the session timeout, unfencing a node heard
// again, as cluster/quorum_mode.go does; the partition changes come from
// cluster's pure rules.
func (s *replSim) controller() {
	for _, n := range s.nodes {
		if n.up && !(s.faults && s.cut[n.id][simController]) {
			s.lastHeard[n.id] = s.now
		}
		switch {
		case !s.fenced[n.id] && s.now-s.lastHeard[n.id] > simSessionMs:
			s.fenced[n.id] = true
			s.commitChange(cluster.RemoveFromISR(s.img, n.id, s.liveCtx()), fmt.Sprintf("fence %d", n.id))
		case s.fenced[n.id] && s.lastHeard[n.id] == s.now:
			s.fenced[n.id] = false
			if s.img.Leader == cluster.NoLeader {
				s.commitChange(cluster.ElectLeader(s.img, cluster.ElectOnline, s.liveCtx()), fmt.Sprintf("unfence %d", n.id))
			} else {
				s.logf("controller: unfence %d", n.id)
			}
		}
	}
}

func (s *replSim) deliver(m *simMsg) error {
	if m.to == simController {
		if m.kind != msgAlterISR {
			return nil
		}
		a := m.alter
		ch, err := cluster.AlterISR(s.img, m.from, a.LeaderEpoch, a.PartitionEpoch, a.ISR, s.liveCtx())
		r := &simMsg{kind: msgAlterISRResp, err: err}
		if err == nil {
			s.commitChange(ch, fmt.Sprintf("alter-isr from %d %v", m.from, a.ISR))
		} else {
			s.logf("controller: alter-isr from %d %v refused: %v", m.from, a.ISR, err)
		}
		r.pe = s.img.PartitionEpoch
		s.reply(m, r)
		return nil
	}
	if m.to < 0 {
		return s.producerDeliver(m)
	}
	n := s.nodes[m.to-1]
	if !n.up || n.fs.CrashState() != nil {
		return nil
	}
	isReply := m.kind == msgFetchResp || m.kind == msgOffsetForEpochResp || m.kind == msgAlterISRResp
	if isReply && m.toInc != n.inc {
		return nil // for an earlier incarnation of this node
	}
	switch m.kind {
	case msgFetch:
		s.serveFetch(n, m)
	case msgOffsetForEpoch:
		r := &simMsg{kind: msgOffsetForEpochResp, endEpoch: -1, endOffset: -1}
		if code := n.p.checkLeader(m.epoch); code != 0 {
			r.code = code
		} else {
			r.endEpoch, r.endOffset = n.p.log.EndOffsetForEpoch(m.askEpoch)
		}
		s.reply(m, r)
	case msgAlterISRResp:
		if i := slices.IndexFunc(n.alters, func(a simAlter) bool { return a.reqID == m.reqID }); i >= 0 {
			a := n.alters[i]
			n.alters = slices.Delete(n.alters, i, i+1)
			a.done(m.pe, m.err)
		}
	case msgProduce:
		s.serveProduce(n, m)
	case msgFetchResp:
		return s.handleFetchResp(n, m)
	case msgOffsetForEpochResp:
		return s.handleOffsetForEpochResp(n, m)
	}
	return nil
}

// serveFetch is serve.go's serveFetch and readForFollower, without the
// long poll.
func (s *replSim) serveFetch(n *simNode, m *simMsg) {
	r := &simMsg{kind: msgFetchResp, hw: -1, lso: -1}
	r.code = n.p.followerFetch(m.from, m.offset, m.epoch, nil)
	l := n.p.Log()
	r.hw, r.lso = n.p.HighWatermark(), l.LogStartOffset()
	if r.code == 0 {
		b, err := l.ReadBatches(m.offset, 1500, n.p.readLimitForFollower())
		if err != nil {
			r.code = simErrorCode(err)
		} else {
			r.records = b
		}
	}
	r.offset = m.offset
	s.reply(m, r)
}

// handleFetchResp is fetcher.go's handlePartition.
func (s *replSim) handleFetchResp(n *simNode, m *simMsg) error {
	if m.reqID != n.inflight {
		return nil
	}
	n.inflight = 0
	switch err := kerr.ErrorForCode(m.code); {
	case err == nil:
	case errors.Is(err, kerr.OffsetOutOfRange):
		if n.p.log.LogEndOffset() < m.lso {
			if err := n.p.truncateFullyAsFollower(n.epoch, m.lso); err != nil {
				n.nextFetch = s.now + 5
			}
			return nil
		}
		n.truncated = false
		return nil
	default:
		n.nextFetch = s.now + 5
		return nil
	}
	if len(m.records) > 0 {
		if s.bug == bugCountUnsyncedFollower {
			return s.appendUnsynced(n, m)
		}
		if err := n.p.appendAsFollower(n.epoch, m.records); err != nil {
			if errors.Is(err, engine.ErrInvalidOffsets) {
				n.truncated = false
			} else {
				n.nextFetch = s.now + 5
			}
			return nil
		}
	} else {
		n.nextFetch = s.now + 3 // the long poll this simulation skips
	}
	n.p.setFollowerHighWatermark(m.hw)
	// A failure is only logged by the fetcher, which fetches on.
	n.p.maybeIncrementLogStartOffset(n.epoch, m.lso)
	return nil
}

// appendUnsynced is the planted bug: the follower writes without its
// fdatasync and fetches again at once, so its unsynced log end offset
// counts toward the leader's high watermark; it syncs a few ms later.
func (s *replSim) appendUnsynced(n *simNode, m *simMsg) error {
	if lead, e := n.p.Leader(); lead || e != n.epoch {
		return nil
	}
	o := n.p.log.Options()
	o.FlushPolicy = engine.FlushInterval
	if err := n.p.log.UpdateOptions(o); err != nil {
		return err
	}
	_, err := n.p.log.AppendAsFollower(m.records)
	o.FlushPolicy = engine.FlushAck
	if uerr := n.p.log.UpdateOptions(o); uerr != nil {
		return uerr
	}
	if err != nil {
		n.truncated = !errors.Is(err, engine.ErrInvalidOffsets)
		return nil
	}
	n.pendingFollowerSync = m
	n.p.setFollowerHighWatermark(m.hw)
	return nil
}

// handleOffsetForEpochResp is one round of fetcher.go's truncate.
func (s *replSim) handleOffsetForEpochResp(n *simNode, m *simMsg) error {
	if m.reqID != n.inflight {
		return nil
	}
	n.inflight = 0
	if m.code != 0 {
		n.nextFetch = s.now + 5
		return nil
	}
	l := n.p.log
	st := truncationStep(l.LeaderEpochs(), l.LogEndOffset(), m.endEpoch, m.endOffset)
	if st.TruncateTo < l.LogEndOffset() {
		s.stats.truncations++
		s.logf("node %d truncates %d -> %d (leader %d answered epoch %d end %d)", n.id, l.LogEndOffset(), st.TruncateTo, m.from, m.endEpoch, m.endOffset)
	}
	if err := n.p.truncateAsFollower(n.epoch, st.TruncateTo); err != nil {
		n.nextFetch = s.now + 5
		return nil
	}
	if st.Done {
		n.truncated = true
	}
	return nil
}

// applyImage is Manager.ApplyImage for the one partition (a replica that
// stops leading does so before it takes the image's ISR), and the
// fetcher's follow.
func (s *replSim) applyImage(n *simNode, im cluster.PartitionImage) {
	lead := im.Leader == n.id
	var err error
	if !lead {
		err = n.p.becomeLeaderOrFollower(false, im.LeaderEpoch)
	}
	n.p.setMetadata(im.PartitionEpoch, im.Replicas, im.ISR, s.sc.MinISR, simLagMs)
	if lead {
		err = n.p.becomeLeaderOrFollower(true, im.LeaderEpoch)
	}
	n.appliedPE = im.PartitionEpoch
	if err != nil {
		if !errors.Is(err, ErrStaleLeaderEpoch) {
			s.logf("node %d: becomeLeaderOrFollower: %v", n.id, err)
		}
		return
	}
	if n.leader != im.Leader || n.epoch != im.LeaderEpoch {
		n.leader, n.epoch, n.truncated, n.inflight = im.Leader, im.LeaderEpoch, false, 0
		if im.Leader == n.id {
			n.leader = -1
			s.logf("node %d leads at epoch %d (partition epoch %d): leo=%d hw=%d", n.id, im.LeaderEpoch, im.PartitionEpoch, n.p.log.LogEndOffset(), n.p.HighWatermark())
			// Only the current image's leader must hold everything
			// committed; an older one replayed late may not.
			if im.PartitionEpoch != s.img.PartitionEpoch {
				return
			}
			if err := s.checkLeaderHoldsCommitted(n); err != nil {
				panic(err.Error())
			}
		}
	}
}

func (s *replSim) nodeStep(n *simNode) error {
	// Metadata reaches a node late, and it applies the images in order,
	// or several at once (the latest); a restarted node starts from the
	// latest.
	if n.appliedPE != s.img.PartitionEpoch && !(s.faults && s.cut[simController][n.id]) && s.rng.IntN(4) == 0 {
		im := s.img
		if n.appliedPE >= 0 && s.rng.IntN(2) == 0 {
			im = s.history[n.appliedPE+1]
		}
		s.applyImage(n, im)
	}
	if n.fs.CrashState() != nil {
		return nil
	}
	// The planted bug's follower fdatasync, late.
	if m := n.pendingFollowerSync; m != nil && s.rng.IntN(20) == 0 {
		n.pendingFollowerSync = nil
		if err := n.p.log.Flush(); err != nil {
			return nil
		}
	}
	// Leader: syncs due, then waiters.
	var keep []simSync
	for _, sy := range n.syncs {
		if sy.at > s.now {
			keep = append(keep, sy)
			continue
		}
		sy.durable()
		err := sy.wait()
		switch {
		case err == nil:
			if err := s.ack(n, sy.req, sy.info); err != nil {
				return err
			}
		case errors.Is(err, kerr.RequestTimedOut):
			id, ch := simWaitHighWatermark(n.p, sy.info.LastOffset+1)
			n.waiters = append(n.waiters, simWaiter{id: id, ch: ch, deadline: s.now + simWaiterMs, info: sy.info, req: sy.req})
		default:
			s.reply(sy.req, &simMsg{kind: msgProduceResp, code: simErrorCode(err)})
		}
	}
	n.syncs = keep
	var wkeep []simWaiter
	for _, w := range n.waiters {
		select {
		case err := <-w.ch:
			if err != nil {
				s.reply(w.req, &simMsg{kind: msgProduceResp, code: simErrorCode(err)})
			} else if err := s.ack(n, w.req, w.info); err != nil {
				return err
			}
			continue
		default:
		}
		if s.now >= w.deadline {
			n.p.mu.Lock()
			delete(n.p.waitsLocked().waiters, w.id)
			n.p.core.removeWaiter(w.id)
			n.p.mu.Unlock()
			s.reply(w.req, &simMsg{kind: msgProduceResp, code: kerr.RequestTimedOut.Code})
			continue
		}
		wkeep = append(wkeep, w)
	}
	n.waiters = wkeep
	for len(n.alters) > 0 && s.now >= n.alters[0].deadline {
		a := n.alters[0]
		n.alters = n.alters[1:]
		a.done(a.pe, fmt.Errorf("%w: no answer from the controller", kerr.RequestTimedOut))
	}
	if s.now%simTickEveryMs == int64(n.id) {
		n.p.tick()
	}
	if s.now%25 == int64(n.id) {
		// The replication Manager's periodic checkpoints.
		_ = n.logs.WriteHighWatermarks(map[engine.TopicPartition]int64{simTP: n.p.HighWatermark()})
		_ = n.logs.Checkpoint()
	}
	// Follower: one request at a time, as the fetcher.
	if n.leader <= 0 || n.inflight != 0 && s.now < n.deadline || s.now < n.nextFetch {
		return nil
	}
	s.reqID++
	n.inflight, n.deadline = s.reqID, s.now+simRequestMs
	if !n.truncated {
		if s.bug == bugTruncateToHighWatermark {
			if hw := n.p.HighWatermark(); hw < n.p.log.LogEndOffset() {
				_ = n.p.truncateAsFollower(n.epoch, hw)
			}
		}
		epochs := n.p.log.LeaderEpochs()
		if len(epochs) == 0 {
			n.truncated, n.inflight = true, 0
			return nil
		}
		s.request(n, &simMsg{kind: msgOffsetForEpoch, to: n.leader, reqID: s.reqID, epoch: n.epoch, askEpoch: epochs[len(epochs)-1].Epoch})
		return nil
	}
	s.request(n, &simMsg{kind: msgFetch, to: n.leader, reqID: s.reqID, epoch: n.epoch, offset: n.p.log.LogEndOffset()})
	return nil
}

// simWaitHighWatermark is the first half of Partition.waitHighWatermark:
// it registers an acks=all waiter, whose answer the simulator polls
// instead of blocking on it.
func simWaitHighWatermark(p *Partition, offset int64) (uint64, chan error) {
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
	return id, ch
}

// serveProduce appends a producer's batch as Partition.AppendAsLeader
// does; the fdatasync (and with it the acknowledgement) comes a few ms
// later, so a crash can fall between the write and the sync.
func (s *replSim) serveProduce(n *simNode, m *simMsg) {
	n.durable = nil
	info, wait, err := n.p.AppendAsLeaderTimeout(slices.Clone(m.records), -1, 0)
	if err != nil {
		s.reply(m, &simMsg{kind: msgProduceResp, code: simErrorCode(err)})
		return
	}
	if n.durable == nil {
		panic("simulator: an append started no wait for its durability")
	}
	s.logf("node %d appends producer %d seq at %d-%d dup=%v", n.id, m.producer, info.FirstOffset, info.LastOffset, info.Duplicate)
	n.syncs = append(n.syncs, simSync{at: s.now + s.rng.Int64N(4), durable: n.durable, wait: wait, info: info, req: m})
}

func (s *replSim) producerStep(i int, pr *simProducer, faults bool) {
	if pr.inflight != 0 && s.now < pr.deadline || s.now < pr.nextSend {
		return
	}
	if pr.inflight != 0 {
		s.logf("producer %d: seq %d timed out", pr.pid, pr.seq)
		pr.retries++
		s.stats.retries++
		pr.leader = -1
	}
	if pr.values == nil {
		if !faults {
			return // no new batches once the faults stop; retries go on
		}
		k := 1 + s.rng.IntN(4)
		for r := range k {
			pr.values = append(pr.values, fmt.Appendf(nil, "p%d-s%d-r%d", pr.pid, pr.seq, r))
		}
	}
	if pr.leader <= 0 {
		pr.leader = s.img.Leader
	}
	if pr.leader <= 0 {
		pr.nextSend = s.now + 5
		return
	}
	b := batch.NewBuilder(batch.CompressionNone)
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = pr.pid, 0, pr.seq
	for r, v := range pr.values {
		b.Append(batch.Record{Timestamp: int64(pr.seq)*10 + int64(r), Value: v})
	}
	raw, err := b.Build()
	if err != nil {
		panic(err)
	}
	s.reqID++
	pr.inflight, pr.deadline = s.reqID, s.now+simProduceMs
	s.send(&simMsg{kind: msgProduce, from: -1 - int32(i), to: pr.leader, reqID: s.reqID, records: raw, producer: i})
}

func (s *replSim) producerDeliver(m *simMsg) error {
	pr := s.producers[-1-m.to]
	if m.reqID != pr.inflight {
		return nil
	}
	pr.inflight = 0
	if m.code != 0 {
		err := kerr.ErrorForCode(m.code)
		if errors.Is(err, kerr.OutOfOrderSequenceNumber) || errors.Is(err, kerr.UnknownProducerID) {
			return fmt.Errorf("producer %d seq %d: %v from node %d: the leader lost the producer's state", pr.pid, pr.seq, err, m.from)
		}
		pr.leader, pr.nextSend = -1, s.now+3
		pr.retries++
		s.stats.retries++
		return nil
	}
	if m.last-m.first+1 != int64(len(pr.values)) {
		return fmt.Errorf("producer %d seq %d: acknowledged at %d-%d for %d records", pr.pid, pr.seq, m.first, m.last, len(pr.values))
	}
	pr.acked = append(pr.acked, simAck{seq: pr.seq, first: m.first, last: m.last, at: s.now})
	s.stats.acked++
	s.logf("producer %d: seq %d acknowledged at %d-%d by node %d (duplicate=%v)", pr.pid, pr.seq, m.first, m.last, m.from, m.duplicate)
	pr.seq += int32(len(pr.values))
	pr.values = nil
	return nil
}

// observeHighWatermarks extends the committed model with what any
// running replica reports below its high watermark, and checks that no
// replica's high watermark goes back while it runs.
func (s *replSim) observeHighWatermarks() error {
	for _, n := range s.nodes {
		if err := s.observe(n); err != nil {
			return err
		}
	}
	return nil
}

// observe is observeHighWatermarks for one node. A leader calls it too
// just before it acknowledges, since it may crash before the step ends.
func (s *replSim) observe(n *simNode) error {
	if !n.up || n.fs.CrashState() != nil {
		return nil
	}
	hw, leo := n.p.HighWatermark(), n.p.log.LogEndOffset()
	if hw < n.lastHW {
		return fmt.Errorf("node %d: high watermark went back from %d to %d", n.id, n.lastHW, hw)
	}
	if hw > leo {
		return fmt.Errorf("node %d: high watermark %d above its log end offset %d", n.id, hw, leo)
	}
	n.lastHW = hw
	if hw <= s.model.end {
		return nil
	}
	b, err := simReadBatches(n.p.log, s.model.end, hw)
	if err != nil {
		if n.fs.CrashState() != nil {
			return nil
		}
		return fmt.Errorf("node %d: read [%d, %d): %w", n.id, s.model.end, hw, err)
	}
	for len(b) > 0 && s.model.end < hw {
		h, err := batch.ParseHeader(b)
		if err != nil {
			return fmt.Errorf("node %d: committed batch at %d: %w", n.id, s.model.end, err)
		}
		if h.BaseOffset != s.model.end {
			return fmt.Errorf("node %d: committed batch at %d, want %d", n.id, h.BaseOffset, s.model.end)
		}
		size := h.Size()
		key := [2]int64{h.ProducerID, int64(h.BaseSequence)}
		if at, ok := s.model.bySeq[key]; ok {
			return fmt.Errorf("duplicate: producer %d seq %d committed at %d and again at %d (node %d)", h.ProducerID, h.BaseSequence, at, h.BaseOffset, n.id)
		}
		s.model.bySeq[key] = h.BaseOffset
		last := h.BaseOffset + int64(h.LastOffsetDelta)
		s.model.batches = append(s.model.batches, modelBatch{base: h.BaseOffset, last: last, pid: h.ProducerID, seq: h.BaseSequence, pos: len(s.model.bytes)})
		s.model.bytes = append(s.model.bytes, b[:size]...)
		s.model.end = last + 1
		b = b[size:]
	}
	if s.model.end != hw {
		return fmt.Errorf("node %d: high watermark %d, but its batches below it end at %d", n.id, hw, s.model.end)
	}
	s.logf("committed to %d (reported by node %d)", hw, n.id)
	return nil
}

// ack answers a producer's acks=all request as committed.
func (s *replSim) ack(n *simNode, req *simMsg, info engine.AppendInfo) error {
	if err := s.observe(n); err != nil {
		return err
	}
	s.reply(req, &simMsg{kind: msgProduceResp, first: info.FirstOffset, last: info.LastOffset, duplicate: info.Duplicate})
	return nil
}

// modelPos is the byte position of offset in the committed model, which
// must be a batch boundary.
func (s *replSim) modelPos(offset int64) (int, bool) {
	if offset == s.model.end {
		return len(s.model.bytes), true
	}
	i, ok := slices.BinarySearchFunc(s.model.batches, offset, func(b modelBatch, o int64) int {
		switch {
		case b.base < o:
			return -1
		case b.base > o:
			return 1
		}
		return 0
	})
	if !ok {
		return 0, false
	}
	return s.model.batches[i].pos, true
}

// checkPrefix checks that a node's log holds exactly the committed bytes
// below upTo.
func (s *replSim) checkPrefix(n *simNode, upTo int64, what string) error {
	if upTo <= 0 {
		return nil
	}
	pos, ok := s.modelPos(upTo)
	if !ok {
		return fmt.Errorf("node %d: %s %d falls inside a committed batch", n.id, what, upTo)
	}
	if leo := n.p.log.LogEndOffset(); leo < upTo {
		return fmt.Errorf("node %d: log ends at %d, below its %s %d: committed records lost", n.id, leo, what, upTo)
	}
	b, err := simReadBatches(n.p.log, 0, upTo)
	if err != nil {
		return fmt.Errorf("node %d: read below %s %d: %w", n.id, what, upTo, err)
	}
	if !bytes.Equal(b, s.model.bytes[:pos]) {
		first := 0
		for first < min(len(b), pos) && b[first] == s.model.bytes[first] {
			first++
		}
		return fmt.Errorf("node %d: log differs from the committed records below its %s %d (first byte differing at position %d of %d/%d)", n.id, what, upTo, first, len(b), pos)
	}
	return nil
}

// checkLeaderHoldsCommitted: a leader the controller elected holds every
// committed record.
func (s *replSim) checkLeaderHoldsCommitted(n *simNode) error {
	return s.checkPrefix(n, s.model.end, "committed end (as the elected leader)")
}

func (s *replSim) check() error {
	if err := s.observeHighWatermarks(); err != nil {
		return err
	}
	for _, pr := range s.producers {
		for _, a := range pr.acked {
			if a.at != s.now {
				continue
			}
			if a.last >= s.model.end {
				return fmt.Errorf("producer %d seq %d acknowledged at %d-%d above the committed end %d", pr.pid, a.seq, a.first, a.last, s.model.end)
			}
			at, ok := s.model.bySeq[[2]int64{pr.pid, int64(a.seq)}]
			if !ok || at != a.first {
				return fmt.Errorf("producer %d seq %d acknowledged at %d, committed at %d (found %v)", pr.pid, a.seq, a.first, at, ok)
			}
		}
	}
	full := s.now%20 == 0
	for _, n := range s.nodes {
		if !n.up || n.fs.CrashState() != nil {
			continue
		}
		if full {
			if err := s.checkPrefix(n, n.p.HighWatermark(), "high watermark"); err != nil {
				return err
			}
		}
		if lead, e := n.p.Leader(); full && lead && e == s.img.LeaderEpoch && s.img.Leader == n.id {
			if err := s.checkLeaderHoldsCommitted(n); err != nil {
				return err
			}
		}
	}
	return nil
}

// finalChecks, once settled: every replica holds exactly the committed
// log, every acknowledged batch once at its offsets, producer state and
// leader epochs rebuilt to agree with the log.
func (s *replSim) finalChecks() error {
	if err := s.observeHighWatermarks(); err != nil {
		return err
	}
	for _, n := range s.nodes {
		if err := s.checkPrefix(n, s.model.end, "log end (settled)"); err != nil {
			return err
		}
		if leo := n.p.log.LogEndOffset(); leo != s.model.end {
			return fmt.Errorf("node %d: settled log ends at %d, committed end %d", n.id, leo, s.model.end)
		}
		if err := s.checkEpochsAndProducers(n); err != nil {
			return err
		}
	}
	for _, pr := range s.producers {
		for _, a := range pr.acked {
			at, ok := s.model.bySeq[[2]int64{pr.pid, int64(a.seq)}]
			if !ok || at != a.first {
				return fmt.Errorf("acknowledged producer %d seq %d at %d: in the settled log at %d (present %v)", pr.pid, a.seq, a.first, at, ok)
			}
		}
	}
	return nil
}

// checkEpochsAndProducers: the leader epoch cache agrees with the epochs
// stamped on the batches, and the producer state with the last batch of
// each producer in the log.
func (s *replSim) checkEpochsAndProducers(n *simNode) error {
	entries := n.p.log.LeaderEpochs()
	last := map[int64]modelBatch{}
	prevEpoch := int32(-1)
	for _, mb := range s.model.batches {
		h, err := batch.ParseHeader(s.model.bytes[mb.pos:])
		if err != nil {
			return err
		}
		if h.PartitionLeaderEpoch != prevEpoch {
			e, end := endOffsetForEpoch(entries, h.PartitionLeaderEpoch, n.p.log.LogEndOffset())
			i := slices.IndexFunc(entries, func(x engine.EpochEntry) bool { return x.Epoch == h.PartitionLeaderEpoch })
			if i < 0 || entries[i].StartOffset != mb.base || e != h.PartitionLeaderEpoch || end <= mb.last {
				return fmt.Errorf("node %d: leader epoch cache %v does not start epoch %d at %d, where its batches start", n.id, entries, h.PartitionLeaderEpoch, mb.base)
			}
			prevEpoch = h.PartitionLeaderEpoch
		}
		if mb.pid >= 0 {
			last[mb.pid] = mb
		}
	}
	states := map[int64]producer.Entry{}
	for _, e := range n.p.log.ProducerStates() {
		states[e.ProducerID] = e
	}
	for pid, mb := range last {
		e, ok := states[pid]
		lb, ok2 := e.LastBatch()
		if !ok || !ok2 || lb.LastOffset != mb.last {
			return fmt.Errorf("node %d: producer %d state %+v, its last batch in the log ends at %d (seq %d)", n.id, pid, lb, mb.last, mb.seq)
		}
	}
	return nil
}

// simErrorCode is the Kafka error code a handler answers for err.
func simErrorCode(err error) int16 {
	for _, ke := range []*kerr.Error{kerr.OutOfOrderSequenceNumber, kerr.UnknownProducerID, kerr.InvalidProducerEpoch,
		kerr.NotLeaderForPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut,
		kerr.FencedLeaderEpoch, kerr.OffsetOutOfRange} {
		if errors.Is(err, ke) {
			return ke.Code
		}
	}
	return errorCodeFor(err)
}

// simReadBatches reads the whole batches in [from, to), across segments
// (one Read stops at a segment's end).
func simReadBatches(l *engine.Log, from, to int64) ([]byte, error) {
	var out []byte
	for i := 0; from < to; i++ {
		if i > 100000 {
			return nil, fmt.Errorf("reading [%d, %d): no progress", from, to)
		}
		b, err := l.ReadBatches(from, 1<<30, to)
		if err != nil {
			return nil, err
		}
		if len(b) == 0 {
			break
		}
		out = append(out, b...)
		for len(b) > 0 {
			h, err := batch.ParseHeader(b)
			if err != nil {
				return nil, err
			}
			from = h.BaseOffset + int64(h.LastOffsetDelta) + 1
			b = b[h.Size():]
		}
	}
	return out, nil
}
