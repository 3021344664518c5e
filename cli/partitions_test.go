package cli

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wren-broker/wren/broker"
	"github.com/wren-broker/wren/config"
)

// elect-leader against a one-node wren: every preferred replica leads, so
// each named partition is "not needed" and the command succeeds; an
// unknown partition fails with exit status 1 and the broker's reason.
func TestPartitionsElectLeader(t *testing.T) {
	b := wrenBroker(t, "")
	topic := uniqueTopic(t)
	mustRun(t, "", "topic", "create", topic, "-p", "2", "-r", "1", "-b", b)

	out := mustRun(t, "", "partitions", "elect-leader", topic+"/0", topic+"/1", "-b", b).stdout
	if strings.Count(out, "not needed") != 2 {
		t.Fatalf("elect-leader of two led partitions printed:\n%s", out)
	}
	out = mustRun(t, "", "partitions", "elect-leader", "--all", "--type", "preferred", "-b", b).stdout
	if !strings.Contains(out, "No partition needed an election") {
		t.Fatalf("elect-leader --all printed:\n%s", out)
	}
	res := mustFail(t, "", "partitions", "elect-leader", "--format", "json", topic+"/9", "-b", b)
	var got []electionOutcome
	if err := json.Unmarshal([]byte(res.stdout), &got); err != nil {
		t.Fatalf("json output %q: %v", res.stdout, err)
	}
	if len(got) != 1 || got[0].Result != "failed" || got[0].Partition != 9 || got[0].Error == "" {
		t.Fatalf("elect-leader of a missing partition: %+v", got)
	}
	// The reason: the Kafka code and the broker's message, once each.
	reason := fmt.Sprintf("UNKNOWN_TOPIC_OR_PARTITION: topic %q has no partition 9 (it has 2, from 0)", topic)
	if got[0].Error != reason || res.stderr != fmt.Sprintf("wren: the election failed for %s/9: %s\n", topic, reason) {
		t.Errorf("elect-leader %s/9: error %q, stderr %q; want the reason %q", topic, got[0].Error, res.stderr, reason)
	}
	res = mustFail(t, "", "partitions", "elect-leader", "nosuch/0", "-b", b)
	if want := `UNKNOWN_TOPIC_OR_PARTITION: topic "nosuch" does not exist`; !strings.Contains(res.stdout, want) || !strings.Contains(res.stderr, want) {
		t.Errorf("elect-leader nosuch/0: stdout %q, stderr %q; want %q in both", res.stdout, res.stderr, want)
	}
	// A move is refused with its reason too.
	res = mustFail(t, "", "partitions", "move", "nosuch/0:1", "-b", b)
	if want := `refused: UNKNOWN_TOPIC_OR_PARTITION: topic "nosuch" does not exist`; !strings.Contains(res.stdout, want) {
		t.Errorf("move nosuch/0:1 printed %q, want %q", res.stdout, want)
	}
	res = mustFail(t, "", "partitions", "move", topic+"/0:7", "-b", b)
	if want := "refused: INVALID_REPLICA_ASSIGNMENT: broker 7 in [7] is not registered"; !strings.Contains(res.stdout, want) {
		t.Errorf("move %s/0:7 printed %q, want %q", topic, res.stdout, want)
	}
	out = mustRun(t, "", "partitions", "elect-leader", "--type", "unclean", topic+"/0", "-b", b).stdout
	if !strings.Contains(out, "not needed") {
		t.Fatalf("unclean election of a led partition printed:\n%s", out)
	}
}

func TestPartitionsElectLeaderUsage(t *testing.T) {
	for _, args := range [][]string{
		{"partitions", "elect-leader"},
		{"partitions", "elect-leader", "--all", "t/0"},
		{"partitions", "elect-leader", "--type", "dirty", "t/0"},
		{"partitions", "elect-leader", "t"},
		{"partitions", "elect-leader", "t/x"},
		{"partitions", "elect-leader", "/0"},
	} {
		res := mustFail(t, "", append(args, "-b", "127.0.0.1:1")...)
		if !strings.Contains(res.stderr, "usage") && !strings.Contains(res.stderr, "want") && !strings.Contains(res.stderr, "must") {
			t.Errorf("%v: stderr %q does not explain the usage error", args, res.stderr)
		}
	}
}

