package broker

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestUncleanRestartProcess: three `wren serve` processes under
// log.flush.policy interval (under ack a crash loses nothing acknowledged,
// and the rule does not apply: cluster/testdata/liveness/acks_durable.txt),
// the fault workload (idempotent acks=all producer, RF 3,
// min.insync.replicas 2) running throughout. SIGKILL of a partition's
// leader, restarted at once, well inside broker.session.timeout.ms (4 s):
// its data directory has no clean-shutdown marker, so the controller
// registers its new incarnation with KIP-966's rule before it serves: leadership moves to another ISR
// member at a higher leader epoch, and the restarted broker rejoins the
// ISR as a follower once caught up. No acknowledged record may be lost
// (the fault checker, then a byte comparison of the three replicas). Then
// SIGTERM of a leader, restarted at once: a controlled shutdown and a
// clean one, so its new incarnation registers without the unclean rule.
func TestUncleanRestartProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three wren processes")
	}
	fc := startFaultClusterWith(t, faultClusterOptions{config: uncleanClusterConfig})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const topic = "unclean-restart"
	fc.createTopic(ctx, topic)
	ctrl, ps := fc.waitHealthy(ctx, fc.nodes[0], topic)
	w := startWorkload(t, fc, topic)
	w.waitAcks(t, 500, "before the kill")

	// A partition not led by the controller, so the kill is not also a
	// controller failover.
	p := slices.IndexFunc(ps, func(s partitionState) bool { return s.leader != ctrl })
	if p < 0 {
		t.Fatalf("the controller %d leads every partition %+v", ctrl, ps)
	}
	leader, epoch := ps[p].leader, ps[p].leaderEpoch
	victim := fc.node(leader)
	observer := fc.node(ctrl)
	uncleanBefore := countLogLines(t, fc, registeredLine(leader, true))
	from := time.Now()
	victim.kill()
	fc.restart(victim)
	restarted := time.Since(from)
	took, after := fc.waitNewLeader(ctx, observer, topic, p, leader, from)
	if after.leaderEpoch <= epoch || !slices.Contains(ps[p].isr, after.leader) {
		t.Fatalf("partition %d after its leader %d's unclean restart: leader %d at epoch %d (was %d), want another ISR member %v at a higher epoch",
			p, leader, after.leader, after.leaderEpoch, epoch, ps[p].isr)
	}
	// The controller logs a registration once it returns from the commit,
	// which other goroutines (a Metadata answer) may see first.
	if n := waitLogLines(t, fc, registeredLine(leader, true), uncleanBefore); n <= uncleanBefore {
		t.Fatalf("no node logged broker %d's registration after an unclean shutdown (%d such lines before the kill, %d now)", leader, uncleanBefore, n)
	}
	if n := countLogLines(t, fc, sessionFenceLine(leader)); n > 0 {
		t.Fatalf("broker %d was fenced for an expired session (%d times): the restart did not happen inside the session, so this test proves nothing about the unclean rule", leader, n)
	}
	// Back in every ISR as a follower once caught up.
	_, healed := fc.waitHealthy(ctx, observer, topic)
	w.waitAcks(t, 500, "after the unclean restart")
	t.Logf("SIGKILL of leader %d of partition %d (epoch %d), restarted and listening after %v: node %d leads at epoch %d after %v; healed: leader %d epoch %d ISR %v; longest gap between acks on the partition %v",
		leader, p, epoch, restarted.Round(time.Millisecond), after.leader, after.leaderEpoch, took.Round(time.Millisecond),
		healed[p].leader, healed[p].leaderEpoch, healed[p].isr, w.longestAckGapOn([]int32{int32(p)}, from, time.Now()).Round(time.Millisecond))

	// SIGTERM: a controlled shutdown, then a clean restart.
	ctrl, ps = fc.waitHealthy(ctx, observer, topic)
	p = slices.IndexFunc(ps, func(s partitionState) bool { return s.leader != ctrl })
	if p < 0 {
		t.Fatalf("the controller %d leads every partition %+v", ctrl, ps)
	}
	leader, epoch = ps[p].leader, ps[p].leaderEpoch
	victim, observer = fc.node(leader), fc.node(ctrl)
	uncleanBefore = countLogLines(t, fc, registeredLine(leader, true))
	cleanBefore := countLogLines(t, fc, registeredLine(leader, false))
	from = time.Now()
	victim.terminate(t)
	fc.restart(victim)
	_, healed = fc.waitHealthy(ctx, observer, topic)
	if n := waitLogLines(t, fc, registeredLine(leader, false), cleanBefore); n <= cleanBefore {
		t.Fatalf("no node logged broker %d's registration after a clean shutdown (%d such lines before SIGTERM, %d now)", leader, cleanBefore, n)
	}
	if n := countLogLines(t, fc, registeredLine(leader, true)); n != uncleanBefore {
		t.Fatalf("broker %d was registered as back from an unclean shutdown after SIGTERM (%d such lines before, %d now)", leader, uncleanBefore, n)
	}
	t.Logf("SIGTERM of leader %d of partition %d (epoch %d), restarted: healed after %v: leader %d epoch %d ISR %v",
		leader, p, epoch, time.Since(from).Round(time.Millisecond), healed[p].leader, healed[p].leaderEpoch, healed[p].isr)

	w.waitAcks(t, 500, "after healing")
	w.finish(t)
	fc.waitHealthy(ctx, observer, topic)
	w.check(t, fc).mustBeClean(t)
	fc.compareReplicaLogs(t, topic)
}

