package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"

	"github.com/wren-broker/wren/groups/assign"
)

func consumeCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:      "consume",
		Usage:     "print records (kafka-console-consumer, rpk topic consume, kcat -C)",
		ArgsUsage: "TOPIC...",
		Flags: append([]ucli.Flag{bootstrapFlag(), timeoutFlag(),
			// rpk's -f/--format: text and json are the global formats,
			// anything else is a record format string.
			&ucli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "text",
				Usage: "text (the value, one per line), json (one object per record), or a format: %t topic, %p partition, %o offset, %k key, %v value, %T timestamp, %h headers, %K/%V key/value size"},
			&ucli.StringFlag{Name: "offset", Aliases: []string{"o"}, Value: "start",
				Usage: "where to start: start, end, N (exact), -N (N before the end), +N (N after the start), @TS (first at or after unix ms TS)"},
			&ucli.IntFlag{Name: "num", Aliases: []string{"n", "max-records", "max-messages"}, Usage: "exit after N records (0: never)"},
			&ucli.DurationFlag{Name: "idle-timeout", Usage: "exit when no record has arrived for this long, counted from the start (with --group: from the first assignment) and from each record (0: never; kafka-console-consumer --timeout-ms)"},
			&ucli.StringFlag{Name: "group", Aliases: []string{"g"}, Usage: "consume as a member of this group, committing as it goes and on exit (--offset applies where it has no committed offset)"},
			&ucli.StringFlag{Name: "protocol", Value: protocolClassic,
				Usage: "with --group: classic (JoinGroup/SyncGroup, the assignor runs in a member) or consumer (KIP-848, the assignor runs in the broker)"},
			&ucli.StringFlag{Name: "assignor",
				Usage: "with --group: range, roundrobin, sticky or cooperative-sticky (classic; default cooperative-sticky), range or uniform (consumer; default uniform, also called sticky)"},
			&ucli.BoolFlag{Name: "json", Usage: "print one JSON object per record (as --format json)"},
			&ucli.IntFlag{Name: "partition", Aliases: []string{"p"}, Value: -1, Usage: "consume only this partition (-1: all)"},
		}, tlsFlags()...),
		Action: func(c *ucli.Context) error {
			if err := wantArgs(c, 1, -1, "at least one TOPIC"); err != nil {
				return err
			}
			printer, err := newRecordPrinter(env.Stdout, c.String("format"), c.Bool("json"))
			if err != nil {
				return err
			}
			opts, err := consumeOpts(c)
			if err != nil {
				return err
			}
			// A group member's idle timer starts at its first assignment:
			// joining waits for group.initial.rebalance.delay.ms (3 s by
			// default), longer than a short --idle-timeout.
			var assigned chan struct{}
			if c.String("group") != "" {
				assigned = make(chan struct{})
				var once sync.Once
				opts = append(opts, kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
					once.Do(func() { close(assigned) })
				}))
			}
			cl, err := newClient(c, opts...)
			if err != nil {
				return err
			}
			defer cl.Close()
			if err := requireTopics(c, cl, c.Args().Slice()...); err != nil {
				return err
			}
			if p := c.Int("partition"); p >= 0 {
				if err := requirePartition(c, cl, c.Args().First(), int32(p)); err != nil {
					return err
				}
			}
			if c.String("group") != "" && c.String("protocol") == protocolConsumer {
				if err := requireConsumerProtocol(c, cl); err != nil {
					return err
				}
			}
			err = consumeRecords(c.Context, cl, c.Int("num"), c.Duration("idle-timeout"), assigned, printer)
			if c.String("group") != "" {
				// Commit what was printed, also after SIGINT.
				ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Context), 5*time.Second)
				defer cancel()
				if cerr := cl.CommitUncommittedOffsets(ctx); cerr != nil && err == nil {
					err = fmt.Errorf("cli: commit offsets: %w", cerr)
				}
			}
			return err
		},
	}
}

