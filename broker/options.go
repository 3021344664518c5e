package broker

import (
	"fmt"
	"log/slog"
	"strconv"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/engine"
)

// logOptions turns a topic's effective configs into the engine's options.
func logOptions(cfg *config.Config, tc config.TopicConfig) engine.Options {
	o := engine.DefaultOptions()
	o.SegmentBytes = int64(tc.SegmentBytes)
	o.SegmentMs = tc.SegmentMs
	o.SegmentIndexBytes = int64(tc.SegmentIndexBytes)
	o.IndexIntervalBytes = int64(tc.IndexIntervalBytes)
	o.RetentionMs = tc.RetentionMs
	o.RetentionBytes = tc.RetentionBytes
	o.MaxMessageBytes = int64(tc.MaxMessageBytes)
	o.MaxDecompressedBytes = int64(cfg.MaxDecompressedBatchBytes)
	o.FlushIntervalMessages = tc.FlushMessages
	o.FlushIntervalMs = tc.FlushMs
	o.Preallocate = tc.Preallocate
	if tc.MessageTimestampType == "LogAppendTime" {
		o.MessageTimestampType = engine.LogAppendTime
	}
	if cfg.LogFlushPolicy == config.FlushPolicyInterval {
		o.FlushPolicy = engine.FlushInterval
	}
	if policy, err := engine.ParseCleanupPolicy(tc.CleanupPolicy); err == nil {
		o.CleanupPolicy = policy
	}
	o.DeleteRetentionMs = tc.DeleteRetentionMs
	o.MinCleanableDirtyRatio = tc.MinCleanableDirtyRatio
	o.MinCompactionLagMs = tc.MinCompactionLagMs
	o.MaxCompactionLagMs = tc.MaxCompactionLagMs
	return o
}

// topicOptions resolves a topic's options from its overrides over the
// dynamic broker layers (Kafka's precedence: topic override, this
// broker's dynamic value, the cluster-wide dynamic default, the file, the
// built-in default), so that a broker setting altered at run time, such as
// message.max.bytes, applies to every topic that does not override it. It
// falls back to the broker defaults if the configs do not resolve (they
// were validated when set, so that is a bug worth a log line, not a
// crash).
func topicOptions(cfg *config.Config, dyn *config.Dynamic, overrides map[string]string) (engine.Options, error) {
	tc, err := cfg.Topic(overrides, dyn)
	if err != nil {
		return logOptions(cfg, cfg.TopicDefaults), fmt.Errorf("broker: topic configs %v: %w", overrides, err)
	}
	return logOptions(cfg, tc), nil
}

// dynamicConfigs is the image's run-time broker layers: this node's own
// (resource name = its node id) and the cluster-wide default ("").
func dynamicConfigs(cfg *config.Config, im *cluster.Image) *config.Dynamic {
	return &config.Dynamic{
		Broker:         im.BrokerConfigs(strconv.Itoa(int(cfg.NodeID))),
		ClusterDefault: im.BrokerConfigs(""),
	}
}

// logConfigWarnings names every setting the file set that wren does not
// apply yet: it was accepted so that Kafka configs paste cleanly, and the
// operator must not believe it is in effect.
func logConfigWarnings(cfg *config.Config, logger *slog.Logger) {
	for _, w := range cfg.Warnings() {
		if w.Reason == "" {
			logger.Warn("config: "+w.Message(), "key", w.Key, "file", w.File, "line", w.Pos.Line)
			continue
		}
		logger.Warn("config setting not in effect in wren yet; it is ignored",
			"key", w.Key, "file", w.File, "line", w.Pos.Line, "reason", w.Reason)
	}
}
