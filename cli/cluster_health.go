package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"

	"github.com/wren-broker/wren/internal/health"
	"github.com/wren-broker/wren/kafka"
)

// healthWatchInterval is how often `cluster health -w` looks again.
const healthWatchInterval = 2 * time.Second

// defaultHealthRequestTimeout bounds each request `cluster health` sends
// to one broker. A live broker answers these from memory in
// milliseconds; one that does not answer within it (stopped, cut off,
// overloaded) is reported unreachable instead of holding the answer up.
const defaultHealthRequestTimeout = 2 * time.Second

// maxHealthBrokers bounds the brokers `cluster health` asks at once.
const maxHealthBrokers = 256

func clusterHealthCommand(env Env) *ucli.Command {
	return &ucli.Command{
		Name: "health",
		Usage: "report the cluster's health (rpk cluster health); exit status 1 when unhealthy. " +
			"Every broker answers with what its /v1/cluster/health says; the command adds the brokers it could not reach " +
			"and judges the facts by the same rules (health.ClusterHealth.Evaluate)",
		Flags: clientFlags(timeoutFlag(),
			&ucli.DurationFlag{Name: "request-timeout", Value: defaultHealthRequestTimeout,
				Usage: "bound on each request to one broker; a broker that does not answer within it is unreachable (down)"},
			&ucli.BoolFlag{Name: "watch", Aliases: []string{"w"}, Usage: "look again every 2s until interrupted"},
			&ucli.BoolFlag{Name: "exit-when-healthy", Aliases: []string{"e"}, Usage: "look again every 2s until the cluster is healthy, then exit 0 (implies --watch)"},
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
			watch := c.Bool("watch") || c.Bool("exit-when-healthy")
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			defer cl.Close()
			// A watch runs until interrupted: --timeout bounds each look.
			look := commandStart(c.Context)
			for {
				ctx, cancel := timeoutFrom(c, look)
				h, err := clusterHealth(ctx, cl, perRequest)
				cancel()
				if err != nil && !watch {
					return noAnswer(c, cl, err)
				}
				if err != nil {
					// Watching: a round without an answer is said and
					// the next one tried.
					printError(env.Stderr, err)
				} else {
					if err := printResult(env.Stdout, format, h, func(w io.Writer) { printHealth(w, h) }); err != nil {
						return err
					}
					if !watch || (h.Healthy && c.Bool("exit-when-healthy")) {
						if !h.Healthy {
							return &exitError{code: 1, err: h.Err()}
						}
						return nil
					}
				}
				select {
				case <-c.Context.Done():
					return nil
				case <-time.After(healthWatchInterval):
				}
				look = time.Now()
			}
		},
	}
}

// brokerAnswer is what one broker said, or why it said nothing.
type brokerAnswer struct {
	id int32
	// health is its /v1/cluster/health from DescribeCluster's wren tag;
	// full is false when the tag held only health.ControlPlane (a wren
	// broker still starting) or was absent (not wren).
	health health.ClusterHealth
	full   bool
	tagged bool
	err    error
}

