// Package cluster holds the cluster's metadata: the metadata log (on wal),
// the metadata image built from it, and the controller that changes it.
//
// Every change (a topic created or removed, a partition's assignment,
// leader or ISR, a dynamic config) is a Record. The controller validates a
// change against the current Image, appends its records to the metadata
// log as one durable entry, applies them to a new Image and publishes it.
// Brokers act only on published images. Images are immutable, so any
// goroutine may read the one it holds.
//
// Invariant: the published Image is exactly the replay of the metadata log
// up to Image.Offset; replaying the log at start rebuilds it.
//
// Today the controller is the single voter of a one-node cluster: a change
// commits when it is durable here. The quorum of docs/ARCHITECTURE.md (Bully
// election with epochs, the log replicated to a majority) extends this path.
package cluster
