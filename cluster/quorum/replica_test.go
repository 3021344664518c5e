package quorum

import (
	"bytes"
	"encoding/binary"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/internal/vfs"
	"github.com/wren-broker/wren/kafka/splice"
)

// A replica connection end to end over loopback: the leader answers with
// a body of bytes and a file range (sendfile), the follower reads each
// answer into the memory of the one before when it fits, and gets every
// byte right whatever the sizes in turn.
func TestReplicaConnSplicedAnswers(t *testing.T) {
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
	released := make(chan struct{}, 6)
	// The request body asks for a file range: position and size.
	leader, err := NewTCPTransport(TCPConfig{ID: 1, Voters: voters, Listener: lns[0], Logger: logger,
		OnReplicaRequest: func(from election.NodeID, key, version int16, body []byte) *splice.Body {
			if from != 2 || key != 1 || len(body) != 16 {
				return nil
			}
			pos, n := int64(binary.BigEndian.Uint64(body)), int64(binary.BigEndian.Uint64(body[8:]))
			return &splice.Body{
				Chunks:  []splice.Chunk{{Bytes: body[:8]}, {File: engine.FileSlice{File: f, Position: pos, Size: n}}},
				Release: func() { released <- struct{}{} },
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer leader.Close()
	follower, err := NewTCPTransport(TCPConfig{ID: 2, Voters: voters, Listener: lns[1], Logger: logger})
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
	for i, size := range []int64{2 << 20, 1 << 20, 2<<20 + 5, 100, 3<<20 - 8, 0} {
		pos := int64(len(data)) - size
		req := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(pos)), uint64(size))
		resp, err := rc.RoundTrip(1, 11, req, time.Now().Add(10*time.Second))
		if err != nil {
			t.Fatalf("round trip %d (%d bytes): %v", i, size, err)
		}
		want := append(append([]byte{}, req[:8]...), data[pos:]...)
		if !bytes.Equal(resp, want) {
			t.Fatalf("round trip %d: %d bytes back, want %d, or they differ", i, len(resp), len(want))
		}
		// The second answer (1 MiB) fits in the first's 2 MiB: same memory.
		if i == 1 && &resp[0] != &prev[0] {
			t.Fatal("a response that fits the last one's buffer was read into new memory")
		}
		prev = resp
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
