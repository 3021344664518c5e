// Package peer is the connection layer of the CONTROLLER listener: the
// listener and its accept loop, the handshake that says which node, which
// cluster and which peer set is on either end, the check that no other
// process holds this node's id, dialing with backoff, and Kafka's framing
// on each connection. It knows neither the metadata log's messages nor
// replication: it carries them for two clients (docs/ARCHITECTURE.md,
// "The cluster protocol").
//
//   - The message channel (HandleMessages, Send): one-way frames with api
//     keys its client picks, between every pair of voters. The metadata
//     quorum's transport (cluster/quorum.TCPTransport) is its client:
//     metalog messages (32001) and the cluster's app bodies (32002).
//   - Replica connections (HandleReplicas, DialReplica, ReplicaConn):
//     Kafka requests a follower sends its leader, each answered in
//     order. Replication is their client; it is told each accepted
//     connection's id with its requests, and when it closes
//     (ReplicaClosed), for state it keeps per connection (fetch
//     sessions).
//
// The broker creates the layer, registers both clients, then starts it.
//
// # Wire format
//
// Frames are Kafka's: an int32 size, then the request header v1 (api
// key, api version, correlation id, client id), then the body, read and
// written with package wire. The layer's own keys, far above Kafka's so
// that no Kafka tool sends one (a client listener refuses them as unknown
// keys and closes the connection):
//
//   - 32000 Handshake (v0), the first frame of every message channel
//     connection, both ways: cluster id, hash of the peer set (the voters
//     as id@host:port, sorted by id), sender and intended receiver, and
//     in the answer an error code (Kafka's INCONSISTENT_CLUSTER_ID 104,
//     INCONSISTENT_VOTER_SET 94) and message. A mismatch is refused on
//     both sides with a log line naming both nodes' cluster ids or peer
//     sets. A node that has not learnt the cluster id yet (a first start)
//     sends "" and accepts any. A handshake from ProbeNodeID (-1) is a
//     tool asking what the address is (Probe, probe.go): it is answered
//     with the node's id and closed, and logged at DEBUG only. A
//     handshake from the receiver's own id is an identity check
//     (identity.go): accepted when it is the receiver's own (a nonce in
//     the client id), else refused with DUPLICATE_BROKER_REGISTRATION
//     (101) and an ERROR on the receiver, and the process that sent it
//     stops: a node id belongs to one process.
//   - 32003 ReplicaHandshake (v0): the Handshake's body and checks,
//     opening a replica connection instead. Then Kafka requests, decoded
//     with kmsg as the client listener decodes its requests and handed to
//     the ReplicaHandler, which answers with a wire.Body (a Fetch's
//     records go out with sendfile; over mutual TLS they are copied and
//     a wire.BatchConn gathers their TLS records eight to a write);
//     ReplicaConn.RoundTrip sends a kmsg request and returns the
//     response body, read into the memory of the previous one when it
//     fits.
//
// The message channel's frames after the handshake carry the client's
// keys with the client id wren-quorum-N. These bytes are those the
// metadata quorum's transport wrote when it held this code, so nodes
// before and after the layer was split out interoperate.
//
// # Connections
//
// Each node dials every peer once for the message channel and sends on
// that connection only, reconnecting with exponential backoff (50 ms to
// 2 s, jittered); it receives on the connections it accepted, one per
// peer (a reconnect replaces the old one). Every connection carries
// TCP_USER_TIMEOUT (deadpeer.go). Frames are bounded (16 MiB) either way,
// the queue towards each peer (256 frames) drops on overflow, and the
// handshake's decoder has a fuzz target.
//
// # Mutual TLS
//
// With Config.TLS every connection is TLS both ways, and a peer is
// admitted only if its certificate chains to the trust store and names
// it: one URI SAN wren://node/ID for the node it claims (or the dialer
// meant to reach), and a DNS or IP SAN of that voter's host (tls.go).
// The material is read again at each connection, so a reloader swaps
// it without closing any. A plaintext probe is still answered; any
// other plaintext peer is refused, saying why. certs.go writes what
// `wren cluster certs` makes: a private CA and one certificate per
// voter.
//
// The layer counts the frames it writes and reads and their bytes, size
// prefix and header included: handshakes, the message channel's by api
// key, and replica connections' (Stats).
package peer
