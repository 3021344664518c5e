package producer

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/wren-broker/wren/engine/batch"
)

// BenchmarkCheckCommit: the leader's per-batch cost for one producer
// appending in order (Check, then Commit after the write).
func BenchmarkCheckCommit(b *testing.B) {
	s := New(Options{})
	var seq int32
	var off int64
	b.ReportAllocs()
	for b.Loop() {
		h := header(7, 0, seq, 10, off, off)
		info, err := s.Check(h)
		if err != nil || info.Duplicate {
			b.Fatal(info, err)
		}
		s.Commit(info)
		seq = batch.IncrementSequence(seq, 10)
		off += 10
	}
}

// BenchmarkCheckDuplicate: answering a retry of the oldest of five
// retained batches (the longest search).
func BenchmarkCheckDuplicate(b *testing.B) {
	s := New(Options{})
	for i := range int32(5) {
		s.Apply(header(7, 0, i*10, 10, int64(i*10), 0))
	}
	h := header(7, 0, 0, 10, 50, 0)
	b.ReportAllocs()
	for b.Loop() {
		if info, err := s.Check(h); err != nil || !info.Duplicate {
			b.Fatal(info, err)
		}
	}
}

// BenchmarkApply: a follower's or recovery's per-batch cost.
func BenchmarkApply(b *testing.B) {
	s := New(Options{})
	var seq int32
	var off int64
	b.ReportAllocs()
	for b.Loop() {
		s.Apply(header(7, 0, seq, 10, off, off))
		seq = batch.IncrementSequence(seq, 10)
		off += 10
	}
}

// BenchmarkNewProducerAtCap: a new producer meeting a full state evicts by
// a scan of every entry.
func BenchmarkNewProducerAtCap(b *testing.B) {
	s := New(Options{})
	var off int64
	for pid := range int64(DefaultMaxProducers) {
		s.Apply(header(pid, 0, 0, 1, off, off))
		off++
	}
	pid := int64(DefaultMaxProducers)
	b.ReportAllocs()
	for b.Loop() {
		s.Apply(header(pid, 0, 0, 1, off, off))
		pid++
		off++
	}
}

func BenchmarkAppendSnapshot(b *testing.B) {
	s := randomState(rand.New(rand.NewPCG(1, 1)), 1000)
	buf := s.AppendSnapshot(nil)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = s.AppendSnapshot(buf[:0])
	}
}

func BenchmarkDecodeSnapshot(b *testing.B) {
	data := randomState(rand.New(rand.NewPCG(1, 1)), 1000).AppendSnapshot(nil)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeSnapshot(data, 0, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEntryMemory measures the heap a full state holds, to back the bound
// doc.go states (about 250 bytes a producer).
func TestEntryMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a full state")
	}
	const n = DefaultMaxProducers
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := New(Options{})
	for pid := range int64(n) {
		for i := range int32(BatchesToRetain) {
			s.Apply(header(pid, 0, i, 1, s.MapEndOffset(), 1))
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perEntry := float64(after.HeapAlloc-before.HeapAlloc) / n
	runtime.KeepAlive(s)
	t.Logf("%d producers with %d batches each: %.0f bytes per producer", n, BatchesToRetain, perEntry)
	if perEntry > 300 {
		t.Fatalf("%.0f bytes per producer; doc.go promises about 250", perEntry)
	}
}
