package broker

import (
	"log/slog"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/replication"
)

// applyReplicationThrottle puts the replication throttle's rates in force
// from the image's dynamic broker configs over the file
// (leader.replication.throttled.rate and follower.replication.throttled.rate,
// per broker or cluster-wide, as Kafka's BrokerConfigHandler). The topics'
// throttled replicas lists reach the partitions with the image itself
// (replication.Manager.ApplyImage). It runs on the controller's
// subscription, so it only reads and sets.
func applyReplicationThrottle(cfg *config.Config, replicas *replication.Manager, im *cluster.Image, logger *slog.Logger) {
	eff, err := cfg.WithDynamic(dynamicConfigs(cfg, im))
	if err != nil {
		// Validated when set; keep the rates in force.
		logger.Error("dynamic replication throttle does not apply; keeping the current rates", "err", err)
		return
	}
	leader, follower := replicas.ReplicationThrottleStats()
	if leader.Rate != eff.LeaderReplicationThrottledRate || follower.Rate != eff.FollowerReplicationThrottledRate {
		logger.Info("replication throttle", "leader_bytes_per_second", eff.LeaderReplicationThrottledRate,
			"follower_bytes_per_second", eff.FollowerReplicationThrottledRate)
	}
	replicas.SetReplicationThrottle(eff.LeaderReplicationThrottledRate, eff.FollowerReplicationThrottledRate)
}
