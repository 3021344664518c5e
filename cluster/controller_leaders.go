package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The controller's hooks for broker liveness and partition leadership:
// each computes its changes with the pure rules of leader.go and
// leadership.go against the current image, and commits them with the
// broker's own record as one metadata entry, so a crash never leaves a
// broker fenced with its partitions still led by it.

func (c *Controller) leaderConfig() LeaderConfig {
	return LeaderConfig{
		MinInsyncReplicas:           c.cfg.MinInsyncReplicas,
		UncleanLeaderElectionEnable: c.cfg.UncleanLeaderElectionEnable,
		Offsets:                     c.cfg.PartitionOffsets,
	}
}

func changeRecords(recs []Record, changes []PartitionChange) []Record {
	for _, ch := range changes {
		recs = append(recs, ch.Records()...)
	}
	return recs
}

func unknownBroker(id int32) error {
	return fmt.Errorf("%w: broker %d is not registered", kerr.BrokerIDNotRegistered, id)
}

// RegisterBroker records a broker's registration (a start, or a new rack
// or listener). cleanShutdown says whether the broker shut down cleanly
// last time; if not, its log may lack records it acknowledged, so it
// leaves every ISR and ELR (KIP-966). reg.Fenced registers it fenced, as
// a starting broker is until it has caught up (UnfenceBroker).
func (c *Controller) RegisterBroker(ctx context.Context, reg BrokerRegistrationRecord, cleanShutdown bool) error {
	var res error
	err := c.change(ctx, func() {
		im := c.Image()
		var changes []PartitionChange
		if !cleanShutdown {
			changes = UncleanShutdownChanges(im, reg.BrokerID, c.leaderConfig())
		} else if b, ok := im.Broker(reg.BrokerID); ok && sameRegistration(b, &reg) {
			return
		}
		r := reg
		res = c.commit(changeRecords([]Record{{Kind: KindBrokerRegistration, BrokerRegistration: &r}}, changes))
	})
	return errors.Join(err, res)
}

// FenceBroker fences a broker whose session expired (or that crashed): it
// gets no new replicas, leaves every ISR, and the partitions it led elect
// a new leader.
func (c *Controller) FenceBroker(ctx context.Context, id int32) error {
	return c.setFenced(ctx, id, true, BrokerFencedChanges)
}

// UnfenceBroker unfences a broker that is back and caught up; partitions
// without a leader that it may lead elect one.
func (c *Controller) UnfenceBroker(ctx context.Context, id int32) error {
	return c.setFenced(ctx, id, false, BrokerUnfencedChanges)
}

// ControlledShutdown moves leadership off a broker before it exits
// (SIGTERM): it leaves every ISR, its partitions elect new leaders, and it
// is fenced, so it gets no new replicas while it is gone.
func (c *Controller) ControlledShutdown(ctx context.Context, id int32) error {
	return c.setFenced(ctx, id, true, ControlledShutdownChanges)
}

// SetBrokerLogDir records what a broker's heartbeats say of its log dir,
// with the partition changes it brings (LogDirRecords): while it takes no
// writes the broker leaves every ISR and hands its leaderships to in-sync
// replicas that can write; when it takes writes again, partitions left
// without a leader that it could lead elect one. It returns the partition
// changes committed.
func (c *Controller) SetBrokerLogDir(ctx context.Context, id int32, d BrokerLogDir) ([]PartitionChange, error) {
	var changes []PartitionChange
	var res error
	err := c.change(ctx, func() {
		recs, chs, err := LogDirRecords(c.Image(), id, d, c.leaderConfig())
		if err != nil {
			res = err
			return
		}
		if recs = changeRecords(recs, chs); len(recs) > 0 {
			if res = c.commit(recs); res == nil {
				changes = chs
			}
		}
	})
	return changes, errors.Join(err, res)
}

func (c *Controller) setFenced(ctx context.Context, id int32, fenced bool, rule func(*Image, int32, LeaderConfig) []PartitionChange) error {
	var res error
	err := c.change(ctx, func() {
		im := c.Image()
		b, ok := im.Broker(id)
		if !ok {
			res = unknownBroker(id)
			return
		}
		changes := rule(im, id, c.leaderConfig())
		var recs []Record
		if b.Fenced != fenced {
			recs = append(recs, Record{Kind: KindBrokerFence, BrokerFence: &BrokerFenceRecord{BrokerID: id, Fenced: fenced}})
		}
		if recs = changeRecords(recs, changes); len(recs) > 0 {
			res = c.commit(recs)
		}
	})
	return errors.Join(err, res)
}

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// ElectLeadersResult is the outcome for one partition: its leader after
// the election, or Err with Kafka's error code.
type ElectLeadersResult struct {
	TopicPartition
	Leader int32
	Err    error
}

