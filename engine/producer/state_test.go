package producer

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/invariants/invtest"
)

// send is one client batch: producer id, epoch, first sequence, records.
type send struct {
	pid   int64
	epoch int16
	seq   int32
	n     int32
}

// TestCheck runs each case's batches through Check → write → Commit (all
// must be written), then checks the probe batch. dupOf is the index in
// before of the batch the probe must be answered with, or -1.
func TestCheck(t *testing.T) {
	five := []send{{1, 0, 0, 2}, {1, 0, 2, 3}, {1, 0, 5, 1}, {1, 0, 6, 4}, {1, 0, 10, 2}}
	seven := []send{{1, 0, 0, 1}, {1, 0, 1, 1}, {1, 0, 2, 2}, {1, 0, 4, 1}, {1, 0, 5, 3}, {1, 0, 8, 1}, {1, 0, 9, 1}}
	const max = math.MaxInt32
	type tc struct {
		name   string
		opts   Options
		before []send
		probe  send
		want   error // nil: appended (or a duplicate when dupOf >= 0)
		dupOf  int
	}
	cases := []tc{
		{name: "new producer at sequence 0", probe: send{1, 0, 0, 3}, dupOf: -1},
		{name: "new producer at sequence 0, any epoch", probe: send{1, 7, 0, 1}, dupOf: -1},
		{name: "in order", before: five, probe: send{1, 0, 12, 1}, dupOf: -1},
		{name: "gap", before: five, probe: send{1, 0, 13, 1}, want: ErrOutOfOrderSequence, dupOf: -1},
		{name: "sequence reset to 0 in the same epoch", before: five, probe: send{1, 0, 0, 1}, want: ErrOutOfOrderSequence, dupOf: -1},
		{name: "overlaps the last batch", before: five, probe: send{1, 0, 11, 2}, want: ErrOutOfOrderSequence, dupOf: -1},
		{name: "same first sequence as a retained batch, other length", before: five, probe: send{1, 0, 6, 3}, want: ErrOutOfOrderSequence, dupOf: -1},
		{name: "stale epoch", before: []send{{1, 0, 0, 1}, {1, 1, 0, 1}}, probe: send{1, 0, 1, 1}, want: ErrInvalidProducerEpoch, dupOf: -1},
		{name: "stale epoch repeating an old batch exactly", before: []send{{1, 0, 0, 1}, {1, 1, 0, 1}}, probe: send{1, 0, 0, 1}, want: ErrInvalidProducerEpoch, dupOf: -1},
		{name: "epoch bump at sequence 0", before: five, probe: send{1, 1, 0, 1}, dupOf: -1},
		{name: "epoch bump at sequence 5", before: five, probe: send{1, 1, 5, 1}, want: ErrOutOfOrderSequence, dupOf: -1},
		{name: "window reset by an epoch bump: old range under the new epoch", before: []send{{1, 0, 0, 1}, {1, 0, 1, 1}, {1, 1, 0, 1}}, probe: send{1, 1, 1, 1}, dupOf: -1},
		{name: "duplicate in the new epoch", before: []send{{1, 0, 0, 1}, {1, 1, 0, 2}}, probe: send{1, 1, 0, 2}, dupOf: 1},
		{name: "negative epoch", probe: send{1, -1, 0, 1}, want: ErrInvalidProducerEpoch, dupOf: -1},
		{name: "negative sequence", probe: send{1, 0, -1, 1}, want: ErrOutOfOrderSequence, dupOf: -1},
		{name: "unknown producer at sequence 5", probe: send{1, 0, 5, 1}, want: ErrUnknownProducerID, dupOf: -1},
		{name: "unknown producer at sequence 5, Kafka's acceptance", opts: Options{AcceptUnknownSequence: true}, probe: send{1, 0, 5, 1}, dupOf: -1},
		{name: "another producer is unknown", before: five, probe: send{2, 0, 12, 1}, want: ErrUnknownProducerID, dupOf: -1},
		{name: "another producer at sequence 0", before: five, probe: send{2, 0, 0, 1}, dupOf: -1},
		{name: "not idempotent", before: five, probe: send{-1, -1, -1, 3}, dupOf: -1},
		{name: "sequence wraps: MaxInt32 then 0", opts: Options{AcceptUnknownSequence: true},
			before: []send{{1, 0, max - 1, 2}}, probe: send{1, 0, 0, 1}, dupOf: -1},
		{name: "sequence wraps: MaxInt32 then 1 is a gap", opts: Options{AcceptUnknownSequence: true},
			before: []send{{1, 0, max - 1, 2}}, probe: send{1, 0, 1, 1}, want: ErrOutOfOrderSequence, dupOf: -1},
		{name: "a batch spanning the wrap (MaxInt32-1 .. 1) is followed by 2", opts: Options{AcceptUnknownSequence: true},
			before: []send{{1, 0, max - 1, 4}}, probe: send{1, 0, 2, 1}, dupOf: -1},
		{name: "a batch spanning the wrap, retried", opts: Options{AcceptUnknownSequence: true},
			before: []send{{1, 0, max - 5, 2}, {1, 0, max - 3, 6}}, probe: send{1, 0, max - 3, 6}, dupOf: 1},
		{name: "a batch spanning the wrap is not followed by 0", opts: Options{AcceptUnknownSequence: true},
			before: []send{{1, 0, max - 1, 4}}, probe: send{1, 0, 0, 1}, want: ErrOutOfOrderSequence, dupOf: -1},
		{name: "sequence MaxInt32 after MaxInt32-1", opts: Options{AcceptUnknownSequence: true},
			before: []send{{1, 0, max - 1, 1}}, probe: send{1, 0, max, 1}, dupOf: -1},
	}
	// A retry of each of the last five batches gets its original offsets;
	// with seven written, the two oldest have left the window.
	for i := range five {
		cases = append(cases, tc{name: fmt.Sprintf("duplicate of batch %d of 5", i+1), before: five, probe: five[i], dupOf: i})
	}
	for i := range seven {
		c := tc{name: fmt.Sprintf("retry of batch %d of 7", i+1), before: seven, probe: seven[i], dupOf: i}
		if i < 2 {
			c.want, c.dupOf = ErrOutOfOrderSequence, -1
		}
		cases = append(cases, c)
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newPartition(c.opts)
			var written []batch.Header
			for _, b := range c.before {
				written = append(written, p.mustProduce(t, b.pid, b.epoch, b.seq, b.n))
			}
			before := describe(p.state)
			info, h, err := p.produce(c.probe.pid, c.probe.epoch, c.probe.seq, c.probe.n)
			switch {
			case c.want != nil:
				if !errors.Is(err, c.want) {
					t.Fatalf("err = %v, want %v", err, c.want)
				}
				var kafkaErr *kerr.Error
				if !errors.As(err, &kafkaErr) {
					t.Fatalf("err %v wraps no *kerr.Error", err)
				}
				if got := describe(p.state); got != before {
					t.Fatalf("a refused batch changed the state:\nbefore\n%safter\n%s", before, got)
				}
			case err != nil:
				t.Fatalf("err = %v, want none", err)
			case c.dupOf >= 0:
				orig := written[c.dupOf]
				if !info.Duplicate || info.Original.FirstOffset() != orig.BaseOffset ||
					info.Original.LastOffset != orig.LastOffset() || info.Original.Timestamp != orig.MaxTimestamp ||
					info.Original.FirstSequence() != orig.BaseSequence || info.Original.LastSequence != orig.LastSequence() {
					t.Fatalf("got duplicate=%v %+v, want the original %+v", info.Duplicate, info.Original, orig)
				}
				if len(p.log) != len(c.before) {
					t.Fatalf("a duplicate was written: %d batches in the log", len(p.log))
				}
				if got := describe(p.state); got != before {
					t.Fatalf("a duplicate changed the state:\nbefore\n%safter\n%s", before, got)
				}
			default:
				if info.Duplicate || len(p.log) != len(c.before)+1 {
					t.Fatalf("duplicate=%v, %d batches in the log; want the probe appended", info.Duplicate, len(p.log))
				}
				if !h.HasProducerID() {
					return
				}
				e, ok := p.state.LastEntry(h.ProducerID)
				last, _ := e.LastBatch()
				if !ok || e.ProducerEpoch != h.ProducerEpoch || last.LastOffset != h.LastOffset() ||
					last.FirstSequence() != h.BaseSequence || last.LastSequence != h.LastSequence() {
					t.Fatalf("after the append: entry %+v %v, want the probe %+v as the last batch", e, ok, h)
				}
			}
		})
	}
}

