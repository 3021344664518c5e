package cluster

import "context"

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
// metadata entry (DecideAlterPartitionReassignments).
func (c *Controller) AlterPartitionReassignments(ctx context.Context, reqs []Reassignment, allowRFChange bool) ([]ReassignmentResult, error) {
	if err := c.checkActing(); err != nil {
		return nil, err
	}
	results := make([]ReassignmentResult, len(reqs))
	err := c.change(ctx, func() {
		r := DecideAlterPartitionReassignments(c.Image(), c.rules(), ReassignRequest{Reassignments: reqs, AllowRFChange: allowRFChange})
		copy(results, r.Response)
		if err := commitResult(c.commit, r); err != nil {
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
// partitions (nil: of every partition; ListReassignments).
func (c *Controller) ListPartitionReassignments(partitions []TopicPartition) ([]OngoingReassignment, error) {
	if err := c.checkActing(); err != nil {
		return nil, err
	}
	return ListReassignments(c.Image(), partitions)
}
