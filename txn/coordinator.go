package txn

import (
	"fmt"
	"math"
	"sort"

	"github.com/wren-broker/wren/internal/invariants"
)

type status int8

const (
	loading status = iota
	active
	unloaded
)

// Coordinator is the transaction coordinator of the transactional ids of
// one __transaction_state partition, as a pure state machine (doc.go).
// The driver creates one when this node becomes the partition's leader,
// replays the partition into it (Replay, CompleteLoad), and calls Unload
// when it stops leading. Not safe for concurrent use.
type Coordinator struct {
	cfg            Config
	partition      int32
	partitionCount int32
	status         status
	txns           map[string]*Metadata
	ready          Ready
}

// NewCoordinator returns a loading coordinator for partition of a
// __transaction_state topic of partitionCount partitions.
func NewCoordinator(cfg Config, partition, partitionCount int32) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if partitionCount <= 0 || partition < 0 || partition >= partitionCount {
		return nil, fmt.Errorf("txn: partition %d of %d", partition, partitionCount)
	}
	return &Coordinator{cfg: cfg, partition: partition, partitionCount: partitionCount, txns: map[string]*Metadata{}}, nil
}

// Ready returns what the coordinator produced since the last call, and
// forgets it. The driver appends Records, then delivers Responses and
// writes Markers once they are durable.
func (c *Coordinator) Ready() Ready {
	if invariants.Enabled {
		c.checkInvariants()
	}
	rd := c.ready
	c.ready = Ready{}
	return rd
}

// HasReady reports whether Ready has anything.
func (c *Coordinator) HasReady() bool { return !c.ready.Empty() }

// Transaction returns a copy of id's metadata, nil if none.
func (c *Coordinator) Transaction(id string) *Metadata {
	if m := c.txns[id]; m != nil {
		return m.clone()
	}
	return nil
}

