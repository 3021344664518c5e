package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/broker"
	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/groups"
)

// wrenCluster is three wren brokers in this process, a real cluster on
// loopback: a controller elected among them, __consumer_offsets
// replicated on all three and its partitions led by any of them.
type wrenCluster struct {
	brokers []*broker.Broker
	addrs   []string
}

// freeLoopbackPorts returns n ports free on 127.0.0.1 a moment ago.
func freeLoopbackPorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

// startWrenCluster starts the three brokers, with the group settings of
// groupBrokers, and waits until every node names the same controller and
// sees three brokers and __consumer_offsets led.
func startWrenCluster(t *testing.T) *wrenCluster {
	t.Helper()
	ports := freeLoopbackPorts(t, 6)
	var voters []string
	for i := range 3 {
		voters = append(voters, strconv.Quote(fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[3+i])))
	}
	c := &wrenCluster{brokers: make([]*broker.Broker, 3)}
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		toml := fmt.Sprintf(`
[broker]
node.id = %d
log.dirs = [%q]
listeners = ["PLAINTEXT://127.0.0.1:%d", "CONTROLLER://127.0.0.1:%d"]
[http]
listen = "127.0.0.1:0"
[cluster]
controller.quorum.voters = [%s]
broker.heartbeat.interval.ms = 500
broker.session.timeout.ms = 3000
[groups]
group.initial.rebalance.delay.ms = 0
group.consumer.heartbeat.interval.ms = 500
group.consumer.min.heartbeat.interval.ms = 500
offsets.topic.num.partitions = 6
`, i+1, t.TempDir(), ports[i], ports[3+i], strings.Join(voters, ", "))
		cfg, err := config.Parse(fmt.Sprintf("node%d.toml", i+1), []byte(toml))
		if err != nil {
			t.Fatalf("node %d config: %v", i+1, err)
		}
		c.addrs = append(c.addrs, fmt.Sprintf("127.0.0.1:%d", ports[i]))
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.brokers[i], errs[i] = broker.Start(cfg, broker.Options{Logger: slog.New(slog.DiscardHandler)})
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for i, b := range c.brokers {
			if b != nil {
				if err := b.Close(); err != nil {
					t.Errorf("close node %d: %v", i+1, err)
				}
			}
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("start node %d: %v", i+1, err)
		}
	}
	waitFor(t, "a controller, three brokers and __consumer_offsets led, on every node", func() (bool, string) {
		var views []string
		for _, addr := range c.addrs {
			md, err := c.metadata(addr)
			if err != nil {
				return false, err.Error()
			}
			views = append(views, md)
		}
		for _, v := range views {
			if v != views[0] || strings.Contains(v, "controller=-1") || strings.Contains(v, "leader=-1") || !strings.Contains(v, "brokers=3") {
				return false, strings.Join(views, "\n")
			}
		}
		return true, ""
	})
	return c
}

// metadata is node addr's own view: its controller, broker count and the
// leaders of __consumer_offsets.
func (c *wrenCluster) metadata(addr string) (string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0))
	if err != nil {
		return "", err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(groups.OffsetsTopic)
	req.Topics = append(req.Topics, rt)
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return "", err
	}
	md := resp.(*kmsg.MetadataResponse)
	var b strings.Builder
	fmt.Fprintf(&b, "controller=%d brokers=%d", md.ControllerID, len(md.Brokers))
	if len(md.Topics) != 1 || md.Topics[0].ErrorCode != 0 || len(md.Topics[0].Partitions) == 0 {
		b.WriteString(" leader=-1")
		return b.String(), nil
	}
	leaders := make([]int32, len(md.Topics[0].Partitions))
	for _, p := range md.Topics[0].Partitions {
		leaders[p.Partition] = p.Leader
	}
	for p, l := range leaders {
		fmt.Fprintf(&b, " p%d:leader=%d", p, l)
	}
	return b.String(), nil
}

