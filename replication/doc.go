// Package replication holds this node's replicas of partitions: their
// leader state and high watermark, and the Manager that keeps them in step
// with the cluster metadata (Kafka's ReplicaManager).
//
// Invariant: LogStartOffset <= HighWatermark <= LogEndOffset for every
// partition, and the high watermark only moves forward while a replica
// leads. Leadership moves only forward in leader epoch: a change at an
// epoch older than the replica's (a late image) is stale and ignored.
//
// Today a partition has one replica. The follower fetch,
// ISR and leader-epoch truncation of docs/ARCHITECTURE.md will grow here as a pure state machine
// (inputs: fetches, acks, ticks; outputs: what to persist and send), with
// the Manager as its driver.
package replication
