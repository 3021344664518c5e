package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	ucli "github.com/urfave/cli/v2"

	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/internal/health"
)

// uplinkWatchInterval is how often `uplink status -w` looks again.
const uplinkWatchInterval = 2 * time.Second

func uplinkCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:  "uplink",
		Usage: "inspect, pause and add at run time the links that forward local topics to a central Kafka cluster and pull its topics ([uplink.NAME], or uplink add)",
		Subcommands: []*ucli.Command{
			uplinkStatusCommand(env),
			uplinkPauseCommand(env, true),
			uplinkPauseCommand(env, false),
			uplinkAddCommand(env),
			uplinkRemoveCommand(env),
		},
	}
}

// uplinkPause is what `uplink pause|resume --format json` prints.
type uplinkPause struct {
	Link   string `json:"link"`
	Paused bool   `json:"paused"`
}

// uplinkPauseCommand is `uplink pause NAME` (pause) or `uplink resume
// NAME`: the cluster-wide dynamic broker config uplink.NAME.paused, set
// or deleted, which every node applies to its link.
func uplinkPauseCommand(env Env, pause bool) *ucli.Command {
	name, usage := "resume", "resume a paused link on every node: each reads the far side's tail again and forwards from there"
	if pause {
		name, usage = "pause", "pause a link on every node, until resumed, across restarts: its nodes stop forwarding and close their far-side sessions (the records wait in the local log)"
	}
	return &ucli.Command{
		Name:      name,
		Usage:     usage,
		ArgsUsage: "NAME",
		Flags:     clientFlags(timeoutFlag()),
		Action: func(c *ucli.Context) error {
			link, format, err := uplinkArg(c, false)
			if err != nil {
				return err
			}
			op := kadm.AlterConfig{Op: kadm.DeleteConfig, Name: config.UplinkPausedKey(link)}
			if pause {
				op = kadm.AlterConfig{Op: kadm.SetConfig, Name: config.UplinkPausedKey(link), Value: strPtr("true")}
			}
			if err := alterClusterConfigs(c, name+" uplink "+link, []kadm.AlterConfig{op}); err != nil {
				return err
			}
			return printResult(env.Stdout, format, uplinkPause{Link: link, Paused: pause}, func(w io.Writer) {
				fmt.Fprintf(w, "uplink %s %sd on every node (cluster-wide config %s); `wren uplink status` shows it\n", link, name, config.UplinkPausedKey(link))
			})
		},
	}
}

// uplinkArg is the link's name, the command's one argument (checked as
// a name of a run-time link when checkName), and the output format.
func uplinkArg(c *ucli.Context, checkName bool) (link string, format outputFormat, err error) {
	if format, err = argsFormat(c, 1, 1, "the link's name"); err != nil {
		return "", format, err
	}
	link = c.Args().First()
	if checkName {
		if err := config.CheckUplinkName(link); err != nil {
			return "", format, fmt.Errorf("%w: %v", ErrUsage, err)
		}
	}
	return link, format, nil
}

// alterClusterConfigs makes the incremental changes ops to the
// cluster-wide dynamic broker configs; what names the change in an error.
func alterClusterConfigs(c *ucli.Context, what string, ops []kadm.AlterConfig) error {
	var res kadm.AlterConfigsResponses
	err := runAdmin(c, func(ctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
		var err error
		res, err = adm.AlterBrokerConfigs(ctx, ops)
		return err
	})
	return alterErr(what, res, err)
}

// uplinkChange is what `uplink add|remove --format json` prints.
type uplinkChange struct {
	Link    string            `json:"link"`
	Added   bool              `json:"added"`
	Configs map[string]string `json:"configs,omitempty"`
}

