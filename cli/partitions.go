package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	ucli "github.com/urfave/cli/v2"
)

// maxPartitionArgs bounds the partitions one command names, so a runaway
// script fails with a usage error rather than a request the broker caps.
const maxPartitionArgs = 10000

func partitionsCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:  "partitions",
		Usage: "partition leadership and placement (kafka-leader-election, kafka-reassign-partitions)",
		Subcommands: []*ucli.Command{
			electLeaderCommand(env),
		},
	}
}

func electLeaderCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:      "elect-leader",
		Usage:     "elect partition leaders (kafka-leader-election); exit status 1 if an election failed",
		ArgsUsage: "[--all | TOPIC/PARTITION ...]",
		Flags: clientFlags(timeoutFlag(),
			&ucli.StringFlag{Name: "type", Value: "preferred",
				Usage: "preferred: move leadership to each partition's first replica where it is live and in the ISR; " +
					"unclean: elect a leader for partitions that have none, even a replica that may lack acknowledged records"},
			&ucli.BoolFlag{Name: "all", Usage: "every partition of every topic (only those needing an election are listed)"},
		),
		Action: func(c *ucli.Context) error {
			format, err := formatOf(c)
			if err != nil {
				return err
			}
			var how kadm.ElectLeadersHow
			switch c.String("type") {
			case "preferred":
				how = kadm.ElectPreferredReplica
			case "unclean":
				how = kadm.ElectLiveReplica
			default:
				return fmt.Errorf("%w: --type %q: want preferred or unclean", ErrUsage, c.String("type"))
			}
			var set kadm.TopicsSet
			switch {
			case c.Bool("all") && c.NArg() > 0:
				return fmt.Errorf("%w: give --all or TOPIC/PARTITION arguments, not both", ErrUsage)
			case c.Bool("all"):
			case c.NArg() == 0:
				return fmt.Errorf("%w: name the partitions (TOPIC/PARTITION ...) or give --all", ErrUsage)
			default:
				if set, err = parsePartitionArgs(c.Args().Slice()); err != nil {
					return err
				}
			}
			return runAdmin(c, func(ctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
				res, err := adm.ElectLeaders(ctx, how, set)
				if err != nil {
					return fmt.Errorf("cli: elect leaders: %w", err)
				}
				out := electionOutcomes(res)
				if err := printResult(env.Stdout, format, out, func(w io.Writer) { printElections(w, out) }); err != nil {
					return err
				}
				for _, o := range out {
					if o.failed {
						return &exitError{code: 1, err: fmt.Errorf("cli: the election failed for %s/%d: %s", o.Topic, o.Partition, o.Error)}
					}
				}
				return nil
			})
		},
	}
}

// parsePartitionArgs reads TOPIC/PARTITION arguments. The partition is
// after the last '/', since topic names cannot hold one.
func parsePartitionArgs(args []string) (kadm.TopicsSet, error) {
	if len(args) > maxPartitionArgs {
		return nil, fmt.Errorf("%w: %d partitions named, at most %d", ErrUsage, len(args), maxPartitionArgs)
	}
	set := kadm.TopicsSet{}
	for _, a := range args {
		tp, err := parseTopicPartition(a)
		if err != nil {
			return nil, err
		}
		set.Add(tp.topic, tp.partition)
	}
	return set, nil
}

type topicPartition struct {
	topic     string
	partition int32
}

func parseTopicPartition(s string) (topicPartition, error) {
	i := strings.LastIndexByte(s, '/')
	if i <= 0 {
		return topicPartition{}, fmt.Errorf("%w: %q: want TOPIC/PARTITION", ErrUsage, s)
	}
	p, err := strconv.ParseInt(s[i+1:], 10, 32)
	if err != nil || p < 0 {
		return topicPartition{}, fmt.Errorf("%w: %q: the partition must be a number from 0", ErrUsage, s)
	}
	return topicPartition{topic: s[:i], partition: int32(p)}, nil
}

// electionOutcome is one partition's line of elect-leader.
type electionOutcome struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Result is "elected", "not needed" (the right leader already leads)
	// or "failed".
	Result string `json:"result"`
	Error  string `json:"error,omitempty"`
	failed bool
}

func electionOutcomes(res kadm.ElectLeadersResults) []electionOutcome {
	out := []electionOutcome{}
	for topic, ps := range res {
		for p, r := range ps {
			o := electionOutcome{Topic: topic, Partition: p, Result: "elected"}
			switch {
			case r.Err == nil:
			case errors.Is(r.Err, kerr.ElectionNotNeeded):
				o.Result = "not needed"
			default:
				o.Result, o.failed = "failed", true
				o.Error = r.Err.Error()
				if r.ErrMessage != "" {
					o.Error = r.ErrMessage
				}
			}
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b electionOutcome) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return out
}

func printElections(w io.Writer, out []electionOutcome) {
	if len(out) == 0 {
		fmt.Fprintln(w, "No partition needed an election.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tRESULT\tERROR")
	for _, o := range out {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", o.Topic, o.Partition, o.Result, o.Error)
	}
	tw.Flush()
}
