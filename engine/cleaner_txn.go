package engine

import (
	"slices"

	"github.com/wren-broker/wren/engine/batch"
)

// The cleaner's transaction rules (Kafka's LogCleaner with
// CleanedTransactionMetadata, KIP-98 and KIP-534). The cleaner only ever
// sees completed transactions: nothing at or past the first unstable
// offset is cleanable. Walking the batches in offset order with the
// aborted transactions of the transaction indexes:
//
//   - A transactional batch of a producer whose aborted transaction has
//     begun (its first offset is at or below the batch) and whose ABORT
//     marker has not been passed yet belongs to that aborted transaction:
//     its records go (the batch stays empty when it is the producer's
//     last, for the sequence). The offset map never maps its keys, so an
//     aborted record never shadows a committed one.
//   - Any other transactional batch belongs to a committed transaction.
//   - A marker (COMMIT or ABORT) may go once no batch of its transaction
//     is left: none was seen in the pass, or the pass removed every one it
//     saw. A marker that may go first gets a delete horizon (now + delete.retention.ms, in its
//     baseTimestamp with the delete-horizon bit, as a tombstone does) and
//     goes in a pass after the horizon, so a read_committed consumer that
//     read the transaction's records before they went still meets its
//     marker. A marker whose batches remain stays: without it a replay
//     would find the transaction open.
//   - The producer's last marker when nothing of it follows (it carries
//     the producer's epoch and coordinator epoch), and the last batch of a
//     run, stay.
//   - The rewritten segment's transaction index keeps the entries of the
//     ABORT markers that stay because their batches remain.
//
// Kafka keeps a marker one pass longer (until a pass sees none of its
// batches); both keep it for delete.retention.ms after its last record
// went, and a marker's batches are always before it, so a crash between
// the runs of a pass never leaves a marker with a horizon and its batches
// still there without a later pass seeing them.

// txnScan is one walk's transaction state (Kafka's
// CleanedTransactionMetadata).
type txnScan struct {
	// aborted are the aborted transactions of the walk's range, by first
	// offset; next is the first not yet begun.
	aborted []abortedTxn
	next    int
	// ongoingAborted: producers inside an aborted transaction, with
	// whether a batch of it stays.
	ongoingAborted map[int64]*scanAborted
	// ongoingCommitted: producers with a batch of a committed transaction
	// that stays, and its marker not passed yet.
	ongoingCommitted map[int64]bool
}

type scanAborted struct {
	entry    abortedTxn
	retained bool
}

func newTxnScan(aborted []abortedTxn) *txnScan {
	// By first offset, stably (an insertion sort: the entries come in
	// marker order, nearly sorted, and a generic sort's code would grow
	// the binary for this alone).
	a := slices.Clone(aborted)
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j].FirstOffset < a[j-1].FirstOffset; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
	return &txnScan{aborted: a, ongoingAborted: map[int64]*scanAborted{}, ongoingCommitted: map[int64]bool{}}
}

// begin starts the aborted transactions whose first offset is at or below
// offset.
func (s *txnScan) begin(offset int64) {
	for s.next < len(s.aborted) && s.aborted[s.next].FirstOffset <= offset {
		a := s.aborted[s.next]
		s.next++
		if _, ok := s.ongoingAborted[a.ProducerID]; !ok {
			s.ongoingAborted[a.ProducerID] = &scanAborted{entry: a}
		}
	}
}

// onBatch walks a data batch and reports whether it belongs to an aborted
// transaction.
func (s *txnScan) onBatch(h batch.Header) bool {
	s.begin(h.LastOffset())
	if !h.IsTransactional() || !h.HasProducerID() {
		return false
	}
	return s.ongoingAborted[h.ProducerID] != nil
}

// retained records that the data batch h, walked last, stays (whole,
// in part, or empty): its transaction's marker must stay too.
func (s *txnScan) retained(h batch.Header) {
	if !h.IsTransactional() || !h.HasProducerID() {
		return
	}
	if a := s.ongoingAborted[h.ProducerID]; a != nil {
		a.retained = true
		return
	}
	s.ongoingCommitted[h.ProducerID] = true
}

// onMarker walks a control batch holding marker m (nil: no transaction
// marker). It reports whether the marker may go (after its delete
// horizon), and for an ABORT marker that stays, its transaction index
// entry. A control batch without records may go; one of another control
// type stays, as in Kafka.
func (s *txnScan) onMarker(h batch.Header, m *batch.EndTxnMarker) (discardable bool, entry *abortedTxn) {
	s.begin(h.LastOffset())
	if m == nil {
		return h.RecordCount == 0, nil
	}
	// A marker whose producer has any batch left since its last marker
	// stays, whatever the index says the batches were: a transaction
	// left without its marker would look open to a replay.
	pid := h.ProducerID
	a := s.ongoingAborted[pid]
	seen := s.ongoingCommitted[pid] || a != nil && a.retained
	delete(s.ongoingCommitted, pid)
	if m.Commit {
		return !seen, nil
	}
	delete(s.ongoingAborted, pid)
	if a != nil && a.retained {
		e := a.entry
		return false, &e
	}
	return !seen, nil
}

// collectAbortedEntriesLocked returns the transaction index entries of
// the aborted transactions whose first offset is below upper and whose
// marker is at or after from, in marker order. Under l.mu.
func (l *Log) collectAbortedEntriesLocked(from, upper int64) ([]abortedTxn, error) {
	if !l.mayHaveAborted {
		return nil, nil
	}
	var out []abortedTxn
	for i := l.segmentFor(from); i < len(l.segments); i++ {
		entries, err := l.segments[i].abortedTxnsLocked(l.fileDir)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.LastOffset >= from && e.FirstOffset < upper {
				out = append(out, e)
			}
		}
	}
	return out, nil
}
