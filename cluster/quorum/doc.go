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
// TCPTransport runs on the CONTROLLER listener, at the address each voter
// has in controller.quorum.voters. Frames are Kafka's: an int32 size, then
// the request header v1 (api key, api version, correlation id, client id),
// then the body, read and written with package wire (the framing and
// header the client listener uses; this package does not import the
// storage engine). Internal API keys, far above Kafka's own so that no
// Kafka tool sends one (a client listener refuses them as unknown keys and
// closes the connection):
//
//   - 32000 Handshake (v0), the first frame of every connection, both ways:
//     cluster id, hash of the peer set (the voters as id@host:port, sorted
//     by id), sender and intended receiver, and in the answer an error
//     code (Kafka's INCONSISTENT_CLUSTER_ID 104, INCONSISTENT_VOTER_SET 94)
//     and message. A mismatch is refused on both sides with a log line
//     naming both nodes' cluster ids or peer sets. A node that has not
//     learnt the cluster id yet (a first start) sends "" and accepts any.
//     A handshake from ProbeNodeID (-1) is a tool asking what the address
//     is (Probe, probe.go): it is answered with the node's id and closed,
//     and logged at DEBUG only.
//     A handshake from the receiver's own id is an identity check
//     (identity.go): accepted when it is the receiver's own (a nonce in
//     the client id), else refused with DUPLICATE_BROKER_REGISTRATION
//     (101) and an ERROR on the receiver, and the process that sent it
//     stops: a node id belongs to one process.
//   - 32001 Message (v0): one metalog message, one-way (no response, as a
//     Produce with acks=0). Layout in wire.go.
//   - 32002 App (v0): a body the transport does not read, one-way, for
//     the cluster package (broker heartbeats, requests forwarded to the
//     controller and their answers; cluster/forward.go).
//   - 32003 ReplicaHandshake (v0): the Handshake's body and checks, opening
//     a replica connection instead (DialReplica, ReplicaConn).
//
// The listener is one connection layer with two clients: the metadata
// quorum (Handshake, then Message and App frames) and replication (a
// ReplicaHandshake, then Kafka requests a follower sends its leader,
// Fetch with its replica id and OffsetForLeaderEpoch, each answered in
// order). Replica requests are decoded with kmsg, as the client listener
// decodes its requests, and handed to TCPConfig.OnReplicaRequest, which
// answers with a wire.Body (a Fetch's records go out with sendfile);
// ReplicaConn.RoundTrip sends a kmsg request and returns the response
// body, read into the memory of the previous one when it fits.
//
// Each node dials every peer once and sends on that connection only,
// reconnecting with exponential backoff (50 ms to 2 s, jittered); it
// receives on the connections it accepted, one per peer (a reconnect
// replaces the old one). Frames are bounded (16 MiB) either way, the
// queue towards each peer (256 messages) and the driver's inbox
// (InboxCapacity) drop on overflow, and every decoder has a fuzz target.
//
// TCPTransport counts the frames it writes and reads and their bytes,
// size prefix and header included, by kind (handshake, metalog, app,
// replica) and direction (Stats, stats.go): the cost of the control plane
// on an idle cluster is read from two samples of /metrics.
package quorum
