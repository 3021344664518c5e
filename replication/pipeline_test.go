package replication

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// loopConn is a follower's connection straight into a leader Manager's
// ServeReplicaRequest. As an older leader (refuseDurable) it closes the
// connection on ReplicaFetchDurableVersion, as quorum's transport does on
// a request its handler refuses. It records what each fetch carried.
type loopConn struct {
	leader        *Manager
	from          int32
	refuseDurable bool

	mu      sync.Mutex
	closed  bool
	fetches []loopFetch
}

type loopFetch struct {
	version int16
	tagged  bool
}

func (c *loopConn) RoundTrip(key, version int16, body []byte, _ time.Time) ([]byte, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, errors.New("loopConn: closed")
	}
	if key == 1 {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(version)
		if err := req.ReadFrom(body); err != nil {
			return nil, err
		}
		tagged := false
		for _, t := range req.Topics {
			for _, rp := range t.Partitions {
				rp.UnknownTags.Each(func(k uint32, _ []byte) { tagged = tagged || k == DurableOffsetTag })
			}
		}
		c.mu.Lock()
		c.fetches = append(c.fetches, loopFetch{version: version, tagged: tagged})
		c.mu.Unlock()
		if c.refuseDurable && version == ReplicaFetchDurableVersion {
			c.Close()
			return nil, errors.New("loopConn: connection closed by an older leader")
		}
	}
	resp := c.leader.ServeReplicaRequest(c.from, key, version, body)
	if resp == nil {
		c.Close()
		return nil, fmt.Errorf("loopConn: the leader refused api key %d v%d", key, version)
	}
	return resp, nil
}

func (c *loopConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return nil
}

func (c *loopConn) seen() []loopFetch {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]loopFetch(nil), c.fetches...)
}

// loopPair is a leader (node 1) and a follower (node 2) of partition
// t/0, on real files, the follower's connections going straight into
// the leader's ServeReplicaRequest.
type loopPair struct {
	leader, follower *Manager
	mu               sync.Mutex
	conns            []*loopConn
}

func newLoopPair(tb testing.TB, older bool) *loopPair {
	open := func(node int32) *Manager {
		logs, err := engine.OpenManager(vfs.NewOS(), tb.TempDir(), engine.ManagerConfig{ClusterID: "c", NodeID: node, Defaults: engine.DefaultOptions()})
		if err != nil {
			tb.Fatal(err)
		}
		return NewManager(node, logs, func(*cluster.Image, string, map[string]string) engine.Options { return engine.DefaultOptions() }, slog.New(slog.DiscardHandler))
	}
	lp := &loopPair{leader: open(1), follower: open(2)}
	lp.follower.SetReplication(ReplicationConfig{Fetch: FetchConfig{
		Dial: func(int32) (LeaderConn, error) {
			c := &loopConn{leader: lp.leader, from: 2, refuseDurable: older}
			lp.mu.Lock()
			lp.conns = append(lp.conns, c)
			lp.mu.Unlock()
			return c, nil
		},
		WaitMaxMs: 100,
		Backoff:   10 * time.Millisecond,
	}})
	tb.Cleanup(lp.follower.fetchers.stopAll)
	id := cluster.NewUUID()
	im, err := cluster.ImageOf(
		cluster.Record{Kind: cluster.KindTopic, Topic: &cluster.TopicRecord{Name: "t", ID: id}},
		cluster.Record{Kind: cluster.KindPartition, Partition: &cluster.PartitionRecord{TopicID: id, Partition: 0,
			Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 0, PartitionEpoch: 0}})
	if err != nil {
		tb.Fatal(err)
	}
	lp.leader.ApplyImage(nil, im)
	lp.follower.ApplyImage(nil, im)
	return lp
}

func (lp *loopPair) fetches() []loopFetch {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	var all []loopFetch
	for _, c := range lp.conns {
		all = append(all, c.seen()...)
	}
	return all
}

// A follower fetches ahead of its fdatasync and reports its durable
// offset; acks=all appends commit through it on real files, and the
// follower ends with every record durable. Against an older leader, which
// refuses the pipelined fetch, it falls back to Kafka's fetch (sync, then
// fetch) and still replicates.
func TestFollowerPipelinesAndFallsBack(t *testing.T) {
	for _, older := range []bool{false, true} {
		t.Run(fmt.Sprintf("older-leader=%v", older), func(t *testing.T) {
			pair := newLoopPair(t, older)
			tp := engine.TopicPartition{Topic: "t"}
			lp, fp := pair.leader.Partition(tp), pair.follower.Partition(tp)
			const n = 50
			for i := range n {
				_, wait, err := lp.AppendAsLeaderTimeout(oneRecord(t), -1, 10*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				if err := wait(); err != nil {
					t.Fatalf("acks=all append %d: %v", i, err)
				}
			}
			if hw := lp.HighWatermark(); hw != n {
				t.Fatalf("leader high watermark %d, want %d", hw, n)
			}
			// Committed means durable on the follower too.
			if d := fp.Log().DurableOffset(); d < n {
				t.Fatalf("follower durable offset %d below the committed %d", d, n)
			}
			all := pair.fetches()
			if len(all) == 0 {
				t.Fatal("no fetch seen")
			}
			for i, f := range all {
				switch {
				case !older && (f.version != ReplicaFetchDurableVersion || !f.tagged):
					t.Fatalf("fetch %d: v%d tagged=%v, want v%d with the durable offset", i, f.version, f.tagged, ReplicaFetchDurableVersion)
				case older && i == 0 && f.version != ReplicaFetchDurableVersion:
					t.Fatalf("first fetch v%d, want a try of v%d", f.version, ReplicaFetchDurableVersion)
				case older && i > 0 && (f.version != ReplicaFetchVersion || f.tagged):
					t.Fatalf("fetch %d after the older leader refused: v%d tagged=%v, want v%d untagged", i, f.version, f.tagged, ReplicaFetchVersion)
				}
			}
		})
	}
}

// BenchmarkAcksAllPipelined measures acks=all appends of 256 KiB batches,
// eight in flight, through one follower on real files: pipelined (the
// follower's fdatasync overlaps its next fetch) against a follower that
// syncs before each fetch (an older leader's protocol).
func BenchmarkAcksAllPipelined(b *testing.B) {
	for _, older := range []bool{false, true} {
		name := "pipelined"
		if older {
			name = "sync-then-fetch"
		}
		b.Run(name, func(b *testing.B) {
			pair := newLoopPair(b, older)
			p := pair.leader.Partition(engine.TopicPartition{Topic: "t"})
			value := make([]byte, 1024)
			bld := batch.NewBuilder(batch.CompressionNone)
			for range 256 {
				bld.Append(batch.Record{Timestamp: 1, Value: value})
			}
			records, err := bld.Build()
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(records)))
			inflight := make(chan func() error, 8)
			done := make(chan error, 1)
			go func() {
				var first error
				for wait := range inflight {
					if err := wait(); err != nil && first == nil {
						first = err
					}
				}
				done <- first
			}()
			for b.Loop() {
				_, wait, err := p.AppendAsLeaderTimeout(bytes.Clone(records), -1, 10*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				inflight <- wait
			}
			close(inflight)
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		})
	}
}
