// Package groups is the group coordinator's decision-making core for
// Kafka's classic consumer-group protocol (JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup), KIP-848 consumer groups (ConsumerGroupHeartbeat,
// ConsumerGroupDescribe; consumer.go) and committed offsets (OffsetCommit,
// OffsetFetch, OffsetDelete), as a pure state machine:
// no goroutines, no clock, no sockets, no files. Time is an input (nowMs),
// member ids come from a source the driver passes in, and iteration over
// groups and members is in a fixed order, so the same inputs give the same
// outputs. The range, round-robin and sticky assignors live in
// groups/assign.
//
// # One coordinator per __consumer_offsets partition
//
// A group's coordinator is the leader of __consumer_offsets partition
// PartitionFor(group, partitions) (Java's String.hashCode, as Kafka). The
// driver keeps one Coordinator per partition it leads, owned by one
// goroutine:
//
//	c, _ := NewCoordinator(cfg, partition, partitions, SeededMemberIDs(seed)) // loading
//	for each record (key, value) of the partition, in order:
//		rec, err := DecodeRecord(key, value) // skip ErrUnknownRecordType
//		c.Replay(rec)
//	c.CompleteLoad(nowMs) // active
//	... inputs ...
//	c.Unload() // leadership lost
//
// While loading, requests get COORDINATOR_LOAD_IN_PROGRESS (a Heartbeat
// gets NONE and a SyncGroup REBALANCE_IN_PROGRESS, as in Kafka); after
// Unload, NOT_COORDINATOR. Groups come back from the log Stable in their
// last stored generation or Empty: a rebalance that was in flight on the
// old coordinator was never stored, and its members' retries start a new
// one.
//
// # Inputs and the Ready contract
//
// Inputs: Join, Sync, Heartbeat, Leave, ConsumerHeartbeat,
// ConsumerDescribe, CommitOffsets, TxnCommitOffsets, FetchOffsets,
// DeleteOffsets, DescribeGroup, DeleteGroup, CompleteTxn (each with the
// driver's opaque RequestID), and Tick, UpdateTopics,
// PartitionCountChanged, ExpireOffsets, Unload.
// None of them returns anything: their effects collect in the coordinator
// until the driver calls Ready, which returns and forgets them:
//
//	Ready.Records    records to append to the partition, in order
//	Ready.Responses  answers to deliver, each naming its RequestID
//
// The driver, after every input or batch of inputs:
//
//  1. rd := c.Ready()
//  2. appends rd.Records to the coordinator's __consumer_offsets partition
//     (EncodeKey, EncodeValue; nil value = tombstone) as one batch, so a
//     commit of many partitions is all or nothing; records that carry a
//     Producer (a TxnOffsetCommit's) go in a transactional batch of that
//     producer's id and epoch, one batch per run of records of one kind;
//  3. delivers rd.Responses once those records, and those of every
//     earlier Ready, are durable (acks=all and flushed, as any produce).
//
// Persist before responding: a client told that its commit or its
// generation's assignment succeeded must find it after any failover. A
// read (OffsetFetch, DescribeGroups) is answered through the same Ready,
// behind the records of earlier inputs, so it never shows what is not
// durable. The state machine applies a record as soon as it emits it; if
// the append fails, the driver must not deliver that Ready's responses:
// it answers each with Response.WithError (NOT_COORDINATOR when the
// partition's leadership is gone, COORDINATOR_NOT_AVAILABLE otherwise),
// calls Unload, and rebuilds a coordinator from the log if it still leads.
//
// A JoinGroup or SyncGroup may be answered many inputs later (when the
// join phase ends, when the leader syncs); the coordinator holds its
// RequestID until then. Every request gets exactly one response: a
// request superseded by a newer one from the same member, or waiting when
// its member is removed, fenced or the coordinator unloads, is answered
// with an error.
//
// # Records
//
// The coordinator writes Kafka's classic __consumer_offsets records, so
// Kafka's tools read them: an offset commit (key v1, value v3; v1 when the
// commit carried its own retention), and group metadata (key v2, value
// v3) when a generation's assignment is complete (the leader's
// SyncGroup), when a group becomes Empty, and when a static member is
// replaced without a rebalance. Deleted and expired offsets, and deleted
// groups, get tombstones. Replaying the records gives back every Stable
// or Empty group exactly as it was (the tests cross-check this).
//
// The records Kafka 4 writes for KIP-848 consumer groups are encoded by
// hand (kmsg has no types for them), byte for byte as Kafka 4.1 writes
// them: the group's epoch and metadata hash (key v3), a member's
// subscription (v5), the target assignment's epoch (v6) and each member's
// share of it (v7), and each member's current assignment with the
// partitions it must still revoke (v8). Their values are flexible
// (version 0, compact fields, tagged-field sections): tagged fields we do
// not keep, such as a classic member's metadata or fields of later Kafka
// versions, are skipped on read, so a log Kafka wrote loads. Kafka 4.0's
// subscribed-topic metadata (v4) is recognised and not read: Kafka 4.1
// replaced it with the metadata hash, and it is never written.
//
// # Transactional offset commits
//
// TxnCommitOffsets (TxnOffsetCommit, KIP-98 and KIP-447; txn.go) checks
// the member, generation and instance as OffsetCommit does when the
// request names any (v3+), and keeps the offsets pending per producer,
// as Kafka's pendingTransactionalOffsetCommits: OffsetFetch does not show
// them, and with RequireStable their partitions answer
// UNSTABLE_OFFSET_COMMIT. The transaction coordinator's marker reaches
// the partition through the driver, which appends the control batch and
// then calls CompleteTxn: COMMIT makes the producer's pending offsets
// committed, ABORT drops them. The latest record of a partition wins: a
// regular commit, or another producer's offset, written after a pending
// offset overtakes it. A newer producer epoch replaces an older epoch's
// pending offsets, and a request from an epoch older than one seen is
// refused with INVALID_PRODUCER_EPOCH (the log would refuse its batch).
// Replay sees the records with their batch's producer (Record.Producer)
// and the markers (ReplayTxnMarker) in log order; a transaction without
// its marker in the log stays pending after CompleteLoad. Partitions with
// pending offsets do not expire, and a group with an open transaction is
// kept and is not empty for DeleteGroups (NON_EMPTY_GROUP); OffsetDelete's
// tombstone deletes a partition's pending offsets too, as in Kafka.
//
// # Invariants
//
//   - A group has a leader if and only if it has members, and the leader is
//     one of them; the first member to join leads, and when the leader
//     leaves or does not rejoin, the first member in join order that did.
//   - A group's generation never decreases while the coordinator lives.
//   - A member of a non-Empty group commits offsets only with the group's
//     current generation and its current member id (for a static member,
//     the member id its instance id maps to now).
//   - In a Stable group every member has an assignment.
//   - Everything that grows from client input is bounded: members per
//     group (group.max.size outside a join phase, twice that during one;
//     it also bounds members waiting to rejoin with MEMBER_ID_REQUIRED),
//     groups per coordinator (MaxGroups), offset metadata
//     (offset.metadata.max.bytes). Committed partitions per group are
//     bounded by the topics that exist: the kafka package answers
//     UNKNOWN_TOPIC_OR_PARTITION before a commit gets here.
//
// Built with -tags invariants (internal/invariants), Ready checks every
// group's own state before it hands out an input's records and answers
// (invariants.go: the leader, the member indexes, the waiters' phases, a
// consumer group's owner index); the property tests call the same checks.
//
// # Not implemented
//
//   - Share groups.
//   - KIP-848: classic members inside a consumer group (Kafka's
//     mixed-protocol upgrade path), rack-aware assignment, and Kafka
//     4.1's subscription metadata hash (a coordinator that loads a group
//     assumes the topics did not change while no one led it; the next
//     change of topics is seen as usual).
//   - Offsets are not dropped when their topic is deleted; they expire.
//   - A generation number is reused after a coordinator change when the
//     old coordinator never stored it (no member got an assignment in it),
//     as in Kafka.
package groups