// IDs are the transactional ids, sorted.
func (c *Coordinator) IDs() []string {
	ids := make([]string, 0, len(c.txns))
	for id := range c.txns {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Loaded reports whether the coordinator serves requests.
func (c *Coordinator) Loaded() bool { return c.status == active }

// Replay applies a record read back from the partition while loading.
func (c *Coordinator) Replay(r Record) error {
	if c.status != loading {
		return fmt.Errorf("txn: Replay on a coordinator that is not loading")
	}
	if r.Metadata == nil {
		delete(c.txns, r.TransactionalID)
		return nil
	}
	m := r.Metadata.clone()
	m.TransactionalID = r.TransactionalID
	c.txns[r.TransactionalID] = m
	return nil
}

// CompleteLoad ends the load: the coordinator answers requests, and the
// transactions whose commit or abort was decided but not completed
// (PrepareCommit, PrepareAbort) get their markers written again.
func (c *Coordinator) CompleteLoad() {
	if c.status != loading {
		return
	}
	c.status = active
	for _, id := range c.IDs() {
		m := c.txns[id]
		if m.State == PrepareCommit || m.State == PrepareAbort {
			c.ready.Markers = append(c.ready.Markers, markersOf(m))
		}
	}
}

// Unload ends the coordinator: its partition's leadership moved. Every
// later request gets NOT_COORDINATOR; markers in flight are the driver's
// to stop.
func (c *Coordinator) Unload() {
	c.status = unloaded
	c.txns = map[string]*Metadata{}
}

func (c *Coordinator) respond(r Response) { c.ready.Responses = append(c.ready.Responses, r) }

func (c *Coordinator) persist(m *Metadata) {
	c.ready.Records = append(c.ready.Records, Record{TransactionalID: m.TransactionalID, Metadata: m.clone()})
}

func markersOf(m *Metadata) Markers {
	return Markers{TransactionalID: m.TransactionalID, ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch,
		Commit: m.State == PrepareCommit, Partitions: clonePartitions(m.Partitions)}
}

// idStatus is the error a request for id gets before its metadata is
// looked at, 0 if none.
func (c *Coordinator) idStatus(id string) int16 {
	if id == "" {
		return errInvalidRequest
	}
	if PartitionFor(id, c.partitionCount) != c.partition {
		return errNotCoordinator
	}
	switch c.status {
	case loading:
		return errLoadInProgress
	case unloaded:
		return errNotCoordinator
	}
	return errNone
}

func fail(id uint64, code int16) Response {
	return Response{RequestID: id, ErrorCode: code, ProducerID: NoProducerID, ProducerEpoch: NoProducerEpoch}
}

// InitProducerID is Kafka's handleInitProducerId for a transactional id.
func (c *Coordinator) InitProducerID(req InitRequest, nowMs int64) {
	if code := c.idStatus(req.TransactionalID); code != 0 {
		c.respond(fail(req.RequestID, code))
		return
	}
	if req.TimeoutMs <= 0 || req.TimeoutMs > c.cfg.MaxTimeoutMs {
		c.respond(fail(req.RequestID, errInvalidTxnTimeout))
		return
	}
	m := c.txns[req.TransactionalID]
	if m == nil {
		if req.FreshProducerID < 0 {
			c.respond(fail(req.RequestID, errUnknownServerError))
			return
		}
		m = &Metadata{TransactionalID: req.TransactionalID, ProducerID: req.FreshProducerID, PrevProducerID: NoProducerID,
			ProducerEpoch: NoProducerEpoch, LastProducerEpoch: NoProducerEpoch, TimeoutMs: req.TimeoutMs,
			State: Empty, StartMs: -1, LastUpdateMs: nowMs}
		c.txns[req.TransactionalID] = m
	}
	if req.ExpectedProducerID >= 0 && !validExpected(m, req.ExpectedProducerID, req.ExpectedEpoch) {
		c.respond(fail(req.RequestID, errProducerFenced))
		return
	}
	switch m.State {
	case PrepareCommit, PrepareAbort:
		c.respond(fail(req.RequestID, errConcurrentTransactions))
	case Ongoing:
		// Abort the ongoing transaction under a bumped epoch, which
		// fences the producer that began it; the client retries and
		// gets the epoch after (Kafka's PrepareEpochFence).
		c.fenceAndAbort(m, nowMs)
		c.respond(fail(req.RequestID, errConcurrentTransactions))
	case Empty, CompleteCommit, CompleteAbort:
		expectedGiven := req.ExpectedProducerID >= 0 && req.ExpectedEpoch >= 0
		switch {
		case expectedGiven && req.ExpectedProducerID == m.PrevProducerID && req.ExpectedProducerID != m.ProducerID:
			// A retry of the rotation below whose answer was lost.
			c.respond(Response{RequestID: req.RequestID, ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch})
			return
		case expectedGiven && m.ProducerEpoch != NoProducerEpoch && req.ExpectedEpoch != m.ProducerEpoch:
			if req.ExpectedEpoch == m.LastProducerEpoch {
				// A retry of a bump whose answer was lost.
				c.respond(Response{RequestID: req.RequestID, ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch})
				return
			}
			c.respond(fail(req.RequestID, errProducerFenced))
			return
		}
		if epochExhausted(m.ProducerEpoch) || m.ProducerEpoch == math.MaxInt16 {
			if req.FreshProducerID < 0 {
				c.respond(fail(req.RequestID, errUnknownServerError))
				return
			}
			m.PrevProducerID, m.ProducerID = m.ProducerID, req.FreshProducerID
			m.LastProducerEpoch, m.ProducerEpoch = NoProducerEpoch, 0
		} else {
			m.LastProducerEpoch = m.ProducerEpoch
			m.ProducerEpoch++
		}
		m.TimeoutMs, m.State, m.Partitions, m.StartMs, m.LastUpdateMs = req.TimeoutMs, Empty, nil, -1, nowMs
		c.persist(m)
		c.respond(Response{RequestID: req.RequestID, ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch})
	default:
		c.respond(fail(req.RequestID, errUnknownServerError))
	}
}

// validExpected is Kafka's isValidProducerId: the producer's current id
// and epoch name this metadata (or it was just created, or the id is the
// one before a rotation whose answer the producer may have missed).
func validExpected(m *Metadata, pid int64, epoch int16) bool {
	return m.ProducerEpoch == NoProducerEpoch || pid == m.ProducerID || (pid == m.PrevProducerID && epochExhausted(epoch))
}

// fenceAndAbort bumps an ongoing transaction's epoch (unless exhausted)
// and moves it to PrepareAbort with its markers.
func (c *Coordinator) fenceAndAbort(m *Metadata, nowMs int64) {
	if !epochExhausted(m.ProducerEpoch) {
		m.LastProducerEpoch = m.ProducerEpoch
		m.ProducerEpoch++
	}
	m.State, m.LastUpdateMs = PrepareAbort, nowMs
	c.persist(m)
	c.ready.Markers = append(c.ready.Markers, markersOf(m))
}

// producerStatus checks a request's producer id and epoch against m.
func producerStatus(m *Metadata, pid int64, epoch int16) int16 {
	switch {
	case m == nil || m.ProducerID != pid:
		return errInvalidProducerIDMapping
	case m.ProducerEpoch != epoch:
		return errProducerFenced
	}
	return errNone
}

// AddPartitions is Kafka's handleAddPartitionsToTransaction, and with
// VerifyOnly its handleVerifyPartitionsInTransaction.
func (c *Coordinator) AddPartitions(req AddPartitionsRequest, nowMs int64) {
	code := c.idStatus(req.TransactionalID)
	m := c.txns[req.TransactionalID]
	if code == 0 {
		code = producerStatus(m, req.ProducerID, req.ProducerEpoch)
	}
	if code == 0 && (m.State == PrepareCommit || m.State == PrepareAbort) {
		code = errConcurrentTransactions
	}
	out := Response{RequestID: req.RequestID, ErrorCode: code, ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch,
		Partitions: make(map[TopicPartition]int16, len(req.Partitions))}
	if code != 0 {
		for _, tp := range req.Partitions {
			out.Partitions[tp] = code
		}
		c.respond(out)
		return
	}
	if req.VerifyOnly {
		for _, tp := range req.Partitions {
			if m.State == Ongoing && m.hasPartition(tp) {
				out.Partitions[tp] = errNone
			} else {
				out.Partitions[tp] = errInvalidTxnState
			}
		}
		c.respond(out)
		return
	}
	if len(req.Partitions) == 0 {
		// Nothing to add: no transaction starts without a partition.
		c.respond(out)
		return
	}
	changed := m.State != Ongoing
	for _, tp := range req.Partitions {
		out.Partitions[tp] = errNone
		if !m.hasPartition(tp) {
			changed = true
		}
	}
	if changed {
		if m.State != Ongoing {
			m.StartMs = nowMs
			m.Partitions = nil
		}
		for _, tp := range req.Partitions {
			m.addPartition(tp)
		}
		m.State, m.LastUpdateMs = Ongoing, nowMs
		c.persist(m)
	}
	c.respond(out)
}

// EndTxn is Kafka's handleEndTransaction (transaction version 1): the
// commit or abort is decided by a PrepareCommit or PrepareAbort record,
// answered once it is durable, and completed by the markers.
func (c *Coordinator) EndTxn(req EndRequest, nowMs int64) {
	code := c.idStatus(req.TransactionalID)
	m := c.txns[req.TransactionalID]
	if code == 0 {
		code = producerStatus(m, req.ProducerID, req.ProducerEpoch)
	}
	if code != 0 {
		c.respond(fail(req.RequestID, code))
		return
	}
	ok := Response{RequestID: req.RequestID, ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch}
	switch {
	case m.State == Ongoing:
		m.State, m.LastUpdateMs = PrepareAbort, nowMs
		if req.Commit {
			m.State = PrepareCommit
		}
		c.persist(m)
		c.ready.Markers = append(c.ready.Markers, markersOf(m))
		c.respond(ok)
	case m.State == CompleteCommit && req.Commit, m.State == CompleteAbort && !req.Commit:
		c.respond(ok) // a retry of a completed request
	case !req.Commit && (m.State == Empty || m.State == CompleteCommit):
		// The abort of an empty transaction, as transaction version 2
		// allows: nothing of this producer's can be in a partition since
		// its last marker, as Produce has every partition verified with
		// this coordinator first. A client that aborts while its
		// AddPartitionsToTxn was refused (the previous commit's markers
		// still in flight) sends exactly this; librdkafka then takes
		// INVALID_TXN_STATE as fatal.
		c.respond(ok)
	case m.State == PrepareCommit || m.State == PrepareAbort:
		// Markers in flight: Kafka's "pending transition" answer, whatever
		// the result asked; the client retries once they are written.
		c.respond(fail(req.RequestID, errConcurrentTransactions))
	default:
		c.respond(fail(req.RequestID, errInvalidTxnState))
	}
}

// MarkersWritten completes a transaction whose markers every partition
// wrote: the CompleteCommit or CompleteAbort record. Stale calls (the
// transaction moved on, or the coordinator was reloaded) do nothing.
func (c *Coordinator) MarkersWritten(mk Markers, nowMs int64) {
	if c.status != active {
		return
	}
	m := c.txns[mk.TransactionalID]
	if m == nil || m.ProducerID != mk.ProducerID || m.ProducerEpoch != mk.ProducerEpoch {
		return
	}
	switch {
	case m.State == PrepareCommit && mk.Commit:
		m.State = CompleteCommit
	case m.State == PrepareAbort && !mk.Commit:
		m.State = CompleteAbort
	default:
		return
	}
	m.Partitions, m.LastUpdateMs = nil, nowMs
	c.persist(m)
}

// Tick advances time to nowMs: ongoing transactions past their timeout
// are aborted under a bumped epoch (fencing their producer), and idle
// transactional ids past transactional.id.expiration.ms are removed.
func (c *Coordinator) Tick(nowMs int64) {
	if c.status != active {
		return
	}
	for _, id := range c.IDs() {
		m := c.txns[id]
		switch m.State {
		case Ongoing:
			if m.StartMs+int64(m.TimeoutMs) < nowMs {
				c.fenceAndAbort(m, nowMs)
			}
		case Empty, CompleteCommit, CompleteAbort:
			if m.LastUpdateMs+c.cfg.IDExpirationMs <= nowMs {
				delete(c.txns, id)
				c.ready.Records = append(c.ready.Records, Record{TransactionalID: id})
			}
		}
	}
}

// List lists the transactions, sorted by id.
func (c *Coordinator) List() ([]Listed, int16) {
	switch c.status {
	case loading:
		return nil, errLoadInProgress
	case unloaded:
		return nil, errNotCoordinator
	}
	out := make([]Listed, 0, len(c.txns))
	for _, id := range c.IDs() {
		m := c.txns[id]
		out = append(out, Listed{TransactionalID: id, ProducerID: m.ProducerID, State: m.State})
	}
	return out, 0
}

// Describe returns id's metadata with the error DescribeTransactions
// gives.
func (c *Coordinator) Describe(id string) (*Metadata, int16) {
	if code := c.idStatus(id); code != 0 {
		return nil, code
	}
	m := c.txns[id]
	if m == nil {
		return nil, kerrTransactionalIDNotFound
	}
	return m.clone(), 0
}
