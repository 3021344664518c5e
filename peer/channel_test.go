package peer

import (
	"log/slog"
	"testing"
	"time"

	"github.com/wren-broker/wren/election"
)

// The message channel carries its client's frames, keys and bodies as
// sent, and counts them by key; a key that was not registered is dropped
// by the sender, not put on the wire.
func TestMessageChannel(t *testing.T) {
	lns, voters := listeners(t, 2)
	logger := slog.New(slog.NewTextHandler(&syncBuffer{}, nil))
	type frame struct {
		from election.NodeID
		key  int16
		body string
	}
	got := make(chan frame, 16)
	var layers []*Layer
	for i := range 2 {
		l, err := New(Config{ID: election.NodeID(1 + i), Voters: voters, Listener: lns[i], Logger: logger,
			BackoffMin: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		l.HandleMessages([]int16{31000, 31001}, func(from election.NodeID, key int16, body []byte) error {
			got <- frame{from, key, string(body)}
			return nil
		})
		if err := l.Start(); err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		layers = append(layers, l)
	}
	waitFor(t, "node 1 connected to node 2", 5*time.Second, func() bool { return layers[0].Connected(2) })
	layers[0].Send(2, 31999, Bytes("unregistered"))
	layers[0].Send(2, 31000, Bytes("a"))
	layers[0].Send(2, 31001, Bytes("b"))
	for _, want := range []frame{{1, 31000, "a"}, {1, 31001, "b"}} {
		select {
		case f := <-got:
			if f != want {
				t.Fatalf("received %+v, want %+v", f, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no frame; want %+v", want)
		}
	}
	st := layers[0].Stats()
	if st.Sent.Messages[31000].Frames != 1 || st.Sent.Messages[31001].Frames != 1 || len(st.Sent.Messages) != 2 {
		t.Fatalf("sent counts %+v, want one frame of each registered key", st.Sent.Messages)
	}
}
