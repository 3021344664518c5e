package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	ucli "github.com/urfave/cli/v2"
)

// Kafka's ListOffsets timestamps (ListOffsetsRequest.*_TIMESTAMP), which
// kafka-get-offsets takes as --time.
const (
	latestTimestamp       = -1
	earliestTimestamp     = -2
	maxTimestampTimestamp = -3
)

func offsetsCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:      "offsets",
		Usage:     "list partition offsets as kafka-get-offsets does (TOPIC:PARTITION:OFFSET; all topics when none is named)",
		ArgsUsage: "[TOPIC...]",
		Flags: clientFlags(timeoutFlag(),
			&ucli.StringFlag{Name: "time", Value: "-1",
				Usage: "-1 or latest (log end offset), -2 or earliest (log start offset), -3 or max-timestamp, or a unix ms timestamp"},
		),
		Action: func(c *ucli.Context) error {
			format, err := formatOf(c)
			if err != nil {
				return err
			}
			ts, err := parseListOffsetsTime(c.String("time"))
			if err != nil {
				return err
			}
			return runAdmin(c, func(ctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
				listed, err := listOffsets(ctx, adm, ts, c.Args().Slice())
				if err != nil {
					return err
				}
				return printOffsets(env.Stdout, format, listed)
			})
		},
	}
}

func parseListOffsetsTime(s string) (int64, error) {
	names := map[string]int64{"latest": latestTimestamp, "earliest": earliestTimestamp, "max-timestamp": maxTimestampTimestamp}
	if ts, ok := names[s]; ok {
		return ts, nil
	}
	ts, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ts < maxTimestampTimestamp {
		return 0, fmt.Errorf("%w: --time %q: want -1, -2, -3 or a unix ms timestamp", ErrUsage, s)
	}
	return ts, nil
}

func listOffsets(ctx context.Context, adm *kadm.Client, ts int64, topics []string) (kadm.ListedOffsets, error) {
	var listed kadm.ListedOffsets
	var err error
	switch ts {
	case latestTimestamp:
		listed, err = adm.ListEndOffsets(ctx, topics...)
	case earliestTimestamp:
		listed, err = adm.ListStartOffsets(ctx, topics...)
	case maxTimestampTimestamp:
		listed, err = adm.ListMaxTimestampOffsets(ctx, topics...)
	default:
		listed, err = adm.ListOffsetsAfterMilli(ctx, ts, topics...)
	}
	if err != nil {
		return nil, fmt.Errorf("cli: list offsets: %w", err)
	}
	for _, t := range topics {
		if ps, ok := listed[t]; ok {
			if lo, ok := ps[-1]; ok && errors.Is(lo.Err, kerr.UnknownTopicOrPartition) {
				return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, t)
			}
		}
	}
	if err := listed.Error(); err != nil {
		return nil, fmt.Errorf("cli: list offsets: %w", err)
	}
	return listed, nil
}

type listedOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Timestamp int64  `json:"timestamp"`
}

func printOffsets(w io.Writer, format outputFormat, listed kadm.ListedOffsets) error {
	var all []listedOffset
	listed.Each(func(lo kadm.ListedOffset) {
		all = append(all, listedOffset{Topic: lo.Topic, Partition: lo.Partition, Offset: lo.Offset, Timestamp: lo.Timestamp})
	})
	sort.Slice(all, func(i, j int) bool {
		if all[i].Topic != all[j].Topic {
			return all[i].Topic < all[j].Topic
		}
		return all[i].Partition < all[j].Partition
	})
	if all == nil {
		all = []listedOffset{}
	}
	return printResult(w, format, all, func(w io.Writer) {
		for _, lo := range all {
			// kafka-get-offsets leaves the offset empty when there is none.
			off := ""
			if lo.Offset >= 0 {
				off = strconv.FormatInt(lo.Offset, 10)
			}
			fmt.Fprintf(w, "%s:%d:%s\n", lo.Topic, lo.Partition, off)
		}
	})
}
