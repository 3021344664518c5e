package broker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// processCluster is three `wren serve` processes on loopback with the
// default election timeouts and the session of TestThreeProcessCluster.
type processCluster struct {
	t     *testing.T
	bin   string
	nodes []*clusterNode
}

func startProcessCluster(t *testing.T) *processCluster {
	t.Helper()
	return startProcessClusterIn(t, t.TempDir())
}

// startProcessClusterIn is startProcessCluster with the nodes' files in
// dir.
func startProcessClusterIn(t *testing.T, dir string) *processCluster {
	t.Helper()
	return startProcessClusterWith(t, dir, "")
}

// startProcessClusterWith is startProcessClusterIn with extra (further
// tables, such as [topics] or [uplink.NAME]) in every node's config.
func startProcessClusterWith(t *testing.T, dir, extra string) *processCluster {
	t.Helper()
	pc := &processCluster{t: t, bin: wrenBinary(t)}
	ports := freePorts(t, 6) // three client, three controller
	var voters []string
	for i := 0; i < 3; i++ {
		voters = append(voters, strconv.Quote(fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[3+i])))
	}
	for i := 0; i < 3; i++ {
		id := i + 1
		n := &clusterNode{id: id, addr: fmt.Sprintf("127.0.0.1:%d", ports[i]),
			conf: filepath.Join(dir, fmt.Sprintf("node%d.toml", id)), logf: filepath.Join(dir, fmt.Sprintf("node%d.log", id))}
		err := os.WriteFile(n.conf, []byte(fmt.Sprintf(`
[broker]
node.id = %d
log.dirs = [%q]
listeners = ["PLAINTEXT://%s", "CONTROLLER://127.0.0.1:%d"]
[http]
listen = "127.0.0.1:0"
[cluster]
controller.quorum.voters = [%s]
broker.heartbeat.interval.ms = 500
broker.session.timeout.ms = 3000
[logging]
level = "info"
%s`, id, filepath.Join(dir, fmt.Sprintf("data%d", id)), n.addr, ports[3+i], strings.Join(voters, ", "), extra)), 0o644)
		if err != nil {
			t.Fatal(err)
		}
		pc.nodes = append(pc.nodes, n)
	}
	t.Cleanup(func() {
		for _, n := range pc.nodes {
			n.kill()
		}
		if t.Failed() {
			for _, n := range pc.nodes {
				b, _ := os.ReadFile(n.logf)
				t.Logf("node %d log:\n%s", n.id, b)
			}
		}
	})
	for _, n := range pc.nodes {
		n.start(t, pc.bin)
	}
	return pc
}

