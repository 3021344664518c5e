package broker

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/kafka"
	"github.com/wren-broker/wren/ops"
	"github.com/wren-broker/wren/replication"
)

// withLimits fills the client listener's memory and connection bounds from
// the config: socket.request.max.bytes, queued.max.request.bytes,
// queued.max.requests, the max.connections family and
// connections.max.idle.ms.
func withLimits(sc kafka.ServerConfig, cfg *config.Config) (kafka.ServerConfig, error) {
	sc.MaxRequestBytes = cfg.SocketRequestMaxBytes
	sc.QueuedMaxRequestBytes = cfg.QueuedMaxRequestBytes
	if sc.QueuedMaxRequestBytes <= 0 {
		sc.QueuedMaxRequestBytes = -1 // Kafka's unbounded
	}
	sc.QueuedMaxRequests = int(cfg.QueuedMaxRequests)
	limits, err := connectionLimits(cfg)
	if err != nil {
		return sc, err
	}
	sc.MaxConnections, sc.MaxConnectionsPerIP, sc.MaxConnectionsPerIPOverrides = limits.Max, limits.PerIP, limits.PerIPOverrides
	sc.IdleTimeout = time.Duration(cfg.ConnectionsMaxIdleMs) * time.Millisecond
	sc.FirstRequestTimeout = min(kafka.DefaultFirstRequestTimeout, sc.IdleTimeout)
	sc.QuotaWindowNum = int(cfg.QuotaWindowNum)
	sc.QuotaWindowSize = time.Duration(cfg.QuotaWindowSizeSeconds) * time.Second
	return sc, nil
}

func connectionLimits(cfg *config.Config) (kafka.ConnectionLimits, error) {
	overrides, err := config.ParsePerIPOverrides(cfg.MaxConnectionsPerIPOverrides)
	if err != nil {
		return kafka.ConnectionLimits{}, fmt.Errorf("broker: max.connections.per.ip.overrides: %w", err)
	}
	return kafka.ConnectionLimits{Max: int(cfg.MaxConnections), PerIP: int(cfg.MaxConnectionsPerIP), PerIPOverrides: overrides}, nil
}

// applyConnectionLimits puts the connection bounds of the image's dynamic
// broker configs in force (max.connections and its per-address forms are
// dynamic in Kafka). It runs on the controller's subscription, so it only
// reads and sets.
func applyConnectionLimits(cfg *config.Config, server *kafka.Server, im *cluster.Image, logger *slog.Logger) {
	eff, err := cfg.WithDynamic(dynamicConfigs(cfg, im))
	if err == nil {
		var limits kafka.ConnectionLimits
		if limits, err = connectionLimits(eff); err == nil {
			err = server.SetConnectionLimits(limits)
		}
	}
	if err != nil {
		// Validated when set; keep the bounds in force.
		logger.Error("dynamic connection limits do not apply; keeping the current ones", "err", err)
	}
}

// memoryLimitFraction of the cgroup's limit becomes the Go runtime's soft
// limit: the rest is for what the runtime does not count (the binary's
// text, the page cache of the segments charged to the cgroup, kernel
// socket buffers).
const memoryLimitFraction = 0.75

// applyMemoryLimit sets the Go runtime's soft memory limit for `wren serve`
// from memory.soft.limit.bytes (0: from the memory cgroup). GOMEMLIMIT, an
// operator's explicit choice, wins. Only the serve command calls it: the
// limit is process-wide, and brokers started by tests share a process.
//
// Why a soft limit: the budgets bound what the broker holds, but the
// garbage collector lets the heap reach twice what is live before it
// runs, and without a limit it returns freed pages to the system only
// slowly, so resident memory stays near its peak after a burst. Near the
// limit the collector runs sooner and the scavenger gives memory back.
func applyMemoryLimit(cfg *config.Config, logger *slog.Logger) {
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		logger.Info("Go memory limit from GOMEMLIMIT", "GOMEMLIMIT", v)
		return
	}
	limit, source := cfg.MemorySoftLimitBytes, "memory.soft.limit.bytes"
	if limit == 0 {
		cg, ok := cgroupMemoryLimit()
		if !ok {
			return
		}
		limit, source = int64(float64(cg)*memoryLimitFraction), fmt.Sprintf("3/4 of the memory cgroup's limit (%d bytes)", cg)
	}
	if limit <= 0 {
		return
	}
	debug.SetMemoryLimit(limit)
	logger.Info("Go soft memory limit set", "bytes", limit, "from", source)
}

// cgroupMemoryLimit is the memory limit of this process's cgroup, v2
// (memory.max) or v1 (memory.limit_in_bytes), if it has one below what
// the host has.
func cgroupMemoryLimit() (int64, bool) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var file string
		switch {
		case parts[0] == "0" && parts[1] == "":
			file = filepath.Join("/sys/fs/cgroup", parts[2], "memory.max")
		case hasController(parts[1], "memory"):
			file = filepath.Join("/sys/fs/cgroup/memory", parts[2], "memory.limit_in_bytes")
		default:
			continue
		}
		if n, ok := readLimit(file); ok {
			return n, true
		}
	}
	return 0, false
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// readLimit reads a cgroup limit file; "max" and v1's page-rounded
// 2^63-1 mean no limit.
func readLimit(file string) (int64, bool) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(data))
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0, false
	}
	return n, true
}

// The metrics count client quota throttles (the Kafka server finds the
// interface on its Observer).
var _ kafka.QuotaObserver = (*ops.Metrics)(nil)

// The metrics of where a produce's time goes: the Kafka server's writer
// and the replicas report to them.
var (
	_ kafka.ProduceObserver = (*ops.Metrics)(nil)
	_ replication.Observer  = (*ops.Metrics)(nil)
)
