package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupsClusterConfig makes groups quick to form: classic groups
// rebalance at once, KIP-848 members heartbeat every 500 ms.
const groupsClusterConfig = `
[groups]
group.initial.rebalance.delay.ms = 0
group.consumer.heartbeat.interval.ms = 500
group.consumer.min.heartbeat.interval.ms = 500
`

// pollUntil polls cond every 20 ms until it holds, and fails the test with
// what the last poll said after timeout.
func pollUntil(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last: %s", timeout, what, last)
		}
		<-tick.C
	}
}

// seededOn is a client that bootstraps from node n alone.
func seededOn(t *testing.T, n *clusterNode, opts ...kgo.Opt) (*kgo.Client, *kadm.Client) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(n.addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, kadm.NewClient(cl)
}

// coordinators asks node n which node coordinates each group (-1 for an
// error).
func coordinators(ctx context.Context, t *testing.T, n *clusterNode, groups []string) map[string]int32 {
	t.Helper()
	_, adm := seededOn(t, n, kgo.RequestRetries(0))
	out := map[string]int32{}
	for _, r := range adm.FindGroupCoordinators(ctx, groups...) {
		out[r.Name] = r.NodeID
		if r.Err != nil {
			out[r.Name] = -1
		}
	}
	return out
}

// anyNodeMember is one consumer of a group: it polls, counts every record
// it sees and commits after every poll, until stopped.
type anyNodeMember struct {
	name string
	cl   *kgo.Client
	mu   sync.Mutex
	seen map[string]int
	// commitErrs counts failed commits by error text.
	commitErrs map[string]int
	done       chan struct{}
	cancel     context.CancelFunc
}

func startAnyNodeMember(t *testing.T, name string, n *clusterNode, opts ...kgo.Opt) *anyNodeMember {
	t.Helper()
	cl, _ := seededOn(t, n, append([]kgo.Opt{kgo.DisableAutoCommit(), kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	ctx, cancel := context.WithCancel(context.Background())
	m := &anyNodeMember{name: name, cl: cl, seen: map[string]int{}, commitErrs: map[string]int{}, done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			m.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) { m.seen[string(r.Value)]++ })
			m.mu.Unlock()
			if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
				m.mu.Lock()
				m.commitErrs[err.Error()]++
				m.mu.Unlock()
			}
		}
	}()
	t.Cleanup(m.stop)
	return m
}

func (m *anyNodeMember) stop() {
	m.cancel()
	<-m.done
}

// missing is how many of values m has not seen, and the first few.
func (m *anyNodeMember) missing(values []string) (int, []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var miss []string
	for _, v := range values {
		if m.seen[v] == 0 {
			miss = append(miss, v)
		}
	}
	return len(miss), miss[:min(len(miss), 5)]
}

// anyNodeProducer writes unique numbered records with acks=all and idempotence,
// and keeps the values acknowledged.
type anyNodeProducer struct {
	cl    *kgo.Client
	mu    sync.Mutex
	next  int
	acked []string
	// failed counts the batches whose outcome is unknown.
	failed int
}

func (p *anyNodeProducer) produce(ctx context.Context, n int) {
	p.mu.Lock()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Value: []byte(strconv.Itoa(p.next))}
		p.next++
	}
	p.mu.Unlock()
	res := p.cl.ProduceSync(ctx, recs...)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range res {
		if r.Err == nil {
			p.acked = append(p.acked, string(r.Record.Value))
		} else {
			p.failed++
		}
	}
}

func (p *anyNodeProducer) ackedValues() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.acked)
}

// offsetsOf are group's committed offsets of topic, asked through a client
// seeded with node n alone; ok is false while they cannot be fetched.
func offsetsOf(ctx context.Context, t *testing.T, n *clusterNode, group, topic string) (map[int32]int64, error) {
	_, adm := seededOn(t, n)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resps, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for p, r := range resps[topic] {
		if r.Err != nil {
			return nil, fmt.Errorf("partition %d: %w", p, r.Err)
		}
		if r.At >= 0 {
			out[p] = r.At
		}
	}
	return out, nil
}

