package election

import "fmt"

// NodeID is a voter's node.id, as listed in controller.quorum.voters.
type NodeID int32

// None is "no node": no vote cast in this epoch, no controller known.
// Kafka uses -1 for an unknown leader as well.
const None NodeID = -1

// LogPosition is the epoch and offset of the last record in a node's
// metadata log. Positions are ordered by epoch, then offset: a log whose
// last record has a higher epoch is more up to date whatever its length,
// because records of a deposed controller's epoch may be truncated.
type LogPosition struct {
	Epoch  int32
	Offset int64
}

// Less reports whether p is behind q.
func (p LogPosition) Less(q LogPosition) bool {
	if p.Epoch != q.Epoch {
		return p.Epoch < q.Epoch
	}
	return p.Offset < q.Offset
}

func (p LogPosition) String() string { return fmt.Sprintf("%d/%d", p.Epoch, p.Offset) }

// HardState is what a node must persist (and fdatasync) before it sends
// anything that depends on it: the highest epoch it has seen and the node
// it voted for in that epoch.
//
// Invariant: on disk, Epoch never decreases, and within one Epoch VotedFor
// only goes from None to a node, never from one node to another.
type HardState struct {
	Epoch    int32
	VotedFor NodeID
}

func (hs HardState) String() string {
	return fmt.Sprintf("epoch=%d voted=%s", hs.Epoch, nodeName(hs.VotedFor))
}

// MsgType is the kind of a Message.
type MsgType uint8

// The message kinds. Part of the wire format between peers once a
// transport carries them; never renumber.
const (
	// MsgProbe asks "would you vote for me in Epoch?" (a pre-vote). The
	// receiver answers from its current state and changes nothing, so a
	// node that cannot win never bumps anyone's epoch.
	MsgProbe MsgType = 1
	// MsgProbeResp answers a probe. It carries the responder's log
	// position and whether it hears a live controller, which is all the
	// prober needs for the Bully rule.
	MsgProbeResp MsgType = 2
	// MsgVote asks for a vote in Epoch.
	MsgVote MsgType = 3
	// MsgVoteResp grants or refuses a vote.
	MsgVoteResp MsgType = 4
	// MsgHeartbeat is the controller's "I am alive in Epoch".
	MsgHeartbeat MsgType = 5
	// MsgHeartbeatResp acknowledges a heartbeat, renewing the lease, or
	// (Reject) tells a stale controller the newer epoch.
	MsgHeartbeatResp MsgType = 6
)

var msgNames = map[MsgType]string{
	MsgProbe: "Probe", MsgProbeResp: "ProbeResp", MsgVote: "Vote", MsgVoteResp: "VoteResp",
	MsgHeartbeat: "Heartbeat", MsgHeartbeatResp: "HeartbeatResp",
}

func (t MsgType) String() string {
	if s, ok := msgNames[t]; ok {
		return s
	}
	return fmt.Sprintf("MsgType(%d)", uint8(t))
}

// Message is one message between voters. Every message carries an epoch.
type Message struct {
	Type     MsgType
	From, To NodeID
	Epoch    int32
	// Log is the sender's metadata log position (Probe, ProbeResp, Vote).
	Log LogPosition
	// Reject: a ProbeResp or VoteResp that refuses, or a HeartbeatResp
	// that tells a stale controller it has been superseded.
	Reject bool
	// Quiet (ProbeResp): the responder heard a live controller within
	// the election timeout, or started less than one election timeout
	// ago, so it will not run itself and must not be deferred to.
	Quiet bool
	// EpochTaken (ProbeResp): the responder already voted for another
	// node in the probed epoch, or is past it (Epoch says where it is).
	// The prober adopts Epoch so that its next probe asks for a later
	// one: without it, a prober behind in epochs whose log is ahead of
	// the responder's asks for an epoch nobody will grant, while the
	// responder cannot win its own runs (its log is behind), and the two
	// survivors of a three-node cluster never elect.
	EpochTaken bool
	// LeaseTick (Heartbeat, HeartbeatResp) is the controller's tick when
	// it sent the heartbeat, echoed in the ack. The lease counts from the
	// send, not the arrival of the ack, so a slow ack never extends it.
	LeaseTick int64
}

func (m Message) String() string {
	s := fmt.Sprintf("%d->%d %s epoch=%d", m.From, m.To, m.Type, m.Epoch)
	switch m.Type {
	case MsgProbe, MsgVote:
		s += " log=" + m.Log.String()
	case MsgProbeResp:
		s += " log=" + m.Log.String()
		if m.Quiet {
			s += " quiet"
		}
		if m.EpochTaken {
			s += " epoch-taken"
		}
	case MsgHeartbeat, MsgHeartbeatResp:
		s += fmt.Sprintf(" lease-tick=%d", m.LeaseTick)
	}
	if m.Reject {
		s += " reject"
	}
	return s
}

// Role is what a node currently is in the election.
type Role uint8

const (
	// Follower: knows a controller, or waits for its election timer.
	Follower Role = iota
	// PreCandidate: probing whether it could win, without changing anyone's
	// state.
	PreCandidate
	// Candidate: running for its Epoch, which it has voted for itself.
	Candidate
	// Controller: won its Epoch. It may act only while Acting.
	Controller
)

func (r Role) String() string {
	switch r {
	case Follower:
		return "follower"
	case PreCandidate:
		return "pre-candidate"
	case Candidate:
		return "candidate"
	case Controller:
		return "controller"
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// SoftState is the volatile part of a node's state the driver reacts to.
// It need not be persisted: a restarted node is a follower that knows no
// controller.
type SoftState struct {
	Role       Role
	Epoch      int32
	Controller NodeID // None when no controller of Epoch is known
	// Acting: this node is the controller and holds its lease. Only
	// then may it act as controller.
	Acting bool
}

func (s SoftState) String() string {
	str := fmt.Sprintf("%s epoch=%d controller=%s", s.Role, s.Epoch, nodeName(s.Controller))
	if s.Acting {
		str += " acting"
	}
	return str
}

// Ready is the work a node hands its driver. The driver does it in this
// order, then calls Advance:
//
//  1. if HardState is not nil, write it and fdatasync it;
//  2. only then send Messages (any order, any may be lost);
//  3. react to SoftState if not nil (became controller, lost the lease...).
//
// Step 1 before step 2 is what makes a vote count: a vote that reached a
// candidate survives a crash of the voter, so the voter cannot vote again
// in the same epoch after a restart.
type Ready struct {
	HardState *HardState // nil if unchanged since the last Ready
	Messages  []Message
	SoftState *SoftState // nil if unchanged since the last Ready
}

func nodeName(id NodeID) string {
	if id == None {
		return "none"
	}
	return fmt.Sprint(int32(id))
}
