package broker

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The partition scenarios of the reliability test plan (F07, F08, F09,
// F10) on a real network. TestNetworkPartitions runs itself again in a
// network namespace of its own (unshare), where it makes a bridge; each of
// the three `wren serve` processes runs in a named namespace of its own,
// joined to the bridge by a veth link, so nodes talk to each other over
// real TCP between real interfaces, and the test's clients reach every
// node the same way. The faults are iptables rules in the nodes'
// namespaces that drop packets, as a broken link or switch would: nothing
// closes a connection, TCP retransmits into the void, and a new
// connection gets no answer to its SYN. The fault proxies of
// TestFaultScenarios hold bytes instead, so the sender's kernel sees them
// acknowledged; these scenarios take that difference away. No traffic
// leaves the namespaces the test made.

// netnsInnerEnv marks the run of the test binary inside the test's own
// network namespace.
const netnsInnerEnv = "WREN_NETNS_INNER"

// testNet is the network of a netns fault cluster: a namespace per node
// with the address 10.99.0.<id>, and the bridge at 10.99.0.254 in the
// test's own namespace.
type testNet struct {
	t *testing.T
	// names are the nodes' namespaces, by id from 1.
	names []string
	mu    sync.Mutex
	// rules are the iptables rules in force, by namespace.
	rules map[string][]string
}

const testNetBridge = "wrenbr0"

// netTools are the commands testNet runs.
var netTools = []string{"unshare", "nsenter", "ip", "iptables-restore"}

func newTestNet(t *testing.T, nodes int) *testNet {
	t.Helper()
	if os.Getenv(netnsInnerEnv) == "" {
		t.Fatal("testNet: only inside the test's own network namespace (runInOwnNetns)")
	}
	tn := &testNet{t: t, rules: map[string][]string{}}
	removeStaleNetns(t)
	tn.must("", "ip", "link", "set", "lo", "up")
	tn.must("", "ip", "link", "add", testNetBridge, "type", "bridge")
	tn.must("", "ip", "addr", "add", "10.99.0.254/24", "dev", testNetBridge)
	tn.must("", "ip", "link", "set", testNetBridge, "up")
	for id := 1; id <= nodes; id++ {
		name := fmt.Sprintf("wren-%d-n%d", os.Getpid(), id)
		tn.must("", "ip", "netns", "add", name)
		tn.names = append(tn.names, name)
		t.Cleanup(func() {
			if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
				t.Errorf("ip netns del %s: %v: %s", name, err, out)
			}
		})
		host := fmt.Sprintf("wrenh%d", id)
		tn.must("", "ip", "link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", name)
		tn.must("", "ip", "link", "set", host, "master", testNetBridge)
		tn.must("", "ip", "link", "set", host, "up")
		tn.must(name, "ip", "link", "set", "lo", "up")
		tn.must(name, "ip", "addr", "add", tn.ip(int32(id))+"/24", "dev", "eth0")
		tn.must(name, "ip", "link", "set", "eth0", "up")
	}
	return tn
}

// removeStaleNetns deletes the namespaces an earlier run left behind when
// it was killed before its cleanup (they are named after its pid, which
// no longer runs). Nothing in them runs any more.
func removeStaleNetns(t *testing.T) {
	t.Helper()
	entries, err := os.ReadDir("/run/netns")
	if err != nil {
		return // none made yet
	}
	for _, e := range entries {
		var pid, id int
		if n, _ := fmt.Sscanf(e.Name(), "wren-%d-n%d", &pid, &id); n != 2 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			continue // its run goes on
		}
		if out, err := exec.Command("ip", "netns", "del", e.Name()).CombinedOutput(); err != nil {
			t.Logf("a stale namespace %s stays: %v: %s", e.Name(), err, out)
		}
	}
}

// ip is node id's address.
func (tn *testNet) ip(id int32) string { return fmt.Sprintf("10.99.0.%d", id) }