// coordinatorOf is the node FindCoordinator names for group, asked of
// node addr.
func (c *wrenCluster) coordinatorOf(t *testing.T, addr, group string) int32 {
	t.Helper()
	adm := testAdmin(t, addr)
	var id int32 = -1
	waitFor(t, "a coordinator for "+group, func() (bool, string) {
		resp := adm.FindGroupCoordinators(testCtx(t), group)
		for _, r := range resp {
			if r.Err != nil {
				return false, r.Err.Error()
			}
			id = r.NodeID
		}
		return id >= 0, fmt.Sprint(resp)
	})
	return id
}

// controller is the acting controller, as node addr names it.
func (c *wrenCluster) controller(t *testing.T) int32 {
	t.Helper()
	md, err := kadm.NewClient(mustClient(t, c.addrs[0])).BrokerMetadata(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return md.Controller
}

func mustClient(t *testing.T, addr string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// otherNode is a node that is neither the controller nor group's
// coordinator, and its address.
func (c *wrenCluster) otherNode(t *testing.T, group string) (int32, string) {
	t.Helper()
	ctrl, coord := c.controller(t), c.coordinatorOf(t, c.addrs[0], group)
	for i, addr := range c.addrs {
		if id := int32(i + 1); id != ctrl && id != coord {
			return id, addr
		}
	}
	// The controller coordinates the group: any other node will do.
	for i, addr := range c.addrs {
		if id := int32(i + 1); id != coord {
			return id, addr
		}
	}
	t.Fatal("no node is neither the controller nor the coordinator")
	return -1, ""
}

// TestGroupCommandsOnCluster runs the group commands against a three-node
// cluster, each from every node: the group's coordinator is one of them,
// the commands must find it from any, and a group that does not exist is
// said so in words, never as the client library's raw shard errors.
func TestGroupCommandsOnCluster(t *testing.T) {
	if testing.Short() || os.Getenv("WREN_TEST_BROKERS") != "" {
		t.Skip("starts a three-node wren cluster")
	}
	c := startWrenCluster(t)
	topic := uniqueTopic(t)
	all := strings.Join(c.addrs, ",")
	mustRun(t, "", "topic", "create", topic, "-p", "3", "-r", "3", "-b", all)
	for _, addr := range c.addrs {
		waitFor(t, topic+" on "+addr, func() (bool, string) {
			r := run(t, "", "offsets", topic, "-b", addr)
			return r.code == 0, r.stderr
		})
	}
	for p := range 3 {
		var in strings.Builder
		for i := range 10 {
			fmt.Fprintf(&in, "p%d-r%d\n", p, i)
		}
		mustRun(t, in.String(), "produce", topic, "--partition", strconv.Itoa(p), "-b", all)
	}

	const group = "cluster-group"
	_, other := c.otherNode(t, group)
	t.Logf("controller %d, coordinator of %s %d; bootstrapping from %s", c.controller(t), group, c.coordinatorOf(t, other, group), other)
	mustRun(t, "", "consume", topic, "-g", group, "-n", "30", "-b", other)

	for i, addr := range c.addrs {
		node := fmt.Sprintf("node %d", i+1)
		d := describeJSON(t, addr, group)
		if d.State != "Empty" || d.TotalLag == nil || *d.TotalLag != 0 || len(d.Offsets) != 3 {
			t.Errorf("%s: describe %s: state %s, total lag %s, %d partitions; want Empty, 0, 3", node, group, d.State, dashOrInt(d.TotalLag), len(d.Offsets))
		}
		if out := mustRun(t, "", "group", "list", "-b", addr).stdout; !strings.Contains(out, group) {
			t.Errorf("%s: group list does not show %s:\n%s", node, group, out)
		}
		for _, args := range [][]string{
			{"group", "describe", "missing-group"},
			{"group", "describe", "missing-group", "--members"},
			{"group", "describe", "missing-group", "--state"},
		} {
			r := mustFail(t, "", append(args, "-b", addr)...)
			if !strings.Contains(r.stderr, "group missing-group does not exist") || strings.Contains(r.stderr, "shard") {
				t.Errorf("%s: %s: stderr %q, want \"group missing-group does not exist\"", node, strings.Join(args, " "), r.stderr)
			}
		}
		r := mustFail(t, "", "group", "delete", "missing-group", "-b", addr)
		if !strings.Contains(r.stdout+r.stderr, "group does not exist") || strings.Contains(r.stdout+r.stderr, "shard") {
			t.Errorf("%s: group delete missing-group: stdout %q stderr %q", node, r.stdout, r.stderr)
		}
	}
	for i, addr := range c.addrs {
		node := fmt.Sprintf("node %d", i+1)
		// Seek every partition to i+1 from this node, and check the
		// committed offsets from the next one.
		to := strconv.Itoa(i + 1)
		mustRun(t, "", "group", "seek", group, "--all-topics", "--to", to, "--execute", "-b", addr)
		if got := committed(t, testAdmin(t, c.addrs[(i+1)%3]), group, topic); fmt.Sprint(got) != fmt.Sprintf("map[0:%s 1:%s 2:%s]", to, to, to) {
			t.Errorf("%s: after seek --to %s, committed %v", node, to, got)
		}
	}
	mustRun(t, "", "group", "delete-offsets", group, "--topic", topic+":0", "-b", other)
	if got := committed(t, testAdmin(t, c.addrs[0]), group, topic); fmt.Sprint(got) != "map[1:3 2:3]" {
		t.Errorf("after delete-offsets of partition 0: committed %v", got)
	}
	out := mustRun(t, "", "group", "delete", group, "-b", other).stdout
	if out != group+": deleted\n" {
		t.Errorf("group delete printed %q", out)
	}
	for i, addr := range c.addrs {
		r := mustFail(t, "", "group", "describe", group, "-b", addr)
		if !strings.Contains(r.stderr, "group "+group+" does not exist") {
			t.Errorf("node %d: describe after delete: stderr %q", i+1, r.stderr)
		}
	}

	// A KIP-848 consumer group, its member bootstrapped from a node that
	// is neither the controller nor its coordinator: described (by
	// ConsumerGroupDescribe) from every node while it runs, then seeked
	// and deleted once it is empty.
	const group848 = "cluster-group-848"
	_, other = c.otherNode(t, group848)
	m := startMember(t, "consume", topic, "-g", group848, "--protocol", "consumer", "--assignor", "uniform", "-b", other)
	for i, addr := range c.addrs {
		d := waitStable(t, addr, group848, 1)
		if d.Type != "consumer" || d.AssignmentStrategy != "uniform" || d.Members[0].partitionCount() != 3 {
			t.Errorf("node %d: consumer group described as %+v", i+1, d)
		}
	}
	waitFor(t, "the KIP-848 member to print 30 records", func() (bool, string) {
		out := m.stdout.String()
		return strings.Count(out, "\n") >= 30, out
	})
	if r := m.stop(t); r.code != 0 {
		t.Fatalf("member exit %d: %s", r.code, r.stderr)
	}
	for i, addr := range c.addrs {
		if d := describeJSON(t, addr, group848); d.Type != "consumer" || d.TotalLag == nil || *d.TotalLag != 0 || len(d.Offsets) != 3 {
			t.Errorf("node %d: after the member left: %+v", i+1, d)
		}
	}
	mustRun(t, "", "group", "seek", group848, "--all-topics", "--to", "start", "--execute", "-b", other)
	if d := describeJSON(t, c.addrs[0], group848); d.TotalLag == nil || *d.TotalLag != 30 {
		t.Errorf("after seek --to start: total lag %s, want 30", dashOrInt(d.TotalLag))
	}
	mustRun(t, "", "group", "delete", group848, "-b", other)
	for i, addr := range c.addrs {
		r := mustFail(t, "", "group", "describe", group848, "-b", addr)
		if !strings.Contains(r.stderr, "group "+group848+" does not exist") {
			t.Errorf("node %d: describe after delete: stderr %q", i+1, r.stderr)
		}
	}
}
