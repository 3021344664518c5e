// Package wire is the Kafka wire beneath everything that speaks it: the
// client listener (package kafka), replication (a leader's answers to its
// followers and a follower's requests) and the peer transport on the
// CONTROLLER listener (package cluster/quorum). It holds what those share
// and nothing of their behaviour, as franz-go keeps kmsg and kbin apart
// from kgo and kfake:
//
//   - Framing (frame.go): FrameReader reads size-prefixed frames, requests
//     and responses alike, with a cap checked before anything of the body
//     is read, the deadlines and request-budget hooks the client listener
//     needs, and memory that follows the bytes that arrive (or a reused
//     buffer) where no budget admitted the frame. WriteFrame writes one.
//   - Request headers (header.go): ParseRequestHeader (v1 and v2, with
//     the tagged fields checked and skipped) and AppendRequestHeader, the
//     one parser and writer for client requests, internal peer frames and
//     replica requests.
//   - Spliced responses (chunk.go, fetch.go): a response body as runs of
//     bytes and file ranges (Chunk, Body), written with writev and
//     sendfile(2) (Write), so record data goes from the page cache to the
//     socket without a copy through user memory, a fresh buffer or the
//     garbage collector. EncodeFetchResponse is the one message wren
//     encodes by hand, because kmsg needs the record bytes in memory; a
//     test compares it with kmsg for every version served. Every other
//     message is kmsg's.
//   - File ranges (file.go, sendfile.go): FileSlice, the byte range of a
//     segment file that the engine returns from a read, and SendFile,
//     which moves one to a socket (sendfile(2), or a pooled copy for
//     in-memory files, TLS and test pipes). Under TLS, WriteCopy copies
//     a response through a pooled buffer and BatchConn (batchconn.go),
//     the connection under crypto/tls, gathers the records it makes, one
//     write each, into few large writes.
//   - Fixed-width bodies (codec.go): Encoder and Decoder, the big-endian
//     integers, booleans and length-prefixed strings of wren's own
//     internal bodies that kmsg has no schema for (the peer handshake,
//     the metadata quorum's messages), with every read of outside bytes
//     checked against what is left.
//
// The package is a leaf: it imports internal/vfs, golang.org/x/sys/unix
// and the standard library, never the engine or anything above it, so
// the metadata quorum's transport moves bytes without the storage engine,
// and the engine itself can use FileSlice. Every decoder of outside bytes
// here has a fuzz target (FuzzReadFrame, FuzzRequestHeader, FuzzDecoder). See
// docs/ARCHITECTURE.md for the fetch path and the package rules.
package wire
