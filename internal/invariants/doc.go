// Package invariants says whether this build checks the invariants of
// wren's state machines in their code path (Pebble's invariants build
// tag). The simulators and fuzzers build with -tags invariants; a
// release build leaves the tag off, and every check, written as
//
//	if invariants.Enabled {
//		c.checkInvariants()
//	}
//
// compiles away with its condition, a constant false.
//
// A check belongs in a core when it reads only that core's own state: the
// replica core's high watermark against its offsets, the election's hard
// state against what it last handed out, the metadata log's indexes, a
// group's members against its indexes. It panics with the numbers in the
// message, as any broken invariant does (a programmer error, never an
// operating one). What only several nodes together can show (no acked
// record lost, one controller per epoch across the cluster, replicas
// identical below the high watermark) stays in the simulators, which see
// every node.
//
// Run the simulators and the cores' tests with the checks on:
//
//	go test -tags invariants ./internal/sim/ ./replication/ ./election/ ./cluster/metalog/ ./groups/
package invariants
