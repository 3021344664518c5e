package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// maxTopicNameLength is Kafka's limit (249: room for a partition suffix
// and ".deleted" within 255-byte file names).
const maxTopicNameLength = 249

// ValidateTopicName applies Kafka's rules (Topic.validate): 1 to 249
// characters from [a-zA-Z0-9._-], and not "." or "..". They also keep a
// name from escaping the data directory.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: topic name is illegal, it can't be empty", kerr.InvalidTopicException)
	case name == "." || name == "..":
		return fmt.Errorf("%w: topic name cannot be \".\" or \"..\"", kerr.InvalidTopicException)
	case len(name) > maxTopicNameLength:
		return fmt.Errorf("%w: topic name is illegal, it can't be longer than %d characters", kerr.InvalidTopicException, maxTopicNameLength)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: topic name %q is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", kerr.InvalidTopicException, name)
		}
	}
	return nil
}

// IsInternalTopic reports Kafka's internal topics, hidden from Metadata
// unless asked for.
func IsInternalTopic(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state"
}

// CreateTopic is one topic of a CreateTopics request.
type CreateTopic struct {
	Name              string
	NumPartitions     int32 // -1: num.partitions
	ReplicationFactor int16 // -1: default.replication.factor
	// Assignment, if set, gives each partition's replicas explicitly.
	Assignment [][]int32
	Configs    map[string]*string
}

// TopicResult is the outcome for one topic.
type TopicResult struct {
	Name              string
	ID                UUID
	NumPartitions     int32
	ReplicationFactor int16
	Err               error
}

// CreateTopics creates topics; each succeeds or fails on its own. With
// validateOnly nothing is written. DecideCreateTopics decides; its
// records are one metadata-log entry, or entries of whole topics for a
// request of many partitions. An entry that fails to commit fails its
// topics and the ones after it; the entries before it stay created.
func (c *Controller) CreateTopics(ctx context.Context, topics []CreateTopic, validateOnly bool) ([]TopicResult, error) {
	results := make([]TopicResult, len(topics))
	err := c.change(ctx, func() {
		r := DecideCreateTopics(c.Image(), c.rules(), CreateTopicsRequest{Topics: topics, ValidateOnly: validateOnly})
		committed, err := commitEntries(c.commit, r.Entries())
		copy(results, r.Response.Answer(committed, err))
	})
	return perTopic(results, topicNames(topics), err)
}

// createEntryBytes is the size a metadata-log entry of created topics
// grows to before the next topic starts another entry; one topic alone
// may exceed it (maxPartitionsPerRequest partitions are about 2 MB of
// records). Every entry stays well under the peer connections' frame
// limit (quorum.DefaultMaxFrameBytes), and the metadata log's fetch
// answers are bounded in bytes too (metalog.Config.MaxFetchBytes).
const createEntryBytes = 1 << 20

// recordsBytes is the encoded size of recs in a metadata-log entry.
func recordsBytes(recs []Record) (int, error) {
	b, err := json.Marshal(recs)
	if err != nil {
		return 0, fmt.Errorf("cluster: metadata records: %w", err)
	}
	return len(b), nil
}

func topicNames(topics []CreateTopic) []string {
	names := make([]string, len(topics))
	for i, t := range topics {
		names[i] = t.Name
	}
	return names
}

// perTopic answers a NOT_CONTROLLER refusal of the whole call (see change)
// on each topic, as a change the quorum refused is answered.
func perTopic(results []TopicResult, names []string, err error) ([]TopicResult, error) {
	if !errors.Is(err, kerr.NotController) {
		return results, err
	}
	for i, name := range names {
		results[i] = TopicResult{Name: name, Err: err}
	}
	return results, nil
}

// maxPartitionsPerRequest bounds what one request can make a node create
// (each partition is a directory and three files).
const maxPartitionsPerRequest = 10000

// DeleteTopics deletes topics by name, all in one metadata-log entry
// (DecideDeleteTopics).
func (c *Controller) DeleteTopics(ctx context.Context, names []string) ([]TopicResult, error) {
	results := make([]TopicResult, len(names))
	err := c.change(ctx, func() {
		r := DecideDeleteTopics(c.Image(), c.rules(), names)
		copy(results, r.Response)
		if err := commitResult(c.commit, r); err != nil {
			for i := range results {
				if results[i].Err == nil {
					results[i].Err = err
				}
			}
		}
	})
	return perTopic(results, names, err)
}

// CreatePartitions raises a topic's partition count to count
// (DecideCreatePartitions).
func (c *Controller) CreatePartitions(ctx context.Context, name string, count int32, assignment [][]int32, validateOnly bool) error {
	var res error
	err := c.change(ctx, func() {
		res = commitResult(c.commit, DecideCreatePartitions(c.Image(), c.rules(),
			CreatePartitionsRequest{Name: name, Count: count, Assignment: assignment, ValidateOnly: validateOnly}))
	})
	if err != nil {
		return err
	}
	return res
}

// ConfigOp sets (Value non-nil) or deletes one config key.
type ConfigOp struct {
	Key   string
	Value *string
}

// AlterConfigs changes a topic's (ResourceTopic) or the brokers'
// (ResourceBroker) dynamic configs. With replace, every existing key not in
// ops is deleted (AlterConfigs); otherwise only ops apply
// (IncrementalAlterConfigs, after the caller resolved APPEND and SUBTRACT).
// DecideAlterConfigs decides.
func (c *Controller) AlterConfigs(ctx context.Context, rt ResourceType, name string, ops []ConfigOp, replace, validateOnly bool) error {
	var res error
	err := c.change(ctx, func() {
		res = commitResult(c.commit, DecideAlterConfigs(c.Image(), c.rules(),
			AlterConfigsRequest{ResourceType: rt, Name: name, Ops: ops, Replace: replace, ValidateOnly: validateOnly}))
	})
	if err != nil {
		return err
	}
	return res
}

// initialISR is a new partition's in-sync replicas: all of them, as
// Kafka does. Empty logs are in sync; a follower that then falls behind
// for replica.lag.time.max.ms leaves the ISR through its leader.
func initialISR(replicas []int32) []int32 {
	return slices.Clone(replicas)
}
