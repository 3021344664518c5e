package metalog

import (
	"errors"
	"fmt"

	"github.com/wren-broker/wren/election"
)

// EntryType says what an entry carries.
type EntryType uint8

// Part of the on-disk and on-wire format; never renumber.
const (
	// EntryRecords carries the controller's metadata records (the payload
	// is the cluster package's encoding; this package never reads it).
	EntryRecords EntryType = 1
	// EntryLeaderChange is the entry a new controller appends when it
	// takes office. It carries no records. Its commit is what commits
	// every earlier entry the controller inherited (raft's no-op).
	EntryLeaderChange EntryType = 2
)

// Entry is one entry of the metadata log.
//
// Invariant: within a log, Index is contiguous from the snapshot's index
// plus one, and Epoch never decreases along it. Two logs that hold an
// entry with the same Index and Epoch are identical up to that entry (one
// controller per epoch, and a controller only appends).
type Entry struct {
	Index int64
	Epoch int32
	Type  EntryType
	Data  []byte
}

func (e Entry) String() string {
	if e.Type == EntryLeaderChange {
		return fmt.Sprintf("%d/%d leader-change", e.Epoch, e.Index)
	}
	return fmt.Sprintf("%d/%d %q", e.Epoch, e.Index, e.Data)
}

// Snapshot is the applied state (the metadata image, encoded by the
// caller) as of a committed entry: every entry up to Index is folded into
// Data, so the log may drop them. The zero Snapshot is the empty log.
type Snapshot struct {
	Index int64 // the last entry it covers
	Epoch int32 // that entry's epoch
	Data  []byte
}

func (s Snapshot) String() string {
	return fmt.Sprintf("snapshot %d/%d (%d bytes)", s.Epoch, s.Index, len(s.Data))
}

// HardState is what a node must persist (and fdatasync) before it sends
// anything that depends on it: the election's epoch and vote, and the
// commit index.
//
// Invariant: on disk, Election follows election.HardState's rule, and
// Commit never decreases (it is never above the last entry persisted
// before it).
type HardState struct {
	Election election.HardState
	Commit   int64
}

func (hs HardState) String() string { return fmt.Sprintf("%v commit=%d", hs.Election, hs.Commit) }

// Stored is what a node reads back from disk when it starts: the hard
// state, the latest snapshot, and the entries after it.
type Stored struct {
	Hard     HardState
	Snapshot Snapshot
	Entries  []Entry
}

// MsgType is the kind of a Message.
type MsgType uint8

// Part of the wire format between peers once a transport carries them;
// never renumber.
const (
	// MsgElection carries an election message.
	MsgElection MsgType = 1
	// MsgFetch: a follower asks the controller of Epoch for the entries
	// after its log end (LastIndex, LastEpoch), which it has made durable.
	// It is also the follower's acknowledgement of that log end.
	MsgFetch MsgType = 2
	// MsgFetchResp answers a fetch with entries (after PrevIndex,
	// PrevEpoch), a divergence (the follower's log disagrees after
	// Diverging), or a snapshot.
	MsgFetchResp MsgType = 3
)

// Message is one message between voters. Epoch is the sender's election
// epoch; fetches and their answers are only taken in the epoch they were
// sent in.
type Message struct {
	Type     MsgType
	From, To election.NodeID
	Epoch    int32

	// Election is the election message (MsgElection).
	Election election.Message

	// Seq numbers a follower's fetches, so it knows which answer is the
	// one it waits for (MsgFetch, echoed in MsgFetchResp).
	Seq uint64
	// LastIndex, LastEpoch: the follower's log end when it fetched
	// (MsgFetch, echoed in MsgFetchResp).
	LastIndex int64
	LastEpoch int32

	// MsgFetchResp, one of three answers:
	//  - Entries follow the entry (PrevIndex, PrevEpoch), which the
	//    follower holds;
	//  - Diverging: the controller's log agrees with the follower's at
	//    most up to DivergingIndex, whose epoch there is DivergingEpoch;
	//    the follower truncates after it and fetches again (KIP-279);
	//  - Snapshot: the follower is behind the controller's log start.
	PrevIndex      int64
	PrevEpoch      int32
	Entries        []Entry
	Diverging      bool
	DivergingIndex int64
	DivergingEpoch int32
	Snapshot       *Snapshot
	// Commit is, in MsgFetchResp (and on the wire), the controller's
	// commit index (its high watermark). In MsgFetch it is the follower's
	// applied index as of its last Advance: its applied state (the
	// metadata image) shows every entry up to it, and it is at most the
	// follower's commit index. The controller holds a fetch only when it
	// equals the controller's commit index, and waits on it before it
	// answers a change (read your writes across nodes). A follower of
	// an older version sent its commit index here, which its applied
	// state reaches within one Ready.
	Commit int64
}

