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

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"
)

// ErrUnknownTopic: a named topic does not exist.
var ErrUnknownTopic = errors.New("cli: unknown topic")

// maxDescribePages bounds the DescribeTopicPartitions cursor loop, so a
// broker that keeps answering with a cursor cannot keep us forever.
const maxDescribePages = 1 << 16

func topicCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:  "topic",
		Usage: "create, list, describe, delete and alter topics (kafka-topics, kafka-configs)",
		Subcommands: []*ucli.Command{
			topicCreateCommand(env),
			topicListCommand(env),
			topicDescribeCommand(env),
			topicDeleteCommand(env),
			topicAddPartitionsCommand(env),
			topicAlterConfigCommand(env),
		},
	}
}

// kafkaErr is a response's error as the user reads it: what was being
// done, then the error's reason (kafkaReason). It wraps err, so callers
// can still test the Kafka code with errors.Is.
func kafkaErr(what string, err error, msg string) error {
	if err == nil {
		return nil
	}
	return &responseError{what: what, reason: kafkaReason(err, msg), err: err}
}

// responseError is kafkaErr's error.
type responseError struct {
	what, reason string
	err          error
}

func (e *responseError) Error() string { return "cli: " + e.what + ": " + e.reason }
func (e *responseError) Unwrap() error { return e.err }

// kafkaReason says why a broker refused something, once: the Kafka code's
// name, then the broker's message when it has one, else the code's own
// description ("TOPIC_ALREADY_EXISTS: topic \"orders\" already exists",
// "UNKNOWN_TOPIC_OR_PARTITION: This server does not host this
// topic-partition."). Some brokers repeat the code's text in the message;
// it is said once.
func kafkaReason(err error, msg string) string {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		if msg == "" || strings.Contains(err.Error(), msg) {
			return err.Error()
		}
		return err.Error() + ": " + msg
	}
	for _, repeated := range []string{ke.Error(), ke.Message, ke.Description} {
		msg = strings.TrimPrefix(strings.TrimPrefix(msg, repeated), ": ")
	}
	if msg = strings.TrimSpace(msg); msg == "" {
		return ke.Error()
	}
	return ke.Message + ": " + msg
}

// ---- create ----

func topicCreateCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:      "create",
		Usage:     "create topics",
		ArgsUsage: "TOPIC...",
		Flags: clientFlags(timeoutFlag(),
			&ucli.IntFlag{Name: "partitions", Aliases: []string{"p"}, Value: -1, Usage: "partitions (-1: the broker's num.partitions)"},
			&ucli.IntFlag{Name: "replication-factor", Aliases: []string{"r"}, Value: -1, Usage: "replicas per partition (-1: the broker's default.replication.factor)"},
			&ucli.StringSliceFlag{Name: "config", Aliases: []string{"c"}, Usage: "topic config k=v (repeatable)"},
			&ucli.BoolFlag{Name: "if-not-exists", Usage: "succeed if the topic already exists"},
		),
		Action: func(c *ucli.Context) error {
			format, err := argsFormat(c, 1, -1, "at least one TOPIC")
			if err != nil {
				return err
			}
			partitions, rf := c.Int("partitions"), c.Int("replication-factor")
			if partitions == 0 || partitions < -1 || partitions > math.MaxInt32 {
				return fmt.Errorf("%w: --partitions %d: want -1 or 1..%d", ErrUsage, partitions, math.MaxInt32)
			}
			if rf == 0 || rf < -1 || rf > math.MaxInt16 {
				return fmt.Errorf("%w: --replication-factor %d: want -1 or 1..%d", ErrUsage, rf, math.MaxInt16)
			}
			configs := map[string]*string{}
			for _, kv := range c.StringSlice("config") {
				k, v, err := splitKV(kv, "--config")
				if err != nil {
					return err
				}
				configs[k] = &v
			}
			return runAdmin(c, func(ctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
				resps, err := adm.CreateTopics(ctx, int32(partitions), int16(rf), configs, c.Args().Slice()...)
				if err != nil {
					return fmt.Errorf("cli: create topics: %w", err)
				}
				return printCreated(env.Stdout, format, c.Args().Slice(), resps, c.Bool("if-not-exists"))
			})
		},
	}
}

