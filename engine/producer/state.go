package producer

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/wren-broker/wren/engine/batch"
)

// BatchesToRetain is how many batches per producer are remembered for
// duplicate detection: Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN,
// matched to the clients' max.in.flight.requests.per.connection of 5 with
// idempotence on. A client never has a batch in flight that is older than
// its last five sends, so every retry it can make is recognised.
const BatchesToRetain = 5

// DefaultMaxProducers is Options.MaxProducers when left zero. About 2.5 MB
// per partition at the cap (see doc.go); Kafka has no such cap.
const DefaultMaxProducers = 10000

// Options tune a State. The zero value is the default.
type Options struct {
	// MaxProducers caps the entries of one partition; zero means
	// DefaultMaxProducers. A new producer at the cap evicts the producer
	// that appended least recently.
	MaxProducers int
	// AcceptUnknownSequence makes Check accept any first sequence from a
	// producer id it does not know, as Kafka 2.5 to 4.x do, instead of
	// answering UNKNOWN_PRODUCER_ID.
	AcceptUnknownSequence bool
}

func (o Options) maxProducers() int {
	if o.MaxProducers > 0 {
		return o.MaxProducers
	}
	return DefaultMaxProducers
}

// BatchMetadata is what the state keeps of one written batch (Kafka's
// BatchMetadata).
type BatchMetadata struct {
	LastSequence int32
	LastOffset   int64
	// OffsetDelta is LastOffset minus the batch's base offset: the batch's
	// LastOffsetDelta, which for a producer's batch is also the span of its
	// sequences.
	OffsetDelta int32
	// Timestamp is the batch's MaxTimestamp.
	Timestamp int64
}

// FirstSequence is the batch's base sequence, undoing the wrap at
// math.MaxInt32.
func (m BatchMetadata) FirstSequence() int32 {
	return decrementSequence(m.LastSequence, m.OffsetDelta)
}

// FirstOffset is the batch's base offset.
func (m BatchMetadata) FirstOffset() int64 { return m.LastOffset - int64(m.OffsetDelta) }

// Entry is one producer's state in one partition (Kafka's
// ProducerStateEntry).
type Entry struct {
	ProducerID    int64
	ProducerEpoch int16
	// CoordinatorEpoch is the epoch of the transaction coordinator that
	// wrote the producer's last marker; -1 when none. A marker from an
	// older coordinator epoch is refused (CheckMarker).
	CoordinatorEpoch int32
	// CurrentTxnFirstOffset is the first offset of the open transaction,
	// or -1. An entry with an open transaction never expires.
	CurrentTxnFirstOffset int64
	// LastTimestamp is the max timestamp of the producer's last batch (or
	// marker); expiration is measured from it. -1 before any batch.
	LastTimestamp int64

	// batches holds the last batches of the current epoch, oldest first.
	// Invariant: batchCount <= BatchesToRetain, offsets and sequences of
	// batches[:batchCount] increase (sequences modulo the wrap).
	batches    [BatchesToRetain]BatchMetadata
	batchCount int8
}

// newEntry is Kafka's ProducerStateEntry.empty.
func newEntry(producerID int64) *Entry {
	return &Entry{
		ProducerID:            producerID,
		ProducerEpoch:         batch.NoProducerEpoch,
		CoordinatorEpoch:      -1,
		CurrentTxnFirstOffset: -1,
		LastTimestamp:         batch.NoTimestamp,
	}
}

// Batches returns the retained batches, oldest first.
func (e *Entry) Batches() []BatchMetadata {
	return slices.Clone(e.batches[:e.batchCount])
}

// LastBatch returns the newest retained batch.
func (e *Entry) LastBatch() (BatchMetadata, bool) {
	if e.batchCount == 0 {
		return BatchMetadata{}, false
	}
	return e.batches[e.batchCount-1], true
}

// LastSequence is the last sequence written in the current epoch, or -1.
func (e *Entry) LastSequence() int32 {
	if e.batchCount == 0 {
		return batch.NoSequence
	}
	return e.batches[e.batchCount-1].LastSequence
}

// maybeUpdateProducerEpoch forgets the window when the epoch changes: a
// sequence range only identifies a batch within one epoch.
func (e *Entry) maybeUpdateProducerEpoch(epoch int16) {
	if e.ProducerEpoch != epoch {
		e.batchCount = 0
		e.ProducerEpoch = epoch
	}
}

