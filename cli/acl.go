package cli

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"
)

// `wren acl`: ACLs (KIP-11, KIP-290) through CreateAcls, DescribeAcls and
// DeleteAcls (kadm), with kafka-acls' flags: principals allowed or denied
// from hosts, operations, and the resources (topics, groups, the
// cluster, transactional ids) as literal names or prefixes. kadm builds
// every combination: principals x hosts x resources x operations.

func aclCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:  "acl",
		Usage: "add, list and remove ACLs (kafka-acls)",
		Subcommands: []*ucli.Command{
			aclAddCommand(env),
			aclListCommand(env),
			aclRemoveCommand(env),
		},
	}
}

// aclResourceFlags name the resources, as kafka-acls does.
func aclResourceFlags(patternDefault, patternUsage string) []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringSliceFlag{Name: "topic", Usage: "a topic (repeat for more; * is every topic)"},
		&ucli.StringSliceFlag{Name: "group", Usage: "a consumer group (repeat for more; * is every group)"},
		&ucli.BoolFlag{Name: "cluster", Usage: "the cluster (kafka-cluster)"},
		&ucli.StringSliceFlag{Name: "transactional-id", Usage: "a transactional id (repeat for more; * is every one)"},
		&ucli.StringFlag{Name: "resource-pattern-type", Value: patternDefault, Usage: patternUsage},
	}
}

// aclPrincipalFlags are the principals, hosts and operations.
func aclPrincipalFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringSliceFlag{Name: "allow-principal", Usage: "a principal to allow, Type:name (User:alice; User:* is everyone)"},
		&ucli.StringSliceFlag{Name: "deny-principal", Usage: "a principal to deny, Type:name"},
		&ucli.StringSliceFlag{Name: "allow-host", Usage: "an IP address the allowed principals connect from (default: *, any)"},
		&ucli.StringSliceFlag{Name: "deny-host", Usage: "an IP address the denied principals connect from (default: *, any)"},
		&ucli.StringSliceFlag{Name: "host", Usage: "--allow-host and --deny-host at once"},
		&ucli.StringSliceFlag{Name: "operation", Usage: "an operation: All, Read, Write, Create, Delete, Alter, Describe, ClusterAction, " +
			"DescribeConfigs, AlterConfigs, IdempotentWrite (repeat for more)"},
	}
}

// aclPattern reads --resource-pattern-type; filter allows ANY and MATCH.
func aclPattern(c *ucli.Context, filter bool) (kadm.ACLPattern, error) {
	s := c.String("resource-pattern-type")
	p, err := kmsg.ParseACLResourcePatternType(s)
	ok := err == nil && (p == kadm.ACLPatternLiteral || p == kadm.ACLPatternPrefixed ||
		filter && (p == kadm.ACLPatternAny || p == kadm.ACLPatternMatch))
	if !ok {
		want := "literal or prefixed"
		if filter {
			want = "any, match, literal or prefixed"
		}
		return 0, fmt.Errorf("%w: --resource-pattern-type %q: want %s", ErrUsage, s, want)
	}
	return p, nil
}

// aclOperations reads --operation; none is every operation for a filter
// and an error for add.
func aclOperations(c *ucli.Context, filter bool) ([]kadm.ACLOperation, error) {
	var ops []kadm.ACLOperation
	for _, s := range c.StringSlice("operation") {
		op, err := kmsg.ParseACLOperation(s)
		if err != nil || op == kmsg.ACLOperationAny || op > kmsg.ACLOperationIdempotentWrite {
			return nil, fmt.Errorf("%w: --operation %q: want All, Read, Write, Create, Delete, Alter, Describe, ClusterAction, "+
				"DescribeConfigs, AlterConfigs or IdempotentWrite", ErrUsage, s)
		}
		ops = append(ops, op)
	}
	if len(ops) == 0 && !filter {
		return nil, fmt.Errorf("%w: no --operation", ErrUsage)
	}
	return ops, nil
}

// aclResources sets the builder's resources from the flags; false when
// none is named.
func aclResources(c *ucli.Context, b *kadm.ACLBuilder) bool {
	topics, groups, txns := c.StringSlice("topic"), c.StringSlice("group"), c.StringSlice("transactional-id")
	b.MaybeTopics(topics...).MaybeGroups(groups...).MaybeTransactionalIDs(txns...).MaybeClusters(c.Bool("cluster"))
	return len(topics)+len(groups)+len(txns) > 0 || c.Bool("cluster")
}