// must runs a command in namespace ns ("" for the test's own) and fails
// the test if it fails.
func (tn *testNet) must(ns string, args ...string) {
	tn.t.Helper()
	if ns != "" {
		args = append([]string{"nsenter", "--net=/run/netns/" + ns}, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput(); err != nil {
		tn.t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// drop makes node id's namespace drop packets from (in) and to (out) the
// given peers: a pair of rules on one node cuts its links both ways. The
// test's own address is never dropped: clients still reach every node.
// The namespace's whole rule set is replaced in one iptables-restore, so
// a fault begins at once, not one rule at a time.
func (tn *testNet) drop(id int32, peers []int32, in, out bool) {
	tn.t.Helper()
	ns := tn.names[id-1]
	tn.mu.Lock()
	for _, p := range peers {
		if in {
			tn.rules[ns] = append(tn.rules[ns], "-A INPUT -s "+tn.ip(p)+" -j DROP")
		}
		if out {
			tn.rules[ns] = append(tn.rules[ns], "-A OUTPUT -d "+tn.ip(p)+" -j DROP")
		}
	}
	rules := slices.Clone(tn.rules[ns])
	tn.mu.Unlock()
	tn.restore(ns, rules)
}

// restore replaces the filter table of namespace ns with rules, at once.
func (tn *testNet) restore(ns string, rules []string) {
	tn.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nsenter", "--net=/run/netns/"+ns, "iptables-restore", "-w")
	cmd.Stdin = strings.NewReader("*filter\n" + strings.Join(append(rules, "COMMIT"), "\n") + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		tn.t.Fatalf("iptables-restore in %s (%v): %v: %s", ns, rules, err, out)
	}
}

// heal empties the rule set of every namespace that has rules.
func (tn *testNet) heal() {
	tn.t.Helper()
	tn.mu.Lock()
	var dirty []string
	for ns, rules := range tn.rules {
		if len(rules) > 0 {
			dirty = append(dirty, ns)
		}
	}
	clear(tn.rules)
	tn.mu.Unlock()
	for _, ns := range dirty {
		tn.restore(ns, nil)
	}
}

// peersOf are the nodes other than id.
func peersOf(id int32) []int32 {
	var out []int32
	for p := int32(1); p <= 3; p++ {
		if p != id {
			out = append(out, p)
		}
	}
	return out
}

// cutOff cuts node id off from both peers, both ways, while clients still
// reach it: through the proxies, its connections close and new ones are
// refused; on a real network its packets to and from them are dropped.
func (fc *faultCluster) cutOff(id int32) {
	if fc.net != nil {
		fc.net.drop(id, peersOf(id), true, true)
		return
	}
	fc.proxies.isolate(id)
}

// heal ends every network fault.
func (fc *faultCluster) heal() {
	if fc.net != nil {
		fc.net.heal()
		return
	}
	fc.proxies.heal()
}

// runInOwnNetns runs the test named by t again, in a network namespace of
// its own, and reports its output and result. It skips the test where
// the tools or the rights are missing.
func runInOwnNetns(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("makes network namespaces, veth links and iptables rules, which needs root")
	}
	for _, tool := range netTools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (Debian: iproute2, iptables, util-linux): %v", tool, err)
		}
	}
	// One build, shared with the inner run.
	bin := wrenBinary(t)
	run := "^" + t.Name() + "$"
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() != "" {
		// Keep the caller's subtest selection.
		if _, sub, ok := strings.Cut(f.Value.String(), "/"); ok {
			run += "/" + sub
		}
	}
	args := []string{"--net", os.Args[0], "-test.run=" + run, "-test.v", "-test.count=1", "-test.timeout=40m"}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()
	cmd := diesWithTest(exec.CommandContext(ctx, "unshare", args...))
	cmd.Env = append(os.Environ(), netnsInnerEnv+"=1", "WREN_TEST_BIN="+bin)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Pass the inner run's lines on as they come (the figures, and
	// progress through a long run).
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		fmt.Println("    netns| " + sc.Text())
	}
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("the run in its own network namespace failed (%v); its output is above", err)
		}
		t.Fatal(err)
	}
}