// uplinkAddCommand is `uplink add NAME --far ... --topics ...`: a run-time
// link, the cluster-wide dynamic broker configs uplink.NAME.KEY (KEY a
// key of an [uplink.NAME] table), set in one incremental AlterConfigs
// that also deletes the link's other keys, so that the link is exactly
// what the command says (adding a link again replaces it). Every node
// runs it; the controller checks it as the file's tables are checked.
func uplinkAddCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name: "add",
		Usage: "add a link on every node at run time, kept across restarts (cluster-wide configs uplink.NAME.KEY, the keys of an [uplink.NAME] table); " +
			"a link of the same name in a node's config file wins there. No password is stored: a SASL link reads its password from " +
			"sasl.password.file or WREN_UPLINK_<NAME>_PASSWORD on each node",
		ArgsUsage: "NAME",
		Flags: clientFlags(timeoutFlag(),
			&ucli.StringSliceFlag{Name: "far", Required: true, Usage: "the far cluster's bootstrap servers, host:port (comma-separated or repeated): bootstrap.servers"},
			&ucli.StringSliceFlag{Name: "topics", Usage: "the local topics forwarded, names or regular expressions (comma-separated or repeated): topics; it or --pull-topics is required"},
			&ucli.StringSliceFlag{Name: "pull-topics", Usage: "the far topics pulled into local ones (central to edge), names or regular expressions (comma-separated or repeated): pull.topics; " +
				"the local name is pull.local.topic.prefix (--set) before the far one"},
			&ucli.StringSliceFlag{Name: "set", Usage: "another key of the link, KEY=VALUE (repeat for more; a list is comma-separated), " +
				"as remote.topic.prefix=site-7. or security.protocol=SASL_SSL; keys: " + strings.Join(config.UplinkKeys(), ", ")},
		),
		Action: func(c *ucli.Context) error {
			link, format, err := uplinkArg(c, true)
			if err != nil {
				return err
			}
			values := map[string]string{"bootstrap.servers": strings.Join(c.StringSlice("far"), ",")}
			if ts := c.StringSlice("topics"); len(ts) > 0 {
				values["topics"] = strings.Join(ts, ",")
			}
			if ts := c.StringSlice("pull-topics"); len(ts) > 0 {
				values["pull.topics"] = strings.Join(ts, ",")
			}
			if len(values) == 1 {
				return fmt.Errorf("%w: give the topics to forward (--topics), to pull (--pull-topics), or both", ErrUsage)
			}
			// The flag splits at commas: a piece without '=' goes on
			// the value before it.
			var sets []string
			for _, p := range c.StringSlice("set") {
				if !strings.Contains(p, "=") && len(sets) > 0 {
					sets[len(sets)-1] += "," + p
					continue
				}
				sets = append(sets, p)
			}
			for _, kv := range sets {
				k, v, ok := strings.Cut(kv, "=")
				k = strings.TrimSpace(k)
				switch {
				case !ok || k == "":
					return fmt.Errorf("%w: --set %q: KEY=VALUE", ErrUsage, kv)
				case k == "bootstrap.servers" || k == "topics" || k == "pull.topics":
					return fmt.Errorf("%w: --set %s: give it with --far, --topics or --pull-topics", ErrUsage, k)
				}
				if _, dup := values[k]; dup {
					return fmt.Errorf("%w: --set %s given twice", ErrUsage, k)
				}
				values[k] = v
			}
			var ops []kadm.AlterConfig
			configs := map[string]string{}
			for k, v := range values {
				ops = append(ops, kadm.AlterConfig{Op: kadm.SetConfig, Name: config.UplinkKey(link, k), Value: strPtr(v)})
				configs[config.UplinkKey(link, k)] = v
			}
			for _, k := range config.UplinkKeys() {
				if _, set := values[k]; !set {
					ops = append(ops, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: config.UplinkKey(link, k)})
				}
			}
			sort.Slice(ops, func(i, j int) bool { return ops[i].Name < ops[j].Name })
			if err := alterClusterConfigs(c, "add uplink "+link, ops); err != nil {
				return err
			}
			return printResult(env.Stdout, format, uplinkChange{Link: link, Added: true, Configs: configs}, func(w io.Writer) {
				fmt.Fprintf(w, "uplink %s added on every node (cluster-wide configs uplink.%s.*); `wren uplink status` shows it\n", link, link)
			})
		},
	}
}

// uplinkRemoveCommand is `uplink remove NAME`: the run-time link's keys
// deleted, in one incremental AlterConfigs. Every node stops the link
// and releases what its retention hold kept. A file's link is not
// touched (it is the file's); uplink.NAME.paused stays as it is.
func uplinkRemoveCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name:      "remove",
		Usage:     "remove a link added at run time (uplink add): every node stops it and releases the records its retention hold kept; a link of a config file stays",
		ArgsUsage: "NAME",
		Flags:     clientFlags(timeoutFlag()),
		Action: func(c *ucli.Context) error {
			link, format, err := uplinkArg(c, true)
			if err != nil {
				return err
			}
			var ops []kadm.AlterConfig
			for _, k := range config.UplinkKeys() {
				ops = append(ops, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: config.UplinkKey(link, k)})
			}
			if err := alterClusterConfigs(c, "remove uplink "+link, ops); err != nil {
				return err
			}
			return printResult(env.Stdout, format, uplinkChange{Link: link}, func(w io.Writer) {
				fmt.Fprintf(w, "uplink %s removed on every node (cluster-wide configs uplink.%s.* deleted)\n", link, link)
			})
		},
	}
}

func uplinkStatusCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name: "status",
		Usage: "print each link's state and, per partition, its backlog (records, bytes, age of the oldest record), " +
			"send rate and refusal; every broker is asked (each forwards the partitions it leads) and the answers merged",
		Flags: clientFlags(timeoutFlag(),
			&ucli.DurationFlag{Name: "request-timeout", Value: defaultHealthRequestTimeout,
				Usage: "bound on each request to one broker; a broker that does not answer within it is listed unreachable"},
			&ucli.BoolFlag{Name: "watch", Aliases: []string{"w"}, Usage: "look again every 2s until interrupted, with the catch-up's progress"},
		),
		Action: func(c *ucli.Context) error {
			format, err := argsFormat(c, 0, 0, "no arguments")
			if err != nil {
				return err
			}
			perRequest := c.Duration("request-timeout")
			if perRequest <= 0 {
				return fmt.Errorf("%w: --request-timeout must be positive, got %s", ErrUsage, perRequest)
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			defer cl.Close()
			var prev *uplinkReport
			look := commandStart(c.Context)
			for {
				ctx, cancel := timeoutFrom(c, look)
				r, err := uplinkStatus(ctx, cl, perRequest)
				cancel()
				if err != nil && !c.Bool("watch") {
					return noAnswer(c, cl, err)
				}
				if err != nil {
					printError(env.Stderr, err)
				} else {
					r.progress(prev)
					if err := printResult(env.Stdout, format, r, func(w io.Writer) { printUplinks(w, r) }); err != nil {
						return err
					}
					prev = &r
				}
				if !c.Bool("watch") {
					return nil
				}
				select {
				case <-c.Context.Done():
					return nil
				case <-time.After(uplinkWatchInterval):
				}
				look = time.Now()
			}
		},
	}
}

// uplinkReport is every link as the brokers that run it report it.
type uplinkReport struct {
	At    time.Time    `json:"at"`
	Links []uplinkLink `json:"links"`
	// UnreachableNodes did not answer: their links are missing.
	UnreachableNodes []int32 `json:"nodes_unreachable"`
}

// uplinkLink is one link merged over the nodes that run it.
type uplinkLink struct {
	Name string `json:"link"`
	// Nodes are each node's state of the link (its partitions are in
	// Partitions).
	Nodes []health.UplinkState `json:"nodes"`
	// The totals over the partitions' leaders' rows, and the nodes' send
	// rates summed.
	SentRecords    int64   `json:"sent_records"`
	RecordsPerSec  float64 `json:"records_per_sec"`
	BytesPerSec    float64 `json:"bytes_per_sec"`
	BacklogRecords int64   `json:"backlog_records"`
	BacklogBytes   int64   `json:"backlog_bytes"`
	BacklogSeconds float64 `json:"backlog_seconds"`
	// DrainPerSec is how fast the backlog fell since the previous look
	// of a --watch (records/s; 0 on the first look); TimeLeftSeconds the
	// backlog over the drain rate, or over the send rate on a first look,
	// -1 when neither is positive.
	DrainPerSec     float64 `json:"drain_records_per_sec"`
	TimeLeftSeconds float64 `json:"time_left_seconds"`
	// Partitions are one row per local partition: the leader's, else the
	// freshest any node reported.
	Partitions []uplinkPartition `json:"partitions"`
}

// uplinkPartition is one partition's row with the node that reported it.
type uplinkPartition struct {
	Node int32 `json:"node"`
	health.UplinkPartition
}