// ElectLeaders runs ElectPreferred or ElectUnclean elections (Kafka's
// ElectLeaders). With partitions nil it tries every partition and reports
// only those where an election was needed.
func (c *Controller) ElectLeaders(ctx context.Context, el Election, partitions []TopicPartition) ([]ElectLeadersResult, error) {
	if err := c.checkActing(); err != nil {
		return nil, err
	}
	var results []ElectLeadersResult
	err := c.change(ctx, func() {
		im := c.Image()
		all := partitions == nil
		if all {
			for _, name := range im.TopicNames() {
				for _, p := range im.Topic(name).Partitions {
					partitions = append(partitions, TopicPartition{name, p.Partition})
				}
			}
		}
		var recs []Record
		for _, tp := range partitions {
			ch, err := ElectLeadersChange(im, tp.Topic, tp.Partition, el, c.leaderConfig())
			if all && errors.Is(err, kerr.ElectionNotNeeded) {
				continue
			}
			r := ElectLeadersResult{TopicPartition: tp, Leader: ch.After.Leader, Err: err}
			if err != nil {
				r.Leader = NoLeader
			}
			results = append(results, r)
			recs = append(recs, ch.Records()...)
		}
		if len(recs) == 0 {
			return
		}
		if err := c.commit(recs); err != nil {
			for i := range results {
				if results[i].Err == nil {
					results[i].Err, results[i].Leader = err, NoLeader
				}
			}
		}
	})
	return results, err
}

// AlterISR applies an ISR change a partition's leader asks for (Kafka's
// AlterPartition) and returns the partition's new state.
//
// The changes that arrive while the controller's loop is busy wait in a
// queue, and the next turn of the loop commits them all as one entry (or
// a few of about createEntryBytes), each checked against the image as the
// ones before it leave it: after a node restarts and catches up, its
// leaders ask to add it to thousands of ISRs at once, and one quorum round
// trip per partition would take minutes.
func (c *Controller) AlterISR(ctx context.Context, topicID UUID, partition, leader, leaderEpoch, partitionEpoch int32, isr []int32) (PartitionImage, error) {
	req := &alterISRRequest{topicID: topicID, partition: partition, leader: leader, leaderEpoch: leaderEpoch,
		partitionEpoch: partitionEpoch, isr: isr, done: make(chan alterISRResult, 1)}
	c.alterISRs.add(req)
	if err := c.change(ctx, c.alterISRBatch); err != nil && c.alterISRs.remove(req) {
		return PartitionImage{}, err
	}
	// A turn of the loop took the request (this one or an earlier one);
	// it answers once its entry is committed or refused.
	select {
	case r := <-req.done:
		return r.after, r.err
	case <-ctx.Done():
		return PartitionImage{}, fmt.Errorf("%w: %w", kerr.RequestTimedOut, ctx.Err())
	}
}

// alterISRQueue holds the ISR changes waiting for the controller's loop.
type alterISRQueue struct {
	mu      sync.Mutex
	pending []*alterISRRequest
}

type alterISRRequest struct {
	topicID                                        UUID
	partition, leader, leaderEpoch, partitionEpoch int32
	isr                                            []int32
	done                                           chan alterISRResult // buffered: answered once
}

type alterISRResult struct {
	after PartitionImage
	err   error
}

func (q *alterISRQueue) add(r *alterISRRequest) {
	q.mu.Lock()
	q.pending = append(q.pending, r)
	q.mu.Unlock()
}

// remove takes r out of the queue; false if a turn of the loop took it.
func (q *alterISRQueue) remove(r *alterISRRequest) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, p := range q.pending {
		if p == r {
			q.pending = append(q.pending[:i], q.pending[i+1:]...)
			return true
		}
	}
	return false
}

func (q *alterISRQueue) take() []*alterISRRequest {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.pending
	q.pending = nil
	return out
}

