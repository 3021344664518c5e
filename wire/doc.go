// Package splice assembles Kafka response bodies from runs of bytes and
// ranges of segment files, and writes them to a connection: byte runs with
// one writev, file ranges with sendfile(2) (engine.SendFile), so record
// data goes from the page cache to the socket without a copy through user
// memory, a fresh buffer or the garbage collector.
//
// Two writers use it: the client listener's Fetch answers (package kafka)
// and a leader's answers to its followers' fetches (package replication,
// on the CONTROLLER listener's replica connections, package
// cluster/quorum). EncodeFetchResponse is the one message wren encodes by
// hand, because kmsg needs the record bytes in memory; a test compares it
// with kmsg for every version served. See docs/ARCHITECTURE.md for the
// fetch path.
package wire
