// Package sim is a seeded, deterministic simulator for wren's pure state
// machines. Today it runs the election: N nodes (3 or 5) of the real
// election.Node over a simulated network, with a driver that follows the
// Ready contract (persist, then send) and a metadata log position per node
// that only the acting controller advances (replicated with its
// heartbeats), so the up-to-date rules matter.
//
// Faults: message loss, delay, duplication and reordering; symmetric and
// one-way partitions; pauses (SIGSTOP: the node's ticks stop, messages to
// it wait in its socket buffers, and on resume the driver catches up the
// ticks from the monotonic clock before anything else); crash-restart that
// loses whatever the node had not persisted (the crash falls between a
// Ready and its persist step), with the node down for a while. A Scenario
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
//   - the scenario's bound on controller epochs during the faults (F08: one
//     election; F09: at most two epochs; F10, F11: no churn);
//   - liveness: once the faults stop, one node acts and every node follows
//     it within LivenessBound ticks.
//
// Everything random comes from the seed, so a failure replays exactly:
// WREN_SEED=n go test ./internal/sim/ -run 'TestSim$' -v. The default run
// takes 300 seeds; WREN_SIM_SEEDS=10000 runs more.
package sim