func (e *Entry) addBatch(m BatchMetadata) {
	if e.batchCount == BatchesToRetain {
		copy(e.batches[:], e.batches[1:])
		e.batchCount--
	}
	e.batches[e.batchCount] = m
	e.batchCount++
	e.LastTimestamp = m.Timestamp
}

// findBatch returns the retained batch with exactly this sequence range.
func (e *Entry) findBatch(firstSeq, lastSeq int32) (BatchMetadata, bool) {
	for _, m := range e.batches[:e.batchCount] {
		if m.LastSequence == lastSeq && m.FirstSequence() == firstSeq {
			return m, true
		}
	}
	return BatchMetadata{}, false
}

// node is an Entry as the State holds it: in the map and in the recency
// list that picks whom to evict.
type node struct {
	Entry
	older, newer *node
}

// State is the producer state of one partition.
type State struct {
	opts Options
	// producers holds at most opts.maxProducers() entries; nil while
	// empty, so a partition no idempotent producer wrote to holds no map.
	producers map[int64]*node
	// oldest and newest end the recency list, which holds every node of
	// producers in the order they last appended (after a snapshot load:
	// by LastTimestamp, then producer id). oldest is evicted first. Only
	// Apply and Commit reorder it, so replicas applying the same batches
	// agree on it.
	oldest, newest *node
	// mapEndOffset is the offset after the last batch applied (Kafka's
	// lastMapOffset): a snapshot of this state is named by it.
	// Invariant: every batch applied had BaseOffset >= the mapEndOffset
	// of that moment (offsets only grow in a log).
	mapEndOffset int64
	// changes counts changes to producers; Check stamps it into the
	// AppendInfo so that Commit can assert that the decision still holds.
	// MapEndOffset moves are not counted: Commit checks the offset itself.
	changes uint64
	// ongoing are the open transactions, by first offset (Kafka's
	// ongoingTxns). Invariant: exactly the entries whose
	// CurrentTxnFirstOffset >= 0, one each, sorted by first offset.
	ongoing []ongoingTxn
	// unreplicated are completed transactions whose marker the high
	// watermark has not passed yet (Kafka's unreplicatedTxns), in marker
	// order: they stay unstable until it does, so the last stable offset
	// never passes a marker a new leader may not have.
	unreplicated []CompletedTxn
}

// ongoingTxn is one open transaction.
type ongoingTxn struct {
	producerID  int64
	firstOffset int64
	// startTimestamp is the max timestamp of the transaction's first
	// batch; after a snapshot load, the producer's LastTimestamp (the
	// snapshot keeps no more).
	startTimestamp int64
}

// CompletedTxn is a transaction a marker ended (Kafka's CompletedTxn).
type CompletedTxn struct {
	ProducerID int64
	// FirstOffset is the transaction's first offset in this partition,
	// or the marker's own offset when it held no batch here.
	FirstOffset int64
	// LastOffset is the marker's offset.
	LastOffset int64
	Aborted    bool
	// LastStableOffset is the last stable offset once this transaction
	// completes: the first offset of the oldest other open transaction,
	// or LastOffset+1 when none. An aborted transaction's index entry
	// keeps it (Kafka's AbortedTxn.lastStableOffset).
	LastStableOffset int64
}

// New returns an empty State.
func New(opts Options) *State {
	return &State{opts: opts}
}

// AppendInfo is the outcome of a successful Check: either a duplicate to
// answer without writing, or a batch to write and then Commit.
type AppendInfo struct {
	// Duplicate reports that the batch repeats one of the producer's last
	// five batches. Write nothing; answer success with Original.
	Duplicate bool
	// Original is the batch as first written, when Duplicate.
	Original BatchMetadata

	header  batch.Header
	changes uint64
	// marker is the transaction marker of a control batch (CheckMarker).
	marker *batch.EndTxnMarker
}

