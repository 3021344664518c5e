package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"

	"github.com/wren-broker/wren/kafka"
	"github.com/wren-broker/wren/ops"
)

// healthWatchInterval is how often `cluster health -w` looks again.
const healthWatchInterval = 2 * time.Second

func clusterHealthCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name: "health",
		Usage: "report the cluster's health (rpk cluster health); exit status 1 when unhealthy. " +
			"It judges what Metadata and DescribeLogDirs report by the rules a broker's /readyz and /v1/cluster/health use",
		Flags: clientFlags(timeoutFlag(),
			&ucli.BoolFlag{Name: "watch", Aliases: []string{"w"}, Usage: "look again every 2s until interrupted"},
			&ucli.BoolFlag{Name: "exit-when-healthy", Aliases: []string{"e"}, Usage: "with --watch: exit once the cluster is healthy"},
		),
		Action: func(c *ucli.Context) error {
			format, err := argsFormat(c, 0, 0, "no arguments")
			if err != nil {
				return err
			}
			if c.Bool("exit-when-healthy") && !c.Bool("watch") {
				return fmt.Errorf("%w: --exit-when-healthy needs --watch", ErrUsage)
			}
			adm, cl, err := newAdmin(c)
			if err != nil {
				return err
			}
			defer cl.Close()
			// A watch runs until interrupted: --timeout bounds each look.
			look := commandStart(c.Context)
			for {
				ctx, cancel := timeoutFrom(c, look)
				h, err := clusterHealth(ctx, adm, cl)
				cancel()
				if err != nil {
					return err
				}
				if err := printResult(env.Stdout, format, h, func(w io.Writer) { printHealth(w, h) }); err != nil {
					return err
				}
				if !c.Bool("watch") || (h.Healthy && c.Bool("exit-when-healthy")) {
					if !h.Healthy {
						return &exitError{code: 1, err: h.Err()}
					}
					return nil
				}
				select {
				case <-c.Context.Done():
					return nil
				case <-time.After(healthWatchInterval):
				}
				look = time.Now()
			}
		},
	}
}

// clusterHealth gathers the facts from Metadata and DescribeLogDirs and
// judges them with ops.ClusterHealth.Evaluate. A broker listed in Metadata
// that does not answer DescribeLogDirs counts as down.
func clusterHealth(ctx context.Context, adm *kadm.Client, cl *kgo.Client) (ops.ClusterHealth, error) {
	md, err := adm.Metadata(ctx)
	if err != nil {
		return ops.ClusterHealth{}, fmt.Errorf("metadata: %w", err)
	}
	h := ops.ClusterHealth{ControllerID: md.Controller}
	for _, b := range md.Brokers {
		h.Nodes = append(h.Nodes, b.NodeID)
	}
	// Replicas a reassignment is adding do not count toward
	// under-replication; if the moves cannot be listed, none are known.
	ongoing, _ := listReassignments(ctx, cl, nil)
	for _, t := range md.Topics {
		for _, p := range t.Partitions {
			if p.Leader < 0 {
				h.LeaderlessPartitions = append(h.LeaderlessPartitions, ops.PartitionName(t.Topic, p.Partition))
			}
			if len(p.ISR) < len(p.Replicas)-len(ongoing[topicPartition{t.Topic, p.Partition}].adding) {
				h.UnderReplicatedPartitions = append(h.UnderReplicatedPartitions, ops.PartitionName(t.Topic, p.Partition))
			}
		}
	}
	dirs, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil && len(dirs) == 0 && !errors.As(err, new(*kadm.ShardErrors)) {
		return ops.ClusterHealth{}, fmt.Errorf("describe log dirs: %w", err)
	}
	for _, id := range h.Nodes {
		bd, ok := dirs[id]
		if !ok {
			h.DownNodes = append(h.DownNodes, id)
			continue
		}
		for _, d := range bd {
			if d.Err != nil {
				h.OfflineLogDirs = append(h.OfflineLogDirs, fmt.Sprintf("node %d: %s: %v", id, d.Dir, d.Err))
			}
		}
	}
	if err := controlPlane(ctx, cl, &h); err != nil {
		return ops.ClusterHealth{}, err
	}
	h.Evaluate()
	return h, nil
}

// controlPlane asks a broker for what Kafka's APIs do not carry: the
// controller's epoch, fenced brokers and the data-loss ledger, in
// DescribeCluster's wren tag. A broker that is not wren sends no tag, and
// these stay empty. A fenced broker serves no client: it counts as down.
func controlPlane(ctx context.Context, cl *kgo.Client, h *ops.ClusterHealth) error {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.EndpointType = 1
	req.UnknownTags.Set(kafka.ControlPlaneTag, []byte{})
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("describe cluster: %w", err)
	}
	var found bool
	var decodeErr error
	resp.UnknownTags.Each(func(k uint32, v []byte) {
		if k == kafka.ControlPlaneTag {
			found = true
			decodeErr = json.Unmarshal(v, &h.ControlPlane)
		}
	})
	if decodeErr != nil {
		return fmt.Errorf("describe cluster: wren's control plane facts: %w", decodeErr)
	}
	if found {
		h.DownNodes = append(h.DownNodes, h.FencedNodes...)
		h.Nodes = append(h.Nodes, h.FencedNodes...)
	}
	return nil
}

// printHealth prints rpk cluster health's layout.
func printHealth(w io.Writer, h ops.ClusterHealth) {
	fmt.Fprintf(w, "CLUSTER HEALTH OVERVIEW\n=======================\n")
	fmt.Fprintf(w, "%-36s%v\n", "Healthy:", h.Healthy)
	fmt.Fprintf(w, "%-36s%v\n", "Unhealthy reasons:", h.UnhealthyReasons)
	fmt.Fprintf(w, "%-36s%d\n", "Controller ID:", h.ControllerID)
	fmt.Fprintf(w, "%-36s%d\n", "Controller epoch:", h.ControllerEpoch)
	fmt.Fprintf(w, "%-36s%v\n", "All nodes:", h.Nodes)
	fmt.Fprintf(w, "%-36s%v\n", "Nodes down:", h.DownNodes)
	fmt.Fprintf(w, "%-36s%v\n", "Nodes fenced:", h.FencedNodes)
	fmt.Fprintf(w, "%-36s%v\n", fmt.Sprintf("Leaderless partitions (%d):", len(h.LeaderlessPartitions)), h.LeaderlessPartitions)
	fmt.Fprintf(w, "%-36s%v\n", fmt.Sprintf("Under-replicated partitions (%d):", len(h.UnderReplicatedPartitions)), h.UnderReplicatedPartitions)
	fmt.Fprintf(w, "%-36s%v\n", fmt.Sprintf("Offline log dirs (%d):", len(h.OfflineLogDirs)), h.OfflineLogDirs)
	fmt.Fprintf(w, "%-36s%d\n", "Data-loss ledger entries:", len(h.DataLossLedger))
	for _, e := range h.DataLossLedger {
		lost := "offsets unknown"
		if e.FromOffset >= 0 && e.ToOffset >= 0 {
			lost = fmt.Sprintf("offsets [%d, %d) may be lost", e.FromOffset, e.ToOffset)
		}
		fmt.Fprintf(w, "  %s/%d leader epoch %d: %s election of %d (previous leader %d, ISR %v); %s\n",
			e.Topic, e.Partition, e.LeaderEpoch, e.Reason, e.NewLeader, e.PreviousLeader, e.PreviousISR, lost)
	}
}
