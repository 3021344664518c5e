package sim

// Scenario is one fault schedule: random network and process faults at
// the given rates, plus scheduled events, for Ticks ticks. Then every fault
// stops and the cluster must elect a controller within the liveness bound.
// Scenarios are data: add a row, not code.
type Scenario struct {
	Name   string
	Nodes  int
	Ticks  int     // length of the fault phase, after a fault-free warm-up
	Faults Faults  // random faults during the fault phase
	Events []Event // scheduled faults, at ticks counted from the fault phase's start
	// MaxEpochs, if not zero: at most this many controller epochs may be
	// won during the fault phase, counting the one in force at its start
	// (the "no election storm" scenarios).
	MaxEpochs int
	// StayDown, if not zero, is a node that crashes when the faults stop
	// and stays down: the others must elect and commit without it. 0 is
	// not a node here; -2 means the node acting as controller then.
	StayDown int
}

// Faults are the random faults. Rates are per mille, per node and tick.
type Faults struct {
	LossPct, DupPct    int // each message is lost, or delivered twice
	DelayMin, DelayMax int // ticks in flight; different delays reorder
	// PartitionPerMille: the chance per tick that the network changes,
	// to healed or to a random set of cut links (some one-way).
	PartitionPerMille int
	PausePerMille     int // SIGSTOP for 1 to 100 ticks
	// CrashPerMille: the node crashes before it persists its next Ready,
	// losing its unpersisted hard state and unsent messages, and is down
	// for 0 to 50 ticks.
	CrashPerMille int
}

// EventKind is a scheduled fault.
type EventKind string

const (
	Isolate   EventKind = "isolate"   // cut Node off both ways
	Deaf      EventKind = "deaf"      // Node sends but receives nothing
	Partition EventKind = "partition" // cut Node<->Peer both ways
	Heal      EventKind = "heal"      // remove every cut
	Pause     EventKind = "pause"     // SIGSTOP Node for For ticks
	Crash     EventKind = "crash"     // kill Node, restart it after For ticks
	Bounce    EventKind = "bounce"    // crash and restart Node every For ticks to the end
)

// Event is one scheduled fault. Node 0 means the node acting as controller
// at that moment (the highest id if none); -1 means the highest id.
type Event struct {
	At   int
	Kind EventKind
	Node int
	Peer int
	For  int
}

// calm is the network of the named F scenarios: no loss, small delays.
var calm = Faults{DelayMin: 1, DelayMax: 2}

// Scenarios run in turn over the seeds.
var Scenarios = []Scenario{
	{Name: "calm-3", Nodes: 3, Ticks: 600, Faults: calm, MaxEpochs: 1},
	{Name: "calm-5", Nodes: 5, Ticks: 600, Faults: calm, MaxEpochs: 1},
	{Name: "lossy-3", Nodes: 3, Ticks: 1500, Faults: Faults{LossPct: 20, DupPct: 10, DelayMin: 1, DelayMax: 8}},
	{Name: "partitions-5", Nodes: 5, Ticks: 1500, Faults: Faults{LossPct: 5, DupPct: 5, DelayMin: 1, DelayMax: 5, PartitionPerMille: 10}},
	{Name: "crashes-3", Nodes: 3, Ticks: 1500, Faults: Faults{DelayMin: 1, DelayMax: 4, CrashPerMille: 3}},
	{Name: "pauses-5", Nodes: 5, Ticks: 1500, Faults: Faults{DelayMin: 1, DelayMax: 4, PausePerMille: 3}},
	{Name: "chaos-3", Nodes: 3, Ticks: 2000, Faults: Faults{LossPct: 15, DupPct: 10, DelayMin: 1, DelayMax: 10, PartitionPerMille: 8, PausePerMille: 2, CrashPerMille: 2}},
	{Name: "chaos-5", Nodes: 5, Ticks: 2000, Faults: Faults{LossPct: 15, DupPct: 10, DelayMin: 1, DelayMax: 10, PartitionPerMille: 8, PausePerMille: 2, CrashPerMille: 2}},
	// A minority stays down once the faults stop: the survivors must
	// elect and commit, whatever epochs and logs the faults left them.
	{Name: "chaos-3-one-down", Nodes: 3, Ticks: 1500, StayDown: -2, Faults: Faults{LossPct: 15, DupPct: 10, DelayMin: 1, DelayMax: 10, PartitionPerMille: 8, PausePerMille: 2, CrashPerMille: 3}},
	{Name: "chaos-5-two-down", Nodes: 5, Ticks: 1500, StayDown: -2, Faults: Faults{LossPct: 15, DupPct: 10, DelayMin: 1, DelayMax: 10, PartitionPerMille: 8, PausePerMille: 2, CrashPerMille: 3}},
	// F03: the controller killed, restarted after 20 s: one new controller.
	{Name: "F03", Nodes: 3, Ticks: 600, Faults: calm, MaxEpochs: 2,
		Events: []Event{{At: 10, Kind: Crash, Node: 0, For: 200}}},
	{Name: "F03-5", Nodes: 5, Ticks: 600, Faults: calm, MaxEpochs: 2,
		Events: []Event{{At: 10, Kind: Crash, Node: 0, For: 200}}},
	// F06: the controller stopped past its lease, then resumed.
	{Name: "F06", Nodes: 3, Ticks: 600, Faults: calm, MaxEpochs: 2,
		Events: []Event{{At: 10, Kind: Pause, Node: 0, For: 100}}},
	// F08: the controller isolated for 60 s, then healed: one election.
	{Name: "F08", Nodes: 3, Ticks: 1200, Faults: calm, MaxEpochs: 2,
		Events: []Event{{At: 10, Kind: Isolate, Node: 0}, {At: 610, Kind: Heal}}},
	{Name: "F08-5", Nodes: 5, Ticks: 1200, Faults: calm, MaxEpochs: 2,
		Events: []Event{{At: 10, Kind: Isolate, Node: 0}, {At: 610, Kind: Heal}}},
	// F09: one node sends but does not receive for 120 s: <= 2 epochs.
	{Name: "F09-controller", Nodes: 3, Ticks: 1200, Faults: calm, MaxEpochs: 2,
		Events: []Event{{At: 10, Kind: Deaf, Node: 0}}},
	{Name: "F09-follower", Nodes: 3, Ticks: 1200, Faults: calm, MaxEpochs: 1,
		Events: []Event{{At: 10, Kind: Deaf, Node: 1}}},
	// F10: n1<->n3 cut, both reach n2: no split brain, bounded churn.
	{Name: "F10", Nodes: 3, Ticks: 1200, Faults: calm, MaxEpochs: 2,
		Events: []Event{{At: 10, Kind: Partition, Node: 1, Peer: 3}}},
	// F11: the highest id restarts every 5 s for 2 min. Its first crash
	// costs one election. It may cost a second: the restarted node's log
	// can be ahead of the others' (it was the controller, with records
	// not yet replicated), and until the new controller appends in its own
	// epoch, the up-to-date rule lets the restarted node win. After that,
	// none: a healthy controller is never deposed.
	{Name: "F11", Nodes: 3, Ticks: 1200, Faults: calm, MaxEpochs: 2,
		Events: []Event{{At: 10, Kind: Bounce, Node: -1, For: 50}}},
}