// clusterHealth gathers the facts and judges them with
// health.ClusterHealth.Evaluate. It never waits on one broker longer than
// perRequest: Metadata goes to every bootstrap broker at once and the
// first answer counts; then every broker Metadata lists is asked, at once,
// for its own judgement (DescribeCluster's wren tag). The freshest of
// those (the highest metadata offset) supplies the cluster's facts, each
// broker that answered supplies its own log dir and damage facts, and a
// broker that did not answer is unreachable, so down. It fails only when
// no bootstrap broker answers Metadata.
func clusterHealth(ctx context.Context, cl *kgo.Client, perRequest time.Duration) (health.ClusterHealth, error) {
	md, err := firstMetadata(ctx, cl, perRequest)
	if err != nil {
		return health.ClusterHealth{}, err
	}
	if len(md.Brokers) > maxHealthBrokers {
		return health.ClusterHealth{}, fmt.Errorf("metadata lists %d brokers, more than the %d this command asks", len(md.Brokers), maxHealthBrokers)
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

	h, ok := fromAnswers(answers)
	if !ok {
		// No wren broker with its judgement: judge what Metadata says,
		// with the control plane's facts if a wren broker sent them.
		h = healthFromMetadata(ctx, cl, md, perRequest)
		for _, a := range answers {
			if a.err == nil && a.tagged {
				h.ControlPlane = a.health.ControlPlane
				break
			}
		}
	}
	for _, a := range answers {
		if a.err != nil {
			h.UnreachableNodes = append(h.UnreachableNodes, a.id)
		}
	}
	h.Evaluate()
	return h, nil
}

// fromAnswers merges the brokers' own judgements: the freshest (highest
// metadata offset; on a tie the controller's own) supplies the cluster's
// facts, and every broker that answered supplies the facts about its own
// log dir and replicas. ok is false when no answer held a judgement. The
// brokers that did not answer are the caller's to add.
func fromAnswers(answers []brokerAnswer) (h health.ClusterHealth, ok bool) {
	var base *brokerAnswer
	for i := range answers {
		a := &answers[i]
		if a.err != nil || !a.full {
			continue
		}
		if base == nil || a.health.MetadataOffset > base.health.MetadataOffset ||
			(a.health.MetadataOffset == base.health.MetadataOffset && a.id == a.health.ControllerID) {
			base = a
		}
	}
	if base == nil {
		return h, false
	}
	var own []health.NodeFacts
	for _, a := range answers {
		if a.err == nil && a.full {
			own = append(own, factsOf(a.health, a.id))
		}
	}
	h = base.health
	h.Healthy, h.UnhealthyReasons = false, nil
	// AddNodeFacts edits these lists in place: the answers keep theirs.
	h.OfflineLogDirs = slices.Clone(h.OfflineLogDirs)
	h.DamagedPartitions = slices.Clone(h.DamagedPartitions)
	h.LogDirsBelowFloor = slices.Clone(h.LogDirsBelowFloor)
	h.StarvedNodes = slices.Clone(h.StarvedNodes)
	h.Uplinks = slices.Clone(h.Uplinks)
	h.LoadingNodes = slices.Clone(h.LoadingNodes)
	for _, f := range own {
		h.AddNodeFacts(f)
	}
	return h, true
}

// firstMetadata sends Metadata to every bootstrap broker at once, each
// bounded by perRequest, and returns the first answer.
func firstMetadata(ctx context.Context, cl *kgo.Client, perRequest time.Duration) (*kmsg.MetadataResponse, error) {
	seeds := cl.SeedBrokers()
	if len(seeds) > maxHealthBrokers {
		seeds = seeds[:maxHealthBrokers]
	}
	ctx, cancel := context.WithTimeout(ctx, perRequest)
	defer cancel()
	type result struct {
		md  *kmsg.MetadataResponse
		err error
	}
	results := make(chan result, len(seeds))
	for _, s := range seeds {
		go func() {
			req := kmsg.NewPtrMetadataRequest()
			resp, err := s.Request(ctx, req)
			if err != nil {
				results <- result{err: err}
				return
			}
			results <- result{md: resp.(*kmsg.MetadataResponse)}
		}()
	}
	var errs []error
	for range seeds {
		r := <-results
		if r.err == nil {
			return r.md, nil
		}
		errs = append(errs, r.err)
	}
	return nil, fmt.Errorf("no bootstrap broker answered Metadata within %s: %w", perRequest, errors.Join(errs...))
}

// askBroker asks broker b, on a connection of its own bounded by
// perRequest, for its judgement of the cluster's health.
func askBroker(ctx context.Context, b kmsg.MetadataResponseBroker, perRequest time.Duration) brokerAnswer {
	a := brokerAnswer{id: b.NodeID}
	ctx, cancel := context.WithTimeout(ctx, perRequest)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))), kgo.ClientID(clientID),
		kgo.DialTimeout(perRequest))
	if err != nil {
		a.err = err
		return a
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeClusterRequest()
	req.EndpointType = 1
	req.UnknownTags.Set(kafka.ControlPlaneTag, []byte{})
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		a.err = fmt.Errorf("broker %d: %w", b.NodeID, err)
		return a
	}
	dc := resp.(*kmsg.DescribeClusterResponse)
	if err := kerr.ErrorForCode(dc.ErrorCode); err != nil {
		// A broker that answers at all is reachable; an old one that
		// does not know DescribeCluster just has no judgement to give.
		return a
	}
	dc.UnknownTags.Each(func(k uint32, v []byte) {
		if k != kafka.ControlPlaneTag {
			return
		}
		var probe map[string]json.RawMessage
		if json.Unmarshal(v, &probe) != nil || json.Unmarshal(v, &a.health) != nil {
			a.err = fmt.Errorf("broker %d: DescribeCluster: wren's health facts do not decode", b.NodeID)
			return
		}
		_, a.full = probe["all_nodes"]
		a.tagged = true
	})
	return a
}

