package cluster

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Reassignment asks to move one partition to Replicas (Kafka's
// AlterPartitionReassignments entry); nil Replicas cancels the ongoing
// reassignment.
type Reassignment struct {
	TopicPartition
	Replicas []int32
}

// ReassignmentResult is the outcome for one partition: nil Err when the
// reassignment started (or completed, or was cancelled).
type ReassignmentResult struct {
	TopicPartition
	Err error
}

// OngoingReassignment is a partition being reassigned (Kafka's
// ListPartitionReassignments entry).
type OngoingReassignment struct {
	TopicPartition
	Replicas, AddingReplicas, RemovingReplicas []int32
}

// AlterPartitionReassignments starts or cancels reassignments, all in one
// metadata entry. allowRFChange false refuses a target whose size differs
// from the partition's replication factor (INVALID_REPLICATION_FACTOR,
// KIP-860). Each partition succeeds or fails on its own; a partition named
// twice is INVALID_REQUEST.
func (c *Controller) AlterPartitionReassignments(ctx context.Context, reqs []Reassignment, allowRFChange bool) ([]ReassignmentResult, error) {
	if err := c.checkActing(); err != nil {
		return nil, err
	}
	results := make([]ReassignmentResult, len(reqs))
	err := c.change(ctx, func() {
		im := c.Image()
		count := map[TopicPartition]int{}
		for _, r := range reqs {
			count[r.TopicPartition]++
		}
		registered := func(b int32) bool { _, ok := im.Broker(b); return ok }
		var recs []Record
		for i, r := range reqs {
			results[i].TopicPartition = r.TopicPartition
			if count[r.TopicPartition] > 1 {
				results[i].Err = fmt.Errorf("%w: %s-%d is named twice", kerr.InvalidRequest, r.Topic, r.Partition)
				continue
			}
			t := im.Topic(r.Topic)
			if err := im.checkPartition(r.Topic, r.Partition); err != nil {
				results[i].Err = err
				continue
			}
			p := t.Partitions[r.Partition]
			if r.Replicas != nil && !allowRFChange && len(r.Replicas) != len(p.TargetReplicas()) {
				results[i].Err = fmt.Errorf("%w: the target %v would change the replication factor of %s-%d from %d",
					kerr.InvalidReplicationFactor, r.Replicas, r.Topic, r.Partition, len(p.TargetReplicas()))
				continue
			}
			ch, err := StartReassignment(p, r.Replicas, registered, im.ElectionContext(t, r.Partition, c.leaderConfig(), nil))
			if err != nil {
				// The answer is the partition's own: the error need not
				// name it, and a prefix would hide the Kafka code's text.
				results[i].Err = err
				continue
			}
			ch.TopicID, ch.Topic = t.ID, t.Name
			recs = append(recs, ch.Records()...)
		}
		if len(recs) == 0 {
			return
		}
		if err := c.commit(recs); err != nil {
			for i := range results {
				if results[i].Err == nil {
					results[i].Err = err
				}
			}
		}
	})
	return results, err
}

// ListPartitionReassignments lists the ongoing reassignments of the named
// partitions (nil: of every partition). Unknown partitions are left out,
// as Kafka does; an unknown topic is UNKNOWN_TOPIC_OR_PARTITION.
func (c *Controller) ListPartitionReassignments(partitions []TopicPartition) ([]OngoingReassignment, error) {
	if err := c.checkActing(); err != nil {
		return nil, err
	}
	im := c.Image()
	var out []OngoingReassignment
	add := func(name string, p PartitionImage) {
		if p.Reassigning() {
			out = append(out, OngoingReassignment{TopicPartition: TopicPartition{name, p.Partition},
				Replicas: p.Replicas, AddingReplicas: p.AddingReplicas, RemovingReplicas: p.RemovingReplicas})
		}
	}
	if partitions == nil {
		for _, name := range im.TopicNames() {
			for _, p := range im.Topic(name).Partitions {
				add(name, p)
			}
		}
		return out, nil
	}
	for _, tp := range partitions {
		t := im.Topic(tp.Topic)
		if t == nil {
			return nil, fmt.Errorf("%w: topic %s", kerr.UnknownTopicOrPartition, tp.Topic)
		}
		if tp.Partition >= 0 && int(tp.Partition) < len(t.Partitions) {
			add(tp.Topic, t.Partitions[tp.Partition])
		}
	}
	return out, nil
}
