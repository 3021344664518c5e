package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/engine"
)

// Preferred leaders, leader rebalancing and reassignment on three
// in-process brokers, through franz-go's kadm as an operator's tool would.

// startThreeBrokersWith is startThreeBrokers with extra TOML appended to
// every node's file.
func startThreeBrokersWith(t *testing.T, extra string) []*Broker {
	t.Helper()
	return startThreeBrokersOpts(t, extra, Options{})
}

// startThreeBrokersOpts is startThreeBrokersWith with Options (a test
// logger is set).
func startThreeBrokersOpts(t *testing.T, extra string, o Options) []*Broker {
	t.Helper()
	ports := freePorts(t, 3)
	// The data dirs first: cleanups run last-in first-out, so the brokers
	// close before their directories are removed.
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	var brokers []*Broker
	t.Cleanup(func() {
		for _, b := range brokers {
			b.Close()
		}
	})
	for id := 1; id <= 3; id++ {
		text := quorumConfigText(id, filepath.Join(dirs[id-1], "data"), ports) + extra
		cfg, err := config.Parse(fmt.Sprintf("node%d.toml", id), []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		o.Logger = testLogger(t)
		b, err := Start(cfg, o)
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

// onController runs change on the acting controller, retrying with a
// deadline while it answers NOT_CONTROLLER, as a Kafka client retries a
// controller request: an election may move the controller between
// finding it and calling it. It returns the broker that took the change.
func onController(t *testing.T, brokers []*Broker, what string, change func(*Broker) error) *Broker {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for attempt := 1; ; attempt++ {
		ctrl := actingController(t, brokers)
		err := change(ctrl)
		if err == nil {
			return ctrl
		}
		if !errors.Is(err, kerr.NotController) || time.Now().After(deadline) {
			t.Fatalf("%s on the acting controller (attempt %d): %v", what, attempt, err)
		}
		t.Logf("%s: %v; retrying on the acting controller", what, err)
		time.Sleep(20 * time.Millisecond)
	}
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
	ctrl = onController(t, brokers, fmt.Sprintf("controlled shutdown of %d", id), func(b *Broker) error {
		return b.Controller().ControlledShutdown(testContext(t), id)
	})
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
// controller forwards the request to it.
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

	// Through a node that is not the controller.
	var other *Broker
	for _, b := range brokers {
		if !b.Controller().Acting() {
			other = b
			break
		}
	}
	req := kmsg.NewPtrElectLeadersRequest()
	req.ElectionType = 1 // unclean, of a led partition: changes nothing
	rt := kmsg.NewElectLeadersRequestTopic()
	rt.Topic, rt.Partitions = "orders", []int32{preferred[0]}
	req.Topics = append(req.Topics, rt)
	resp, err := cl.Broker(int(other.Controller().NodeID())).Request(testContext(t), req)
	if err != nil {
		t.Fatal(err)
	}
	// A node that is not the controller forwards the request, and the
	// controller's answer comes back.
	er := resp.(*kmsg.ElectLeadersResponse)
	wantCode(t, "ElectLeaders through a non-controller", er.ErrorCode, nil)
	if len(er.Topics) != 1 || len(er.Topics[0].Partitions) != 1 {
		t.Fatalf("ElectLeaders through a non-controller answered %+v, want the one partition", er.Topics)
	}
	wantCode(t, "ElectLeaders through a non-controller, partition", er.Topics[0].Partitions[0].ErrorCode, kerr.ElectionNotNeeded)

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
	ctrl = onController(t, brokers, fmt.Sprintf("controlled shutdown of %d", victim), func(b *Broker) error {
		return b.Controller().ControlledShutdown(testContext(t), victim)
	})
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

// Kafka's kafka-reassign-partitions through kadm: an RF 2 partition moves
// from {a, b} to {b, c}, its leader a among the replicas removed. c
// catches up and joins the ISR, leadership moves to b, a deletes its
// copy, and every record produced before and during the move is read
// back. Cancelling a move that cannot complete (its new replica's broker
// is fenced) restores the original replicas.
func TestReassignPartitionsThreeBrokers(t *testing.T) {
	brokers := startThreeBrokersWith(t, "[replication]\nauto.leader.rebalance.enable = false\n")
	cl, adm := threeNodeAdmin(t, brokers)
	resp, err := adm.CreateTopic(testContext(t), 1, 2, nil, "moving")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	ctrl := actingController(t, brokers)
	var p0 cluster.PartitionImage
	pollFor(t, "moving-0 with both replicas in the ISR", 15*time.Second, func() bool {
		p0 = ctrl.Controller().Image().Topic("moving").Partitions[0]
		return len(p0.ISR) == 2 && p0.Leader == p0.Replicas[0]
	})
	a, b := p0.Replicas[0], p0.Replicas[1]
	c := int32(6) - a - b
	t.Logf("moving-0: replicas %v led by %d, moving to [%d %d]", p0.Replicas, a, b, c)

	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers[0].Addr().String()), kgo.DefaultProduceTopic("moving"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	produce := func(from, to int) {
		t.Helper()
		var rs []*kgo.Record
		for i := from; i < to; i++ {
			rs = append(rs, &kgo.Record{Value: []byte(strconv.Itoa(i))})
		}
		if err := prod.ProduceSync(testContext(t), rs...).FirstErr(); err != nil {
			t.Fatalf("produce %d-%d: %v", from, to, err)
		}
	}
	produce(0, 500)

	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("moving", 0, []int32{b, c})
	req.Assign("moving", 7, []int32{b, c})
	res, err := adm.AlterPartitionAssignments(testContext(t), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Sorted() {
		switch r.Partition {
		case 0:
			if r.Err != nil {
				t.Fatalf("reassign moving-0: %v %s", r.Err, r.ErrMessage)
			}
		case 7:
			wantErr(t, "reassign moving-7", r.Err, kerr.UnknownTopicOrPartition)
		}
	}
	produce(500, 1000)
	pollFor(t, "the move of moving-0 to complete", 20*time.Second, func() bool {
		l, err := adm.ListPartitionReassignments(testContext(t), kadm.TopicsSet{"moving": {0: {}}})
		if err != nil {
			t.Fatalf("list reassignments: %v", err)
		}
		p := ctrl.Controller().Image().Topic("moving").Partitions[0]
		return len(l.Sorted()) == 0 && slices.Equal(p.Replicas, []int32{b, c})
	})
	p := ctrl.Controller().Image().Topic("moving").Partitions[0]
	if p.Leader != b || !slices.Equal(p.ISR, []int32{b, c}) {
		t.Fatalf("after the move: %+v, want leader %d and ISR [%d %d]", p, b, b, c)
	}
	tp := engine.TopicPartition{Topic: "moving", Partition: 0}
	pollFor(t, fmt.Sprintf("broker %d to drop its copy of moving-0", a), 10*time.Second, func() bool {
		return brokers[a-1].Replicas().Partition(tp) == nil && brokers[c-1].Replicas().Partition(tp) != nil
	})
	if _, err := os.Stat(filepath.Join(brokers[a-1].Replicas().Logs().Dir(), "moving-0")); !os.IsNotExist(err) {
		t.Fatalf("the log of moving-0 on broker %d is still on disk: %v", a, err)
	}
	produce(1000, 1100)

	// Every record from the new replicas.
	cons, err := kgo.NewClient(kgo.SeedBrokers(brokers[b-1].Addr().String()), kgo.ConsumeTopics("moving"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]bool{}
	ctx := testContext(t)
	for len(seen) < 1100 && ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	if len(seen) != 1100 {
		t.Fatalf("read back %d of 1100 records after the move", len(seen))
	}

	// A move to a fenced broker cannot complete; cancelling it restores
	// the replicas. The controller's own broker stays, so it keeps acting.
	stuck := a
	if stuck == ctrl.Controller().NodeID() {
		t.Skip("the removed broker is the controller; the cancel case needs another broker to fence")
	}
	brokers[stuck-1].Close()
	pollFor(t, fmt.Sprintf("broker %d fenced", stuck), 10*time.Second, func() bool {
		bi, ok := ctrl.Controller().Image().Broker(stuck)
		return ok && bi.Fenced
	})
	req = nil
	req.Assign("moving", 0, []int32{b, stuck})
	if res, err := adm.AlterPartitionAssignments(testContext(t), req); err != nil || res.Error() != nil {
		t.Fatalf("reassign to a fenced broker: %v %v", err, res.Error())
	}
	l, err := adm.ListPartitionReassignments(testContext(t), kadm.TopicsSet{"moving": {0: {}}})
	if err != nil || len(l.Sorted()) != 1 || !slices.Equal(l.Sorted()[0].AddingReplicas, []int32{stuck}) {
		t.Fatalf("listed %+v %v, want moving-0 adding %d", l, err, stuck)
	}
	req = nil
	req.Assign("moving", 0, nil)
	if res, err := adm.AlterPartitionAssignments(testContext(t), req); err != nil || res.Error() != nil {
		t.Fatalf("cancel: %v %v", err, res.Error())
	}
	// kadm sent the cancel to whichever node was the controller then: ctrl
	// holds it once it has applied the entry.
	pollFor(t, fmt.Sprintf("moving-0 back on replicas [%d %d] after the cancel", b, c), 10*time.Second, func() bool {
		p = ctrl.Controller().Image().Topic("moving").Partitions[0]
		return !p.Reassigning() && slices.Equal(p.Replicas, []int32{b, c})
	})
	if res, err := adm.AlterPartitionAssignments(testContext(t), req); err != nil || !errors.Is(res.Error(), kerr.NoReassignmentInProgress) {
		t.Fatalf("a second cancel: %v %v, want NO_REASSIGNMENT_IN_PROGRESS", err, res.Error())
	}

	// A node that is not the controller answers NOT_CONTROLLER.
	for _, x := range brokers {
		if x.Controller().Acting() || x.Controller().NodeID() == stuck {
			continue
		}
		lr := kmsg.NewPtrListPartitionReassignmentsRequest()
		resp, err := cl.Broker(int(x.Controller().NodeID())).Request(testContext(t), lr)
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, "ListPartitionReassignments on a non-controller", resp.(*kmsg.ListPartitionReassignmentsResponse).ErrorCode, kerr.NotController)
	}
}

// The reassignment handlers' answers on one node, where the exact code
// matters.
func TestReassignmentHandlers(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir(), ""))
	_, adm := newClient(t, b)
	createTopic(t, adm, "t", 1, nil)
	alter := func(v int16, allowRF bool, replicas []int32) *kmsg.AlterPartitionAssignmentsResponse {
		req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		req.AllowReplicationFactorChange = allowRF
		rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Replicas = replicas
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return direct[*kmsg.AlterPartitionAssignmentsResponse](t, pinned(t, b, kmsg.AlterPartitionAssignments, v), req)
	}
	for _, c := range []struct {
		v        int16
		allowRF  bool
		replicas []int32
		want     *kerr.Error
	}{
		{0, false, []int32{9}, kerr.InvalidReplicaAssignment},
		{1, true, []int32{}, kerr.InvalidReplicaAssignment},
		{1, true, []int32{1, 1}, kerr.InvalidReplicaAssignment},
		{1, false, []int32{1, 1}, kerr.InvalidReplicationFactor},
		{1, true, nil, kerr.NoReassignmentInProgress},
		{1, true, []int32{1}, nil},
	} {
		resp := alter(c.v, c.allowRF, c.replicas)
		wantCode(t, fmt.Sprintf("v%d allowRF %v replicas %v", c.v, c.allowRF, c.replicas), resp.Topics[0].Partitions[0].ErrorCode, c.want)
	}
	list := direct[*kmsg.ListPartitionReassignmentsResponse](t, pinned(t, b, kmsg.ListPartitionReassignments, 0), kmsg.NewPtrListPartitionReassignmentsRequest())
	if list.ErrorCode != 0 || len(list.Topics) != 0 {
		t.Fatalf("list with nothing moving: %+v", list)
	}
	lr := kmsg.NewPtrListPartitionReassignmentsRequest()
	rt := kmsg.NewListPartitionReassignmentsRequestTopic()
	rt.Topic, rt.Partitions = "nope", []int32{0}
	lr.Topics = append(lr.Topics, rt)
	list = direct[*kmsg.ListPartitionReassignmentsResponse](t, pinned(t, b, kmsg.ListPartitionReassignments, 0), lr)
	wantCode(t, "list of an unknown topic", list.ErrorCode, kerr.UnknownTopicOrPartition)
}
