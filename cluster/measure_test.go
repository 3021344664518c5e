package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wren-broker/wren/cluster/metalog"
	"github.com/wren-broker/wren/cluster/quorum"
	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/internal/vfs"
	"github.com/wren-broker/wren/peer"
)

// The measurements of the controller's driver, rerun with
//
//	WREN_MEASURE=1 go test -count=1 -run 'TestMeasure' -v ./cluster/
//
// They start three controllers over real loopback TCP in this process,
// each on its own in-memory file system that can delay every fdatasync,
// and print their figures. Each node's subscriber stands in for the
// broker's partition creation: one file written and fdatasynced per new
// partition, on that node's file system.

func measureGate(t *testing.T) {
	if os.Getenv("WREN_MEASURE") == "" {
		t.Skip("a measurement: set WREN_MEASURE=1 to run it")
	}
}

// slowFS delays every fdatasync, fsync and directory sync by delay.
type slowFS struct {
	vfs.FS
	delay atomic.Int64 // nanoseconds
}

func (s *slowFS) wait() {
	if d := time.Duration(s.delay.Load()); d > 0 {
		time.Sleep(d) // the fault: a slow disk
	}
}

func (s *slowFS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &slowFile{File: f, fs: s}, nil
}

func (s *slowFS) Create(name string) (vfs.File, error) { return s.wrap(s.FS.Create(name)) }
func (s *slowFS) Open(name string) (vfs.File, error)   { return s.wrap(s.FS.Open(name)) }
func (s *slowFS) OpenReadWrite(name string) (vfs.File, error) {
	return s.wrap(s.FS.OpenReadWrite(name))
}
func (s *slowFS) SyncDir(dir string) error { s.wait(); return s.FS.SyncDir(dir) }

type slowFile struct {
	vfs.File
	fs *slowFS
}

func (f *slowFile) SyncData() error { f.fs.wait(); return f.File.SyncData() }
func (f *slowFile) Sync() error     { f.fs.wait(); return f.File.Sync() }

type measureNode struct {
	id    int32
	fs    *slowFS
	c     *Controller
	tr    *quorum.TCPTransport
	files atomic.Int64
}

// startMeasureNodes starts count controllers as startQuorumNode does,
// on slow file systems (no delay yet).
func startMeasureNodes(t *testing.T, count int32) []*measureNode {
	t.Helper()
	voters, qnodes := listenQuorumNodes(t, count)
	var ids []election.NodeID
	var voterIDs []int32
	for id := range voters {
		ids = append(ids, id)
		voterIDs = append(voterIDs, int32(id))
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("WREN_MEASURE_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	var nodes []*measureNode
	for _, qn := range qnodes {
		n := &measureNode{id: qn.id, fs: &slowFS{FS: vfs.NewMem()}}
		var ctrl atomic.Pointer[Controller]
		peers, err := peer.New(peer.Config{ID: election.NodeID(n.id), Voters: voters, Listener: qn.ln, Logger: logger,
			ClusterID:  func() string { return "" },
			BackoffMin: 5 * time.Millisecond, BackoffMax: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		tr := quorum.NewTCPTransport(peers, func(from election.NodeID, b []byte) {
			if c := ctrl.Load(); c != nil {
				c.HandleApp(from, b)
			}
		})
		if err := peers.Start(); err != nil {
			t.Fatal(err)
		}
		n.tr = tr
		c, err := OpenController(n.fs, "/data/__cluster_metadata", ControllerConfig{
			NodeID: n.id, Voters: voterIDs, DefaultPartitions: 1, DefaultReplicationFactor: 1,
			Quorum: &QuorumConfig{Dir: "/data/__cluster_quorum", Transport: tr, SendApp: tr.SendApp,
				// The broker's defaults: a 50 ms tick, 500 ms heartbeats, a
				// 1.5 s lease and a 2 s election timeout.
				Node: metalog.Config{Election: election.Config{ID: election.NodeID(n.id), Voters: ids, HeartbeatTicks: 10, LeaseTicks: 30,
					ElectionTicks: 40, ElectionJitterTicks: 20, ProbeTicks: 3, RetryTicks: 10, Seed: uint64(n.id)},
					FetchWaitTicks: 10, FetchTimeoutTicks: 40, MaxFetchEntries: 256, MaxUncommittedEntries: 1024},
				Tick: 50 * time.Millisecond, BrokerHeartbeatInterval: 500 * time.Millisecond, BrokerSessionTimeout: 9 * time.Second,
				Logger: logger},
		})
		if err != nil {
			t.Fatal(err)
		}
		n.c = c
		ctrl.Store(c)
		// The broker's partition creation, in little: a file per new
		// partition, fdatasynced.
		if err := c.Subscribe(func(old, new *Image) {
			for _, name := range new.TopicNames() {
				if old != nil && old.Topic(name) != nil {
					continue
				}
				for p := range new.Topic(name).Partitions {
					f, err := n.fs.Create(fmt.Sprintf("/data/%s-%d", name, p))
					if err != nil {
						continue
					}
					f.WriteAt([]byte("x"), 0)
					f.SyncData()
					f.Close()
					n.files.Add(1)
				}
			}
		}); err != nil {
			t.Fatal(err)
		}
		if err := c.SetRegistration(context.Background(), "", []BrokerListener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9000 + n.id}}); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.c.Close()
		}
	})
	return nodes
}

