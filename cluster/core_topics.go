package cluster

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The topic rules: CreateTopics, DeleteTopics, CreatePartitions
// (testdata/rules/create_topics.txt, delete_topics.txt,
// create_partitions.txt).

// CreateTopicsRequest is a CreateTopics request.
type CreateTopicsRequest struct {
	Topics []CreateTopic
	// ValidateOnly answers as if created and returns no records.
	ValidateOnly bool
}

// CreateTopicsResponse answers each topic of the request.
type CreateTopicsResponse struct {
	Topics []TopicResult
	// Entry[i] is the index of the entry (Result.Entries) that holds the
	// records of Topics[i]; -1 when it has none.
	Entry []int
}

// DecideCreateTopics creates topics; each succeeds or fails on its own.
// Each topic is validated against the image as the topics before it in
// the request leave it (a name asked twice exists the second time, and
// placement balances over the partitions placed before). The records of
// the valid ones are one entry, or entries of whole topics of about
// createEntryBytes for a request of many partitions, so the image never
// shows a topic without its partitions.
func DecideCreateTopics(im *Image, cfg RuleConfig, req CreateTopicsRequest) Result[CreateTopicsResponse] {
	resp := CreateTopicsResponse{Topics: make([]TopicResult, len(req.Topics)), Entry: make([]int, len(req.Topics))}
	var entries entryBuilder
	for i, t := range req.Topics {
		resp.Entry[i] = -1
		res, recs := createTopicRecords(im, cfg, t, req.ValidateOnly)
		resp.Topics[i] = res
		if res.Err != nil || req.ValidateOnly {
			continue
		}
		next, err := applyRecords(im, im.Offset, recs)
		if err != nil {
			// The records were validated against im: a mismatch is a
			// controller bug, refused before anything is written.
			resp.Topics[i].Err = fmt.Errorf("%w: topic %q: %w", kerr.UnknownServerError, t.Name, err)
			resp.Topics[i].ID = UUID{}
			continue
		}
		entry, err := entries.add(recs)
		if err != nil {
			resp.Topics[i].Err = err
			resp.Topics[i].ID = UUID{}
			continue
		}
		im = next
		resp.Entry[i] = entry
	}
	return Result[CreateTopicsResponse]{Records: entries.recs, Bounds: entries.bounds, Response: resp}
}

// Answer is the answer to the request once the first committed entries
// are committed and the next failed with err (nil: all committed): the
// topics of the failed entry and of the ones after it fail with err.
func (r CreateTopicsResponse) Answer(committed int, err error) []TopicResult {
	out := slices.Clone(r.Topics)
	for i, e := range r.Entry {
		if e >= committed {
			out[i].Err, out[i].ID = err, UUID{}
		}
	}
	return out
}

// createTopicRecords validates t against im and returns its result (the
// id set) and the records that create it; none with an error or
// validateOnly.
func createTopicRecords(im *Image, cfg RuleConfig, t CreateTopic, validateOnly bool) (TopicResult, []Record) {
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
	assignment, err := assignReplicas(im, cfg, t)
	if err != nil {
		res.Err = err
		return res, nil
	}
	keys := make([]string, 0, len(t.Configs))
	for k := range t.Configs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if cfg.ValidateTopicConfig != nil {
		for _, k := range keys {
			if err := cfg.ValidateTopicConfig(k, t.Configs[k]); err != nil {
				res.Err = fmt.Errorf("%w: %w", kerr.InvalidConfig, err)
				return res, nil
			}
		}
	}
	res.NumPartitions, res.ReplicationFactor = int32(len(assignment)), int16(len(assignment[0]))
	if validateOnly {
		return res, nil
	}
	id := cfg.NewTopicID()
	recs := []Record{{Kind: KindTopic, Topic: &TopicRecord{Name: t.Name, ID: id}}}
	for _, k := range keys {
		if v := t.Configs[k]; v != nil {
			recs = append(recs, Record{Kind: KindConfig, Config: &ConfigRecord{ResourceType: ResourceTopic, Name: t.Name, Key: k, Value: v}})
		}
	}
	recs = append(recs, newPartitionRecords(id, 0, assignment)...)
	res.ID = id
	return res, recs
}

