package cluster

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The reassignment rules: AlterPartitionReassignments starts and cancels
// reassignments (reassign.go has the per-partition rules; AlterISR
// completes them), ListPartitionReassignments reads them
// (testdata/rules/reassign.txt).

// ReassignRequest is Kafka's AlterPartitionReassignments. AllowRFChange
// false refuses a target whose size differs from the partition's
// replication factor (INVALID_REPLICATION_FACTOR, KIP-860).
type ReassignRequest struct {
	Reassignments []Reassignment
	AllowRFChange bool
}

// DecideAlterPartitionReassignments starts or cancels reassignments, all
// in one entry. Each partition succeeds or fails on its own; a partition
// named twice is INVALID_REQUEST.
func DecideAlterPartitionReassignments(im *Image, cfg RuleConfig, req ReassignRequest) Result[[]ReassignmentResult] {
	results := make([]ReassignmentResult, len(req.Reassignments))
	count := map[TopicPartition]int{}
	for _, r := range req.Reassignments {
		count[r.TopicPartition]++
	}
	registered := func(b int32) bool { _, ok := im.Broker(b); return ok }
	var recs []Record
	for i, r := range req.Reassignments {
		results[i].TopicPartition = r.TopicPartition
		if count[r.TopicPartition] > 1 {
			results[i].Err = fmt.Errorf("%w: %s-%d is named twice", kerr.InvalidRequest, r.Topic, r.Partition)
			continue
		}
		if err := im.checkPartition(r.Topic, r.Partition); err != nil {
			results[i].Err = err
			continue
		}
		t := im.Topic(r.Topic)
		p := t.Partitions[r.Partition]
		if r.Replicas != nil && !req.AllowRFChange && len(r.Replicas) != len(p.TargetReplicas()) {
			results[i].Err = fmt.Errorf("%w: the target %v would change the replication factor of %s-%d from %d",
				kerr.InvalidReplicationFactor, r.Replicas, r.Topic, r.Partition, len(p.TargetReplicas()))
			continue
		}
		ch, err := StartReassignment(p, r.Replicas, registered, im.ElectionContext(t, r.Partition, cfg.Leader, nil))
		if err != nil {
			// The answer is the partition's own: the error need not name
			// it, and a prefix would hide the Kafka code's text.
			results[i].Err = err
			continue
		}
		ch.TopicID, ch.Topic = t.ID, t.Name
		recs = append(recs, ch.Records()...)
	}
	return Result[[]ReassignmentResult]{Records: recs, Response: results}
}

// ListReassignments lists the ongoing reassignments of the named
// partitions (nil: of every partition). Unknown partitions are left out,
// as Kafka does; an unknown topic is UNKNOWN_TOPIC_OR_PARTITION. It
// only reads the image.
func ListReassignments(im *Image, partitions []TopicPartition) ([]OngoingReassignment, error) {
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