// endOffsets are topic's high watermarks.
func endOffsets(ctx context.Context, t *testing.T, n *clusterNode, topic string) map[int32]int64 {
	t.Helper()
	_, adm := seededOn(t, n)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		if o.Offset > 0 {
			out[o.Partition] = o.Offset
		}
	})
	return out
}

// TestGroupsFromAnyNode runs consumer groups on three `wren serve`
// processes with every client bootstrapped from a node that is neither
// the controller nor the groups' coordinator: a classic group (JoinGroup,
// SyncGroup) and a KIP-848 one (ConsumerGroupHeartbeat) consume and
// commit; their committed offsets read the same through every node;
// DescribeGroups, ConsumerGroupDescribe, ListGroups, OffsetDelete and
// DeleteGroups work from that node, and each node lists only the groups
// it coordinates. Then the coordinator is SIGKILLed while records flow:
// both groups carry on with the new coordinator, which loaded their
// committed offsets (none went back), and every acknowledged record is
// consumed by both.
func TestGroupsFromAnyNode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three wren processes")
	}
	fc := startFaultClusterWith(t, faultClusterOptions{config: groupsClusterConfig})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const topic = "groups-any-node"
	fc.createTopic(ctx, topic)
	ctrl, _ := fc.waitHealthy(ctx, fc.nodes[0], topic)

	// A classic and a KIP-848 group with one coordinator that is not the
	// controller, and the third node to bootstrap from.
	var names []string
	for i := range 40 {
		names = append(names, fmt.Sprintf("classic-%d", i), fmt.Sprintf("kip848-%d", i))
	}
	var coord int32 = -1
	var classic, next string
	pollUntil(t, "a coordinator for every group", 30*time.Second, func() (bool, string) {
		cs := coordinators(ctx, t, fc.nodes[0], names)
		for _, id := range cs {
			if id < 0 {
				return false, fmt.Sprint(cs)
			}
		}
		for _, n := range names {
			c := cs[n]
			if c == ctrl || !strings.HasPrefix(n, "classic-") {
				continue
			}
			for _, m := range names {
				if strings.HasPrefix(m, "kip848-") && cs[m] == c {
					coord, classic, next = c, n, m
					return true, ""
				}
			}
		}
		return false, fmt.Sprintf("no classic and kip848 group share a coordinator other than the controller %d: %v", ctrl, cs)
	})
	var via *clusterNode
	for _, n := range fc.nodes {
		if int32(n.id) != ctrl && int32(n.id) != coord {
			via = n
		}
	}
	t.Logf("controller %d; %s and %s coordinated by %d; clients bootstrap from node %d only", ctrl, classic, next, coord, via.id)
	for _, n := range fc.nodes {
		pollUntil(t, fmt.Sprintf("node %d to name coordinator %d", n.id, coord), 10*time.Second, func() (bool, string) {
			cs := coordinators(ctx, t, n, []string{classic, next})
			return cs[classic] == coord && cs[next] == coord, fmt.Sprint(cs)
		})
	}

	pcl, _ := seededOn(t, via, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	prod := &anyNodeProducer{cl: pcl}
	members := []*anyNodeMember{
		startAnyNodeMember(t, classic, via, kgo.ConsumerGroup(classic), kgo.ConsumeTopics(topic)),
		startAnyNodeMember(t, next, via, kgo.ConsumerGroup(next), kgo.ConsumeTopics(topic),
			kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer()),
	}
	// consumedAll waits until every member saw every acknowledged record
	// and its committed offsets reached the end offsets, read through
	// every node in nodes.
	consumedAll := func(what string, nodes []*clusterNode) map[int32]int64 {
		t.Helper()
		acked := prod.ackedValues()
		for _, m := range members {
			pollUntil(t, fmt.Sprintf("%s to consume every acknowledged record %s", m.name, what), 45*time.Second, func() (bool, string) {
				n, first := m.missing(acked)
				m.mu.Lock()
				defer m.mu.Unlock()
				return n == 0, fmt.Sprintf("%d of %d missing, e.g. %v; commit errors %v", n, len(acked), first, m.commitErrs)
			})
		}
		ends := endOffsets(ctx, t, nodes[0], topic)
		for _, m := range members {
			for _, n := range nodes {
				pollUntil(t, fmt.Sprintf("%s's committed offsets through node %d %s", m.name, n.id, what), 30*time.Second, func() (bool, string) {
					got, err := offsetsOf(ctx, t, n, m.name, topic)
					return err == nil && fmt.Sprint(got) == fmt.Sprint(ends), fmt.Sprintf("%v (err %v), want %v", got, err, ends)
				})
			}
		}
		return ends
	}

	// Phase 1: no fault.
	prod.produce(ctx, 300)
	if len(prod.ackedValues()) != 300 {
		t.Fatalf("%d of 300 records acknowledged", len(prod.ackedValues()))
	}
	consumedAll("before the kill", fc.nodes)

	_, adm := seededOn(t, via)
	described, err := adm.DescribeGroups(ctx, classic)
	if err != nil {
		t.Fatalf("DescribeGroups %s from node %d: %v", classic, via.id, err)
	}
	if d := described[classic]; d.Err != nil || d.State != "Stable" || len(d.Members) != 1 || d.Coordinator.NodeID != coord {
		t.Errorf("DescribeGroups %s: %+v", classic, d)
	}
	cdescribed, err := adm.DescribeConsumerGroups(ctx, next)
	if err != nil {
		t.Fatalf("ConsumerGroupDescribe %s from node %d: %v", next, via.id, err)
	}
	if d := cdescribed[next]; d.Err != nil || d.State != "Stable" || len(d.Members) != 1 || d.Coordinator.NodeID != coord {
		t.Errorf("ConsumerGroupDescribe %s: %+v", next, d)
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatalf("ListGroups from node %d: %v", via.id, err)
	}
	if _, ok := listed[classic]; !ok {
		t.Errorf("ListGroups from node %d: %v lacks %s", via.id, listed.Groups(), classic)
	}
	if _, ok := listed[next]; !ok {
		t.Errorf("ListGroups from node %d: %v lacks %s", via.id, listed.Groups(), next)
	}
	// Each node lists the groups it coordinates, as in Kafka.
	for _, n := range fc.nodes {
		cl, _ := seededOn(t, n)
		resp, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, cl.SeedBrokers()[0])
		if err != nil {
			t.Fatalf("ListGroups to node %d: %v", n.id, err)
		}
		var got []string
		for _, g := range resp.Groups {
			if g.Group == classic || g.Group == next {
				got = append(got, g.Group)
			}
		}
		if want := int32(n.id) == coord; resp.ErrorCode != 0 || (len(got) == 2) != want || (len(got) == 0) == want {
			t.Errorf("ListGroups to node %d (coordinator %d): code %v, lists %v", n.id, coord, kerr.ErrorForCode(resp.ErrorCode), got)
		}
	}
	// Offsets of a group without members: OffsetCommit, OffsetDelete and
	// DeleteGroups, all from the same node.
	const adminGroup = "admin-group"
	offs := make(kadm.Offsets)
	for p := range int32(faultTopicPartitions) {
		offs.Add(kadm.Offset{Topic: topic, Partition: p, At: 1, LeaderEpoch: -1})
	}
	if err := adm.CommitAllOffsets(ctx, adminGroup, offs); err != nil {
		t.Fatalf("commit offsets of %s: %v", adminGroup, err)
	}
	dels, err := adm.DeleteOffsets(ctx, adminGroup, kadm.TopicsSet{topic: {0: {}}})
	if err != nil || dels.Error() != nil {
		t.Fatalf("OffsetDelete %s %s/0: %v %v", adminGroup, topic, err, dels.Error())
	}
	if got, err := offsetsOf(ctx, t, fc.nodes[0], adminGroup, topic); err != nil || len(got) != faultTopicPartitions-1 || got[0] != 0 && got[1] != 1 {
		t.Errorf("after OffsetDelete of partition 0: %v %v", got, err)
	}
	gdels, err := adm.DeleteGroups(ctx, adminGroup, "no-such-group")
	if err != nil {
		t.Fatalf("DeleteGroups: %v", err)
	}
	if r := gdels[adminGroup]; r.Err != nil {
		t.Errorf("DeleteGroups %s: %v", adminGroup, r.Err)
	}
	if r := gdels["no-such-group"]; !errors.Is(r.Err, kerr.GroupIDNotFound) {
		t.Errorf("DeleteGroups of a group that does not exist: %v, want GROUP_ID_NOT_FOUND", r.Err)
	}
	if got, err := offsetsOf(ctx, t, via, adminGroup, topic); err != nil || len(got) != 0 {
		t.Errorf("offsets of %s after DeleteGroups: %v %v", adminGroup, got, err)
	}

	// Phase 2: SIGKILL the coordinator while records flow.
	before := map[string]map[int32]int64{}
	for _, m := range members {
		got, err := offsetsOf(ctx, t, via, m.name, topic)
		if err != nil {
			t.Fatalf("offsets of %s before the kill: %v", m.name, err)
		}
		before[m.name] = got
	}
	stopProducing := make(chan struct{})
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for {
			select {
			case <-stopProducing:
				return
			default:
			}
			pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
			prod.produce(pctx, 10)
			pcancel()
		}
	}()
	pollUntil(t, "records produced before the kill", 20*time.Second, func() (bool, string) {
		n := len(prod.ackedValues())
		return n >= 400, fmt.Sprintf("%d acknowledged", n)
	})
	killed := fc.node(coord)
	killedAt := time.Now()
	killed.kill()
	live := fc.live()
	var newCoord int32
	pollUntil(t, "a new coordinator", 30*time.Second, func() (bool, string) {
		cs := coordinators(ctx, t, via, []string{classic, next})
		newCoord = cs[classic]
		return newCoord >= 0 && newCoord != coord && cs[next] == newCoord, fmt.Sprint(cs)
	})
	// The new coordinator loaded the offsets committed before the kill:
	// the first read that succeeds has none below them.
	for _, m := range members {
		var got map[int32]int64
		pollUntil(t, fmt.Sprintf("%s's offsets from the new coordinator", m.name), 30*time.Second, func() (bool, string) {
			var err error
			got, err = offsetsOf(ctx, t, via, m.name, topic)
			return err == nil, fmt.Sprint(err)
		})
		for p, o := range before[m.name] {
			if got[p] < o {
				t.Errorf("%s/%d: committed %d after the kill, %d before", m.name, p, got[p], o)
			}
		}
	}
	t.Logf("coordinator %d killed; node %d coordinates after %v", coord, newCoord, time.Since(killedAt).Round(time.Millisecond))
	atTakeover := len(prod.ackedValues())
	pollUntil(t, "records produced after the new coordinator took over", 30*time.Second, func() (bool, string) {
		n := len(prod.ackedValues())
		return n >= atTakeover+300, fmt.Sprintf("%d acknowledged, %d at the takeover", n, atTakeover)
	})
	close(stopProducing)
	<-produced
	consumedAll("after the kill", live)
	for _, m := range members {
		m.mu.Lock()
		t.Logf("%s: %d records seen (%d acknowledged, %d produce outcomes unknown); commit errors %v", m.name, len(m.seen), len(prod.ackedValues()), prod.failed, m.commitErrs)
		m.mu.Unlock()
	}
	// A new client: the first one keeps the dead coordinator cached
	// (kgo forgets a coordinator on NOT_COORDINATOR, not on a refused
	// connection).
	_, adm = seededOn(t, via)
	if d, err := adm.DescribeGroups(ctx, classic); err != nil || d[classic].Err != nil || d[classic].Coordinator.NodeID != newCoord || len(d[classic].Members) != 1 {
		t.Errorf("DescribeGroups %s after the kill: %+v %v", classic, d[classic], err)
	}
}