// Check decides whether a client's batch may be appended (see doc.go for
// the rules). h must have passed batch.Validate with AppendOriginClient
// and carry its assigned BaseOffset. Check changes nothing; on success the
// caller writes the batch (unless Duplicate) and then calls Commit.
//
// Errors wrap ErrOutOfOrderSequence, ErrInvalidProducerEpoch or
// ErrUnknownProducerID (and through them the *kerr.Error).
func (s *State) Check(h batch.Header) (AppendInfo, error) {
	s.checkOffset(h, "Check")
	info := AppendInfo{header: h, changes: s.changes}
	if !h.HasProducerID() {
		return info, nil
	}
	if h.IsControl() {
		panic(fmt.Sprintf("producer: Check of a control batch at offset %d from producer %d; batch.Validate refuses those from clients",
			h.BaseOffset, h.ProducerID))
	}
	pid, epoch := h.ProducerID, h.ProducerEpoch
	if epoch < 0 {
		return AppendInfo{}, fmt.Errorf("%w: producer %d sent epoch %d", ErrInvalidProducerEpoch, pid, epoch)
	}
	firstSeq := h.BaseSequence
	if firstSeq < 0 {
		return AppendInfo{}, fmt.Errorf("%w: producer %d sent sequence %d", ErrOutOfOrderSequence, pid, firstSeq)
	}
	lastSeq := h.LastSequence()

	e := s.producers[pid]
	if e != nil && e.CurrentTxnFirstOffset >= 0 && !h.IsTransactional() && epoch >= e.ProducerEpoch {
		return AppendInfo{}, fmt.Errorf("%w: producer %d sent a non-transactional batch while its transaction from offset %d is open",
			ErrInvalidTxnState, pid, e.CurrentTxnFirstOffset)
	}
	if e != nil && e.ProducerEpoch == epoch {
		if m, ok := e.findBatch(firstSeq, lastSeq); ok {
			info.Duplicate, info.Original = true, m
			return info, nil
		}
	}
	switch {
	case e == nil || e.ProducerEpoch == batch.NoProducerEpoch:
		if firstSeq != 0 && !s.opts.AcceptUnknownSequence {
			return AppendInfo{}, fmt.Errorf("%w: producer %d epoch %d starts at sequence %d, and this partition has no state for it",
				ErrUnknownProducerID, pid, epoch, firstSeq)
		}
	case epoch < e.ProducerEpoch:
		return AppendInfo{}, fmt.Errorf("%w: producer %d sent epoch %d, the partition has seen epoch %d",
			ErrInvalidProducerEpoch, pid, epoch, e.ProducerEpoch)
	case epoch > e.ProducerEpoch:
		if firstSeq != 0 {
			return AppendInfo{}, fmt.Errorf("%w: producer %d starts its new epoch %d (after %d) at sequence %d, not 0",
				ErrOutOfOrderSequence, pid, epoch, e.ProducerEpoch, firstSeq)
		}
	default:
		if last := e.LastSequence(); !inSequence(last, firstSeq) {
			return AppendInfo{}, fmt.Errorf("%w: producer %d epoch %d sent sequence %d after %d",
				ErrOutOfOrderSequence, pid, epoch, firstSeq, last)
		}
	}
	return info, nil
}

// Commit records a batch that Check accepted, after the write succeeded.
// It panics if the State changed since that Check or if info is a
// duplicate (a duplicate is never written).
//
// For a marker it returns the transaction the marker completed.
func (s *State) Commit(info AppendInfo) (CompletedTxn, bool) {
	if info.Duplicate {
		panic(fmt.Sprintf("producer: Commit of a duplicate of offsets %d-%d from producer %d; duplicates are not written",
			info.Original.FirstOffset(), info.Original.LastOffset, info.header.ProducerID))
	}
	if info.changes != s.changes {
		panic(fmt.Sprintf("producer: state changed between Check and Commit of offset %d (change %d, now %d)",
			info.header.BaseOffset, info.changes, s.changes))
	}
	s.checkOffset(info.header, "Commit")
	return s.apply(info.header, info.marker)
}