// threeWrenBrokers starts a three-node wren cluster in this process over
// loopback (controller quorum on free ports) and returns the brokers once
// the controller knows all three. The lease and the fetch timeout are the
// shipped defaults: on a loaded machine a 300 ms lease lapsed in
// goroutine stalls, and the controller stepped down in the middle of a
// test.
func threeWrenBrokers(t *testing.T) []*broker.Broker {
	t.Helper()
	brokers, _ := threeWrenBrokersPorts(t)
	return brokers
}

// threeWrenBrokersPorts is threeWrenBrokers, with the ports of the nodes'
// CONTROLLER listeners.
func threeWrenBrokersPorts(t *testing.T) ([]*broker.Broker, []int) {
	t.Helper()
	ports := controllerPorts(t, 3)
	voters := fmt.Sprintf("%q, %q, %q", fmt.Sprintf("1@127.0.0.1:%d", ports[0]), fmt.Sprintf("2@127.0.0.1:%d", ports[1]), fmt.Sprintf("3@127.0.0.1:%d", ports[2]))
	// The data dirs first: cleanups run last-in first-out, so the brokers
	// close before their directories are removed.
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	var brokers []*broker.Broker
	t.Cleanup(func() {
		for _, b := range brokers {
			b.Close()
		}
	})
	for id := 1; id <= 3; id++ {
		text := fmt.Sprintf(`
[broker]
node.id = %d
log.dirs = [%q]
listeners = ["PLAINTEXT://127.0.0.1:0", "CONTROLLER://127.0.0.1:%d"]
[http]
listen = "127.0.0.1:0"
[cluster]
controller.quorum.voters = [%s]
controller.heartbeat.interval.ms = 100
controller.lease.ms = 1500
controller.quorum.fetch.timeout.ms = 2000
controller.quorum.election.backoff.max.ms = 200
broker.heartbeat.interval.ms = 100
broker.session.timeout.ms = 3000
[replication]
auto.leader.rebalance.enable = false
`, id, dirs[id-1], ports[id-1], voters)
		cfg, err := config.Parse(fmt.Sprintf("node%d.toml", id), []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		b, err := broker.Start(cfg, broker.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatalf("start node %d: %v", id, err)
		}
		brokers = append(brokers, b)
	}
	pollUntil(t, "three brokers registered with one controller", func() bool {
		ctrl := brokers[0].Controller().ControllerID()
		for _, b := range brokers {
			if ctrl < 0 || b.Controller().ControllerID() != ctrl || len(b.Controller().Brokers()) != 3 {
				return false
			}
		}
		return true
	})
	return brokers, ports
}

// controllerPorts reserves n distinct loopback ports for the CONTROLLER
// listeners, which controller.quorum.voters must name before the nodes
// start: bound and released, drawn from below the kernel's ephemeral
// range, because a port the kernel hands out for "127.0.0.1:0" is one
// every outgoing connection may take before the node binds it.
func controllerPorts(t *testing.T, n int) []int {
	t.Helper()
	lo, hi := 10000, 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var first, last int
		if _, err := fmt.Sscan(string(b), &first, &last); err == nil && first > 12000 {
			hi = first
		}
	}
	seen := map[int]bool{}
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			t.Fatalf("no free loopback port in [%d, %d) after %d tries", lo, hi, tries)
		}
		p := lo + rand.IntN(hi-lo)
		if seen[p] {
			continue
		}
		seen[p] = true
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		ln.Close()
		ports = append(ports, p)
	}
	return ports
}

