// Package coordinator drives the groups state machines: it is the I/O
// edge of the group coordinator, as groups is its pure core.
//
// A Driver keeps one groups.Coordinator per __consumer_offsets partition
// this node leads. One goroutine (Run) owns them all and serialises every
// input: requests arrive as closures on a bounded channel, Tick runs every
// TickInterval, ExpireOffsets every RetentionCheckInterval, and each tick
// also compares the partitions' leadership with the loaded coordinators,
// loading one (replaying its partition's log, then CompleteLoad) when this
// node starts to lead and unloading it when it stops. A new leader loads
// only once its high watermark reaches its leader epoch start offset, so
// the replay covers every record an earlier leader committed; until then
// requests get COORDINATOR_LOAD_IN_PROGRESS, and so does ListGroups (with
// the groups of the partitions loaded), as Kafka's list does while one of
// its partitions loads.
//
// # The Ready loop
//
// After each input the owner drains the coordinator's Ready: its Records
// become one uncompressed record batch appended with AppendAsLeader
// (acks=all), and its Responses are queued behind that append on the
// partition's FIFO. One delivery goroutine per partition takes the FIFO in
// order, waits for each append to be durable and only then hands the
// responses to the waiting requests, so the owner never blocks on an
// fdatasync and a later Ready's responses never overtake an earlier one's.
//
// When an append fails (synchronously, or its wait fails), that Ready's
// responses are answered with Response.WithError (NOT_COORDINATOR when
// the partition is not led here any more, COORDINATOR_NOT_AVAILABLE
// otherwise) and the coordinator is unloaded; the next leadership check
// rebuilds it from the log if this node still leads.
//
// # Transactions
//
// A Ready's records that carry a producer (TxnOffsetCommit's) are
// appended as a transactional batch of that producer's id and epoch, at
// the producer's next sequence in the partition (the log checks it as
// any producer's batch; only this driver writes them). The transaction
// coordinator's markers come through WriteTxnMarker(ctx, partition,
// producerID, producerEpoch, coordinatorEpoch, commit): on the owner
// goroutine it appends the COMMIT or ABORT control batch as the
// partition's leader (replication.Partition.AppendTxnMarkerAsLeader,
// acks=all; the log fences older producer and coordinator epochs), so the
// marker is ordered with the coordinator's own records; it then hands the
// marker to the core (CompleteTxn), which commits or drops the producer's
// pending offsets, and returns once the marker is durable, behind the
// Readies before it on the partition's FIFO. Its errors wrap the Kafka
// error to answer: NOT_LEADER_OR_FOLLOWER when the partition is not led
// here, COORDINATOR_LOAD_IN_PROGRESS (retriable) while it loads,
// INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED or
// NOT_ENOUGH_REPLICAS when the log refused it (nothing written),
// REQUEST_TIMED_OUT when it was written but did not become durable in
// time (the coordinator is then rebuilt from the log; a retry is
// harmless). A load replays transactional batches as pending offsets and
// markers as their ends; control batches that hold no marker are skipped.
//
// # Invariants
//
//   - Only the owner goroutine touches a groups.Coordinator.
//   - Every request submitted gets exactly one answer, or its caller's
//     context ends first and the answer is dropped.
//   - Requests in flight are bounded by the submit channel and the
//     delivery FIFOs (both of fixed capacity: a full one blocks the
//     submitter, which is backpressure on the connection).
//
// # Not implemented
//
//   - Loading replays the whole partition on the owner goroutine: other
//     partitions' requests wait meanwhile.
//   - A change of __consumer_offsets' partition count is not followed; the
//     count is read when the Driver starts.
package coordinator