type createdTopic struct {
	Topic             string `json:"topic"`
	TopicID           string `json:"topic_id,omitempty"`
	Partitions        int32  `json:"partitions"`
	ReplicationFactor int16  `json:"replication_factor"`
	Existed           bool   `json:"existed,omitempty"`
}

func printCreated(w io.Writer, format outputFormat, topics []string, resps kadm.CreateTopicResponses, ifNotExists bool) error {
	var created []createdTopic
	var firstErr error
	for _, t := range topics {
		r, ok := resps[t]
		if !ok {
			firstErr = cmpErr(firstErr, fmt.Errorf("cli: create topic %s: no response", t))
			continue
		}
		if errors.Is(r.Err, kerr.TopicAlreadyExists) && ifNotExists {
			created = append(created, createdTopic{Topic: t, Existed: true})
			continue
		}
		if err := kafkaErr("create topic "+t, r.Err, r.ErrMessage); err != nil {
			firstErr = cmpErr(firstErr, err)
			continue
		}
		ct := createdTopic{Topic: t, Partitions: r.NumPartitions, ReplicationFactor: r.ReplicationFactor}
		if r.ID != (kadm.TopicID{}) {
			ct.TopicID = topicIDString(r.ID)
		}
		created = append(created, ct)
	}
	err := printResult(w, format, created, func(w io.Writer) {
		for _, ct := range created {
			if !ct.Existed {
				fmt.Fprintf(w, "Created topic %s.\n", ct.Topic)
			}
		}
	})
	return cmpErr(err, firstErr)
}

// cmpErr keeps the first error: first if there is one, else err.
func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// ---- list ----

func topicListCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:    "list",
		Aliases: []string{"ls"},
		Usage:   "list topic names",
		Flags:   clientFlags(append([]ucli.Flag{timeoutFlag()}, internalFlags()...)...),
		Action: func(c *ucli.Context) error {
			format, err := argsFormat(c, 0, 0, "no arguments")
			if err != nil {
				return err
			}
			includeInternal, err := includeInternalOf(c)
			if err != nil {
				return err
			}
			return runAdmin(c, func(ctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
				details, err := adm.ListTopicsWithInternal(ctx)
				if err != nil {
					return fmt.Errorf("cli: list topics: %w", err)
				}
				if !includeInternal {
					details.FilterInternal()
				}
				return printTopicList(env.Stdout, format, details)
			})
		},
	}
}

// internalFlags choose whether listing all topics shows the internal ones
// (__consumer_offsets), which the broker lists flagged is_internal. They
// are hidden by default, as rpk hides them, so that a new user sees their
// own topics; --exclude-internal is kafka-topics' spelling of the default.
func internalFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.BoolFlag{Name: "include-internal", Aliases: []string{"i"}, Usage: "also show internal topics (__consumer_offsets)"},
		&ucli.BoolFlag{Name: "exclude-internal", Usage: "leave out internal topics (the default; kafka-topics' flag)"},
	}
}

func includeInternalOf(c *ucli.Context) (bool, error) {
	if c.Bool("include-internal") && c.Bool("exclude-internal") {
		return false, fmt.Errorf("%w: --include-internal and --exclude-internal contradict each other", ErrUsage)
	}
	return c.Bool("include-internal"), nil
}

type listedTopic struct {
	Topic             string `json:"topic"`
	TopicID           string `json:"topic_id,omitempty"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replication_factor"`
	Internal          bool   `json:"internal"`
}

