package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	ucli "github.com/urfave/cli/v2"
)

// maxSeekPartitionsPerTopic bounds the partition list of one --topic
// T:P,P,... value: more than a topic can have is a typo, not a request.
const maxSeekPartitionsPerTopic = 1 << 16

func groupSeekCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:      "seek",
		Usage:     "move a group's committed offsets (kafka-consumer-groups --reset-offsets); a dry run unless --execute",
		ArgsUsage: "GROUP",
		Description: "Choose the partitions with --topic T (all its partitions) or --topic T:P,P (repeatable), or\n" +
			"--all-topics (every partition the group has committed), and the new offset with one of:\n" +
			"  --to start|end|N     the log start offset, the high watermark, or N clamped to [start, end]\n" +
			"  --to-datetime TS     the first offset whose timestamp is at or after TS\n" +
			"                       (2026-01-02T15:04:05[.sss][Z|±hh:mm], local time without a zone;\n" +
			"                       the high watermark when no record is that recent)\n" +
			"  --shift-by ±N        the committed offset moved by N, clamped to [start, end]; a partition\n" +
			"                       without a committed offset is refused\n" +
			"The plan is printed as GROUP TOPIC PARTITION NEW-OFFSET CURRENT-OFFSET. Without --execute\n" +
			"nothing is committed. --execute commits the plan outside group management (generation -1),\n" +
			"which the coordinator accepts only while the group has no members, so it is refused for\n" +
			"an active group.",
		Flags: clientFlags(timeoutFlag(),
			&ucli.StringSliceFlag{Name: "topic", Aliases: []string{"t"}, Usage: "T or T:P,P,... (repeatable)"},
			&ucli.BoolFlag{Name: "all-topics", Usage: "every partition the group has a committed offset for"},
			&ucli.StringFlag{Name: "to", Usage: "start, end or an offset N"},
			&ucli.StringFlag{Name: "to-datetime", Usage: "first offset at or after this time: 2026-01-02T15:04:05[.sss][Z|±hh:mm]"},
			&ucli.StringFlag{Name: "shift-by", Usage: "move the committed offsets by ±N"},
			&ucli.BoolFlag{Name: "execute", Usage: "commit the new offsets (default: print them only)"},
		),
		Action: func(c *ucli.Context) error {
			format, err := argsFormat(c, 1, 1, "one GROUP")
			if err != nil {
				return err
			}
			spec, err := parseSeekSpec(c)
			if err != nil {
				return err
			}
			group := c.Args().First()
			return runAdmin(c, func(ctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
				return seekGroup(ctx, env, adm, group, spec, format, c.Bool("execute"))
			})
		},
	}
}

type seekKind int

const (
	seekToStart seekKind = iota
	seekToEnd
	seekToOffset
	seekToTimestamp
	seekShiftBy
)

// seekSpec is what seek's flags ask for.
type seekSpec struct {
	allTopics bool
	// topics maps each --topic to its partitions; nil means all of them.
	topics map[string][]int32
	kind   seekKind
	// n is the offset (seekToOffset), the unix ms (seekToTimestamp) or
	// the shift (seekShiftBy).
	n int64
}

func parseSeekSpec(c *ucli.Context) (seekSpec, error) {
	spec := seekSpec{allTopics: c.Bool("all-topics")}
	topicFlags := c.StringSlice("topic")
	if spec.allTopics == (len(topicFlags) > 0) {
		return spec, fmt.Errorf("%w: want --topic or --all-topics (one of them)", ErrUsage)
	}
	if len(topicFlags) > 0 {
		spec.topics = map[string][]int32{}
		for _, s := range topicFlags {
			t, ps, err := parseTopicPartitions(s)
			if err != nil {
				return spec, err
			}
			if _, dup := spec.topics[t]; dup {
				return spec, fmt.Errorf("%w: --topic %s given twice", ErrUsage, t)
			}
			spec.topics[t] = ps
		}
	}
	var chosen []string
	for _, f := range []string{"to", "to-datetime", "shift-by"} {
		if c.IsSet(f) {
			chosen = append(chosen, "--"+f)
		}
	}
	if len(chosen) != 1 {
		return spec, fmt.Errorf("%w: want exactly one of --to, --to-datetime, --shift-by, got %d", ErrUsage, len(chosen))
	}
	var err error
	switch chosen[0] {
	case "--to":
		spec.kind, spec.n, err = parseSeekTo(c.String("to"))
	case "--to-datetime":
		var ts time.Time
		ts, err = parseSeekDatetime(c.String("to-datetime"), time.Local)
		spec.kind, spec.n = seekToTimestamp, ts.UnixMilli()
	case "--shift-by":
		spec.kind = seekShiftBy
		spec.n, err = strconv.ParseInt(c.String("shift-by"), 10, 64)
		if err != nil {
			err = fmt.Errorf("%w: --shift-by %q: want an integer such as -5 or 10", ErrUsage, c.String("shift-by"))
		}
	}
	return spec, err
}

