package cluster

import (
	"sync/atomic"

	"github.com/wren-broker/wren/cluster/quorum"
	"github.com/wren-broker/wren/election"
)

// QuorumStats are the figures of this node's part in the metadata quorum
// since it started, for /metrics: how often the controller changed, and
// the traffic of its CONTROLLER listener. An idle cluster should show no
// new epochs and a steady trickle of heartbeats.
type QuorumStats struct {
	// Epoch is the controller epoch this node is in now.
	Epoch int32
	// EpochChanges counts the new controller epochs this node saw begin:
	// one per election some node won (or this node learnt of late), none
	// while a controller holds its lease.
	EpochChanges uint64
	// PreVotes counts this node's turns as pre-candidate (probing whether
	// it could win, without changing anyone's state), Candidacies its
	// elections (each a new epoch it voted itself in).
	PreVotes, Candidacies uint64
	// Transport is the CONTROLLER listener's traffic; HasTransport is
	// false when the transport does not count it (in-process tests).
	Transport    quorum.TransportStats
	HasTransport bool
}

// electionCounters count the soft states the driver reports; observe runs
// on the driver's goroutine, Stats reads from any.
type electionCounters struct {
	epoch                 atomic.Int32
	epochChanges          atomic.Uint64
	preVotes, candidacies atomic.Uint64
}

// observe counts one soft state change. A node counts the epochs after
// the one it started in (its hard state's).
func (e *electionCounters) observe(ss election.SoftState) {
	if old := e.epoch.Swap(ss.Epoch); ss.Epoch > old {
		e.epochChanges.Add(1)
	}
	switch ss.Role {
	case election.PreCandidate:
		e.preVotes.Add(1)
	case election.Candidate:
		e.candidacies.Add(1)
	}
}

// QuorumStats returns this node's quorum figures; false on a single
// voter, which has no quorum.
func (c *Controller) QuorumStats() (QuorumStats, bool) {
	if c.alone() {
		return QuorumStats{}, false
	}
	e := &c.q.elections
	st := QuorumStats{Epoch: e.epoch.Load(), EpochChanges: e.epochChanges.Load(),
		PreVotes: e.preVotes.Load(), Candidacies: e.candidacies.Load()}
	if r, ok := c.q.cfg.Transport.(quorum.StatsReporter); ok {
		st.Transport, st.HasTransport = r.Stats(), true
	}
	return st, true
}
