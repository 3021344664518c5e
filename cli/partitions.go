package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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
			moveCommand(env),
			moveStatusCommand(env),
			moveCancelCommand(env),
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
			set, err := partitionsOrAll(c)
			if err != nil {
				return err
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
				o.Error = kafkaReason(r.Err, r.ErrMessage)
			}
			out = append(out, o)
		}
	}
	// sort.Slice, not slices.SortFunc: a generic sort of this struct
	// would instantiate pdqsort for it (13 KiB).
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
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

// ---- move (kafka-reassign-partitions) ----

// reassignmentPlan is kafka-reassign-partitions' JSON file, so a plan
// written for Kafka's tool works here.
type reassignmentPlan struct {
	Version    int `json:"version"`
	Partitions []struct {
		Topic     string  `json:"topic"`
		Partition int32   `json:"partition"`
		Replicas  []int32 `json:"replicas"`
	} `json:"partitions"`
}

// maxPlanBytes bounds a plan file before it is decoded.
const maxPlanBytes = 16 << 20

func moveCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:      "move",
		Usage:     "move partitions to other brokers (kafka-reassign-partitions --execute); --wait shows progress until done",
		ArgsUsage: "[TOPIC/PARTITION:BROKER,BROKER,... ... | --file plan.json]",
		Flags: clientFlags(timeoutFlag(),
			&ucli.StringFlag{Name: "file", Usage: "a kafka-reassign-partitions plan: {\"version\":1,\"partitions\":[{\"topic\":T,\"partition\":P,\"replicas\":[...]}]}"},
			&ucli.BoolFlag{Name: "wait", Aliases: []string{"w"}, Usage: "wait until every move completes, showing progress (bounded by --timeout)"},
			&ucli.Int64Flag{Name: "throttle", Value: -1, Usage: "limit the replication of the moving replicas to `BYTES_PER_SEC` per broker " +
				"(kafka-reassign-partitions --throttle); move-status, or --wait, removes the throttle once the moves complete"},
		),
		Action: func(c *ucli.Context) error {
			format, err := formatOf(c)
			if err != nil {
				return err
			}
			req, err := movePlan(c)
			if err != nil {
				return err
			}
			throttle := c.Int64("throttle")
			if c.IsSet("throttle") && throttle < 0 {
				return fmt.Errorf("%w: --throttle %d: want bytes per second, 0 or more", ErrUsage, throttle)
			}
			notes := notesWriter(env, format)
			return runAdmin(c, func(ctx context.Context, adm *kadm.Client, cl *kgo.Client) error {
				if throttle >= 0 {
					if err := setMoveThrottle(ctx, adm, notes, req, throttle); err != nil {
						return err
					}
				}
				res, err := adm.AlterPartitionAssignments(ctx, req)
				if err != nil {
					return fmt.Errorf("cli: reassign partitions: %w", err)
				}
				out := moveOutcomes(res)
				if err := printResult(env.Stdout, format, out, func(w io.Writer) { printMoveOutcomes(w, out) }); err != nil {
					return err
				}
				var started kadm.TopicsSet
				for _, o := range out {
					if o.Error != "" {
						return &exitError{code: 1, err: fmt.Errorf("cli: the move of %s/%d was refused: %s", o.Topic, o.Partition, o.Error)}
					}
					started.Add(o.Topic, o.Partition)
				}
				if !c.Bool("wait") {
					return nil
				}
				if err := waitMoves(ctx, env, cl, started); err != nil {
					return err
				}
				if throttle < 0 {
					return nil
				}
				return clearMoveThrottles(ctx, adm, notes, slices.Sorted(maps.Keys(started)))
			})
		},
	}
}

