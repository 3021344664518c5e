// Package producer keeps the idempotent-producer state of one partition:
// for every producer id, its epoch and the metadata of its last five
// batches, so that a retried batch is written exactly once. It is Kafka's
// ProducerStateManager, ProducerAppendInfo and ProducerStateEntry as a pure
// value: no goroutines, no clock (times are parameters), no files (snapshots
// are encoded to and decoded from []byte). The partition's owner calls it;
// nothing here is safe for concurrent use.
//
// # The append protocol (leader)
//
// A Produce batch goes through three steps, in this order, with nothing
// but OnLogStartOffsetIncremented or AppendSnapshot (a roll) touching the
// State in between:
//
//  1. Check(h): h is the batch header after validation and offset
//     assignment (Kafka assigns offsets before it checks sequences, so
//     h.BaseOffset is the offset the batch will get). Check changes nothing.
//     It returns an AppendInfo, or an error wrapping a *kerr.Error that the
//     Produce response carries for that partition.
//  2. If AppendInfo.Duplicate: write nothing and answer success with
//     AppendInfo.Original (first offset, timestamp). The original may not
//     be durable yet; the answer must wait for the same high watermark /
//     flush the original waits for, as Kafka's purgatory does.
//     Otherwise: write the batch.
//  3. Commit(info) once the write has returned (pwrite done), before the
//     next Check. Do not wait for fdatasync: a second batch of the same
//     producer may arrive meanwhile and must be checked against the first,
//     or a retry of the first would not be seen as a duplicate. A failed
//     write leaves the State as it was (and fails the log directory anyway).
//
// Commit panics if a producer changed between Check and Commit, or if the
// batch now lies below MapEndOffset: the two-step protocol is only sound
// when one owner serialises the steps. A request with several batches is
// checked on a Clone, committing each before checking the next.
//
// Followers, recovery replay and a new leader's catch-up call Apply(h) for
// every batch already in the log (Kafka's AppendOrigin.REPLICATION): no
// checks, never an error, the same update code as Commit. So the state a
// leader builds while checking, and the state anyone rebuilds from the
// replicated log, are equal (property-tested).
//
// Batches without a producer id (non-idempotent producers) pass through
// Check/Commit/Apply untouched except for MapEndOffset, so the caller may
// feed every batch.
//
// # Rules of Check (Kafka 4's ProducerAppendInfo, in its order)
//
//  1. Same epoch as the stored entry and exactly the (first, last) sequence
//     range of one of the last five batches: Duplicate, with the original
//     offsets. An older batch is no longer recognised and falls to rule 4,
//     so it gets OUT_OF_ORDER_SEQUENCE_NUMBER (Kafka's behaviour).
//  2. Epoch below the stored epoch: INVALID_PRODUCER_EPOCH.
//  3. Epoch above the stored epoch (a bump): the first sequence must be 0,
//     else OUT_OF_ORDER_SEQUENCE_NUMBER. On commit the five-batch window is
//     cleared and restarts with this batch.
//  4. Same epoch: the first sequence must follow the last one: last+1, or 0
//     after math.MaxInt32 (sequences wrap; a batch may span the wrap). Else
//     OUT_OF_ORDER_SEQUENCE_NUMBER. An entry with no batch (its epoch came
//     from a transaction marker) expects sequence 0.
//  5. Unknown producer id (or an entry with no epoch): sequence 0 is
//     accepted with any epoch. A non-zero sequence gets UNKNOWN_PRODUCER_ID
//     by default; see "Where wren differs" for why and for the option that
//     restores Kafka's behaviour.
//
// Apply (replication) performs none of these: the log is the truth. Even an
// epoch below the stored one is applied (Kafka only logs a warning), which
// resets the window as any epoch change does.
//
// # Retention, expiration and memory
//
// Retention that deletes segments does not forget producers: since KIP-360
// (Kafka 2.4/2.5) producer state outlives the batches that built it, and
// OnLogStartOffsetIncremented only moves MapEndOffset forward. A live
// producer whose last batch was deleted is still known, and a retry of that
// batch is still answered with its original offsets.
//
// A producer is forgotten only by RemoveExpired, when nowMs minus its
// LastTimestamp reaches producer.id.expiration.ms and it has no open
// transaction (Kafka's isProducerExpired). LastTimestamp is the max
// timestamp of the producer's last batch, as in Kafka, not the broker's
// clock at append: it must come from the log so that replay rebuilds it.
// With CreateTime, a producer whose clock lags expires early; that is
// Kafka's behaviour too.
//
// Memory is bounded: at most Options.MaxProducers entries (default
// DefaultMaxProducers), each holding at most BatchesToRetain batch
// metadata. An entry costs about 250 bytes with its map slot and list links
// (measured by TestEntryMemory), so the default bound is about 2.5 MB per
// partition. When a new producer arrives at the cap, the producer that
// appended least recently is evicted, in O(1) (a list ordered by append,
// not a scan: a flood of new producer ids must not cost a scan each).
// Replicas that applied the same batches evict the same producer; after a
// snapshot load the order is rebuilt from LastTimestamp, which the file
// keeps, so it may differ from a replica that never restarted. An evicted
// producer that comes back with a non-zero sequence gets
// UNKNOWN_PRODUCER_ID and recovers by bumping its epoch (KIP-360).
//
// # Snapshots
//
// AppendSnapshot and DecodeSnapshot read and write Kafka's producer
// snapshot file (%020d.snapshot, named by MapEndOffset), version 1, all
// fields big-endian:
//
//	version               int16   = 1
//	crc                   uint32  CRC-32C of every byte after this field
//	entries               int32   count, then per entry (46 bytes):
//	  producer_id             int64
//	  producer_epoch          int16
//	  last_sequence           int32   -1 if the entry has no batch
//	  last_offset             int64   -1 if the entry has no batch
//	  offset_delta            int32   last_offset - first offset of the last batch
//	  timestamp               int64   the entry's LastTimestamp
//	  coordinator_epoch       int32
//	  current_txn_first_offset int64  -1 if no open transaction
//
// A snapshot keeps only the last batch of each producer, so after loading
// one, duplicates of the four batches before it are not recognised until
// new batches refill the window. Kafka accepts this; so do we.
//
// The decoder is checked against snapshots written by Kafka 4.1.1 (engine's
// testdata), and the encoder reproduces them byte for byte from a replay of
// the same batches.
//
// # Where wren differs from Kafka
//
//   - Unknown producer id with a non-zero sequence: UNKNOWN_PRODUCER_ID, as
//     the design asks. Kafka 2.5 to 4.x accept it and start tracking from
//     there ("accept writes with any sequence number"); Kafka's
//     KAFKA-15591 change answers OUT_OF_ORDER_SEQUENCE_NUMBER on a
//     partition that never held a record. We refuse because wren can evict
//     producers (MaxProducers) and because a producer we do not know is one
//     whose earlier batches we cannot vouch for; clients recover by an
//     epoch bump or a new producer id. Options.AcceptUnknownSequence
//     restores Kafka 4's acceptance.
//   - A batch with a producer id but a negative epoch gets
//     INVALID_PRODUCER_EPOCH. Kafka would store epoch -1, after which it
//     checks no sequence of that producer at all.
//   - Kafka keeps any number of producers until they expire; wren caps
//     them (above).
//   - Snapshot entries are written in producer-id order. Kafka writes them
//     in its HashMap's iteration order, which is the same order for small
//     ids (Kafka's own files here) and which no reader depends on.
//   - The decoder refuses what Kafka never writes: trailing bytes, negative
//     producer ids, a batch with a negative sequence or offset delta. A
//     repeated producer id is tolerated (the last one wins, as in Kafka).
//   - A producer with an open transaction is never evicted at MaxProducers
//     (its transaction holds the last stable offset): with every producer
//     in a transaction the cap is exceeded, and a snapshot of such a state
//     is larger than DecodeSnapshot accepts, so a load replays the log.
//
// # Transactions
//
// A transactional batch (attributes bit 4) opens CurrentTxnFirstOffset at
// its base offset; a control batch whose record is a transaction marker
// (batch.EndTxnMarker) ends it: ApplyControl (replication, replay) or
// CheckMarker then Commit (the leader), which return the CompletedTxn with
// the last stable offset after it (the first offset of the oldest other
// open transaction, else the marker's offset + 1), the value Kafka's
// transaction index keeps. CheckMarker refuses a producer epoch below the
// stored one (ErrInvalidProducerEpoch) and a coordinator epoch below the
// producer's last marker's (ErrCoordinatorFenced); a marker for a
// producer without an open transaction completes an empty one at its own
// offset, as in Kafka. Check refuses a non-transactional batch from a
// producer whose transaction is open (ErrInvalidTxnState). A control
// batch without a marker (compacted empty, or another control type)
// changes no producer.
//
// The open transactions are kept by first offset (Kafka's ongoingTxns);
// completed ones stay unstable until OnHighWatermarkUpdated passes their
// marker (Kafka's unreplicatedTxns). FirstUnstableOffset and
// LastStableOffset(hw) read them. A snapshot keeps CurrentTxnFirstOffset
// and CoordinatorEpoch per entry; DecodeSnapshot rebuilds the open
// transactions from them (two at one offset: ErrCorruptSnapshot). The
// unreplicated completed ones are not kept, as in Kafka.
package producer
