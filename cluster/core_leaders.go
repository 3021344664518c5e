package cluster

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The leader election rules asked of the controller: ElectLeaders and
// auto.leader.rebalance (testdata/rules/elect_leaders.txt,
// rebalance.txt).

// ElectLeadersRequest is Kafka's ElectLeaders: Election is ElectPreferred
// or ElectUnclean; Partitions nil means every partition.
type ElectLeadersRequest struct {
	Election   Election
	Partitions []TopicPartition
}

// DecideElectLeaders runs the elections (ElectLeadersChange), all in one
// entry, each partition answered on its own. With Partitions nil it tries
// every partition and answers only those where an election was needed.
func DecideElectLeaders(im *Image, cfg RuleConfig, req ElectLeadersRequest) Result[[]ElectLeadersResult] {
	partitions := req.Partitions
	all := partitions == nil
	if all {
		for _, name := range im.TopicNames() {
			for _, p := range im.Topic(name).Partitions {
				partitions = append(partitions, TopicPartition{name, p.Partition})
			}
		}
	}
	var results []ElectLeadersResult
	var recs []Record
	for _, tp := range partitions {
		ch, err := ElectLeadersChange(im, tp.Topic, tp.Partition, req.Election, cfg.Leader)
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
	return Result[[]ElectLeadersResult]{Records: recs, Response: results}
}

// DecideRebalanceLeaders is one auto.leader.rebalance check: preferred
// elections for the partitions of every broker whose leader imbalance is
// above percentPerBroker (RebalanceLeadersChanges), as one entry. The
// response is the changes.
func DecideRebalanceLeaders(im *Image, cfg RuleConfig, percentPerBroker int) Result[[]PartitionChange] {
	changes := RebalanceLeadersChanges(im, percentPerBroker, cfg.Leader)
	return Result[[]PartitionChange]{Records: changeRecords(nil, changes), Response: changes}
}
