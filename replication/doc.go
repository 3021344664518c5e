// Package replication holds this node's replicas of partitions: their
// leader state and high watermark, follower fetching, and the Manager that
// keeps them in step with the cluster metadata (Kafka's ReplicaManager).
//
// Invariant: LogStartOffset <= HighWatermark <= LogEndOffset for every
// partition, and the high watermark only moves forward while a replica
// leads. Leadership moves only forward in leader epoch: a change at an
// epoch older than the replica's (a late image) is stale and ignored.
// Built with -tags invariants (internal/invariants), every input of the
// replica core checks the core's own state when it ends
// (replicaCore.checkInvariants); the replication simulator checks what
// only all the replicas together show.
//
// The rules live in a pure core (core.go: inputs are follower fetch
// positions, the local log's offsets, ticks of the clock and the metadata
// image; outputs are the high watermark, ISR changes for the controller
// and acks=all waiters to answer) and truncation.go (where a follower's
// log diverges, by leader epoch: KIP-101 and KIP-279), both tested by the
// scripts in testdata/core. Partition drives the core for one partition:
// it holds it under its lock, does its Ready (publish the high watermark,
// answer waiters) and sends ISR changes through the controller
// (cluster.Controller.SubmitAlterISR), which count only once committed
// and back in the image.
//
// Manager.ApplyImage runs on the metadata quorum's goroutine, so it must
// not wait on the disk for long: when an image brings 64 or more new
// replicas (a CreateTopics of thousands of partitions), their logs are
// created in the background, several at once (engine.Manager.
// CreateLogsLater), and each chunk is hosted as it is created
// (Manager.LogsLoaded), as partitions whose load waited for file
// descriptors are. Until then such a replica is not hosted: it neither
// leads nor fetches, and clients get a retriable error for it.
//
// Followers fetch with Kafka's Fetch (replica id set) and
// OffsetForLeaderEpoch on replica connections of the leader's CONTROLLER
// listener, never the client listener (serve.go), as kmsg requests and
// responses (the leader's Fetch answer is wire.EncodeFetchResponse, its
// records spliced in with sendfile); one fetcher goroutine
// per leader multiplexes every partition this node follows there
// (fetcher.go). A partition followed while that fetcher's long poll is in
// flight ends the poll (the fetcher closes its connection and dials
// again), a partition fetches in the round that truncated it, and a
// Fetch waits at the leader no longer than a partition's backoff lasts,
// so a new partition's first fetch waits for no replica.fetch.wait.max.ms
// (at most replica.fetch.backoff.ms, when the follower asked before its
// leader hosted it). A follower appends with AppendAsFollower, which under
// flush policy ack returns after fdatasync, so the fetch offset its next
// fetch carries is durable when it counts toward the high watermark. A
// follower learns the high watermark from fetch responses, and every
// replica checkpoints it in replication-offset-checkpoint. It takes the
// leader's log start offset from them too (DeleteRecords, retention),
// never past its high watermark, and checkpoints it in
// log-start-offset-checkpoint before its next fetch. On becoming a
// follower a replica truncates by leader epoch, never to its local high
// watermark. Under flush policy ack a leader serves followers only what
// it made durable (readLimitForFollower): a leader that restarts before
// the controller fences it leads again at the same leader epoch, and no
// follower may hold records of that epoch it lost. So a leader starts
// each append's fdatasync when it writes it, not when the produce's answer
// waits for it, and wakes its followers' long polls when it returns
// (Partition.waitDurable); a follower fetches again as soon as it
// appended, and that fetch answers the acks=all appends it covers. See
// docs/ARCHITECTURE.md.
//
// The wake-up is the fetch's own buffered channel (fetchWaiter),
// registered with each partition under the partition's lock as the
// partition takes the fetch (followerFetch), before the fetch looks for
// records: an append made durable before the registration is found by the
// look, one after it sends into the channel, which keeps the send for a
// fetch not yet waiting. wakeup_test.go holds every poll for an hour to
// pin this. An Observer (observer.go; the broker's metrics) is told how
// long each leader append took to become durable, how long an acks=all
// append then waited for the ISR, and how long each follower append took;
// ReplicaFetchStats counts follower fetches held to the end of their wait
// and this node's failed fetch rounds.
//
// A follower fetches in an incremental fetch session (session.go, Kafka's
// KIP-227) with each leader: after a first full Fetch, its Fetches name
// only the partitions whose fetch state changed (and forget those it no
// longer fetches), and the leader answers only partitions with records,
// an error, or a high watermark or log start offset it has not sent, so
// an idle follower's Fetch and its answer carry no partition however
// many it follows. The leader still takes every partition of the session
// as fetched at its last offset (the ISR's caught-up times), and wakes
// the long poll on an append to any of them. A session belongs to one
// replica connection (the peer layer says when it closes) and each
// follower has at most one per leader; a follower or leader of an older
// version fetches without one (SessionEpoch -1, or SessionID 0 answered).
//
// sim_test.go is a seeded, deterministic simulator of this package's data
// plane: real Partitions over real engine logs on crashable in-memory file
// systems, a simulated controller using cluster's pure rules, a lossy
// network, idempotent acks=all producers, and checks after every
// simulated millisecond (committed records never lost, duplicated or
// changed; replicas byte-identical below their high watermarks; high
// watermarks monotonic while a replica runs). Scenarios are data
// (sim_scenarios_test.go); WREN_SEED=n replays a seed.
//
// The replication throttle (throttle.go, Kafka's KIP-73) is one token
// bucket per side: the leader answers a fetch for a partition it throttles
// with no records while its rate is used up, and the follower leaves such
// a partition out of its fetch; either only for replicas outside the ISR.
// Which partitions are throttled comes with the image (the topics'
// *.replication.throttled.replicas), the rates from the broker's dynamic
// configs (SetReplicationThrottle).
package replication
