package peer

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"log/slog"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/internal/vfs"
	"github.com/wren-broker/wren/wire"
)

// A replica connection end to end over loopback: the leader answers with
// a body of bytes and a file range (sendfile in plaintext; over mutual
// TLS a copy whose records a BatchConn gathers into few writes), the
// follower reads each answer into the memory of the one before when it
// fits, and gets every byte right whatever the sizes in turn.
func TestReplicaConnSplicedAnswers(t *testing.T) {
	t.Run("plaintext", func(t *testing.T) { testReplicaConnSplicedAnswers(t, false, nil) })
	t.Run("TLS 1.3", func(t *testing.T) { testReplicaConnSplicedAnswers(t, true, nil) })
	t.Run("TLS 1.2", func(t *testing.T) {
		testReplicaConnSplicedAnswers(t, true, &tls.Config{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12})
	})
}

// writeCounter counts the writes to the connections a listener accepts
// and their bytes: over TLS, how many records a write carries.
type writeCounter struct {
	writes, bytes atomic.Int64
}

type countingListener struct {
	net.Listener
	n *writeCounter
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, n: l.n}, nil
}

type countingConn struct {
	net.Conn
	n *writeCounter
}

func (c countingConn) Write(b []byte) (int, error) {
	c.n.writes.Add(1)
	c.n.bytes.Add(int64(len(b)))
	return c.Conn.Write(b)
}

