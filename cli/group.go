package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"
)

var (
	// ErrUnknownGroup: a named group does not exist.
	ErrUnknownGroup = errors.New("cli: unknown group")
	// ErrGroupActive: group seek --execute on a group that has members.
	ErrGroupActive = errors.New("cli: group is active")
)

// groupError is an error whose message names the group in a sentence of its
// own, and which still matches its sentinel with errors.Is.
type groupError struct {
	sentinel error
	msg      string
}

func (e *groupError) Error() string { return e.msg }
func (e *groupError) Unwrap() error { return e.sentinel }

func unknownGroup(group string) error {
	return &groupError{ErrUnknownGroup, fmt.Sprintf("cli: group %s does not exist", group)}
}

// Group types as ListGroups v5 reports them (KIP-848): "classic" groups
// rebalance with JoinGroup/SyncGroup, "consumer" groups with
// ConsumerGroupHeartbeat and an assignor on the broker.
const (
	groupTypeClassic  = "classic"
	groupTypeConsumer = "consumer"
)

// groupStates are the states Kafka's groups can be in, classic and
// consumer; --state takes them in any case, as kafka-consumer-groups does.
var groupStates = []string{
	"Stable", "PreparingRebalance", "CompletingRebalance", "Empty", "Dead", // classic
	"Assigning", "Reconciling", // consumer
	"Unknown",
}

func groupCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:    "group",
		Aliases: []string{"groups"},
		Usage:   "list, describe, delete consumer groups, seek and delete their offsets (kafka-consumer-groups)",
		Subcommands: []*ucli.Command{
			groupListCommand(env),
			groupDescribeCommand(env),
			groupDeleteCommand(env),
			groupSeekCommand(env),
			groupDeleteOffsetsCommand(env),
		},
	}
}

// ---- list ----

func groupListCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:    "list",
		Aliases: []string{"ls"},
		Usage:   "list groups with their type (classic or consumer), protocol type and state",
		Flags: clientFlags(timeoutFlag(),
			&ucli.StringSliceFlag{Name: "state", Usage: "only groups in this state (repeatable; any case): " + strings.Join(groupStates, ", ")},
			&ucli.StringSliceFlag{Name: "type", Usage: "only groups of this type (repeatable): classic or consumer"},
		),
		Action: func(c *ucli.Context) error {
			format, err := argsFormat(c, 0, 0, "no arguments")
			if err != nil {
				return err
			}
			states, err := parseGroupStates(c.StringSlice("state"))
			if err != nil {
				return err
			}
			types := c.StringSlice("type")
			for _, t := range types {
				if t != groupTypeClassic && t != groupTypeConsumer {
					return fmt.Errorf("%w: --type %q: want classic or consumer", ErrUsage, t)
				}
			}
			return runAdmin(c, func(ctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
				listed, err := adm.ListGroupsByType(ctx, types, states...)
				if err != nil {
					return fmt.Errorf("cli: list groups: %w", err)
				}
				return printGroupList(env.Stdout, format, filterListedGroups(listed, states, types))
			})
		},
	}
}

// parseGroupStates checks --state values and returns them in Kafka's
// spelling.
func parseGroupStates(in []string) ([]string, error) {
	var out []string
	for _, s := range in {
		i := slices.IndexFunc(groupStates, func(known string) bool { return strings.EqualFold(known, s) })
		if i < 0 {
			return nil, fmt.Errorf("%w: --state %q: want one of %s", ErrUsage, s, strings.Join(groupStates, ", "))
		}
		out = append(out, groupStates[i])
	}
	return out, nil
}

type listedGroupRow struct {
	Group        string `json:"group"`
	Type         string `json:"type"`
	ProtocolType string `json:"protocol_type"`
	State        string `json:"state"`
	Coordinator  int32  `json:"coordinator"`
}

// listedGroupType is the group's type; a broker below ListGroups v5 does
// not say, and such a broker runs classic groups only.
func listedGroupType(g kadm.ListedGroup) string {
	if g.GroupType == "" {
		return groupTypeClassic
	}
	return g.GroupType
}

