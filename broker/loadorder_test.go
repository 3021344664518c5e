package broker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/internal/vfs"
)

// gateFS holds every listing of a matching directory while the gate is
// held: a partition's load starts by listing its directory, so the loads
// of those partitions wait until release, however long the test takes.
type gateFS struct {
	vfs.FS
	match   func(path string) bool
	mu      sync.Mutex
	held    chan struct{} // nil: open
	waiting atomic.Int32  // listings that waited at the gate
}

func (g *gateFS) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held == nil {
		g.held = make(chan struct{})
	}
}

func (g *gateFS) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held != nil {
		close(g.held)
		g.held = nil
	}
}

func (g *gateFS) List(dir string) ([]string, error) {
	if g.match(dir) {
		g.mu.Lock()
		ch := g.held
		g.mu.Unlock()
		if ch != nil {
			g.waiting.Add(1)
			<-ch
		}
	}
	return g.FS.List(dir)
}

// A node restarting with many follower partitions opens its client
// listener once the partitions it leads are loaded, and serves them while
// the follower partitions' loads are still held (here: blocked in the file
// system until the test lets them go); those load afterwards, are hosted
// as they are, and the node rejoins their ISR. On a build that loads every
// partition before the listener, Start does not return while the loads
// are held.
func TestStartServesLeadersBeforeFollowerLoads(t *testing.T) {
	const followers = 40
	ports := freePorts(t, 3)
	gate := &gateFS{FS: vfs.NewOS(), match: func(p string) bool { return strings.Contains(filepath.Base(p), "follow-") }}
	cfgs := make([]*config.Config, 3)
	brokers := make([]*Broker, 3)
	var mu sync.Mutex // guards brokers[0], replaced by the restart
	for i := range 3 {
		text := quorumConfigText(i+1, filepath.Join(t.TempDir(), "data"), ports)
		if i == 0 {
			// Checkpoints often, to see what they keep of partitions
			// still loading.
			text += "[storage]\nlog.flush.offset.checkpoint.interval.ms = 50\n"
		}
		cfg, err := config.Parse(fmt.Sprintf("node%d.toml", i+1), []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		cfgs[i] = cfg
		o := Options{Logger: testLogger(t)}
		if i == 0 {
			o.FS = gate
		}
		b, err := Start(cfg, o)
		if err != nil {
			t.Fatalf("start node %d: %v", i+1, err)
		}
		brokers[i] = b
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, b := range brokers {
			if b != nil {
				b.Close()
			}
		}
	})
	// Runs before the closes (cleanups run last first): a load held at
	// the gate would keep a Close waiting.
	t.Cleanup(gate.release)
	pollFor(t, "one controller known to all, three brokers registered", 30*time.Second, func() bool {
		ctrl := brokers[0].Controller().ControllerID()
		for _, b := range brokers {
			if ctrl < 0 || b.Controller().ControllerID() != ctrl || len(b.Controller().Brokers()) != 3 {
				return false
			}
		}
		return true
	})

	// "lead": one partition, on node 1 alone, so node 1 leads it whenever
	// it is up. "follow": every partition led by node 2, node 1 a follower.
	cl, _ := newClient(t, brokers[1], kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	ctx := testContext(t)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	for _, tc := range []struct {
		name     string
		n        int
		replicas []int32
	}{{"lead", 1, []int32{1}}, {"follow", followers, []int32{2, 3, 1}}} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = tc.name, -1, -1
		for p := range tc.n {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = int32(p), tc.replicas
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range resp.Topics {
		if rt.ErrorCode != 0 {
			t.Fatalf("create %s: error code %d", rt.Topic, rt.ErrorCode)
		}
	}
	followTP := func(p int) engine.TopicPartition { return engine.TopicPartition{Topic: "follow", Partition: int32(p)} }
	inISR := func(b *Broker, tp engine.TopicPartition) bool {
		t := b.Controller().Image().Topic(tp.Topic)
		if t == nil || int(tp.Partition) >= len(t.Partitions) {
			return false
		}
		for _, r := range t.Partitions[tp.Partition].ISR {
			if r == 1 {
				return true
			}
		}
		return false
	}
	allFollowing := func(b *Broker) bool {
		for p := range followers {
			if b.Replicas().Partition(followTP(p)) == nil || !inISR(b, followTP(p)) {
				return false
			}
		}
		return true
	}
	pollFor(t, "node 1 hosts every follower partition, in their ISR", 60*time.Second, func() bool { return allFollowing(brokers[0]) })
	produce := func(cl *kgo.Client, topic, value string) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
	}
	produce(cl, "lead", "before")
	produce(cl, "follow", "before")
	pollFor(t, "node 1 learns follow-0's high watermark", 30*time.Second, func() bool {
		p := brokers[0].Replicas().Partition(followTP(0))
		return p != nil && p.HighWatermark() == 1
	})

	// Restart node 1 with its follower partitions' loads held.
	if err := brokers[0].Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	brokers[0] = nil
	mu.Unlock()
	gate.hold()
	started := make(chan *Broker, 1)
	go func() {
		b, err := Start(cfgs[0], Options{Logger: testLogger(t), FS: gate})
		if err != nil {
			t.Errorf("restart node 1: %v", err)
		}
		started <- b
	}()
	var b1 *Broker
	select {
	case b1 = <-started:
	case <-time.After(60 * time.Second):
		gate.release()
		if b := <-started; b != nil {
			b.Close()
		}
		t.Fatalf("node 1 did not start within 60 s while its follower partitions' loads were held (%d waiting)", gate.waiting.Load())
	}
	if b1 == nil {
		t.FailNow()
	}
	mu.Lock()
	brokers[0] = b1
	mu.Unlock()
	pollFor(t, "a follower partition's load waiting at the gate", 30*time.Second, func() bool { return gate.waiting.Load() > 0 })

	// Node 1 serves the partition it leads: a produce and a read back,
	// through its own listener alone.
	c1, _ := newClient(t, b1, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"lead": {0: kgo.NewOffset().AtStart()}}))
	produce(c1, "lead", "after")
	var got []string
	for len(got) < 2 {
		fs := c1.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read back from lead: %v (got %q)", err, got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if strings.Join(got, ",") != "before,after" {
		t.Fatalf("lead holds %q, want before, after", got)
	}
	// ... while no follower partition is loaded: each is held at the
	// gate or queued behind those that are.
	for p := range followers {
		if b1.Replicas().Partition(followTP(p)) != nil {
			t.Fatalf("%s hosted while every follower load is held", followTP(p))
		}
	}
	// A Fetch for one on node 1 is refused with a retriable error, never
	// answered from a log that is not there.
	fr := kmsg.NewPtrFetchRequest()
	fr.MaxWaitMillis, fr.MaxBytes = 0, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "follow"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 0, 0, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	fr.Topics = append(fr.Topics, ft)
	fresp, err := fr.RequestWith(ctx, c1.Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	if len(fresp.Topics) != 1 || len(fresp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch of follow-0 from node 1: %+v", fresp)
	}
	if code := fresp.Topics[0].Partitions[0].ErrorCode; code != 6 && code != 3 && code != 5 {
		t.Fatalf("fetch of follow-0 from node 1 while it loads: error code %d, want NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION or LEADER_NOT_AVAILABLE", code)
	}

	// The node's health facts say it is still loading partitions.
	if f := b1.nodeFacts(); f.PartitionsLoading == 0 {
		t.Fatalf("node 1's facts while %d follower partitions load: %+v, want partitions loading", followers, f)
	}

	// The high watermark checkpoint written meanwhile keeps what it said
	// of the partitions still loading (follow-0 holds one record).
	hwFile := filepath.Join(cfgs[0].LogDirs[0], engine.ReplicationCheckpointFile)
	if err := os.Remove(hwFile); err != nil {
		t.Fatal(err)
	}
	var hws map[engine.TopicPartition]int64
	pollFor(t, "a high watermark checkpoint written while the follower partitions load", 30*time.Second, func() bool {
		hws, err = engine.ReadOffsetCheckpoint(vfs.NewOS(), hwFile)
		return err == nil && len(hws) > 0
	})
	if hw, ok := hws[followTP(0)]; !ok || hw != 1 {
		t.Fatalf("high watermark checkpoint while follow-0 loads: %v (present %v), want 1", hw, ok)
	}

	// Let the loads go: node 1 hosts every follower partition and rejoins
	// its ISR.
	gate.release()
	pollFor(t, "node 1 hosts every follower partition again, in their ISR", 60*time.Second, func() bool { return allFollowing(b1) })
	if f := b1.nodeFacts(); f.PartitionsLoading != 0 {
		t.Fatalf("node 1's facts once every partition loaded: %d partitions loading", f.PartitionsLoading)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(cctx, &kgo.Record{Topic: "follow", Partition: 0, Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("produce to follow after the loads: %v", err)
	}
}
