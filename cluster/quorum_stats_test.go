package cluster

import (
	"testing"

	"github.com/wren-broker/wren/election"
)

// The election counters over a node's soft state changes: it starts in
// the epoch of its hard state, counts each later epoch once whatever
// roles it goes through in it, and counts its pre-votes and candidacies.
func TestElectionCounters(t *testing.T) {
	var e electionCounters
	e.epoch.Store(4) // the hard state's epoch at start
	steps := []struct {
		ss                            election.SoftState
		changes, preVotes, candidates uint64
	}{
		{election.SoftState{Role: election.Follower, Epoch: 4}, 0, 0, 0},
		{election.SoftState{Role: election.PreCandidate, Epoch: 4}, 0, 1, 0},
		{election.SoftState{Role: election.Candidate, Epoch: 5}, 1, 1, 1},
		{election.SoftState{Role: election.Controller, Epoch: 5, Controller: 1}, 1, 1, 1},
		{election.SoftState{Role: election.Controller, Epoch: 5, Controller: 1, Acting: true}, 1, 1, 1},
		// Another node won epoch 7; this one learnt of it late.
		{election.SoftState{Role: election.Follower, Epoch: 7, Controller: 2}, 2, 1, 1},
		{election.SoftState{Role: election.Follower, Epoch: 7}, 2, 1, 1},
	}
	for i, s := range steps {
		e.observe(s.ss)
		if got := [3]uint64{e.epochChanges.Load(), e.preVotes.Load(), e.candidacies.Load()}; got != [3]uint64{s.changes, s.preVotes, s.candidates} {
			t.Fatalf("step %d (%v): epoch changes, pre-votes, candidacies %v, want %v", i, s.ss, got, [3]uint64{s.changes, s.preVotes, s.candidates})
		}
	}
	if got := e.epoch.Load(); got != 7 {
		t.Errorf("epoch %d, want 7", got)
	}
}
