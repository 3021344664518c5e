package broker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/groups"
	"github.com/wren-broker/wren/groups/coordinator"
)

// groupTickInterval is how often the group coordinators' timers run.
// Session and rebalance timeouts are seconds; a tenth of a second is
// precise enough and costs nothing when no group waits.
const groupTickInterval = 100 * time.Millisecond

// offsetsTopicTimeout bounds the creation of __consumer_offsets at start.
const offsetsTopicTimeout = 30 * time.Second

// ensureOffsetsTopic creates __consumer_offsets if it is missing and
// returns its partition count: the existing topic's, never the config's,
// since a group's coordinator is hash(group) % count and moving it would
// lose every group.
func ensureOffsetsTopic(ctx context.Context, cfg *config.Config, c *cluster.Controller) (int32, error) {
	if t := c.Image().Topic(coordinator.OffsetsTopic); t != nil {
		return int32(len(t.Partitions)), nil
	}
	rf := cfg.OffsetsTopicReplicationFactor
	if n := int16(len(cfg.Voters)); n > 0 && rf > n {
		rf = n
	}
	compact := "compact"
	ctx, cancel := context.WithTimeout(ctx, offsetsTopicTimeout)
	defer cancel()
	res, err := c.CreateTopics(ctx, []cluster.CreateTopic{{
		Name:              coordinator.OffsetsTopic,
		NumPartitions:     cfg.OffsetsTopicNumPartitions,
		ReplicationFactor: rf,
		Configs:           map[string]*string{"cleanup.policy": &compact},
	}}, false)
	if err != nil {
		return 0, fmt.Errorf("broker: create %s: %w", coordinator.OffsetsTopic, err)
	}
	if err := res[0].Err; err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return 0, fmt.Errorf("broker: create %s: %w", coordinator.OffsetsTopic, err)
	}
	t := c.Image().Topic(coordinator.OffsetsTopic)
	if t == nil {
		return 0, fmt.Errorf("broker: %s created but not in the metadata image", coordinator.OffsetsTopic)
	}
	return int32(len(t.Partitions)), nil
}

// groupsConfig maps the [groups] settings onto the coordinator's.
func groupsConfig(cfg *config.Config) groups.Config {
	g := groups.DefaultConfig()
	g.InitialRebalanceDelayMs = int64(cfg.GroupInitialRebalanceDelayMs)
	g.MinSessionTimeoutMs = cfg.GroupMinSessionTimeoutMs
	g.MaxSessionTimeoutMs = cfg.GroupMaxSessionTimeoutMs
	if cfg.GroupMaxSize != math.MaxInt32 {
		// Kafka's default, MaxInt32, means unbounded; members come from
		// client input, so that default keeps the coordinator's finite
		// one. Any other value is the operator's choice.
		g.MaxSize = int(cfg.GroupMaxSize)
	}
	g.OffsetsRetentionMs = int64(cfg.OffsetsRetentionMinutes) * 60 * 1000
	g.OffsetMetadataMaxBytes = int(cfg.OffsetMetadataMaxBytes)
	g.ConsumerSessionTimeoutMs = cfg.GroupConsumerSessionTimeoutMs
	g.ConsumerHeartbeatIntervalMs = cfg.GroupConsumerHeartbeatIntervalMs
	if cfg.GroupConsumerMaxSize != math.MaxInt32 {
		g.ConsumerMaxSize = int(cfg.GroupConsumerMaxSize)
	}
	g.ConsumerAssignors = slices.Clone(cfg.GroupConsumerAssignors)
	return g
}

// topicsFor gives the group coordinators the topics of the controller's
// metadata image, rebuilt only when the image changed.
func topicsFor(c *cluster.Controller) func(known uint64) (uint64, []groups.TopicMeta) {
	return func(known uint64) (uint64, []groups.TopicMeta) {
		im := c.Image()
		if im.Offset == known {
			return known, nil
		}
		names := im.TopicNames()
		out := make([]groups.TopicMeta, 0, len(names))
		for _, name := range names {
			t := im.Topic(name)
			out = append(out, groups.TopicMeta{Name: name, ID: t.ID, Partitions: int32(len(t.Partitions))})
		}
		return im.Offset, out
	}
}
