package cluster

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/internal/vfs"
)

type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) lines(with string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(l.b.String(), "\n") {
		if strings.Contains(line, with) {
			out = append(out, line)
		}
	}
	return out
}

// A node that loses its quorum says so once at WARN, with how many of the
// voters it reaches, and again only when that number changes; the
// elections it tries meanwhile are not logged at INFO (they were, every
// election timeout). Five voters, so that reaching two and reaching one
// are both a minority.
func TestQuorumLostWarnsOnce(t *testing.T) {
	voters := map[election.NodeID]string{}
	var nodes []*quorumNode
	var log lockedLog
	for i := int32(1); i <= 5; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		voters[election.NodeID(i)] = ln.Addr().String()
		n := &quorumNode{id: i, ln: ln, fs: vfs.NewMem()}
		if i == 1 {
			n.logger = slog.New(slog.NewTextHandler(&log, nil))
		}
		nodes = append(nodes, n)
	}
	for _, n := range nodes {
		startQuorumNode(t, n, voters)
	}
	closed := map[*quorumNode]bool{}
	defer func() {
		for _, n := range nodes {
			if !closed[n] {
				n.c.Close()
			}
		}
	}()
	pollUntil(t, "a controller known to node 1", 10*time.Second, func() bool {
		return nodes[0].c.ControllerID() >= 0
	})
	for _, n := range nodes[2:] {
		n.c.Close()
		closed[n] = true
	}
	const lost = "metadata quorum: no controller; this node reaches"
	pollUntil(t, "node 1 to warn that it reaches 2 of 5 voters", 15*time.Second, func() bool {
		return len(log.lines(lost+" 2 of 5 voters")) > 0
	})
	warnedAt := time.Now()
	nodes[1].c.Close()
	closed[nodes[1]] = true
	pollUntil(t, "node 1 to warn that it reaches 1 of 5 voters", 10*time.Second, func() bool {
		return len(log.lines(lost+" 1 of 5 voters")) > 0
	})
	// An election timeout (2 s here) and more without a quorum: still one
	// warning for each count, and no INFO role change after the first.
	for time.Since(warnedAt) < 3*time.Second {
		time.Sleep(50 * time.Millisecond)
	}
	warns := log.lines(lost)
	if len(warns) != 2 || !strings.Contains(warns[0], "level=WARN") || !strings.Contains(warns[1], "level=WARN") {
		t.Errorf("node 1 warned %d times, want twice (2 of 5, then 1 of 5):\n%s", len(warns), strings.Join(warns, "\n"))
	}
	var churn []string
	for _, l := range log.lines(`level=INFO msg="metadata quorum: role changed"`) {
		ts, _, _ := strings.Cut(strings.TrimPrefix(l, "time="), " ")
		if at, err := time.Parse(time.RFC3339Nano, ts); err == nil && at.After(warnedAt) {
			churn = append(churn, l)
		}
	}
	if len(churn) > 0 {
		t.Errorf("node 1 logged role changes at INFO without a quorum:\n%s", strings.Join(churn, "\n"))
	}
}
