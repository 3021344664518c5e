// Package uplink forwards an edge node's topics to a central Kafka cluster
// (Apache Kafka or another wren), and pulls the central cluster's topics
// the links name into local ones (pull.topics): the links of the config file's
// [uplink.NAME] tables (config.Uplink), run by the broker after its kafka
// listener and closed before it. docs/ARCHITECTURE.md ("The uplink") has
// the summary; this file the reasons.
//
// # Store and forward
//
// The local partition log is the buffer. A link keeps no state of its own
// on disk: a link down for hours resumes where it stopped, oldest record
// first, from what the local log still holds. A cursor past the local
// log end (the local log lost records it had forwarded, as after an
// unclean election) refuses the partition: the records now at those
// offsets would reach the far side under offsets it already holds.
//
// Retention (retention.ms, retention.bytes) does not delete what a link
// has not forwarded while the link's backlog on this node is within its
// max.backlog.bytes (config.Uplink.MaxBacklogBytes; 1 GiB unless set, 0
// for no hold): the local log is the buffer only if retention leaves it
// alone. The engine knows no link: the broker hands it, per partition, a
// hold (engine.RetentionHold: an offset from which segments are kept, and
// a byte budget) before each retention pass, and looks again every
// refresh. The offset is the link's cursor on the node that leads the
// partition; before the cursor is known (no session reached the far side
// since start) it is the log start, so nothing is assumed forwarded. On a
// follower it is the replica's own log start: a follower deletes only
// what its leader deleted (the leader's log start reaches it in fetch
// responses), so a follower that becomes leader still holds what the old
// leader held. The bound: every node must carry the link (the same
// [uplink.NAME] tables), a node without it applies retention as before,
// and a link disabled or not started holds nothing. Several links
// forwarding a topic: a record goes only when every link lets it go.
//
// Past the budget, backlog.full.policy chooses. drop-oldest (the
// default: an edge node keeps taking writes) lets retention delete the
// oldest held segments until each partition is within its share of the
// budget (its part of the backlog); what goes is counted in Status
// (Dropped: the offsets, DroppedBytes), in
// wren_uplink_dropped_records_total, logged (one WARN a minute per link
// at most, naming the topic, partition and offsets), and makes the
// cluster degraded for an hour (uplink_records_dropped); forwarding goes
// on from the new log start. refuse-writes keeps everything and answers
// Produce to the link's topics on this node with
// THROTTLING_QUOTA_EXCEEDED until the backlog is back within the budget:
// the code is retriable, so a Kafka producer retries it within its
// delivery.timeout.ms and then gives its application the error (a
// storage error would send it to look for another leader;
// POLICY_VIOLATION is not retried at all). Refusals are counted
// (RefusedWrites) and the full backlog is logged and makes the cluster
// degraded (uplink_backlog_full). The state is looked at every refresh,
// so the backlog may pass the budget by a refresh's worth of writes
// before they are refused. Nothing acknowledged is dropped uncounted:
// the only deletions past a hold are drop-oldest's, and each is counted.
// The held bytes are measured as Status's backlog bytes (from the batch
// holding the cursor), and segments go whole, so a partition may keep a
// little less than its share.
//
// Compaction: on a compacted topic the log cleaner would remove records
// superseded by a later value of their key whether forwarded or not. The
// hold binds it on the leader (engine.RetentionHold.Cleaner): nothing at
// or past the cursor is cleaned while the link keeps everything (within
// its budget, or under refuse-writes), so the far side gets every value.
// Past the budget under drop-oldest the cleaner compacts as usual, as
// retention then deletes; the values it removes are superseded ones (the
// latest value of each key is still forwarded) and are not counted as
// dropped. Followers compact as usual (their cleaner knows no cursor): a
// follower that becomes leader may hold, past the old leader's cursor,
// only the latest value of some keys, and forwards those.
//
// # Reading the local side
//
// A link reads the local topics as a client of this node's server,
// with franz-go's kgo consumer, partitions assigned directly (no group),
// read_committed (aborted transactional records stay home). Chosen over
// an in-process read because it reuses the whole Fetch path as it is
// (high watermark, transactions, damaged ranges, decompression budgets)
// and gives decoded records for the producer with no second batch
// decoder; the cost is a local socket and a copy. The client dials
// through the server's internal listener (Options.LocalDial,
// kafka.InternalListener): an in-process Unix socket pair per
// connection, with no network address, so the node needs no PLAINTEXT
// listener. The link reads as User:wren-uplink, authenticated from the
// start and allowed to describe and read topics only (and to write the
// topics a link pulls into: "Pulling from the far side"), whatever the
// ACLs say (they are never asked about it), outside the connection limits,
// request budgets and quotas. The dialer connects every broker address
// the local Metadata names to this node, so the link asks only about
// the partitions this node leads (ListOffsets names them alone).
// Only partitions this node leads, read from the local Metadata every
// refresh, are forwarded, so on a cluster each partition is forwarded by
// its current leader.
//
// # Writing the far side
//
// One kgo client per link produces with idempotence (acks=all, kgo's
// in-flight limit, order kept within a partition) and a manual
// partitioner: local partition p goes to far partition p of
// remote.topic.prefix+topic. A far topic missing is created with the
// local partition count (replication factor: the far cluster's default);
// one with fewer partitions leaves the local partitions without a
// counterpart refused, with the reason in Status. Key, value, headers and
// timestamp are kept (a far topic with LogAppendTime stamps its own), and
// one header is added, HeaderSource: "CLUSTER/TOPIC/PARTITION/OFFSET" of
// the local record.
//
// # Reaching the far side
//
// The far side's client is configured as any Kafka client is, under the
// same key names (config.Uplink): TLS with a trust store and, for mutual
// TLS, a client certificate, both read by the code that reads the
// listeners' PEM files, so a bad file is a config error at its key and
// line; host names checked unless ssl.endpoint.identification.algorithm
// is "" (the chain still is); SASL PLAIN or SCRAM with franz-go's
// mechanisms. The password never sits in the config file, as the
// bootstrap admin's does not: it comes from sasl.password.file or the
// environment. Files and password are read again for each session, so a
// renewed certificate or password is taken up by the next one; a
// password the far side refuses ends the session like any error (the
// link's last error, then the backoff).
//
// # The bandwidth cap
//
// max.bytes.per.second is a token bucket counted in the bytes of a
// record's key, value and headers (RecordBytes: what the link hands on,
// before compression and batch framing, so the wire carries somewhat
// less with compression and a little more without). A record takes its
// bytes before it is handed to the producer: the cap paces the poll loop
// itself, the producer never holds more than a linger's worth, and the
// backlog drains oldest first (per partition, in offset order) at the
// cap. The bucket holds a tenth of a second of bytes, so an idle link
// gains no burst worth counting over a minute; a record larger than it
// is sent on credit and the next ones wait for the debt. Fetched records
// wait in a queue while the bucket paces them, and the leadership
// refresh runs between two of them when due, so a slow cap does not
// delay it. BenchmarkUplinkCap (package broker) measures the cap's
// accuracy over a minute.
//
// # Exactly once, in order, without transactions
//
// The resume point is recovered from the far side, never stored here.
// When a session starts, and whenever a partition starts being forwarded
// (a new topic, leadership gained), the link flushes what it sent, lists
// the far partition's start and end offsets and reads its last record:
// the newest HeaderSource of that record names the last local offset the
// far side holds, and forwarding resumes after it. A far partition that
// never held a record starts at start.position: earliest, latest (the
// local end when the partition is first forwarded), or a time (the first
// local record stamped at or after it, by ListOffsets with that
// timestamp, also fixed then: timestamps are not in offset order, so
// records after that one are sent whatever their stamps say). What
// cannot be read safely is refused, not guessed, and shown in Status: a
// last record not forwarded by this link from this cluster and partition
// (another writer shares the far partition), a far partition whose
// retention deleted every record (its end is past 0 but it is empty), a
// last record that cannot be read in time. So the far side never holds a
// record twice nor out of order, and this works against any far side
// (transactions are neither needed nor used), after a crash of either
// side: the far side's acknowledged records are its own truth. Against
// Apache Kafka, both ways at once, TestUplinkKafkaFarSide (package broker,
// run by scripts/interop-uplink.sh) holds it through the link cut,
// requests and answers cut in the middle, answers swallowed, the edge
// SIGKILLed in a catch-up and Kafka restarted.
//
// Any error the producer gives up with ends the session: every client is
// closed, and the next session (after a backoff of 1 s doubling to 30 s)
// recovers every cursor again. Within a session a record below a
// partition's expected next offset is never sent (a fetch buffered before
// a partition was removed and added again).
//
// # Fencing: what holds and what does not
//
// Without transactions, the far side cannot fence an old producer, so the
// rule is stop before start:
//
//   - Within one process, a session ends only after
//     AbortBufferedRecords returned, which waits until every produce
//     request in flight has its answer (bounded by 30 s); the next
//     session's tail read comes after. A partition whose leadership left
//     this node is removed from the local consumer before anything else,
//     and a partition the session produced to and adds again is read
//     from the far tail only after a Flush of everything it sent.
//   - A crashed process sends nothing more once its sockets are gone; a
//     request it wrote before dying that the far side has not yet
//     appended is the one gap: a new leader (or the restarted process)
//     reading the tail before that append lands would forward that record
//     again. The same holds when the 30 s bound above expires. It is
//     narrowed, not closed, by tail.settle.ms (5 s by default): the first
//     time a session reads a far partition's tail (at its start, and when
//     the partition comes back after leadership left), the far end offset
//     must hold still that long before the last record is trusted (up to
//     three waits; a partition still growing is refused until a later
//     refresh). Each partition waits on its own (Status shows it
//     Settling): the session forwards its other partitions meanwhile. A request delayed longer than that (a far side stalled,
//     a network retransmitting for longer) still lands twice. Measured
//     (TestUplinkSIGKILLDuringCatchUp, three SIGKILLs in a catch-up, each
//     Produce request held 1 s on its way): without the wait every one of
//     five runs put records twice (914 to 16,454), with 1.5 s none of
//     fifteen did. On loopback with no delay none was seen either way
//     (sixty-five runs): the far side appends what the dead process wrote
//     before the restarted one starts. The price is that wait
//     before forwarding starts. Closing the gap needs the far side's
//     help: transactions carrying the cursor (Kafka's), or a fencing
//     epoch, both later work.
//   - Across nodes: the local client fetches by its own metadata, so
//     after a NOT_LEADER answer it would follow the partition to its new
//     leader. Records of a partition whose leader the local client knows
//     to be another node are dropped and the partition stops at once,
//     without waiting for the next refresh. What remains is the same gap
//     as above: the old leader's records in flight, or served by it
//     before it learnt that it lost leadership, landing after the new
//     leader read the tail. A leadership move on a quiet partition is
//     clean (TestUplinkForwardsFromLeaders); one under load may forward
//     a few records twice until the far side's help closes the gap.
//
// # No loops
//
// A record carrying a HeaderSource that names the far cluster (it came
// down from there) or this cluster (it went up and came back) is never
// sent. Records forwarded over several hops keep every hop's header.
//
// # Visibility
//
// Status gives per link and partition the next local offset, the backlog
// (local high watermark less it) in records, bytes and seconds, the
// records sent and the send rate, and why a partition is refused; per
// link whether it is up, when the far side last answered, and the last
// session error and when.
//
// The backlog's bytes and age come from the local log, not from the kgo
// client (which sees only what it fetched): the broker fills
// Options.Backlog, which takes the segments' sizes and the offset index's
// positions of the cursor and of the high watermark (no record read) and
// the timestamp in the 61-byte header of the batch holding the cursor
// (its first record's, or its append time). That is the cheapest honest
// source: two index lookups and one small read per partition per look,
// measured now, so the backlog grows while the far side is away even
// though nothing is fetched. The bytes are the log's, as stored
// (compressed if the producer compressed); the age is that of the batch
// holding the cursor, so a cursor inside a batch reads a little old. A
// partition's backlog is counted only on the node that leads it
// (LocalBacklog.Leader). Before a session first reached the far side the
// cursors are unknown, and the partitions are not listed yet.
//
// The send rate counts the records (key, value and headers) the far side
// acknowledged in one-second buckets over the last 10 s (rate.go). Up is
// a session holding both clients whose far side answered within three
// refreshes: the session pings it every refresh (an idle link learns
// that it went away), and every acknowledgement counts. A failed ping
// does not end the session: the producer retries on its own, and ending
// it would read every far tail again for nothing.
//
// # Pause
//
// SetPaused stops a link: its session ends as any stop does (every
// produce request in flight answered, the clients closed), no new one
// starts until it is resumed, and the next one reads the far tails again.
// The broker pauses the links that the cluster-wide dynamic broker config
// uplink.NAME.paused (config.UplinkPausedKey) names, from every metadata
// image, so a pause reaches every node and outlives restarts. A paused
// link is neither up nor in error.
//
// # Pulling from the far side
//
// pull.topics (config.Uplink.PullTopics) is the other direction, central
// to edge, for commands and configuration: far topics (names and regular
// expressions, far topics created later picked up) written into local
// topics named pull.local.topic.prefix + the far name (the prefix is ""
// by default: a Kafka user mirroring a topic expects its name, or a
// prefix naming the source as MirrorMaker 2's; stripping
// remote.topic.prefix instead would tie the two directions' names
// together and make a far topic named without it unpullable). Far
// partition p goes to local partition p. pull.go is session.go with the
// sides swapped, and runs in the same session with its own clients, so
// an error of either side ends both, and pause covers both.
//
// Writing the local side: an idempotent kgo producer (acks=all, the
// local cluster's ISR rules as any producer's) through the internal
// listener, whose sessions may write only the topics a running link
// pulls into (kafka.Server.SetInternalWritable: Produce and
// InitProducerId, nothing else). Like the push side, each local
// partition is pulled by the node that leads it, read from the local
// Metadata every refresh, and every broker address dials this node, so a
// write to a partition this node no longer leads is refused NOT_LEADER
// and never lands elsewhere. A partition that leaves this node with
// records in flight ends the session (its requests answered before the
// next one): kgo would retry them for as long as it ran, and one could
// land after leadership came back and the tail was read again. No
// RecordDeliveryTimeout: kgo counts it from a record's timestamp, which
// is the far record's.
//
// A local topic missing is created with the far topic's partition count
// and the cluster's default replication factor by Options.CreateTopic,
// in process through the controller (no ACL is asked; a CreateTopics of
// the link's principal would be judged by the ACLs at the controller):
// only the acting controller node can, so in a cluster the link on that
// node creates it and the others find it at a later refresh. A local
// topic with fewer partitions than the far one refuses the far
// partitions it lacks (logged, in Status): add partitions locally.
//
// Exactly once, in order: the resume point is read from the local log,
// never stored. When a local partition starts being pulled, its end
// offset must first hold still for tail.settle.ms (a produce request of
// an ended session or a former leader still landing), then its last
// record is read: the newest HeaderSource names the far cluster, topic,
// partition and offset it came from, and pulling resumes after that
// offset. A local partition that never held a record starts at
// start.position on the far side (earliest, latest, or the first far
// record stamped at or after the time). Refused rather than guessed: a
// last record not pulled by this link from that far partition (another
// writer shares the local partition), a local partition retention
// emptied, a cursor past the far end (the far partition lost records).
// A cursor below the far start moves to it with a warning (far retention
// deleted records never pulled). Against a local cluster the gap of
// "Fencing" is the same and narrowed the same way; the local log's
// acknowledged records (acks=all) are the truth a restarted node, or a
// new leader, reads. Tested through the fault proxy (TestUplinkPullFaults:
// the link cut, Fetch requests and answers cut in the middle, answers
// swallowed), SIGKILLs of one node (TestUplinkPullSIGKILL) and of the
// leader of the pulled partitions in a three-node cluster
// (TestUplinkPullClusterSIGKILL).
//
// No loops: a record whose provenance names this cluster is skipped; a
// local topic some link pulls into is never forwarded by any link, and
// a far topic this link forwards to is never pulled by it. The config
// refuses what the names show (config.Uplink.PullLoop, at
// uplink.NAME.pull.topics); at run time the pull side refuses such a far
// topic (Status, an ERROR line) and the push side skips such a local
// topic (an ERROR line), since two regular expressions' overlap is not
// decided from the config alone (Options.Links gives every running
// link's config).
//
// Status lists pulled partitions with Direction DirectionPull, keyed by
// the local topic: Next is the next far offset, Backlog the far high
// watermark last fetched less it; the backlog's bytes and age are not
// measured (the local log does not hold it yet). The retention hold
// knows pushed partitions only. max.bytes.per.second caps each
// direction on its own.
//
// # Run-time links
//
// A link is a config.Uplink whether a file's [uplink.NAME] table or the
// cluster-wide dynamic configs uplink.NAME.KEY (`wren uplink add`,
// config.RuntimeUplinks) define it: the broker starts a Link for each,
// and for a run-time one stops it (Close) when its keys go, or when they
// change before starting its successor, so two Links of one name never
// run at once on a node. The resume point is the far tail as ever, so a
// link removed and added again resumes where it stopped.
package uplink