func printTopicList(w io.Writer, format outputFormat, details kadm.TopicDetails) error {
	sorted := details.Sorted()
	if format == formatText {
		// kafka-topics --list: one name per line, sorted.
		for _, d := range sorted {
			fmt.Fprintln(w, d.Topic)
		}
		return nil
	}
	list := make([]listedTopic, 0, len(sorted))
	for _, d := range sorted {
		lt := listedTopic{Topic: d.Topic, Partitions: len(d.Partitions), Internal: d.IsInternal}
		if d.ID != (kadm.TopicID{}) {
			lt.TopicID = topicIDString(d.ID)
		}
		if ps := d.Partitions.Sorted(); len(ps) > 0 {
			lt.ReplicationFactor = len(ps[0].Replicas)
		}
		list = append(list, lt)
	}
	return writeJSON(w, list)
}

// ---- describe ----

func topicDescribeCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:      "describe",
		Usage:     "describe topics as kafka-topics --describe does (all topics when none is named)",
		ArgsUsage: "[TOPIC...]",
		Flags: clientFlags(append([]ucli.Flag{timeoutFlag(),
			&ucli.BoolFlag{Name: "producers", Usage: "also list each partition's idempotent producers (kafka-transactions describe-producers)"},
			&ucli.BoolFlag{Name: "under-replicated-partitions", Usage: "list only partitions whose ISR is smaller than their replica set, less replicas a move is adding (no topic lines)"},
			&ucli.BoolFlag{Name: "unavailable-partitions", Usage: "list only partitions without a leader, or led by a broker that is not live (no topic lines)"},
		}, internalFlags()...)...),
		Action: func(c *ucli.Context) error {
			format, err := formatOf(c)
			if err != nil {
				return err
			}
			includeInternal, err := includeInternalOf(c)
			if err != nil {
				return err
			}
			return runAdmin(c, func(ctx context.Context, adm *kadm.Client, cl *kgo.Client) error {
				topics := c.Args().Slice()
				if len(topics) == 0 {
					details, err := adm.ListTopicsWithInternal(ctx)
					if err != nil {
						return fmt.Errorf("cli: list topics: %w", err)
					}
					if !includeInternal {
						details.FilterInternal()
					}
					topics = details.Names()
				}
				sort.Strings(topics)
				descs, err := describeTopics(ctx, adm, cl, topics)
				if err != nil {
					return err
				}
				if c.Bool("under-replicated-partitions") || c.Bool("unavailable-partitions") {
					var live map[int32]bool
					if c.Bool("unavailable-partitions") {
						md, err := adm.BrokerMetadata(ctx)
						if err != nil {
							return fmt.Errorf("cli: metadata: %w", err)
						}
						live = map[int32]bool{}
						for _, b := range md.Brokers {
							live[b.NodeID] = true
						}
					}
					descs = filterPartitions(descs, c.Bool("under-replicated-partitions"), live)
				}
				if c.Bool("producers") {
					if err := describeProducers(ctx, adm, descs); err != nil {
						return err
					}
				}
				return printResult(env.Stdout, format, descs, func(w io.Writer) {
					for _, d := range descs {
						d.print(w)
					}
					for _, d := range descs {
						d.printProducers(w)
					}
				})
			})
		},
	}
}

type topicDescription struct {
	Topic             string                 `json:"topic"`
	TopicID           string                 `json:"topic_id,omitempty"`
	PartitionCount    int                    `json:"partition_count"`
	ReplicationFactor int                    `json:"replication_factor"`
	Configs           map[string]*string     `json:"configs"`
	Partitions        []partitionDescription `json:"partitions"`

	// configOrder is the broker's order of Configs, which the text keeps.
	configOrder []string
	// partitionsOnly leaves out the topic line, as kafka-topics does when
	// it reports under-replicated or unavailable partitions.
	partitionsOnly bool
}

