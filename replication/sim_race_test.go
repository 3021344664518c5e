//go:build race

package replication

// simDefaultSeeds is TestReplicationSim's seed count without
// WREN_REPL_SIM_SEEDS or WREN_SIM_SEEDS: the race detector slows the
// simulator about tenfold, and the suite's race run must stay short.
const simDefaultSeeds = 40
