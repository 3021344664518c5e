package broker

import (
	"fmt"

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

// topicOptions resolves a topic's options from its overrides, falling back
// to the broker defaults if the overrides do not resolve (they were
// validated when set, so that is a bug worth a log line, not a crash).
func topicOptions(cfg *config.Config, overrides map[string]string) (engine.Options, error) {
	tc, err := cfg.Topic(overrides, nil)
	if err != nil {
		return logOptions(cfg, cfg.TopicDefaults), fmt.Errorf("broker: topic configs %v: %w", overrides, err)
	}
	return logOptions(cfg, tc), nil
}