func (m Message) String() string {
	if m.Type == MsgElection {
		return m.Election.String()
	}
	s := fmt.Sprintf("%d->%d ", m.From, m.To)
	switch m.Type {
	case MsgFetch:
		s += fmt.Sprintf("Fetch epoch=%d seq=%d last=%d/%d", m.Epoch, m.Seq, m.LastEpoch, m.LastIndex)
	case MsgFetchResp:
		s += fmt.Sprintf("FetchResp epoch=%d seq=%d", m.Epoch, m.Seq)
		switch {
		case m.Snapshot != nil:
			s += " " + m.Snapshot.String()
		case m.Diverging:
			s += fmt.Sprintf(" diverging=%d/%d", m.DivergingEpoch, m.DivergingIndex)
		default:
			s += fmt.Sprintf(" prev=%d/%d", m.PrevEpoch, m.PrevIndex)
			if len(m.Entries) > 0 {
				s += fmt.Sprintf(" entries=%d..%d", m.Entries[0].Index, m.Entries[len(m.Entries)-1].Index)
			}
		}
		s += fmt.Sprintf(" commit=%d", m.Commit)
	default:
		s += fmt.Sprintf("MsgType(%d)", uint8(m.Type))
	}
	return s
}

// Ready is the work a node hands its driver. The driver does it in this
// order, then calls Advance:
//
//  1. if Snapshot is not nil, write it durably, then drop the log's
//     entries up to Snapshot.Index (all of them if TruncateAll);
//  2. if Truncate is not nil, drop the log's entries after *Truncate;
//  3. append Entries to the log;
//  4. fdatasync the log (steps 1-3), then write HardState if not nil and
//     fdatasync it;
//  5. only then send Messages (any order, any may be lost);
//  6. if RestoreSnapshot, replace the applied state with Snapshot.Data;
//     then apply CommittedEntries in order;
//  7. react to SoftState if not nil.
//
// Steps 1-4 before step 5 are what make an acknowledgement true: a fetch
// that tells the controller "I hold up to N" leaves only once entries up
// to N are durable here, and a vote leaves only once it is on disk.
type Ready struct {
	Snapshot        *Snapshot
	TruncateAll     bool   // with Snapshot: the local log disagrees with it; drop every entry
	RestoreSnapshot bool   // Snapshot came from the controller: the applied state restarts from it
	Truncate        *int64 // keep entries up to this index, drop the rest
	Entries         []Entry
	HardState       *HardState

	Messages []Message

	// CommittedEntries are committed and not yet handed out, in order.
	CommittedEntries []Entry

	SoftState *election.SoftState
}

// Errors of Propose and Compact.
var (
	// ErrNotController: this node is not the acting controller.
	ErrNotController = errors.New("metalog: not the acting controller")
	// ErrNotCaughtUp: the controller's leader-change entry is not
	// committed yet, so its applied state may lack committed records.
	ErrNotCaughtUp = errors.New("metalog: controller has not committed an entry of its epoch yet")
	// ErrTooManyUncommitted: the proposal would put more than
	// MaxUncommittedEntries entries beyond the commit index.
	ErrTooManyUncommitted = errors.New("metalog: too many uncommitted entries")
)