// movePlan reads the partitions to move from the arguments or --file.
func movePlan(c *ucli.Context) (kadm.AlterPartitionAssignmentsReq, error) {
	var req kadm.AlterPartitionAssignmentsReq
	switch {
	case c.String("file") != "" && c.NArg() > 0:
		return nil, fmt.Errorf("%w: give --file or TOPIC/PARTITION:BROKERS arguments, not both", ErrUsage)
	case c.String("file") != "":
		return readPlan(c.String("file"))
	case c.NArg() == 0:
		return nil, fmt.Errorf("%w: name the moves (TOPIC/PARTITION:BROKER,BROKER,...) or give --file", ErrUsage)
	case c.NArg() > maxPartitionArgs:
		return nil, fmt.Errorf("%w: %d moves named, at most %d", ErrUsage, c.NArg(), maxPartitionArgs)
	}
	for _, a := range c.Args().Slice() {
		name, list, ok := strings.Cut(a, ":")
		if !ok || list == "" {
			return nil, fmt.Errorf("%w: %q: want TOPIC/PARTITION:BROKER,BROKER,...", ErrUsage, a)
		}
		tp, err := parseTopicPartition(name)
		if err != nil {
			return nil, err
		}
		var brokers []int32
		for _, f := range strings.Split(list, ",") {
			id, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
			if err != nil || id < 0 {
				return nil, fmt.Errorf("%w: %q: broker %q is not a node id", ErrUsage, a, f)
			}
			brokers = append(brokers, int32(id))
		}
		if _, dup := req[tp.topic][tp.partition]; dup {
			return nil, fmt.Errorf("%w: %s/%d is named twice", ErrUsage, tp.topic, tp.partition)
		}
		req.Assign(tp.topic, tp.partition, brokers)
	}
	return req, nil
}

func readPlan(path string) (kadm.AlterPartitionAssignmentsReq, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cli: --file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPlanBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cli: --file %s: %w", path, err)
	}
	if len(b) > maxPlanBytes {
		return nil, fmt.Errorf("%w: --file %s is over %d bytes", ErrUsage, path, maxPlanBytes)
	}
	var plan reassignmentPlan
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&plan); err != nil {
		return nil, fmt.Errorf("%w: --file %s: %v", ErrUsage, path, err)
	}
	if len(plan.Partitions) == 0 {
		return nil, fmt.Errorf("%w: --file %s lists no partitions", ErrUsage, path)
	}
	var req kadm.AlterPartitionAssignmentsReq
	for i, p := range plan.Partitions {
		if p.Topic == "" || p.Partition < 0 || len(p.Replicas) == 0 {
			return nil, fmt.Errorf("%w: --file %s: partitions[%d] needs a topic, a partition from 0 and replicas", ErrUsage, path, i)
		}
		if _, dup := req[p.Topic][p.Partition]; dup {
			return nil, fmt.Errorf("%w: --file %s: %s/%d is named twice", ErrUsage, path, p.Topic, p.Partition)
		}
		req.Assign(p.Topic, p.Partition, p.Replicas)
	}
	return req, nil
}

type moveOutcome struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Error     string `json:"error,omitempty"`
}

func moveOutcomes(res kadm.AlterPartitionAssignmentsResponses) []moveOutcome {
	out := []moveOutcome{}
	for _, r := range res.Sorted() {
		o := moveOutcome{Topic: r.Topic, Partition: r.Partition}
		if r.Err != nil {
			o.Error = kafkaReason(r.Err, r.ErrMessage)
		}
		out = append(out, o)
	}
	return out
}

func printMoveOutcomes(w io.Writer, out []moveOutcome) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tRESULT")
	for _, o := range out {
		r := "started"
		if o.Error != "" {
			r = "refused: " + o.Error
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", o.Topic, o.Partition, r)
	}
	tw.Flush()
}

// moveStatusInterval is how often --wait and move-status --watch look.
const moveStatusInterval = 500 * time.Millisecond

// waitMoves polls until none of set is being reassigned, with a progress
// bar of partitions done on a terminal.
func waitMoves(ctx context.Context, env Env, cl *kgo.Client, set kadm.TopicsSet) error {
	total := 0
	for _, ps := range set {
		total += len(ps)
	}
	bar := newProgress(env.Stderr, int64(total), "partitions moved")
	defer bar.finish()
	for {
		st, err := moveStatus(ctx, cl, set)
		if err != nil {
			return err
		}
		bar.set(int64(total - len(st)))
		if len(st) == 0 {
			fmt.Fprintf(env.Stdout, "All %d moves completed.\n", total)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cli: %d of %d moves still under way: %w", len(st), total, ctx.Err())
		case <-time.After(moveStatusInterval):
		}
	}
}

