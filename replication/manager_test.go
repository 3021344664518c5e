package replication

import (
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/internal/vfs"
)

// A leader that learns from an image that another replica now leads
// stops leading before it takes that image's ISR: the ISR is the new
// leader's, and counted over the old leader's follower positions it moved
// the deposed leader's high watermark over records the new leader may
// not hold (found by the replication simulator, seed 2458 of
// TestReplicationSim, scenario chaos-minisr1).
func TestApplyImageDeposedLeaderKeepsHighWatermark(t *testing.T) {
	logs, err := engine.OpenManager(vfs.NewMem(), "/data", engine.ManagerConfig{ClusterID: "c", NodeID: 1, Defaults: engine.DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager(1, logs, func(*cluster.Image, string, map[string]string) engine.Options { return engine.DefaultOptions() }, nil)
	id := cluster.NewUUID()
	image := func(pe, leader, epoch int32, isr ...int32) *cluster.Image {
		im, err := cluster.ImageOf(
			cluster.Record{Kind: cluster.KindTopic, Topic: &cluster.TopicRecord{Name: "t", ID: id}},
			cluster.Record{Kind: cluster.KindPartition, Partition: &cluster.PartitionRecord{TopicID: id, Partition: 0,
				Replicas: []int32{1, 2, 3}, ISR: isr, Leader: leader, LeaderEpoch: epoch, PartitionEpoch: pe}})
		if err != nil {
			t.Fatal(err)
		}
		return im
	}
	first := image(0, 1, 0, 1, 2, 3)
	m.ApplyImage(nil, first)
	p := m.Partition(engine.TopicPartition{Topic: "t"})
	for range 2 {
		_, wait, err := p.AppendAsLeader(oneRecord(t), 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := wait(); err != nil {
			t.Fatal(err)
		}
	}
	// Replica 3 fetched both records, replica 2 only the first: the high
	// watermark is 1.
	if code := p.followerFetch(3, 2, 0, nil); code != 0 {
		t.Fatalf("fetch from 3: error %d", code)
	}
	if code := p.followerFetch(2, 1, 0, nil); code != 0 {
		t.Fatalf("fetch from 2: error %d", code)
	}
	if hw := p.HighWatermark(); hw != 1 {
		t.Fatalf("high watermark %d, want 1", hw)
	}
	// The controller moved leadership to 3 (epoch 1) with ISR [3]: not
	// this replica's ISR, and nothing commits offset 1 here.
	m.ApplyImage(first, image(1, 3, 1, 3))
	if lead, epoch := p.Leader(); lead || epoch != 1 {
		t.Fatalf("after the image: leads=%v epoch %d, want a follower at epoch 1", lead, epoch)
	}
	if hw := p.HighWatermark(); hw != 1 {
		t.Fatalf("the deposed leader's high watermark moved to %d by the new leader's ISR, want 1", hw)
	}
}

// A partition whose log was still loading when the image came (its load
// ran out of file descriptors) is served once the engine says it loaded:
// the last image applied is applied to it, and to nothing else.
func TestLogsLoadedServesDeferredPartition(t *testing.T) {
	mem := vfs.NewMem()
	cfg := engine.ManagerConfig{ClusterID: "c", NodeID: 1, Defaults: engine.DefaultOptions()}
	logs, err := engine.OpenManager(mem, "/data", cfg)
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 2; p++ {
		l, err := logs.GetOrCreateLog(engine.TopicPartition{Topic: "t", Partition: p})
		if err != nil {
			t.Fatal(err)
		}
		// A record, so that the stop writes a producer snapshot, which
		// the load opens (an empty log has none).
		if _, err := l.Append(oneRecord(t), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := logs.Close(); err != nil {
		t.Fatal(err)
	}
	// t-1's first load, and the second try the load makes at once after
	// closing idle files, run out of descriptors; the background retry
	// succeeds.
	ffs := vfs.NewFaultFS(mem)
	ffs.Inject(vfs.Fault{Op: vfs.OpOpen | vfs.OpCreate, Err: syscall.EMFILE, Count: 2,
		Path: func(name string) bool { return strings.HasPrefix(name, "/data/t-1/") }})
	loaded := make(chan []engine.TopicPartition, 4)
	cfg.OnLogsLoaded = func(tps []engine.TopicPartition) { loaded <- tps }
	logs, err = engine.OpenManager(ffs, "/data", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	m := NewManager(1, logs, func(*cluster.Image, string, map[string]string) engine.Options { return engine.DefaultOptions() }, nil)
	id := cluster.NewUUID()
	recs := []cluster.Record{{Kind: cluster.KindTopic, Topic: &cluster.TopicRecord{Name: "t", ID: id}}}
	for p := int32(0); p < 2; p++ {
		recs = append(recs, cluster.Record{Kind: cluster.KindPartition, Partition: &cluster.PartitionRecord{TopicID: id, Partition: p,
			Replicas: []int32{1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 3}})
	}
	im, err := cluster.ImageOf(recs...)
	if err != nil {
		t.Fatal(err)
	}
	m.ApplyImage(nil, im)
	tp1 := engine.TopicPartition{Topic: "t", Partition: 1}
	// The loads run in parallel: after t-1 ran out of descriptors, a load
	// not yet tried (t-0) may have been deferred with it, and the retry
	// then reports both, in one pass or in two. t-1 must come; t-0 may.
	var tps []engine.TopicPartition
	deadline := time.After(10 * time.Second)
	for !slices.Contains(tps, tp1) {
		select {
		case got := <-loaded:
			tps = append(tps, got...)
		case <-deadline:
			t.Fatalf("t-1 not loaded within 10 s; loaded %v, pending %v", tps, logs.Pending())
		}
	}
	for _, tp := range tps {
		if tp.Topic != "t" || tp.Partition < 0 || tp.Partition > 1 {
			t.Fatalf("loaded %v, want t-1 and at most t-0 beside it", tps)
		}
	}
	if len(tps) > 2 {
		t.Fatalf("loaded %v: a partition reported twice", tps)
	}
	m.LogsLoaded(tps)
	for p := int32(0); p < 2; p++ {
		part := m.Partition(engine.TopicPartition{Topic: "t", Partition: p})
		if part == nil {
			t.Fatalf("t-%d not served after its log loaded", p)
		}
		if lead, epoch := part.Leader(); !lead || epoch != 3 {
			t.Fatalf("t-%d: leads=%v at epoch %d, want the leader at epoch 3", p, lead, epoch)
		}
	}
}

// An image that brings many new replicas has their logs created in the
// background, not one by one on the caller's (the metadata quorum's)
// goroutine: ApplyImage hosts none of them itself, and each is hosted,
// leading at its epoch, once the engine reports it created. A small image
// still hosts its replicas before ApplyImage returns.
func TestManyNewReplicasCreatedInBackground(t *testing.T) {
	mem := vfs.NewMem()
	var m *Manager
	loaded := make(chan []engine.TopicPartition, 64)
	cfg := engine.ManagerConfig{ClusterID: "c", NodeID: 1, Defaults: engine.DefaultOptions(),
		OnLogsLoaded: func(tps []engine.TopicPartition) { m.LogsLoaded(tps); loaded <- tps }}
	logs, err := engine.OpenManager(mem, "/data", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	m = NewManager(1, logs, func(*cluster.Image, string, map[string]string) engine.Options { return engine.DefaultOptions() }, nil)
	topic := func(name string, n int32) []cluster.Record {
		id := cluster.NewUUID()
		recs := []cluster.Record{{Kind: cluster.KindTopic, Topic: &cluster.TopicRecord{Name: name, ID: id}}}
		for p := int32(0); p < n; p++ {
			recs = append(recs, cluster.Record{Kind: cluster.KindPartition, Partition: &cluster.PartitionRecord{TopicID: id, Partition: p,
				Replicas: []int32{1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 2}})
		}
		return recs
	}
	small, err := cluster.ImageOf(topic("small", createLaterMin-1)...)
	if err != nil {
		t.Fatal(err)
	}
	m.ApplyImage(nil, small)
	for p := int32(0); p < createLaterMin-1; p++ {
		if m.Partition(engine.TopicPartition{Topic: "small", Partition: p}) == nil {
			t.Fatalf("small-%d not hosted when ApplyImage returned", p)
		}
	}
	const n = 600 // more than one chunk of the engine's background loads
	big, err := cluster.ImageOf(append(topic("small", createLaterMin-1), topic("big", n)...)...)
	if err != nil {
		t.Fatal(err)
	}
	m.ApplyImage(small, big)
	got := map[engine.TopicPartition]bool{}
	deadline := time.After(20 * time.Second)
	for len(got) < n {
		select {
		case tps := <-loaded:
			for _, tp := range tps {
				got[tp] = true
			}
		case <-deadline:
			t.Fatalf("%d of %d background logs reported within 20 s", len(got), n)
		}
	}
	for p := int32(0); p < n; p++ {
		part := m.Partition(engine.TopicPartition{Topic: "big", Partition: p})
		if part == nil {
			t.Fatalf("big-%d not hosted after its log was created", p)
		}
		if lead, epoch := part.Leader(); !lead || epoch != 2 {
			t.Fatalf("big-%d: leads=%v at epoch %d, want the leader at epoch 2", p, lead, epoch)
		}
	}
}
