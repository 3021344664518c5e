package cluster

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The config rule: AlterConfigs and IncrementalAlterConfigs
// (testdata/rules/alter_configs.txt).

// AlterConfigsRequest changes the dynamic configs of one resource: a
// topic (ResourceTopic) or the brokers (ResourceBroker, Name "" for the
// cluster-wide defaults). With Replace, every existing key not in Ops is
// deleted (AlterConfigs); otherwise only Ops apply
// (IncrementalAlterConfigs, after the caller resolved APPEND and
// SUBTRACT).
type AlterConfigsRequest struct {
	ResourceType ResourceType
	Name         string
	Ops          []ConfigOp
	Replace      bool
	ValidateOnly bool
}

// DecideAlterConfigs returns the config records of the change, in key
// order, each key validated; deleting a key that is not set writes
// nothing; a broker resource is then checked as a whole
// (ValidateBrokerLayer). A change of unclean.leader.election.enable brings the leader
// elections it allows into the same entry (electionsAllowedBy).
func DecideAlterConfigs(im *Image, cfg RuleConfig, req AlterConfigsRequest) Result[struct{}] {
	refuse := func(err error) Result[struct{}] { return Result[struct{}]{Err: err} }
	var current map[string]string
	validate := cfg.ValidateBrokerConfig
	switch req.ResourceType {
	case ResourceTopic:
		t := im.Topic(req.Name)
		if t == nil {
			return refuse(fmt.Errorf("%w: topic %q", kerr.UnknownTopicOrPartition, req.Name))
		}
		current = t.Configs
		validate = cfg.ValidateTopicConfig
	case ResourceBroker:
		current = im.BrokerConfigs(req.Name)
	default:
		return refuse(fmt.Errorf("%w: resource type %d", kerr.InvalidRequest, req.ResourceType))
	}
	final := map[string]*string{}
	if req.Replace {
		for k := range current {
			final[k] = nil
		}
	}
	for _, op := range req.Ops {
		final[op.Key] = op.Value
	}
	keys := make([]string, 0, len(final))
	for k := range final {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var recs []Record
	for _, k := range keys {
		v := final[k]
		if validate != nil {
			if err := validate(k, v); err != nil {
				return refuse(fmt.Errorf("%w: %w", kerr.InvalidConfig, err))
			}
		}
		if _, had := current[k]; v == nil && !had {
			continue
		}
		recs = append(recs, Record{Kind: KindConfig, Config: &ConfigRecord{ResourceType: req.ResourceType, Name: req.Name, Key: k, Value: v}})
	}
	if req.ResourceType == ResourceBroker && cfg.ValidateBrokerLayer != nil && len(recs) > 0 {
		// The resource as a whole, as it would be after the change.
		after := map[string]string{}
		for k, v := range current {
			after[k] = v
		}
		for _, k := range keys {
			if v := final[k]; v != nil {
				after[k] = *v
			} else {
				delete(after, k)
			}
		}
		if err := cfg.ValidateBrokerLayer(req.Name, keys, after); err != nil {
			return refuse(fmt.Errorf("%w: %w", kerr.InvalidConfig, err))
		}
	}
	if req.ValidateOnly || len(recs) == 0 {
		return Result[struct{}]{}
	}
	changes, err := electionsAllowedBy(im, cfg.Leader, recs)
	if err != nil {
		return refuse(err)
	}
	return Result[struct{}]{Records: changeRecords(recs, changes)}
}

// electionsAllowedBy are the leader elections that config records make
// possible: once unclean.leader.election.enable is turned on for a topic
// or cluster-wide, a partition without a leader whose only live replicas
// are outside the ISR and ELR elects one of them in the same metadata
// entry, rather than waiting for the next broker to be unfenced. Kafka's
// controller does the same when the setting changes (KIP-966's unclean
// recovery).
func electionsAllowedBy(im *Image, cfg LeaderConfig, recs []Record) ([]PartitionChange, error) {
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
	next, err := applyRecords(im, im.Offset, recs)
	if err != nil {
		return nil, err
	}
	return LeaderlessElections(next, cfg), nil
}
