package cluster

import "fmt"

// The controller's pure core. Every decision the controller takes on a
// request is a function of the image, the rule config and the request
// that returns a Result: the records to commit and the answer to give once
// they are committed (Kafka's QuorumController returns a ControllerResult
// the same way; etcd raft's Ready is the same split between deciding and
// doing). A rule never commits, never reads the clock, starts no goroutine
// and touches no socket, file or lock; the image it reads is immutable
// and it leaves it so. The *Controller methods are its driver: read the
// image on the event loop, call the rule, commit Result.Entries in order,
// answer.
//
// One room per rule: core_topics.go (CreateTopics, DeleteTopics,
// CreatePartitions), core_configs.go (AlterConfigs), core_brokers.go
// (registration, fencing, controlled shutdown, log dir, cluster id),
// core_leaders.go (ElectLeaders, leader rebalance), core_isr.go
// (AlterPartition), core_reassign.go (AlterPartitionReassignments),
// core_producer_ids.go (producer-id blocks), core_scram.go (SCRAM
// credentials, AlterUserScramCredentials), core_quota.go (client quotas,
// AlterClientQuotas), core_acl.go (CreateAcls, DeleteAcls); each has a
// script under testdata/rules. The partition rules they compose
// (leader.go, leadership.go, reassign.go, placement.go) are pure in the
// same way.
//
// No rule reads the time today: one that needs it takes it in its
// request, as Liveness.Decide takes the monotonic now.

// Result is what a rule decides.
type Result[T any] struct {
	// Records are committed as one metadata-log entry, unless Bounds cut
	// them into several.
	Records []Record
	// Bounds, ascending, are the indexes of Records where a new entry
	// starts. Only a request whose records pass createEntryBytes has
	// them (CreateTopics, a batch of AlterPartition), so that every entry
	// stays well under a peer connection's frame; an item's records are
	// never cut. The driver commits the entries in order and stops at the
	// first that fails.
	Bounds []int
	// Response is the answer once every entry is committed; where the
	// response names the entry of an item's records, the driver fails the
	// items of an entry that did not commit.
	Response T
	// Err refuses the request as a whole; there are no records then.
	// Errors of single items (a topic, a partition) are in Response.
	Err error
}

// Entries are Records cut at Bounds: what the driver commits, one entry
// each.
func (r Result[T]) Entries() [][]Record {
	if len(r.Records) == 0 {
		return nil
	}
	out := make([][]Record, 0, len(r.Bounds)+1)
	from := 0
	for _, b := range r.Bounds {
		out = append(out, r.Records[from:b])
		from = b
	}
	return append(out, r.Records[from:])
}

// RuleConfig is what the rules know besides the image and the request:
// the broker's defaults and validators, and where a new topic's id comes
// from (the driver gives NewUUID; a script, a counter).
type RuleConfig struct {
	// DefaultPartitions and DefaultReplicationFactor apply when a
	// CreateTopics request asks for -1.
	DefaultPartitions        int32
	DefaultReplicationFactor int16
	// ValidateTopicConfig and ValidateBrokerConfig check one config (nil
	// value = delete); nil accepts everything.
	ValidateTopicConfig  func(key string, value *string) error
	ValidateBrokerConfig func(key string, value *string) error
	// ValidateBrokerLayer checks the dynamic configs of one broker
	// resource (name "" for the cluster-wide defaults) as a whole, as
	// they would be after the change, when keys names a key the change
	// sets or deletes that the check concerns; nil accepts everything.
	ValidateBrokerLayer func(name string, keys []string, configs map[string]string) error
	// Leader is what the partition leader rules fall back to.
	Leader LeaderConfig
	// NewTopicID returns the id of a topic being created.
	NewTopicID func() UUID
}

// entryBuilder gathers the records of a request's items into entries of
// about createEntryBytes, never cutting an item's records.
type entryBuilder struct {
	recs   []Record
	bounds []int
	bytes  int // of the entry being filled
}

// add appends one item's records and returns the index of the entry
// that holds them.
func (b *entryBuilder) add(recs []Record) (int, error) {
	size, err := recordsBytes(recs)
	if err != nil {
		return -1, err
	}
	if len(b.recs) > 0 && b.bytes+size > createEntryBytes {
		b.bounds = append(b.bounds, len(b.recs))
		b.bytes = 0
	}
	b.recs = append(b.recs, recs...)
	b.bytes += size
	return len(b.bounds), nil
}

// commitEntries is the driver's half of a Result: it commits entries in
// order and returns how many committed, and the error of the first that
// did not.
func commitEntries(commit func([]Record) error, entries [][]Record) (int, error) {
	for i, e := range entries {
		if err := commit(e); err != nil {
			return i, err
		}
	}
	return len(entries), nil
}

// commitResult commits a Result that is one entry (or nothing) and
// returns the request's error: the rule's refusal, else the commit's.
func commitResult[T any](commit func([]Record) error, r Result[T]) error {
	if r.Err != nil {
		return r.Err
	}
	if len(r.Bounds) > 0 {
		panic(fmt.Sprintf("cluster: a one-entry rule returned %d entries", len(r.Bounds)+1))
	}
	if len(r.Records) == 0 {
		return nil
	}
	return commit(r.Records)
}