// newPartitionRecords are the records of new partitions from first on,
// with their replicas: every replica in the ISR, the first leading.
func newPartitionRecords(topicID UUID, first int32, assignment [][]int32) []Record {
	recs := make([]Record, 0, len(assignment))
	for i, replicas := range assignment {
		recs = append(recs, Record{Kind: KindPartition, Partition: &PartitionRecord{
			TopicID: topicID, Partition: first + int32(i), Replicas: replicas, ISR: initialISR(replicas), Leader: replicas[0],
		}})
	}
	return recs
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
func assignReplicas(im *Image, cfg RuleConfig, t CreateTopic) ([][]int32, error) {
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
		n = cfg.DefaultPartitions
	}
	if rf == -1 {
		rf = cfg.DefaultReplicationFactor
	}
	if n > maxPartitionsPerRequest {
		return nil, fmt.Errorf("%w: %d partitions is over wren's limit of %d per topic", kerr.InvalidPartitions, n, maxPartitionsPerRequest)
	}
	return PlaceReplicas(im.placementBrokers(), im.assignments(), int(n), int(rf))
}

// DecideDeleteTopics deletes topics by name, all in one entry (a removal
// record is a few dozen bytes); a name asked twice is unknown the second
// time, as it would be one by one. The topics answered without an error
// are the ones the records remove.
func DecideDeleteTopics(im *Image, _ RuleConfig, names []string) Result[[]TopicResult] {
	results := make([]TopicResult, len(names))
	var recs []Record
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
	}
	return Result[[]TopicResult]{Records: recs, Response: results}
}

// CreatePartitionsRequest raises topic Name's partition count to Count.
type CreatePartitionsRequest struct {
	Name  string
	Count int32
	// Assignment, if set, gives the new partitions' replicas.
	Assignment   [][]int32
	ValidateOnly bool
}

// DecideCreatePartitions adds partitions to a topic, placed counting
// every existing partition (this topic's too), so the new ones even out
// the brokers' load; or as the request assigns them, checked.
func DecideCreatePartitions(im *Image, _ RuleConfig, req CreatePartitionsRequest) Result[struct{}] {
	refuse := func(err error) Result[struct{}] { return Result[struct{}]{Err: err} }
	t := im.Topic(req.Name)
	if t == nil {
		return refuse(fmt.Errorf("%w: topic %q", kerr.UnknownTopicOrPartition, req.Name))
	}
	have, count := int32(len(t.Partitions)), req.Count
	if count <= have {
		return refuse(fmt.Errorf("%w: topic currently has %d partitions, %d would not be an increase", kerr.InvalidPartitions, have, count))
	}
	if count-have > maxPartitionsPerRequest {
		return refuse(fmt.Errorf("%w: %d new partitions is over wren's limit of %d", kerr.InvalidPartitions, count-have, maxPartitionsPerRequest))
	}
	rf := len(t.Partitions[0].Replicas)
	add := req.Assignment
	if len(add) > 0 {
		if int32(len(add)) != count-have {
			return refuse(fmt.Errorf("%w: %d assignments for %d new partitions", kerr.InvalidReplicaAssignment, len(add), count-have))
		}
		if err := ValidateAssignment(im.placementBrokers(), add, rf); err != nil {
			return refuse(err)
		}
	} else {
		var err error
		if add, err = PlaceReplicas(im.placementBrokers(), im.assignments(), int(count-have), rf); err != nil {
			return refuse(err)
		}
	}
	if req.ValidateOnly {
		return Result[struct{}]{}
	}
	return Result[struct{}]{Records: newPartitionRecords(t.ID, have, add)}
}
