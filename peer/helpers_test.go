package peer

import (
	"bytes"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/wren-broker/wren/election"
)

// syncBuffer collects log lines from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// listeners binds n loopback listeners on random ports and returns them
// with the voters map built from the bound addresses.
func listeners(t testing.TB, n int) ([]net.Listener, map[election.NodeID]string) {
	t.Helper()
	voters := map[election.NodeID]string{}
	var lns []net.Listener
	for i := 1; i <= n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		voters[election.NodeID(i)] = ln.Addr().String()
	}
	return lns, voters
}

// start is New then Start, with replicas (if any) as the replica
// connections' client.
func start(cfg Config, replicas ...ReplicaHandler) (*Layer, error) {
	l, err := New(cfg)
	if err != nil {
		return nil, err
	}
	for _, h := range replicas {
		l.HandleReplicas(h, nil)
	}
	if err := l.Start(); err != nil {
		return nil, err
	}
	return l, nil
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(time.Millisecond)
	}
}