// filterPartitions keeps the partitions kafka-topics --describe reports
// with --under-replicated-partitions (an ISR smaller than the replicas,
// less those a reassignment is adding)
// and --unavailable-partitions (live set: no leader, or a leader that is
// not a live broker); with both, a partition either reports is kept.
// Topics left without partitions are dropped.
func filterPartitions(descs []*topicDescription, underReplicated bool, live map[int32]bool) []*topicDescription {
	out := []*topicDescription{}
	for _, d := range descs {
		var keep []partitionDescription
		for _, p := range d.Partitions {
			if underReplicated && p.underReplicated() || live != nil && (p.Leader < 0 || !live[p.Leader]) {
				keep = append(keep, p)
			}
		}
		if len(keep) > 0 {
			f := *d
			f.Partitions, f.partitionsOnly = keep, true
			out = append(out, &f)
		}
	}
	return out
}

type partitionDescription struct {
	Partition int32   `json:"partition"`
	Leader    int32   `json:"leader"`
	Replicas  []int32 `json:"replicas"`
	ISR       []int32 `json:"isr"`
	// ELR and LastKnownELR (KIP-966) come from DescribeTopicPartitions;
	// from Metadata they are unknown, which Kafka prints as N/A.
	ELR          []int32 `json:"elr"`
	LastKnownELR []int32 `json:"last_known_elr"`
	elrKnown     bool
	// AddingReplicas and RemovingReplicas are set while the partition is
	// being reassigned (ListPartitionReassignments).
	AddingReplicas   []int32 `json:"adding_replicas,omitempty"`
	RemovingReplicas []int32 `json:"removing_replicas,omitempty"`
	reassigning      bool
	// Producers is set (if only to an empty list) by --producers alone,
	// so that the JSON without it stays as it was.
	Producers []producerDescription `json:"producers,omitzero"`
}

// producerDescription is one producer of a partition as DescribeProducers
// reports it, in the columns of kafka-transactions describe-producers.
type producerDescription struct {
	ProducerID             int64 `json:"producer_id"`
	ProducerEpoch          int16 `json:"producer_epoch"`
	LatestCoordinatorEpoch int32 `json:"latest_coordinator_epoch"`
	LastSequence           int32 `json:"last_sequence"`
	LastTimestamp          int64 `json:"last_timestamp"`
	// CurrentTransactionStartOffset is nil outside a transaction (the
	// broker's -1), which Kafka prints as None.
	CurrentTransactionStartOffset *int64 `json:"current_transaction_start_offset"`
}

// print writes kafka-topics --describe's lines (Kafka 4's TopicCommand):
//
//	Topic: T\tTopicId: ID\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: k=v,...
//	\tTopic: T\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr:
func (d *topicDescription) print(w io.Writer) {
	var b strings.Builder
	if d.partitionsOnly {
		d.printPartitions(&b)
		io.WriteString(w, b.String())
		return
	}
	b.WriteString("Topic: " + d.Topic)
	if d.TopicID != "" {
		b.WriteString("\tTopicId: " + d.TopicID)
	}
	fmt.Fprintf(&b, "\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: ", d.PartitionCount, d.ReplicationFactor)
	for i, k := range d.configOrder {
		if i > 0 {
			b.WriteByte(',')
		}
		v := "null"
		if p := d.Configs[k]; p != nil {
			v = *p
		}
		b.WriteString(k + "=" + v)
	}
	b.WriteByte('\n')
	d.printPartitions(&b)
	io.WriteString(w, b.String())
}

func (d *topicDescription) printPartitions(b *strings.Builder) {
	for _, p := range d.Partitions {
		leader := "none"
		if p.Leader >= 0 {
			leader = strconv.Itoa(int(p.Leader))
		}
		fmt.Fprintf(b, "\tTopic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s",
			d.Topic, p.Partition, leader, joinIDs(p.Replicas), joinIDs(p.ISR))
		if p.reassigning {
			fmt.Fprintf(b, "\tAdding Replicas: %s\tRemoving Replicas: %s", joinIDs(p.AddingReplicas), joinIDs(p.RemovingReplicas))
		}
		if p.elrKnown {
			fmt.Fprintf(b, "\tElr: %s\tLastKnownElr: %s\n", joinIDs(p.ELR), joinIDs(p.LastKnownELR))
		} else {
			b.WriteString("\tElr: N/A\tLastKnownElr: N/A\n")
		}
	}
}

