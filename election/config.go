package election

import (
	"errors"
	"fmt"
)

// Config is one node's election settings. Durations are in ticks; the
// driver chooses the tick length (for example 100 ms) and converts the
// controller.* settings, which are in milliseconds.
type Config struct {
	// ID is this node's id. It must be one of Voters.
	ID NodeID
	// Voters are the ids of controller.quorum.voters, the same list on
	// every node. A controller needs votes from a majority of them.
	Voters []NodeID
	// HeartbeatTicks is how often the controller sends heartbeats
	// (controller.heartbeat.interval.ms).
	HeartbeatTicks int
	// LeaseTicks: the controller acts only while a majority (itself
	// included) acknowledged a heartbeat it sent within the last
	// LeaseTicks (controller.lease.ms).
	LeaseTicks int
	// ElectionTicks is the election timeout: a node that heard a live
	// controller within the last ElectionTicks refuses to vote, and a node
	// that did not starts an election after a random time in
	// [ElectionTicks, ElectionTicks+ElectionJitterTicks)
	// (controller.quorum.fetch.timeout.ms).
	ElectionTicks int
	// ElectionJitterTicks spreads the nodes' election timers so that they
	// rarely run at once (controller.quorum.election.backoff.max.ms).
	ElectionJitterTicks int
	// ProbeTicks is how long a probe round waits for the answers of the
	// higher ids before a node with a majority of grants runs without
	// them; 0 means HeartbeatTicks. The round itself (collecting grants)
	// still lasts up to HeartbeatTicks. It only decides how long the Bully
	// preference waits for a higher id that may be dead (a failover of
	// the highest id paid the whole round), never what is safe.
	ProbeTicks int
	// RetryTicks (plus up to ElectionJitterTicks) is how long a node
	// whose probe round found too few grants waits before it probes
	// again. Most often a voter was still quiet for a tick or two after
	// the same last heartbeat; 0 means a whole election timeout
	// (ElectionTicks plus jitter), which such a failover paid in full.
	// (A node that stood back for a higher id still waits a whole
	// timeout: retrying soon there competes with the higher id's run.)
	// Like ProbeTicks it decides when a node probes, never what is safe:
	// a probe changes nothing at the receivers.
	RetryTicks int
	// Seed drives the random election timers, so that a run replays.
	Seed uint64
}

// probeTicks is ProbeTicks, or HeartbeatTicks when it is 0.
func (c *Config) probeTicks() int {
	if c.ProbeTicks > 0 {
		return c.ProbeTicks
	}
	return c.HeartbeatTicks
}

// Validate checks the rules the election's safety rests on and says which
// one is broken.
func (c *Config) Validate() error {
	if c.ID < 0 {
		return fmt.Errorf("election: node id %d is negative", c.ID)
	}
	if len(c.Voters) == 0 {
		return errors.New("election: no voters")
	}
	seen := make(map[NodeID]bool, len(c.Voters))
	for _, v := range c.Voters {
		if v < 0 {
			return fmt.Errorf("election: voter id %d is negative", v)
		}
		if seen[v] {
			return fmt.Errorf("election: voter %d is listed twice", v)
		}
		seen[v] = true
	}
	if !seen[c.ID] {
		return fmt.Errorf("election: node %d is not among the voters %v", c.ID, c.Voters)
	}
	if c.HeartbeatTicks < 1 {
		return fmt.Errorf("election: heartbeat ticks %d must be at least 1", c.HeartbeatTicks)
	}
	// Below the lease: else the lease lapses between two heartbeats.
	if c.HeartbeatTicks >= c.LeaseTicks {
		return fmt.Errorf("election: heartbeat ticks %d must be below lease ticks %d, or the lease lapses between heartbeats",
			c.HeartbeatTicks, c.LeaseTicks)
	}
	// Below the election timeout: a voter that acknowledged a heartbeat
	// refuses votes for ElectionTicks after it, so the old controller's
	// lease ends before anyone can gather the votes to replace it.
	if c.LeaseTicks >= c.ElectionTicks {
		return fmt.Errorf("election: lease ticks %d must be below election ticks %d, or a new controller could be elected while the old one still holds its lease",
			c.LeaseTicks, c.ElectionTicks)
	}
	if c.RetryTicks < 0 {
		return fmt.Errorf("election: retry ticks %d is negative", c.RetryTicks)
	}
	if c.ProbeTicks < 0 {
		return fmt.Errorf("election: probe ticks %d is negative", c.ProbeTicks)
	}
	if c.ElectionJitterTicks < 1 {
		return fmt.Errorf("election: election jitter ticks %d must be at least 1, or nodes whose timers started together run together forever",
			c.ElectionJitterTicks)
	}
	return nil
}
