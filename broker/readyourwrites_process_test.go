package broker

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// pinnedAdmin is a kadm client every request of which goes to node n,
// whatever broker the client means to reach: its dialer connects to n
// for every broker address. So "describe via node 2" is node 2's answer,
// not whichever broker the client picked.
func pinnedAdmin(t *testing.T, n *clusterNode) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.Dialer(func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, n.addr)
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// TestReadYourWritesAcrossNodes: once a metadata change is answered,
// every node shows it. Seen before: an AlterConfigs of retention.ms
// followed by a DescribeConfigs to another node still showed the old
// value, and a topic just created was missing from another node's
// Metadata. In a loop (bounded in count and time), a topic is created,
// its retention.ms altered and a partition added, each through one node
// (every node in turn: the acting controller answers itself, the others
// forward), and the topic deleted: right after each answer every node is
// asked through kadm, and none may show the state from before the change.
func TestReadYourWritesAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three wren processes")
	}
	pc := startProcessCluster(t)
	for _, n := range pc.nodes {
		pc.waitFor("a controller and three registered brokers", n, 60*time.Second, func(md *kmsg.MetadataResponse) bool {
			return md.ControllerID >= 0 && len(md.Brokers) == 3
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm := make([]*kadm.Client, len(pc.nodes))
	for i, n := range pc.nodes {
		adm[i] = pinnedAdmin(t, n)
	}
	// A topic needs three registered brokers for replication factor 3:
	// the first create may come before the controller registered them.
	{
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, err := adm[0].CreateTopic(ctx, 1, 3, nil, "ryw-warmup")
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("create the warm-up topic: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// partitionsEverywhere checks that every node's Metadata has topic
	// with want partitions, right now.
	partitionsEverywhere := func(step, topic string, want int) {
		t.Helper()
		// kadm answers ListTopics from the client's own metadata cache
		// when it is fresh; asking for the authorized operations makes it
		// send the Metadata request, so the node answers.
		uncached := kadm.WithAuthorizedOps(ctx)
		for i, a := range adm {
			td, err := a.ListTopics(uncached, topic)
			if err != nil {
				t.Fatalf("%s: Metadata from node %d: %v", step, pc.nodes[i].id, err)
			}
			d, ok := td[topic]
			switch {
			case !ok || d.Err != nil:
				t.Fatalf("%s: node %d does not show topic %s: %v", step, pc.nodes[i].id, topic, d.Err)
			case len(d.Partitions) != want:
				t.Fatalf("%s: node %d shows %d partitions of %s, want %d", step, pc.nodes[i].id, len(d.Partitions), topic, want)
			}
		}
	}
	// goneEverywhere checks that no node's Metadata has topic, right now.
	goneEverywhere := func(step, topic string) {
		t.Helper()
		uncached := kadm.WithAuthorizedOps(ctx)
		for i, a := range adm {
			td, err := a.ListTopics(uncached, topic)
			if err != nil {
				t.Fatalf("%s: Metadata from node %d: %v", step, pc.nodes[i].id, err)
			}
			if d, ok := td[topic]; ok && d.Err == nil {
				t.Fatalf("%s: node %d still shows topic %s with %d partitions", step, pc.nodes[i].id, topic, len(d.Partitions))
			}
		}
	}
	// retentionEverywhere checks that every node's DescribeConfigs has
	// topic's retention.ms at want, right now.
	retentionEverywhere := func(step, topic, want string) {
		t.Helper()
		for i, a := range adm {
			rc, err := a.DescribeTopicConfigs(ctx, topic)
			if err != nil {
				t.Fatalf("%s: DescribeConfigs from node %d: %v", step, pc.nodes[i].id, err)
			}
			r, err := rc.On(topic, nil)
			if err != nil || r.Err != nil {
				t.Fatalf("%s: DescribeConfigs from node %d: %v %v", step, pc.nodes[i].id, err, r.Err)
			}
			got := "<none>"
			for _, c := range r.Configs {
				if c.Key == "retention.ms" && c.Value != nil {
					got = *c.Value
				}
			}
			if got != want {
				t.Fatalf("%s: node %d shows retention.ms=%s of %s, want %s", step, pc.nodes[i].id, got, topic, want)
			}
		}
	}

	const maxRounds = 50
	start := time.Now()
	rounds := 0
	for ; rounds < maxRounds && time.Since(start) < 90*time.Second; rounds++ {
		topic := fmt.Sprintf("ryw-%d", rounds)
		via := func(step int) (int, *kadm.Client) { k := (rounds + step) % len(adm); return pc.nodes[k].id, adm[k] }

		id, a := via(0)
		step := fmt.Sprintf("round %d: create %s via node %d", rounds, topic, id)
		if r, err := a.CreateTopic(ctx, 1, 3, nil, topic); err != nil || r.Err != nil {
			if err == nil {
				err = r.Err
			}
			t.Fatalf("%s: %v", step, err)
		}
		partitionsEverywhere(step, topic, 1)

		id, a = via(1)
		retention := strconv.Itoa(3600000 + rounds)
		step = fmt.Sprintf("round %d: set retention.ms=%s on %s via node %d", rounds, retention, topic, id)
		// IncrementalAlterConfigs, and every other round the older
		// AlterConfigs that sarama's ClusterAdmin sends.
		alter := a.AlterTopicConfigs
		if rounds%2 == 1 {
			alter = a.AlterTopicConfigsState
		}
		resp, err := alter(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &retention}}, topic)
		if err == nil {
			var r kadm.AlterConfigsResponse
			if r, err = resp.On(topic, nil); err == nil {
				err = r.Err
			}
		}
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		retentionEverywhere(step, topic, retention)

		id, a = via(2)
		step = fmt.Sprintf("round %d: add a partition to %s via node %d", rounds, topic, id)
		cp, err := a.CreatePartitions(ctx, 1, topic)
		if err == nil {
			var r kadm.CreatePartitionsResponse
			if r, err = cp.On(topic, nil); err == nil {
				err = r.Err
			}
		}
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		partitionsEverywhere(step, topic, 2)

		id, a = via(3)
		step = fmt.Sprintf("round %d: delete %s via node %d", rounds, topic, id)
		dr, err := a.DeleteTopic(ctx, topic)
		if err == nil {
			err = dr.Err
		}
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		goneEverywhere(step, topic)
	}
	if rounds < 10 {
		t.Fatalf("only %d rounds in %v", rounds, time.Since(start).Round(time.Millisecond))
	}
	t.Logf("%d rounds of create, alter config, add partitions and delete, each checked on all three nodes, in %v",
		rounds, time.Since(start).Round(time.Millisecond))
}
