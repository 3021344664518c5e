package peer

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"
)

// Probe tells a CONTROLLER listener from anything else, and the listener
// answers a probe without logging a refused peer.
func TestProbe(t *testing.T) {
	lns, voters := listeners(t, 2)
	var logs syncBuffer
	tr, err := start(Config{ID: 1, Voters: voters, Listener: lns[0], Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	lns[1].Close()
	ctx := context.Background()
	if id, ok := Probe(ctx, voters[1]); !ok || id != 1 {
		t.Fatalf("Probe of node 1's CONTROLLER listener: %d %v", id, ok)
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("a probe was logged as an error:\n%s", logs.String())
	}

	// A listener that closes what it accepts (a client listener facing an
	// unknown key), and one that never answers.
	closing, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer closing.Close()
	go func() {
		for {
			c, err := closing.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	for name, addr := range map[string]string{"closing": closing.Addr().String(), "silent": silent.Addr().String(), "closed": voters[2]} {
		ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		if id, ok := Probe(ctx, addr); ok {
			t.Errorf("Probe of a %s listener: node %d", name, id)
		}
		cancel()
	}
}