func testReplicaConnSplicedAnswers(t *testing.T, useTLS bool, base *tls.Config) {
	dir := t.TempDir()
	data := make([]byte, 3<<20)
	rand.New(rand.NewSource(1)).Read(data)
	if err := os.WriteFile(filepath.Join(dir, "seg"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := vfs.NewOS().Open(filepath.Join(dir, "seg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	lns, voters := listeners(t, 2)
	logger := slog.New(slog.NewTextHandler(&syncBuffer{}, nil))
	// Over TLS the leader's accepted connections count their writes (a
	// plaintext one must stay a *net.TCPConn for sendfile).
	var tlsOf [2]*TLS
	var leaderWrites writeCounter
	if useTLS {
		certs := certDir(t, voters)
		for i := range tlsOf {
			m := &swappableTLS{base: base}
			id := election.NodeID(i + 1)
			m.load(t, filepath.Join(certs, NodeCertFile(id)), filepath.Join(certs, CAFile))
			tlsOf[i] = m.config()
		}
		lns[0] = countingListener{Listener: lns[0], n: &leaderWrites}
	}
	released := make(chan struct{}, 6)
	// A Fetch asks for a file range: its one partition's FetchOffset is
	// the position, PartitionMaxBytes the size. A flexible request
	// (OffsetForLeaderEpoch v4) is answered with a kmsg response.
	leader, err := start(Config{ID: 1, Voters: voters, Listener: lns[0], Logger: logger, TLS: tlsOf[0]},
		func(from election.NodeID, _ uint64, req kmsg.Request) *wire.Body {
			switch req := req.(type) {
			case *kmsg.FetchRequest:
				if from != 2 || req.ReplicaID != 2 || req.GetVersion() != 11 || len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 1 {
					return nil
				}
				rp := req.Topics[0].Partitions[0]
				return &wire.Body{
					Chunks:  []wire.Chunk{{Bytes: binary.BigEndian.AppendUint64(nil, uint64(rp.FetchOffset))}, {File: wire.FileSlice{File: f, Position: rp.FetchOffset, Size: int64(rp.PartitionMaxBytes)}}},
					Release: func() { released <- struct{}{} },
				}
			case *kmsg.OffsetForLeaderEpochRequest:
				resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
				resp.ThrottleMillis = 77
				return &wire.Body{Chunks: []wire.Chunk{{Bytes: resp.AppendTo(nil)}}}
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	defer leader.Close()
	follower, err := start(Config{ID: 2, Voters: voters, Listener: lns[1], Logger: logger, TLS: tlsOf[1]})
	if err != nil {
		t.Fatal(err)
	}
	defer follower.Close()
	rc, err := follower.DialReplica(1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()

	var prev []byte
	var sent int64
	for i, size := range []int64{2 << 20, 1 << 20, 2<<20 + 5, 100, 3<<20 - 8, 0} {
		sent += size
		pos := int64(len(data)) - size
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(11)
		req.ReplicaID = 2
		rt := kmsg.NewFetchRequestTopic()
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes = pos, int32(size)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := rc.RoundTrip(req, time.Now().Add(10*time.Second))
		if err != nil {
			t.Fatalf("round trip %d (%d bytes): %v", i, size, err)
		}
		want := append(binary.BigEndian.AppendUint64(nil, uint64(pos)), data[pos:]...)
		if !bytes.Equal(resp, want) {
			t.Fatalf("round trip %d: %d bytes back, want %d, or they differ", i, len(resp), len(want))
		}
		// The second answer (1 MiB) fits in the first's 2 MiB: same memory.
		if i == 1 && &resp[0] != &prev[0] {
			t.Fatal("a response that fits the last one's buffer was read into new memory")
		}
		prev = resp
	}
	// A flexible request and response header, both ways.
	ofle := kmsg.NewPtrOffsetForLeaderEpochRequest()
	ofle.SetVersion(4)
	ofle.ReplicaID = 2
	body, err := rc.RoundTrip(ofle, time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatalf("OffsetForLeaderEpoch v4: %v", err)
	}
	ofleResp := ofle.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	if err := ofleResp.ReadFrom(body); err != nil || ofleResp.ThrottleMillis != 77 {
		t.Fatalf("OffsetForLeaderEpoch v4 response: throttle %d, err %v", ofleResp.ThrottleMillis, err)
	}
	// Each answer's Release runs once it is written.
	deadline := time.After(10 * time.Second)
	for i := 0; i < 6; i++ {
		select {
		case <-released:
		case <-deadline:
			t.Fatalf("Release called %d times for 6 answers", i)
		}
	}
	if useTLS {
		// One write a 16 KiB record would be sent/16 KiB writes; gathered
		// eight to a write, an eighth of that. At least four to a write,
		// with room for the handshakes of the leader's few connections.
		writes, bytes := leaderWrites.writes.Load(), leaderWrites.bytes.Load()
		if bytes < sent {
			t.Fatalf("the leader wrote %d bytes for %d bytes of answers", bytes, sent)
		}
		if most := sent/(4*16<<10) + 40; writes > most {
			t.Fatalf("the leader wrote %d bytes in %d writes, more than %d: its TLS records are not gathered", bytes, writes, most)
		}
		t.Logf("leader: %d bytes in %d writes (%d records of 16 KiB)", bytes, writes, sent/(16<<10))
	}
}

func TestKeepReplicaBuffer(t *testing.T) {
	for _, c := range []struct {
		cap, n int
		keep   bool
	}{
		{4 << 20, 4 << 20, true},
		{4 << 20, 1 << 20, true},
		{4 << 20, 100, false}, // an idle follower lets a busy spell's buffer go
		{maxKeptReplicaBuffer + 1, maxKeptReplicaBuffer + 1, false},
	} {
		if got := keepReplicaBuffer(make([]byte, 0, c.cap), c.n); got != c.keep {
			t.Errorf("cap %d holding %d: keep %v, want %v", c.cap, c.n, got, c.keep)
		}
	}
}

// Each replica connection has its own id, the same for every request on
// it; the client is told once the connection closes, with that id.
func TestReplicaConnIDAndClosed(t *testing.T) {
	lns, voters := listeners(t, 2)
	logger := slog.New(slog.NewTextHandler(&syncBuffer{}, nil))
	seen := make(chan uint64, 16)
	closed := make(chan uint64, 16)
	leader, err := New(Config{ID: 1, Voters: voters, Listener: lns[0], Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	leader.HandleReplicas(func(from election.NodeID, conn uint64, req kmsg.Request) *wire.Body {
		seen <- conn
		resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
		return &wire.Body{Chunks: []wire.Chunk{{Bytes: resp.AppendTo(nil)}}}
	}, func(from election.NodeID, conn uint64) {
		if from != 2 {
			t.Errorf("closed connection from node %d, want 2", from)
		}
		closed <- conn
	})
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	defer leader.Close()
	follower, err := start(Config{ID: 2, Voters: voters, Listener: lns[1], Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer follower.Close()
	ask := func(rc *ReplicaConn) uint64 {
		t.Helper()
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.SetVersion(3)
		req.ReplicaID = 2
		if _, err := rc.RoundTrip(req, time.Now().Add(10*time.Second)); err != nil {
			t.Fatal(err)
		}
		return <-seen
	}
	wait := func(ch chan uint64, what string) uint64 {
		t.Helper()
		select {
		case v := <-ch:
			return v
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s within 10 s", what)
			return 0
		}
	}
	a, err := follower.DialReplica(1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := follower.DialReplica(1)
	if err != nil {
		t.Fatal(err)
	}
	idA := ask(a)
	if again := ask(a); again != idA {
		t.Fatalf("one connection, ids %d and %d", idA, again)
	}
	idB := ask(b)
	if idB == idA {
		t.Fatalf("two connections, one id %d", idA)
	}
	a.Close()
	if got := wait(closed, "closed callback"); got != idA {
		t.Fatalf("closed callback for %d, want %d", got, idA)
	}
	b.Close()
	if got := wait(closed, "closed callback"); got != idB {
		t.Fatalf("closed callback for %d, want %d", got, idB)
	}
}
