package cluster

import (
	"context"
	"testing"

	"github.com/wren-broker/wren/internal/vfs"
)

// TestUncleanElectionConfig: a partition whose ISR is gone, with a live
// replica outside it, is elected uncleanly exactly when
// unclean.leader.election.enable says so, whichever way it is set: the
// broker default (the TOML file), a topic config given at creation, a
// topic config altered at run time, or the cluster-wide dynamic default.
// The topic's own value wins over the cluster-wide one, and that over the
// file's. Altering the setting on elects the leaderless partition at
// once, with a ledger entry.
func TestUncleanElectionConfig(t *testing.T) {
	on, off := "true", "false"
	const key = "unclean.leader.election.enable"
	for _, tc := range []struct {
		name string
		// static is the broker default (the file); create the topic's
		// config at creation; topic and cluster are altered at run time.
		static                 bool
		create, topic, cluster *string
		want                   bool
	}{
		{name: "off everywhere"},
		{name: "static", static: true, want: true},
		{name: "topic at creation", create: &on, want: true},
		{name: "topic altered", topic: &on, want: true},
		{name: "cluster-wide altered", cluster: &on, want: true},
		{name: "topic off over static on", static: true, create: &off},
		{name: "topic off over cluster-wide on", create: &off, cluster: &on},
		{name: "cluster-wide off over static on", static: true, cluster: &off},
		{name: "cluster-wide on, topic altered off", topic: &off, cluster: &on},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c, err := OpenController(vfs.NewMem(), "/meta", ControllerConfig{NodeID: 1, MinInsyncReplicas: 1, UncleanLeaderElectionEnable: tc.static})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for _, id := range []int32{2, 3} {
				if err := c.RegisterBroker(ctx, BrokerRegistrationRecord{BrokerID: id, Fenced: true}, true); err != nil {
					t.Fatal(err)
				}
				if err := c.UnfenceBroker(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
			spec := CreateTopic{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{2, 3}}, Configs: map[string]*string{}}
			if tc.create != nil {
				spec.Configs[key] = tc.create
			}
			if res, err := c.CreateTopics(ctx, []CreateTopic{spec}, false); err != nil || res[0].Err != nil {
				t.Fatalf("create: %v %+v", err, res)
			}
			// 3 falls out of the ISR, then the leader 2 dies: only 3 is
			// live, and only an unclean election may make it leader.
			ti := c.Image().Topic("t")
			p := ti.Partitions[0]
			if _, err := c.AlterISR(ctx, ti.ID, 0, 2, p.LeaderEpoch, p.PartitionEpoch, []int32{2}); err != nil {
				t.Fatal(err)
			}
			// A dynamic value that turns the setting off is in place before
			// the leader dies; one that turns it on comes after, and must
			// elect by itself.
			alter := func(on bool) {
				for _, a := range []struct {
					rt    ResourceType
					name  string
					value *string
				}{{ResourceBroker, "", tc.cluster}, {ResourceTopic, "t", tc.topic}} {
					if a.value == nil || (*a.value == "true") != on {
						continue
					}
					if err := c.AlterConfigs(ctx, a.rt, a.name, []ConfigOp{{Key: key, Value: a.value}}, false, false); err != nil {
						t.Fatal(err)
					}
				}
			}
			alter(false)
			if err := c.FenceBroker(ctx, 2); err != nil {
				t.Fatal(err)
			}
			alter(true)
			// An unrelated change elects nothing new.
			retention := "1000"
			if err := c.AlterConfigs(ctx, ResourceTopic, "t", []ConfigOp{{Key: "retention.ms", Value: &retention}}, false, false); err != nil {
				t.Fatal(err)
			}
			got := c.Image().Topic("t").Partitions[0]
			ledger := c.Image().DataLossLedger()
			if tc.want {
				if got.Leader != 3 || len(got.ISR) != 1 || got.ISR[0] != 3 {
					t.Fatalf("unclean election enabled: leader %d ISR %v, want 3 and [3]", got.Leader, got.ISR)
				}
				if len(ledger) != 1 || ledger[0].NewLeader != 3 || ledger[0].Reason != "unclean" {
					t.Fatalf("ledger %+v, want one unclean entry for leader 3", ledger)
				}
				return
			}
			if got.Leader != NoLeader || len(ledger) != 0 {
				t.Fatalf("unclean election not enabled, yet leader %d ISR %v, ledger %+v", got.Leader, got.ISR, ledger)
			}
		})
	}
}
