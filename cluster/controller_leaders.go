package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The controller's hooks for broker liveness and partition leadership:
// each reads the current image, asks the pure rule (core_brokers.go,
// core_leaders.go, core_isr.go) what to commit, and commits it as one
// metadata entry.

// rules is the rule config of this controller.
func (c *Controller) rules() RuleConfig {
	return RuleConfig{
		DefaultPartitions:        c.cfg.DefaultPartitions,
		DefaultReplicationFactor: c.cfg.DefaultReplicationFactor,
		ValidateTopicConfig:      c.cfg.ValidateTopicConfig,
		ValidateBrokerConfig:     c.cfg.ValidateBrokerConfig,
		ValidateBrokerLayer:      c.cfg.ValidateBrokerLayer,
		Leader: LeaderConfig{
			MinInsyncReplicas:           c.cfg.MinInsyncReplicas,
			UncleanLeaderElectionEnable: c.cfg.UncleanLeaderElectionEnable,
			Offsets:                     c.cfg.PartitionOffsets,
		},
		NewTopicID: NewUUID,
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

// RegisterBroker records a broker's registration (DecideRegisterBroker).
// cleanShutdown says whether the broker shut down cleanly last time; if
// not, it leaves every ISR and ELR (KIP-966). reg.Fenced registers it
// fenced, as a starting broker is until it has caught up (UnfenceBroker).
func (c *Controller) RegisterBroker(ctx context.Context, reg BrokerRegistrationRecord, cleanShutdown bool) error {
	var res error
	err := c.change(ctx, func() {
		res = commitResult(c.commit, DecideRegisterBroker(c.Image(), c.rules(), RegisterBrokerRequest{Registration: reg, CleanShutdown: cleanShutdown}))
	})
	return errors.Join(err, res)
}

// FenceBroker fences a broker whose session expired (or that crashed)
// (DecideFenceBroker).
func (c *Controller) FenceBroker(ctx context.Context, id int32) error {
	return c.decide(ctx, func(im *Image) error { return commitResult(c.commit, DecideFenceBroker(im, c.rules(), id)) })
}

// UnfenceBroker unfences a broker that is back and caught up
// (DecideUnfenceBroker).
func (c *Controller) UnfenceBroker(ctx context.Context, id int32) error {
	return c.decide(ctx, func(im *Image) error { return commitResult(c.commit, DecideUnfenceBroker(im, c.rules(), id)) })
}

// ControlledShutdown moves leadership off a broker before it exits
// (DecideControlledShutdown).
func (c *Controller) ControlledShutdown(ctx context.Context, id int32) error {
	return c.decide(ctx, func(im *Image) error { return commitResult(c.commit, DecideControlledShutdown(im, c.rules(), id)) })
}

// SetBrokerLogDir records what a broker's heartbeats say of its log dir,
// with the partition changes it brings (DecideBrokerLogDir), and returns
// the partition changes committed.
func (c *Controller) SetBrokerLogDir(ctx context.Context, id int32, d BrokerLogDir) ([]PartitionChange, error) {
	var changes []PartitionChange
	err := c.decide(ctx, func(im *Image) error {
		r := DecideBrokerLogDir(im, c.rules(), BrokerLogDirRequest{Broker: id, LogDir: d})
		err := commitResult(c.commit, r)
		if err == nil {
			changes = r.Response
		}
		return err
	})
	return changes, err
}

// decide runs fn on the event loop with the current image (see change)
// and returns fn's error joined to the loop's.
func (c *Controller) decide(ctx context.Context, fn func(*Image) error) error {
	var res error
	err := c.change(ctx, func() { res = fn(c.Image()) })
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
// ElectLeaders; DecideElectLeaders). With partitions nil it tries every
// partition and reports only those where an election was needed.
func (c *Controller) ElectLeaders(ctx context.Context, el Election, partitions []TopicPartition) ([]ElectLeadersResult, error) {
	if err := c.checkActing(); err != nil {
		return nil, err
	}
	var results []ElectLeadersResult
	err := c.change(ctx, func() {
		r := DecideElectLeaders(c.Image(), c.rules(), ElectLeadersRequest{Election: el, Partitions: partitions})
		results = r.Response
		if err := commitResult(c.commit, r); err != nil {
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
	req := &alterISRRequest{AlterISRRequest: AlterISRRequest{TopicID: topicID, Partition: partition, Leader: leader, LeaderEpoch: leaderEpoch,
		PartitionEpoch: partitionEpoch, ISR: isr}, done: make(chan alterISRResult, 1)}
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
	AlterISRRequest
	done chan alterISRResult // buffered: answered once
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

// alterISRBatch, on the loop, decides every queued ISR change
// (DecideAlterISR), commits them and answers each.
func (c *Controller) alterISRBatch() {
	queued := c.alterISRs.take()
	reqs := make([]AlterISRRequest, len(queued))
	for i, q := range queued {
		reqs[i] = q.AlterISRRequest
	}
	r := DecideAlterISR(c.Image(), c.rules(), reqs)
	committed, err := commitEntries(c.commit, r.Entries())
	for i, a := range AlterISRAnswers(r.Response, committed, err) {
		queued[i].done <- alterISRResult{after: a.After, err: a.Err}
	}
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

// RebalanceLeaders runs auto.leader.rebalance once as one metadata entry
// (DecideRebalanceLeaders) and returns the changes committed.
func (c *Controller) RebalanceLeaders(ctx context.Context, percentPerBroker int) ([]PartitionChange, error) {
	if err := c.checkActing(); err != nil {
		return nil, err
	}
	var changes []PartitionChange
	err := c.decide(ctx, func(im *Image) error {
		r := DecideRebalanceLeaders(im, c.rules(), percentPerBroker)
		err := commitResult(c.commit, r)
		if err == nil {
			changes = r.Response
		}
		return err
	})
	return changes, err
}
