package cluster

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The ISR rule: a batch of AlterPartition requests
// (testdata/rules/alter_isr.txt).

// AlterISRRequest is an ISR change a partition's leader asks for (Kafka's
// AlterPartition), at the leader and partition epochs it knows.
type AlterISRRequest struct {
	TopicID                                        UUID
	Partition, Leader, LeaderEpoch, PartitionEpoch int32
	ISR                                            []int32
}

// AlterISRAnswer is the answer to one AlterISRRequest: the partition's
// state after the change, or Err.
type AlterISRAnswer struct {
	After PartitionImage
	Err   error
	// Entry is the index of the entry (Result.Entries) that holds the
	// change's records; -1 when it has none (refused, or no change).
	Entry int
}

// DecideAlterISR decides the ISR changes that waited for the controller's
// loop, each checked against the image as the ones before it leave it (a
// second change of one partition at the epoch the first replaced is
// refused, as it would be one by one), all in one entry or a few of about
// createEntryBytes: after a node restarts and catches up, its leaders ask
// to add it to thousands of ISRs at once.
func DecideAlterISR(im *Image, cfg RuleConfig, reqs []AlterISRRequest) Result[[]AlterISRAnswer] {
	answers := make([]AlterISRAnswer, len(reqs))
	var entries entryBuilder
	for i, r := range reqs {
		answers[i].Entry = -1
		ch, err := alterISRChange(im, cfg, r)
		if err == nil && ch.Changed() {
			recs := ch.Records()
			var next *Image
			if next, err = applyRecords(im, im.Offset, recs); err == nil {
				var entry int
				if entry, err = entries.add(recs); err == nil {
					im = next
					answers[i].Entry = entry
				}
			}
		}
		answers[i].After, answers[i].Err = ch.After, err
	}
	return Result[[]AlterISRAnswer]{Records: entries.recs, Bounds: entries.bounds, Response: answers}
}

// AlterISRAnswers are the answers once the first committed entries are
// committed and the next failed with err (nil: all committed): the
// changes of the failed entry and of the ones after it fail with err.
func AlterISRAnswers(answers []AlterISRAnswer, committed int, err error) []AlterISRAnswer {
	out := slices.Clone(answers)
	for i, a := range out {
		if a.Entry >= committed {
			out[i].Err = err
		}
	}
	return out
}

// alterISRChange is the change r asks for, checked against im (AlterISR);
// the ISR change that brings the last new replica in completes a
// reassignment in the same entry.
func alterISRChange(im *Image, cfg RuleConfig, r AlterISRRequest) (PartitionChange, error) {
	t := im.TopicByID(r.TopicID)
	if t == nil || r.Partition < 0 || int(r.Partition) >= len(t.Partitions) {
		return PartitionChange{}, fmt.Errorf("%w: topic %s partition %d", kerr.UnknownTopicOrPartition, r.TopicID, r.Partition)
	}
	ctx := im.ElectionContext(t, r.Partition, cfg.Leader, nil)
	ch, err := AlterISR(t.Partitions[r.Partition], r.Leader, r.LeaderEpoch, r.PartitionEpoch, r.ISR, ctx)
	if err != nil {
		return PartitionChange{}, err
	}
	ch.TopicID, ch.Topic = t.ID, t.Name
	if done, ok := MaybeCompleteReassignment(ch.After, ctx); ok {
		done.Before, done.TopicID, done.Topic = ch.Before, t.ID, t.Name
		ch = done
	}
	return ch, nil
}
