package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

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
// validateOnly nothing is written.
//
// Each topic is validated against the image as the topics before it in
// the request leave it (a name asked twice exists the second time, and
// placement balances over the partitions placed before), and the records
// of the valid ones are committed together: one metadata-log entry per
// group of topics up to createEntryBytes, so a request of many topics
// costs a few quorum round trips, not one per topic. A topic's records are
// never split across entries, so the image never shows a topic without
// its partitions. A group that fails to commit fails its topics and the
// ones after it; the groups before it stay created.
func (c *Controller) CreateTopics(ctx context.Context, topics []CreateTopic, validateOnly bool) ([]TopicResult, error) {
	results := make([]TopicResult, len(topics))
	err := c.change(ctx, func() {
		im := c.Image()
		var groups []topicGroup
		for i, t := range topics {
			res, recs := c.createTopicRecords(im, t, validateOnly)
			results[i] = res
			if res.Err != nil || validateOnly {
				continue
			}
			next, err := applyRecords(im, im.Offset, recs)
			if err != nil {
				// The records were validated against im: a mismatch is a
				// controller bug, refused before anything is written.
				results[i].Err = fmt.Errorf("%w: topic %q: %w", kerr.UnknownServerError, t.Name, err)
				continue
			}
			im = next
			size, err := recordsBytes(recs)
			if err != nil {
				results[i].Err = err
				continue
			}
			if n := len(groups); n == 0 || groups[n-1].bytes+size > createEntryBytes {
				groups = append(groups, topicGroup{})
			}
			g := &groups[len(groups)-1]
			g.topics = append(g.topics, i)
			g.recs = append(g.recs, recs...)
			g.bytes += size
		}
		var failed error
		for _, g := range groups {
			if failed == nil {
				failed = c.commit(g.recs)
			}
			for _, i := range g.topics {
				if failed != nil {
					results[i].Err = failed
					results[i].ID = UUID{}
				}
			}
		}
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

// topicGroup is topics of one CreateTopics committed as one entry.
type topicGroup struct {
	topics []int // indexes into the request
	recs   []Record
	bytes  int
}

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

// createTopicRecords validates t against im and returns its result (the
// id set) and the records that create it; none with an error or
// validateOnly.
func (c *Controller) createTopicRecords(im *Image, t CreateTopic, validateOnly bool) (TopicResult, []Record) {
	res := TopicResult{Name: t.Name}
	if err := ValidateTopicName(t.Name); err != nil {
		res.Err = err
		return res, nil
	}
	if im.Topic(t.Name) != nil {
		res.Err = fmt.Errorf("%w: topic %q already exists", kerr.TopicAlreadyExists, t.Name)
		return res, nil
	}
	if other, ok := im.collidingTopic(t.Name); ok {
		res.Err = fmt.Errorf("%w: topic %q collides with existing topic %q ('.' and '_' collide in metric names)", kerr.InvalidTopicException, t.Name, other)
		return res, nil
	}
	assignment, err := c.assignReplicas(im, t)
	if err != nil {
		res.Err = err
		return res, nil
	}
	for k, v := range t.Configs {
		if c.cfg.ValidateTopicConfig != nil {
			if err := c.cfg.ValidateTopicConfig(k, v); err != nil {
				res.Err = fmt.Errorf("%w: %w", kerr.InvalidConfig, err)
				return res, nil
			}
		}
	}
	res.NumPartitions, res.ReplicationFactor = int32(len(assignment)), int16(len(assignment[0]))
	if validateOnly {
		return res, nil
	}
	id := NewUUID()
	recs := []Record{{Kind: KindTopic, Topic: &TopicRecord{Name: t.Name, ID: id}}}
	keys := make([]string, 0, len(t.Configs))
	for k := range t.Configs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if v := t.Configs[k]; v != nil {
			recs = append(recs, Record{Kind: KindConfig, Config: &ConfigRecord{ResourceType: ResourceTopic, Name: t.Name, Key: k, Value: v}})
		}
	}
	for p, replicas := range assignment {
		recs = append(recs, Record{Kind: KindPartition, Partition: &PartitionRecord{
			TopicID: id, Partition: int32(p), Replicas: replicas, ISR: initialISR(replicas), Leader: replicas[0],
		}})
	}
	res.ID = id
	return res, recs
}

// collidingTopic returns an existing topic whose name differs from name
// only in '.' against '_'. Only a name holding one of them can collide,
// so most names cost no scan of the topics.
func (im *Image) collidingTopic(name string) (string, bool) {
	if !strings.ContainsAny(name, "._") {
		return "", false
	}
	norm := strings.ReplaceAll(name, ".", "_")
	for other := range im.topics {
		if other != name && strings.ContainsAny(other, "._") && strings.ReplaceAll(other, ".", "_") == norm {
			return other, true
		}
	}
	return "", false
}

// assignReplicas returns the topic's replica assignment: the manual one,
// validated, or one placed over the registered brokers (placement.go).
func (c *Controller) assignReplicas(im *Image, t CreateTopic) ([][]int32, error) {
	if len(t.Assignment) > 0 {
		if t.NumPartitions != -1 || t.ReplicationFactor != -1 {
			return nil, fmt.Errorf("%w: both a replica assignment and a partition count or replication factor were given", kerr.InvalidRequest)
		}
		if len(t.Assignment) > maxPartitionsPerRequest {
			return nil, fmt.Errorf("%w: %d partitions is over wren's limit of %d per topic", kerr.InvalidPartitions, len(t.Assignment), maxPartitionsPerRequest)
		}
		if err := ValidateAssignment(im.placementBrokers(), t.Assignment, -1); err != nil {
			return nil, err
		}
		return t.Assignment, nil
	}
	n, rf := t.NumPartitions, t.ReplicationFactor
	if n == -1 {
		n = c.cfg.DefaultPartitions
	}
	if rf == -1 {
		rf = c.cfg.DefaultReplicationFactor
	}
	if n > maxPartitionsPerRequest {
		return nil, fmt.Errorf("%w: %d partitions is over wren's limit of %d per topic", kerr.InvalidPartitions, n, maxPartitionsPerRequest)
	}
	return PlaceReplicas(im.placementBrokers(), im.assignments(), int(n), int(rf))
}

// maxPartitionsPerRequest bounds what one request can make a node create
// (each partition is a directory and three files).
const maxPartitionsPerRequest = 10000

// DeleteTopics deletes topics by name, all in one metadata-log entry (a
// removal record is a few dozen bytes); a name asked twice is unknown the
// second time, as it would be one by one.
func (c *Controller) DeleteTopics(ctx context.Context, names []string) ([]TopicResult, error) {
	results := make([]TopicResult, len(names))
	err := c.change(ctx, func() {
		im := c.Image()
		var recs []Record
		var removed []int
		for i, name := range names {
			results[i] = TopicResult{Name: name}
			t := im.Topic(name)
			if t == nil {
				results[i].Err = fmt.Errorf("%w: topic %q", kerr.UnknownTopicOrPartition, name)
				continue
			}
			rec := Record{Kind: KindRemoveTopic, RemoveTopic: &RemoveTopicRecord{ID: t.ID}}
			next, err := applyRecords(im, im.Offset, []Record{rec})
			if err != nil {
				results[i].Err = fmt.Errorf("%w: topic %q: %w", kerr.UnknownServerError, name, err)
				continue
			}
			im = next
			results[i].ID = t.ID
			recs = append(recs, rec)
			removed = append(removed, i)
		}
		if len(recs) == 0 {
			return
		}
		if err := c.commit(recs); err != nil {
			for _, i := range removed {
				results[i].Err = err
			}
		}
	})
	return perTopic(results, names, err)
}

// CreatePartitions raises a topic's partition count to count.
func (c *Controller) CreatePartitions(ctx context.Context, name string, count int32, assignment [][]int32, validateOnly bool) error {
	var res error
	err := c.change(ctx, func() {
		t := c.Image().Topic(name)
		if t == nil {
			res = fmt.Errorf("%w: topic %q", kerr.UnknownTopicOrPartition, name)
			return
		}
		have := int32(len(t.Partitions))
		if count <= have {
			res = fmt.Errorf("%w: topic currently has %d partitions, %d would not be an increase", kerr.InvalidPartitions, have, count)
			return
		}
		if count-have > maxPartitionsPerRequest {
			res = fmt.Errorf("%w: %d new partitions is over wren's limit of %d", kerr.InvalidPartitions, count-have, maxPartitionsPerRequest)
			return
		}
		rf := len(t.Partitions[0].Replicas)
		var add [][]int32
		if len(assignment) > 0 {
			if int32(len(assignment)) != count-have {
				res = fmt.Errorf("%w: %d assignments for %d new partitions", kerr.InvalidReplicaAssignment, len(assignment), count-have)
				return
			}
			if res = ValidateAssignment(c.Image().placementBrokers(), assignment, rf); res != nil {
				return
			}
			add = assignment
		} else {
			// Placement counts every existing partition, this topic's too,
			// so the new ones even out the brokers' load.
			im := c.Image()
			if add, res = PlaceReplicas(im.placementBrokers(), im.assignments(), int(count-have), rf); res != nil {
				return
			}
		}
		if validateOnly {
			return
		}
		var recs []Record
		for i, replicas := range add {
			recs = append(recs, Record{Kind: KindPartition, Partition: &PartitionRecord{
				TopicID: t.ID, Partition: have + int32(i), Replicas: replicas, ISR: initialISR(replicas), Leader: replicas[0],
			}})
		}
		res = c.commit(recs)
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
func (c *Controller) AlterConfigs(ctx context.Context, rt ResourceType, name string, ops []ConfigOp, replace, validateOnly bool) error {
	var res error
	err := c.change(ctx, func() {
		var current map[string]string
		validate := c.cfg.ValidateBrokerConfig
		switch rt {
		case ResourceTopic:
			t := c.Image().Topic(name)
			if t == nil {
				res = fmt.Errorf("%w: topic %q", kerr.UnknownTopicOrPartition, name)
				return
			}
			current = t.Configs
			validate = c.cfg.ValidateTopicConfig
		case ResourceBroker:
			current = c.Image().BrokerConfigs(name)
		default:
			res = fmt.Errorf("%w: resource type %d", kerr.InvalidRequest, rt)
			return
		}
		final := map[string]*string{}
		if replace {
			for k := range current {
				final[k] = nil
			}
		}
		for _, op := range ops {
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
					res = fmt.Errorf("%w: %w", kerr.InvalidConfig, err)
					return
				}
			}
			if _, had := current[k]; v == nil && !had {
				continue
			}
			recs = append(recs, Record{Kind: KindConfig, Config: &ConfigRecord{ResourceType: rt, Name: name, Key: k, Value: v}})
		}
		if validateOnly || len(recs) == 0 {
			return
		}
		changes, err := c.electionsAllowedBy(recs)
		if err != nil {
			res = err
			return
		}
		res = c.commit(changeRecords(recs, changes))
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