// filterListedGroups applies the filters again on the client: a broker
// below ListGroups v4 (states) or v5 (types) ignores them, since the
// request it decodes has no such field.
func filterListedGroups(listed kadm.ListedGroups, states, types []string) []listedGroupRow {
	rows := []listedGroupRow{}
	for _, g := range listed.Sorted() {
		typ := listedGroupType(g)
		if len(states) > 0 && !containsFold(states, g.State) {
			continue
		}
		if len(types) > 0 && !slices.Contains(types, typ) {
			continue
		}
		rows = append(rows, listedGroupRow{Group: g.Group, Type: typ, ProtocolType: g.ProtocolType, State: g.State, Coordinator: g.Coordinator})
	}
	return rows
}

func containsFold(list []string, s string) bool {
	return slices.ContainsFunc(list, func(x string) bool { return strings.EqualFold(x, s) })
}

// printGroupList prints kafka-groups --list's columns (GROUP TYPE
// PROTOCOL) and the STATE that kafka-consumer-groups --list --state adds.
func printGroupList(w io.Writer, format outputFormat, rows []listedGroupRow) error {
	return printResult(w, format, rows, func(w io.Writer) {
		t := newKafkaTable([]string{"GROUP", "TYPE", "PROTOCOL", "STATE"}, []int{15, 10, 10, 0})
		for _, r := range rows {
			t.add(r.Group, r.Type, orDash(r.ProtocolType), r.State)
		}
		t.write(w)
	})
}

// ---- describe ----

func groupDescribeCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:      "describe",
		Usage:     "describe groups as kafka-consumer-groups --describe does",
		ArgsUsage: "GROUP...",
		Description: "The default view has one row per partition the group has committed an offset for or is\n" +
			"assigned: GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID,\n" +
			"then the group's state, member count and TOTAL-LAG, the sum of the LAG column. LOG-END-OFFSET\n" +
			"is the high watermark. As in Kafka, a partition with no committed offset shows CURRENT-OFFSET\n" +
			"and LAG as \"-\" and adds nothing to TOTAL-LAG; a member with no partition shows one row of \"-\".\n" +
			"--members: GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS (with --verbose, ASSIGNMENT).\n" +
			"--state: GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS.\n" +
			"Classic groups are read with DescribeGroups, KIP-848 consumer groups with ConsumerGroupDescribe.",
		Flags: clientFlags(timeoutFlag(),
			&ucli.BoolFlag{Name: "members", Usage: "one row per member"},
			&ucli.BoolFlag{Name: "state", Usage: "one row per group: coordinator, assignment strategy, state, member count"},
			&ucli.BoolFlag{Name: "verbose", Usage: "with --members: add each member's ASSIGNMENT"},
		),
		Action: func(c *ucli.Context) error {
			format, err := argsFormat(c, 1, -1, "at least one GROUP")
			if err != nil {
				return err
			}
			if c.Bool("members") && c.Bool("state") {
				return fmt.Errorf("%w: --members and --state exclude each other", ErrUsage)
			}
			offsetsView := !c.Bool("members") && !c.Bool("state")
			return runAdmin(c, func(ctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
				var descs []*groupDescription
				listed := listGroupsHint(ctx, adm)
				for _, g := range dedupe(c.Args().Slice()) {
					d, err := describeGroup(ctx, adm, listed, g)
					if err != nil {
						return err
					}
					if offsetsView {
						if err := d.fillOffsets(ctx, adm); err != nil {
							return err
						}
					}
					descs = append(descs, d)
				}
				if !c.Bool("state") {
					for _, d := range descs {
						d.warn(env.Stderr)
					}
				}
				return printResult(env.Stdout, format, descs, func(w io.Writer) {
					for i, d := range descs {
						if i > 0 {
							fmt.Fprintln(w)
						}
						switch {
						case c.Bool("members"):
							d.printMembers(w, c.Bool("verbose"))
						case c.Bool("state"):
							d.printState(w)
						default:
							d.printOffsets(w)
						}
					}
				})
			})
		},
	}
}

