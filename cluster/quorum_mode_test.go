package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/cluster/metalog"
	"github.com/wren-broker/wren/cluster/quorum"
	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/internal/vfs"
	"github.com/wren-broker/wren/peer"
)

type quorumNode struct {
	id  int32
	ln  net.Listener
	fs  *vfs.MemFS
	c   *Controller
	tr  *quorum.TCPTransport
	app func(election.NodeID, []byte)
	// snapshotEntries and snapshotBytes are QuorumConfig.SnapshotEntries
	// and SnapshotBytes.
	snapshotEntries int
	snapshotBytes   int64
	// sessionTimeout is BrokerSessionTimeout (0: 2 s), cleanShutdown
	// QuorumConfig.CleanShutdown of the next start.
	sessionTimeout time.Duration
	cleanShutdown  bool
	// logger, if set, gets the node's log (else it is discarded).
	logger *slog.Logger
}

// listenQuorumNodes binds a CONTROLLER listener on a free loopback port
// for each of count nodes, ids 1 to count, and returns the voters they
// make and the nodes, on in-memory file systems, not started yet.
func listenQuorumNodes(t *testing.T, count int32) (map[election.NodeID]string, []*quorumNode) {
	t.Helper()
	voters := map[election.NodeID]string{}
	var nodes []*quorumNode
	for i := int32(1); i <= count; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		voters[election.NodeID(i)] = ln.Addr().String()
		nodes = append(nodes, &quorumNode{id: i, ln: ln, fs: vfs.NewMem()})
	}
	return voters, nodes
}

func startQuorumNode(t *testing.T, n *quorumNode, voters map[election.NodeID]string) {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if n.logger != nil {
		logger = n.logger
	}
	var ids []election.NodeID
	var voterIDs []int32
	for id := range voters {
		ids = append(ids, id)
		voterIDs = append(voterIDs, int32(id))
	}
	// Set once the controller is open: a peer's app message may arrive
	// before (the broker guards it the same way).
	var ctrlRef atomic.Pointer[Controller]
	session := n.sessionTimeout
	if session == 0 {
		// Outlasts a stall of a live broker on a loaded machine.
		session = 2 * time.Second
	}
	peers, err := peer.New(peer.Config{ID: election.NodeID(n.id), Voters: voters, Listener: n.ln, Logger: logger,
		ClusterID:  func() string { return "" },
		BackoffMin: 5 * time.Millisecond, BackoffMax: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	tr := quorum.NewTCPTransport(peers, func(from election.NodeID, b []byte) {
		if c := ctrlRef.Load(); c != nil {
			c.HandleApp(from, b)
		}
	})
	if err := peers.Start(); err != nil {
		t.Fatal(err)
	}
	n.tr = tr
	ctrl, err := OpenController(n.fs, "/data/__cluster_metadata", ControllerConfig{
		NodeID: n.id, Voters: voterIDs, DefaultPartitions: 1, DefaultReplicationFactor: 1,
		Quorum: &QuorumConfig{Dir: "/data/__cluster_quorum", Transport: tr, SendApp: tr.SendApp,
			// A 1.5 s lease (the shipped default) and a 2 s election
			// timeout: a stall delivers its missed ticks at once, and with a
			// 75 ms lease a loaded machine's stalls made the acting
			// controller step down in the middle of a test. The session
			// timeout likewise outlasts a stall of a live broker.
			Node: metalog.Config{Election: election.Config{ID: election.NodeID(n.id), Voters: ids, HeartbeatTicks: 10, LeaseTicks: 300,
				ElectionTicks: 400, ElectionJitterTicks: 40, Seed: uint64(n.id)}, FetchWaitTicks: 5, FetchTimeoutTicks: 10,
				MaxFetchEntries: 64, MaxUncommittedEntries: 64},
			Tick: 5 * time.Millisecond, BrokerHeartbeatInterval: 20 * time.Millisecond, BrokerSessionTimeout: session,
			SnapshotEntries: n.snapshotEntries, SnapshotBytes: n.snapshotBytes, Logger: logger, CleanShutdown: n.cleanShutdown},
	})
	if err != nil {
		t.Fatal(err)
	}
	n.c = ctrl
	ctrlRef.Store(ctrl)
	if err := ctrl.SetRegistration(context.Background(), "", []BrokerListener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9000 + n.id}}); err != nil {
		t.Fatal(err)
	}
}

