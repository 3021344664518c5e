package producer

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/wren-broker/wren/engine/batch"
)

// clientBatch is a batch a simulated client has sent in its current epoch.
type clientBatch struct {
	seq, n int32
	acked  bool
	// written is the batch as the leader wrote it.
	written batch.Header
}

// client is an idempotent producer as the Java client and franz-go behave:
// at most five batches in flight, retries of unacknowledged batches, a
// local epoch bump with the sequence reset to 0.
type client struct {
	pid     int64
	epoch   int16
	nextSeq int32
	sent    []clientBatch
}

// inFlight is the number of batches from the oldest unacknowledged one on:
// what max.in.flight.requests.per.connection=5 bounds.
func (c *client) inFlight() int {
	for i, b := range c.sent {
		if !b.acked {
			return len(c.sent) - i
		}
	}
	return 0
}

func (c *client) unacked() []int {
	var out []int
	for i, b := range c.sent {
		if !b.acked {
			out = append(out, i)
		}
	}
	return out
}

// TestPropertyExactlyOnce drives random producers through Check → write →
// Commit with lost responses, retries, epoch bumps, stale and gapped
// batches. Properties: an in-order batch is never refused; every retry of
// a written batch is answered with its original offsets and never written
// twice; refusals never change the state; the state a follower rebuilds
// from the log (Apply) equals the leader's, window included; and a
// snapshot at any point plus a replay of the rest gives the leader's state
// as a snapshot keeps it.
func TestPropertyExactlyOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := newPartition(Options{})
		var clients []*client
		for pid := range int64(rapid.IntRange(1, 3).Draw(t, "producers")) {
			c := &client{pid: pid * 1000}
			if rapid.Bool().Draw(t, "nearWrap") {
				// Its history, replicated from a previous leader: the
				// sequence is close to the wrap at math.MaxInt32.
				last := rapid.Int32Range(math.MaxInt32-12, math.MaxInt32).Draw(t, "lastSeq")
				h := header(c.pid, 0, last, 1, p.leo, p.clock)
				p.state.Apply(h)
				p.log = append(p.log, h)
				p.leo = h.NextOffset()
				c.nextSeq = batch.IncrementSequence(last, 1)
			}
			clients = append(clients, c)
		}
		pick := func(t *rapid.T) *client { return rapid.SampledFrom(clients).Draw(t, "client") }
		refused := func(t *rapid.T, c *client, epoch int16, seq, n int32, want error) {
			before := describe(p.state)
			info, _, err := p.produce(c.pid, epoch, seq, n)
			if !errors.Is(err, want) {
				t.Fatalf("producer %d epoch %d seq %d n %d: duplicate=%v err=%v, want %v", c.pid, epoch, seq, n, info.Duplicate, err, want)
			}
			if after := describe(p.state); after != before {
				t.Fatalf("a refused batch changed the state:\n%s\n%s", before, after)
			}
		}

		t.Repeat(map[string]func(*rapid.T){
			"send": func(t *rapid.T) {
				c := pick(t)
				if c.inFlight() >= BatchesToRetain {
					t.Skip("five in flight")
				}
				n := rapid.Int32Range(1, 4).Draw(t, "records")
				info, h, err := p.produce(c.pid, c.epoch, c.nextSeq, n)
				if err != nil || info.Duplicate {
					t.Fatalf("in-order batch producer %d epoch %d seq %d: duplicate=%v err=%v\n%s",
						c.pid, c.epoch, c.nextSeq, info.Duplicate, err, describe(p.state))
				}
				acked := !rapid.Bool().Draw(t, "responseLost")
				c.sent = append(c.sent, clientBatch{seq: c.nextSeq, n: n, acked: acked, written: h})
				c.nextSeq = batch.IncrementSequence(c.nextSeq, n)
			},
			"retry": func(t *rapid.T) {
				c := pick(t)
				un := c.unacked()
				if len(un) == 0 {
					t.Skip("nothing to retry")
				}
				b := &c.sent[rapid.SampledFrom(un).Draw(t, "batch")]
				logLen := len(p.log)
				info, _, err := p.produce(c.pid, c.epoch, b.seq, b.n)
				if err != nil || !info.Duplicate {
					t.Fatalf("retry of producer %d seq %d: duplicate=%v err=%v", c.pid, b.seq, info.Duplicate, err)
				}
				if info.Original.FirstOffset() != b.written.BaseOffset || info.Original.LastOffset != b.written.LastOffset() ||
					info.Original.Timestamp != b.written.MaxTimestamp {
					t.Fatalf("retry answered with %+v, the batch was written as %+v", info.Original, b.written)
				}
				if len(p.log) != logLen {
					t.Fatalf("a retry was written")
				}
				b.acked = true
			},
			"bumpEpoch": func(t *rapid.T) {
				c := pick(t)
				if len(c.unacked()) > 0 || c.epoch == math.MaxInt16 {
					t.Skip("batches in flight")
				}
				c.epoch++
				c.nextSeq = 0
				c.sent = nil
			},
			"staleEpoch": func(t *rapid.T) {
				c := pick(t)
				e, ok := p.state.LastEntry(c.pid)
				if !ok || e.ProducerEpoch == 0 {
					t.Skip("no older epoch")
				}
				old := rapid.Int16Range(0, e.ProducerEpoch-1).Draw(t, "oldEpoch")
				refused(t, c, old, rapid.Int32Range(0, 100).Draw(t, "seq"), 1, ErrInvalidProducerEpoch)
			},
			"gap": func(t *rapid.T) {
				c := pick(t)
				if _, ok := p.state.LastEntry(c.pid); !ok {
					t.Skip("unknown producer")
				}
				skip := rapid.Int32Range(1, 3).Draw(t, "skip")
				refused(t, c, c.epoch, batch.IncrementSequence(c.nextSeq, skip), 1, ErrOutOfOrderSequence)
			},
			"": func(t *rapid.T) {
				if got, want := describe(replay(Options{}, p.log)), describe(p.state); got != want {
					t.Fatalf("a follower's state differs from the leader's:\n%s\nleader\n%s", got, want)
				}
			},
		})

		// No record sequence was written twice within one epoch of one
		// producer.
		seen := map[string]bool{}
		for _, h := range p.log {
			for i := int32(0); i <= h.LastOffsetDelta; i++ {
				key := fmt.Sprintf("%d/%d/%d", h.ProducerID, h.ProducerEpoch, batch.IncrementSequence(h.BaseSequence, i))
				if seen[key] {
					t.Fatalf("sequence %s written twice", key)
				}
				seen[key] = true
			}
		}

		// Snapshot at any batch boundary, then replay the rest.
		cut := rapid.IntRange(0, len(p.log)).Draw(t, "snapshotAt")
		at := replay(Options{}, p.log[:cut])
		s, err := DecodeSnapshot(at.AppendSnapshot(nil), at.MapEndOffset(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range p.log[cut:] {
			s.Apply(h)
		}
		if got, want := describeLast(s), describeLast(p.state); got != want {
			t.Fatalf("snapshot at batch %d + replay:\n%s\nleader\n%s", cut, got, want)
		}
	})
}
