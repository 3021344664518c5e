package broker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/engine"
)

// freePorts reserves n loopback ports by binding and releasing them, to
// fill controller.quorum.voters before the nodes start.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	lo, hi := reservablePortRange()
	seen := map[int]bool{}
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			t.Fatalf("no free loopback port in [%d, %d) after %d tries", lo, hi, tries)
		}
		p := lo + rand.IntN(hi-lo)
		if seen[p] {
			continue
		}
		seen[p] = true
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		ln.Close()
		ports = append(ports, p)
	}
	return ports
}

// reservablePortRange is where freePorts draws from: below the kernel's
// ephemeral range, because a port that is free now must still be free
// when the broker binds it moments later, and every outgoing connection
// on a busy machine takes an ephemeral port (a port the kernel handed to
// "127.0.0.1:0" was one of those and was taken in between more than once).
func reservablePortRange() (int, int) {
	hi := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var first, last int
		if _, err := fmt.Sscan(string(b), &first, &last); err == nil && first > 12000 {
			hi = first
		}
	}
	return 10000, hi
}

// quorumConfigText is one node's file of a three-node loopback cluster,
// with timeouts short enough for tests and long enough for a loaded
// machine: the lease and the fetch timeout are the shipped defaults,
// because CI runs several test binaries on two cores and a controller
// whose goroutines stall past a 300 ms lease steps down in the middle of
// a test (NOT_CONTROLLER from a direct call, a needless election); the
// session timeout likewise keeps a live broker from being fenced by a
// stall. Failover tests pay about two seconds for it.
func quorumConfigText(id int, dir string, ctrlPorts []int) string {
	voters := ""
	for i, p := range ctrlPorts {
		if i > 0 {
			voters += ", "
		}
		voters += strconv.Quote(fmt.Sprintf("%d@127.0.0.1:%d", i+1, p))
	}
	return fmt.Sprintf(`
[broker]
node.id = %d
log.dirs = [%q]
listeners = ["PLAINTEXT://127.0.0.1:0", "CONTROLLER://127.0.0.1:%d"]
[http]
listen = "127.0.0.1:0"
[cluster]
controller.quorum.voters = [%s]
controller.heartbeat.interval.ms = 100
controller.lease.ms = 1500
controller.quorum.fetch.timeout.ms = 2000
controller.quorum.election.backoff.max.ms = 200
broker.heartbeat.interval.ms = 100
broker.session.timeout.ms = 3000
[groups]
group.initial.rebalance.delay.ms = 0
`, id, dir, ctrlPorts[id-1], voters)
}

func pollFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Three brokers in one process over loopback sockets: they elect one
// controller, every node's Metadata lists the three brokers at their real
// addresses with the same controller, a topic created through any
// bootstrap node lands everywhere, and acks=all against
// min.insync.replicas=2 is acknowledged once the followers hold the
// record, as is acks=1.
func TestThreeBrokersInProcess(t *testing.T) {
	ports := freePorts(t, 3)
	var brokers []*Broker
	for id := 1; id <= 3; id++ {
		cfg, err := config.Parse(fmt.Sprintf("node%d.toml", id), []byte(quorumConfigText(id, filepath.Join(t.TempDir(), "data"), ports)))
		if err != nil {
			t.Fatal(err)
		}
		b, err := Start(cfg, Options{Logger: testLogger(t)})
		if err != nil {
			t.Fatalf("start node %d: %v", id, err)
		}
		brokers = append(brokers, b)
	}
	defer func() {
		for _, b := range brokers {
			b.Close()
		}
	}()
	pollFor(t, "one controller known to all, three brokers registered", 20*time.Second, func() bool {
		ctrl := brokers[0].Controller().ControllerID()
		for _, b := range brokers {
			if ctrl < 0 || b.Controller().ControllerID() != ctrl || len(b.Controller().Brokers()) != 3 {
				return false
			}
		}
		return true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, b := range brokers {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()))
		if err != nil {
			t.Fatal(err)
		}
		adm := kadm.NewClient(cl)
		md, err := adm.Metadata(ctx)
		if err != nil {
			t.Fatalf("metadata from node %d: %v", i+1, err)
		}
		if len(md.Brokers) != 3 {
			t.Fatalf("node %d lists brokers %v", i+1, md.Brokers)
		}
		for _, mb := range md.Brokers {
			if want := brokers[mb.NodeID-1].Addr().(*net.TCPAddr); mb.Port != int32(want.Port) {
				t.Fatalf("node %d lists broker %d at %s:%d, it listens on %s", i+1, mb.NodeID, mb.Host, mb.Port, want)
			}
		}
		if i == 2 {
			// Through a bootstrap node: kadm sends CreateTopics to the
			// controller Metadata names.
			if _, err := adm.CreateTopic(ctx, 3, 3, nil, "events"); err != nil {
				t.Fatalf("create topic through node 3: %v", err)
			}
		}
		cl.Close()
	}
	pollFor(t, "topic events on every node", 10*time.Second, func() bool {
		for _, b := range brokers {
			if b.Controller().Image().Topic("events") == nil {
				return false
			}
		}
		return true
	})
	// Produce to the partition whose leader is node 1's, through node 1.
	im := brokers[0].Controller().Image()
	var part int32 = -1
	for _, p := range im.Topic("events").Partitions {
		if p.Leader == 1 {
			part = p.Partition
		}
	}
	if part < 0 {
		t.Fatalf("no partition of events led by node 1: %+v", im.Topic("events").Partitions)
	}
	for _, tc := range []struct {
		acks kgo.Acks
		want error
	}{{kgo.AllISRAcks(), nil}, {kgo.LeaderAck(), nil}} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers[0].Addr().String()), kgo.RequiredAcks(tc.acks),
			kgo.DisableIdempotentWrite(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(0),
			kgo.RetryTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		err = cl.ProduceSync(ctx, &kgo.Record{Topic: "events", Partition: part, Value: []byte("v")}).FirstErr()
		cl.Close()
		if !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
			t.Fatalf("produce with acks %v: %v, want %v", tc.acks, err, tc.want)
		}
	}
	// Both records are on every replica, and every replica knows they
	// are committed.
	tp := engine.TopicPartition{Topic: "events", Partition: part}
	pollFor(t, "both records on all three replicas, below their high watermarks", 10*time.Second, func() bool {
		for _, b := range brokers {
			p := b.Replicas().Partition(tp)
			if p == nil || p.Log().LogEndOffset() != 2 || p.HighWatermark() != 2 {
				return false
			}
		}
		return true
	})
}

// startThreeNodes starts a three-node cluster on free loopback ports:
// node id's config is quorumConfigText's, passed through edit when set,
// and started with options(id) when set. It waits until every node knows
// one controller and sees three brokers; the nodes close when the test
// ends.
func startThreeNodes(t *testing.T, edit func(id int, text string) string, options func(id int) Options) []*Broker {
	t.Helper()
	ports := freePorts(t, 3)
	// The data dirs first: cleanups run last registered first, so the
	// nodes close before their directories are removed.
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	brokers := make([]*Broker, 3)
	t.Cleanup(func() {
		for _, b := range brokers {
			if b != nil {
				b.Close()
			}
		}
	})
	for i := range brokers {
		id := i + 1
		text := quorumConfigText(id, filepath.Join(dirs[i], "data"), ports)
		if edit != nil {
			text = edit(id, text)
		}
		cfg, err := config.Parse(fmt.Sprintf("node%d.toml", id), []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		o := Options{Logger: testLogger(t)}
		if options != nil {
			o = options(id)
		}
		if brokers[i], err = Start(cfg, o); err != nil {
			t.Fatalf("start node %d: %v", id, err)
		}
	}
	waitOneController(t, brokers)
	return brokers
}

// waitOneController waits until every node knows one controller and sees
// every node registered.
func waitOneController(t *testing.T, brokers []*Broker) {
	t.Helper()
	pollFor(t, "one controller known to all, every broker registered", 20*time.Second, func() bool {
		ctrl := brokers[0].Controller().ControllerID()
		for _, b := range brokers {
			if ctrl < 0 || b.Controller().ControllerID() != ctrl || len(b.Controller().Brokers()) != len(brokers) {
				return false
			}
		}
		return true
	})
}
