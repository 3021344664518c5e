// Package coordinator is the transaction coordinator's driver: it runs the
// pure cores of package txn on the replicas of __transaction_state, as
// groups/coordinator runs the group coordinators on __consumer_offsets
// (docs/ARCHITECTURE.md).
//
// One goroutine (Run) owns the cores. A core is loaded when this node
// leads its __transaction_state partition and its high watermark reached
// the leader epoch's start offset (everything an earlier leader
// acknowledged), by replaying the partition below the high watermark; it
// is unloaded, and its requests answered NOT_COORDINATOR, when the
// leadership moves. A core's records are appended with acks=all and its
// answers given, in order, only once the append is durable on the in-sync
// replicas; a failed append unloads the core, and the next load answers
// from the log.
//
// The markers of a commit or abort are written only after its
// PrepareCommit or PrepareAbort record is durable: a MarkerWriter (the
// broker's, WriteTxnMarkers to each partition's leader) is called until
// every partition has its marker, with a backoff between rounds, and then
// the core appends the CompleteCommit or CompleteAbort record. Markers stop
// when the core is unloaded; the next coordinator, here or elsewhere,
// finds the Prepare* record in the log and writes them again, so a
// transaction decided before a failover completes wholly.
package coordinator
