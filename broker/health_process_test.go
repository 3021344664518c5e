package broker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wren-broker/wren/internal/health"
)

// healthClusterConfig keeps each node's tmpfs use small: index files are
// preallocated, and a tmpfs counts their pages as used.
const healthClusterConfig = `
[storage]
log.segment.bytes = 1048576
log.index.size.max.bytes = 65536
[groups]
offsets.topic.num.partitions = 1
`

// healthCLIBound is the longest `wren cluster health` may take with its
// --request-timeout of 1 s: Metadata (1 s), then every broker at once
// (1 s), the process's start, and room for a loaded machine; far below
// the 30 s it once hung.
const healthCLIBound = 8 * time.Second

// TestHealthAgreesProcess runs three real `wren serve` processes, each
// with its log dir on its own 64 MiB tmpfs, and after each fault checks
// that the four surfaces agree, within a deadline: /readyz and
// /v1/cluster/health of every running node, its wren_cluster_ metrics,
// and `wren cluster health` run as the CLI (which must answer within
// healthCLIBound every time, never waiting on a stopped node). The
// faults: a node killed with SIGKILL (down once the controller fences
// it, listed once among all nodes), the controller stopped with SIGSTOP
// (down, and a new controller), and a node's disk filled below its
// free-space floor (unhealthy everywhere while every node stays ready).
// Each fault is undone and the cluster must be healthy everywhere again.
//
// It needs root (to mount); it skips otherwise.
func TestHealthAgreesProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three wren processes")
	}
	if err := canMountTmpfs(t); err != nil {
		t.Skipf("cannot mount a tmpfs (%v): the disk-full part needs one", err)
	}
	began := time.Now()
	fc := startFaultClusterWith(t, faultClusterOptions{tmpfsSize: "64m", config: healthClusterConfig})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	all := []int32{1, 2, 3}
	healthy := func(h *health.ClusterHealth) error {
		if !h.Healthy || !reflect.DeepEqual(h.Nodes, all) || len(h.DownNodes) != 0 {
			return errors.New("want healthy with all nodes [1 2 3] and none down")
		}
		return nil
	}
	ha := &healthAgreement{t: t, fc: fc}
	formed := ha.wait(ctx, "the cluster formed", all, 30*time.Second, healthy)
	controller := formed.ControllerID
	var others []int32
	for _, id := range all {
		if id != controller {
			others = append(others, id)
		}
	}
	t.Logf("formed in %s, controller %d", time.Since(began).Round(time.Millisecond), controller)

	// A node dies: the controller fences it after broker.session.timeout.ms.
	victim := others[0]
	fc.node(victim).kill()
	start := time.Now()
	ha.wait(ctx, fmt.Sprintf("node %d killed", victim), without(all, victim), 20*time.Second, func(h *health.ClusterHealth) error {
		if h.Healthy || !reflect.DeepEqual(h.Nodes, all) || !reflect.DeepEqual(h.DownNodes, []int32{victim}) ||
			!reflect.DeepEqual(h.UnhealthyReasons, []string{health.ReasonNodesDown}) {
			return fmt.Errorf("want unhealthy, all nodes [1 2 3], nodes_down [%d] and no other reason", victim)
		}
		return nil
	})
	t.Logf("node %d killed: every surface says down after %s", victim, time.Since(start).Round(time.Millisecond))
	fc.node(victim).start(t, fc.bin)
	ha.wait(ctx, fmt.Sprintf("node %d restarted", victim), all, 30*time.Second, healthy)

	// The controller stops. The CLI answers at once (the stopped node is
	// unreachable, so down); the others elect a new controller, which
	// fences the old one.
	paused := controller
	fc.node(paused).cmd.Process.Signal(syscall.SIGSTOP)
	start = time.Now()
	code, h, took, out, err := ha.cli(ctx, all)
	if err != nil || took > healthCLIBound || code != 1 || h.Healthy || !slices.Contains(h.UnreachableNodes, paused) {
		t.Fatalf("wren cluster health just after controller %d stopped: exit %d after %s (bound %s), err %v\n%s",
			paused, code, took, healthCLIBound, err, out)
	}
	t.Logf("controller %d stopped: wren cluster health answered in %s: %v", paused, took.Round(time.Millisecond), h.Err())
	for _, id := range without(all, paused) {
		if _, _, err := getOps(ctx, fc.http[id-1], "/v1/cluster/health"); err != nil {
			t.Fatalf("node %d's /v1/cluster/health just after controller %d stopped: %v", id, paused, err)
		}
	}
	ha.wait(ctx, fmt.Sprintf("controller %d stopped", paused), without(all, paused), 30*time.Second, func(h *health.ClusterHealth) error {
		if h.Healthy || !reflect.DeepEqual(h.Nodes, all) || !reflect.DeepEqual(h.DownNodes, []int32{paused}) ||
			h.ControllerID < 0 || h.ControllerID == paused || !reflect.DeepEqual(h.UnhealthyReasons, []string{health.ReasonNodesDown}) {
			return fmt.Errorf("want unhealthy, a new controller, nodes_down [%d] and no other reason", paused)
		}
		return nil
	})
	t.Logf("controller %d stopped: every surface says down, with a new controller, after %s", paused, time.Since(start).Round(time.Millisecond))
	fc.node(paused).cmd.Process.Signal(syscall.SIGCONT)
	ha.wait(ctx, fmt.Sprintf("node %d continued", paused), all, 30*time.Second, healthy)

	// A node's disk fills below its free-space floor: it refuses produce,
	// so the cluster is unhealthy everywhere, but every node still serves
	// (ready).
	full := others[len(others)-1]
	ballast := fillBelowFloor(t, fc, full)
	start = time.Now()
	ha.wait(ctx, fmt.Sprintf("node %d below its floor", full), all, 20*time.Second, func(h *health.ClusterHealth) error {
		if h.Healthy || len(h.DownNodes) != 0 || len(h.LogDirsBelowFloor) != 1 || h.LogDirsBelowFloor[0].Node != full ||
			!reflect.DeepEqual(h.UnhealthyReasons, []string{health.ReasonBelowFloor}) {
			return fmt.Errorf("want unhealthy, log_dirs_below_floor on node %d and no other reason", full)
		}
		return nil
	})
	t.Logf("node %d below its floor: every surface says so after %s", full, time.Since(start).Round(time.Millisecond))
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	ha.wait(ctx, fmt.Sprintf("node %d's ballast removed", full), all, 20*time.Second, healthy)
	t.Logf("whole test took %s; the slowest wren cluster health took %s", time.Since(began).Round(time.Millisecond), ha.slowestCLI.Round(time.Millisecond))
}

