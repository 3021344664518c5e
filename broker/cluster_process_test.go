package broker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterNode is one `wren serve` process of a three-node loopback cluster.
type clusterNode struct {
	id   int
	addr string // client listener
	conf string
	logf string
	cmd  *exec.Cmd
	// netns, if set, is the named network namespace the process runs in
	// (netpartition_process_test.go).
	netns string
}

func (n *clusterNode) start(t *testing.T, bin string) {
	t.Helper()
	logf, err := os.OpenFile(n.logf, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	n.cmd = diesWithTest(exec.Command(bin, "serve", "--config", n.conf))
	if n.netns != "" {
		// nsenter joins the namespace and execs wren: the same process,
		// so signals reach wren itself.
		n.cmd = diesWithTest(exec.Command("nsenter", "--net=/run/netns/"+n.netns, bin, "serve", "--config", n.conf))
	}
	n.cmd.Stdout, n.cmd.Stderr = logf, logf
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitListening(t, n.addr)
}

func (n *clusterNode) kill() {
	if n.cmd != nil {
		n.cmd.Process.Signal(syscall.SIGKILL)
		n.cmd.Wait()
		n.cmd = nil
	}
}

// metadataOf asks node n itself (not a broker it discovered) for Metadata
// of every topic and renders what must agree across nodes: controller,
// brokers with their addresses, topics with their partitions.
func metadataOf(ctx context.Context, n *clusterNode) (controller int32, view string, err error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.RequestRetries(0))
	if err != nil {
		return -1, "", err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return -1, "", err
	}
	md := resp.(*kmsg.MetadataResponse)
	var b strings.Builder
	fmt.Fprintf(&b, "controller=%d brokers=", md.ControllerID)
	var brokers []string
	for _, br := range md.Brokers {
		brokers = append(brokers, fmt.Sprintf("%d@%s:%d", br.NodeID, br.Host, br.Port))
	}
	sort.Strings(brokers)
	b.WriteString(strings.Join(brokers, ","))
	sort.Slice(md.Topics, func(i, j int) bool { return *md.Topics[i].Topic < *md.Topics[j].Topic })
	for _, tp := range md.Topics {
		fmt.Fprintf(&b, " %s[", *tp.Topic)
		slices.SortFunc(tp.Partitions, func(x, y kmsg.MetadataResponseTopicPartition) int { return int(x.Partition - y.Partition) })
		for _, p := range tp.Partitions {
			fmt.Fprintf(&b, "%d:l%d:r%v:isr%v ", p.Partition, p.Leader, p.Replicas, p.ISR)
		}
		b.WriteString("]")
	}
	return md.ControllerID, b.String(), nil
}