func consumeOpts(c *ucli.Context) ([]kgo.Opt, error) {
	offset, err := parseOffset(c.String("offset"))
	if err != nil {
		return nil, err
	}
	topics := c.Args().Slice()
	group := c.String("group")
	partition := c.Int("partition")
	if c.Int("num") < 0 {
		return nil, fmt.Errorf("%w: --num %d", ErrUsage, c.Int("num"))
	}
	if c.Duration("idle-timeout") < 0 {
		return nil, fmt.Errorf("%w: --idle-timeout %v", ErrUsage, c.Duration("idle-timeout"))
	}
	var groupOpts []kgo.Opt
	if group != "" {
		groupOpts, err = consumerGroupOpts(group, c.String("protocol"), c.String("assignor"))
		if err != nil {
			return nil, err
		}
	} else if c.IsSet("protocol") || c.IsSet("assignor") {
		return nil, fmt.Errorf("%w: --protocol and --assignor need --group", ErrUsage)
	}
	if partition < -1 || partition > 1<<31-1 {
		return nil, fmt.Errorf("%w: --partition %d", ErrUsage, partition)
	}
	if partition < 0 {
		opts := []kgo.Opt{kgo.ConsumeTopics(topics...), kgo.ConsumeResetOffset(offset)}
		return append(opts, groupOpts...), nil
	}
	if group != "" {
		return nil, fmt.Errorf("%w: --partition and --group exclude each other (a group assigns partitions)", ErrUsage)
	}
	if len(topics) != 1 {
		return nil, fmt.Errorf("%w: --partition needs exactly one topic", ErrUsage)
	}
	return []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topics[0]: {int32(partition): offset},
	})}, nil
}

// Group protocols of --protocol.
const (
	protocolClassic  = "classic"
	protocolConsumer = "consumer"
)

// consumerGroupOpts makes the client a member of group. franz-go's
// autocommit commits what earlier polls returned every five seconds and
// before a rebalance takes partitions away; the consume action commits the
// rest on exit. PollRecords returns at most the records still to print, so
// everything committed was printed.
//
// With the classic protocol, the member offers one assignor, wren's own
// (assignBalancer): when it leads the group, groups/assign computes the
// assignment, as the broker does for KIP-848 groups.
func consumerGroupOpts(group, protocol, assignor string) ([]kgo.Opt, error) {
	switch protocol {
	case protocolClassic:
		if assignor == "" {
			assignor = assign.CooperativeStickyName
		}
		balancer, err := newAssignBalancer(assignor)
		if err != nil {
			return nil, fmt.Errorf("%w: --assignor %q: the classic protocol takes range, roundrobin, sticky or cooperative-sticky", ErrUsage, assignor)
		}
		return []kgo.Opt{kgo.ConsumerGroup(group), kgo.Balancers(balancer)}, nil
	case protocolConsumer:
		// With ServerSideBalancer, franz-go names the broker's
		// assignor after the first balancer, which must be one of its
		// own: range for RangeBalancer, uniform for StickyBalancer.
		// Neither runs here; the broker assigns.
		var balancer kgo.GroupBalancer
		switch assignor {
		case "", "uniform", "sticky":
			balancer = kgo.StickyBalancer()
		case "range":
			balancer = kgo.RangeBalancer()
		default:
			return nil, fmt.Errorf("%w: --assignor %q: the consumer protocol takes range or uniform", ErrUsage, assignor)
		}
		return []kgo.Opt{kgo.ConsumerGroup(group), kgo.Balancers(balancer), kgo.ServerSideBalancer()}, nil
	default:
		return nil, fmt.Errorf("%w: --protocol %q: want classic or consumer", ErrUsage, protocol)
	}
}

// requireConsumerProtocol fails unless every broker serves
// ConsumerGroupHeartbeat: franz-go would otherwise fall back to the
// classic protocol without a word, and the user asked for KIP-848.
func requireConsumerProtocol(c *ucli.Context, cl *kgo.Client) error {
	ctx, cancel := withTimeout(c)
	defer cancel()
	versions, err := kadm.NewClient(cl).ApiVersions(ctx)
	if err != nil {
		return fmt.Errorf("cli: api versions: %w", err)
	}
	for _, v := range versions.Sorted() {
		if v.Err != nil {
			return fmt.Errorf("cli: api versions of broker %d: %w", v.NodeID, v.Err)
		}
		if _, ok := v.KeyMaxVersion(int16(kmsg.ConsumerGroupHeartbeat)); !ok {
			return fmt.Errorf("cli: --protocol consumer: broker %d does not serve ConsumerGroupHeartbeat (KIP-848); use --protocol classic",
				v.NodeID)
		}
	}
	return nil
}