// uplinkStatus asks every broker, as `cluster health` does, for its own
// links (its health facts) and merges them.
func uplinkStatus(ctx context.Context, cl *kgo.Client, perRequest time.Duration) (uplinkReport, error) {
	md, err := firstMetadata(ctx, cl, perRequest)
	if err != nil {
		return uplinkReport{}, err
	}
	if len(md.Brokers) > maxHealthBrokers {
		return uplinkReport{}, fmt.Errorf("metadata lists %d brokers, more than the %d this command asks", len(md.Brokers), maxHealthBrokers)
	}
	answers := make([]brokerAnswer, len(md.Brokers))
	var wg sync.WaitGroup
	for i, b := range md.Brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = askBroker(ctx, b, perRequest)
		}()
	}
	wg.Wait()
	return mergeUplinks(answers, time.Now()), nil
}

// mergeUplinks puts the links each broker reported about itself together.
func mergeUplinks(answers []brokerAnswer, now time.Time) uplinkReport {
	r := uplinkReport{At: now, Links: []uplinkLink{}, UnreachableNodes: []int32{}}
	byName := map[string]*uplinkLink{}
	type key struct {
		link, topic, direction string
		partition              int32
	}
	rows := map[key]uplinkPartition{}
	for _, a := range answers {
		if a.err != nil {
			r.UnreachableNodes = append(r.UnreachableNodes, a.id)
			continue
		}
		for _, u := range a.health.Uplinks {
			if u.Node != a.id {
				continue // a peer's facts as relayed: its own answer is fresher
			}
			l := byName[u.Link]
			if l == nil {
				l = &uplinkLink{Name: u.Link}
				byName[u.Link] = l
			}
			for _, p := range u.Partitions {
				k := key{u.Link, p.Topic, p.Direction, p.Partition}
				old, ok := rows[k]
				if !ok || better(p, old.UplinkPartition) {
					rows[k] = uplinkPartition{Node: u.Node, UplinkPartition: p}
				}
			}
			l.SentRecords += u.SentRecords
			l.RecordsPerSec += u.RecordsPerSec
			l.BytesPerSec += u.BytesPerSec
			u.Partitions = nil
			l.Nodes = append(l.Nodes, u)
		}
	}
	for k, p := range rows {
		l := byName[k.link]
		l.Partitions = append(l.Partitions, p)
		l.BacklogRecords += p.BacklogRecords
		l.BacklogBytes += p.BacklogBytes
		l.BacklogSeconds = max(l.BacklogSeconds, p.BacklogSeconds)
	}
	// sort.Slice, not slices.SortFunc: generic sorts of these large
	// structs would add tens of KiB each to the binary.
	for _, l := range byName {
		sort.Slice(l.Nodes, func(i, j int) bool { return l.Nodes[i].Node < l.Nodes[j].Node })
		sort.Slice(l.Partitions, func(i, j int) bool {
			a, b := &l.Partitions[i], &l.Partitions[j]
			if a.Topic != b.Topic || a.Partition != b.Partition {
				return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
			}
			return a.Direction > b.Direction // push before pull
		})
		if l.Partitions == nil {
			l.Partitions = []uplinkPartition{}
		}
		r.Links = append(r.Links, *l)
	}
	sort.Slice(r.Links, func(i, j int) bool { return r.Links[i].Name < r.Links[j].Name })
	slices.Sort(r.UnreachableNodes)
	return r
}

// better says whether row a of a partition counts over row b: the
// leader's, then the one forwarding it, then the one further along.
func better(a, b health.UplinkPartition) bool {
	if a.Leader != b.Leader {
		return a.Leader
	}
	if a.Active != b.Active {
		return a.Active
	}
	return a.Next > b.Next
}

// progress sets each link's drain rate (against the previous look, if
// any) and the time left to catch up.
func (r *uplinkReport) progress(prev *uplinkReport) {
	for i := range r.Links {
		l := &r.Links[i]
		l.TimeLeftSeconds = -1
		if prev != nil {
			if dt := r.At.Sub(prev.At).Seconds(); dt > 0 {
				for _, p := range prev.Links {
					if p.Name == l.Name {
						l.DrainPerSec = max(float64(p.BacklogRecords-l.BacklogRecords)/dt, 0)
					}
				}
			}
		}
		up := slices.ContainsFunc(l.Nodes, func(n health.UplinkState) bool { return n.Up })
		switch {
		case l.BacklogRecords == 0:
			l.TimeLeftSeconds = 0
		case !up:
			// No node reaches the far side: no rate says when.
		case l.DrainPerSec > 0:
			l.TimeLeftSeconds = float64(l.BacklogRecords) / l.DrainPerSec
		case prev == nil && l.RecordsPerSec > 0:
			l.TimeLeftSeconds = float64(l.BacklogRecords) / l.RecordsPerSec
		}
	}
}

