package broker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createAssigned creates topic with one partition per replica list, on
// exactly those brokers, retrying while the controller is not ready or not
// every broker is registered yet.
func createAssigned(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, replicas [][]int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, r := range replicas {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), r
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
		}
		if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("create topic %s on %v: %v", topic, replicas, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// newProducerFirstAck starts a new idempotent acks=all producer on seeds
// and produces one record to topic partition p: it returns when the
// record is acknowledged, with the producer id it was written with.
func newProducerFirstAck(ctx context.Context, seeds []string, topic string, p int32) (time.Time, int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(time.Minute))
	if err != nil {
		return time.Time{}, 0, err
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("first")}).FirstErr(); err != nil {
		return time.Time{}, 0, err
	}
	at := time.Now()
	id, _, err := cl.ProducerID(ctx)
	return at, id, err
}

// initProducerIDFrom asks node addr itself for a producer id until it
// answers one, retrying what a client retries; it returns when.
func initProducerIDFrom(ctx context.Context, addr string) (time.Time, int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0))
	if err != nil {
		return time.Time{}, 0, err
	}
	defer cl.Close()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.ProducerID, req.ProducerEpoch = -1, -1
	for {
		resp, err := cl.SeedBrokers()[0].Request(ctx, req)
		if err == nil {
			r := resp.(*kmsg.InitProducerIDResponse)
			if err = kerr.ErrorForCode(r.ErrorCode); err == nil {
				return time.Now(), r.ProducerID, nil
			}
			if !kerr.IsRetriable(err) {
				return time.Time{}, 0, err
			}
		}
		if ctx.Err() != nil {
			return time.Time{}, 0, fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFirstBlock waits until node n's log says that its start number
// starts (counting from 1) holds its first block of producer ids.
func waitFirstBlock(t *testing.T, n *clusterNode, starts int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		b, _ := os.ReadFile(n.logf)
		if strings.Count(string(b), `msg="producer ids: first block reserved"`) >= starts {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d (start %d) holds no block of producer ids after %v", n.id, starts, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stableISRs reports whether every partition of topic has a leader and
// all three replicas in its ISR.
func stableISRs(md *kmsg.MetadataResponse, topic string) bool {
	tp := topicOf(md, topic)
	if tp == nil || len(tp.Partitions) == 0 {
		return false
	}
	for _, p := range tp.Partitions {
		if p.Leader < 0 || len(p.ISR) != 3 {
			return false
		}
	}
	return true
}

// restartQuiet is how long a restarted node stays out of elections (an
// election timeout plus twice the backoff, 3 s by default; see
// TestControllerLeaderFailover): a trial begins only after it.
const restartQuiet = 5 * time.Second

// TestNewProducerAfterControllerKill: SIGKILL the controller, then at once
// start NEW idempotent acks=all producers and time the first
// acknowledgement, kill to ack. Each surviving broker answers
// InitProducerId from the block of producer ids it holds, without the
// controller: a new producer is held up only by its partition, never by
// its producer id. Per trial it measures:
//   - InitProducerId straight to each survivor (the block it holds);
//   - a new producer to a partition whose replicas are the two
//     survivors only: nothing but the producer id could hold it up;
//   - a new producer to a partition of a replication-factor-3 topic led
//     by a survivor, with the killed node in its ISR until the new
//     controller fences it (broker.session.timeout.ms, 3 s here).
//
// WREN_FAILOVER_TRIALS repeats the kill (of whichever node is the
// controller) and the restart; p50 and max are logged.
func TestNewProducerAfterControllerKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three wren processes")
	}
	trials := 1
	if s := os.Getenv("WREN_FAILOVER_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("WREN_FAILOVER_TRIALS=%q: want a positive number", s)
		}
		trials = n
	}
	pc := startProcessCluster(t)
	var seeds []string
	for _, n := range pc.nodes {
		seeds = append(seeds, n.addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(trials)*2*time.Minute+2*time.Minute)
	defer cancel()
	pc.waitFor("a controller and three brokers", pc.nodes[0], 60*time.Second, func(md *kmsg.MetadataResponse) bool {
		return md.ControllerID >= 0 && len(md.Brokers) == 3
	})
	admin, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	createTopicRetrying(ctx, t, admin, "pids", 6, 3)

	var initID, pairAck, rf3Ack []time.Duration
	starts := map[int]int{1: 1, 2: 1, 3: 1}
	ids := map[int64]string{}
	restarted := time.Time{}
	for trial := 1; trial <= trials; trial++ {
		// A steady cluster: one controller seen by all, every ISR full,
		// and a restarted node past its quiet time.
		var md *kmsg.MetadataResponse
		for _, n := range pc.nodes {
			md = pc.waitFor("a steady cluster", n, 90*time.Second, func(md *kmsg.MetadataResponse) bool {
				return md.ControllerID >= 0 && len(md.Brokers) == 3 && stableISRs(md, "pids") && time.Since(restarted) > restartQuiet
			})
		}
		ctrl := md.ControllerID
		old := pc.nodes[ctrl-1]
		var survivors []*clusterNode
		for _, n := range pc.nodes {
			if n != old {
				survivors = append(survivors, n)
			}
		}
		pair := fmt.Sprintf("pair-%d", trial)
		createAssigned(ctx, t, admin, pair, [][]int32{{int32(survivors[0].id), int32(survivors[1].id)}}, nil)
		for _, n := range survivors {
			md = pc.waitFor("topic "+pair+" led", n, 30*time.Second, func(md *kmsg.MetadataResponse) bool {
				tp := topicOf(md, pair)
				return tp != nil && len(tp.Partitions) == 1 && tp.Partitions[0].Leader >= 0 && len(tp.Partitions[0].ISR) == 2 &&
					stableISRs(md, "pids")
			})
		}
		// Its follower replicates before the kill: an acks=all write
		// (not idempotent: it takes no producer id) is acknowledged. A
		// follower that had not yet applied the new topic would learn of
		// it only from the next controller, and the figure would measure
		// that.
		warm, err := kgo.NewClient(kgo.SeedBrokers(survivors[0].addr), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(),
			kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		err = warm.ProduceSync(ctx, &kgo.Record{Topic: pair, Partition: 0, Value: []byte("warm")}).FirstErr()
		warm.Close()
		if err != nil {
			t.Fatalf("trial %d: acks=all write to %s before the kill: %v", trial, pair, err)
		}
		rf3 := int32(-1)
		for _, p := range topicOf(md, "pids").Partitions {
			if p.Leader != ctrl {
				rf3 = p.Partition
				break
			}
		}
		if rf3 < 0 {
			t.Fatalf("trial %d: every partition of pids led by controller %d: %s", trial, ctrl, describeMetadata(md))
		}

		for _, n := range survivors {
			waitFirstBlock(t, n, starts[n.id], 30*time.Second)
		}
		old.kill()
		killed := time.Now()
		type result struct {
			what string
			at   time.Time
			id   int64
			err  error
		}
		results := make(chan result, 4)
		for _, n := range survivors {
			go func() {
				at, id, err := initProducerIDFrom(ctx, n.addr)
				results <- result{fmt.Sprintf("InitProducerId from node %d", n.id), at, id, err}
			}()
		}
		go func() {
			at, id, err := newProducerFirstAck(ctx, seeds, pair, 0)
			results <- result{"new producer to " + pair + "/0 (survivors only)", at, id, err}
		}()
		go func() {
			at, id, err := newProducerFirstAck(ctx, seeds, "pids", rf3)
			results <- result{fmt.Sprintf("new producer to pids/%d (RF 3)", rf3), at, id, err}
		}()
		var initTook time.Duration
		var line string
		for range 4 {
			r := <-results
			if r.err != nil {
				t.Fatalf("trial %d, SIGKILL of controller %d: %s: %v", trial, old.id, r.what, r.err)
			}
			if by, ok := ids[r.id]; ok {
				t.Fatalf("trial %d: producer id %d handed out twice: %s and %s", trial, r.id, by, r.what)
			}
			ids[r.id] = fmt.Sprintf("trial %d %s", trial, r.what)
			took := r.at.Sub(killed)
			switch {
			case r.what[0] == 'I':
				initTook = max(initTook, took)
			case r.what == "new producer to "+pair+"/0 (survivors only)":
				pairAck = append(pairAck, took)
			default:
				rf3Ack = append(rf3Ack, took)
			}
			line += fmt.Sprintf("; %s in %v (id %d)", r.what, took.Round(time.Millisecond), r.id)
		}
		initID = append(initID, initTook)
		t.Logf("trial %d: SIGKILL of controller %d%s", trial, old.id, line)
		old.start(t, pc.bin)
		starts[old.id]++
		restarted = time.Now()
	}
	t.Logf("SIGKILL of the controller over %d trials, kill to: InitProducerId answered by both survivors %s; "+
		"first ack of a new idempotent acks=all producer, partition on the survivors %s, RF 3 partition led by a survivor %s",
		trials, durationStats(initID), durationStats(pairAck), durationStats(rf3Ack))
	// The figures the fix is for: no producer id waits on the controller.
	// Before it, a broker that had not served a producer yet forwarded
	// InitProducerId to the dead controller and answered REQUEST_TIMED_OUT
	// 10 s later.
	slices.Sort(pairAck)
	if worst := pairAck[len(pairAck)-1]; worst > 5*time.Second {
		t.Errorf("a new producer to a partition on the survivors waited %v for its first ack after the controller's SIGKILL; want under 5 s", worst)
	}
	slices.Sort(initID)
	if worst := initID[len(initID)-1]; worst > 2*time.Second {
		t.Errorf("InitProducerId took %v after the controller's SIGKILL; the survivors hold blocks of ids and should answer at once", worst)
	}
}

// TestNewProducerWithoutQuorum: with two of three nodes stopped there is
// no controller and no metadata change can commit, but the live node
// still leads its partition (replication factor 1, min.insync.replicas 1)
// and holds a block of producer ids: new idempotent acks=all producers
// get their ids from it and their writes are acknowledged.
func TestNewProducerWithoutQuorum(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three wren processes")
	}
	pc := startProcessCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	md := pc.waitFor("a controller and three brokers", pc.nodes[0], 60*time.Second, func(md *kmsg.MetadataResponse) bool {
		return md.ControllerID >= 0 && len(md.Brokers) == 3
	})
	// The live node is one that is not the controller: its block came
	// through the CONTROLLER listener.
	live := pc.nodes[0]
	if md.ControllerID == int32(live.id) {
		live = pc.nodes[1]
	}
	admin, err := kgo.NewClient(kgo.SeedBrokers(live.addr))
	if err != nil {
		t.Fatal(err)
	}
	createAssigned(ctx, t, admin, "solo", [][]int32{{int32(live.id)}}, map[string]string{"min.insync.replicas": "1"})
	admin.Close()
	pc.waitFor("topic solo led by node "+strconv.Itoa(live.id), live, 30*time.Second, func(md *kmsg.MetadataResponse) bool {
		tp := topicOf(md, "solo")
		return tp != nil && len(tp.Partitions) == 1 && tp.Partitions[0].Leader == int32(live.id)
	})
	// It holds its block before the quorum goes: a broker that never got
	// one has no ids to give without a controller.
	waitFirstBlock(t, live, 1, 30*time.Second)
	for _, n := range pc.nodes {
		if n != live {
			n.kill()
		}
	}
	stopped := time.Now()
	// The quorum is lost: the live node knows no controller.
	pc.waitFor("no controller on the live node", live, 60*time.Second, func(md *kmsg.MetadataResponse) bool {
		return md.ControllerID < 0
	})
	t.Logf("node %d knows no controller %v after the other two stopped", live.id, time.Since(stopped).Round(time.Millisecond))
	seen := map[int64]bool{}
	for i := 1; i <= 3; i++ {
		start := time.Now()
		pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		_, id, err := newProducerFirstAck(pctx, []string{live.addr}, "solo", 0)
		cancel()
		if err != nil {
			t.Fatalf("new producer %d without a quorum: %v", i, err)
		}
		if seen[id] {
			t.Fatalf("producer id %d handed out twice", id)
		}
		seen[id] = true
		t.Logf("new idempotent producer %d without a quorum: id %d, first ack in %v", i, id, time.Since(start).Round(time.Millisecond))
	}
	// Still no controller: the writes did not need one.
	md, err = pc.metadata(ctx, live)
	if err != nil {
		t.Fatal(err)
	}
	if md.ControllerID >= 0 {
		t.Fatalf("after the writes: controller %d, want none", md.ControllerID)
	}
}
