package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"
)

// maxPerfMetadataTopics bounds --topics: each is a metadata record that
// stays until the topic is deleted.
const maxPerfMetadataTopics = 10000

func perfMetadataCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name: "metadata",
		Usage: "time metadata commits: create topics one at a time with CreateTopics sent to one node (the controller, or another that forwards to it), " +
			"print the round trip's percentiles, then delete them",
		Flags: clientFlags(
			&ucli.DurationFlag{Name: "timeout", Value: 2 * time.Minute, Usage: "give up after this long in all"},
			&ucli.IntFlag{Name: "node", Value: -1, Usage: "node id to send CreateTopics to (-1: the controller)"},
			&ucli.IntFlag{Name: "topics", Value: 100, Usage: "topics to create, one request each"},
			&ucli.StringFlag{Name: "prefix", Value: "wren-perf-metadata-", Usage: "name prefix of the topics; the index follows"},
			&ucli.IntFlag{Name: "partitions", Aliases: []string{"p"}, Value: 1, Usage: "partitions per topic"},
			&ucli.IntFlag{Name: "replication-factor", Aliases: []string{"r"}, Value: -1, Usage: "replication factor (-1: broker default)"},
			&ucli.BoolFlag{Name: "keep", Usage: "keep the topics"},
		),
		Action: func(c *ucli.Context) error {
			format, err := argsFormat(c, 0, 0, "no arguments")
			if err != nil {
				return err
			}
			n := c.Int("topics")
			if n < 1 || n > maxPerfMetadataTopics {
				return fmt.Errorf("cli: --topics %d: want 1 to %d", n, maxPerfMetadataTopics)
			}
			return runAdmin(c, func(ctx context.Context, adm *kadm.Client, cl *kgo.Client) error {
				md, err := adm.BrokerMetadata(ctx)
				if err != nil {
					return fmt.Errorf("cli: metadata: %w", err)
				}
				r := perfMetadataResult{Node: int32(c.Int("node")), Controller: md.Controller, Topics: n}
				if r.Node < 0 {
					r.Node = md.Controller
				}
				if r.Node < 0 {
					return fmt.Errorf("cli: no acting controller to send to (an election is under way, or no majority is up)")
				}
				b := cl.Broker(int(r.Node))
				// The connection and its ApiVersions exchange are made
				// before the clock starts: only CreateTopics is timed.
				if _, err := b.Request(ctx, kmsg.NewPtrApiVersionsRequest()); err != nil {
					return fmt.Errorf("cli: node %d: %w", r.Node, err)
				}
				var h histogram
				var created []string
				defer func() {
					if !c.Bool("keep") && len(created) > 0 {
						dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
						defer cancel()
						if _, err := adm.DeleteTopics(dctx, created...); err != nil {
							fmt.Fprintf(env.Stderr, "cli: deleting the %d topics created: %v\n", len(created), err)
						}
					}
				}()
				for i := range n {
					req := kmsg.NewPtrCreateTopicsRequest()
					req.TimeoutMillis = 30000
					t := kmsg.NewCreateTopicsRequestTopic()
					t.Topic = fmt.Sprintf("%s%d", c.String("prefix"), i)
					t.NumPartitions, t.ReplicationFactor = int32(c.Int("partitions")), int16(c.Int("replication-factor"))
					req.Topics = append(req.Topics, t)
					start := time.Now()
					resp, err := b.Request(ctx, req)
					took := time.Since(start)
					if err != nil {
						return fmt.Errorf("cli: CreateTopics %s at node %d: %w", t.Topic, r.Node, err)
					}
					rt := resp.(*kmsg.CreateTopicsResponse).Topics
					if len(rt) != 1 {
						return fmt.Errorf("cli: CreateTopics %s at node %d: %d topics answered", t.Topic, r.Node, len(rt))
					}
					if err := kerr.ErrorForCode(rt[0].ErrorCode); err != nil {
						return fmt.Errorf("cli: CreateTopics %s at node %d: %w", t.Topic, r.Node, err)
					}
					created = append(created, t.Topic)
					h.record(uint64(took.Microseconds()))
				}
				ms := func(us uint64) float64 { return float64(us) / 1000 }
				r.P50Ms, r.P99Ms, r.MaxMs = ms(h.quantile(0.5)), ms(h.quantile(0.99)), ms(h.max)
				if format == formatJSON {
					return writeJSON(env.Stdout, r)
				}
				via := "the controller"
				if r.Node != r.Controller {
					via = fmt.Sprintf("not the controller: forwarded to node %d", r.Controller)
				}
				fmt.Fprintf(env.Stdout, "CreateTopics to node %d (%s): %d topics, round trip p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
					r.Node, via, r.Topics, r.P50Ms, r.P99Ms, r.MaxMs)
				return nil
			})
		},
	}
}

type perfMetadataResult struct {
	Node       int32   `json:"node"`
	Controller int32   `json:"controller"`
	Topics     int     `json:"topics"`
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	MaxMs      float64 `json:"max_ms"`
}