func measureActing(nodes []*measureNode, except *measureNode) *measureNode {
	for _, n := range nodes {
		if n != except && n.c.Acting() {
			return n
		}
	}
	return nil
}

func waitMeasureCluster(t *testing.T, nodes []*measureNode) *measureNode {
	t.Helper()
	pollUntil(t, "a controller and every broker registered and unfenced", 30*time.Second, func() bool {
		a := measureActing(nodes, nil)
		if a == nil {
			return false
		}
		for _, n := range nodes {
			b, ok := a.c.Image().Broker(n.id)
			if !ok || b.Fenced {
				return false
			}
		}
		return true
	})
	return measureActing(nodes, nil)
}

// One CreateTopics of 100 topics (one partition each, three replicas) on
// the acting controller of three: how many metadata-log entries it
// commits and how long it takes.
func TestMeasureCreateTopicsBatch(t *testing.T) {
	measureGate(t)
	nodes := startMeasureNodes(t, 3)
	ctrl := waitMeasureCluster(t, nodes)
	var topics []CreateTopic
	for i := range 100 {
		topics = append(topics, CreateTopic{Name: fmt.Sprintf("batch-%03d", i), NumPartitions: 1, ReplicationFactor: 3})
	}
	before := ctrl.c.Image().Offset
	start := time.Now()
	res, err := ctrl.c.CreateTopics(context.Background(), topics, false)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("topic %s: %v", r.Name, r.Err)
		}
	}
	after := ctrl.c.Image().Offset
	t.Logf("MEASURE create_topics_100: metadata_entries=%d took=%v", after-before, took.Round(time.Microsecond))
}

// The acting controller's disk delays every fdatasync by
// WREN_MEASURE_FSYNC_MS (100 by default; WREN_MEASURE_SLOW=all delays every
// node's) while it creates topics of WREN_MEASURE_PARTITIONS partitions
// (4 by default); then it stops abruptly (its
// connections drop at once, as for SIGKILL): how long until another node
// is the acting controller with a current image.
func TestMeasureFailoverSlowDisk(t *testing.T) {
	measureGate(t)
	delay := 100 * time.Millisecond
	if ms, err := strconv.Atoi(os.Getenv("WREN_MEASURE_FSYNC_MS")); err == nil {
		delay = time.Duration(ms) * time.Millisecond
	}
	parts := int32(4)
	if n, err := strconv.Atoi(os.Getenv("WREN_MEASURE_PARTITIONS")); err == nil && n > 0 {
		parts = int32(n)
	}
	nodes := startMeasureNodes(t, 3)
	ctrl := waitMeasureCluster(t, nodes)
	for _, n := range nodes {
		if n == ctrl || os.Getenv("WREN_MEASURE_SLOW") == "all" {
			n.fs.delay.Store(int64(delay))
		}
	}
	epochAtLoad := ctrl.c.ControllerEpoch()
	// Load: topics created one request at a time, so every node creates
	// partitions on its disk while the controller goes.
	stop := make(chan struct{})
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			ctrl.c.CreateTopics(ctx, []CreateTopic{{Name: fmt.Sprintf("load-%d", i), NumPartitions: parts, ReplicationFactor: 3}}, false)
			cancel()
		}
	}()
	pollUntil(t, "load under way", 60*time.Second, func() bool { return ctrl.files.Load() >= int64(5*parts) })
	// A controller whose driver waits on its disk loses its lease, and
	// the others elect another before any kill: count the epochs.
	epochAtKill, actingAtKill := int32(0), measureActing(nodes, nil)
	for _, n := range nodes {
		epochAtKill = max(epochAtKill, n.c.ControllerEpoch())
	}
	killed := time.Now()
	ctrl.tr.Close()
	close(stop)
	var next *measureNode
	pollUntil(t, "a new acting controller", 60*time.Second, func() bool {
		next = measureActing(nodes, ctrl)
		if next == nil {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		ok, _ := next.c.q.driver.ActingAndCurrent(ctx)
		return ok
	})
	took := time.Since(killed)
	go ctrl.c.Close()
	<-loadDone
	stillActing := actingAtKill == ctrl
	t.Logf("MEASURE failover_slow_disk: fsync_delay=%v slow=%q partitions_per_topic=%d epochs_during_load=%d killed_node_acting_at_kill=%v new_controller=%d after=%v",
		delay, os.Getenv("WREN_MEASURE_SLOW"), parts, epochAtKill-epochAtLoad, stillActing, next.id, took.Round(time.Millisecond))
}
