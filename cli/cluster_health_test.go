package cli

import (
	"encoding/json"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/internal/health"
)

// hangingBroker accepts connections and never answers: a stopped
// (SIGSTOP) process, as its peers and clients see it, since the kernel
// still completes the TCP handshake.
func hangingBroker(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}

// `wren cluster health` bounds every request: with only a broker that
// never answers to bootstrap from it fails within its request timeout
// (not the 30 s of --timeout); with a live broker beside it, it answers
// from the live one.
func TestClusterHealthBoundedBootstrap(t *testing.T) {
	hang := hangingBroker(t)
	start := time.Now()
	res := run(t, "", "cluster", "health", "-b", hang, "--request-timeout", "300ms")
	took := time.Since(start)
	if res.code == 0 || !strings.Contains(res.stderr, "no bootstrap broker answered Metadata within 300ms") {
		t.Fatalf("cluster health against a broker that never answers: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if took > 5*time.Second {
		t.Fatalf("cluster health against a broker that never answers took %s, bound 300ms per request", took)
	}

	live := wrenBroker(t, "")
	start = time.Now()
	res = run(t, "", "cluster", "health", "--format", "json", "-b", hang+","+live, "--request-timeout", "2s")
	if res.code != 0 {
		t.Fatalf("cluster health with a live broker among the bootstrap brokers: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("cluster health with a live broker took %s", took)
	}
	var h health.ClusterHealth
	if err := json.Unmarshal([]byte(res.stdout), &h); err != nil || !h.Healthy || !reflect.DeepEqual(h.Nodes, []int32{1}) {
		t.Fatalf("cluster health json (%v): %s", err, res.stdout)
	}
}

// A broker that Metadata lists but that does not answer within the
// request timeout is unreachable, so down, and the answer comes from the
// others within the bound.
func TestClusterHealthUnreachableBroker(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	// Cleanups run last in first out: wake the sleeping request first.
	t.Cleanup(c.Close)
	t.Cleanup(func() { close(release) })
	c.ControlKey(int16(kmsg.DescribeCluster), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if c.CurrentNode() == 2 {
			c.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	start := time.Now()
	res := run(t, "", "cluster", "health", "--format", "json", "-b", strings.Join(c.ListenAddrs(), ","), "--request-timeout", "500ms")
	took := time.Since(start)
	var h health.ClusterHealth
	if err := json.Unmarshal([]byte(res.stdout), &h); err != nil {
		t.Fatalf("cluster health json (%v): exit %d\n%s%s", err, res.code, res.stdout, res.stderr)
	}
	if res.code != 1 || h.Healthy || !reflect.DeepEqual(h.UnreachableNodes, []int32{2}) || !reflect.DeepEqual(h.DownNodes, []int32{2}) ||
		!reflect.DeepEqual(h.Nodes, []int32{0, 1, 2}) {
		t.Fatalf("cluster health with broker 2 not answering: exit %d %+v", res.code, h)
	}
	if took > 5*time.Second {
		t.Fatalf("cluster health with broker 2 not answering took %s, bound 500ms per request", took)
	}
}

// fromAnswers takes the cluster's facts from the freshest judgement and
// each broker's own facts from its own answer.
func TestClusterHealthFromAnswers(t *testing.T) {
	judged := func(offset uint64, controller int32, down []int32, dirs []health.LogDirBelowFloor) health.ClusterHealth {
		h := health.ClusterHealth{ControllerID: controller, Nodes: []int32{1, 2, 3}, DownNodes: down, LogDirsBelowFloor: dirs,
			ControlPlane: health.ControlPlane{MetadataOffset: offset}}
		h.Evaluate()
		return h
	}
	answers := []brokerAnswer{
		// Node 1's image is behind, and it has not heard node 2 fill up.
		{id: 1, full: true, health: judged(10, 3, nil, nil)},
		{id: 2, full: true, health: judged(12, 2, []int32{3}, []health.LogDirBelowFloor{{Node: 2, Dir: "/d", FreeBytes: 5, FloorBytes: 9}})},
		{id: 3, err: net.ErrClosed},
	}
	h, ok := fromAnswers(answers)
	if !ok {
		t.Fatal("no judgement found among wren answers")
	}
	h.Evaluate()
	if h.ControllerID != 2 || !reflect.DeepEqual(h.DownNodes, []int32{3}) || len(h.LogDirsBelowFloor) != 1 || h.LogDirsBelowFloor[0].Node != 2 {
		t.Fatalf("merged: %+v", h)
	}
	// Node 2's own facts are its own answer's, even when another answer
	// is fresher and says otherwise.
	answers[0].health = judged(20, 2, []int32{3}, nil)
	if h, _ := fromAnswers(answers); len(h.LogDirsBelowFloor) != 1 {
		t.Fatalf("node 2's own word on its log dir lost: %+v", h)
	}
	if len(answers[1].health.LogDirsBelowFloor) != 1 {
		t.Fatal("fromAnswers changed an answer")
	}
	if _, ok := fromAnswers([]brokerAnswer{{id: 1, tagged: true}, {id: 2, err: net.ErrClosed}}); ok {
		t.Fatal("a judgement found where no broker gave one")
	}
}

// -e alone waits until the cluster is healthy and exits 0, as the README
// says: it implies -w.
func TestClusterHealthExitWhenHealthy(t *testing.T) {
	b := wrenBroker(t, "")
	for _, args := range [][]string{{"-e"}, {"-w", "-e"}, {"--exit-when-healthy"}} {
		res := run(t, "", append([]string{"cluster", "health", "-b", b}, args...)...)
		if res.code != 0 || !strings.Contains(res.stdout, "Healthy:                            true") {
			t.Fatalf("cluster health %v: exit %d\n%s%s", args, res.code, res.stdout, res.stderr)
		}
	}
}