// TestThreeProcessCluster runs three `wren serve` processes on loopback
// with the default election timeouts: a controller is elected; SIGKILL of
// the controller gets a new one (the time is logged; WREN_FAILOVER_TRIALS
// repeats the kill and restart to measure it); the restarted node does not
// take control back; a topic created while a node is down is on every
// node after it returns, and Metadata from every node agrees.
// WREN_FAILOVER_MODE=stop isolates the controller instead (SIGSTOP: its
// peers hear nothing from it, its sockets stay open) and resumes it with
// SIGCONT after the others elected a new controller; it must not take
// control back either. WREN_FAILOVER_MODE=isolate cuts the controller off
// for real: peer traffic passes proxies (faultproxy_test.go) that hold
// every link of its CONTROLLER listener silent while it runs on, and a
// topic with min.insync.replicas 2 shows its partitions move and its
// acks=all produce refused (isolate_process_test.go); after the heal it
// must follow the new controller with no second election.
func TestThreeProcessCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three wren processes")
	}
	mode := os.Getenv("WREN_FAILOVER_MODE")
	switch mode {
	case "":
		mode = "kill"
	case "kill", "stop", "isolate":
	default:
		t.Fatalf("WREN_FAILOVER_MODE=%q: want kill, stop or isolate", mode)
	}
	trials := 1
	if s := os.Getenv("WREN_FAILOVER_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("WREN_FAILOVER_TRIALS=%q: want a positive number", s)
		}
		trials = n
	}
	dir := t.TempDir()
	bin := wrenBinary(t)
	ports := freePorts(t, 9) // three client, three controller, three operations
	var controllers, httpAddrs []string
	for i := 0; i < 3; i++ {
		controllers = append(controllers, fmt.Sprintf("127.0.0.1:%d", ports[3+i]))
		httpAddrs = append(httpAddrs, fmt.Sprintf("127.0.0.1:%d", ports[6+i]))
	}
	var proxies *peerProxies
	if mode == "isolate" {
		// The voters are the proxies, so the test can cut a node off.
		proxies, controllers = newPeerProxies(t, controllers)
	}
	var voters []string
	for i := 0; i < 3; i++ {
		voters = append(voters, strconv.Quote(fmt.Sprintf("%d@%s", i+1, controllers[i])))
	}
	nodes := make([]*clusterNode, 3)
	for i := range nodes {
		id := i + 1
		n := &clusterNode{id: id, addr: fmt.Sprintf("127.0.0.1:%d", ports[i]),
			conf: filepath.Join(dir, fmt.Sprintf("node%d.toml", id)), logf: filepath.Join(dir, fmt.Sprintf("node%d.log", id))}
		err := os.WriteFile(n.conf, []byte(fmt.Sprintf(`
[broker]
node.id = %d
log.dirs = [%q]
listeners = ["PLAINTEXT://%s", "CONTROLLER://127.0.0.1:%d"]
[http]
listen = %q
[cluster]
controller.quorum.voters = [%s]
broker.heartbeat.interval.ms = 500
broker.session.timeout.ms = 3000
[logging]
level = "info"
`, id, filepath.Join(dir, fmt.Sprintf("data%d", id)), n.addr, ports[3+i], httpAddrs[i], strings.Join(voters, ", "))), 0o644)
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = n
	}
	defer func() {
		for _, n := range nodes {
			n.kill()
		}
		if t.Failed() {
			for _, n := range nodes {
				b, _ := os.ReadFile(n.logf)
				t.Logf("node %d log:\n%s", n.id, b)
			}
		}
	}()
	for _, n := range nodes {
		n.start(t, bin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute+time.Duration(trials)*time.Minute)
	defer cancel()

	// agreed polls until every live node reports the same view with a
	// controller, and returns it.
	agreed := func(what string, live []*clusterNode, timeout time.Duration, ok func(ctrl int32, view string) bool) int32 {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for {
			var ctrl int32 = -1
			var views []string
			same := true
			for k, n := range live {
				c, v, err := metadataOf(ctx, n)
				if err != nil {
					v, same = "error: "+err.Error(), false
				}
				if k == 0 {
					ctrl = c
				} else if v != views[0] {
					same = false
				}
				views = append(views, v)
			}
			if same && ctrl >= 0 && ok(ctrl, views[0]) {
				return ctrl
			}
			if time.Now().After(deadline) {
				var lines []string
				for k, v := range views {
					lines = append(lines, fmt.Sprintf("node %d: %s", live[k].id, v))
				}
				t.Fatalf("timed out after %v waiting for %s; last views:\n%s", timeout, what, strings.Join(lines, "\n"))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	threeBrokers := func(_ int32, v string) bool { return strings.Count(strings.SplitN(v, " ", 3)[1], "@") == 3 }
	start := time.Now()
	ctrl := agreed("a controller and three brokers on every node", nodes, 60*time.Second, threeBrokers)
	t.Logf("controller %d elected, three brokers registered, %v after the processes started", ctrl, time.Since(start).Round(time.Millisecond))
	var iso *isolation
	if mode == "isolate" {
		iso = &isolation{fc: &faultCluster{t: t, bin: bin, nodes: nodes, proxies: proxies}, topic: "isolate-leaders", http: httpAddrs}
		iso.fc.createTopic(ctx, iso.topic)
	}

	var failovers []time.Duration
	for trial := 0; trial < trials; trial++ {
		old := nodes[ctrl-1]
		var others []*clusterNode
		for _, n := range nodes {
			if n != old {
				others = append(others, n)
			}
		}
		signal := "SIGKILL"
		if mode == "stop" {
			signal = "SIGSTOP"
			if err := old.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
		} else if mode == "isolate" {
			signal = "isolation"
			iso.cut(ctx, t, old)
		} else {
			old.kill()
		}
		killed := time.Now()
		newCtrl := agreed(fmt.Sprintf("a new controller after %s of %d", signal, old.id), others, 30*time.Second,
			func(c int32, _ string) bool { return c != int32(old.id) })
		took := time.Since(killed)
		failovers = append(failovers, took)
		t.Logf("trial %d: %s of controller %d, controller %d took over in %v (seen by both survivors through Metadata)",
			trial+1, signal, old.id, newCtrl, took.Round(time.Millisecond))
		if mode == "isolate" {
			iso.elected(ctx, t, trial+1, old, others, newCtrl, took)
		}
		if took > 3*time.Second {
			// Slower than the target: the survivors' last role changes
			// say where the time went.
			for _, n := range others {
				b, _ := os.ReadFile(n.logf)
				var changes []string
				for _, line := range strings.Split(string(b), "\n") {
					if strings.Contains(line, "role changed") {
						changes = append(changes, line)
					}
				}
				t.Logf("node %d's last role changes:\n%s", n.id, strings.Join(changes[max(0, len(changes)-8):], "\n"))
			}
		}
		switch mode {
		case "stop":
			if err := old.cmd.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
		case "isolate":
			iso.heal(ctx, t, trial+1, old, newCtrl)
		default:
			old.start(t, bin)
		}
		ctrl = agreed(fmt.Sprintf("node %d back among three brokers", old.id), nodes, 60*time.Second, threeBrokers)
		if ctrl != newCtrl {
			t.Fatalf("trial %d: after node %d restarted the controller is %d, want %d to keep it", trial+1, old.id, ctrl, newCtrl)
		}
		// It stays so for longer than an election timeout plus its
		// jitter: the returning node does not depose a healthy controller.
		stable := time.Now().Add(4 * time.Second)
		for time.Now().Before(stable) {
			if c, _, err := metadataOf(ctx, old); err == nil && c >= 0 && c != newCtrl {
				t.Fatalf("trial %d: restarted node %d reports controller %d, want %d", trial+1, old.id, c, newCtrl)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if mode == "isolate" {
			iso.afterHeal(ctx, t, trial+1, newCtrl)
		}
	}
	if iso != nil {
		iso.report(t)
	}
	if len(failovers) > 1 {
		slices.Sort(failovers)
		p99 := failovers[(len(failovers)*99+99)/100-1]
		t.Logf("failover (%s) over %d trials: min %v p50 %v p99 %v max %v", mode, len(failovers), failovers[0].Round(time.Millisecond),
			failovers[len(failovers)/2].Round(time.Millisecond), p99.Round(time.Millisecond), failovers[len(failovers)-1].Round(time.Millisecond))
	}

	// A topic created while a follower is down.
	var down *clusterNode
	for _, n := range nodes {
		if n.id != int(ctrl) {
			down = n
			break
		}
	}
	down.kill()
	var live []*clusterNode
	for _, n := range nodes {
		if n != down {
			live = append(live, n)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(live[0].addr, live[1].addr))
	if err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 2, nil, "made-while-down"); err != nil {
		t.Fatalf("create topic with node %d down: %v", down.id, err)
	}
	t.Logf("topic created with node %d down in %v", down.id, time.Since(created).Round(time.Millisecond))
	cl.Close()
	down.start(t, bin)
	agreed("every node to agree on Metadata after healing", nodes, 60*time.Second, func(_ int32, v string) bool {
		return threeBrokers(0, v) && strings.Contains(v, "made-while-down[")
	})
	// wren cluster quorum from any node: three voters up, none lagging
	// once the log is quiet.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := exec.CommandContext(ctx, bin, "cluster", "quorum", "-b", nodes[0].addr).CombinedOutput()
		if err == nil && strings.Count(string(out), " up") == 3 && !strings.Contains(string(out), "unreachable") {
			t.Logf("wren cluster quorum:\n%s", out)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("wren cluster quorum never showed three voters up: %v\n%s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
