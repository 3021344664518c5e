package engine

// benchManagerConfig is the data directory the partition benchmarks use:
// with an open-file budget of 64, so appends run through the handle cache.
func benchManagerConfig(opts Options) ManagerConfig {
	return ManagerConfig{ClusterID: "bench", NodeID: 1, Defaults: opts, OpenFilesMax: 64}
}