// CheckMarker decides whether the leader may append h, a control batch
// holding marker m (offset assigned), for its producer (Kafka's
// ProducerAppendInfo.appendEndTxnMarker checks): a producer epoch below
// the stored one gets ErrInvalidProducerEpoch, a coordinator epoch below
// the one of the producer's last marker ErrCoordinatorFenced. A marker for
// a producer the partition does not know, or with no open transaction, is
// accepted: the coordinator writes markers to every partition of the
// transaction, and one may hold no batch of it. Changes nothing; the
// caller writes the batch, then calls Commit.
func (s *State) CheckMarker(h batch.Header, m batch.EndTxnMarker) (AppendInfo, error) {
	s.checkOffset(h, "CheckMarker")
	if !h.IsControl() || !h.HasProducerID() {
		panic(fmt.Sprintf("producer: CheckMarker of a batch at offset %d that is no control batch with a producer id", h.BaseOffset))
	}
	pid, epoch := h.ProducerID, h.ProducerEpoch
	if epoch < 0 {
		return AppendInfo{}, fmt.Errorf("%w: marker for producer %d has epoch %d", ErrInvalidProducerEpoch, pid, epoch)
	}
	if e := s.producers[pid]; e != nil {
		if epoch < e.ProducerEpoch {
			return AppendInfo{}, fmt.Errorf("%w: %s marker for producer %d at epoch %d, the partition has seen epoch %d",
				ErrInvalidProducerEpoch, markerName(m), pid, epoch, e.ProducerEpoch)
		}
		if m.CoordinatorEpoch < e.CoordinatorEpoch {
			return AppendInfo{}, fmt.Errorf("%w: %s marker for producer %d from coordinator epoch %d, the partition has seen coordinator epoch %d",
				ErrCoordinatorFenced, markerName(m), pid, m.CoordinatorEpoch, e.CoordinatorEpoch)
		}
	}
	return AppendInfo{header: h, changes: s.changes, marker: &m}, nil
}

func markerName(m batch.EndTxnMarker) string {
	if m.Commit {
		return "COMMIT"
	}
	return "ABORT"
}

// Apply records a batch already in the log: fetched by a follower,
// replayed in recovery or after a snapshot. It checks nothing and never
// fails (Kafka's AppendOrigin.REPLICATION): the log is the truth. Batches
// must come in offset order. A control batch given to Apply is taken as
// one holding no marker (see ApplyControl); use ApplyControl for markers.
func (s *State) Apply(h batch.Header) {
	s.checkOffset(h, "Apply")
	s.apply(h, nil)
}

// ApplyControl is Apply for a control batch already in the log, with the
// marker its record holds (batch.ReadEndTxnMarker), or nil when it holds
// none: compaction emptied it, or it is another control type. Only a
// marker changes producers, as in Kafka. It returns the transaction the
// marker completed.
func (s *State) ApplyControl(h batch.Header, m *batch.EndTxnMarker) (CompletedTxn, bool) {
	s.checkOffset(h, "ApplyControl")
	return s.apply(h, m)
}

func (s *State) apply(h batch.Header, m *batch.EndTxnMarker) (CompletedTxn, bool) {
	s.changes++
	s.mapEndOffset = h.NextOffset()
	if !h.HasProducerID() {
		return CompletedTxn{}, false
	}
	if h.IsControl() {
		if m == nil {
			return CompletedTxn{}, false
		}
		return s.applyMarker(h, *m), true
	}
	e := s.entry(h.ProducerID)
	s.unlink(e)
	s.pushNewest(e)
	e.maybeUpdateProducerEpoch(h.ProducerEpoch)
	e.addBatch(BatchMetadata{
		LastSequence: h.LastSequence(),
		LastOffset:   h.LastOffset(),
		OffsetDelta:  h.LastOffsetDelta,
		Timestamp:    h.MaxTimestamp,
	})
	if h.IsTransactional() && e.CurrentTxnFirstOffset < 0 {
		e.CurrentTxnFirstOffset = h.BaseOffset
		// Offsets only grow, so the new transaction is the newest.
		s.ongoing = append(s.ongoing, ongoingTxn{producerID: e.ProducerID, firstOffset: h.BaseOffset, startTimestamp: h.MaxTimestamp})
	}
	return CompletedTxn{}, false
}

// applyMarker closes the producer's transaction (Kafka's
// appendEndTxnMarker and completeTxn): the marker carries the epoch and
// the coordinator epoch, and its batch has no sequence.
func (s *State) applyMarker(h batch.Header, m batch.EndTxnMarker) CompletedTxn {
	e := s.entry(h.ProducerID)
	s.unlink(e)
	s.pushNewest(e)
	e.maybeUpdateProducerEpoch(h.ProducerEpoch)
	c := CompletedTxn{ProducerID: e.ProducerID, FirstOffset: h.BaseOffset, LastOffset: h.BaseOffset, Aborted: !m.Commit}
	if e.CurrentTxnFirstOffset >= 0 {
		c.FirstOffset = e.CurrentTxnFirstOffset
		s.removeOngoing(e.ProducerID, e.CurrentTxnFirstOffset)
	}
	c.LastStableOffset = c.LastOffset + 1
	if len(s.ongoing) > 0 {
		c.LastStableOffset = s.ongoing[0].firstOffset
	}
	e.CurrentTxnFirstOffset = -1
	e.CoordinatorEpoch = m.CoordinatorEpoch
	e.LastTimestamp = h.MaxTimestamp
	s.unreplicated = append(s.unreplicated, c)
	return c
}

