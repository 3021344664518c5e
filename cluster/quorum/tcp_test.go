package quorum

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wren-broker/wren/cluster/metalog"
	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/internal/vfs"
	"github.com/wren-broker/wren/peer"
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

// newTCP starts a peer layer for cfg with a TCPTransport as its message
// channel's client.
func newTCP(cfg peer.Config) (*TCPTransport, error) {
	l, err := peer.New(cfg)
	if err != nil {
		return nil, err
	}
	tr := NewTCPTransport(l, nil)
	if err := l.Start(); err != nil {
		return nil, err
	}
	return tr, nil
}

func tcpNode(t *testing.T, id election.NodeID, ln net.Listener, voters map[election.NodeID]string, fs vfs.FS,
	clusterID string, logger *slog.Logger, apply func([]metalog.Entry)) *Driver {
	t.Helper()
	tr, err := newTCP(peer.Config{ID: id, Voters: voters, Listener: ln, Logger: logger,
		ClusterID: func() string { return clusterID }, BackoffMin: 5 * time.Millisecond, BackoffMax: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	store, stored, err := OpenStorage(fs, "/q")
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]election.NodeID, 0, len(voters))
	for v := range voters {
		ids = append(ids, v)
	}
	d, err := Start(Config{Node: testConfig(id, ids, uint64(id)), Tick: testTick, Apply: apply, Logger: logger},
		store, stored, tr)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Three drivers over real sockets elect a controller and commit entries on
// every node; a node whose transport restarts (a new listener on the same
// port) is reconnected and catches up.
func TestTCPLoopbackCluster(t *testing.T) {
	lns, voters := listeners(t, 3)
	logger := slog.New(slog.NewTextHandler(&syncBuffer{}, nil))
	var mu sync.Mutex
	applied := map[election.NodeID]int64{}
	drivers := map[election.NodeID]*Driver{}
	fss := map[election.NodeID]vfs.FS{}
	for i, ln := range lns {
		id := election.NodeID(i + 1)
		fss[id] = vfs.NewMem()
		drivers[id] = tcpNode(t, id, ln, voters, fss[id], "c1", logger, func(ents []metalog.Entry) {
			mu.Lock()
			applied[id] = ents[len(ents)-1].Index
			mu.Unlock()
		})
	}
	defer func() {
		for _, d := range drivers {
			d.Close()
		}
	}()
	propose := func(data string) int64 {
		var idx int64
		waitFor(t, "a commit through the acting controller", 10*time.Second, func() bool {
			for _, d := range drivers {
				if d.SoftState().Acting {
					ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
					defer cancel()
					i, err := d.Propose(ctx, []byte(data))
					idx = i
					return err == nil
				}
			}
			return false
		})
		return idx
	}
	allApplied := func(idx int64, ids ...election.NodeID) {
		for _, id := range ids {
			waitFor(t, fmt.Sprintf("node %d to apply %d", id, idx), 10*time.Second, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return applied[id] >= idx
			})
		}
	}
	start := time.Now()
	idx := propose("a")
	t.Logf("first commit %v after start", time.Since(start))
	allApplied(idx, 1, 2, 3)
	var lat []time.Duration
	for i := 0; i < 20; i++ {
		s := time.Now()
		propose(fmt.Sprint("x", i))
		lat = append(lat, time.Since(s))
	}
	t.Logf("commit latencies over loopback (tick %v): %v", testTick, lat)

	// Restart a follower's transport and driver on the same port.
	var follower election.NodeID
	for id, d := range drivers {
		if !d.SoftState().Acting {
			follower = id
			break
		}
	}
	addr := voters[follower]
	drivers[follower].Close()
	idx = propose("while one is down")
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s taken again before the restart: %v", addr, err)
	}
	mu.Lock()
	applied[follower] = 0
	mu.Unlock()
	drivers[follower] = tcpNode(t, follower, ln, voters, fss[follower].(*vfs.MemFS).Crash(vfs.CrashOptions{}), "c1", logger,
		func(ents []metalog.Entry) {
			mu.Lock()
			applied[follower] = ents[len(ents)-1].Index
			mu.Unlock()
		})
	allApplied(idx, 1, 2, 3)
}

// A peer with another voters list, or another cluster id, is refused with
// a log line naming both sides, and no message crosses.
func TestTCPHandshakeRefusesMismatch(t *testing.T) {
	for _, tc := range []struct {
		name            string
		otherClusterID  string
		otherVotersPort bool
		want            string
	}{
		{"voters", "c1", true, "controller.quorum.voters differ"},
		{"cluster id", "c2", false, "cluster id mismatch: node 2 is in cluster c2, node 1 in cluster c1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lns, voters := listeners(t, 2)
			other := map[election.NodeID]string{}
			for k, v := range voters {
				other[k] = v
			}
			if tc.otherVotersPort {
				other[3] = "127.0.0.1:1"
			}
			var logs syncBuffer
			logger := slog.New(slog.NewTextHandler(&logs, nil))
			t1, err := newTCP(peer.Config{ID: 1, Voters: voters, Listener: lns[0], Logger: logger,
				ClusterID: func() string { return "c1" }, BackoffMin: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer t1.Close()
			t2, err := newTCP(peer.Config{ID: 2, Voters: other, Listener: lns[1], Logger: logger,
				ClusterID: func() string { return tc.otherClusterID }, BackoffMin: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer t2.Close()
			// Both sides log: the refusing one "refusing peer", the
			// refused one "peer refused this node", each with the reason,
			// in either order.
			waitFor(t, "a refusal on both sides in the log: "+tc.want, 5*time.Second, func() bool {
				t1.Send(metalog.Message{Type: metalog.MsgFetch, From: 1, To: 2, Epoch: 1})
				t2.Send(metalog.Message{Type: metalog.MsgFetch, From: 2, To: 1, Epoch: 1})
				l := logs.String()
				return strings.Contains(l, tc.want) && strings.Contains(l, "refusing peer")
			})
			select {
			case m := <-t1.Receive():
				t.Fatalf("node 1 received %v from a refused peer", m)
			case m := <-t2.Receive():
				t.Fatalf("node 2 received %v from a refused peer", m)
			default:
			}
		})
	}
}

// Frames over the limit close the connection before their body is
// buffered.
func TestTCPFrameLimit(t *testing.T) {
	lns, voters := listeners(t, 2)
	tr, err := newTCP(peer.Config{ID: 1, Voters: voters, Listener: lns[0], MaxFrameBytes: 1024,
		Logger: slog.New(slog.NewTextHandler(&syncBuffer{}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	lns[1].Close()
	c, err := net.Dial("tcp", voters[1])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte{0, 0x10, 0, 0}) // 1 MiB announced
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("a frame over the limit got an answer; want the connection closed")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("a frame over the limit left the connection open")
	}
}
