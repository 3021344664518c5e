package quorum

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/internal/vfs"
	"github.com/wren-broker/wren/peer"
)

// BenchmarkCommitLoopback measures one metadata commit on a three-node
// quorum over loopback sockets with storage on the real disk (every
// append fdatasynced on a majority before it commits): Propose until the
// entry is committed and applied on the controller.
func BenchmarkCommitLoopback(b *testing.B) {
	lns, voters := listeners(b, 3)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	var drivers []*Driver
	for i, ln := range lns {
		id := election.NodeID(i + 1)
		tr, err := newTCP(peer.Config{ID: id, Voters: voters, Listener: ln, Logger: logger})
		if err != nil {
			b.Fatal(err)
		}
		store, stored, err := OpenStorage(vfs.NewOS(), b.TempDir()+"/q")
		if err != nil {
			b.Fatal(err)
		}
		ids := []election.NodeID{1, 2, 3}
		d, err := Start(Config{Node: testConfig(id, ids, uint64(id)), Tick: 10 * time.Millisecond, Logger: logger}, store, stored, tr)
		if err != nil {
			b.Fatal(err)
		}
		drivers = append(drivers, d)
	}
	defer func() {
		for _, d := range drivers {
			d.Close()
		}
	}()
	var ctrl *Driver
	deadline := time.Now().Add(20 * time.Second)
	for ctrl == nil {
		for _, d := range drivers {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			if d.SoftState().Acting {
				if _, err := d.Propose(ctx, []byte("warm")); err == nil {
					ctrl = d
				}
			}
			cancel()
		}
		if time.Now().After(deadline) {
			b.Fatal("no controller within 20 s")
		}
	}
	payload := []byte(`[{"kind":"topic","topic":{"name":"bench"}}]`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if _, err := ctrl.Propose(ctx, payload); err != nil {
			b.Fatal(err)
		}
		cancel()
	}
}
