package broker

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/config"
)

// Preferred leaders, leader rebalancing and reassignment on three
// in-process brokers, through franz-go's kadm as an operator's tool would.

// startThreeBrokersWith is startThreeBrokers with extra TOML appended to
// every node's file.
func startThreeBrokersWith(t *testing.T, extra string) []*Broker {
	t.Helper()
	ports := freePorts(t, 3)
	var brokers []*Broker
	t.Cleanup(func() {
		for _, b := range brokers {
			b.Close()
		}
	})
	for id := 1; id <= 3; id++ {
		text := quorumConfigText(id, filepath.Join(t.TempDir(), "data"), ports) + extra
		cfg, err := config.Parse(fmt.Sprintf("node%d.toml", id), []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		b, err := Start(cfg, Options{Logger: testLogger(t)})
		if err != nil {
			t.Fatalf("start node %d: %v", id, err)
		}
		brokers = append(brokers, b)
	}
	pollFor(t, "one controller known to all, three brokers registered", 20*time.Second, func() bool {
		ctrl := brokers[0].Controller().ControllerID()
		for _, b := range brokers {
			if ctrl < 0 || b.Controller().ControllerID() != ctrl || len(b.Controller().Brokers()) != 3 {
				return false
			}
		}
		return true
	})
	return brokers
}

// actingController is the broker whose controller acts.
func actingController(t *testing.T, brokers []*Broker) *Broker {
	t.Helper()
	var acting *Broker
	pollFor(t, "an acting controller", 10*time.Second, func() bool {
		for _, b := range brokers {
			if b.Controller().Acting() {
				acting = b
				return true
			}
		}
		return false
	})
	return acting
}

func threeNodeAdmin(t *testing.T, brokers []*Broker) (*kgo.Client, *kadm.Client) {
	t.Helper()
	var seeds []string
	for _, b := range brokers {
		seeds = append(seeds, b.Addr().String())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequestTimeoutOverhead(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, kadm.NewClient(cl)
}

// createReplicatedTopic creates an RF 3 topic and waits for full ISRs.
func createReplicatedTopic(t *testing.T, brokers []*Broker, adm *kadm.Client, name string, partitions int32) {
	t.Helper()
	resp, err := adm.CreateTopic(testContext(t), partitions, 3, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	pollFor(t, name+" with a full ISR on every node", 15*time.Second, func() bool {
		for _, b := range brokers {
			tp := b.Controller().Image().Topic(name)
			if tp == nil {
				return false
			}
			for _, p := range tp.Partitions {
				if len(p.ISR) != 3 || p.Leader < 0 {
					return false
				}
			}
		}
		return true
	})
}

// displaceLeaders moves leadership off broker id by a controlled shutdown
// (the broker stays up, so the acting controller unfences it on its next
// heartbeat) and waits until id is back in every ISR, leading none of
// topic's partitions. It returns the partitions id prefers.
func displaceLeaders(t *testing.T, brokers []*Broker, topic string, id int32) []int32 {
	t.Helper()
	ctrl := actingController(t, brokers)
	var preferred []int32
	for _, p := range ctrl.Controller().Image().Topic(topic).Partitions {
		if p.Replicas[0] == id {
			preferred = append(preferred, p.Partition)
		}
	}
	if len(preferred) == 0 {
		t.Fatalf("broker %d is the preferred leader of no partition of %s", id, topic)
	}
	if err := ctrl.Controller().ControlledShutdown(testContext(t), id); err != nil {
		t.Fatalf("controlled shutdown of %d: %v", id, err)
	}
	pollFor(t, fmt.Sprintf("broker %d back in every ISR of %s, leading none", id, topic), 15*time.Second, func() bool {
		for _, p := range ctrl.Controller().Image().Topic(topic).Partitions {
			if p.Leader == id || p.Leader < 0 || !slices.Contains(p.ISR, id) {
				return false
			}
		}
		return true
	})
	return preferred
}

// Kafka's kafka-leader-election through kadm: a preferred election moves
// leadership back to the preferred replicas once they are in the ISR; a
// second one is ELECTION_NOT_NEEDED; an unclean election of partitions
// that have leaders is ELECTION_NOT_NEEDED; a node that is not the
// controller answers NOT_CONTROLLER.
func TestElectLeadersThreeBrokers(t *testing.T) {
	brokers := startThreeBrokersWith(t, "[replication]\nauto.leader.rebalance.enable = false\n")
	cl, adm := threeNodeAdmin(t, brokers)
	createReplicatedTopic(t, brokers, adm, "orders", 6)
	ctrl := actingController(t, brokers)
	victim := int32(1)
	if ctrl.Controller().NodeID() == victim {
		victim = 2
	}
	preferred := displaceLeaders(t, brokers, "orders", victim)

	// A non-controller answers NOT_CONTROLLER, at the top and per partition.
	var other *Broker
	for _, b := range brokers {
		if !b.Controller().Acting() {
			other = b
			break
		}
	}
	req := kmsg.NewPtrElectLeadersRequest()
	rt := kmsg.NewElectLeadersRequestTopic()
	rt.Topic, rt.Partitions = "orders", []int32{preferred[0]}
	req.Topics = append(req.Topics, rt)
	resp, err := cl.Broker(int(other.Controller().NodeID())).Request(testContext(t), req)
	if err != nil {
		t.Fatal(err)
	}
	er := resp.(*kmsg.ElectLeadersResponse)
	wantCode(t, "ElectLeaders on a non-controller", er.ErrorCode, kerr.NotController)
	if len(er.Topics) != 1 || len(er.Topics[0].Partitions) != 1 {
		t.Fatalf("ElectLeaders on a non-controller answered %+v, want the one partition", er.Topics)
	}
	wantCode(t, "ElectLeaders on a non-controller, partition", er.Topics[0].Partitions[0].ErrorCode, kerr.NotController)

	// Unclean on partitions that have leaders: nothing to do.
	res, err := adm.ElectLeaders(testContext(t), kadm.ElectLiveReplica, kadm.TopicsSet{"orders": {preferred[0]: {}}})
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, "unclean election of a led partition", res["orders"][preferred[0]].Err, kerr.ElectionNotNeeded)

	// Preferred over every partition: exactly those that victim prefers.
	res, err = adm.ElectLeaders(testContext(t), kadm.ElectPreferredReplica, nil)
	if err != nil {
		t.Fatal(err)
	}
	var elected []int32
	for p, r := range res["orders"] {
		if r.Err != nil {
			t.Fatalf("preferred election of orders-%d: %v %s", p, r.Err, r.ErrMessage)
		}
		elected = append(elected, p)
	}
	slices.Sort(elected)
	if !slices.Equal(elected, preferred) {
		t.Fatalf("preferred election over all partitions elected %v, want %v (the partitions broker %d prefers)", elected, preferred, victim)
	}
	for _, b := range brokers {
		pollFor(t, fmt.Sprintf("node %d sees broker %d lead its preferred partitions", b.Controller().NodeID(), victim), 10*time.Second, func() bool {
			for _, p := range preferred {
				if b.Controller().Image().Topic("orders").Partitions[p].Leader != victim {
					return false
				}
			}
			return true
		})
	}

	// Again: not needed.
	res, err = adm.ElectLeaders(testContext(t), kadm.ElectPreferredReplica, kadm.TopicsSet{"orders": {preferred[0]: {}}, "nope": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, "second preferred election", res["orders"][preferred[0]].Err, kerr.ElectionNotNeeded)
	wantErr(t, "election of an unknown topic", res["nope"][0].Err, kerr.UnknownTopicOrPartition)

	// The new leaders serve: a produce with acks=all to each preferred
	// partition is acknowledged.
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers[0].Addr().String()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for _, p := range preferred {
		if err := prod.ProduceSync(testContext(t), &kgo.Record{Topic: "orders", Partition: p, Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("produce to orders-%d after the election: %v", p, err)
		}
	}
}

// The handler's answers on one node, where the version or the exact code
// matters: v0 (no election type) elects preferred leaders, an unknown
// election type is INVALID_REQUEST, a partition named twice is answered
// once, and "all partitions" answers none when every preferred replica
// leads.
func TestElectLeadersHandler(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir(), ""))
	_, adm := newClient(t, b)
	createTopic(t, adm, "t", 2, nil)
	for _, v := range []int16{0, 1, 2} {
		cl := pinned(t, b, kmsg.ElectLeaders, v)
		req := kmsg.NewPtrElectLeadersRequest()
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = "t", []int32{0, 0, 1, 7}
		req.Topics = append(req.Topics, rt)
		resp := direct[*kmsg.ElectLeadersResponse](t, cl, req)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 3 {
			t.Fatalf("v%d: answered %+v, want partitions 0, 1 and 7 once each", v, resp.Topics)
		}
		for _, p := range resp.Topics[0].Partitions {
			want := kerr.ElectionNotNeeded
			if p.Partition == 7 {
				want = kerr.UnknownTopicOrPartition
			}
			wantCode(t, fmt.Sprintf("v%d partition %d", v, p.Partition), p.ErrorCode, want)
			if p.ErrorMessage == nil {
				t.Errorf("v%d partition %d: no error message", v, p.Partition)
			}
		}
		all := kmsg.NewPtrElectLeadersRequest()
		if resp := direct[*kmsg.ElectLeadersResponse](t, cl, all); len(resp.Topics) != 0 || resp.ErrorCode != 0 {
			t.Fatalf("v%d: all partitions, none needing an election: answered %+v (error %d)", v, resp.Topics, resp.ErrorCode)
		}
	}
	cl := pinned(t, b, kmsg.ElectLeaders, 2)
	req := kmsg.NewPtrElectLeadersRequest()
	req.ElectionType = 5
	rt := kmsg.NewElectLeadersRequestTopic()
	rt.Topic, rt.Partitions = "t", []int32{0}
	req.Topics = append(req.Topics, rt)
	resp := direct[*kmsg.ElectLeadersResponse](t, cl, req)
	wantCode(t, "election type 5", resp.ErrorCode, kerr.InvalidRequest)
	wantCode(t, "election type 5, partition", resp.Topics[0].Partitions[0].ErrorCode, kerr.InvalidRequest)
}

// auto.leader.rebalance.enable with a one-second check: leadership moved
// off a broker by a controlled shutdown comes back to it by itself, at a
// new leader epoch, once it is back in the ISRs.
func TestAutoLeaderRebalanceThreeBrokers(t *testing.T) {
	brokers := startThreeBrokersWith(t, `[replication]
auto.leader.rebalance.enable = true
leader.imbalance.check.interval.seconds = 1
leader.imbalance.per.broker.percentage = 10
`)
	_, adm := threeNodeAdmin(t, brokers)
	createReplicatedTopic(t, brokers, adm, "orders", 6)
	ctrl := actingController(t, brokers)
	victim := int32(1)
	if ctrl.Controller().NodeID() == victim {
		victim = 2
	}
	before := map[int32]int32{}
	for _, p := range ctrl.Controller().Image().Topic("orders").Partitions {
		if p.Replicas[0] == victim {
			before[p.Partition] = p.LeaderEpoch
		}
	}
	if err := ctrl.Controller().ControlledShutdown(testContext(t), victim); err != nil {
		t.Fatal(err)
	}
	moved := false
	for p := range before {
		if ctrl.Controller().Image().Topic("orders").Partitions[p].Leader != victim {
			moved = true
		}
	}
	if !moved {
		t.Fatalf("the controlled shutdown of %d moved no leader", victim)
	}
	pollFor(t, fmt.Sprintf("broker %d leading its preferred partitions again, at a later leader epoch", victim), 20*time.Second, func() bool {
		for p, epoch := range before {
			pi := ctrl.Controller().Image().Topic("orders").Partitions[p]
			if pi.Leader != victim || pi.LeaderEpoch <= epoch {
				return false
			}
		}
		return true
	})
}