// factsOf are the facts h holds about node id's own log dir and replicas:
// a broker's word on itself is fresher than what its peers last heard.
func factsOf(h health.ClusterHealth, id int32) health.NodeFacts {
	f := health.NodeFacts{Node: id}
	probe := health.ClusterHealth{}
	probe.AddNodeFacts(health.NodeFacts{Node: id, OfflineLogDirs: h.OfflineLogDirs})
	f.OfflineLogDirs = probe.OfflineLogDirs
	for _, d := range h.DamagedPartitions {
		if d.Node == id {
			f.DamagedPartitions = append(f.DamagedPartitions, d)
		}
	}
	for _, d := range h.LogDirsBelowFloor {
		if d.Node == id {
			f.LogDirsBelowFloor = append(f.LogDirsBelowFloor, d)
		}
	}
	for _, d := range h.StarvedNodes {
		if d.Node == id {
			f.RequestBudgetStarved = &d
		}
	}
	for _, d := range h.LoadingNodes {
		if d.Node == id {
			f.PartitionsLoading = d.Partitions
		}
	}
	for _, u := range h.Uplinks {
		if u.Node == id {
			f.Uplinks = append(f.Uplinks, u)
		}
	}
	return f
}

// healthFromMetadata judges a cluster of brokers that are not wren (or
// not yet serving their judgement) from Metadata and DescribeLogDirs.
func healthFromMetadata(ctx context.Context, cl *kgo.Client, md *kmsg.MetadataResponse, perRequest time.Duration) health.ClusterHealth {
	ctx, cancel := context.WithTimeout(ctx, perRequest)
	defer cancel()
	h := health.ClusterHealth{ControllerID: md.ControllerID}
	for _, b := range md.Brokers {
		h.Nodes = append(h.Nodes, b.NodeID)
	}
	// Replicas a reassignment is adding do not count toward
	// under-replication; if the moves cannot be listed, none are known.
	ongoing, _ := listReassignments(ctx, cl, nil)
	for _, t := range md.Topics {
		if t.Topic == nil {
			continue
		}
		for _, p := range t.Partitions {
			if p.Leader < 0 {
				h.LeaderlessPartitions = append(h.LeaderlessPartitions, health.PartitionName(*t.Topic, p.Partition))
			}
			if len(p.ISR) < len(p.Replicas)-len(ongoing[topicPartition{*t.Topic, p.Partition}].adding) {
				h.UnderReplicatedPartitions = append(h.UnderReplicatedPartitions, health.PartitionName(*t.Topic, p.Partition))
			}
		}
	}
	req := kmsg.NewPtrDescribeLogDirsRequest()
	for _, shard := range cl.RequestSharded(ctx, req) {
		if shard.Err != nil {
			continue
		}
		for _, d := range shard.Resp.(*kmsg.DescribeLogDirsResponse).Dirs {
			if err := kerr.ErrorForCode(d.ErrorCode); err != nil {
				h.OfflineLogDirs = append(h.OfflineLogDirs, health.OfflineLogDir(shard.Meta.NodeID, d.Dir, err.Error()))
			}
		}
	}
	return h
}