func dedupe(names []string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// groupDescription is one group, classic or consumer, in the terms of
// kafka-consumer-groups --describe.
type groupDescription struct {
	Group string `json:"group"`
	// Type is classic or consumer (KIP-848).
	Type         string `json:"type"`
	ProtocolType string `json:"protocol_type"`
	State        string `json:"state"`
	// AssignmentStrategy is the classic group's protocol (the client-side
	// assignor), or the consumer group's broker-side assignor.
	AssignmentStrategy string           `json:"assignment_strategy"`
	Coordinator        groupCoordinator `json:"coordinator"`
	Members            []groupMember    `json:"members"`
	// Offsets and TotalLag are filled by the offsets view only (nil
	// otherwise, and absent from the JSON).
	Offsets  []partitionLag `json:"offsets,omitzero"`
	TotalLag *int64         `json:"total_lag,omitempty"`
}

type groupCoordinator struct {
	NodeID int32  `json:"node_id"`
	Host   string `json:"host"`
	Port   int32  `json:"port"`
}

type groupMember struct {
	ConsumerID string            `json:"consumer_id"`
	InstanceID *string           `json:"instance_id"`
	Host       string            `json:"host"`
	ClientID   string            `json:"client_id"`
	Assignment []topicPartitions `json:"assignment"`
}

type topicPartitions struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// partitionLag is one row of the offsets view. Nil offsets are unknown:
// CurrentOffset when the group committed none, LogEndOffset when it could
// not be listed (a deleted topic), Lag when either is.
type partitionLag struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	CurrentOffset *int64 `json:"current_offset"`
	LogEndOffset  *int64 `json:"log_end_offset"`
	Lag           *int64 `json:"lag"`
	// ConsumerID, Host and ClientID are empty for a partition no member
	// is assigned.
	ConsumerID string `json:"consumer_id"`
	Host       string `json:"host"`
	ClientID   string `json:"client_id"`
}

func (m *groupMember) partitionCount() int {
	n := 0
	for _, tp := range m.Assignment {
		n += len(tp.Partitions)
	}
	return n
}

// listGroupsHint lists the groups for their types. It is a hint only: if
// the list fails, the describe that follows reports the broker's trouble
// itself.
func listGroupsHint(ctx context.Context, adm *kadm.Client) kadm.ListedGroups {
	listed, _ := adm.ListGroups(ctx)
	return listed
}

// describeGroup describes one group. The group's type decides the request:
// ListGroups v5 names it in listed; a broker that does not (below v5) gets
// DescribeGroups first, and ConsumerGroupDescribe when DescribeGroups does
// not know the group as a classic one (Kafka 4 answers GROUP_ID_NOT_FOUND
// for a consumer group, older versions the state Dead).
func describeGroup(ctx context.Context, adm *kadm.Client, listed kadm.ListedGroups, group string) (*groupDescription, error) {
	lg, inList := listed[group]
	if inList && lg.GroupType == groupTypeConsumer {
		return describeConsumerGroup(ctx, adm, group)
	}
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("cli: describe group %s: %w", group, err)
	}
	dg, ok := described[group]
	if !ok {
		return nil, fmt.Errorf("cli: describe group %s: no answer from its coordinator", group)
	}
	missing := errors.Is(dg.Err, kerr.GroupIDNotFound) || (dg.Err == nil && dg.State == "Dead" && len(dg.Members) == 0)
	switch {
	case missing && lg.GroupType == "":
		return describeMaybeConsumerGroup(ctx, adm, group)
	case missing:
		return nil, unknownGroup(group)
	case dg.Err != nil:
		return nil, kafkaErr("describe group "+group, dg.Err, dg.ErrMessage)
	}
	return classicDescription(dg), nil
}

// describeMaybeConsumerGroup asks for a consumer group where the broker
// did not say the type, if any broker serves ConsumerGroupDescribe at all.
func describeMaybeConsumerGroup(ctx context.Context, adm *kadm.Client, group string) (*groupDescription, error) {
	versions, err := adm.ApiVersions(ctx)
	if err != nil {
		return nil, fmt.Errorf("cli: api versions: %w", err)
	}
	served := false
	versions.Each(func(v kadm.BrokerApiVersions) {
		if _, ok := v.KeyMaxVersion(int16(kmsg.ConsumerGroupDescribe)); ok {
			served = true
		}
	})
	if !served {
		return nil, unknownGroup(group)
	}
	return describeConsumerGroup(ctx, adm, group)
}

