package producer

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Check's errors wrap the Kafka error the Produce response carries, so the
// wire layer maps them with errors.As(err, new(*kerr.Error)); errors.Is
// works with both the sentinel and the *kerr.Error.
var (
	// ErrOutOfOrderSequence: a gap or overlap in the producer's sequence,
	// a retry older than the five-batch window, or a new epoch that does
	// not start at sequence 0.
	ErrOutOfOrderSequence = fmt.Errorf("producer: %w", kerr.OutOfOrderSequenceNumber)
	// ErrInvalidProducerEpoch: the batch's epoch is below the one stored
	// (a fenced or stale producer), or negative.
	ErrInvalidProducerEpoch = fmt.Errorf("producer: %w", kerr.InvalidProducerEpoch)
	// ErrUnknownProducerID: a non-zero sequence from a producer id the
	// state does not know (never seen, expired or evicted). The client
	// recovers by bumping its epoch and starting again at sequence 0.
	ErrUnknownProducerID = fmt.Errorf("producer: %w", kerr.UnknownProducerID)
	// ErrInvalidTxnState: a non-transactional batch from a producer whose
	// transaction is open.
	ErrInvalidTxnState = fmt.Errorf("producer: %w", kerr.InvalidTxnState)
	// ErrCoordinatorFenced: a marker from a transaction coordinator epoch
	// older than the one of the producer's last marker.
	ErrCoordinatorFenced = fmt.Errorf("producer: %w", kerr.TransactionCoordinatorFenced)
)

// Snapshot errors. The caller treats either like Kafka's
// CorruptSnapshotException: drop that file and fall back to an older
// snapshot or to a replay of the log.
var (
	// ErrCorruptSnapshot: wrong version, CRC mismatch, bad framing or a
	// field no writer produces.
	ErrCorruptSnapshot = errors.New("producer: corrupt producer snapshot")
	// ErrSnapshotTooLarge: more bytes than a snapshot of MaxProducers
	// entries can have; refused before anything is allocated.
	ErrSnapshotTooLarge = errors.New("producer: producer snapshot too large")
)