// printProducers writes one line per producer of every partition, the
// columns of kafka-transactions describe-producers prefixed by the
// partition, in the key: value manner of the partition lines:
//
//	\tTopic: T\tPartition: 0\tProducerId: 1000\tProducerEpoch: 0\tLatestCoordinatorEpoch: -1\tLastSequence: 4\tLastTimestamp: 1700000000000\tCurrentTransactionStartOffset: None
func (d *topicDescription) printProducers(w io.Writer) {
	var b strings.Builder
	for _, p := range d.Partitions {
		for _, pr := range p.Producers {
			start := "None"
			if pr.CurrentTransactionStartOffset != nil {
				start = strconv.FormatInt(*pr.CurrentTransactionStartOffset, 10)
			}
			fmt.Fprintf(&b, "\tTopic: %s\tPartition: %d\tProducerId: %d\tProducerEpoch: %d\tLatestCoordinatorEpoch: %d"+
				"\tLastSequence: %d\tLastTimestamp: %d\tCurrentTransactionStartOffset: %s\n",
				d.Topic, p.Partition, pr.ProducerID, pr.ProducerEpoch, pr.LatestCoordinatorEpoch,
				pr.LastSequence, pr.LastTimestamp, start)
		}
	}
	io.WriteString(w, b.String())
}

// describeProducers fills in the producers of every partition of descs,
// asking each partition's leader (DescribeProducers, KIP-664).
func describeProducers(ctx context.Context, adm *kadm.Client, descs []*topicDescription) error {
	var set kadm.TopicsSet
	for _, d := range descs {
		for _, p := range d.Partitions {
			set.Add(d.Topic, p.Partition)
		}
	}
	if len(set) == 0 {
		return nil // an empty set would make kadm describe every topic
	}
	described, err := adm.DescribeProducers(ctx, set)
	if err != nil {
		return fmt.Errorf("cli: describe producers: %w", err)
	}
	for _, d := range descs {
		dt := described[d.Topic]
		for i := range d.Partitions {
			p := &d.Partitions[i]
			dp, ok := dt.Partitions[p.Partition]
			if !ok {
				return fmt.Errorf("cli: describe producers of %s-%d: no response", d.Topic, p.Partition)
			}
			what := fmt.Sprintf("describe producers of %s-%d", d.Topic, p.Partition)
			if err := kafkaErr(what, dp.Err, dp.ErrMessage); err != nil {
				return err
			}
			p.Producers = []producerDescription{}
			for _, pr := range dp.ActiveProducers.Sorted() {
				pd := producerDescription{
					ProducerID: pr.ProducerID, ProducerEpoch: pr.ProducerEpoch,
					LatestCoordinatorEpoch: pr.CoordinatorEpoch, LastSequence: pr.LastSequence,
					LastTimestamp: pr.LastTimestamp,
				}
				if pr.CurrentTxnStartOffset >= 0 {
					pd.CurrentTransactionStartOffset = &pr.CurrentTxnStartOffset
				}
				p.Producers = append(p.Producers, pd)
			}
		}
	}
	return nil
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

// describeTopics gathers partitions (DescribeTopicPartitions, else
// Metadata, as Kafka's admin client does) and the non-default configs.
func describeTopics(ctx context.Context, adm *kadm.Client, cl *kgo.Client, topics []string) ([]*topicDescription, error) {
	if len(topics) == 0 {
		return nil, nil
	}
	descs, err := describeTopicPartitions(ctx, cl, topics)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("cli: describe topics: %w", err)
		}
		descs, err = describeFromMetadata(ctx, adm, topics)
		if err != nil {
			return nil, err
		}
	}
	var set kadm.TopicsSet
	for _, d := range descs {
		for _, p := range d.Partitions {
			set.Add(d.Topic, p.Partition)
		}
	}
	if len(set) > 0 {
		// Best effort: without the list, no partition is known to move.
		ongoing, _ := listReassignments(ctx, cl, set)
		for _, d := range descs {
			for i := range d.Partitions {
				p := &d.Partitions[i]
				if r, ok := ongoing[topicPartition{d.Topic, p.Partition}]; ok {
					p.AddingReplicas, p.RemovingReplicas, p.reassigning = r.adding, r.removing, true
				}
			}
		}
	}
	configs, err := adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("cli: describe topic configs: %w", err)
	}
	out := make([]*topicDescription, 0, len(topics))
	for _, t := range topics {
		d := descs[t]
		if d == nil {
			return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, t)
		}
		rc, err := configs.On(t, nil)
		if err := cmpErr(err, kafkaErr("describe configs of "+t, rc.Err, rc.ErrMessage)); err != nil {
			return nil, err
		}
		d.Configs = map[string]*string{}
		for _, cfg := range rc.Configs {
			if cfg.Source == kmsg.ConfigSourceDefaultConfig {
				continue
			}
			d.Configs[cfg.Key] = cfg.Value
			d.configOrder = append(d.configOrder, cfg.Key)
		}
		sort.Slice(d.Partitions, func(i, j int) bool { return d.Partitions[i].Partition < d.Partitions[j].Partition })
		d.PartitionCount = len(d.Partitions)
		if len(d.Partitions) > 0 {
			// kafka-topics' replication factor: a move's adding replicas
			// do not count.
			d.ReplicationFactor = len(d.Partitions[0].Replicas) - len(d.Partitions[0].AddingReplicas)
		}
		out = append(out, d)
	}
	return out, nil
}