// aclHosts are --allow-host or --deny-host with --host.
func aclHosts(c *ucli.Context, flag string) []string {
	return append(c.StringSlice(flag), c.StringSlice("host")...)
}

// aclEntry is one ACL as `wren acl` prints it.
type aclEntry struct {
	ResourceType string `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	PatternType  string `json:"pattern_type"`
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission"`
}

func (e aclEntry) String() string {
	return fmt.Sprintf("%s\t%s from %s\t%s\t%s %s (%s)", e.Permission, e.Principal, e.Host, e.Operation, e.ResourceType, e.ResourceName, e.PatternType)
}

func printACLs(w io.Writer, format outputFormat, list []aclEntry) error {
	sort.Slice(list, func(i, j int) bool { return list[i].String() < list[j].String() })
	return printResult(w, format, list, func(w io.Writer) {
		for _, e := range list {
			fmt.Fprintln(w, e)
		}
	})
}

// ---- add ----

func aclAddCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:  "add",
		Usage: "add ACLs: every principal x host x resource x operation given",
		Description: "An ACL that exists already is kept as it is. Example: wren acl add --allow-principal User:alice " +
			"--operation Read --operation Write --topic orders --resource-pattern-type prefixed",
		Flags: clientFlags(append(append([]ucli.Flag{timeoutFlag()}, aclPrincipalFlags()...),
			aclResourceFlags("literal", "literal or prefixed: the names are names or prefixes")...)...),
		Action: func(c *ucli.Context) error {
			format, err := argsFormat(c, 0, 0, "no arguments (flags only)")
			if err != nil {
				return err
			}
			pattern, err := aclPattern(c, false)
			if err != nil {
				return err
			}
			ops, err := aclOperations(c, false)
			if err != nil {
				return err
			}
			allow, deny := c.StringSlice("allow-principal"), c.StringSlice("deny-principal")
			if len(allow)+len(deny) == 0 {
				return fmt.Errorf("%w: no --allow-principal or --deny-principal", ErrUsage)
			}
			b := kadm.NewACLs().MaybeAllow(allow...).MaybeAllowHosts(aclHosts(c, "allow-host")...).
				MaybeDeny(deny...).MaybeDenyHosts(aclHosts(c, "deny-host")...).ResourcePatternType(pattern).Operations(ops...)
			if !aclResources(c, b) {
				return fmt.Errorf("%w: no resource: give --topic, --group, --cluster or --transactional-id", ErrUsage)
			}
			return runAdmin(c, func(ctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
				res, err := adm.CreateACLs(ctx, b)
				if err != nil {
					return fmt.Errorf("cli: add ACLs: %w", err)
				}
				var firstErr error
				added := []aclEntry{}
				for _, r := range res {
					e := aclEntry{r.Type.String(), r.Name, r.Pattern.String(), r.Principal, r.Host, r.Operation.String(), r.Permission.String()}
					if err := kafkaErr("add ACL "+e.String(), r.Err, r.ErrMessage); err != nil {
						firstErr = cmpErr(firstErr, err)
						continue
					}
					added = append(added, e)
				}
				return cmpErr(firstErr, printACLs(env.Stdout, format, added))
			})
		},
	}
}

// aclFilter builds the filter of list and remove: the principals given
// (allowed or denied), else any; the resources given, else any; the
// operations given, else any.
func aclFilter(c *ucli.Context) (*kadm.ACLBuilder, error) {
	pattern, err := aclPattern(c, true)
	if err != nil {
		return nil, err
	}
	ops, err := aclOperations(c, true)
	if err != nil {
		return nil, err
	}
	principals := append(c.StringSlice("principal"), append(c.StringSlice("allow-principal"), c.StringSlice("deny-principal")...)...)
	b := kadm.NewACLs().ResourcePatternType(pattern).Operations(ops...)
	switch {
	case len(c.StringSlice("allow-principal"))+len(c.StringSlice("deny-principal")) > 0:
		b.MaybeAllow(c.StringSlice("allow-principal")...).MaybeDeny(c.StringSlice("deny-principal")...)
	case len(principals) > 0:
		b.Allow(principals...).Deny(principals...)
	default:
		b.Allow().Deny()
	}
	b.AllowHosts(aclHosts(c, "allow-host")...).DenyHosts(aclHosts(c, "deny-host")...)
	if !aclResources(c, b) {
		b.AnyResource()
	}
	return b, nil
}