// alterISRBatch, on the loop, decides and commits every queued ISR
// change.
func (c *Controller) alterISRBatch() {
	reqs := c.alterISRs.take()
	im := c.Image()
	type group struct {
		reqs  []*alterISRRequest
		after []PartitionImage
		recs  []Record
		bytes int
	}
	var groups []*group
	for _, r := range reqs {
		ch, err := c.alterISRChange(im, r)
		if err == nil && ch.Changed() {
			recs := ch.Records()
			var next *Image
			if next, err = applyRecords(im, im.Offset, recs); err == nil {
				var size int
				if size, err = recordsBytes(recs); err == nil {
					im = next
					if n := len(groups); n == 0 || groups[n-1].bytes+size > createEntryBytes {
						groups = append(groups, &group{})
					}
					g := groups[len(groups)-1]
					g.reqs, g.after, g.recs, g.bytes = append(g.reqs, r), append(g.after, ch.After), append(g.recs, recs...), g.bytes+size
					continue
				}
			}
		}
		r.done <- alterISRResult{after: ch.After, err: err}
	}
	var failed error
	for _, g := range groups {
		if failed == nil {
			failed = c.commit(g.recs)
		}
		for i, r := range g.reqs {
			r.done <- alterISRResult{after: g.after[i], err: failed}
		}
	}
}

// alterISRChange is the change r asks for, checked against im.
func (c *Controller) alterISRChange(im *Image, r *alterISRRequest) (PartitionChange, error) {
	t := im.TopicByID(r.topicID)
	if t == nil || r.partition < 0 || int(r.partition) >= len(t.Partitions) {
		return PartitionChange{}, fmt.Errorf("%w: topic %s partition %d", kerr.UnknownTopicOrPartition, r.topicID, r.partition)
	}
	ch, err := AlterISR(t.Partitions[r.partition], r.leader, r.leaderEpoch, r.partitionEpoch, r.isr, im.ElectionContext(t, r.partition, c.leaderConfig(), nil))
	if err != nil {
		return PartitionChange{}, err
	}
	ch.TopicID, ch.Topic = t.ID, t.Name
	// The ISR change that brings the last new replica in completes a
	// reassignment in the same entry.
	if done, ok := MaybeCompleteReassignment(ch.After, im.ElectionContext(t, r.partition, c.leaderConfig(), nil)); ok {
		done.Before, done.TopicID, done.Topic = ch.Before, t.ID, t.Name
		ch = done
	}
	return ch, nil
}

// checkActing is NOT_CONTROLLER on a node that is not the acting
// controller. A change computed from such a node's image could judge by a
// stale state (ELECTION_NOT_NEEDED for a partition that has since lost its
// leader), so requests that answer per partition check before they start,
// not only when the commit fails.
func (c *Controller) checkActing() error {
	if c.Acting() {
		return nil
	}
	return fmt.Errorf("%w: node %d is not the acting controller (the controller is %d)", kerr.NotController, c.cfg.NodeID, c.ControllerID())
}

// RebalanceLeaders runs auto.leader.rebalance once: preferred elections
// for the partitions of every broker whose leader imbalance is above
// percentPerBroker (RebalanceLeadersChanges), as one metadata entry. It
// returns the changes committed.
func (c *Controller) RebalanceLeaders(ctx context.Context, percentPerBroker int) ([]PartitionChange, error) {
	if err := c.checkActing(); err != nil {
		return nil, err
	}
	var changes []PartitionChange
	var res error
	err := c.change(ctx, func() {
		changes = RebalanceLeadersChanges(c.Image(), percentPerBroker, c.leaderConfig())
		if len(changes) > 0 {
			if res = c.commit(changeRecords(nil, changes)); res != nil {
				changes = nil
			}
		}
	})
	return changes, errors.Join(err, res)
}

// electionsAllowedBy are the leader elections that config records make
// possible: once unclean.leader.election.enable is turned on for a topic
// or cluster-wide, a partition without a leader whose only live replicas
// are outside the ISR and ELR elects one of them in the same metadata
// entry, rather than waiting for the next broker to be unfenced. Kafka's
// controller does the same when the setting changes (KIP-966's unclean
// recovery).
func (c *Controller) electionsAllowedBy(recs []Record) ([]PartitionChange, error) {
	touched := false
	for _, r := range recs {
		cr := r.Config
		if r.Kind == KindConfig && cr.Key == "unclean.leader.election.enable" &&
			(cr.ResourceType == ResourceTopic || cr.ResourceType == ResourceBroker && cr.Name == "") {
			touched = true
		}
	}
	if !touched {
		return nil, nil
	}
	next, err := applyRecords(c.Image(), c.Image().Offset, recs)
	if err != nil {
		return nil, err
	}
	return LeaderlessElections(next, c.leaderConfig()), nil
}
