package broker

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// groups848TestConfig makes KIP-848 members heartbeat often: a member
// learns of a new assignment only on a heartbeat, so the interval paces
// every rebalance step.
const groups848TestConfig = groupsTestConfig + `
group.consumer.heartbeat.interval.ms = 100
group.consumer.min.heartbeat.interval.ms = 100
`

func TestKIP848Smoke(t *testing.T) {
	const topic, group, partitions = "events", "readers848", 12
	b := startBroker(t, testConfig(t, t.TempDir(), groups848TestConfig))
	ctx := testContext(t)
	_, adm := newClient(t, b)
	createTopic(t, adm, topic, partitions, nil)
	producer, _ := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	var recs []*kgo.Record
	for i := range 600 {
		recs = append(recs, &kgo.Record{Partition: int32(i % partitions), Value: []byte(strconv.Itoa(i))})
	}
	if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	w := newGroupWatch(t)
	var names []string
	for i := range 3 {
		name := fmt.Sprintf("m%d", i)
		names = append(names, name)
		startMember(t, b, w, name, group, topic, kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer())
		w.waitOwners(ctx, partitions, names...)
	}
	w.waitConsumed(ctx, 600)
	w.checkGenerations()
	t.Logf("generations %v", w.generations())
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range listed.Sorted() {
		t.Logf("group %s type %q state %s", g.Group, g.GroupType, g.State)
	}
}
