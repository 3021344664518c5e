//go:build !race

package replication

// simDefaultSeeds is TestReplicationSim's seed count without
// WREN_REPL_SIM_SEEDS or WREN_SIM_SEEDS: about 20 ms a seed.
const simDefaultSeeds = 300