// parseTopicPartitions reads T or T:P,P,... (a topic name cannot hold ':').
func parseTopicPartitions(s string) (string, []int32, error) {
	topic, list, hasList := strings.Cut(s, ":")
	if topic == "" {
		return "", nil, fmt.Errorf("%w: --topic %q: no topic name", ErrUsage, s)
	}
	if !hasList {
		return topic, nil, nil
	}
	fields := strings.Split(list, ",")
	if len(fields) > maxSeekPartitionsPerTopic {
		return "", nil, fmt.Errorf("%w: --topic %q: more than %d partitions", ErrUsage, s, maxSeekPartitionsPerTopic)
	}
	var ps []int32
	for _, f := range fields {
		p, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil || p < 0 {
			return "", nil, fmt.Errorf("%w: --topic %q: partition %q", ErrUsage, s, f)
		}
		if !containsPartition(ps, int32(p)) {
			ps = append(ps, int32(p))
		}
	}
	return topic, ps, nil
}

func containsPartition(ps []int32, p int32) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

func parseSeekTo(s string) (seekKind, int64, error) {
	switch s {
	case "start", "earliest", "beginning":
		return seekToStart, 0, nil
	case "end", "latest":
		return seekToEnd, 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, 0, fmt.Errorf("%w: --to %q: want start, end or an offset >= 0", ErrUsage, s)
	}
	return seekToOffset, n, nil
}

// parseSeekDatetime reads kafka-consumer-groups --to-datetime's format,
// YYYY-MM-DDTHH:mm:SS[.sss] with an optional zone (Z or ±hh:mm); without
// a zone the time is in loc, as Kafka takes it in the local zone. Go's
// parser accepts the fraction of a second without a layout for it.
func parseSeekDatetime(s string, loc *time.Location) (time.Time, error) {
	if t, err := time.Parse("2006-01-02T15:04:05Z07:00", s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02T15:04:05", s, loc); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%w: --to-datetime %q: want 2026-01-02T15:04:05[.sss][Z|±hh:mm]", ErrUsage, s)
}

// seekRow is one partition of the plan.
type seekRow struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	NewOffset int64  `json:"new_offset"`
	// CurrentOffset is nil where the group has committed nothing.
	CurrentOffset *int64 `json:"current_offset"`
}

type seekResult struct {
	Executed bool      `json:"executed"`
	Offsets  []seekRow `json:"offsets"`
}

func seekGroup(ctx context.Context, env Env, adm *kadm.Client, group string, spec seekSpec, format outputFormat, execute bool) error {
	// A group that does not exist may be seeked: committing creates it,
	// which is how offsets are prepared for consumers yet to start.
	desc, err := describeGroup(ctx, adm, listGroupsHint(ctx, adm), group)
	if err != nil && !errors.Is(err, ErrUnknownGroup) {
		return err
	}
	if execute && desc != nil && (len(desc.Members) > 0 || (desc.State != "Empty" && desc.State != "Dead")) {
		return &groupError{ErrGroupActive, fmt.Sprintf("cli: group %s is active (state %s, %d members): stop its consumers before seeking",
			group, desc.State, len(desc.Members))}
	}
	committed, err := committedOffsets(ctx, adm, group)
	if err != nil {
		return err
	}
	partitions, err := seekPartitions(ctx, adm, group, spec, committed)
	if err != nil {
		return err
	}
	rows, err := planSeek(ctx, adm, group, spec, partitions, committed)
	if err != nil {
		return err
	}
	if execute {
		if err := commitSeek(ctx, adm, group, rows); err != nil {
			return err
		}
	}
	res := seekResult{Executed: execute, Offsets: rows}
	err = printResult(env.Stdout, format, res, func(w io.Writer) {
		t := newKafkaTable([]string{"GROUP", "TOPIC", "PARTITION", "NEW-OFFSET", "CURRENT-OFFSET"}, []int{15, 15, 10, 15, 0})
		for _, r := range rows {
			t.add(r.Group, r.Topic, strconv.Itoa(int(r.Partition)), strconv.FormatInt(r.NewOffset, 10), dashOrInt(r.CurrentOffset))
		}
		t.write(w)
	})
	if err == nil && !execute {
		fmt.Fprintln(env.Stderr, "dry run: add --execute to commit these offsets")
	}
	return err
}

// seekPartitions resolves --topic and --all-topics to partitions, checking
// that named topics and partitions exist.
func seekPartitions(ctx context.Context, adm *kadm.Client, group string, spec seekSpec, committed kadm.Offsets) (kadm.TopicsSet, error) {
	if spec.allTopics {
		set := committed.TopicsSet()
		if len(set) == 0 {
			return nil, fmt.Errorf("cli: group %s has no committed offsets: name the partitions with --topic", group)
		}
		return set, nil
	}
	topics := make([]string, 0, len(spec.topics))
	for t := range spec.topics {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	details, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("cli: metadata: %w", err)
	}
	set := make(kadm.TopicsSet)
	for _, t := range topics {
		td, ok := details[t]
		switch {
		case !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition):
			return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, t)
		case td.Err != nil:
			return nil, fmt.Errorf("cli: topic %s: %w", t, td.Err)
		}
		want := spec.topics[t]
		if want == nil {
			for p := range td.Partitions {
				set.Add(t, p)
			}
			continue
		}
		for _, p := range want {
			if _, ok := td.Partitions[p]; !ok {
				return nil, fmt.Errorf("%w: %s has no partition %d", ErrUnknownTopic, t, p)
			}
			set.Add(t, p)
		}
	}
	return set, nil
}