func (s *State) removeOngoing(pid, first int64) {
	i, found := slices.BinarySearchFunc(s.ongoing, first, func(t ongoingTxn, off int64) int { return cmp.Compare(t.firstOffset, off) })
	if !found || s.ongoing[i].producerID != pid {
		panic(fmt.Sprintf("producer: open transaction of producer %d at %d is not listed", pid, first))
	}
	s.ongoing = slices.Delete(s.ongoing, i, i+1)
}

// OpenTxn is one open transaction, for tools and metrics.
type OpenTxn struct {
	ProducerID    int64
	ProducerEpoch int16
	FirstOffset   int64
	// LastTimestamp is the producer's last batch's max timestamp.
	LastTimestamp int64
	// StartTimestamp is the max timestamp of the transaction's first
	// batch, or, after a snapshot load, of the producer's last batch
	// before it (the snapshot keeps no more): the age of the transaction
	// is measured from it.
	StartTimestamp int64
}

// OpenTxns lists the open transactions, oldest first.
func (s *State) OpenTxns() []OpenTxn {
	out := make([]OpenTxn, 0, len(s.ongoing))
	for _, t := range s.ongoing {
		e := s.producers[t.producerID]
		out = append(out, OpenTxn{ProducerID: t.producerID, ProducerEpoch: e.ProducerEpoch, FirstOffset: t.firstOffset,
			LastTimestamp: e.LastTimestamp, StartTimestamp: t.startTimestamp})
	}
	return out
}

// OnHighWatermarkUpdated forgets the completed transactions whose marker
// lies below hw: they are replicated, and no longer hold the last stable
// offset back (Kafka's onHighWatermarkUpdated).
func (s *State) OnHighWatermarkUpdated(hw int64) {
	i := 0
	for i < len(s.unreplicated) && s.unreplicated[i].LastOffset < hw {
		i++
	}
	if i > 0 {
		s.unreplicated = slices.Delete(s.unreplicated, 0, i)
	}
}

// FirstUnstableOffset is the first offset a read_committed reader may not
// pass: the first offset of the oldest open transaction, or of a
// completed one whose marker is not below the high watermark yet
// (OnHighWatermarkUpdated). ok is false when there is none.
func (s *State) FirstUnstableOffset() (offset int64, ok bool) {
	if len(s.ongoing) > 0 {
		offset, ok = s.ongoing[0].firstOffset, true
	}
	for _, c := range s.unreplicated {
		if !ok || c.FirstOffset < offset {
			offset, ok = c.FirstOffset, true
		}
	}
	return offset, ok
}

// LastStableOffset is the partition's last stable offset given its high
// watermark: min(FirstUnstableOffset, hw), after forgetting the completed
// transactions hw has passed.
func (s *State) LastStableOffset(hw int64) int64 {
	s.OnHighWatermarkUpdated(hw)
	if off, ok := s.FirstUnstableOffset(); ok && off < hw {
		return off
	}
	return hw
}

// checkOffset asserts that batches arrive in log order: a batch below
// MapEndOffset means the caller kept a state across a truncation instead
// of rebuilding it, or forgot to assign offsets before Check.
func (s *State) checkOffset(h batch.Header, op string) {
	if h.BaseOffset < s.mapEndOffset {
		panic(fmt.Sprintf("producer: %s of a batch at offset %d below the state's end offset %d",
			op, h.BaseOffset, s.mapEndOffset))
	}
}

// entry returns the producer's node, creating it (and evicting the least
// recently appending producer at the cap) when absent.
func (s *State) entry(pid int64) *node {
	if n := s.producers[pid]; n != nil {
		return n
	}
	if len(s.producers) >= s.opts.maxProducers() {
		// A producer with an open transaction is never evicted: its
		// transaction holds the last stable offset until a marker ends
		// it. With every producer in a transaction the cap is exceeded.
		victim := s.oldest
		for victim != nil && victim.CurrentTxnFirstOffset >= 0 {
			victim = victim.newer
		}
		if victim != nil {
			s.remove(victim)
		}
	}
	n := &node{Entry: *newEntry(pid)}
	if s.producers == nil {
		s.producers = make(map[int64]*node)
	}
	s.producers[pid] = n
	s.pushNewest(n)
	return n
}

