package replication

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/engine"
)

// ErrStaleLeaderEpoch is a leadership change at a leader epoch older than
// the replica's: a late image. The replica keeps what it has.
var ErrStaleLeaderEpoch = errors.New("replication: stale leader epoch")

// Partition is this node's replica of one partition: its log plus the
// leader state that decides what consumers may see.
//
// Today every partition has one replica (a one-node cluster): the leader's
// high watermark is the offset its own appends reached under the flush
// policy (durable under ack, written under interval). Follower fetch, ISR
// changes and truncation by leader epoch extend this type with clustering.
type Partition struct {
	tp  engine.TopicPartition
	log *engine.Log

	mu          sync.Mutex
	isLeader    bool
	leaderEpoch int32
	// Invariant: LogStartOffset <= highWatermark <= LogEndOffset.
	highWatermark int64
	// hwChanged is closed, and replaced, whenever the high watermark moves:
	// Fetch long polls wait on it.
	hwChanged chan struct{}
	// isr and minISR are the partition's in-sync replicas and
	// min.insync.replicas as the metadata image says (setISR): an acks=all
	// append is refused while the ISR is smaller (Kafka's
	// Partition.appendRecordsToLeader), whoever appends: a producer or
	// the group coordinator.
	isr    []int32
	minISR int
}

func newPartition(tp engine.TopicPartition, log *engine.Log) *Partition {
	return &Partition{tp: tp, log: log, hwChanged: make(chan struct{}), highWatermark: log.DurableOffset()}
}

// TopicPartition names the partition.
func (p *Partition) TopicPartition() engine.TopicPartition { return p.tp }

// Log is the partition's log.
func (p *Partition) Log() *engine.Log { return p.log }

// becomeLeader makes this replica the leader at epoch.
func (p *Partition) becomeLeader(epoch int32) error {
	return p.becomeLeaderOrFollower(true, epoch)
}

// becomeLeaderOrFollower makes this replica the leader at epoch when lead
// is set, and stops it leading otherwise, so that its appends are refused
// (and the group coordinator, which follows Leader, unloads). An epoch
// older than the replica's is stale and changes nothing: leadership moves
// only forward, as the epochs the controller hands out.
func (p *Partition) becomeLeaderOrFollower(lead bool, epoch int32) error {
	p.mu.Lock()
	if epoch < p.leaderEpoch {
		current := p.leaderEpoch
		p.mu.Unlock()
		return fmt.Errorf("%w: %s at epoch %d, replica at %d", ErrStaleLeaderEpoch, p.tp, epoch, current)
	}
	p.isLeader, p.leaderEpoch = lead, epoch
	// The log checks the same leadership where each append commits: an
	// append that read the old leadership before this change is refused
	// there rather than landing as the old leader.
	p.log.FenceLeaderAppends(lead, epoch)
	p.mu.Unlock()
	if !lead {
		return nil
	}
	p.maybeAdvanceHighWatermark()
	return p.log.AssignLeaderEpoch(epoch)
}

// setISR records the partition's ISR and min.insync.replicas from the
// metadata image.
func (p *Partition) setISR(isr []int32, minISR int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isr, p.minISR = slices.Clone(isr), minISR
}

// ISR is the partition's in-sync replicas as the metadata image says.
func (p *Partition) ISR() []int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.isr)
}

// Leader reports whether this replica leads, and at which epoch.
func (p *Partition) Leader() (bool, int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.isLeader, p.leaderEpoch
}

// HighWatermark is the offset below which consumers may read.
func (p *Partition) HighWatermark() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.highWatermark
}

// HighWatermarkChanged returns a channel closed when the high watermark
// next moves.
func (p *Partition) HighWatermarkChanged() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hwChanged
}

// maybeAdvanceHighWatermark moves the high watermark to what the replicas
// that count have: with one replica, its durable offset under flush policy
// ack, its log end offset under interval.
func (p *Partition) maybeAdvanceHighWatermark() {
	var hw int64
	if p.log.Options().FlushPolicy == engine.FlushAck {
		hw = p.log.DurableOffset()
	} else {
		hw = p.log.LogEndOffset()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if hw > p.highWatermark {
		p.highWatermark = hw
		close(p.hwChanged)
		p.hwChanged = make(chan struct{})
	}
}

// resetHighWatermark follows a log whose start moved past the high
// watermark (DeleteRecords cannot, retention cannot; a truncation can).
func (p *Partition) clampHighWatermark() {
	lso, leo := p.log.LogStartOffset(), p.log.LogEndOffset()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.highWatermark > leo {
		p.highWatermark = leo
	}
	if p.highWatermark < lso {
		p.highWatermark = lso
	}
}

// AppendAsLeader appends a Produce request's records for this partition,
// in the caller's order, and returns a wait function that completes when
// the append is as durable as acks and the flush policy require; it then
// moves the high watermark. acks=0 callers need not wait.
func (p *Partition) AppendAsLeader(records []byte, acks int16) (engine.AppendInfo, func() error, error) {
	p.mu.Lock()
	leader, epoch := p.isLeader, p.leaderEpoch
	isr, minISR := len(p.isr), p.minISR
	p.mu.Unlock()
	if !leader {
		return engine.AppendInfo{}, nil, fmt.Errorf("%w: %s is not led by this node", kerr.NotLeaderForPartition, p.tp)
	}
	if acks == -1 && minISR > 0 && isr < minISR {
		return engine.AppendInfo{}, nil, fmt.Errorf("%w: %s has %d in-sync replica(s), min.insync.replicas is %d", kerr.NotEnoughReplicas, p.tp, isr, minISR)
	}
	info, wait, err := p.log.AppendAsync(records, epoch)
	if err != nil {
		return engine.AppendInfo{}, nil, err
	}
	return info, func() error {
		if err := wait(); err != nil {
			return err
		}
		p.maybeAdvanceHighWatermark()
		return nil
	}, nil
}

// Fetch isolation levels, as Kafka numbers them.
const (
	ReadUncommitted int8 = 0
	ReadCommitted   int8 = 1
)

// ReadForConsumer reads from offset up to the high watermark (a consumer
// never sees what is not yet committed). It returns the high watermark and
// log start offset the response carries.
func (p *Partition) ReadForConsumer(offset, maxBytes int64, minOneMessage bool) (*engine.ReadResult, int64, int64, error) {
	hw := p.HighWatermark()
	r, err := p.log.Read(offset, maxBytes, hw, minOneMessage)
	return r, hw, p.log.LogStartOffset(), err
}