// TestEpochBumpResetsWindow: after a bump the entry keeps only the new
// epoch's batches, and an old-epoch retry is fenced.
func TestEpochBumpResetsWindow(t *testing.T) {
	p := newPartition(Options{})
	for seq := int32(0); seq < 4; seq++ {
		p.mustProduce(t, 9, 3, seq, 1)
	}
	h := p.mustProduce(t, 9, 4, 0, 2)
	e, _ := p.state.LastEntry(9)
	if b := e.Batches(); e.ProducerEpoch != 4 || len(b) != 1 || b[0].LastOffset != h.LastOffset() {
		t.Fatalf("entry after bump: epoch %d batches %v", e.ProducerEpoch, b)
	}
	if _, _, err := p.produce(9, 3, 3, 1); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("old-epoch retry: %v", err)
	}
	p.mustProduce(t, 9, 4, 2, 1)
}

// TestApplySkipsChecks: what a follower or recovery applies is never
// refused, even what Check would refuse, and leaves the state the leader
// would have had after writing it.
func TestApplySkipsChecks(t *testing.T) {
	cases := []struct {
		name      string
		log       []send
		wantEpoch int16
		wantLast  int32 // last sequence of the entry
		wantCount int   // batches retained
		next      send  // a client batch now accepted
	}{
		{"gap", []send{{1, 0, 0, 1}, {1, 0, 5, 1}}, 0, 5, 2, send{1, 0, 6, 1}},
		{"unknown producer at sequence 9", []send{{1, 0, 9, 2}}, 0, 10, 1, send{1, 0, 11, 1}},
		{"new epoch not at 0", []send{{1, 0, 0, 1}, {1, 2, 7, 1}}, 2, 7, 1, send{1, 2, 8, 1}},
		{"epoch going backwards", []send{{1, 3, 0, 1}, {1, 1, 4, 1}}, 1, 4, 1, send{1, 1, 5, 1}},
		{"same range twice", []send{{1, 0, 0, 2}, {1, 0, 0, 2}}, 0, 1, 2, send{1, 0, 2, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(Options{})
			var off int64
			for i, b := range c.log {
				h := header(b.pid, b.epoch, b.seq, b.n, off, int64(100+i))
				s.Apply(h)
				off = h.NextOffset()
			}
			e, ok := s.LastEntry(1)
			if !ok || e.ProducerEpoch != c.wantEpoch || e.LastSequence() != c.wantLast || len(e.Batches()) != c.wantCount {
				t.Fatalf("entry %+v (batches %v), want epoch %d last sequence %d with %d batches",
					e, e.Batches(), c.wantEpoch, c.wantLast, c.wantCount)
			}
			if s.MapEndOffset() != off {
				t.Fatalf("MapEndOffset %d, want %d", s.MapEndOffset(), off)
			}
			info, err := s.Check(header(c.next.pid, c.next.epoch, c.next.seq, c.next.n, off, 200))
			if err != nil || info.Duplicate {
				t.Fatalf("next client batch: duplicate=%v err=%v", info.Duplicate, err)
			}
		})
	}
}

