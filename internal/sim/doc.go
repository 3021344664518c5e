// Package sim is a seeded, deterministic simulator for wren's pure state
// machines. It runs N nodes (3 or 5) of the real metadata log
// (cluster/metalog, with its election inside) over a simulated network,
// with a driver that follows the Ready contract (persist, then send, then
// apply), while the acting controller proposes records at random ticks
// and every node compacts its log into snapshots now and then.
//
// Faults: message loss, delay, duplication and reordering; symmetric and
// one-way partitions; pauses (SIGSTOP: the node's ticks stop, messages to
// it wait in its socket buffers, and on resume the driver catches up the
// ticks from the monotonic clock before anything else); crash-restart that
// loses whatever the node had not made durable (the crash falls inside a
// Ready's persist steps: a prefix of them, the snapshot, the truncation,
// some of the entries, the hard state, reached the disk, and nothing was
// sent), with the node down for a while. A Scenario
// is data: rates of random faults plus scheduled events (isolate, deaf,
// partition, heal, pause, crash, bounce) against the acting controller or
// a given node.
//
// Checked after every step, each a failure naming the seed:
//
//   - at most one controller per epoch;
//   - at most one node Acting at any step. This holds because every node
//     ticks at the same rate here and a paused node catches up on resume;
//     with unequal rates it needs lease*rate ratio < election timeout, and
//     without the catch-up it does not hold at all (the epoch fence then
//     protects, see election's doc);
//   - no hard state written over a newer one: epochs never decrease on
//     disk, and votedFor never changes within an epoch;
//   - no node sends grants to two candidates in one epoch, across crashes;
//   - no node applies an entry that is not committed: the first to apply
//     an index must find the entry on a majority of disks, and it becomes
//     the one committed sequence's entry there;
//   - a committed entry is never lost or reordered: every node applies,
//     entry after entry (or restores from a snapshot whose state is that
//     of the sequence up to its index), a prefix of that one sequence, and
//     every committed entry stays on a majority of disks;
//   - commit indexes never decrease, in memory or on disk, and no node
//     truncates below the commit index on its disk;
//   - the scenario's bound on controller epochs during the faults (F08: one
//     election; F09: at most two epochs; F10, F11: no churn);
//   - liveness: once the faults stop (a minority may stay down, see
//     StayDown), one node acts and every running node follows it, and a
//     proposal commits and is applied on every running node, within
//     LivenessBound ticks.
//
// Everything random comes from the seed, so a failure replays exactly:
// WREN_SEED=n go test ./internal/sim/ -run 'TestSim$' -v. The default run
// takes 300 seeds; WREN_SIM_SEEDS=10000 runs more. With -tags invariants
// (as CI runs it) each node's metadata log and election also check their
// own state after every input (internal/invariants); a broken one panics,
// and the run reports it with its seed.
//
// The data plane (partition replication, the high watermark, the
// idempotent producer) has its own simulator beside the code it drives,
// in the replication package's tests (TestReplicationSim), since it
// needs that package's unexported replica core.
package sim