// uncleanClusterConfig: acknowledged records may be lost in a crash (not
// in a SIGKILL, which keeps the page cache), so a crash is unclean.
const uncleanClusterConfig = `
[storage]
log.flush.policy = "interval"
`

// terminate sends SIGTERM (a controlled shutdown, then a clean close) and
// waits for the process to exit, at most a minute.
func (n *clusterNode) terminate(t *testing.T) {
	t.Helper()
	if n.cmd == nil {
		return
	}
	n.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- n.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("node %d exited after SIGTERM with %v", n.id, err)
		}
	case <-time.After(time.Minute):
		n.cmd.Process.Signal(syscall.SIGKILL)
		<-done
		t.Fatalf("node %d did not exit within a minute of SIGTERM", n.id)
	}
	n.cmd = nil
}

// registeredLine matches the acting controller's log line for a
// registration of broker id after an unclean (or clean) shutdown.
func registeredLine(id int32, unclean bool) *regexp.Regexp {
	if unclean {
		return regexp.MustCompile(fmt.Sprintf(`msg="metadata quorum: broker registered" broker=%d .*unclean=true .*reason="restarted after an unclean shutdown: out of every ISR and ELR"`, id))
	}
	return regexp.MustCompile(fmt.Sprintf(`msg="metadata quorum: broker registered" broker=%d .*unclean=false .*reason="restarted after a clean shutdown"`, id))
}

func sessionFenceLine(id int32) *regexp.Regexp {
	return regexp.MustCompile(fmt.Sprintf(`msg="metadata quorum: broker fenced" broker=%d reason="session expired"`, id))
}

// waitLogLines waits, at most 10 s, until the nodes' logs hold more than
// before lines matching re, and returns how many they hold.
func waitLogLines(t *testing.T, fc *faultCluster, re *regexp.Regexp, before int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := countLogLines(t, fc, re)
		if n > before || time.Now().After(deadline) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// countLogLines counts the lines of every node's log that match re.
func countLogLines(t *testing.T, fc *faultCluster, re *regexp.Regexp) int {
	t.Helper()
	n := 0
	for _, node := range fc.nodes {
		b, err := os.ReadFile(node.logf)
		if err != nil {
			t.Fatal(err)
		}
		n += len(re.FindAllIndex(b, -1))
	}
	return n
}
