package txn

import (
	"cmp"
	"fmt"
	"math"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// StateTopic is Kafka's topic of transaction metadata.
const StateTopic = "__transaction_state"

// State is a transaction's state, numbered as Kafka's TransactionState
// (the number is what the log holds).
type State int8

// The states, in Kafka's order.
const (
	Empty State = iota
	Ongoing
	PrepareCommit
	PrepareAbort
	CompleteCommit
	CompleteAbort
	Dead
	PrepareEpochFence
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

func (s State) String() string {
	if int(s) >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int8(s))
}

// States lists every state, in Kafka's order.
func States() []State {
	return []State{Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, Dead, PrepareEpochFence}
}

// TopicPartition names a partition of a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s/%d", tp.Topic, tp.Partition) }

func compareTP(a, b TopicPartition) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// NoProducerEpoch is Kafka's RecordBatch.NO_PRODUCER_EPOCH.
const NoProducerEpoch int16 = -1

// NoProducerID is Kafka's RecordBatch.NO_PRODUCER_ID.
const NoProducerID int64 = -1

// Metadata is one transactional id's state: Kafka's TransactionMetadata
// without its pending-transition field (the core applies a transition at
// once and the driver answers only after its record is durable; a failed
// append unloads the coordinator, which reloads from the log).
type Metadata struct {
	TransactionalID string
	ProducerID      int64
	// PrevProducerID is the producer id before the last rotation (epoch
	// exhaustion), NoProducerID if none. Kept in memory only, as Kafka's
	// value version 0.
	PrevProducerID int64
	ProducerEpoch  int16
	// LastProducerEpoch is the epoch before the last bump, for a retried
	// InitProducerId (KIP-360); NoProducerEpoch after a load.
	LastProducerEpoch int16
	TimeoutMs         int32
	State             State
	// Partitions are the transaction's partitions, sorted.
	Partitions   []TopicPartition
	StartMs      int64 // the transaction's start, -1 when none
	LastUpdateMs int64
}

func (m *Metadata) clone() *Metadata {
	c := *m
	c.Partitions = clonePartitions(m.Partitions)
	return &c
}

// The partition lists use sort.Search and plain loops, not the generic
// slices functions: each element type instantiates them anew, and the
// binary has a size budget (docs/ARCHITECTURE.md, "Binary size").

func clonePartitions(tps []TopicPartition) []TopicPartition {
	if tps == nil {
		return nil
	}
	return append(make([]TopicPartition, 0, len(tps)), tps...)
}

// search is the index of tp in the sorted partitions, or where it goes.
func (m *Metadata) search(tp TopicPartition) (int, bool) {
	i := sort.Search(len(m.Partitions), func(i int) bool { return compareTP(m.Partitions[i], tp) >= 0 })
	return i, i < len(m.Partitions) && m.Partitions[i] == tp
}

func (m *Metadata) hasPartition(tp TopicPartition) bool {
	_, ok := m.search(tp)
	return ok
}

func (m *Metadata) addPartition(tp TopicPartition) {
	i, ok := m.search(tp)
	if !ok {
		m.Partitions = append(m.Partitions, TopicPartition{})
		copy(m.Partitions[i+1:], m.Partitions[i:])
		m.Partitions[i] = tp
	}
}

// sortPartitions sorts tps and drops duplicates.
func sortPartitions(tps []TopicPartition) []TopicPartition {
	sort.Slice(tps, func(i, j int) bool { return compareTP(tps[i], tps[j]) < 0 })
	out := tps[:0]
	for i, tp := range tps {
		if i == 0 || tp != tps[i-1] {
			out = append(out, tp)
		}
	}
	return out
}

// epochExhausted is Kafka's isEpochExhausted: the epoch cannot be bumped
// once more and still leave room for the bump a fence needs.
func epochExhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }

// Config is the coordinator's settings, Kafka's names.
type Config struct {
	// MaxTimeoutMs is transaction.max.timeout.ms.
	MaxTimeoutMs int32
	// IDExpirationMs is transactional.id.expiration.ms.
	IDExpirationMs int64
}

// DefaultConfig is Kafka's defaults.
func DefaultConfig() Config {
	return Config{MaxTimeoutMs: 900000, IDExpirationMs: 604800000}
}

// Validate refuses settings the coordinator cannot run with.
func (c Config) Validate() error {
	if c.MaxTimeoutMs <= 0 || c.IDExpirationMs <= 0 {
		return fmt.Errorf("txn: transaction.max.timeout.ms %d and transactional.id.expiration.ms %d must be positive", c.MaxTimeoutMs, c.IDExpirationMs)
	}
	return nil
}

// PartitionFor is the __transaction_state partition of a transactional
// id: Kafka's Utils.abs(transactionalId.hashCode) % partitionCount, the
// same mapping as groups.PartitionFor.
func PartitionFor(id string, partitionCount int32) int32 {
	if partitionCount <= 0 {
		panic(fmt.Sprintf("txn: PartitionFor with %d partitions", partitionCount))
	}
	var h int32
	for _, r := range id {
		// Java hashes UTF-16 code units.
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	if h == math.MinInt32 {
		return 0
	}
	if h < 0 {
		h = -h
	}
	return h % partitionCount
}

// Kafka error codes the coordinator answers with.
var (
	errNone                     int16 = 0
	errNotCoordinator                 = kerr.NotCoordinator.Code
	errLoadInProgress                 = kerr.CoordinatorLoadInProgress.Code
	errInvalidRequest                 = kerr.InvalidRequest.Code
	errInvalidTxnTimeout              = kerr.InvalidTransactionTimeout.Code
	errConcurrentTransactions         = kerr.ConcurrentTransactions.Code
	errProducerFenced                 = kerr.ProducerFenced.Code
	errInvalidProducerIDMapping       = kerr.InvalidProducerIDMapping.Code
	errInvalidTxnState                = kerr.InvalidTxnState.Code
	errUnknownServerError             = kerr.UnknownServerError.Code
)
