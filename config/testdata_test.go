package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testdataDir holds the example configs, valid and invalid, that this
// package's tests and cli's config commands share (testdata/README.md).
const testdataDir = "../testdata/config"

// Every file in ../testdata/config/valid loads, and its dumps load back to the same
// config.
func TestTestdataValid(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testdataDir, "valid", "*.toml"))
	if len(files) == 0 {
		t.Fatal("no valid config files in " + testdataDir)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			c, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			checkRoundTrip(t, c)
		})
	}
}

// Every file in ../testdata/config/invalid fails with exactly the errors its
// "# want: " lines give, in order.
func TestTestdataInvalid(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testdataDir, "invalid", "*.toml"))
	if len(files) == 0 {
		t.Fatal("no invalid config files in " + testdataDir)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, line := range strings.Split(string(data), "\n") {
				if w, ok := strings.CutPrefix(line, "# want: "); ok {
					want = append(want, w)
				}
			}
			if len(want) == 0 {
				t.Fatal("no # want: lines")
			}
			_, err = Parse(filepath.Base(path), data)
			if err == nil {
				t.Fatal("loaded without error")
			}
			if got := err.Error(); got != strings.Join(want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
			}
		})
	}
}

func TestTestdataThreeNode(t *testing.T) {
	c, err := Load(filepath.Join(testdataDir, "valid", "three-node.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if c.NodeID != 1 || len(c.Voters) != 3 || c.Voters[2] != (Voter{ID: 3, Host: "edge-3.local", Port: 9093}) {
		t.Errorf("node %d voters %v", c.NodeID, c.Voters)
	}
	if len(c.AdvertisedListeners) != 1 || c.AdvertisedListeners[0].Addr() != "edge-1.local:9092" {
		t.Errorf("advertised %v", c.AdvertisedListeners)
	}
	if c.NumPartitions != 3 || c.OffsetsTopicNumPartitions != 12 || c.OffsetsTopicReplicationFactor != 3 {
		t.Errorf("partitions %d offsets %d/%d", c.NumPartitions, c.OffsetsTopicNumPartitions, c.OffsetsTopicReplicationFactor)
	}
	if c.HTTPListen != "0.0.0.0:9644" || c.LoggingLevel != "info" {
		t.Errorf("http %q logging %q", c.HTTPListen, c.LoggingLevel)
	}
	if pos, ok := c.Position("log.flush.policy"); !ok || pos != (Position{Line: 20, Column: 1}) {
		t.Errorf("log.flush.policy position %v %v", pos, ok)
	}
}

func TestTestdataIntervalFlush(t *testing.T) {
	c, err := Load(filepath.Join(testdataDir, "valid", "interval-flush.toml"))
	if err != nil {
		t.Fatal(err)
	}
	td := c.TopicDefaults
	if c.LogFlushPolicy != FlushPolicyInterval || td.FlushMessages != 10000 || td.FlushMs != 1000 {
		t.Errorf("flush %s %d %d", c.LogFlushPolicy, td.FlushMessages, td.FlushMs)
	}
	if td.RetentionMs != -1 || td.RetentionBytes != 1<<30 || td.SegmentMs != 24*3600*1000 || td.SegmentJitterMs != 60000 {
		t.Errorf("retention %d/%d segment %d jitter %d", td.RetentionMs, td.RetentionBytes, td.SegmentMs, td.SegmentJitterMs)
	}
	if c.GroupConsumerSessionTimeoutMs != 50000 || c.GroupConsumerHeartbeatIntervalMs != 6000 || c.LoggingLevel != "debug" {
		t.Errorf("group %d %d logging %s", c.GroupConsumerSessionTimeoutMs, c.GroupConsumerHeartbeatIntervalMs, c.LoggingLevel)
	}
}