func describeConsumerGroup(ctx context.Context, adm *kadm.Client, group string) (*groupDescription, error) {
	described, err := adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("cli: describe group %s: %w", group, err)
	}
	dg, ok := described[group]
	switch {
	case !ok:
		return nil, fmt.Errorf("cli: describe group %s: no answer from its coordinator", group)
	case errors.Is(dg.Err, kerr.GroupIDNotFound):
		return nil, unknownGroup(group)
	case dg.Err != nil:
		return nil, kafkaErr("describe group "+group, dg.Err, "")
	}
	d := &groupDescription{
		Group: group, Type: groupTypeConsumer, ProtocolType: "consumer", State: dg.State,
		AssignmentStrategy: dg.AssignorName, Coordinator: coordinatorOf(dg.Coordinator), Members: []groupMember{},
	}
	for _, m := range dg.Members {
		d.Members = append(d.Members, groupMember{
			ConsumerID: m.MemberID, InstanceID: m.InstanceID, Host: m.ClientHost, ClientID: m.ClientID,
			Assignment: sortedAssignment(m.Assignment),
		})
	}
	return d, nil
}

func classicDescription(dg kadm.DescribedGroup) *groupDescription {
	d := &groupDescription{
		Group: dg.Group, Type: groupTypeClassic, ProtocolType: dg.ProtocolType, State: dg.State,
		AssignmentStrategy: dg.Protocol, Coordinator: coordinatorOf(dg.Coordinator), Members: []groupMember{},
	}
	for _, m := range dg.Members {
		gm := groupMember{ConsumerID: m.MemberID, InstanceID: m.InstanceID, Host: m.ClientHost, ClientID: m.ClientID,
			Assignment: []topicPartitions{}}
		// kadm decodes the assignment as kmsg.ConsumerMemberAssignment
		// when the protocol type is "consumer"; other protocol types
		// (connect) carry no topic partitions.
		if a, ok := m.Assigned.AsConsumer(); ok {
			set := make(kadm.TopicsSet)
			for _, t := range a.Topics {
				set.Add(t.Topic, t.Partitions...)
			}
			gm.Assignment = sortedAssignment(set)
		}
		d.Members = append(d.Members, gm)
	}
	return d
}

func coordinatorOf(b kadm.BrokerDetail) groupCoordinator {
	return groupCoordinator{NodeID: b.NodeID, Host: b.Host, Port: b.Port}
}

func sortedAssignment(set kadm.TopicsSet) []topicPartitions {
	out := []topicPartitions{}
	for _, tp := range set.Sorted() {
		ps := slices.Clone(tp.Partitions)
		slices.Sort(ps)
		out = append(out, topicPartitions{Topic: tp.Topic, Partitions: ps})
	}
	return out
}