// metadata asks node n itself for Metadata of every topic, waiting as long
// as ctx allows for the answer.
func (pc *processCluster) metadata(ctx context.Context, n *clusterNode) (*kmsg.MetadataResponse, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.RequestRetries(0))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	resp, err := cl.SeedBrokers()[0].Request(ctx, kmsg.NewPtrMetadataRequest())
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// waitFor polls Metadata from node n until ok holds.
func (pc *processCluster) waitFor(what string, n *clusterNode, timeout time.Duration, ok func(*kmsg.MetadataResponse) bool) *kmsg.MetadataResponse {
	pc.t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		md, err := pc.metadata(ctx, n)
		cancel()
		if err == nil && ok(md) {
			return md
		}
		if err != nil {
			last = err.Error()
		} else {
			last = describeMetadata(md)
		}
		if time.Now().After(deadline) {
			pc.t.Fatalf("timed out after %v waiting for %s on node %d; last answer: %s", timeout, what, n.id, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func describeMetadata(md *kmsg.MetadataResponse) string {
	var b strings.Builder
	fmt.Fprintf(&b, "controller=%d brokers=", md.ControllerID)
	for _, br := range md.Brokers {
		fmt.Fprintf(&b, "%d,", br.NodeID)
	}
	for _, tp := range md.Topics {
		fmt.Fprintf(&b, " %s[", *tp.Topic)
		slices.SortFunc(tp.Partitions, func(x, y kmsg.MetadataResponseTopicPartition) int { return int(x.Partition - y.Partition) })
		for _, p := range tp.Partitions {
			fmt.Fprintf(&b, "%d:l%d ", p.Partition, p.Leader)
		}
		b.WriteString("]")
	}
	return b.String()
}

func hasBroker(md *kmsg.MetadataResponse, id int32) bool {
	for _, b := range md.Brokers {
		if b.NodeID == id {
			return true
		}
	}
	return false
}

func topicOf(md *kmsg.MetadataResponse, name string) *kmsg.MetadataResponseTopic {
	for i := range md.Topics {
		if md.Topics[i].Topic != nil && *md.Topics[i].Topic == name {
			return &md.Topics[i]
		}
	}
	return nil
}

// leadersWithout reports whether every partition of topic has a leader,
// none of them node id.
func leadersWithout(md *kmsg.MetadataResponse, topic string, id int32) bool {
	tp := topicOf(md, topic)
	if tp == nil || len(tp.Partitions) == 0 {
		return false
	}
	for _, p := range tp.Partitions {
		if p.Leader < 0 || p.Leader == id {
			return false
		}
	}
	return true
}

// createTopicRetrying creates a topic, retrying while not enough brokers are
// registered yet for its replication factor (a node lists itself among
// the brokers of its Metadata before the controller registered it).
func createTopicRetrying(ctx context.Context, t *testing.T, cl *kgo.Client, name string, partitions int32, rf int16) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, rf, nil, name)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("create topic %s: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRestartedNodeServesCurrentMetadata: a node stopped while a topic is
// created and its leaderships move away must not answer from the image it
// replays from its own disk when it comes back: its first Metadata answer
// already has the new topic and none of the leaderships it lost (it
// accepts clients only once it caught up with the controller).
func TestRestartedNodeServesCurrentMetadata(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three wren processes")
	}
	pc := startProcessCluster(t)
	n1 := pc.nodes[0]
	md := pc.waitFor("a controller and three brokers", n1, 60*time.Second, func(md *kmsg.MetadataResponse) bool {
		return md.ControllerID >= 0 && len(md.Brokers) == 3
	})
	ctrl := md.ControllerID
	// The node to stop: a follower that leads some partitions.
	var down *clusterNode
	var others []*clusterNode
	for _, n := range pc.nodes {
		if int32(n.id) != ctrl && down == nil {
			down = n
		} else {
			others = append(others, n)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(others[0].addr, others[1].addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createTopicRetrying(ctx, t, cl, "before", 6, 3)
	pc.waitFor(fmt.Sprintf("topic before led in part by node %d", down.id), down, 30*time.Second, func(md *kmsg.MetadataResponse) bool {
		tp := topicOf(md, "before")
		return tp != nil && slices.ContainsFunc(tp.Partitions, func(p kmsg.MetadataResponseTopicPartition) bool { return p.Leader == int32(down.id) })
	})

	down.kill()
	// Its session expires: it is fenced and its leaderships move.
	pc.waitFor(fmt.Sprintf("node %d fenced and its leaderships moved", down.id), others[0], 30*time.Second, func(md *kmsg.MetadataResponse) bool {
		return !hasBroker(md, int32(down.id)) && leadersWithout(md, "before", int32(down.id))
	})
	createTopicRetrying(ctx, t, cl, "while-down", 3, 2)
	pc.waitFor("topic while-down", others[0], 30*time.Second, func(md *kmsg.MetadataResponse) bool {
		return leadersWithout(md, "while-down", int32(down.id))
	})

	down.start(t, pc.bin)
	// The very first answer, however long it takes to come.
	first, err := pc.metadata(ctx, down)
	if err != nil {
		t.Fatalf("first Metadata from restarted node %d: %v", down.id, err)
	}
	if topicOf(first, "while-down") == nil || !leadersWithout(first, "while-down", int32(down.id)) {
		t.Fatalf("restarted node %d's first Metadata misses topic while-down (created while it was down): %s", down.id, describeMetadata(first))
	}
	if !leadersWithout(first, "before", int32(down.id)) {
		t.Fatalf("restarted node %d's first Metadata still shows the leaderships it lost while down: %s", down.id, describeMetadata(first))
	}
	log, _ := os.ReadFile(down.logf)
	if !strings.Contains(string(log), "caught up with the metadata log; serving clients") {
		t.Fatalf("node %d never said it caught up", down.id)
	}
}

// TestControllerLeaderFailover measures how long the partitions led by
// the controller stay leaderless when it is SIGKILLed: an election, then
// the new controller fences it once its session, counted from when it
// was last heard, expires. WREN_FAILOVER_TRIALS repeats the kill and
// restart; the figures are logged.
func TestControllerLeaderFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three wren processes")
	}
	trials := 1
	if s := os.Getenv("WREN_FAILOVER_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("WREN_FAILOVER_TRIALS=%q: want a positive number", s)
		}
		trials = n
	}
	pc := startProcessCluster(t)
	md := pc.waitFor("a controller and three brokers", pc.nodes[0], 60*time.Second, func(md *kmsg.MetadataResponse) bool {
		return md.ControllerID >= 0 && len(md.Brokers) == 3
	})
	ctrl := md.ControllerID
	cl, err := kgo.NewClient(kgo.SeedBrokers(pc.nodes[0].addr, pc.nodes[1].addr, pc.nodes[2].addr))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	createTopicRetrying(ctx, t, cl, "led", 6, 3)
	cl.Close()
	var newLeader, newController []time.Duration
	for trial := 0; trial < trials; trial++ {
		old := pc.nodes[ctrl-1]
		var others []*clusterNode
		for _, n := range pc.nodes {
			if n != old {
				others = append(others, n)
			}
		}
		// The controller leads some of the partitions: preferred leaders
		// are spread evenly, so a preferred election gives it its share
		// once it is back in the ISRs.
		pc.leadSome(ctx, old, others)
		old.kill()
		killed := time.Now()
		var ctrlAt time.Duration
		pc.waitFor(fmt.Sprintf("new leaders after SIGKILL of controller %d", old.id), others[0], 60*time.Second, func(md *kmsg.MetadataResponse) bool {
			if ctrlAt == 0 && md.ControllerID >= 0 && md.ControllerID != int32(old.id) {
				ctrlAt = time.Since(killed)
				ctrl = md.ControllerID
			}
			return leadersWithout(md, "led", int32(old.id))
		})
		took := time.Since(killed)
		newLeader, newController = append(newLeader, took), append(newController, ctrlAt)
		t.Logf("trial %d: SIGKILL of controller %d: controller %d in %v, every partition led again in %v", trial+1, old.id, ctrl,
			ctrlAt.Round(time.Millisecond), took.Round(time.Millisecond))
		// The new controller leads the partitions it took over: the
		// next trial kills it.
		old.start(t, pc.bin)
		if trial+1 < trials {
			// A node that just started stays quiet for an election
			// timeout plus twice the backoff (3 s by default; a restart
			// must not vote sooner than it would have without the crash),
			// so a kill within that window measures the restart, not the
			// failover: the next trial starts from a steady cluster.
			time.Sleep(5 * time.Second)
		}
	}
	slices.Sort(newLeader)
	slices.Sort(newController)
	t.Logf("controller+leader SIGKILL over %d trials: new partition leaders min %v p50 %v max %v; new controller p50 %v max %v",
		trials, newLeader[0].Round(time.Millisecond), newLeader[len(newLeader)/2].Round(time.Millisecond),
		newLeader[len(newLeader)-1].Round(time.Millisecond), newController[len(newController)/2].Round(time.Millisecond),
		newController[len(newController)-1].Round(time.Millisecond))
}

// leadSome waits until node n is the controller, three brokers are up and
// n leads part of topic led, asking for preferred elections meanwhile.
func (pc *processCluster) leadSome(ctx context.Context, n *clusterNode, via []*clusterNode) {
	pc.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(via[0].addr, via[1].addr))
	if err != nil {
		pc.t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(90 * time.Second)
	for {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		md, err := pc.metadata(c, via[0])
		cancel()
		if err == nil {
			tp := topicOf(md, "led")
			if md.ControllerID == int32(n.id) && len(md.Brokers) == 3 && tp != nil &&
				slices.ContainsFunc(tp.Partitions, func(p kmsg.MetadataResponseTopicPartition) bool { return p.Leader == int32(n.id) }) {
				return
			}
		}
		if time.Now().After(deadline) {
			what := fmt.Sprint(err)
			if err == nil {
				what = describeMetadata(md)
			}
			pc.t.Fatalf("node %d is not the controller leading part of topic led after 90 s: %s", n.id, what)
		}
		c, cancel = context.WithTimeout(ctx, 5*time.Second)
		adm.ElectLeaders(c, kadm.ElectPreferredReplica, nil)
		cancel()
		time.Sleep(200 * time.Millisecond)
	}
}
