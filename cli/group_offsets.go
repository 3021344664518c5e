package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	ucli "github.com/urfave/cli/v2"
)

func groupDeleteOffsetsCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:      "delete-offsets",
		Usage:     "delete a group's committed offsets of some partitions (kafka-consumer-groups --delete-offsets)",
		ArgsUsage: "GROUP",
		Description: "Name the partitions with --topic T (all its partitions, and any the group committed for a topic\n" +
			"since deleted) or --topic T:P,P (repeatable). Prints TOPIC PARTITION STATUS, the status being\n" +
			"\"deleted\" or why not; exits non-zero if any partition was not deleted. The coordinator refuses\n" +
			"the partitions of topics the group's members subscribe to, and a classic group's partitions\n" +
			"while it rebalances. A group left with no offsets and no members is gone.",
		Flags: clientFlags(timeoutFlag(),
			&ucli.StringSliceFlag{Name: "topic", Aliases: []string{"t"}, Usage: "T or T:P,P,... (repeatable)"},
		),
		Action: func(c *ucli.Context) error {
			format, err := argsFormat(c, 1, 1, "one GROUP")
			if err != nil {
				return err
			}
			topics, err := parseDeleteOffsetsTopics(c.StringSlice("topic"))
			if err != nil {
				return err
			}
			group := c.Args().First()
			return runAdmin(c, func(ctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
				return deleteGroupOffsets(ctx, env.Stdout, adm, group, topics, format)
			})
		},
	}
}

// parseDeleteOffsetsTopics reads the --topic values: topic → partitions,
// nil meaning all of them.
func parseDeleteOffsetsTopics(flags []string) (map[string][]int32, error) {
	if len(flags) == 0 {
		return nil, fmt.Errorf("%w: want at least one --topic", ErrUsage)
	}
	topics := map[string][]int32{}
	for _, s := range flags {
		t, ps, err := parseTopicPartitions(s)
		if err != nil {
			return nil, err
		}
		if _, dup := topics[t]; dup {
			return nil, fmt.Errorf("%w: --topic %s given twice", ErrUsage, t)
		}
		topics[t] = ps
	}
	return topics, nil
}

// deletedOffset is one partition of delete-offsets' result.
type deletedOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Error is empty when the offset was deleted (or there was none).
	Error string `json:"error"`
}

func deleteGroupOffsets(ctx context.Context, w io.Writer, adm *kadm.Client, group string, topics map[string][]int32, format outputFormat) error {
	set, err := deleteOffsetsPartitions(ctx, adm, group, topics)
	if err != nil {
		return err
	}
	resps, err := adm.DeleteOffsets(ctx, group, set)
	var groupErr string
	switch {
	case errors.As(err, new(*kerr.Error)):
		// A group-level answer (unknown group, rebalancing) is every
		// partition's answer.
		groupErr = deleteOffsetsErrorText(err)
	case err != nil:
		return fmt.Errorf("cli: delete offsets of group %s: %w", group, err)
	}
	var rows []deletedOffset
	failed := 0
	set.Each(func(t string, p int32) {
		row := deletedOffset{Topic: t, Partition: p, Error: groupErr}
		if groupErr == "" {
			switch perr, ok := resps.Lookup(t, p); {
			case !ok:
				row.Error = "no answer from the coordinator"
			case perr != nil:
				row.Error = deleteOffsetsErrorText(perr)
			}
		}
		if row.Error != "" {
			failed++
		}
		rows = append(rows, row)
	})
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Topic != rows[j].Topic {
			return rows[i].Topic < rows[j].Topic
		}
		return rows[i].Partition < rows[j].Partition
	})
	err = printResult(w, format, rows, func(w io.Writer) {
		// kafka-consumer-groups --delete-offsets' columns.
		t := newKafkaTable([]string{"TOPIC", "PARTITION", "STATUS"}, []int{30, 15, 0})
		for _, r := range rows {
			status := r.Error
			if status == "" {
				status = "deleted"
			}
			t.add(r.Topic, strconv.Itoa(int(r.Partition)), status)
		}
		t.write(w)
	})
	if err == nil && failed > 0 {
		err = fmt.Errorf("cli: delete offsets of group %s: %d of %d partitions not deleted", group, failed, len(rows))
	}
	return err
}

// deleteOffsetsPartitions resolves the --topic values to partitions. A
// topic without a partition list means its partitions in the metadata and
// those the group has committed offsets for: a deleted topic's offsets,
// which linger and show as lag, are the usual reason to delete some.
func deleteOffsetsPartitions(ctx context.Context, adm *kadm.Client, group string, topics map[string][]int32) (kadm.TopicsSet, error) {
	set := make(kadm.TopicsSet)
	var all []string
	for t, ps := range topics {
		if ps == nil {
			all = append(all, t)
			continue
		}
		set.Add(t, ps...)
	}
	if len(all) == 0 {
		return set, nil
	}
	slices.Sort(all)
	details, err := adm.ListTopics(ctx, all...)
	if err != nil {
		return nil, fmt.Errorf("cli: metadata: %w", err)
	}
	committed, err := committedOffsets(ctx, adm, group)
	if err != nil {
		return nil, err
	}
	for _, t := range all {
		if td, ok := details[t]; ok && td.Err == nil {
			for p := range td.Partitions {
				set.Add(t, p)
			}
		} else if ok && !errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			return nil, fmt.Errorf("cli: topic %s: %w", t, td.Err)
		}
		for p := range committed[t] {
			set.Add(t, p)
		}
		if len(set[t]) == 0 {
			return nil, fmt.Errorf("%w: %s (and group %s has no offsets for it)", ErrUnknownTopic, t, group)
		}
	}
	return set, nil
}

// deleteOffsetsErrorText words the answers an operator can act on; others
// keep Kafka's own text.
func deleteOffsetsErrorText(err error) string {
	switch {
	case errors.Is(err, kerr.GroupSubscribedToTopic):
		return "the group's members subscribe to this topic"
	case errors.Is(err, kerr.NonEmptyGroup):
		return "the group is rebalancing or its members' subscriptions are unknown: try again, or stop its consumers"
	case errors.Is(err, kerr.GroupIDNotFound):
		return "group does not exist"
	default:
		return err.Error()
	}
}
