// Package quorum drives the replicated metadata log (cluster/metalog) with
// real I/O: a disk, a clock and a network. metalog is a pure state machine;
// this package is the one goroutine per node that feeds it and does what it
// asks. See docs/ARCHITECTURE.md, "The cluster protocol".
//
// # Storage
//
// A node's quorum state lives in one directory (on a broker,
// <first log dir>/__cluster_quorum):
//
//   - log/: the metadata log on wal, one wal record per entry, the wal
//     index being the entry's index; a record is the entry's epoch
//     (int32), type (uint8) and data.
//   - hardstate: the election's epoch and vote and the commit index, in
//     two checksummed 32-byte slots written in turn, in place, each
//     followed by fdatasync. A torn write damages only the slot being
//     written; the other holds the previous state, which is what a crash
//     before the write would have left.
//   - snapshot: the latest snapshot, replaced atomically (write, fsync,
//     rename, fsync of the directory).
//
// # The Ready order
//
// Driver does each Ready exactly in metalog's order: the snapshot (durable
// before the log drops what it covers), the truncation, the appended
// entries, fdatasync of the log, the hard state and its fdatasync; only
// then the messages; then the committed entries are applied (Config.Apply)
// and the soft state reported; then Advance. A storage error stops the
// driver (the node leaves the quorum, as a crashed one would): the state
// on disk is then a prefix of the steps, which the metadata log accepts
// on restart. A full disk (ENOSPC, EDQUOT) on the write of the log's
// entries or of a snapshot, which leaves the storage sound, is not such
// an error: the driver tries the step again every 100 ms until there is
// space, a stall like that of a slow disk, after which the node catches up.
//
// # Time
//
// The election counts ticks of the monotonic clock, and its lease is only
// as good as that count. The driver delivers every tick that elapsed
// before it handles anything else, so a node that stalled (SIGSTOP, a
// pause of the disk) sees the time that passed, and a controller whose
// lease lapsed meanwhile stops acting before it answers anyone.
//
// The same count dates what the controller knows of its followers
// (metalog's follower progress, in ticks): tick t fell due at the
// driver's start plus t ticks, so Driver.Status turns each follower's
// last fetch and last caught-up tick into monotonic times, good to within
// a tick, for DescribeQuorum's LastFetchTimestamp and
// LastCaughtUpTimestamp. The rule of "caught up" stays in metalog, which
// alone knows the log end at the moment a fetch is taken.
//
// # Transport
//
// Transport carries messages; it may lose, duplicate and reorder them, and
// never blocks the driver (a full queue drops). MemNetwork connects
// in-process nodes for tests.
//
// TCPTransport runs on the CONTROLLER listener as a client of package
// peer, which owns its connections (accept loop, handshake, node
// identity, dialing, framing, replica connections for replication, the
// other client). The transport uses peer's message channel with two api
// keys of its own, far above Kafka's so that no Kafka tool sends one:
//
//   - 32001 Message (v0): one metalog message, one-way (no response, as a
//     Produce with acks=0). Layout in wire.go. A message that does not
//     decode, or whose sender is not the connection's peer, closes the
//     connection.
//   - 32002 App (v0): a body the transport does not read, one-way, for
//     the cluster package (broker heartbeats, requests forwarded to the
//     controller and their answers; cluster/forward.go).
//
// Messages wait in peer's queue towards each peer (256 frames) and in
// the driver's inbox (InboxCapacity), both dropping on overflow; the
// message decoder has a fuzz target. Closing the transport closes the
// layer: the node leaves the cluster.
//
// TCPTransport reports the layer's counts of frames and bytes, size
// prefix and header included, by kind (handshake, metalog, app, replica)
// and direction (Stats, stats.go): the cost of the control plane on an
// idle cluster is read from two samples of /metrics.
package quorum
