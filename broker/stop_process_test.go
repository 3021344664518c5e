package broker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"
)

// stopWithin is how soon a SIGTERMed node must be gone, whatever its
// peers do. The hang these tests exist to catch is the controlled
// shutdown's 30 s bound (a request to a controller that never answers);
// a third of it tells that apart from a stop that waits, as it must, for
// a new controller to be elected (a pre-vote round that the old
// controller's last heartbeat makes its peers refuse, then an election:
// 2 to 5.5 s on a loaded two-core machine) and for that controller's
// first commit. Unloaded, the nodes are gone 2 to 2.6 s after SIGTERM.
const stopWithin = 10 * time.Second

// memDir is a directory for the nodes' files on a memory file system
// where there is one: the stop tests bound a protocol's time, and on a
// disk shared with other work one fsync of the metadata log or of a
// checkpoint took seconds. Elsewhere it is the test's temporary
// directory.
func memDir(t *testing.T) string {
	t.Helper()
	const shm = "/dev/shm"
	var st unix.Statfs_t
	if err := unix.Statfs(shm, &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp(shm, "wren-stop-test-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// formedWithTopic waits for a controller and three brokers, and creates a
// topic with a partition led by each node, so that every node has
// leaderships to hand over and followers to stop.
func formedWithTopic(t *testing.T, pc *processCluster) {
	t.Helper()
	pc.waitFor("a controller and three brokers", pc.nodes[0], 60*time.Second, func(md *kmsg.MetadataResponse) bool {
		return md.ControllerID >= 0 && len(md.Brokers) == 3
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(pc.nodes[0].addr, pc.nodes[1].addr, pc.nodes[2].addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	createTopicRetrying(ctx, t, cl, "stop", 6, 3)
	pc.waitFor("every partition of stop led, with a full ISR", pc.nodes[0], 30*time.Second, func(md *kmsg.MetadataResponse) bool {
		tp := topicOf(md, "stop")
		if tp == nil || len(tp.Partitions) != 6 {
			return false
		}
		for _, p := range tp.Partitions {
			if p.Leader < 0 || len(p.ISR) != 3 {
				return false
			}
		}
		return true
	})
}

// exited is how a process ended, and when.
type exited struct {
	err error
	at  time.Time
}

// sigterm sends SIGTERM to n and returns a channel that gets the exit
// once the process is gone.
func sigterm(t *testing.T, n *clusterNode) <-chan exited {
	t.Helper()
	cmd := n.cmd
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan exited, 1)
	go func() {
		err := cmd.Wait()
		done <- exited{err, time.Now()}
	}()
	return done
}

// waitExit waits for a process sigterm stopped and returns how long after
// since it exited; it fails the test when that is later than within (the
// cleanup then kills it).
func waitExit(t *testing.T, n *clusterNode, done <-chan exited, since time.Time, within time.Duration) time.Duration {
	t.Helper()
	select {
	case e := <-done:
		n.cmd = nil // gone: the cleanup must not wait on it again
		if e.err != nil {
			t.Errorf("node %d exited with %v after SIGTERM", n.id, e.err)
		}
		return e.at.Sub(since)
	case <-time.After(within - time.Since(since)):
		// Where is it stuck? SIGQUIT makes the Go runtime print every
		// goroutine to the node's log (printed with the failure) and
		// exit.
		n.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
			n.cmd = nil
			t.Errorf("node %d still ran %v after SIGTERM; its goroutines at that moment are at the end of its log", n.id, within)
		case <-time.After(5 * time.Second):
			t.Errorf("node %d still ran %v after SIGTERM, and 5 s after a SIGQUIT", n.id, within)
		}
		return within
	}
}

// logLinesAfter is n's log from the first line containing mark on (all
// of it when mark is ""), as lines.
func logLinesAfter(t *testing.T, n *clusterNode, mark string) []string {
	t.Helper()
	b, err := os.ReadFile(n.logf)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i, l := range lines {
		if mark == "" || strings.Contains(l, mark) {
			return lines[i:]
		}
	}
	return nil
}

func linesWith(lines []string, s string) []string {
	var out []string
	for _, l := range lines {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}

// SIGTERM to all three nodes at once, as a host shutdown sends it: each
// one stops within a few seconds (the last one used to wait out the
// controlled shutdown's 30 s, asking a controller that was gone), and an
// expected stop logs nothing at ERROR (a follower's truncation cut short
// by the stop used to).
func TestStopAllNodesTogether(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three wren processes")
	}
	pc := startProcessClusterIn(t, memDir(t))
	formedWithTopic(t, pc)
	began := time.Now()
	var done []<-chan exited
	for _, n := range pc.nodes {
		done = append(done, sigterm(t, n))
	}
	for i, n := range pc.nodes {
		took := waitExit(t, n, done[i], began, stopWithin)
		t.Logf("node %d exited %v after the SIGTERM to all three", n.id, took.Round(time.Millisecond))
	}
	for _, n := range pc.nodes {
		if errs := linesWith(logLinesAfter(t, n, ""), "level=ERROR"); len(errs) > 0 {
			t.Errorf("node %d logged ERROR in a clean stop of the cluster:\n%s", n.id, strings.Join(errs, "\n"))
		}
	}
}

// The last node of three, once the other two stopped, has no quorum: it
// says so once at WARN, with how many voters it reaches, and then stays
// quiet (no INFO role change every election timeout); SIGTERMed, it stops
// within a few seconds with one WARN saying why it could not hand its
// leaderships over, and no ERROR.
func TestStopLastNodeWithoutQuorum(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three wren processes")
	}
	pc := startProcessClusterIn(t, memDir(t))
	formedWithTopic(t, pc)
	last := pc.nodes[2]
	began := time.Now()
	d1, d2 := sigterm(t, pc.nodes[0]), sigterm(t, pc.nodes[1])
	waitExit(t, pc.nodes[0], d1, began, stopWithin)
	waitExit(t, pc.nodes[1], d2, began, stopWithin)
	gone := time.Now()

	// The quorum is lost: one WARN naming the voters reached, after an
	// election timeout (2 s by default).
	const lost = "metadata quorum: no controller; this node reaches 1 of 3 voters"
	deadline := time.Now().Add(10 * time.Second)
	for len(linesWith(logLinesAfter(t, last, ""), lost)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("node 3 did not say it lost its quorum within 10 s; its log:\n%s", strings.Join(logLinesAfter(t, last, ""), "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Several election timeouts without a quorum: still one line, and
	// the elections it tries meanwhile are not logged at INFO.
	quiet := time.Now().Add(3 * time.Second)
	for time.Now().Before(quiet) {
		time.Sleep(100 * time.Millisecond)
	}
	lines := logLinesAfter(t, last, "")
	if n := len(linesWith(lines, lost)); n != 1 {
		t.Errorf("node 3 said %d times that it lost its quorum, want once", n)
	}
	var roleChanges int
	for _, l := range linesWith(lines, "level=INFO msg=\"metadata quorum: role changed\"") {
		ts, _, _ := strings.Cut(strings.TrimPrefix(l, "time="), " ")
		if at, err := time.Parse(time.RFC3339Nano, ts); err == nil && at.After(gone) {
			roleChanges++
		}
	}
	// Losing the controller is one INFO change (follower, no
	// controller); an election every 0.5 to 1 s would be several.
	if roleChanges > 2 {
		t.Errorf("node 3 logged %d INFO role changes in the %v without a quorum", roleChanges, time.Since(gone).Round(time.Second))
	}

	// An admin command that needs the controller says the broker is up
	// and the cluster has no controller, rather than ask whether the
	// broker is up.
	out, err := exec.Command(pc.bin, "topic", "create", "late", "-p", "1", "-r", "1", "-b", last.addr, "--timeout", "1s").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "is up") || !strings.Contains(string(out), "no controller") {
		t.Errorf("topic create on node 3 without a quorum: %v, output %q; want it to say the broker is up and no controller", err, out)
	}

	began = time.Now()
	took := waitExit(t, last, sigterm(t, last), began, stopWithin)
	t.Logf("node 3, without a quorum, exited %v after SIGTERM", took.Round(time.Millisecond))
	after := logLinesAfter(t, last, `msg="shutting down"`)
	if len(after) == 0 {
		t.Fatal("node 3 never logged that it was shutting down")
	}
	warns := linesWith(after, "level=WARN")
	if len(warns) != 1 || !strings.Contains(warns[0], "reaches 1 of 3 voters") {
		t.Errorf("node 3 logged %d WARN lines while stopping, want one saying it reaches 1 of 3 voters:\n%s", len(warns), strings.Join(warns, "\n"))
	}
	if errs := linesWith(logLinesAfter(t, last, ""), "level=ERROR"); len(errs) > 0 {
		t.Errorf("node 3 logged ERROR:\n%s", strings.Join(errs, "\n"))
	}
}

// A fourth process started with node 2's id (and a data directory of its
// own) is refused: it exits non-zero saying the id is in use and where
// the running node 2 is, and node 2 logs an ERROR naming where the
// intruder connected from. The cluster goes on with the real node 2.
func TestDuplicateNodeIDProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs four wren processes")
	}
	pc := startProcessCluster(t)
	pc.waitFor("a controller and three brokers", pc.nodes[0], 60*time.Second, func(md *kmsg.MetadataResponse) bool {
		return md.ControllerID >= 0 && len(md.Brokers) == 3
	})
	n2 := pc.nodes[1]
	conf, err := os.ReadFile(n2.conf)
	if err != nil {
		t.Fatal(err)
	}
	// The intruder: node 2's file with its own data directory and
	// listeners, as on a second host or a copied config.
	ports := freePorts(t, 2)
	dir := t.TempDir()
	var voter2, out []string
	for _, l := range strings.Split(string(conf), "\n") {
		switch {
		case strings.HasPrefix(l, "log.dirs"):
			l = fmt.Sprintf("log.dirs = [%q]", filepath.Join(dir, "data"))
		case strings.HasPrefix(l, "listeners"):
			l = fmt.Sprintf(`listeners = ["PLAINTEXT://127.0.0.1:%d", "CONTROLLER://127.0.0.1:%d"]`, ports[0], ports[1])
		case strings.HasPrefix(l, "controller.quorum.voters"):
			for _, v := range strings.Split(l, `"`) {
				if strings.HasPrefix(v, "2@") {
					voter2 = append(voter2, strings.TrimPrefix(v, "2@"))
				}
			}
		}
		out = append(out, l)
	}
	if len(voter2) != 1 {
		t.Fatalf("node 2's file names no voter 2:\n%s", conf)
	}
	intruderConf := filepath.Join(dir, "intruder.toml")
	if err := os.WriteFile(intruderConf, []byte(strings.Join(out, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := diesWithTest(exec.CommandContext(ctx, pc.bin, "serve", "--config", intruderConf))
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the intruder still ran after 30 s; its output:\n%s", stderr.String())
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
		t.Fatalf("the intruder exited with %v, want a non-zero status; its output:\n%s", err, stderr.String())
	}
	for _, want := range []string{"level=ERROR", "node id 2", voter2[0], "already running"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("the intruder's output does not say %q:\n%s", want, stderr.String())
		}
	}
	var refused []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		refused = linesWith(linesWith(logLinesAfter(t, n2, ""), "level=ERROR"), "claims this node's id")
		if len(refused) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(refused) == 0 || !strings.Contains(refused[0], "remote=127.0.0.1:") {
		t.Fatalf("node 2 logged no ERROR naming the intruder:\n%s", strings.Join(linesWith(logLinesAfter(t, n2, ""), "level="), "\n"))
	}
	t.Logf("node 2: %s", refused[0])
	t.Logf("the intruder: %s", strings.TrimSpace(stderr.String()))
	// The real node 2 stays in the cluster.
	pc.waitFor("three brokers after the intruder", pc.nodes[0], 10*time.Second, func(md *kmsg.MetadataResponse) bool {
		return md.ControllerID >= 0 && hasBroker(md, 2) && len(md.Brokers) == 3
	})
}

// The controller stops first and the other two right after it, before
// they noticed it was gone (a host shutdown that reached it first): their
// controlled shutdown requests went to a controller that never answers,
// and each waited for that answer (10 s) before asking again. They stop
// within a few seconds: as soon as one of them is the new controller and
// fences both on the heartbeats that carry their shutdown.
func TestStopControllerThenTheOthers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three wren processes")
	}
	pc := startProcessClusterIn(t, memDir(t))
	formedWithTopic(t, pc)
	md := pc.waitFor("a controller", pc.nodes[0], 10*time.Second, func(md *kmsg.MetadataResponse) bool { return md.ControllerID > 0 })
	var ctrl *clusterNode
	var others []*clusterNode
	for _, n := range pc.nodes {
		if int32(n.id) == md.ControllerID {
			ctrl = n
		} else {
			others = append(others, n)
		}
	}
	began := time.Now()
	waitExit(t, ctrl, sigterm(t, ctrl), began, stopWithin)
	began = time.Now()
	d0, d1 := sigterm(t, others[0]), sigterm(t, others[1])
	for i, d := range []<-chan exited{d0, d1} {
		took := waitExit(t, others[i], d, began, stopWithin)
		t.Logf("node %d exited %v after SIGTERM, controller %d gone", others[i].id, took.Round(time.Millisecond), ctrl.id)
	}
	for _, n := range pc.nodes {
		if errs := linesWith(logLinesAfter(t, n, ""), "level=ERROR"); len(errs) > 0 {
			t.Errorf("node %d logged ERROR in a clean stop of the cluster:\n%s", n.id, strings.Join(errs, "\n"))
		}
	}
}
