package replication

import (
	"errors"
	"testing"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/internal/vfs"
)

// A follower takes the leader's log start offset (DeleteRecords or
// retention on the leader) only while it follows at the fetch's epoch,
// never past its own high watermark, and never backwards.
func TestFollowerTakesLeaderLogStartOffset(t *testing.T) {
	tp := engine.TopicPartition{Topic: "t"}
	l, _, err := engine.Open(vfs.NewMem(), "/d/t-0", tp, engine.DefaultOptions(), engine.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	leader := newPartition(tp, l, nil, 0)
	if err := leader.becomeLeader(3); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		_, wait, err := leader.AppendAsLeader(oneRecord(t), -1)
		if err != nil {
			t.Fatal(err)
		}
		if err := wait(); err != nil {
			t.Fatal(err)
		}
	}
	// The same log as a follower at epoch 4 whose high watermark is 6.
	p := newPartition(tp, l, nil, 6)
	if err := p.becomeLeaderOrFollower(false, 4); err != nil {
		t.Fatal(err)
	}
	step := func(epoch int32, leaderLSO int64, wantMoved bool, wantErr error, wantLSO int64) {
		t.Helper()
		moved, err := p.maybeIncrementLogStartOffset(epoch, leaderLSO)
		if moved != wantMoved || !errors.Is(err, wantErr) || l.LogStartOffset() != wantLSO {
			t.Fatalf("epoch %d, leader's log start %d: moved %v err %v log start %d; want %v, %v, %d",
				epoch, leaderLSO, moved, err, l.LogStartOffset(), wantMoved, wantErr, wantLSO)
		}
	}
	step(3, 8, false, errNotFollowing, 0) // a fetch from before the move
	step(4, 8, true, nil, 6)              // clamped to the high watermark
	step(4, 5, false, nil, 6)             // never backwards
	p.setFollowerHighWatermark(10)
	step(4, 8, true, nil, 8)
	step(4, -1, false, nil, 8) // an answer without one
	if err := p.becomeLeaderOrFollower(true, 5); err != nil {
		t.Fatal(err)
	}
	step(5, 9, false, errNotFollowing, 8) // leads now: a late answer changes nothing
}
