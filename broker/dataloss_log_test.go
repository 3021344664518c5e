package broker

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/internal/vfs"
)

// An unclean election is logged at ERROR with the partition, the leaders
// and the reason, once: not again when a node starts with the entry in its
// image.
func TestDataLossLogged(t *testing.T) {
	var logs lockedBuffer
	b := &Broker{logger: slog.New(slog.NewTextHandler(&logs, nil))}
	ctx := context.Background()
	c, err := cluster.OpenController(vfs.NewMem(), "/meta", cluster.ControllerConfig{NodeID: 1, MinInsyncReplicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Subscribe(b.logDataLoss); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int32{2, 3} {
		if err := c.RegisterBroker(ctx, cluster.BrokerRegistrationRecord{BrokerID: id, Fenced: true}, true); err != nil {
			t.Fatal(err)
		}
		if err := c.UnfenceBroker(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := c.CreateTopics(ctx, []cluster.CreateTopic{{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{2, 3}}}}, false); err != nil || res[0].Err != nil {
		t.Fatalf("create: %v %+v", err, res)
	}
	ti := c.Image().Topic("t")
	p := ti.Partitions[0]
	if _, err := c.AlterISR(ctx, ti.ID, 0, 2, p.LeaderEpoch, p.PartitionEpoch, []int32{2}); err != nil {
		t.Fatal(err)
	}
	if err := c.FenceBroker(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "unclean leader election") {
		t.Fatalf("logged before any unclean election:\n%s", logs.String())
	}
	on := "true"
	if err := c.AlterConfigs(ctx, cluster.ResourceTopic, "t", []cluster.ConfigOp{{Key: "unclean.leader.election.enable", Value: &on}}, false, false); err != nil {
		t.Fatal(err)
	}
	text := logs.String()
	if strings.Count(text, "unclean leader election") != 1 || !strings.Contains(text, "level=ERROR") ||
		!strings.Contains(text, "topic=t partition=0 leader=3 previous_leader=2") || !strings.Contains(text, "reason=unclean") {
		t.Fatalf("log after the unclean election:\n%s", text)
	}
	// A node starting with the entry in its image does not log it again.
	again := &Broker{logger: slog.New(slog.NewTextHandler(&logs, nil))}
	if err := c.Subscribe(again.logDataLoss); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "unclean leader election"); n != 1 {
		t.Fatalf("%d log lines after a new subscriber, want 1", n)
	}
}
