package producer

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/wren-broker/wren/engine/batch"
)

func txnHeader(pid int64, epoch int16, seq, n int32, off int64) batch.Header {
	h := header(pid, epoch, seq, n, off, 1000+off)
	h.Attributes = 0x10
	return h
}

func markerHeader(pid int64, epoch int16, off int64) batch.Header {
	h := header(pid, epoch, -1, 1, off, 1000+off)
	h.Attributes = 0x30
	return h
}

// TestTxnLeaderFollowerSnapshot: random transactional batches and markers
// checked and committed by a leader, applied by a follower, and the
// follower's state through a snapshot, agree on the open transactions,
// the completed ones and the first unstable offset; the snapshot keeps
// the open transactions.
func TestTxnLeaderFollowerSnapshot(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 0))
	leader, follower := New(Options{MaxProducers: 4}), New(Options{MaxProducers: 4})
	seqs := map[int64]int32{}
	coord := map[int64]int32{}
	var off int64
	model := map[int64]int64{} // pid -> open transaction's first offset
	for i := range 2000 {
		pid := int64(rng.IntN(6))
		if _, known := leader.LastEntry(pid); !known && len(model) >= 4 {
			continue // every producer slot holds an open transaction
		}
		if rng.IntN(3) == 0 {
			m := batch.EndTxnMarker{Commit: rng.IntN(2) == 0, CoordinatorEpoch: coord[pid] + int32(rng.IntN(2))}
			h := markerHeader(pid, 0, off)
			info, err := leader.CheckMarker(h, m)
			if err != nil {
				t.Fatalf("seed %d step %d: %v", seed, i, err)
			}
			lc, lok := leader.Commit(info)
			fc, fok := follower.ApplyControl(h, &m)
			first, open := model[pid]
			if !open {
				first = off
			}
			if !lok || !fok || lc != fc || lc.FirstOffset != first || lc.LastOffset != off || lc.Aborted == m.Commit {
				t.Fatalf("seed %d step %d: leader %+v follower %+v, want first %d last %d", seed, i, lc, fc, first, off)
			}
			delete(model, pid)
			coord[pid] = m.CoordinatorEpoch
			off++
		} else {
			n := int32(1 + rng.IntN(3))
			h := txnHeader(pid, 0, seqs[pid], n, off)
			if e, ok := leader.LastEntry(pid); !ok || e.LastSequence() < 0 {
				h.BaseSequence = 0
				seqs[pid] = 0
			}
			info, err := leader.Check(h)
			if err != nil {
				t.Fatalf("seed %d step %d: %v", seed, i, err)
			}
			leader.Commit(info)
			follower.Apply(h)
			if _, open := model[pid]; !open {
				model[pid] = off
			}
			seqs[pid] = h.BaseSequence + n
			off = h.NextOffset()
		}
		leader.OnHighWatermarkUpdated(off)
		follower.OnHighWatermarkUpdated(off)
		wantFirst, wantOK := int64(0), false
		for _, f := range model {
			if !wantOK || f < wantFirst {
				wantFirst, wantOK = f, true
			}
		}
		for _, s := range []*State{leader, follower} {
			if f, ok := s.FirstUnstableOffset(); f != wantFirst || ok != wantOK {
				t.Fatalf("seed %d step %d: first unstable %d %v, want %d %v", seed, i, f, ok, wantFirst, wantOK)
			}
		}
		if fmt.Sprint(leader.OpenTxns()) != fmt.Sprint(follower.OpenTxns()) || len(leader.OpenTxns()) != len(model) {
			t.Fatalf("seed %d step %d: open %v / %v, model %v", seed, i, leader.OpenTxns(), follower.OpenTxns(), model)
		}
		if i%100 == 0 {
			snap := follower.AppendSnapshot(nil)
			d, err := DecodeSnapshot(snap, follower.MapEndOffset(), Options{MaxProducers: 4})
			if err != nil {
				t.Fatal(err)
			}
			// A snapshot keeps no transaction's start time: the decoded
			// state starts it at the producer's last timestamp.
			open := func(s *State) string {
				var out []string
				for _, o := range s.OpenTxns() {
					out = append(out, fmt.Sprint(o.ProducerID, o.ProducerEpoch, o.FirstOffset, o.LastTimestamp))
				}
				return fmt.Sprint(out)
			}
			if open(d) != open(follower) || !bytes.Equal(d.AppendSnapshot(nil), snap) {
				t.Fatalf("seed %d step %d: decoded open %v, want %v", seed, i, d.OpenTxns(), follower.OpenTxns())
			}
		}
	}
}

// TestTxnUnreplicatedMarkerHoldsLSO: a completed transaction stays
// unstable until the high watermark passes its marker.
func TestTxnUnreplicatedMarkerHoldsLSO(t *testing.T) {
	s := New(Options{})
	s.Apply(txnHeader(1, 0, 0, 2, 10))
	s.Apply(txnHeader(2, 0, 0, 2, 12))
	c, ok := s.ApplyControl(markerHeader(1, 0, 14), &batch.EndTxnMarker{})
	if !ok || c != (CompletedTxn{ProducerID: 1, FirstOffset: 10, LastOffset: 14, Aborted: true, LastStableOffset: 12}) {
		t.Fatalf("completed %+v", c)
	}
	if got := s.LastStableOffset(14); got != 10 {
		t.Fatalf("LSO at hw 14: %d, want 10", got)
	}
	if got := s.LastStableOffset(15); got != 12 {
		t.Fatalf("LSO at hw 15: %d, want 12", got)
	}
	c, _ = s.ApplyControl(markerHeader(2, 0, 15), &batch.EndTxnMarker{Commit: true})
	if c.LastStableOffset != 16 || c.Aborted {
		t.Fatalf("completed %+v", c)
	}
	if got := s.LastStableOffset(16); got != 16 {
		t.Fatalf("LSO at hw 16: %d, want 16", got)
	}
	// A marker without a marker record (compacted away) changes nothing.
	if _, ok := s.ApplyControl(markerHeader(3, 0, 16), nil); ok || s.Len() != 2 {
		t.Fatalf("an empty control batch completed a transaction or added a producer")
	}
	// Fencing.
	s.Apply(txnHeader(1, 1, 0, 1, 17))
	if _, err := s.CheckMarker(markerHeader(1, 0, 18), batch.EndTxnMarker{CoordinatorEpoch: 9}); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("old producer epoch: %v", err)
	}
	s.ApplyControl(markerHeader(1, 1, 18), &batch.EndTxnMarker{CoordinatorEpoch: 3})
	if _, err := s.CheckMarker(markerHeader(1, 1, 19), batch.EndTxnMarker{CoordinatorEpoch: 2}); !errors.Is(err, ErrCoordinatorFenced) {
		t.Fatalf("old coordinator epoch: %v", err)
	}
}