func (s *State) pushNewest(n *node) {
	n.older, n.newer = s.newest, nil
	if s.newest != nil {
		s.newest.newer = n
	} else {
		s.oldest = n
	}
	s.newest = n
}

func (s *State) unlink(n *node) {
	if n.older != nil {
		n.older.newer = n.newer
	} else {
		s.oldest = n.newer
	}
	if n.newer != nil {
		n.newer.older = n.older
	} else {
		s.newest = n.older
	}
	n.older, n.newer = nil, nil
}

func (s *State) remove(n *node) {
	s.unlink(n)
	delete(s.producers, n.ProducerID)
}

// RemoveExpired forgets every producer without an open transaction whose
// LastTimestamp is expirationMs (producer.id.expiration.ms) or more before
// nowMs, and returns how many it removed.
func (s *State) RemoveExpired(nowMs, expirationMs int64) int {
	removed := 0
	for _, n := range s.producers {
		if n.CurrentTxnFirstOffset < 0 && nowMs-n.LastTimestamp >= expirationMs {
			s.remove(n)
			removed++
		}
	}
	if removed > 0 {
		s.changes++
	}
	return removed
}

// OnLogStartOffsetIncremented is called when retention or DeleteRecords
// moves the log start offset. Following KIP-360 it keeps every producer,
// even one whose batches are all below the new start: forgetting it would
// turn its next in-sequence batch into UNKNOWN_PRODUCER_ID and its retries
// into duplicates. Only MapEndOffset moves up to logStartOffset, as in
// Kafka, so the next snapshot is not named below the log.
func (s *State) OnLogStartOffsetIncremented(logStartOffset int64) {
	if s.mapEndOffset < logStartOffset {
		s.mapEndOffset = logStartOffset
	}
}

// MapEndOffset is the offset after the last batch the state has seen (or
// the offset of the snapshot it was loaded from): replay continues there,
// and a snapshot of the state is named by it.
func (s *State) MapEndOffset() int64 { return s.mapEndOffset }

// Len is the number of producers tracked.
func (s *State) Len() int { return len(s.producers) }

// LastEntry returns a copy of the producer's entry.
func (s *State) LastEntry(producerID int64) (Entry, bool) {
	n := s.producers[producerID]
	if n == nil {
		return Entry{}, false
	}
	return n.Entry, true
}

// Entries returns copies of all entries, by producer id (for snapshots and
// DescribeProducers).
func (s *State) Entries() []Entry {
	out := make([]Entry, 0, len(s.producers))
	for _, pid := range s.producerIDs() {
		out = append(out, s.producers[pid].Entry)
	}
	return out
}

// producerIDs returns the tracked ids in increasing order.
func (s *State) producerIDs() []int64 {
	ids := make([]int64, 0, len(s.producers))
	for pid := range s.producers {
		ids = append(ids, pid)
	}
	slices.Sort(ids)
	return ids
}

// Clone returns an independent copy, recency order included, for a caller
// that wants to try changes it may throw away.
func (s *State) Clone() *State {
	c := &State{opts: s.opts, mapEndOffset: s.mapEndOffset, changes: s.changes,
		ongoing: slices.Clone(s.ongoing), unreplicated: slices.Clone(s.unreplicated)}
	if len(s.producers) > 0 {
		c.producers = make(map[int64]*node, len(s.producers))
	}
	for n := s.oldest; n != nil; n = n.newer {
		copied := &node{Entry: n.Entry}
		c.producers[copied.ProducerID] = copied
		c.pushNewest(copied)
	}
	return c
}

// inSequence is Kafka's ProducerAppendInfo.inSequence: next follows last,
// wrapping from math.MaxInt32 to 0. With last = -1 (no batch) only 0 does.
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// decrementSequence is Kafka's DefaultRecordBatch.decrementSequence, the
// inverse of batch.IncrementSequence.
func decrementSequence(sequence, decrement int32) int32 {
	if sequence < decrement {
		return math.MaxInt32 - (decrement - sequence) + 1
	}
	return sequence - decrement
}