// describeTopicPartitions asks DescribeTopicPartitions (key 75), following
// its cursor. An error means the broker does not serve it (or failed):
// the caller falls back to Metadata.
func describeTopicPartitions(ctx context.Context, cl *kgo.Client, topics []string) (map[string]*topicDescription, error) {
	descs := map[string]*topicDescription{}
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	for _, t := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = t
		req.Topics = append(req.Topics, rt)
	}
	req.ResponsePartitionLimit = 2000
	for page := 0; ; page++ {
		if page == maxDescribePages {
			return nil, fmt.Errorf("cli: DescribeTopicPartitions: more than %d pages", maxDescribePages)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, err
		}
		for _, rt := range resp.Topics {
			if rt.Topic == nil {
				continue
			}
			name := *rt.Topic
			if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
				if errors.Is(err, kerr.UnknownTopicOrPartition) {
					continue
				}
				return nil, fmt.Errorf("cli: describe topic %s: %w", name, err)
			}
			d := descs[name]
			if d == nil {
				d = &topicDescription{Topic: name}
				if rt.TopicID != ([16]byte{}) {
					d.TopicID = topicIDString(rt.TopicID)
				}
				descs[name] = d
			}
			for _, p := range rt.Partitions {
				d.Partitions = append(d.Partitions, partitionDescription{
					Partition: p.Partition, Leader: p.LeaderID,
					Replicas: nonNil(p.Replicas), ISR: nonNil(p.ISR),
					ELR: nonNil(p.EligibleLeaderReplicas), LastKnownELR: nonNil(p.LastKnownELR),
					elrKnown: true,
				})
			}
		}
		if resp.NextCursor == nil {
			return descs, nil
		}
		req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{
			Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition,
		}
	}
}

func describeFromMetadata(ctx context.Context, adm *kadm.Client, topics []string) (map[string]*topicDescription, error) {
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("cli: metadata: %w", err)
	}
	descs := map[string]*topicDescription{}
	for _, td := range md.Topics {
		if errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			continue
		}
		if td.Err != nil {
			return nil, fmt.Errorf("cli: describe topic %s: %w", td.Topic, td.Err)
		}
		d := &topicDescription{Topic: td.Topic}
		if td.ID != (kadm.TopicID{}) {
			d.TopicID = topicIDString(td.ID)
		}
		for _, p := range td.Partitions {
			d.Partitions = append(d.Partitions, partitionDescription{
				Partition: p.Partition, Leader: p.Leader,
				Replicas: nonNil(p.Replicas), ISR: nonNil(p.ISR),
			})
		}
		descs[td.Topic] = d
	}
	return descs, nil
}

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}