// movingPartition is one partition of move-status: its reassignment and
// how far each new replica has copied, by log size against the largest
// copy among the replicas that stay.
type movingPartition struct {
	Topic            string          `json:"topic"`
	Partition        int32           `json:"partition"`
	Replicas         []int32         `json:"replicas"`
	AddingReplicas   []int32         `json:"adding_replicas"`
	RemovingReplicas []int32         `json:"removing_replicas"`
	CopiedBytes      map[int32]int64 `json:"copied_bytes"`
	SourceBytes      int64           `json:"source_bytes"`
}

// moveStatus lists the ongoing reassignments of set (nil: all) with the
// log sizes of their replicas.
func moveStatus(ctx context.Context, cl *kgo.Client, set kadm.TopicsSet) ([]movingPartition, error) {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	if set != nil {
		for _, t := range set.IntoList() {
			rt := kmsg.NewListPartitionReassignmentsRequestTopic()
			rt.Topic, rt.Partitions = t.Topic, t.Partitions
			req.Topics = append(req.Topics, rt)
		}
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("cli: list reassignments: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, kafkaErr("list reassignments", err, derefString(resp.ErrorMessage))
	}
	out := []movingPartition{}
	var sizes kadm.TopicsSet
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, movingPartition{Topic: t.Topic, Partition: p.Partition, Replicas: p.Replicas,
				AddingReplicas: nonNil(p.AddingReplicas), RemovingReplicas: nonNil(p.RemovingReplicas), CopiedBytes: map[int32]int64{}})
			sizes.Add(t.Topic, p.Partition)
		}
	}
	if len(out) == 0 {
		return out, nil
	}
	// Sizes are a best effort: a broker that does not answer leaves its
	// copies unknown (absent).
	dirs, _ := kadm.NewClient(cl).DescribeAllLogDirs(ctx, sizes)
	for i := range out {
		m := &out[i]
		for _, d := range dirs.Sorted() {
			p, ok := d.Topics.Lookup(m.Topic, m.Partition)
			if !ok {
				continue
			}
			if slices.Contains(m.AddingReplicas, d.Broker) {
				m.CopiedBytes[d.Broker] = p.Size
			} else if p.Size > m.SourceBytes {
				m.SourceBytes = p.Size
			}
		}
	}
	// sort.Slice, not slices.SortFunc: see electionOutcomes.
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out, nil
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func printMoveStatus(w io.Writer, st []movingPartition) {
	if len(st) == 0 {
		fmt.Fprintln(w, "No partition is being moved.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tREPLICAS\tADDING\tREMOVING\tCOPIED")
	for _, m := range st {
		var copied []string
		for _, r := range m.AddingReplicas {
			b, ok := m.CopiedBytes[r]
			switch {
			case !ok:
				copied = append(copied, fmt.Sprintf("%d: ?", r))
			case m.SourceBytes == 0:
				copied = append(copied, fmt.Sprintf("%d: %d B", r, b))
			default:
				copied = append(copied, fmt.Sprintf("%d: %d%%", r, min(100, 100*b/m.SourceBytes)))
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", m.Topic, m.Partition, joinIDs(m.Replicas), joinIDs(m.AddingReplicas),
			joinIDs(m.RemovingReplicas), strings.Join(copied, " "))
	}
	tw.Flush()
}

func moveStatusCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:      "move-status",
		Usage:     "list partitions being moved, with how much each new replica has copied (kafka-reassign-partitions --verify); once none is, remove the replication throttle a move set",
		ArgsUsage: "[TOPIC/PARTITION ...]",
		Flags:     clientFlags(timeoutFlag()),
		Action: func(c *ucli.Context) error {
			format, err := formatOf(c)
			if err != nil {
				return err
			}
			var set kadm.TopicsSet
			if c.NArg() > 0 {
				if set, err = parsePartitionArgs(c.Args().Slice()); err != nil {
					return err
				}
			}
			return runAdmin(c, func(ctx context.Context, adm *kadm.Client, cl *kgo.Client) error {
				st, err := moveStatus(ctx, cl, set)
				if err != nil {
					return err
				}
				if err := printResult(env.Stdout, format, st, func(w io.Writer) { printMoveStatus(w, st) }); err != nil {
					return err
				}
				if len(st) > 0 {
					return nil
				}
				// Nothing it looks at is moving: a throttle left by a move
				// goes, as kafka-reassign-partitions --verify does.
				var topics []string
				if set != nil {
					topics = slices.Sorted(maps.Keys(set))
				}
				// The status is the command's answer; a throttle it cannot
				// check (a broker down) is reported, not a failure.
				if err := clearMoveThrottles(ctx, adm, notesWriter(env, format), topics); err != nil {
					fmt.Fprintf(env.Stderr, "warning: cannot look for a replication throttle to remove: %v\n", err)
				}
				return nil
			})
		},
	}
}

func moveCancelCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:      "move-cancel",
		Usage:     "cancel partition moves, back to the original replicas (kafka-reassign-partitions --cancel)",
		ArgsUsage: "[--all | TOPIC/PARTITION ...]",
		Flags: clientFlags(timeoutFlag(),
			&ucli.BoolFlag{Name: "all", Usage: "cancel every move under way"},
		),
		Action: func(c *ucli.Context) error {
			format, err := formatOf(c)
			if err != nil {
				return err
			}
			set, err := partitionsOrAll(c)
			if err != nil {
				return err
			}
			return runAdmin(c, func(ctx context.Context, adm *kadm.Client, cl *kgo.Client) error {
				if set == nil {
					st, err := moveStatus(ctx, cl, nil)
					if err != nil {
						return err
					}
					for _, m := range st {
						set.Add(m.Topic, m.Partition)
					}
				}
				var req kadm.AlterPartitionAssignmentsReq
				for _, t := range set.IntoList() {
					for _, p := range t.Partitions {
						req.Assign(t.Topic, p, nil)
					}
				}
				res, err := adm.AlterPartitionAssignments(ctx, req)
				if err != nil {
					return fmt.Errorf("cli: cancel reassignments: %w", err)
				}
				out := moveOutcomes(res)
				if err := printResult(env.Stdout, format, out, func(w io.Writer) {
					if len(out) == 0 {
						fmt.Fprintln(w, "No partition is being moved.")
						return
					}
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "TOPIC\tPARTITION\tRESULT")
					for _, o := range out {
						r := "cancelled"
						if o.Error != "" {
							r = "failed: " + o.Error
						}
						fmt.Fprintf(tw, "%s\t%d\t%s\n", o.Topic, o.Partition, r)
					}
					tw.Flush()
				}); err != nil {
					return err
				}
				for _, o := range out {
					if o.Error != "" {
						return &exitError{code: 1, err: fmt.Errorf("cli: the cancel of %s/%d failed: %s", o.Topic, o.Partition, o.Error)}
					}
				}
				return nil
			})
		},
	}
}

// partitionsOrAll reads the TOPIC/PARTITION arguments, or --all (a nil
// set: every partition); exactly one of the two.
func partitionsOrAll(c *ucli.Context) (kadm.TopicsSet, error) {
	switch {
	case c.Bool("all") && c.NArg() > 0:
		return nil, fmt.Errorf("%w: give --all or TOPIC/PARTITION arguments, not both", ErrUsage)
	case c.Bool("all"):
		return nil, nil
	case c.NArg() == 0:
		return nil, fmt.Errorf("%w: name the partitions (TOPIC/PARTITION ...) or give --all", ErrUsage)
	}
	return parsePartitionArgs(c.Args().Slice())
}

// notesWriter is where a command says what it did beside its result:
// after the text, or on stderr when stdout holds one JSON document.
func notesWriter(env Env, format outputFormat) io.Writer {
	if format == formatJSON {
		return env.Stderr
	}
	return env.Stdout
}