// TestTransactionalFields: a transactional batch opens
// CurrentTxnFirstOffset, a marker closes it, and an open transaction keeps
// the producer from expiring.
func TestTransactionalFields(t *testing.T) {
	s := New(Options{})
	h := header(4, 0, 0, 2, 10, 100)
	h.Attributes = 0x10 // transactional
	s.Apply(h)
	h2 := header(4, 0, 2, 1, 12, 101)
	h2.Attributes = 0x10
	s.Apply(h2)
	if e, _ := s.LastEntry(4); e.CurrentTxnFirstOffset != 10 {
		t.Fatalf("CurrentTxnFirstOffset %d, want 10", e.CurrentTxnFirstOffset)
	}
	if n := s.RemoveExpired(1_000_000, 10); n != 0 {
		t.Fatalf("a producer with an open transaction expired")
	}
	marker := header(4, 1, -1, 1, 13, 102)
	marker.Attributes = 0x30 // transactional control batch
	c, ok := s.ApplyControl(marker, &batch.EndTxnMarker{Commit: true, CoordinatorEpoch: 3})
	if !ok || c != (CompletedTxn{ProducerID: 4, FirstOffset: 10, LastOffset: 13, LastStableOffset: 14}) {
		t.Fatalf("completed %+v %v", c, ok)
	}
	e, _ := s.LastEntry(4)
	if e.CurrentTxnFirstOffset != -1 || e.ProducerEpoch != 1 || e.CoordinatorEpoch != 3 || len(e.Batches()) != 0 || e.LastTimestamp != 102 {
		t.Fatalf("after the marker: %+v batches %v", e, e.Batches())
	}
	// The marker's epoch has no batch: the producer starts again at 0.
	if _, err := s.Check(header(4, 1, 3, 1, 14, 103)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("sequence 3 after a marker: %v", err)
	}
	if _, err := s.Check(header(4, 1, 0, 1, 14, 103)); err != nil {
		t.Fatalf("sequence 0 after a marker: %v", err)
	}
	if n := s.RemoveExpired(1_000_000, 10); n != 1 {
		t.Fatalf("RemoveExpired = %d after the transaction closed, want 1", n)
	}
}