// pollUntil polls cond every 10ms for up to 20s.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after 20s waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Under-replicated and unavailable partitions on a three-node cluster:
// with one node closed, `topic describe --under-replicated-partitions`
// lists exactly the partitions whose ISR lost it, with no topic line, and
// `cluster health` lists them as under-replicated; an RF 1 topic on the
// closed node is unavailable and makes the cluster unhealthy.
func TestTopicDescribeUnderReplicatedThreeBrokers(t *testing.T) {
	brokers := threeWrenBrokers(t)
	b := brokers[0].Addr().String() + "," + brokers[1].Addr().String() + "," + brokers[2].Addr().String()
	mustRun(t, "", "topic", "create", "rf3", "-p", "3", "-r", "3", "-b", b)
	mustRun(t, "", "topic", "create", "rf1", "-p", "3", "-r", "1", "-b", b)
	// Every node's view: describe asks whichever node the client picks.
	pollUntil(t, "full ISRs and leaders on every node", func() bool {
		for _, br := range brokers {
			im := br.Controller().Image()
			rf3, rf1 := im.Topic("rf3"), im.Topic("rf1")
			if rf3 == nil || rf1 == nil {
				return false
			}
			for _, p := range rf3.Partitions {
				if len(p.ISR) != 3 || p.Leader < 0 {
					return false
				}
			}
			for _, p := range rf1.Partitions {
				if p.Leader < 0 {
					return false
				}
			}
		}
		return true
	})
	if out := mustRun(t, "", "topic", "describe", "--under-replicated-partitions", "--unavailable-partitions", "-b", b).stdout; out != "" {
		t.Fatalf("a healthy cluster has under-replicated or unavailable partitions:\n%s", out)
	}
	// Close a node that is not the controller, so the survivors keep one.
	victim := brokers[2]
	if victim.Controller().Acting() {
		victim = brokers[1]
	}
	var rest []string
	for _, x := range brokers {
		if x != victim {
			rest = append(rest, x.Addr().String())
		}
	}
	id := victim.Controller().NodeID()
	victim.Close()
	seeds := strings.Join(rest, ",")
	var out string
	pollUntil(t, "three under-replicated partitions of rf3", func() bool {
		out = run(t, "", "topic", "describe", "rf3", "--under-replicated-partitions", "-b", seeds).stdout
		return strings.Count(out, "Partition:") == 3
	})
	if strings.Contains(out, "PartitionCount") {
		t.Errorf("--under-replicated-partitions printed a topic line:\n%s", out)
	}
	var unavailable []string
	for _, p := range brokers[0].Controller().Image().Topic("rf1").Partitions {
		if p.Replicas[0] == id {
			unavailable = append(unavailable, fmt.Sprintf("Partition: %d\t", p.Partition))
		}
	}
	pollUntil(t, "the rf1 partitions of the closed node unavailable", func() bool {
		out = run(t, "", "topic", "describe", "--unavailable-partitions", "-b", seeds).stdout
		if strings.Count(out, "Partition:") != len(unavailable) {
			return false
		}
		for _, u := range unavailable {
			if !strings.Contains(out, "Topic: rf1\t"+u) {
				return false
			}
		}
		return true
	})
	res := run(t, "", "cluster", "health", "--format", "json", "-b", seeds)
	var h struct {
		Healthy         bool     `json:"is_healthy"`
		UnderReplicated []string `json:"under_replicated_partitions"`
		Leaderless      []string `json:"leaderless_partitions"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &h); err != nil {
		t.Fatalf("cluster health json %q: %v", res.stdout, err)
	}
	if h.Healthy || res.code == 0 || len(h.Leaderless) != len(unavailable) || len(h.UnderReplicated) < 3 {
		t.Fatalf("cluster health with node %d closed (exit %d): %+v; want unhealthy, %d leaderless, rf3's 3 partitions under-replicated",
			id, res.code, h, len(unavailable))
	}
}

// move, move-status and move-cancel on three brokers: a partition moves
// off one broker with --wait; a plan file in kafka-reassign-partitions'
// format moves it again; a move to a closed broker stays under way, is
// listed by move-status with the replica it waits for, and move-cancel
// ends it.
func TestPartitionsMoveThreeBrokers(t *testing.T) {
	brokers := threeWrenBrokers(t)
	b := brokers[0].Addr().String() + "," + brokers[1].Addr().String() + "," + brokers[2].Addr().String()
	mustRun(t, "", "topic", "create", "mv", "-p", "1", "-r", "1", "-b", b)
	ctrl := brokers[0]
	for _, x := range brokers {
		if x.Controller().Acting() {
			ctrl = x
		}
	}
	// Moves stay on the controller's node c and one other, x; the third,
	// y, is closed later, and the controller keeps acting.
	c := ctrl.Controller().NodeID()
	var x, y int32
	for _, b := range brokers {
		if id := b.Controller().NodeID(); id != c && x == 0 {
			x = id
		} else if id != c {
			y = id
		}
	}
	out := mustRun(t, "", "partitions", "move", fmt.Sprintf("mv/0:%d", x), "--wait", "-b", b).stdout
	if !strings.Contains(out, "started") || !strings.Contains(out, "All 1 moves completed") {
		t.Fatalf("move --wait printed:\n%s", out)
	}
	if r := ctrl.Controller().Image().Topic("mv").Partitions[0].Replicas; len(r) != 1 || r[0] != x {
		t.Fatalf("after the move mv/0 is on %v, want [%d]", r, x)
	}

	plan := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(plan, []byte(fmt.Sprintf(`{"version":1,"partitions":[{"topic":"mv","partition":0,"replicas":[%d,%d]}]}`, x, c)), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "", "partitions", "move", "--file", plan, "--wait", "-b", b)
	if r := ctrl.Controller().Image().Topic("mv").Partitions[0].Replicas; len(r) != 2 {
		t.Fatalf("after the plan mv/0 is on %v, want two replicas", r)
	}

	// A move to a closed broker waits for it.
	closed := brokers[y-1]
	cid := closed.Controller().NodeID()
	closed.Close()
	pollUntil(t, fmt.Sprintf("broker %d fenced", cid), func() bool {
		bi, ok := ctrl.Controller().Image().Broker(cid)
		return ok && bi.Fenced
	})
	mustRun(t, "", "partitions", "move", fmt.Sprintf("mv/0:%d,%d", x, cid), "-b", b)
	var st []movingPartition
	res := mustRun(t, "", "partitions", "move-status", "--format", "json", "-b", b)
	if err := json.Unmarshal([]byte(res.stdout), &st); err != nil {
		t.Fatalf("move-status json %q: %v", res.stdout, err)
	}
	if len(st) != 1 || len(st[0].AddingReplicas) != 1 || st[0].AddingReplicas[0] != cid {
		t.Fatalf("move-status: %+v, want mv/0 adding %d", st, cid)
	}
	if out := mustRun(t, "", "partitions", "move-status", "-b", b).stdout; !strings.Contains(out, "ADDING") || !strings.Contains(out, fmt.Sprintf("%d: ", cid)) {
		t.Fatalf("move-status text:\n%s", out)
	}
	out = mustRun(t, "", "partitions", "move-cancel", "--all", "-b", b).stdout
	if !strings.Contains(out, "cancelled") {
		t.Fatalf("move-cancel printed:\n%s", out)
	}
	if out := mustRun(t, "", "partitions", "move-status", "-b", b).stdout; !strings.Contains(out, "No partition is being moved") {
		t.Fatalf("move-status after the cancel:\n%s", out)
	}
	mustFail(t, "", "partitions", "move-cancel", "mv/0", "-b", b)
}

func TestPartitionsMoveUsage(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"version":1,"partitions":[{"topic":"t","partition":0}]}`), 0o644)
	unknown := filepath.Join(dir, "unknown.json")
	os.WriteFile(unknown, []byte(`{"version":1,"partitions":[],"extra":1}`), 0o644)
	for _, args := range [][]string{
		{"partitions", "move"},
		{"partitions", "move", "t/0"},
		{"partitions", "move", "t/0:"},
		{"partitions", "move", "t/0:1,x"},
		{"partitions", "move", "t/0:1", "t/0:2"},
		{"partitions", "move", "--file", bad},
		{"partitions", "move", "--file", unknown},
		{"partitions", "move", "--file", bad, "t/0:1"},
		{"partitions", "move-cancel"},
		{"partitions", "move-cancel", "--all", "t/0"},
		{"partitions", "move-status", "t"},
	} {
		res := mustFail(t, "", append(args, "-b", "127.0.0.1:1")...)
		if !strings.Contains(res.stderr, "usage") {
			t.Errorf("%v: stderr %q is not a usage error", args, res.stderr)
		}
	}
}