// planSeek computes the new offset of every partition.
func planSeek(ctx context.Context, adm *kadm.Client, group string, spec seekSpec, partitions kadm.TopicsSet, committed kadm.Offsets) ([]seekRow, error) {
	topics := partitions.Topics()
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("cli: list start offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("cli: list end offsets: %w", err)
	}
	var atTime kadm.ListedOffsets
	if spec.kind == seekToTimestamp {
		// kadm answers the high watermark where no record is that
		// recent, as Kafka's --to-datetime does.
		if atTime, err = adm.ListOffsetsAfterMilli(ctx, spec.n, topics...); err != nil {
			return nil, fmt.Errorf("cli: list offsets by time: %w", err)
		}
	}
	lookup := func(l kadm.ListedOffsets, what, t string, p int32) (int64, error) {
		lo, ok := l.Lookup(t, p)
		switch {
		case !ok:
			return 0, fmt.Errorf("cli: %s of %s/%d: not listed", what, t, p)
		case lo.Err != nil:
			return 0, fmt.Errorf("cli: %s of %s/%d: %w", what, t, p, lo.Err)
		}
		return lo.Offset, nil
	}
	var rows []seekRow
	var noCommit []string
	var firstErr error
	partitions.Each(func(t string, p int32) {
		start, err := lookup(starts, "log start offset", t, p)
		if err != nil {
			firstErr = cmpErr(firstErr, err)
			return
		}
		end, err := lookup(ends, "high watermark", t, p)
		if err != nil {
			firstErr = cmpErr(firstErr, err)
			return
		}
		row := seekRow{Group: group, Topic: t, Partition: p}
		cur, hasCommit := committed.Lookup(t, p)
		if hasCommit {
			row.CurrentOffset = ptr(cur.At)
		}
		switch spec.kind {
		case seekToStart:
			row.NewOffset = start
		case seekToEnd:
			row.NewOffset = end
		case seekToOffset:
			row.NewOffset = clampOffset(spec.n, start, end)
		case seekToTimestamp:
			at, err := lookup(atTime, "offset by time", t, p)
			if err != nil {
				firstErr = cmpErr(firstErr, err)
				return
			}
			row.NewOffset = clampOffset(at, start, end)
		case seekShiftBy:
			if !hasCommit {
				noCommit = append(noCommit, fmt.Sprintf("%s/%d", t, p))
				return
			}
			row.NewOffset = clampOffset(addClamped(cur.At, spec.n), start, end)
		}
		rows = append(rows, row)
	})
	if firstErr != nil {
		return nil, firstErr
	}
	if len(noCommit) > 0 {
		sort.Strings(noCommit)
		return nil, fmt.Errorf("cli: --shift-by: group %s has no committed offset for %s: seek those with --to first",
			group, strings.Join(noCommit, ", "))
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Topic != rows[j].Topic {
			return rows[i].Topic < rows[j].Topic
		}
		return rows[i].Partition < rows[j].Partition
	})
	return rows, nil
}

func clampOffset(n, start, end int64) int64 {
	return min(max(n, start), end)
}

// addClamped is a+b without wrapping: a shift far past either end is
// clamped to the log anyway.
func addClamped(a, b int64) int64 {
	switch {
	case b > 0 && a > math.MaxInt64-b:
		return math.MaxInt64
	case b < 0 && a < math.MinInt64-b:
		return math.MinInt64
	}
	return a + b
}

// commitSeek commits the plan with OffsetCommit outside group management:
// kadm sends generation -1 and no member id, which a coordinator accepts
// for a group without members only.
func commitSeek(ctx context.Context, adm *kadm.Client, group string, rows []seekRow) error {
	offsets := make(kadm.Offsets)
	for _, r := range rows {
		offsets.Add(kadm.Offset{Topic: r.Topic, Partition: r.Partition, At: r.NewOffset, LeaderEpoch: -1})
	}
	resps, err := adm.CommitOffsets(ctx, group, offsets)
	if err != nil {
		return fmt.Errorf("cli: commit offsets of group %s: %w", group, err)
	}
	var cerr error
	resps.EachError(func(o kadm.OffsetResponse) {
		if cerr == nil {
			cerr = fmt.Errorf("cli: commit offset of group %s for %s/%d: %w", group, o.Topic, o.Partition, o.Err)
		}
	})
	return cerr
}