// ---- delete ----

func topicDeleteCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:      "delete",
		Usage:     "delete topics",
		ArgsUsage: "TOPIC...",
		Flags:     clientFlags(timeoutFlag()),
		Action: func(c *ucli.Context) error {
			format, err := argsFormat(c, 1, -1, "at least one TOPIC")
			if err != nil {
				return err
			}
			return runAdmin(c, func(ctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
				resps, err := adm.DeleteTopics(ctx, c.Args().Slice()...)
				if err != nil {
					return fmt.Errorf("cli: delete topics: %w", err)
				}
				var deleted []string
				var firstErr error
				for _, t := range c.Args().Slice() {
					r, ok := resps[t]
					if !ok {
						firstErr = cmpErr(firstErr, fmt.Errorf("cli: delete topic %s: no response", t))
						continue
					}
					if errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
						// Said as every other command says it, not with
						// the code's "does not host this topic-partition".
						firstErr = cmpErr(firstErr, fmt.Errorf("%w: %s", ErrUnknownTopic, t))
						continue
					}
					if err := kafkaErr("delete topic "+t, r.Err, r.ErrMessage); err != nil {
						firstErr = cmpErr(firstErr, err)
						continue
					}
					deleted = append(deleted, t)
				}
				err = printResult(env.Stdout, format, map[string][]string{"deleted": nonNilStrings(deleted)}, func(w io.Writer) {
					for _, t := range deleted {
						fmt.Fprintf(w, "Deleted topic %s.\n", t)
					}
				})
				return cmpErr(err, firstErr)
			})
		},
	}
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ---- add-partitions ----

func topicAddPartitionsCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name: "add-partitions",
		Usage: "add partitions to a topic: --total N makes N in all (kafka-topics --alter --partitions N), " +
			"--add N adds N more (rpk topic add-partitions -n N)",
		ArgsUsage: "TOPIC",
		Flags: clientFlags(timeoutFlag(),
			&ucli.IntFlag{Name: "total", Aliases: []string{"partitions"}, Usage: "the new total number of partitions"},
			&ucli.IntFlag{Name: "add", Usage: "how many partitions to add to those the topic has"},
			// -n means "add" to rpk users and "total" to those who used
			// this command before: refused with a pointer to the two
			// explicit forms rather than guessed.
			&ucli.IntFlag{Name: "num", Aliases: []string{"n"}, Hidden: true},
		),
		Action: func(c *ucli.Context) error {
			format, err := argsFormat(c, 1, 1, "one TOPIC")
			if err != nil {
				return err
			}
			if c.IsSet("num") {
				return fmt.Errorf("%w: -n/--num is ambiguous (rpk adds that many, kafka-topics --partitions sets the total): use --total N or --add N", ErrUsage)
			}
			total, add := c.IsSet("total"), c.IsSet("add")
			if total == add {
				return fmt.Errorf("%w: give one of --total N (the new partition count) or --add N (partitions to add)", ErrUsage)
			}
			n := c.Int("total")
			if add {
				n = c.Int("add")
			}
			if n < 1 || n > math.MaxInt32 {
				return fmt.Errorf("%w: %d partitions: want 1..%d", ErrUsage, n, math.MaxInt32)
			}
			topic := c.Args().First()
			return runAdmin(c, func(ctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
				var resps kadm.CreatePartitionsResponses
				var err error
				if add {
					resps, err = adm.CreatePartitions(ctx, n, topic)
				} else {
					resps, err = adm.UpdatePartitions(ctx, n, topic)
				}
				if err != nil {
					return fmt.Errorf("cli: add partitions: %w", err)
				}
				r, err := resps.On(topic, nil)
				if err := cmpErr(err, kafkaErr("add partitions to "+topic, r.Err, r.ErrMessage)); err != nil {
					return err
				}
				// The total, as the broker's metadata now has it.
				md, err := adm.Metadata(ctx, topic)
				if err != nil {
					return fmt.Errorf("cli: metadata: %w", err)
				}
				count := len(md.Topics[topic].Partitions)
				return printResult(env.Stdout, format, map[string]any{"topic": topic, "partitions": count}, func(w io.Writer) {
					fmt.Fprintf(w, "Topic %s now has %d partitions.\n", topic, count)
				})
			})
		},
	}
}