// printHealth prints rpk cluster health's layout.
func printHealth(w io.Writer, h health.ClusterHealth) {
	fmt.Fprintf(w, "CLUSTER HEALTH OVERVIEW\n=======================\n")
	fmt.Fprintf(w, "%-36s%v\n", "Healthy:", h.Healthy)
	fmt.Fprintf(w, "%-36s%v\n", "Unhealthy reasons:", h.UnhealthyReasons)
	fmt.Fprintf(w, "%-36s%d\n", "Controller ID:", h.ControllerID)
	fmt.Fprintf(w, "%-36s%d\n", "Controller epoch:", h.ControllerEpoch)
	fmt.Fprintf(w, "%-36s%v\n", "All nodes:", h.Nodes)
	fmt.Fprintf(w, "%-36s%v\n", "Nodes down:", h.DownNodes)
	fmt.Fprintf(w, "%-36s%v\n", "Nodes fenced:", h.FencedNodes)
	fmt.Fprintf(w, "%-36s%v\n", "Nodes unreachable:", h.UnreachableNodes)
	fmt.Fprintf(w, "%-36s%v\n", fmt.Sprintf("Leaderless partitions (%d):", len(h.LeaderlessPartitions)), h.LeaderlessPartitions)
	fmt.Fprintf(w, "%-36s%v\n", fmt.Sprintf("Under-replicated partitions (%d):", len(h.UnderReplicatedPartitions)), h.UnderReplicatedPartitions)
	fmt.Fprintf(w, "%-36s%v\n", fmt.Sprintf("Offline log dirs (%d):", len(h.OfflineLogDirs)), h.OfflineLogDirs)
	var damaged []string
	for _, d := range h.DamagedPartitions {
		damaged = append(damaged, fmt.Sprintf("%s on node %d (%d ranges)", d.Partition, d.Node, d.Ranges))
	}
	fmt.Fprintf(w, "%-36s%v\n", fmt.Sprintf("Damaged partitions (%d):", len(h.DamagedPartitions)), damaged)
	var low []string
	for _, d := range h.LogDirsBelowFloor {
		low = append(low, fmt.Sprintf("node %d: %s (%d bytes free, floor %d)", d.Node, d.Dir, d.FreeBytes, d.FloorBytes))
	}
	fmt.Fprintf(w, "%-36s%v\n", fmt.Sprintf("Log dirs below floor (%d):", len(h.LogDirsBelowFloor)), low)
	var starved []string
	for _, d := range h.StarvedNodes {
		starved = append(starved, fmt.Sprintf("node %d: %d waiting, the first for %d ms", d.Node, d.Waiting, d.OldestWaitMs))
	}
	fmt.Fprintf(w, "%-36s%v\n", fmt.Sprintf("Request budget starved (%d):", len(h.StarvedNodes)), starved)
	var loading []string
	for _, d := range h.LoadingNodes {
		loading = append(loading, fmt.Sprintf("node %d: %d partitions", d.Node, d.Partitions))
	}
	fmt.Fprintf(w, "%-36s%v\n", fmt.Sprintf("Nodes loading partitions (%d):", len(h.LoadingNodes)), loading)
	fmt.Fprintf(w, "%-36s%v\n", "Degraded reasons:", h.DegradedReasons)
	var links []string
	for _, u := range h.Uplinks {
		links = append(links, fmt.Sprintf("%s on node %d: %s, backlog %d records", u.Link, u.Node, uplinkState(u), u.BacklogRecords))
	}
	fmt.Fprintf(w, "%-36s%v\n", fmt.Sprintf("Uplinks (%d):", len(h.Uplinks)), links)
	fmt.Fprintf(w, "%-36s%d\n", "Data-loss ledger entries:", len(h.DataLossLedger))
	for _, e := range h.DataLossLedger {
		lost := "offsets unknown"
		if e.FromOffset >= 0 && e.ToOffset >= 0 {
			lost = fmt.Sprintf("offsets [%d, %d) may be lost", e.FromOffset, e.ToOffset)
		}
		fmt.Fprintf(w, "  %s/%d leader epoch %d: %s election of %d (previous leader %d, ISR %v); %s\n",
			e.Topic, e.Partition, e.LeaderEpoch, e.Reason, e.NewLeader, e.PreviousLeader, e.PreviousISR, lost)
	}
}