// committedOffsets fetches the group's committed offsets, leaving out
// partitions without one (-1). A group the coordinator does not know has
// none.
func committedOffsets(ctx context.Context, adm *kadm.Client, group string) (kadm.Offsets, error) {
	resps, err := adm.FetchOffsets(ctx, group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return kadm.Offsets{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cli: fetch offsets of group %s: %w", group, err)
	}
	var ferr error
	resps.EachError(func(o kadm.OffsetResponse) {
		if ferr == nil {
			ferr = fmt.Errorf("cli: fetch offset of group %s for %s/%d: %w", group, o.Topic, o.Partition, o.Err)
		}
	})
	if ferr != nil {
		return nil, ferr
	}
	offsets := resps.Offsets()
	offsets.KeepFunc(func(o kadm.Offset) bool { return o.At >= 0 })
	return offsets, nil
}

// fillOffsets computes the offsets view: every partition assigned to a
// member or committed by the group, its committed offset, the high
// watermark and the lag between them.
func (d *groupDescription) fillOffsets(ctx context.Context, adm *kadm.Client) error {
	committed, err := committedOffsets(ctx, adm, d.Group)
	if err != nil {
		return err
	}
	owner := map[kadm.Partition]*groupMember{}
	all := committed.TopicsSet()
	for i := range d.Members {
		m := &d.Members[i]
		for _, tp := range m.Assignment {
			all.Add(tp.Topic, tp.Partitions...)
			for _, p := range tp.Partitions {
				owner[kadm.Partition{Topic: tp.Topic, Partition: p}] = m
			}
		}
	}
	var ends kadm.ListedOffsets
	if topics := all.Topics(); len(topics) > 0 {
		ends, err = adm.ListEndOffsets(ctx, topics...)
		if err != nil {
			return fmt.Errorf("cli: list end offsets: %w", err)
		}
	}
	d.Offsets = []partitionLag{}
	var total int64
	all.Each(func(t string, p int32) {
		row := partitionLag{Topic: t, Partition: p}
		if o, ok := committed.Lookup(t, p); ok {
			row.CurrentOffset = ptr(o.At)
		}
		if lo, ok := ends.Lookup(t, p); ok && lo.Err == nil && lo.Offset >= 0 {
			row.LogEndOffset = ptr(lo.Offset)
		}
		if row.CurrentOffset != nil && row.LogEndOffset != nil {
			row.Lag = ptr(*row.LogEndOffset - *row.CurrentOffset)
			total += *row.Lag
		}
		if m := owner[kadm.Partition{Topic: t, Partition: p}]; m != nil {
			row.ConsumerID, row.Host, row.ClientID = m.ConsumerID, m.Host, m.ClientID
		}
		d.Offsets = append(d.Offsets, row)
	})
	sort.Slice(d.Offsets, func(i, j int) bool {
		a, b := d.Offsets[i], d.Offsets[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	d.TotalLag = &total
	return nil
}

func ptr[T any](v T) *T { return &v }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func dashOrInt(p *int64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatInt(*p, 10)
}

// warn says what kafka-consumer-groups says before a table about an empty
// or rebalancing group; on stderr, so that stdout holds only the table.
func (d *groupDescription) warn(w io.Writer) {
	switch d.State {
	case "Empty":
		fmt.Fprintf(w, "Consumer group '%s' has no active members.\n", d.Group)
	case "PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling":
		fmt.Fprintf(w, "Warning: Consumer group '%s' is rebalancing.\n", d.Group)
	}
}

// printOffsets prints kafka-consumer-groups --describe's offsets table,
// then the summary line.
func (d *groupDescription) printOffsets(w io.Writer) {
	t := newKafkaTable(
		[]string{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"},
		[]int{15, 15, 10, 15, 15, 15, 15, 15, 0})
	for _, r := range d.Offsets {
		t.add(d.Group, r.Topic, strconv.Itoa(int(r.Partition)), dashOrInt(r.CurrentOffset), dashOrInt(r.LogEndOffset),
			dashOrInt(r.Lag), orDash(r.ConsumerID), orDash(r.Host), orDash(r.ClientID))
	}
	// Kafka lists a member without partitions as a row of dashes.
	for _, m := range d.Members {
		if m.partitionCount() == 0 {
			t.add(d.Group, "-", "-", "-", "-", "-", orDash(m.ConsumerID), orDash(m.Host), orDash(m.ClientID))
		}
	}
	t.write(w)
	var total int64
	if d.TotalLag != nil {
		total = *d.TotalLag
	}
	fmt.Fprintf(w, "\nGroup %s: state %s, %d members, TOTAL-LAG %d\n", d.Group, d.State, len(d.Members), total)
}

func (d *groupDescription) printMembers(w io.Writer, verbose bool) {
	header := []string{"GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"}
	widths := []int{15, 15, 15, 15, 0}
	if verbose {
		header, widths = append(header, "ASSIGNMENT"), []int{15, 15, 15, 15, 15, 0}
	}
	t := newKafkaTable(header, widths)
	for _, m := range d.Members {
		row := []string{d.Group, orDash(m.ConsumerID), orDash(m.Host), orDash(m.ClientID), strconv.Itoa(m.partitionCount())}
		if verbose {
			row = append(row, assignmentString(m.Assignment))
		}
		t.add(row...)
	}
	t.write(w)
}

// assignmentString is Kafka's: "t1(0,1), t2(3)", or "-".
func assignmentString(a []topicPartitions) string {
	var parts []string
	for _, tp := range a {
		if len(tp.Partitions) == 0 {
			continue
		}
		ps := make([]string, len(tp.Partitions))
		for i, p := range tp.Partitions {
			ps[i] = strconv.Itoa(int(p))
		}
		parts = append(parts, tp.Topic+"("+strings.Join(ps, ",")+")")
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func (d *groupDescription) printState(w io.Writer) {
	t := newKafkaTable([]string{"GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"}, []int{15, 25, 20, 20, 0})
	c := d.Coordinator
	// Kafka's layout: "host:port  (id)".
	coordinator := fmt.Sprintf("%s:%d  (%d)", c.Host, c.Port, c.NodeID)
	t.add(d.Group, coordinator, orDash(d.AssignmentStrategy), d.State, strconv.Itoa(len(d.Members)))
	t.write(w)
}

// ---- delete ----

func groupDeleteCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:      "delete",
		Usage:     "delete groups and their committed offsets (only groups without members)",
		ArgsUsage: "GROUP...",
		Flags:     clientFlags(timeoutFlag()),
		Action: func(c *ucli.Context) error {
			format, err := argsFormat(c, 1, -1, "at least one GROUP")
			if err != nil {
				return err
			}
			groups := dedupe(c.Args().Slice())
			return runAdmin(c, func(ctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
				resps, err := adm.DeleteGroups(ctx, groups...)
				if err != nil {
					return fmt.Errorf("cli: delete groups: %w", err)
				}
				return printDeleted(env.Stdout, format, groups, resps)
			})
		},
	}
}

type deletedGroup struct {
	Group string `json:"group"`
	// Error is empty when the group was deleted.
	Error string `json:"error"`
}

// deleteErrorText words the errors an operator can act on; others keep
// Kafka's own text.
func deleteErrorText(err error, msg string) string {
	switch {
	case errors.Is(err, kerr.NonEmptyGroup):
		return "group is not empty: stop its consumers first"
	case errors.Is(err, kerr.GroupIDNotFound):
		return "group does not exist"
	default:
		return kafkaReason(err, msg)
	}
}

func printDeleted(w io.Writer, format outputFormat, groups []string, resps kadm.DeleteGroupResponses) error {
	rows := make([]deletedGroup, 0, len(groups))
	failed := 0
	for _, g := range groups {
		row := deletedGroup{Group: g}
		switch r, ok := resps[g]; {
		case !ok:
			row.Error = "no answer from its coordinator"
		case r.Err != nil:
			row.Error = deleteErrorText(r.Err, r.ErrMessage)
		}
		if row.Error != "" {
			failed++
		}
		rows = append(rows, row)
	}
	err := printResult(w, format, rows, func(w io.Writer) {
		for _, r := range rows {
			if r.Error == "" {
				fmt.Fprintf(w, "%s: deleted\n", r.Group)
			} else {
				fmt.Fprintf(w, "%s: %s\n", r.Group, r.Error)
			}
		}
	})
	if err == nil && failed > 0 {
		err = fmt.Errorf("cli: delete groups: %d of %d not deleted", failed, len(groups))
	}
	return err
}

// ---- tables ----

// kafkaTable prints rows the way Kafka's admin tools do: every column but
// the last left-aligned and padded to the wider of its minimum and its
// widest cell, columns one space apart.
type kafkaTable struct {
	rows   [][]string
	widths []int
}

func newKafkaTable(header []string, minWidths []int) *kafkaTable {
	t := &kafkaTable{widths: slices.Clone(minWidths)}
	t.add(header...)
	return t
}

func (t *kafkaTable) add(cells ...string) {
	if len(cells) != len(t.widths) {
		panic(fmt.Sprintf("kafkaTable: row of %d cells in a table of %d columns", len(cells), len(t.widths)))
	}
	for i, c := range cells {
		t.widths[i] = max(t.widths[i], len(c))
	}
	t.rows = append(t.rows, cells)
}

func (t *kafkaTable) write(w io.Writer) {
	var b strings.Builder
	for _, row := range t.rows {
		for i, c := range row {
			if i == len(row)-1 {
				b.WriteString(c)
				break
			}
			fmt.Fprintf(&b, "%-*s ", t.widths[i], c)
		}
		b.WriteByte('\n')
	}
	io.WriteString(w, b.String())
}