// ---- alter-config ----

func topicAlterConfigCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:      "alter-config",
		Usage:     "set or delete topic configs (IncrementalAlterConfigs, as kafka-configs --alter)",
		ArgsUsage: "TOPIC",
		Flags: clientFlags(timeoutFlag(),
			&ucli.StringSliceFlag{Name: "set", Aliases: []string{"s"}, Usage: "config k=v to set (repeatable)"},
			&ucli.StringSliceFlag{Name: "delete", Aliases: []string{"d"}, Usage: "config k to delete, back to its default (repeatable)"},
		),
		Action: func(c *ucli.Context) error {
			format, err := argsFormat(c, 1, 1, "one TOPIC")
			if err != nil {
				return err
			}
			alters, err := alterConfigs(c.StringSlice("set"), c.StringSlice("delete"))
			if err != nil {
				return err
			}
			topic := c.Args().First()
			return runAdmin(c, func(ctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
				resps, err := adm.AlterTopicConfigs(ctx, alters, topic)
				if err != nil {
					return fmt.Errorf("cli: alter topic configs: %w", err)
				}
				r, err := resps.On(topic, nil)
				if err := cmpErr(err, kafkaErr("alter configs of "+topic, r.Err, r.ErrMessage)); err != nil {
					return err
				}
				return printResult(env.Stdout, format, map[string]any{"topic": topic, "altered": len(alters)}, func(w io.Writer) {
					// kafka-configs --alter's line.
					fmt.Fprintf(w, "Completed updating config for topic %s.\n", topic)
				})
			})
		},
	}
}

func alterConfigs(set, del []string) ([]kadm.AlterConfig, error) {
	if len(set)+len(del) == 0 {
		return nil, fmt.Errorf("%w: alter-config needs --set k=v or --delete k", ErrUsage)
	}
	var alters []kadm.AlterConfig
	for _, kv := range set {
		k, v, err := splitKV(kv, "--set")
		if err != nil {
			return nil, err
		}
		alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	for _, k := range del {
		if k == "" || strings.Contains(k, "=") {
			return nil, fmt.Errorf("%w: --delete %q: want a config name", ErrUsage, k)
		}
		alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	return alters, nil
}

// underReplicated is kafka-topics' rule: the ISR is smaller than the
// replication factor, which during a reassignment counts the original
// replicas only (the replicas less those being added).
func (p partitionDescription) underReplicated() bool {
	return len(p.ISR) < len(p.Replicas)-len(p.AddingReplicas)
}

type reassigningReplicas struct {
	adding, removing []int32
}

// listReassignments lists the ongoing reassignments of set (nil: of
// every partition). Callers treat an error as "none known": a cluster
// that cannot list them still describes its partitions.
func listReassignments(ctx context.Context, cl *kgo.Client, set kadm.TopicsSet) (map[topicPartition]reassigningReplicas, error) {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	for _, t := range set.IntoList() {
		rt := kmsg.NewListPartitionReassignmentsRequestTopic()
		rt.Topic, rt.Partitions = t.Topic, t.Partitions
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	out := map[topicPartition]reassigningReplicas{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[topicPartition{t.Topic, p.Partition}] = reassigningReplicas{adding: nonNil(p.AddingReplicas), removing: nonNil(p.RemovingReplicas)}
		}
	}
	return out, nil
}
