package producer

import (
	"fmt"
	"strings"
	"testing"

	"github.com/wren-broker/wren/engine/batch"
)

// header is a client batch header of n records at baseOffset, as
// batch.ParseHeader would return it after offset assignment.
func header(pid int64, epoch int16, baseSeq, n int32, baseOffset, maxTimestamp int64) batch.Header {
	return batch.Header{
		BaseOffset:      baseOffset,
		Magic:           batch.CurrentMagic,
		LastOffsetDelta: n - 1,
		BaseTimestamp:   maxTimestamp,
		MaxTimestamp:    maxTimestamp,
		ProducerID:      pid,
		ProducerEpoch:   epoch,
		BaseSequence:    baseSeq,
		RecordCount:     n,
	}
}

// partition is a leader's log reduced to what the producer state sees:
// it assigns offsets and runs Check → write → Commit.
type partition struct {
	state *State
	log   []batch.Header
	leo   int64
	clock int64
}

func newPartition(opts Options) *partition { return &partition{state: New(opts)} }

// produce runs one client batch through the protocol. It returns the
// AppendInfo (Duplicate or the written batch) or Check's error.
func (p *partition) produce(pid int64, epoch int16, seq, n int32) (AppendInfo, batch.Header, error) {
	p.clock++
	h := header(pid, epoch, seq, n, p.leo, 1_000+p.clock)
	info, err := p.state.Check(h)
	if err != nil || info.Duplicate {
		return info, h, err
	}
	p.log = append(p.log, h) // "the write"
	p.leo = h.NextOffset()
	p.state.Commit(info)
	return info, h, nil
}

// mustProduce appends a batch that must be accepted and written.
func (p *partition) mustProduce(t *testing.T, pid int64, epoch int16, seq, n int32) batch.Header {
	t.Helper()
	info, h, err := p.produce(pid, epoch, seq, n)
	if err != nil || info.Duplicate {
		t.Fatalf("produce pid %d epoch %d seq %d n %d: duplicate=%v err=%v", pid, epoch, seq, n, info.Duplicate, err)
	}
	return h
}

// replay rebuilds a state from the log the way a follower or recovery
// does.
func replay(opts Options, log []batch.Header) *State {
	s := New(opts)
	for _, h := range log {
		s.Apply(h)
	}
	return s
}

// describe prints a state fully (window included), to compare two states
// and to show the difference when they disagree.
func describe(s *State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "mapEnd=%d recency=%v\n", s.MapEndOffset(), recency(s))
	for _, e := range s.Entries() {
		fmt.Fprintf(&b, "pid=%d epoch=%d coord=%d txn=%d ts=%d batches=%v\n", e.ProducerID, e.ProducerEpoch,
			e.CoordinatorEpoch, e.CurrentTxnFirstOffset, e.LastTimestamp, e.Batches())
	}
	return b.String()
}

// describeLast prints a state as a snapshot keeps it: the last batch
// only, and one timestamp per entry (a marker after the last batch makes
// the entry's differ from the batch's, and Kafka keeps the entry's).
func describeLast(s *State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "mapEnd=%d\n", s.MapEndOffset())
	for _, e := range s.Entries() {
		last, ok := e.LastBatch()
		fmt.Fprintf(&b, "pid=%d epoch=%d coord=%d txn=%d ts=%d last=seq %d offset %d delta %d/%v\n", e.ProducerID,
			e.ProducerEpoch, e.CoordinatorEpoch, e.CurrentTxnFirstOffset, e.LastTimestamp,
			last.LastSequence, last.LastOffset, last.OffsetDelta, ok)
	}
	return b.String()
}

// recency lists the producer ids from the next to evict to the newest,
// checking the list's links and that it holds exactly the map's nodes.
func recency(s *State) []int64 {
	var ids []int64
	var prev *node
	for n := s.oldest; n != nil; n = n.newer {
		if n.older != prev || s.producers[n.ProducerID] != n {
			panic(fmt.Sprintf("recency list broken at producer %d", n.ProducerID))
		}
		ids = append(ids, n.ProducerID)
		prev = n
	}
	if prev != s.newest || len(ids) != len(s.producers) {
		panic(fmt.Sprintf("recency list holds %d producers, the map %d", len(ids), len(s.producers)))
	}
	return ids
}
