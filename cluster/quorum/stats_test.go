package quorum

import (
	"log/slog"
	"testing"
	"time"

	"github.com/wren-broker/wren/cluster/metalog"
	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/peer"
)

// The transport's counters, cross-checked: what one node counts as sent
// is what the other counts as received, frame for frame and byte for
// byte, by kind, and a metalog frame's bytes are its encoding plus the
// size prefix and request header.
func TestTCPStats(t *testing.T) {
	lns, voters := listeners(t, 2)
	logger := slog.New(slog.NewTextHandler(&syncBuffer{}, nil))
	var trs []*TCPTransport
	for i := range 2 {
		tr, err := newTCP(peer.Config{ID: election.NodeID(1 + i), Voters: voters, Listener: lns[i], Logger: logger,
			BackoffMin: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		trs = append(trs, tr)
	}
	t1, t2 := trs[0], trs[1]
	const n, apps = 50, 7
	m := metalog.Message{Type: metalog.MsgFetch, From: 1, To: 2, Epoch: 3, Seq: 9, LastIndex: 100, LastEpoch: 2}
	// Until the connection is up, messages may be dropped (the queue is
	// there, the peer is not): send one at a time until one arrives.
	waitFor(t, "node 2 to receive a first message", 5*time.Second, func() bool {
		t1.Send(m)
		select {
		case <-t2.Receive():
			return true
		case <-time.After(10 * time.Millisecond):
			return false
		}
	})
	for range n {
		t1.Send(m)
	}
	for range apps {
		t1.SendApp(2, []byte("app body"))
	}
	deadline := time.After(5 * time.Second)
	for got := 0; got < n; got++ {
		select {
		case <-t2.Receive():
		case <-deadline:
			t.Fatalf("node 2 received %d of the %d messages", got, n)
		}
	}
	waitFor(t, "node 2 to count the app frames", 5*time.Second, func() bool {
		return t2.Stats().Received[TrafficApp].Frames == apps
	})
	// The counts settle: node 1 sent all it counted, node 2 read it all.
	waitFor(t, "the counters of both ends to agree", 5*time.Second, func() bool {
		s1, s2 := t1.Stats(), t2.Stats()
		for _, k := range Kinds() {
			if s1.Sent[k] != s2.Received[k] || s2.Sent[k] != s1.Received[k] {
				return false
			}
		}
		return true
	})
	s1, s2 := t1.Stats(), t2.Stats()
	if got := s1.Sent[TrafficMetalog].Frames; got < n+1 {
		t.Errorf("node 1 counts %d metalog frames sent, want at least %d", got, n+1)
	}
	// Each metalog frame: size prefix, header v1 (key, version,
	// correlation id, client id), then the message.
	frame := 4 + 2 + 2 + 4 + 2 + len("wren-quorum-1") + len(AppendMessage(nil, m))
	if got, frames := s1.Sent[TrafficMetalog].Bytes, s1.Sent[TrafficMetalog].Frames; got != frames*uint64(frame) {
		t.Errorf("node 1 counts %d metalog bytes in %d frames, want %d bytes a frame", got, frames, frame)
	}
	if s1.Sent[TrafficHandshake].Frames == 0 || s1.Received[TrafficHandshake].Frames == 0 {
		t.Errorf("handshakes sent %d, received %d by node 1; want both counted", s1.Sent[TrafficHandshake].Frames, s1.Received[TrafficHandshake].Frames)
	}
	if s2.Received[TrafficReplica].Frames != 0 {
		t.Errorf("node 2 counts %d replica frames; none were sent", s2.Received[TrafficReplica].Frames)
	}
}
