package engine

import (
	"fmt"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/engine/producer"
)

// Transactions in the log (docs/ARCHITECTURE.md, "Transactions in the
// log"). A transactional batch (attributes bit 4) opens a transaction for
// its producer at its first offset; a control batch holding a transaction
// marker (bit 5, batch.EndTxnMarker) ends it. The producer state
// (engine/producer) tracks the open transactions, leader and followers
// alike, and recovery rebuilds them from the snapshot and the log. Each
// ABORT marker appends one entry to its segment's transaction index
// (txnindex.go), which read_committed readers use to skip aborted records.

// TxnMarker is a transaction marker a leader appends for a producer: what
// the transaction coordinator's WriteTxnMarkers asks of a partition.
type TxnMarker struct {
	ProducerID    int64
	ProducerEpoch int16
	Commit        bool
	// CoordinatorEpoch is the epoch of the coordinator writing the
	// marker; a marker from an epoch older than the producer's last
	// marker is refused (producer.ErrCoordinatorFenced).
	CoordinatorEpoch int32
}

// AppendTxnMarker appends a control batch ending producer's transaction
// (COMMIT or ABORT) as the leader at leaderEpoch, and returns after it is
// as durable as the flush policy promises. A producer epoch below the one
// the partition has seen is refused with producer.ErrInvalidProducerEpoch,
// a coordinator epoch below the producer's last marker's with
// producer.ErrCoordinatorFenced; a marker for a producer with no open
// transaction here is written (the coordinator writes markers to every
// partition of a transaction), as Kafka does.
func (l *Log) AppendTxnMarker(m TxnMarker, leaderEpoch int32) (AppendInfo, error) {
	info, wait, err := l.AppendTxnMarkerAsync(m, leaderEpoch)
	if err != nil {
		return AppendInfo{}, err
	}
	if err := wait(); err != nil {
		return AppendInfo{}, err
	}
	return info, nil
}

// AppendTxnMarkerAsync is AppendTxnMarker returning once the marker is
// written, with a function that waits until it is as durable as the flush
// policy promises (as AppendAsync). The caller must call it once.
func (l *Log) AppendTxnMarkerAsync(m TxnMarker, leaderEpoch int32) (AppendInfo, func() error, error) {
	if m.ProducerID < 0 || m.ProducerEpoch < 0 {
		return AppendInfo{}, nil, fmt.Errorf("%w: transaction marker for producer %d epoch %d", producer.ErrInvalidProducerEpoch, m.ProducerID, m.ProducerEpoch)
	}
	records, err := batch.BuildEndTxnMarker(m.ProducerID, m.ProducerEpoch,
		batch.EndTxnMarker{Commit: m.Commit, CoordinatorEpoch: m.CoordinatorEpoch}, l.nowMs())
	if err != nil {
		return AppendInfo{}, nil, err
	}
	// Control batches are the broker's own: validated by the rules of
	// batches already in a log, which allow them.
	ss, err := l.splitBatches(records, batch.AppendOriginReplication)
	if err != nil {
		return AppendInfo{}, nil, err
	}
	return l.appendNoWait(records, ss, leaderEpoch, true)
}

// LastStableOffset is the partition's last stable offset given its high
// watermark hw: the first offset of its oldest open transaction, or of a
// completed one whose marker hw has not passed, if below hw; else hw.
// read_committed readers stop there.
func (l *Log) LastStableOffset(hw int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.producers.LastStableOffset(hw)
}

// FirstUnstableOffset is the first offset of the oldest open (or
// unreplicated completed) transaction; ok false when there is none.
func (l *Log) FirstUnstableOffset() (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.producers.FirstUnstableOffset()
}

// OpenTxns lists the partition's open transactions, oldest first.
func (l *Log) OpenTxns() []producer.OpenTxn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.producers.OpenTxns()
}

// completedTxnsLocked records what an append's markers completed: each
// aborted transaction's entry goes to the transaction index of seg, the
// segment the marker was written to. Under mu.
func (l *Log) completedTxnsLocked(seg *segment, completed []producer.CompletedTxn) error {
	for _, c := range completed {
		if !c.Aborted {
			continue
		}
		l.mayHaveAborted = true
		if err := seg.appendAbortedTxn(l.fileDir, abortedTxn{
			ProducerID: c.ProducerID, FirstOffset: c.FirstOffset,
			LastOffset: c.LastOffset, LastStableOffset: c.LastStableOffset,
		}); err != nil {
			return err
		}
	}
	return nil
}

// ReadCommitted is Read for a read_committed consumer (Fetch isolation
// level 1) of a partition whose high watermark is hw: it reads from offset
// below the last stable offset, and returns that offset and the aborted
// transactions of the range read, whose records the consumer drops.
func (l *Log) ReadCommitted(offset, maxBytes, hw int64, minOneMessage bool) (*ReadResult, int64, []AbortedTxn, error) {
	lso := l.LastStableOffset(hw)
	rr, err := l.Read(offset, maxBytes, lso, minOneMessage)
	if err != nil || rr.Slice.Size == 0 || rr.seg == nil {
		return rr, lso, nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// The read holds batches of one segment: nothing past its end.
	upper := min(lso, rr.seg.nextOffset)
	aborted, err := l.collectAbortedTxnsLocked(rr.FirstOffset, upper)
	if err != nil {
		rr.Release()
		return nil, lso, nil, l.readFailed(err)
	}
	return rr, lso, aborted, nil
}

// AbortedTxns returns the aborted transactions a read_committed reader of
// offsets [from, upper) must know, as ReadCommitted does (for tools and
// tests).
func (l *Log) AbortedTxns(from, upper int64) ([]AbortedTxn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.collectAbortedTxnsLocked(from, upper)
}

// CommittedRead is what a read_committed consumer's read returns, beside
// the records: the offsets a Fetch response carries and the aborted
// transactions.
type CommittedRead struct {
	Result           *ReadResult
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64
	Aborted          []AbortedTxn
}
