package txn

import (
	"math/rand/v2"
	"testing"
)

// TestRandomInputs drives a coordinator with random requests from a few
// producers, ticks and marker completions, reloading it from its own
// records now and then, and checks after each step what must hold
// (checkInvariants, and with -tags invariants after every Ready): the
// state a reload rebuilds from the records is the state the coordinator
// had, a transaction in Prepare* always has its markers pending, and an
// epoch never goes back. The seed is printed on failure.
func TestRandomInputs(t *testing.T) {
	seen := map[State]int{}
	for seed := uint64(1); seed <= 20; seed++ {
		runRandom(t, seed, 400, seen)
	}
	// The walk reaches every state the core keeps.
	for _, st := range []State{Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort} {
		if seen[st] == 0 {
			t.Errorf("no step reached %v: %v", st, seen)
		}
	}
}

func runRandom(t *testing.T, seed uint64, steps int, seen map[State]int) {
	rng := rand.New(rand.NewPCG(seed, seed*7919))
	cfg := Config{MaxTimeoutMs: 1000, IDExpirationMs: 5000}
	newCoord := func() *Coordinator {
		c, err := NewCoordinator(cfg, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := newCoord()
	c.CompleteLoad()
	var log []Record
	pending := map[string]Markers{}
	ids := []string{"a", "b", "c"}
	parts := []TopicPartition{{"t", 0}, {"t", 1}, {"u", 0}}
	now := int64(0)
	nextPID := int64(100)
	// epochs are the highest epoch seen per producer id.
	epochs := map[int64]int16{}
	// pids are what each id's producer believes it has.
	type producer struct {
		pid   int64
		epoch int16
	}
	prods := map[string]producer{}
	collect := func() {
		rd := c.Ready()
		log = append(log, rd.Records...)
		for _, r := range rd.Responses {
			_ = r
		}
		for _, mk := range rd.Markers {
			pending[mk.TransactionalID] = mk
		}
	}
	for step := range steps {
		now += int64(rng.IntN(300))
		id := ids[rng.IntN(len(ids))]
		p := prods[id]
		switch rng.IntN(7) {
		case 0:
			c.InitProducerID(InitRequest{RequestID: 1, TransactionalID: id, TimeoutMs: int32(1 + rng.IntN(1200)),
				ExpectedProducerID: -1, ExpectedEpoch: -1, FreshProducerID: nextPID}, now)
			nextPID++
			rd := c.Ready()
			log = append(log, rd.Records...)
			for _, mk := range rd.Markers {
				pending[mk.TransactionalID] = mk
			}
			if r := rd.Responses[0]; r.ErrorCode == 0 {
				prods[id] = producer{r.ProducerID, r.ProducerEpoch}
			}
		case 1, 2:
			var tps []TopicPartition
			for _, tp := range parts {
				if rng.IntN(2) == 0 {
					tps = append(tps, tp)
				}
			}
			c.AddPartitions(AddPartitionsRequest{RequestID: 1, TransactionalID: id, ProducerID: p.pid, ProducerEpoch: p.epoch,
				Partitions: tps, VerifyOnly: rng.IntN(4) == 0}, now)
			collect()
		case 3:
			c.EndTxn(EndRequest{RequestID: 1, TransactionalID: id, ProducerID: p.pid, ProducerEpoch: p.epoch, Commit: rng.IntN(2) == 0}, now)
			collect()
		case 4:
			if mk, ok := pending[id]; ok {
				delete(pending, id)
				c.MarkersWritten(mk, now)
				collect()
			}
		case 5:
			c.Tick(now)
			collect()
		case 6:
			// A failover: a new coordinator replays the records.
			before := map[string]Metadata{}
			for _, x := range c.IDs() {
				before[x] = *c.Transaction(x)
			}
			c = newCoord()
			for _, r := range log {
				back, err := DecodeRecord(r.EncodeKey(), r.EncodeValue())
				if err != nil {
					t.Fatalf("seed %d step %d: decode: %v", seed, step, err)
				}
				if err := c.Replay(back); err != nil {
					t.Fatal(err)
				}
			}
			c.CompleteLoad()
			pending = map[string]Markers{}
			collect()
			for _, x := range c.IDs() {
				got, want := c.Transaction(x), before[x]
				if got.ProducerID != want.ProducerID || got.ProducerEpoch != want.ProducerEpoch || got.State != want.State ||
					len(got.Partitions) != len(want.Partitions) || got.StartMs != want.StartMs || got.TimeoutMs != want.TimeoutMs {
					t.Fatalf("seed %d step %d: %s reloaded as %+v, was %+v", seed, step, x, got, want)
				}
			}
			if len(c.IDs()) != len(before) {
				t.Fatalf("seed %d step %d: reloaded %d ids, had %d", seed, step, len(c.IDs()), len(before))
			}
		}
		c.checkInvariants()
		for _, x := range c.IDs() {
			m := c.Transaction(x)
			seen[m.State]++
			if (m.State == PrepareCommit || m.State == PrepareAbort) && pending[x].ProducerEpoch != m.ProducerEpoch {
				t.Fatalf("seed %d step %d: %s in %v without its markers pending (%+v)", seed, step, x, m.State, pending[x])
			}
			if e, ok := epochs[m.ProducerID]; ok && m.ProducerEpoch < e {
				t.Fatalf("seed %d step %d: %s epoch went back from %d to %d", seed, step, x, e, m.ProducerEpoch)
			}
			epochs[m.ProducerID] = m.ProducerEpoch
		}
	}
}