// uplinkState names a link's state on one node.
func uplinkState(u health.UplinkState) string {
	switch {
	case u.Paused:
		return "paused"
	case u.Up:
		return "up"
	case u.Down:
		return fmt.Sprintf("DOWN for %s", time.Duration(u.DownForMs)*time.Millisecond)
	default:
		return fmt.Sprintf("down for %s", time.Duration(u.DownForMs)*time.Millisecond)
	}
}

// printUplinks prints each link, its nodes, then a table of its
// partitions.
func printUplinks(w io.Writer, r uplinkReport) {
	if len(r.Links) == 0 {
		fmt.Fprintln(w, "no uplinks")
	}
	for i, l := range r.Links {
		if i > 0 {
			fmt.Fprintln(w)
		}
		left := "-"
		if l.TimeLeftSeconds >= 0 {
			left = secondsText(l.TimeLeftSeconds)
		}
		fmt.Fprintf(w, "LINK %s: backlog %d records, %s, oldest %s; sending %.1f records/s, %s/s; sent %d records",
			l.Name, l.BacklogRecords, sizeText(float64(l.BacklogBytes)), secondsText(l.BacklogSeconds), l.RecordsPerSec, sizeText(l.BytesPerSec), l.SentRecords)
		if l.DrainPerSec > 0 {
			fmt.Fprintf(w, "; backlog falling %.1f records/s", l.DrainPerSec)
		}
		fmt.Fprintf(w, "; time left %s\n", left)
		for _, n := range l.Nodes {
			fmt.Fprintf(w, "  node %d: %s", n.Node, uplinkState(n))
			if n.LastUpMs > 0 {
				fmt.Fprintf(w, ", last up %s", time.UnixMilli(n.LastUpMs).UTC().Format(time.RFC3339))
			} else {
				fmt.Fprintf(w, ", never up since start")
			}
			if n.LastError != "" {
				fmt.Fprintf(w, "; last error at %s: %s", time.UnixMilli(n.LastErrorMs).UTC().Format(time.RFC3339), n.LastError)
			}
			if n.PartitionsNotListed > 0 {
				fmt.Fprintf(w, "; %d partitions not listed (see its /metrics)", n.PartitionsNotListed)
			}
			fmt.Fprintln(w)
		}
		up, paused := map[int32]bool{}, map[int32]bool{}
		for _, n := range l.Nodes {
			up[n.Node], paused[n.Node] = n.Up, n.Paused
		}
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "  TOPIC\tPARTITION\tDIRECTION\tNODE\tSTATE\tNEXT\tBACKLOG\tBYTES\tAGE\tREC/S\tBYTES/S\tSENT\tERROR")
		for _, p := range l.Partitions {
			state, dir := "forwarding", "push"
			if p.Direction == "pull" {
				// Pulled from the far side into local p.Topic; NEXT and
				// BACKLOG are far offsets and records.
				state, dir = "pulling", "pull"
			}
			switch {
			case p.Error != "":
				state = "refused"
			case paused[p.Node]:
				state = "paused"
			case !p.Active:
				state = "idle"
			case !up[p.Node]:
				state = "waiting" // for the far side
			}
			fmt.Fprintf(tw, "  %s\t%d\t%s\t%d\t%s\t%d\t%d\t%s\t%s\t%.1f\t%s\t%d\t%s\n", p.Topic, p.Partition, dir, p.Node, state, p.Next,
				p.BacklogRecords, sizeText(float64(p.BacklogBytes)), secondsText(p.BacklogSeconds), p.RecordsPerSec, sizeText(p.BytesPerSec), p.SentRecords, p.Error)
		}
		tw.Flush()
	}
	if len(r.UnreachableNodes) > 0 {
		fmt.Fprintf(w, "nodes unreachable (their links are missing): %v\n", r.UnreachableNodes)
	}
}

// secondsText is a number of seconds as a duration to the second.
func secondsText(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Second).String()
}

// sizeText is a byte count in B, KiB, MiB or GiB.
func sizeText(n float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", n)
	}
	return fmt.Sprintf("%.1f %s", n, units[i])
}