// ---- list ----

func aclListCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:    "list",
		Aliases: []string{"ls"},
		Usage:   "list ACLs (every one, or those the flags select)",
		Flags: clientFlags(append(append([]ucli.Flag{timeoutFlag(),
			&ucli.StringSliceFlag{Name: "principal", Usage: "only this principal's ACLs, allowed or denied (repeat for more)"}},
			aclPrincipalFlags()...),
			aclResourceFlags("any", "any, match (the ACLs that apply to the named resources), literal or prefixed")...)...),
		Action: func(c *ucli.Context) error {
			format, err := argsFormat(c, 0, 0, "no arguments (flags only)")
			if err != nil {
				return err
			}
			b, err := aclFilter(c)
			if err != nil {
				return err
			}
			return runAdmin(c, func(ctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
				res, err := adm.DescribeACLs(ctx, b)
				if err != nil {
					return fmt.Errorf("cli: list ACLs: %w", err)
				}
				var firstErr error
				seen := map[aclEntry]bool{}
				list := []aclEntry{}
				for _, r := range res {
					if err := kafkaErr("list ACLs", r.Err, r.ErrMessage); err != nil {
						firstErr = cmpErr(firstErr, err)
						continue
					}
					for _, d := range r.Described {
						e := aclEntry{d.Type.String(), d.Name, d.Pattern.String(), d.Principal, d.Host, d.Operation.String(), d.Permission.String()}
						if !seen[e] {
							seen[e] = true
							list = append(list, e)
						}
					}
				}
				return cmpErr(firstErr, printACLs(env.Stdout, format, list))
			})
		},
	}
}

// ---- remove ----

func aclRemoveCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:    "remove",
		Aliases: []string{"rm"},
		Usage:   "remove the ACLs the flags select, and list them",
		Description: "At least one resource must be named. Without --allow-principal, --deny-principal or --principal the " +
			"ACLs of every principal on those resources go; without --operation, of every operation.",
		Flags: clientFlags(append(append([]ucli.Flag{timeoutFlag(),
			&ucli.StringSliceFlag{Name: "principal", Usage: "only this principal's ACLs, allowed or denied (repeat for more)"}},
			aclPrincipalFlags()...),
			aclResourceFlags("literal", "any, match, literal or prefixed")...)...),
		Action: func(c *ucli.Context) error {
			format, err := argsFormat(c, 0, 0, "no arguments (flags only)")
			if err != nil {
				return err
			}
			b, err := aclFilter(c)
			if err != nil {
				return err
			}
			if len(c.StringSlice("topic"))+len(c.StringSlice("group"))+len(c.StringSlice("transactional-id")) == 0 && !c.Bool("cluster") {
				return fmt.Errorf("%w: no resource: give --topic, --group, --cluster or --transactional-id", ErrUsage)
			}
			return runAdmin(c, func(ctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
				res, err := adm.DeleteACLs(ctx, b)
				if err != nil {
					return fmt.Errorf("cli: remove ACLs: %w", err)
				}
				var firstErr error
				seen := map[aclEntry]bool{}
				removed := []aclEntry{}
				for _, r := range res {
					if err := kafkaErr("remove ACLs", r.Err, r.ErrMessage); err != nil {
						firstErr = cmpErr(firstErr, err)
						continue
					}
					for _, d := range r.Deleted {
						e := aclEntry{d.Type.String(), d.Name, d.Pattern.String(), d.Principal, d.Host, d.Operation.String(), d.Permission.String()}
						if err := kafkaErr("remove ACL "+e.String(), d.Err, d.ErrMessage); err != nil {
							firstErr = cmpErr(firstErr, err)
							continue
						}
						if !seen[e] {
							seen[e] = true
							removed = append(removed, e)
						}
					}
				}
				return cmpErr(firstErr, printACLs(env.Stdout, format, removed))
			})
		},
	}
}
