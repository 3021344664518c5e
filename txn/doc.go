// Package txn is the transaction coordinator's core: per transactional id
// the state machine of Kafka's TransactionCoordinator (Empty, Ongoing,
// PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, Dead,
// PrepareEpochFence), as a pure state machine in the style of groups
// (docs/ARCHITECTURE.md): no goroutines, no clock reads, no sockets, no
// files. txn/coordinator is its driver on the __transaction_state topic.
//
// One Coordinator serves the transactional ids of one __transaction_state
// partition (PartitionFor: Kafka's Utils.abs(String.hashCode) % count, as
// for groups). Each input (InitProducerID, AddPartitions, EndTxn,
// MarkersWritten, Tick) changes the state at once and leaves in Ready the
// records to append (Kafka's TxnMetadataKey v0 and TxnMetadataValue v0,
// byte for byte), the responses to give once those records are durable,
// and the markers to write after that. A failed append makes the driver
// unload the coordinator; the next load replays the log, so the state
// answered is always the state the log holds.
//
// The rules, as Kafka's transaction version 1 protocol:
//
//   - InitProducerId: a new id gets the caller's fresh producer id at
//     epoch 0; an existing one in Empty or Complete* a bumped epoch (a new
//     producer id once the epoch is exhausted); KIP-360's current id and
//     epoch must match (or be the epoch before the last bump, a retry),
//     else PRODUCER_FENCED. An Ongoing transaction is aborted under a
//     bumped epoch, fencing the producer that began it, and the request
//     gets CONCURRENT_TRANSACTIONS; Prepare* gets CONCURRENT_TRANSACTIONS.
//     transaction.timeout.ms above transaction.max.timeout.ms (or not
//     positive) is INVALID_TRANSACTION_TIMEOUT.
//   - AddPartitionsToTxn (and AddOffsetsToTxn, with the group's
//     __consumer_offsets partition): the producer id must match
//     (INVALID_PRODUCER_ID_MAPPING) and its epoch (PRODUCER_FENCED);
//     while a commit or abort completes, CONCURRENT_TRANSACTIONS. The
//     first add starts the transaction (Ongoing, its start time). With
//     VerifyOnly (KIP-890 part 1) nothing changes: each partition is NONE
//     if it is in the producer's ongoing transaction, else
//     INVALID_TXN_STATE; partition leaders ask this before the first
//     transactional batch of a transaction.
//   - EndTxn: Ongoing goes to PrepareCommit or PrepareAbort, answered
//     once that record is durable; the markers follow, then the
//     CompleteCommit or CompleteAbort record (MarkersWritten). While the
//     markers are written, either decision gets CONCURRENT_TRANSACTIONS
//     (Kafka's pending transition). A retry after completion gets NONE;
//     an abort with no transaction ongoing (Empty, CompleteCommit) gets
//     NONE too, the abort of an empty transaction as transaction version
//     2 allows (librdkafka sends it when it aborts while its
//     AddPartitionsToTxn met the previous commit's markers, and takes
//     INVALID_TXN_STATE as fatal); a commit after an abort is
//     INVALID_TXN_STATE.
//   - Tick: an Ongoing transaction older than its timeout is aborted under
//     a bumped epoch; an id idle (Empty, Complete*) for
//     transactional.id.expiration.ms is removed with a tombstone.
//   - CompleteLoad: every transaction found in Prepare* has its markers
//     written again (a coordinator that failed over between the decision
//     and the markers), so it completes wholly.
//
// Not implemented: transaction version 2 (KIP-890 part 2: an epoch bump
// with every end, implicit adds); Kafka's PrepareEpochFence is never kept
// (the core moves straight to PrepareAbort under the bumped epoch) and
// Dead only as a removed id.
package txn