func TestRemoveExpired(t *testing.T) {
	s := New(Options{})
	// Producer p last wrote at timestamp 1000+p.
	for p := int64(0); p < 5; p++ {
		s.Apply(header(p, 0, 0, 1, p, 1000+p))
	}
	const expirationMs = 100
	// At 1102: 1102-1000 and 1102-1001 reach 100 and more; 1102-1002 = 100
	// exactly expires too (Kafka's >=); 1003 and 1004 stay.
	if n := s.RemoveExpired(1102, expirationMs); n != 3 {
		t.Fatalf("removed %d, want 3", n)
	}
	for p := int64(0); p < 5; p++ {
		_, ok := s.LastEntry(p)
		if want := p >= 3; ok != want {
			t.Fatalf("producer %d present=%v, want %v", p, ok, want)
		}
	}
	if _, err := s.Check(header(0, 0, 1, 1, 5, 2000)); !errors.Is(err, kerr.UnknownProducerID) {
		t.Fatalf("expired producer continuing its sequence: %v", err)
	}
	if n := s.RemoveExpired(1102, expirationMs); n != 0 {
		t.Fatalf("second pass removed %d", n)
	}
}

// TestMaxProducersEvictsLeastRecent: the cap holds, the producer that
// appended least recently goes (not the one with the oldest timestamp),
// and it comes back through UNKNOWN_PRODUCER_ID.
func TestMaxProducersEvictsLeastRecent(t *testing.T) {
	s := New(Options{MaxProducers: 3})
	s.Apply(header(10, 0, 0, 1, 0, 500))
	s.Apply(header(11, 0, 0, 1, 1, 300))
	s.Apply(header(12, 0, 0, 1, 2, 900))
	s.Apply(header(11, 0, 1, 1, 3, 100)) // a lagging clock: oldest timestamp, latest append
	info, err := s.Check(header(13, 0, 0, 1, 4, 700))
	if err != nil {
		t.Fatal(err)
	}
	s.Commit(info)
	if s.Len() != 3 {
		t.Fatalf("Len %d, want the cap 3", s.Len())
	}
	if got := recency(s); !slices.Equal(got, []int64{12, 11, 13}) {
		t.Fatalf("recency %v, want [12 11 13] after evicting 10", got)
	}
	if _, err := s.Check(header(10, 0, 1, 1, 5, 800)); !errors.Is(err, ErrUnknownProducerID) {
		t.Fatalf("evicted producer: %v", err)
	}
	if _, err := s.Check(header(10, 1, 0, 1, 5, 800)); err != nil {
		t.Fatalf("evicted producer after its epoch bump: %v", err)
	}
	s.Apply(header(12, 0, 1, 1, 5, 901))
	s.Apply(header(14, 0, 0, 1, 6, 902))
	if got := recency(s); !slices.Equal(got, []int64{13, 12, 14}) {
		t.Fatalf("recency %v, want [13 12 14]", got)
	}
	if n := s.RemoveExpired(1000, 99); n != 2 || !slices.Equal(recency(s), []int64{14}) {
		t.Fatalf("RemoveExpired = %d, recency %v", n, recency(s))
	}

	// A snapshot does not keep the order: after loading, timestamps
	// decide (ties: lower id first).
	s = New(Options{MaxProducers: 3})
	s.Apply(header(20, 0, 0, 1, 0, 700))
	s.Apply(header(21, 0, 0, 1, 1, 600))
	s.Apply(header(22, 0, 0, 1, 2, 600))
	loaded, err := DecodeSnapshot(s.AppendSnapshot(nil), s.MapEndOffset(), Options{MaxProducers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got := recency(loaded); !slices.Equal(got, []int64{21, 22, 20}) {
		t.Fatalf("recency after loading %v, want [21 22 20]", got)
	}
}

// TestLogStartOffsetKeepsProducers: retention deleting every batch of a
// live producer forgets nothing (KIP-360); its next batch and a retry of
// its last one are handled as before.
func TestLogStartOffsetKeepsProducers(t *testing.T) {
	p := newPartition(Options{})
	h := p.mustProduce(t, 5, 0, 0, 3)
	p.leo += 1000 // other producers' batches, since deleted
	p.state.OnLogStartOffsetIncremented(p.leo)
	if p.state.MapEndOffset() != p.leo {
		t.Fatalf("MapEndOffset %d, want the new log start %d", p.state.MapEndOffset(), p.leo)
	}
	info, _, err := p.produce(5, 0, 0, 3)
	if err != nil || !info.Duplicate || info.Original.FirstOffset() != h.BaseOffset {
		t.Fatalf("retry of a deleted batch: %+v %v", info, err)
	}
	p.mustProduce(t, 5, 0, 3, 1)
	p.state.OnLogStartOffsetIncremented(0) // never backwards
	if p.state.MapEndOffset() != p.leo {
		t.Fatalf("MapEndOffset moved back to %d", p.state.MapEndOffset())
	}
}

func TestCommitPanics(t *testing.T) {
	p := newPartition(Options{})
	p.mustProduce(t, 1, 0, 0, 1)

	dup, err := p.state.Check(header(1, 0, 0, 1, p.leo, 5))
	if err != nil || !dup.Duplicate {
		t.Fatalf("want a duplicate: %+v %v", dup, err)
	}
	invtest.MustPanic(t, "duplicates are not written", func() { p.state.Commit(dup) })

	a, err := p.state.Check(header(1, 0, 1, 1, p.leo, 6))
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.state.Check(header(1, 0, 1, 1, p.leo, 6))
	if err != nil {
		t.Fatal(err)
	}
	p.state.Commit(a)
	invtest.MustPanic(t, "changed between Check and Commit", func() { p.state.Commit(b) })

	// Moving the end offset between Check and Commit is allowed, unless
	// it passes the checked batch.
	c, err := p.state.Check(header(1, 0, 2, 1, p.state.MapEndOffset()+10, 7))
	if err != nil {
		t.Fatal(err)
	}
	p.state.OnLogStartOffsetIncremented(p.state.MapEndOffset() + 10)
	p.state.Commit(c)
	c, err = p.state.Check(header(1, 0, 3, 1, p.state.MapEndOffset(), 8))
	if err != nil {
		t.Fatal(err)
	}
	p.state.OnLogStartOffsetIncremented(p.state.MapEndOffset() + 5)
	invtest.MustPanic(t, "Commit of a batch at offset", func() { p.state.Commit(c) })
	c, err = p.state.Check(header(1, 0, 3, 1, p.state.MapEndOffset(), 8))
	if err != nil {
		t.Fatal(err)
	}
	p.state.RemoveExpired(1<<40, 1)
	invtest.MustPanic(t, "changed between Check and Commit", func() { p.state.Commit(c) })

	invtest.MustPanic(t, "below the state's end offset", func() { p.state.Check(header(1, 0, 2, 1, 0, 7)) })
	invtest.MustPanic(t, "below the state's end offset", func() { p.state.Apply(header(1, 0, 2, 1, 0, 7)) })
	ctl := header(1, 0, 2, 1, p.state.MapEndOffset(), 7)
	ctl.Attributes = 0x20
	invtest.MustPanic(t, "control batch", func() { p.state.Check(ctl) })
}

func TestClone(t *testing.T) {
	p := newPartition(Options{})
	p.mustProduce(t, 1, 0, 0, 1)
	c := p.state.Clone()
	want := describe(c)
	p.mustProduce(t, 1, 0, 1, 1)
	p.mustProduce(t, 2, 0, 0, 1)
	if got := describe(c); got != want {
		t.Fatalf("the clone changed with the original:\n%s\nwant\n%s", got, want)
	}
	if describe(p.state) == want {
		t.Fatalf("the original did not change")
	}
	c.Apply(header(3, 0, 0, 1, c.MapEndOffset(), 9))
	if _, ok := p.state.LastEntry(3); ok {
		t.Fatalf("a change to the clone reached the original")
	}
}

func TestSequenceArithmetic(t *testing.T) {
	for _, c := range []struct {
		last, next int32
		want       bool
	}{
		{-1, 0, true}, {-1, 1, false}, {0, 1, true}, {5, 5, false}, {5, 7, false},
		{math.MaxInt32 - 1, math.MaxInt32, true}, {math.MaxInt32, 0, true}, {math.MaxInt32, 1, false},
		{math.MaxInt32, math.MinInt32, false},
	} {
		if got := inSequence(c.last, c.next); got != c.want {
			t.Errorf("inSequence(%d, %d) = %v", c.last, c.next, got)
		}
	}
	for _, c := range []struct{ seq, delta int32 }{{0, 0}, {10, 3}, {math.MaxInt32 - 2, 4}, {math.MaxInt32, 1}, {0, math.MaxInt32}, {5, math.MaxInt32 - 1}} {
		last := batch.IncrementSequence(c.seq, c.delta)
		if got := decrementSequence(last, c.delta); got != c.seq {
			t.Errorf("decrementSequence(IncrementSequence(%d, %d)=%d, %d) = %d", c.seq, c.delta, last, c.delta, got)
		}
	}
}