// parseOffset reads --offset in rpk's and kcat's words.
func parseOffset(s string) (kgo.Offset, error) {
	bad := func() (kgo.Offset, error) {
		return kgo.Offset{}, fmt.Errorf("%w: --offset %q: want start, end, N, -N, +N or @TS", ErrUsage, s)
	}
	switch s {
	case "start", "oldest", "beginning", "earliest":
		return kgo.NewOffset().AtStart(), nil
	case "end", "newest", "latest":
		return kgo.NewOffset().AtEnd(), nil
	}
	if ts, ok := strings.CutPrefix(s, "@"); ok {
		ms, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || ms < 0 {
			return bad()
		}
		return kgo.NewOffset().AfterMilli(ms), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return bad()
	}
	switch {
	case strings.HasPrefix(s, "-"):
		return kgo.NewOffset().AtEnd().Relative(n), nil
	case strings.HasPrefix(s, "+"):
		return kgo.NewOffset().AtStart().Relative(n), nil
	default:
		return kgo.NewOffset().At(n), nil
	}
}

type recordPrinter struct {
	w      io.Writer
	format recordFormat
	json   bool
	buf    []byte
}

func newRecordPrinter(w io.Writer, format string, asJSON bool) (*recordPrinter, error) {
	switch {
	case asJSON || format == "json":
		return &recordPrinter{w: w, json: true}, nil
	case format == "text" || format == "":
		format = defaultRecordFormat
	}
	rf, err := parseRecordFormat(format)
	if err != nil {
		return nil, err
	}
	return &recordPrinter{w: w, format: rf}, nil
}

func (p *recordPrinter) add(r *kgo.Record) error {
	if !p.json {
		p.buf = p.format.append(p.buf, r)
		return nil
	}
	var err error
	p.buf, err = appendJSONRecord(p.buf, r)
	return err
}

func (p *recordPrinter) flush() error {
	_, err := p.w.Write(p.buf)
	p.buf = p.buf[:0]
	return err
}

// consumeRecords prints records until limit (0: no limit), until no
// record arrived for idle (0: no idle limit), or until ctx is cancelled;
// each is a normal end. When assigned is not nil (a group member), the
// idle time counts from when it is closed, the first assignment.
func consumeRecords(ctx context.Context, cl *kgo.Client, limit int, idle time.Duration, assigned <-chan struct{}, p *recordPrinter) error {
	if assigned != nil && idle > 0 {
		select {
		case <-assigned:
		case <-ctx.Done():
			return nil
		}
	}
	count := 0
	for limit == 0 || count < limit {
		max := 0
		if limit > 0 {
			max = limit - count
		}
		pollCtx, cancel := ctx, context.CancelFunc(func() {})
		if idle > 0 {
			pollCtx, cancel = context.WithTimeout(ctx, idle)
		}
		fetches := cl.PollRecords(pollCtx, max)
		idleOver := pollCtx.Err() != nil && fetches.NumRecords() == 0
		cancel()
		if fetches.IsClientClosed() || ctx.Err() != nil || idleOver {
			return nil
		}
		var ferr error
		fetches.EachError(func(t string, part int32, err error) {
			if ferr == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				ferr = fmt.Errorf("cli: fetch %s/%d: %w", t, part, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		var perr error
		fetches.EachRecord(func(r *kgo.Record) {
			if perr == nil {
				perr = p.add(r)
				count++
			}
		})
		if perr != nil {
			return perr
		}
		if err := p.flush(); err != nil {
			return fmt.Errorf("cli: write: %w", err)
		}
	}
	return nil
}
