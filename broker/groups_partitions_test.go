package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestPartitionCountChangeRebalances grows a subscribed topic under a
// running group. KIP-848: the coordinator sees the new count in the
// metadata and assigns the new partitions itself. Classic: the coordinator
// starts a rebalance (a new generation) although no client refreshed its
// metadata (franz-go's default metadata age is 5 minutes); the partitions
// are then the leader's to assign, from its own metadata, as in Kafka.
func TestPartitionCountChangeRebalances(t *testing.T) {
	const topic, group = "growing", "grow"
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"classic", []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer())}},
		{"kip848", []kgo.Opt{kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := startBroker(t, testConfig(t, t.TempDir(), groupsTestConfig))
			ctx := testContext(t)
			_, adm := newClient(t, b)
			createTopic(t, adm, topic, 4, nil)
			w := newGroupWatch(t)
			m0 := startMember(t, b, w, "m0", group, topic, tc.opts...)
			startMember(t, b, w, "m1", group, topic, tc.opts...)
			w.waitOwners(ctx, 4, "m0", "m1")
			_, before := m0.cl.GroupMetadata()
			resp, err := adm.CreatePartitions(ctx, 2, topic)
			if err == nil {
				err = resp.Error()
			}
			if err != nil {
				t.Fatalf("create partitions: %v (%+v)", err, resp)
			}
			if tc.name == "kip848" {
				w.waitOwners(ctx, 6, "m0", "m1")
			} else {
				dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
				defer cancel()
				waitNewGeneration(dctx, t, m0.cl, before, func() string {
					d, err := adm.DescribeGroups(ctx, group)
					return fmt.Sprintf("%+v %v", d, err)
				})
			}
			w.checkGenerations()
		})
	}
}

// waitNewGeneration waits until the member is in a generation after last.
func waitNewGeneration(ctx context.Context, t *testing.T, cl *kgo.Client, last int32, describe func() string) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, g := cl.GroupMetadata(); g > last {
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("no generation after %d: %v; group: %s", last, ctx.Err(), describe())
		}
	}
}