// healthAgreement polls the four surfaces of a fault cluster.
type healthAgreement struct {
	t  *testing.T
	fc *faultCluster
	// slowestCLI is the longest a run of `wren cluster health` took.
	slowestCLI time.Duration
}

// wait polls until every surface of the running nodes live agrees and
// want accepts what they say, and returns the CLI's answer. Every node
// in live must answer /readyz 200 (a node's readiness is about itself,
// and no fault here leaves a running node unable to serve), and its
// /v1/cluster/health and metrics within a second; the CLI must answer
// within healthCLIBound every time.
func (ha *healthAgreement) wait(ctx context.Context, what string, live []int32, timeout time.Duration, want func(*health.ClusterHealth) error) health.ClusterHealth {
	t := ha.t
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		h, why := ha.check(ctx, live, want)
		if why == "" {
			return h
		}
		if why != last {
			t.Logf("%s: not yet: %s", what, why)
			last = why
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the surfaces did not agree within %s: %s", what, timeout, why)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// check reads every surface once and says what does not agree, "" when
// all do.
func (ha *healthAgreement) check(ctx context.Context, live []int32, want func(*health.ClusterHealth) error) (health.ClusterHealth, string) {
	code, cli, took, out, err := ha.cli(ctx, live)
	if err != nil {
		return cli, fmt.Sprintf("wren cluster health: %v\n%s", err, out)
	}
	if took > healthCLIBound {
		ha.t.Fatalf("wren cluster health took %s, bound %s\n%s", took, healthCLIBound, out)
	}
	if err := want(&cli); err != nil {
		return cli, fmt.Sprintf("wren cluster health: %v: %s", err, out)
	}
	if (code == 0) != cli.Healthy {
		return cli, fmt.Sprintf("wren cluster health exited %d with is_healthy %v", code, cli.Healthy)
	}
	for _, id := range live {
		addr := ha.fc.http[id-1]
		status, body, err := getOps(ctx, addr, "/readyz")
		if err != nil || status != http.StatusOK {
			return cli, fmt.Sprintf("node %d /readyz: %d %q %v", id, status, body, err)
		}
		status, body, err = getOps(ctx, addr, "/v1/cluster/health")
		if err != nil || status != http.StatusOK {
			return cli, fmt.Sprintf("node %d /v1/cluster/health: %d %q %v", id, status, body, err)
		}
		var h health.ClusterHealth
		if err := json.Unmarshal([]byte(body), &h); err != nil {
			return cli, fmt.Sprintf("node %d /v1/cluster/health: %v: %s", id, err, body)
		}
		if err := want(&h); err != nil {
			return cli, fmt.Sprintf("node %d /v1/cluster/health: %v: %s", id, err, body)
		}
		if h.Healthy != cli.Healthy || !reflect.DeepEqual(h.UnhealthyReasons, cli.UnhealthyReasons) ||
			!reflect.DeepEqual(h.DownNodes, cli.DownNodes) || !reflect.DeepEqual(h.Nodes, cli.Nodes) {
			return cli, fmt.Sprintf("node %d /v1/cluster/health says healthy %v %v down %v of %v; wren cluster health says %v %v down %v of %v",
				id, h.Healthy, h.UnhealthyReasons, h.DownNodes, h.Nodes, cli.Healthy, cli.UnhealthyReasons, cli.DownNodes, cli.Nodes)
		}
		m, err := opsMetrics(ctx, addr)
		if err != nil {
			return cli, fmt.Sprintf("node %d /metrics: %v", id, err)
		}
		healthy := 0.0
		if h.Healthy {
			healthy = 1
		}
		for name, v := range map[string]float64{
			"wren_cluster_healthy":                         healthy,
			"wren_cluster_brokers":                         float64(len(h.Nodes)),
			"wren_cluster_brokers_down":                    float64(len(h.DownNodes)),
			"wren_cluster_controller_id":                   float64(h.ControllerID),
			"wren_cluster_log_dirs_below_free_space_floor": float64(len(h.LogDirsBelowFloor)),
			"wren_cluster_damaged_partitions":              float64(len(h.DamagedPartitions)),
			"wren_cluster_request_budget_starved_nodes":    float64(len(h.StarvedNodes)),
			"wren_cluster_nodes_loading_partitions":        float64(len(h.LoadingNodes)),
		} {
			if got, ok := m[name]; !ok || got != v {
				return cli, fmt.Sprintf("node %d metric %s = %v (present %v), /v1/cluster/health says %v", id, name, got, ok, v)
			}
		}
	}
	return cli, ""
}

// cli runs `wren cluster health` as a process, bootstrapping from the
// nodes' client addresses, and returns its exit code, its answer and how
// long it took.
func (ha *healthAgreement) cli(ctx context.Context, nodes []int32) (code int, h health.ClusterHealth, took time.Duration, out string, err error) {
	var addrs []string
	for _, id := range nodes {
		addrs = append(addrs, ha.fc.node(id).addr)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ha.fc.bin, "cluster", "health", "--format", "json", "--request-timeout", "1s",
		"-b", strings.Join(addrs, ","))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	took = time.Since(start)
	ha.slowestCLI = max(ha.slowestCLI, took)
	out = stdout.String() + stderr.String()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code, err = ee.ExitCode(), nil
	}
	if err != nil {
		return code, h, took, out, err
	}
	if err := json.Unmarshal(stdout.Bytes(), &h); err != nil {
		return code, h, took, out, fmt.Errorf("exit %d, json: %w", code, err)
	}
	return code, h, took, out, nil
}

// getOps GETs path from an operations endpoint within a second.
func getOps(ctx context.Context, addr, path string) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// opsMetrics reads the unlabelled series of an operations endpoint's
// /metrics.
func opsMetrics(ctx context.Context, addr string) (map[string]float64, error) {
	status, body, err := getOps(ctx, addr, "/metrics")
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("status %d", status)
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			m[name] = v
		}
	}
	return m, sc.Err()
}

// fillBelowFloor writes a ballast file into node id's tmpfs that leaves
// half of the log dir's free-space floor free: below the floor, above
// nothing left (a write that runs out of space fails the log dir, a
// different fact). It returns the ballast's path.
func fillBelowFloor(t *testing.T, fc *faultCluster, id int32) string {
	t.Helper()
	mnt := fc.mounts[id-1]
	var st unix.Statfs_t
	if err := unix.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	total, free := int64(st.Blocks)*int64(st.Bsize), int64(st.Bavail)*int64(st.Bsize)
	// The default floor: the smaller of 256 MiB and 5 % of the disk.
	floor := min(256<<20, total*5/100)
	size := free - floor/2
	if size <= 0 {
		t.Fatalf("node %d: %d bytes free of %d, already below half the floor %d", id, free, total, floor)
	}
	path := filepath.Join(mnt, "ballast")
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		t.Fatalf("node %d: ballast of %d bytes: %v", id, size, err)
	}
	return path
}

// without is ids less one.
func without(ids []int32, id int32) []int32 {
	return slices.DeleteFunc(slices.Clone(ids), func(x int32) bool { return x == id })
}