// TestNetworkPartitions runs F07, F08, F09 (a deaf controller, and a deaf
// follower) and F10 on three wren processes in network namespaces of
// their own, with the workload and checks of TestFaultScenarios. It needs
// root, iproute2 and iptables; without them it is skipped and says why.
// WREN_FAULTS=long holds every fault for the plan's full length.
func TestNetworkPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three wren processes")
	}
	t.Parallel() // with TestFaultScenarios: see there
	if os.Getenv(netnsInnerEnv) == "" {
		runInOwnNetns(t)
		return
	}
	long := faultsLong(t)
	if long {
		t.Log(longModeLengths())
	}
	fc := startFaultClusterWith(t, faultClusterOptions{netns: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	t.Logf("cluster of three network namespaces formed and a topic fully replicated %v after the processes started", fc.formed(ctx))

	fc.scenario(ctx, t, "F07", func(t *testing.T, topic string, w *faultWorkload) { fc.f07(ctx, t, topic, w, long) })
	fc.scenario(ctx, t, "F08", func(t *testing.T, topic string, w *faultWorkload) { fc.f08(ctx, t, topic, w, long) })
	fc.scenario(ctx, t, "F09-controller", func(t *testing.T, topic string, w *faultWorkload) { fc.f09(ctx, t, topic, w, long, true) })
	fc.scenario(ctx, t, "F09-follower", func(t *testing.T, topic string, w *faultWorkload) { fc.f09(ctx, t, topic, w, long, false) })
	fc.scenario(ctx, t, "F10", func(t *testing.T, topic string, w *faultWorkload) { fc.f10(ctx, t, topic, w, long) })
}

// quorumView is one node's view of the metadata quorum: the controller it
// names in Metadata and the controller epoch it is at.
type quorumView struct {
	controller int32
	epoch      int64
	err        error
}

// quorumViews asks every live node for its view, by id from 1; a node
// that does not answer has err set.
func (fc *faultCluster) quorumViews(ctx context.Context) []quorumView {
	views := make([]quorumView, len(fc.nodes))
	for i, n := range fc.nodes {
		if n.cmd == nil {
			views[i].err = errors.New("not running")
			continue
		}
		c, _, err := topicState(ctx, n, "f-setup")
		if err != nil {
			views[i].err = err
			continue
		}
		e, _, err := quorumMetrics(ctx, fc.net.httpAddr(int32(n.id)))
		views[i] = quorumView{controller: c, epoch: e, err: err}
	}
	return views
}

// httpAddr is node id's operations endpoint.
func (tn *testNet) httpAddr(id int32) string { return tn.ip(id) + ":9644" }

// quorumWatch samples every node's view until it is stopped, and keeps
// what the plan's checks need: the highest epoch seen, and any sample in
// which two nodes named themselves controller at the same epoch (a split
// brain).
type quorumWatch struct {
	stop     chan struct{}
	done     chan struct{}
	samples  int
	maxEpoch int64
	// selfClaims counts the samples where two nodes named themselves
	// controller at different epochs (one of them stale, its lease not
	// yet run out: allowed); splitBrain those at the same epoch.
	selfClaims int
	splitBrain []string
	// Set by healAndWatch: how long the fault lasted, and the controller
	// and epoch every node agreed on after the heal, and how soon.
	held       time.Duration
	controller int32
	epoch      int64
	follow     time.Duration
}

func (qw *quorumWatch) String() string {
	return fmt.Sprintf("held %v; after the heal every node named %d at epoch %d within %v; highest epoch seen %d in %d samples; %d samples with a stale self-claim",
		qw.held.Round(time.Millisecond), qw.controller, qw.epoch, qw.follow.Round(time.Millisecond), qw.maxEpoch, qw.samples, qw.selfClaims)
}

// healAndWatch ends scenario name's fault (begun at from), waits until
// every node names the same controller at the same epoch and ok holds,
// watches the quorum a while longer (afterHeal), stops qw and fails on a
// split brain it saw. It returns the controller and epoch agreed on.
func (fc *faultCluster) healAndWatch(ctx context.Context, t *testing.T, name string, qw *quorumWatch, from time.Time, long bool, ok func(int32, int64) bool) (int32, int64) {
	t.Helper()
	fc.heal()
	healed := time.Now()
	qw.held = healed.Sub(from)
	qw.controller, qw.epoch = fc.controllerEpoch(ctx, t, name+" after the heal", ok)
	qw.follow = time.Since(healed)
	hold(afterHeal(long))
	qw.end()
	if len(qw.splitBrain) > 0 {
		t.Fatalf("%s: split brain: %v\n%s", name, qw.splitBrain, fc.quorumEvents(from))
	}
	return qw.controller, qw.epoch
}

func (fc *faultCluster) watchQuorum(ctx context.Context) *quorumWatch {
	qw := &quorumWatch{stop: make(chan struct{}), done: make(chan struct{}), maxEpoch: -1}
	go func() {
		defer close(qw.done)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			views := fc.quorumViews(ctx)
			qw.samples++
			claims := map[int64][]int{}
			for i, v := range views {
				if v.err != nil {
					continue
				}
				qw.maxEpoch = max(qw.maxEpoch, v.epoch)
				if v.controller == int32(i+1) {
					claims[v.epoch] = append(claims[v.epoch], i+1)
				}
			}
			if len(claims) > 1 {
				qw.selfClaims++
			}
			for e, ids := range claims {
				if len(ids) > 1 {
					qw.splitBrain = append(qw.splitBrain, fmt.Sprintf("nodes %v all controller at epoch %d", ids, e))
				}
			}
			select {
			case <-qw.stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return qw
}

func (qw *quorumWatch) end() *quorumWatch {
	close(qw.stop)
	<-qw.done
	return qw
}

// controllerEpoch waits until every live node names the same controller
// at the same epoch and returns both.
func (fc *faultCluster) controllerEpoch(ctx context.Context, t *testing.T, what string, ok func(controller int32, epoch int64) bool) (int32, int64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last []quorumView
	for time.Now().Before(deadline) {
		last = fc.quorumViews(ctx)
		agreed := true
		for _, v := range last {
			agreed = agreed && v.err == nil && v.controller == last[0].controller && v.epoch == last[0].epoch
		}
		if agreed && last[0].controller > 0 && ok(last[0].controller, last[0].epoch) {
			return last[0].controller, last[0].epoch
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: no agreement within 60 s; last views %+v", what, last)
	return 0, 0
}

// afterHeal is how long a scenario keeps watching the quorum after the
// heal: several election timeouts, for an election the heal set off.
func afterHeal(long bool) time.Duration {
	if long {
		return 15 * time.Second
	}
	return 5 * time.Second
}

// quorumEvents are the lines of every node's log since the given time
// that say what its metadata quorum did (role changes, lost peer
// connections), prefixed with the node's id: what explains an election.
func (fc *faultCluster) quorumEvents(since time.Time) string {
	var out []string
	for _, n := range fc.nodes {
		b, err := os.ReadFile(n.logf)
		if err != nil {
			out = append(out, fmt.Sprintf("node %d: %v", n.id, err))
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, "metadata quorum: role changed") && !strings.Contains(line, "connection to peer lost") {
				continue
			}
			ts, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
			if at, err := time.Parse(time.RFC3339Nano, ts); err == nil && at.Before(since) {
				continue
			}
			out = append(out, fmt.Sprintf("node %d: %s", n.id, line))
		}
	}
	return strings.Join(out, "\n")
}

// hold lets a fault last d, its length by the plan: not a wait for a
// condition.
func hold(d time.Duration) { time.Sleep(d) }

// f08 isolates the controller (by Bully, the highest id) from both peers,
// clients still reaching it, for 8 s (60 s long), then heals: the others
// must elect a controller at the next epoch, and after the heal nothing
// may preempt it: one election in all.
func (fc *faultCluster) f08(ctx context.Context, t *testing.T, topic string, w *faultWorkload, long bool) {
	ctrl, epoch := fc.controllerEpoch(ctx, t, "F08 before the fault", func(int32, int64) bool { return true })
	length := 8 * time.Second
	if long {
		length = 60 * time.Second
	}
	qw := fc.watchQuorum(ctx)
	from := time.Now()
	fc.cutOff(ctrl)
	survivors := fc.live(ctrl)
	var newCtrl int32
	var took time.Duration
	deadline := time.Now().Add(60 * time.Second)
	for newCtrl == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("F08: no new controller named by both survivors 60 s after isolating %d", ctrl)
		}
		c0, _, err0 := topicState(ctx, survivors[0], "f-setup")
		c1, _, err1 := topicState(ctx, survivors[1], "f-setup")
		if err0 == nil && err1 == nil && c0 == c1 && c0 > 0 && c0 != ctrl {
			newCtrl, took = c0, time.Since(from)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.waitAcks(t, 200, "with the controller isolated")
	hold(length - time.Since(from))
	// The watch after the heal would see a preemption by the returning
	// higher id: it would come within a few election timeouts.
	c, e := fc.healAndWatch(ctx, t, "F08", qw, from, long, func(c int32, e int64) bool { return c != ctrl })
	t.Logf("F08: controller %d (epoch %d) isolated: both survivors named %d after %v; %s; longest gap between acks %v",
		ctrl, epoch, newCtrl, took.Round(time.Millisecond), qw, w.longestAckGap(from, time.Now()).Round(time.Millisecond))
	if c != newCtrl || e != epoch+1 || qw.maxEpoch != epoch+1 {
		t.Fatalf("F08: want exactly one election (controller %d at epoch %d); after the heal %d at epoch %d, highest epoch seen %d; the quorum's events:\n%s",
			newCtrl, epoch+1, c, e, qw.maxEpoch, fc.quorumEvents(from))
	}
}

// f09 makes one node deaf to its peers (it still sends; nothing from them
// arrives) for 10 s (120 s long), then heals: the controller, or a
// follower. No election storm: at most one election in all.
func (fc *faultCluster) f09(ctx context.Context, t *testing.T, topic string, w *faultWorkload, long, controller bool) {
	ctrl, epoch := fc.controllerEpoch(ctx, t, "F09 before the fault", func(int32, int64) bool { return true })
	deaf := ctrl
	if !controller {
		deaf = peersOf(ctrl)[0]
	}
	length := 10 * time.Second
	if long {
		length = 120 * time.Second
	}
	qw := fc.watchQuorum(ctx)
	from := time.Now()
	fc.net.drop(deaf, peersOf(deaf), true, false)
	w.waitAcks(t, 200, fmt.Sprintf("with node %d deaf", deaf))
	hold(length - time.Since(from))
	_, e := fc.healAndWatch(ctx, t, "F09", qw, from, long, func(int32, int64) bool { return true })
	t.Logf("F09: node %d (the controller: %v) deaf to its peers, epoch %d before: %s; longest gap between acks %v",
		deaf, controller, epoch, qw, w.longestAckGap(from, time.Now()).Round(time.Millisecond))
	if qw.maxEpoch > epoch+1 || e > epoch+1 {
		t.Fatalf("F09: an election storm: epoch %d before, %d after, highest seen %d (the plan allows two epochs in all); the quorum's events:\n%s",
			epoch, e, qw.maxEpoch, fc.quorumEvents(from))
	}
}

// f10 cuts the link between nodes 1 and 3 only, for 10 s (longCutHold long);
// both still reach node 2. No split brain, and the churn is bounded: at
// most one election, and each partition changes leader at most twice.
func (fc *faultCluster) f10(ctx context.Context, t *testing.T, topic string, w *faultWorkload, long bool) {
	_, epoch := fc.controllerEpoch(ctx, t, "F10 before the fault", func(int32, int64) bool { return true })
	_, before := fc.waitHealthy(ctx, fc.nodes[1], topic)
	length := 10 * time.Second
	if long {
		length = longCutHold
	}
	qw := fc.watchQuorum(ctx)
	from := time.Now()
	fc.net.drop(1, []int32{3}, true, true)
	w.waitAcks(t, 200, "with nodes 1 and 3 cut apart")
	hold(length - time.Since(from))
	fc.healAndWatch(ctx, t, "F10", qw, from, long, func(int32, int64) bool { return true })
	_, after := fc.waitHealthy(ctx, fc.nodes[1], topic)
	var changes []string
	worst := int32(0)
	for p := range after {
		d := after[p].leaderEpoch - before[p].leaderEpoch
		worst = max(worst, d)
		changes = append(changes, fmt.Sprintf("p%d %d→%d (+%d)", p, before[p].leader, after[p].leader, d))
	}
	t.Logf("F10: nodes 1 and 3 cut apart, epoch %d before: %s; leaders %s; longest gap between acks %v",
		epoch, qw, strings.Join(changes, ", "), w.longestAckGap(from, time.Now()).Round(time.Millisecond))
	if qw.maxEpoch > epoch+1 {
		t.Fatalf("F10: more than one election: epoch %d before, highest seen %d; the quorum's events:\n%s", epoch, qw.maxEpoch, fc.quorumEvents(from))
	}
	if worst > 2 {
		t.Fatalf("F10: a partition changed leader epoch %d times (at most 2 allowed): %s", worst, strings.Join(changes, ", "))
	}
}
