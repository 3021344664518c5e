package peer

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/wren-broker/wren/election"
)

// A second process started with a running node's id, listening elsewhere,
// is refused before it talks to any peer: its transport does not start,
// the error names the id and where the running one is, and the running
// one logs an ERROR naming where the intruder came from. Its own identity
// checks pass.
func TestDuplicateNodeIDRefusedAtStart(t *testing.T) {
	lns, voters := listeners(t, 2)
	var realLog syncBuffer
	real, err := start(Config{ID: 2, Voters: voters, Listener: lns[1],
		Logger: slog.New(slog.NewTextHandler(&realLog, nil)), IdentityCheckInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatalf("the first node 2: %v", err)
	}
	defer real.Close()
	defer lns[0].Close()

	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, err = start(Config{ID: 2, Voters: voters, Listener: other, Logger: slog.New(slog.NewTextHandler(&syncBuffer{}, nil))})
	if !errors.Is(err, ErrDuplicateNodeID) {
		t.Fatalf("a second node 2: %v, want ErrDuplicateNodeID", err)
	}
	for _, want := range []string{"node id 2", voters[2], "already running"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the intruder's error %q does not say %q", err, want)
		}
	}
	if _, err := net.Dial("tcp", other.Addr().String()); err == nil {
		t.Errorf("the refused transport still listens at %s", other.Addr())
	}
	waitFor(t, "the running node 2 to log the intruder", 5*time.Second, func() bool {
		return strings.Contains(realLog.String(), "level=ERROR") && strings.Contains(realLog.String(), "second process claiming node id 2")
	})
	// The running node's own checks, every 20 ms, found nothing wrong
	// and were not taken for intruders.
	if n := strings.Count(realLog.String(), "level=ERROR"); n != 1 {
		t.Errorf("the running node 2 logged %d ERROR lines, want 1 (the intruder):\n%s", n, realLog.String())
	}
}

// A process that took a node id while the real node was down (its check
// at start reached nobody) finds the real one by its periodic check once
// that one is back, and is told to stop; the real one is not.
func TestDuplicateNodeIDFoundLater(t *testing.T) {
	lns, voters := listeners(t, 2)
	defer lns[0].Close()
	addr2 := voters[2]
	lns[1].Close() // node 2 is down
	ghostLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	found := make(chan error, 1)
	ghost, err := start(Config{ID: 2, Voters: voters, Listener: ghostLn, IdentityCheckInterval: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&syncBuffer{}, nil)), OnDuplicate: func(err error) { found <- err }})
	if err != nil {
		t.Fatalf("node 2's address answers nobody, so the check proves nothing: %v", err)
	}
	defer ghost.Close()

	ln, err := net.Listen("tcp", addr2)
	if err != nil {
		t.Skipf("node 2's port was taken meanwhile: %v", err)
	}
	realFound := make(chan error, 1)
	real, err := start(Config{ID: 2, Voters: voters, Listener: ln, IdentityCheckInterval: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&syncBuffer{}, nil)), OnDuplicate: func(err error) { realFound <- err }})
	if err != nil {
		t.Fatalf("the real node 2 at its own address: %v", err)
	}
	defer real.Close()
	select {
	case err := <-found:
		if !errors.Is(err, ErrDuplicateNodeID) || !strings.Contains(err.Error(), addr2) {
			t.Fatalf("the ghost was told %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the ghost never found the real node 2")
	}
	// The real node's checks keep passing.
	select {
	case err := <-realFound:
		t.Fatalf("the real node 2 was told to stop: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
}

// forward accepts on a new loopback port and pipes each connection to
// target, as a proxy or a port forward in front of a node does: the node
// sees the forwarder's address, not the dialer's.
func forward(t *testing.T, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer u.Close()
				go io.Copy(u, c)
				io.Copy(c, u)
			}()
		}
	}()
	return ln.Addr().String()
}

// A node whose voter address is a forward to its listener knows its own
// identity check by the check's nonce, not by the connection's source
// address, which the forward changes: it starts, and logs nothing at
// ERROR; an intruder that comes through the same forward is still
// refused.
func TestIdentityCheckThroughForward(t *testing.T) {
	lns, voters := listeners(t, 2)
	defer lns[0].Close()
	voters[2] = forward(t, lns[1].Addr().String())
	var log syncBuffer
	real, err := start(Config{ID: 2, Voters: voters, Listener: lns[1], IdentityCheckInterval: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatalf("node 2 behind a forward took itself for an intruder: %v", err)
	}
	defer real.Close()
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := start(Config{ID: 2, Voters: voters, Listener: other,
		Logger: slog.New(slog.NewTextHandler(&syncBuffer{}, nil))}); !errors.Is(err, ErrDuplicateNodeID) {
		t.Fatalf("an intruder through the forward: %v, want ErrDuplicateNodeID", err)
	}
	waitFor(t, "node 2 to log the intruder", 5*time.Second, func() bool {
		return strings.Contains(log.String(), "level=ERROR")
	})
	if n := strings.Count(log.String(), "level=ERROR"); n != 1 {
		t.Errorf("node 2 logged %d ERROR lines, want 1 (the intruder):\n%s", n, log.String())
	}
}

// A node whose own voter entry names another node's address is answered
// there by a process that is not it: refused at start, with the entry
// named, rather than run with its peers' messages going elsewhere.
func TestIdentityCheckOwnEntryElsewhere(t *testing.T) {
	lns, voters := listeners(t, 2)
	logger := slog.New(slog.NewTextHandler(&syncBuffer{}, nil))
	n2, err := start(Config{ID: 2, Voters: voters, Listener: lns[1], Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer n2.Close()
	wrong := map[election.NodeID]string{1: voters[2], 2: voters[2]}
	_, err = start(Config{ID: 1, Voters: wrong, Listener: lns[0], Logger: logger})
	if !errors.Is(err, ErrDuplicateNodeID) || !strings.Contains(err.Error(), "node 1's entry in controller.quorum.voters, "+voters[2]) {
		t.Fatalf("node 1 whose entry is node 2's address: %v", err)
	}
}