func pollUntil(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Three controllers over loopback: one becomes the acting controller and
// creates the cluster id; every broker registers with its listener; a
// topic created on the controller reaches every image; a change asked of
// another node is NOT_CONTROLLER; a broker that stops is fenced after its
// session, unfenced when it returns; producer ids are forwarded.
func TestQuorumControllers(t *testing.T) {
	voters, nodes := listenQuorumNodes(t, 3)
	for _, n := range nodes {
		startQuorumNode(t, n, voters)
	}
	defer func() {
		for _, n := range nodes {
			n.c.Close()
		}
	}()
	acting := func() *quorumNode {
		for _, n := range nodes {
			if n.c != nil && n.c.Acting() {
				return n
			}
		}
		return nil
	}
	pollUntil(t, "every node to know the cluster id and secret and all three brokers", 10*time.Second, func() bool {
		for _, n := range nodes {
			im := n.c.Image()
			if im.ClusterID == "" || !im.HasClusterSecret() || len(im.Brokers()) != 3 || len(n.c.Brokers()) != 3 {
				return false
			}
		}
		return acting() != nil
	})
	// One secret for the cluster: every node derives the same keys.
	for _, n := range nodes[1:] {
		if !bytes.Equal(n.c.Image().DerivedSecret("x"), nodes[0].c.Image().DerivedSecret("x")) {
			t.Fatalf("node %d derives another secret than node %d", n.id, nodes[0].id)
		}
	}
	ctrl := acting()
	for _, n := range nodes {
		if got := n.c.ControllerID(); got != ctrl.id {
			t.Fatalf("node %d says the controller is %d, want %d", n.id, got, ctrl.id)
		}
		if h, p, ok := n.c.BrokerAddr(ctrl.id, "PLAINTEXT"); !ok || h != "127.0.0.1" || p != 9000+ctrl.id {
			t.Fatalf("node %d has the controller at %s:%d (%v)", n.id, h, p, ok)
		}
	}
	ctrl = onActing(t, nodes, "create topic t1", func(n *quorumNode) error {
		res, err := n.c.CreateTopics(context.Background(), []CreateTopic{{Name: "t1", NumPartitions: 3, ReplicationFactor: 3}}, false)
		if err != nil {
			return err
		}
		return res[0].Err
	})
	for _, n := range nodes {
		if n == ctrl {
			continue
		}
		res, err := n.c.CreateTopics(context.Background(), []CreateTopic{{Name: "t2", NumPartitions: 1, ReplicationFactor: 1}}, false)
		if err != nil || !errors.Is(res[0].Err, kerr.NotController) {
			t.Fatalf("create topic on node %d (not the controller): %v %v, want NOT_CONTROLLER", n.id, err, res[0].Err)
		}
		first, err := n.c.AllocateProducerIDs(context.Background(), n.id)
		if err != nil {
			t.Fatalf("node %d: producer ids through the controller: %v", n.id, err)
		}
		t.Logf("node %d got producer ids from %d", n.id, first)
	}
	pollUntil(t, "topic t1 on every node", 5*time.Second, func() bool {
		for _, n := range nodes {
			if tp := n.c.Image().Topic("t1"); tp == nil || len(tp.Partitions) != 3 {
				return false
			}
		}
		return true
	})
	// Stop a follower: it is fenced after its session, then comes back.
	var victim *quorumNode
	for _, n := range nodes {
		if n != ctrl {
			victim = n
			break
		}
	}
	victim.c.Close()
	addr := voters[election.NodeID(victim.id)]
	pollUntil(t, fmt.Sprintf("broker %d fenced", victim.id), 10*time.Second, func() bool {
		b, _ := ctrl.c.Image().Broker(victim.id)
		return b.Fenced
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s taken before the restart: %v", addr, err)
	}
	victim.ln, victim.fs = ln, victim.fs.Crash(vfs.CrashOptions{})
	startQuorumNode(t, victim, voters)
	pollUntil(t, fmt.Sprintf("broker %d unfenced and caught up", victim.id), 10*time.Second, func() bool {
		b, _ := ctrl.c.Image().Broker(victim.id)
		return !b.Fenced && victim.c.Image().Topic("t1") != nil
	})
}
