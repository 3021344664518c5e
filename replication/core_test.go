package replication

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/internal/datadriven"
)

// The replica core's rules as scripts (testdata/core): the high
// watermark, ISR shrink and expand, acks=all waiters, and truncation by
// leader epoch (KIP-101 and KIP-279).
func TestReplicaCoreScripts(t *testing.T) {
	datadriven.RunDir(t, "testdata/core", func(t *testing.T) func(*datadriven.Cmd) string {
		var c *replicaCore
		return func(d *datadriven.Cmd) string {
			switch d.Name {
			case "leader":
				// leader self=1 epoch=1 pepoch=0 replicas=1,2,3 isr=1,2,3 min=2 lag=100 leo=0 durable=0 hw=0 now=0
				c = newReplicaCore(int32(d.Int(t, "self", 1)), int64(d.Int(t, "hw", 0)))
				c.setMetadata(int32(d.Int(t, "pepoch", 0)), ids(t, d.Str("replicas", "1,2,3")), ids(t, d.Str("isr", "1,2,3")),
					d.Int(t, "min", 2), int64(d.Int(t, "lag", 100)))
				leo := int64(d.Int(t, "leo", 0))
				c.becomeLeader(int32(d.Int(t, "epoch", 1)), int64(d.Int(t, "now", 0)), leo, int64(d.Int(t, "durable", int(leo))))
			case "follower":
				c.becomeFollower(int32(d.Int(t, "epoch", int(c.leaderEpoch)+1)))
			case "metadata":
				mi := c.minISR
				if d.Has("min") {
					mi = d.Int(t, "min", 0)
				}
				reps := c.replicas
				if d.Has("replicas") {
					reps = ids(t, d.Str("replicas", ""))
				}
				c.setMetadata(int32(d.Int(t, "pepoch", int(c.partitionEpoch)+1)), reps, ids(t, d.Str("isr", "")), mi, c.lagTimeMaxMs)
			case "commit":
				// The controller commits the pending ISR change.
				if c.pending == nil {
					return "no pending ISR change"
				}
				c.setMetadata(c.pending.PartitionEpoch+1, c.replicas, c.pending.ISR, c.minISR, c.lagTimeMaxMs)
			case "refused":
				c.alterISRFailed()
			case "unknown":
				// No answer, or one that does not say whether the
				// controller applied the change.
				c.alterISRUnknown(int64(d.Int(t, "now", 0)))
			case "append":
				leo := int64(d.Int(t, "leo", 0))
				c.localAppend(leo, int64(d.Int(t, "durable", int(leo))))
			case "fetch":
				c.followerFetch(int32(d.Int(t, "from", 0)), int64(d.Int(t, "offset", 0)), int64(d.Int(t, "now", 0)))
			case "tick":
				c.tick(int64(d.Int(t, "now", 0)))
			case "wait":
				c.addWaiter(uint64(d.Int(t, "id", 0)), int64(d.Int(t, "offset", 0)))
			case "truncate":
				return runTruncation(t, d)
			default:
				t.Fatalf("%s: unknown command %s", d.Pos, d.Name)
			}
			// The core's own rules, checked after every input with the
			// invariants tag, run here in every build.
			c.checkInvariants()
			return describeReady(c, c.takeReady())
		}
	})
}

func describeReady(c *replicaCore, r Ready) string {
	var b strings.Builder
	fmt.Fprintf(&b, "hw=%d isr=%v", r.HighWatermark, c.isr)
	if r.HighWatermarkChanged {
		b.WriteString(" (hw moved)")
	}
	if c.pending != nil {
		fmt.Fprintf(&b, " pending=%v", c.pending.ISR)
	}
	if r.AlterISR != nil {
		fmt.Fprintf(&b, "\nalter-isr %v leader-epoch=%d partition-epoch=%d", r.AlterISR.ISR, r.AlterISR.LeaderEpoch, r.AlterISR.PartitionEpoch)
	}
	for _, rel := range r.Released {
		if rel.Err == nil {
			fmt.Fprintf(&b, "\nrelease %d: ok", rel.ID)
		} else {
			fmt.Fprintf(&b, "\nrelease %d: %s", rel.ID, strings.SplitN(rel.Err.Error(), ":", 2)[0])
		}
	}
	return b.String()
}

func ids(t *testing.T, s string) []int32 {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("id %q: %v", f, err)
		}
		out = append(out, int32(v))
	}
	return out
}

// epochs parses "epoch@startOffset,...".
func epochs(t *testing.T, s string) []engine.EpochEntry {
	var out []engine.EpochEntry
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		e, o, ok := strings.Cut(f, "@")
		ev, err1 := strconv.Atoi(e)
		ov, err2 := strconv.Atoi(o)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("epoch entry %q: want epoch@offset", f)
		}
		out = append(out, engine.EpochEntry{Epoch: int32(ev), StartOffset: int64(ov)})
	}
	return out
}

// runTruncation plays a follower's truncation against a leader's log the
// way the fetcher does: ask with the latest local epoch, cut, repeat.
func runTruncation(t *testing.T, d *datadriven.Cmd) string {
	follower := epochs(t, d.Str("follower", ""))
	leo := int64(d.Int(t, "leo", 0))
	leader := epochs(t, d.Str("leader", ""))
	leaderLEO := int64(d.Int(t, "leader-leo", 0))
	var b strings.Builder
	for i := 0; i < 10; i++ {
		if len(follower) == 0 {
			fmt.Fprintf(&b, "no epochs left: fetch from %d\n", leo)
			return b.String()
		}
		asked := follower[len(follower)-1].Epoch
		le, lend := endOffsetForEpoch(leader, asked, leaderLEO)
		st := truncationStep(follower, leo, le, lend)
		fmt.Fprintf(&b, "ask epoch %d: leader answers epoch %d end %d; truncate to %d", asked, le, lend, st.TruncateTo)
		if st.TruncateTo < leo {
			leo = st.TruncateTo
			for len(follower) > 0 && follower[len(follower)-1].StartOffset >= leo {
				follower = follower[:len(follower)-1]
			}
		}
		if st.Done {
			fmt.Fprintf(&b, "; done\nfetch from %d, epochs %v\n", leo, follower)
			return b.String()
		}
		b.WriteString("\n")
	}
	t.Fatalf("%s: truncation did not finish in 10 steps", d.Pos)
	return ""
}
