package cluster

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/internal/vfs"
)

func open(t *testing.T, fsys vfs.FS) *Controller {
	t.Helper()
	c, err := OpenController(fsys, "/meta", ControllerConfig{NodeID: 1, DefaultPartitions: 3, DefaultReplicationFactor: 1,
		ValidateTopicConfig: func(k string, v *string) error {
			if k == "bad.key" {
				return errors.New("unknown config bad.key")
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestControllerTopicsSurviveRestart(t *testing.T) {
	fsys := vfs.NewMem()
	c := open(t, fsys)
	ctx := context.Background()
	var seen []uint64
	if err := c.Subscribe(func(old, new *Image) { seen = append(seen, new.Offset) }); err != nil {
		t.Fatal(err)
	}
	v := "1000"
	res, err := c.CreateTopics(ctx, []CreateTopic{
		{Name: "orders", NumPartitions: -1, ReplicationFactor: -1, Configs: map[string]*string{"retention.ms": &v}},
		{Name: "events", NumPartitions: 2, ReplicationFactor: 1},
		{Name: "orders", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "bad/name", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "rf", NumPartitions: 1, ReplicationFactor: 3},
		{Name: "cfg", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]*string{"bad.key": &v}},
		{Name: "zero", NumPartitions: 0, ReplicationFactor: 1},
		{Name: "events.x", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "events_x", NumPartitions: 1, ReplicationFactor: 1},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []*kerr.Error{nil, nil, kerr.TopicAlreadyExists, kerr.InvalidTopicException, kerr.InvalidReplicationFactor, kerr.InvalidConfig, kerr.InvalidPartitions, nil, kerr.InvalidTopicException}
	for i, r := range res {
		if (want[i] == nil) != (r.Err == nil) || (want[i] != nil && !errors.Is(r.Err, want[i])) {
			t.Errorf("topic %q: %v, want %v", r.Name, r.Err, want[i])
		}
	}
	if res[0].NumPartitions != 3 {
		t.Fatalf("default partitions: %d", res[0].NumPartitions)
	}
	if len(seen) != 2 { // the initial image plus one entry holding the three created topics
		t.Fatalf("subscriber saw %d images", len(seen))
	}
	if err := c.CreatePartitions(ctx, "events", 5, nil, false); err != nil {
		t.Fatal(err)
	}
	if err := c.CreatePartitions(ctx, "events", 4, nil, false); !errors.Is(err, kerr.InvalidPartitions) {
		t.Fatalf("shrink: %v", err)
	}
	w := "2000"
	if err := c.AlterConfigs(ctx, ResourceTopic, "orders", []ConfigOp{{Key: "retention.ms", Value: &w}, {Key: "segment.bytes", Value: &v}}, false, false); err != nil {
		t.Fatal(err)
	}
	if err := c.AlterConfigs(ctx, ResourceTopic, "orders", []ConfigOp{{Key: "segment.bytes"}}, false, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteTopics(ctx, []string{"events.x"}); err != nil {
		t.Fatal(err)
	}
	before := c.Image()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// A power loss keeps everything: every change was durable.
	c2 := open(t, fsys.Crash(vfs.CrashOptions{}))
	defer c2.Close()
	after := c2.Image()
	if after.ClusterID != before.ClusterID || after.ClusterID == "" {
		t.Fatalf("cluster id %q, then %q", before.ClusterID, after.ClusterID)
	}
	// The cluster secret was drawn once, and kept.
	if d := after.DerivedSecret("x"); d == nil || !bytes.Equal(d, before.DerivedSecret("x")) {
		t.Fatalf("derived secret %x, then %x", before.DerivedSecret("x"), d)
	}
	if got := strings.Join(after.TopicNames(), ","); got != "events,orders" {
		t.Fatalf("topics after restart: %s", got)
	}
	if n := len(after.Topic("events").Partitions); n != 5 {
		t.Fatalf("events has %d partitions", n)
	}
	cfg := after.Topic("orders").Configs
	if len(cfg) != 1 || cfg["retention.ms"] != "2000" {
		t.Fatalf("orders configs %v", cfg)
	}
	if after.Topic("orders").ID != before.Topic("orders").ID {
		t.Fatal("topic id changed across restart")
	}
	p := after.Topic("orders").Partitions[2]
	if p.Leader != 1 || len(p.Replicas) != 1 || len(p.ISR) != 1 {
		t.Fatalf("partition %+v", p)
	}
}

func TestValidateTopicName(t *testing.T) {
	for _, ok := range []string{"a", "A-b_c.9", strings.Repeat("x", 249)} {
		if err := ValidateTopicName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", strings.Repeat("x", 250), "a/b", "../x", "a\x00b", "a b", "ü"} {
		if err := ValidateTopicName(bad); !errors.Is(err, kerr.InvalidTopicException) {
			t.Errorf("%q accepted: %v", bad, err)
		}
	}
}

func TestProducerIDBlocksNeverRepeat(t *testing.T) {
	fsys := vfs.NewMem()
	c := open(t, fsys)
	ctx := context.Background()
	seen := map[int64]bool{}
	for i := 0; i < 3; i++ {
		first, err := c.AllocateProducerIDs(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if seen[first] || first != int64(i)*ProducerIDBlockSize {
			t.Fatalf("block %d starts at %d", i, first)
		}
		seen[first] = true
	}
	c.Close()
	c2 := open(t, fsys.Crash(vfs.CrashOptions{}))
	defer c2.Close()
	first, err := c2.AllocateProducerIDs(ctx, 1)
	if err != nil || first != 3*ProducerIDBlockSize {
		t.Fatalf("after restart the next block starts at %d (%v)", first, err)
	}
}
