package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/uplink"
)

// uplinkEdge starts an edge broker in dir whose [uplink.central] forwards
// sensors\..* to central as site-7.*; the test closes it when it wants.
func uplinkEdge(t *testing.T, dir string, central *Broker) *Broker {
	t.Helper()
	return uplinkEdgeOpts(t, dir, central, Options{UplinkRefresh: 100 * time.Millisecond})
}

// uplinkEdgeOpts is uplinkEdge with the broker's options.
func uplinkEdgeOpts(t *testing.T, dir string, central *Broker, o Options) *Broker {
	t.Helper()
	cfg := testConfig(t, dir, fmt.Sprintf(`
[uplink.central]
bootstrap.servers = [%q]
topics = ["sensors\\..*"]
remote.topic.prefix = "site-7."
tail.settle.ms = 100
`, central.Addr().String()))
	o.Logger = testLogger(t)
	b, err := Start(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// fixedCentral returns a func that starts a central broker on the same
// address and data directory each time: one that stops and comes back.
func fixedCentral(t *testing.T) func() *Broker {
	port := freePorts(t, 1)[0]
	centralDir := t.TempDir()
	return func() *Broker {
		cfg := testConfig(t, centralDir, "")
		text := fmt.Sprintf(`
[broker]
node.id = 1
log.dirs = [%q]
listeners = ["PLAINTEXT://127.0.0.1:%d", "CONTROLLER://127.0.0.1:0"]

[http]
listen = "127.0.0.1:0"

[cluster]
controller.quorum.voters = ["1@127.0.0.1:9093"]
`, centralDir, port)
		var err error
		if cfg, err = config.Parse("central.toml", []byte(text)); err != nil {
			t.Fatal(err)
		}
		b, err := Start(cfg, Options{Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
}

// uplinkRecord is the i-th record the test writes to a local partition.
func uplinkRecord(topic string, partition int32, i int) *kgo.Record {
	return &kgo.Record{Topic: topic, Partition: partition,
		Key:       []byte("k-" + strconv.Itoa(i)),
		Value:     []byte(fmt.Sprintf("v-%d-%d", partition, i)),
		Headers:   []kgo.RecordHeader{{Key: "seq", Value: []byte(strconv.Itoa(i))}},
		Timestamp: time.UnixMilli(1_700_000_000_000 + int64(i)),
	}
}

// produceUplink writes n records to each partition of topic, numbered
// from first.
func produceUplink(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, partitions int32, first, n int) {
	t.Helper()
	var rs []*kgo.Record
	for i := first; i < first+n; i++ {
		for p := range partitions {
			rs = append(rs, uplinkRecord(topic, p, i))
		}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// waitFarRecords polls until the far topic holds want records in all.
func waitFarRecords(t *testing.T, ctx context.Context, adm *kadm.Client, topic string, want int64) {
	t.Helper()
	var total int64
	for ctx.Err() == nil {
		ends, err := adm.ListEndOffsets(ctx, topic)
		total = 0
		if err == nil {
			ends.Each(func(o kadm.ListedOffset) {
				if o.Err == nil {
					total += o.Offset
				}
			})
		}
		if total >= want {
			if total > want {
				t.Fatalf("far topic %s holds %d records, want %d: duplicates", topic, total, want)
			}
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("far topic %s holds %d records after the deadline, want %d", topic, total, want)
}

// readFar reads every record of topic's partitions 0..partitions-1.
func readFar(t *testing.T, ctx context.Context, central *Broker, topic string, partitions int32, want int) map[int32][]*kgo.Record {
	t.Helper()
	ps := map[int32]kgo.Offset{}
	for p := range partitions {
		ps[p] = kgo.NewOffset().AtStart()
	}
	cl, _ := newClient(t, central, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: ps}))
	out := map[int32][]*kgo.Record{}
	n := 0
	for n < want && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			out[r.Partition] = append(out[r.Partition], r)
			n++
		})
	}
	if n != want {
		t.Fatalf("read %d records of %s, want %d", n, topic, want)
	}
	return out
}

// checkFar checks that the far partitions hold each local record
// 0..perPartition-1 exactly once, in order, with key, value, headers,
// timestamp and provenance.
func checkFar(t *testing.T, far map[int32][]*kgo.Record, cluster, localTopic string, partitions int32, perPartition int) {
	t.Helper()
	for p := range partitions {
		rs := far[p]
		if len(rs) != perPartition {
			t.Fatalf("far partition %d holds %d records, want %d", p, len(rs), perPartition)
		}
		for i, r := range rs {
			want := uplinkRecord(localTopic, p, i)
			if string(r.Key) != string(want.Key) || string(r.Value) != string(want.Value) || !r.Timestamp.Equal(want.Timestamp) {
				t.Fatalf("far partition %d record %d: key %q value %q time %v, want %q %q %v", p, i, r.Key, r.Value, r.Timestamp, want.Key, want.Value, want.Timestamp)
			}
			if len(r.Headers) != 2 || r.Headers[0].Key != "seq" || string(r.Headers[0].Value) != strconv.Itoa(i) || r.Headers[1].Key != uplink.HeaderSource {
				t.Fatalf("far partition %d record %d headers %v", p, i, r.Headers)
			}
			src, err := uplink.ParseSource(r.Headers[1].Value)
			if err != nil || src != (uplink.Source{Cluster: cluster, Topic: localTopic, Partition: p, Offset: int64(i)}) {
				t.Fatalf("far partition %d record %d provenance %+v, %v", p, i, src, err)
			}
		}
	}
}

func clusterOf(t *testing.T, ctx context.Context, adm *kadm.Client) string {
	t.Helper()
	m, err := adm.BrokerMetadata(ctx)
	if err != nil || m.Cluster == "" {
		t.Fatalf("cluster id: %q, %v", m.Cluster, err)
	}
	return m.Cluster
}

// TestUplinkExactlyOnce: an edge broker forwards its sensors.* topics to
// a central broker; the far side holds every record exactly once, in
// order, with its key, headers, timestamp and provenance, across a
// restart of the edge in the middle of forwarding, for a topic created
// after start too; a record that came from the far side is not sent back,
// and topics the link does not name stay home.
func TestUplinkExactlyOnce(t *testing.T) {
	ctx := testContext(t)
	central := startBroker(t, testConfig(t, t.TempDir(), ""))
	// Far topics appear while the test polls: its metadata is not cached.
	_, cadm := newClient(t, central, kgo.MetadataMinAge(10*time.Millisecond))
	centralID := clusterOf(t, ctx, cadm)

	edgeDir := t.TempDir()
	edge := uplinkEdge(t, edgeDir, central)
	ecl, eadm := newClient(t, edge, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	edgeID := clusterOf(t, ctx, eadm)
	for topic, n := range map[string]int32{"sensors.a": 3, "other": 1} {
		if _, err := eadm.CreateTopic(ctx, n, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	produceUplink(t, ctx, ecl, "sensors.a", 3, 0, 200)
	produceUplink(t, ctx, ecl, "other", 1, 0, 5)
	waitFarRecords(t, ctx, cadm, "site-7.sensors.a", 600)

	// More records, and the edge closed as soon as the far side holds
	// some of them: its restart resumes from what the far side holds.
	const second = 2000
	produceUplink(t, ctx, ecl, "sensors.a", 3, 200, second)
	ecl.Close()
	held := int64(0)
	for held <= 600 && ctx.Err() == nil {
		held = 0
		if ends, err := cadm.ListEndOffsets(ctx, "site-7.sensors.a"); err == nil {
			ends.Each(func(o kadm.ListedOffset) { held += max(o.Offset, 0) })
		}
	}
	if err := edge.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("the far side held %d of %d records when the edge closed", held, 3*(200+second))
	edge = uplinkEdge(t, edgeDir, central)
	ecl, eadm = newClient(t, edge, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if got := clusterOf(t, ctx, eadm); got != edgeID {
		t.Fatalf("edge cluster id %s after restart, was %s", got, edgeID)
	}
	waitFarRecords(t, ctx, cadm, "site-7.sensors.a", 3*(200+second))
	checkFar(t, readFar(t, ctx, central, "site-7.sensors.a", 3, 3*(200+second)), edgeID, "sensors.a", 3, 200+second)

	// A topic created after the link started is picked up. Its record
	// carrying the far cluster's provenance came down from there: it is
	// not sent back, and the one after it is.
	if _, err := eadm.CreateTopic(ctx, 1, 1, nil, "sensors.b"); err != nil {
		t.Fatal(err)
	}
	looped := uplinkRecord("sensors.b", 0, 0)
	looped.Headers = append(looped.Headers, kgo.RecordHeader{Key: uplink.HeaderSource,
		Value: []byte(uplink.Source{Cluster: centralID, Topic: "site-7.sensors.b", Partition: 0, Offset: 0}.String())})
	if err := ecl.ProduceSync(ctx, looped).FirstErr(); err != nil {
		t.Fatal(err)
	}
	produceUplink(t, ctx, ecl, "sensors.b", 1, 1, 9)
	waitFarRecords(t, ctx, cadm, "site-7.sensors.b", 9)
	far := readFar(t, ctx, central, "site-7.sensors.b", 1, 9)[0]
	for i, r := range far {
		src, err := uplink.ParseSource(r.Headers[len(r.Headers)-1].Value)
		if err != nil || src.Offset != int64(i+1) || string(r.Key) != "k-"+strconv.Itoa(i+1) {
			t.Fatalf("far sensors.b record %d: key %q provenance %+v, %v", i, r.Key, src, err)
		}
	}

	// The topic the link does not name stays home.
	tds, err := cadm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tds.Has("site-7.other") || tds.Has("other") {
		t.Fatalf("central holds a topic the link does not name: %v", tds.Names())
	}

	// Status: every partition active with nothing left to send.
	for ctx.Err() == nil {
		st := edge.UplinkStatus()
		done := len(st) == 1 && len(st[0].Partitions) == 4 && st[0].LastError == ""
		for _, p := range st[0].Partitions {
			done = done && p.Active && p.Backlog == 0 && p.Err == "" && p.Next > 0
		}
		if done {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("uplink status never settled: %+v", st)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestUplinkRefusesWhatItCannotResume: a far partition whose last record
// another writer wrote, and a local partition the far topic has no
// counterpart for, are refused with the reason in the status and nothing
// sent to them; the partitions beside them are forwarded.
func TestUplinkRefusesWhatItCannotResume(t *testing.T) {
	ctx := testContext(t)
	central := startBroker(t, testConfig(t, t.TempDir(), ""))
	ccl, cadm := newClient(t, central, kgo.MetadataMinAge(10*time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	// The far topic exists with one partition of the local two, and holds
	// a record no uplink wrote.
	if _, err := cadm.CreateTopic(ctx, 1, 1, nil, "site-7.sensors.x"); err != nil {
		t.Fatal(err)
	}
	if err := ccl.ProduceSync(ctx, &kgo.Record{Topic: "site-7.sensors.x", Partition: 0, Value: []byte("foreign")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// sensors.y goes to a far topic the link creates.
	edge := uplinkEdge(t, t.TempDir(), central)
	ecl, eadm := newClient(t, edge, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for topic, n := range map[string]int32{"sensors.x": 2, "sensors.y": 1} {
		if _, err := eadm.CreateTopic(ctx, n, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	produceUplink(t, ctx, ecl, "sensors.x", 2, 0, 10)
	produceUplink(t, ctx, ecl, "sensors.y", 1, 0, 10)
	waitFarRecords(t, ctx, cadm, "site-7.sensors.y", 10)

	var st []uplink.Status
	for ctx.Err() == nil {
		st = edge.UplinkStatus()
		if len(st) == 1 && len(st[0].Partitions) == 3 && st[0].Partitions[0].Err != "" && st[0].Partitions[1].Err != "" {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("status never showed both refusals: %+v", st)
	}
	ps := st[0].Partitions
	for i, want := range []string{"was not forwarded by this link", "has 1 partitions; local partition 1 has no counterpart"} {
		if ps[i].Active || !strings.Contains(ps[i].Err, want) {
			t.Errorf("sensors.x[%d]: active %v, error %q, want one saying %q", i, ps[i].Active, ps[i].Err, want)
		}
	}
	if y := ps[2]; y.Topic != "sensors.y" || !y.Active || y.Err != "" || y.Sent != 10 {
		t.Errorf("sensors.y: %+v", y)
	}
	// The same in /metrics.
	m := scrape(t, edge)
	for series, want := range map[string]float64{
		`wren_uplink_sent_records_total{link="central"}`:                                                 10,
		`wren_uplink_backlog_records{link="central",topic="sensors.y",partition="0",direction="push"}`:   0,
		`wren_uplink_partition_refused{link="central",topic="sensors.y",partition="0",direction="push"}`: 0,
		`wren_uplink_partition_refused{link="central",topic="sensors.x",partition="0",direction="push"}`: 1,
		`wren_uplink_partition_refused{link="central",topic="sensors.x",partition="1",direction="push"}`: 1,
		`wren_uplink_last_error_timestamp_seconds{link="central"}`:                                       0,
	} {
		if got, ok := m[series]; !ok || got != want {
			t.Errorf("/metrics %s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	// Nothing was added to the far partition another writer wrote.
	ends, err := cadm.ListEndOffsets(ctx, "site-7.sensors.x")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("site-7.sensors.x", 0); o.Offset != 1 {
		t.Fatalf("far sensors.x[0] ends at %d, want 1", o.Offset)
	}
}

// TestUplinkForwardsFromLeaders: on a three-node edge cluster each
// partition is forwarded by its leader only, and when leadership moves the
// new leader resumes from the far side's tail: every record is there once,
// in order.
func TestUplinkForwardsFromLeaders(t *testing.T) {
	ctx := testContext(t)
	central := startBroker(t, testConfig(t, t.TempDir(), ""))
	_, cadm := newClient(t, central, kgo.MetadataMinAge(10*time.Millisecond))
	brokers := startThreeBrokersOpts(t, fmt.Sprintf(`
[uplink.central]
bootstrap.servers = [%q]
topics = ["sensors\\..*"]
remote.topic.prefix = "site-7."
tail.settle.ms = 100
`, central.Addr().String()), Options{UplinkRefresh: 100 * time.Millisecond})
	ecl, eadm := threeNodeAdmin(t, brokers)
	const partitions = 6
	createReplicatedTopic(t, brokers, eadm, "sensors.c", partitions)
	edgeID := clusterOf(t, ctx, eadm)
	pcl, err := kgo.NewClient(append(ecl.Opts(), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	produceUplink(t, ctx, pcl, "sensors.c", partitions, 0, 100)
	waitFarRecords(t, ctx, cadm, "site-7.sensors.c", partitions*100)

	// Each node forwards exactly the partitions it leads.
	checkLeaders := func() {
		t.Helper()
		pollFor(t, "each node forwarding exactly the partitions it leads", 20*time.Second, func() bool {
			active := 0
			for _, b := range brokers {
				leads := map[int32]bool{}
				for _, p := range b.Controller().Image().Topic("sensors.c").Partitions {
					leads[p.Partition] = p.Leader == b.cfg.NodeID
				}
				for _, st := range b.UplinkStatus() {
					for _, p := range st.Partitions {
						if p.Active != leads[p.Partition] {
							return false
						}
						if p.Active {
							active++
						}
					}
				}
			}
			return active == partitions
		})
	}
	checkLeaders()

	// Leadership leaves one node; the new leaders resume from the tail.
	displaceLeaders(t, brokers, "sensors.c", brokers[0].cfg.NodeID)
	checkLeaders()
	produceUplink(t, ctx, pcl, "sensors.c", partitions, 100, 100)
	waitFarRecords(t, ctx, cadm, "site-7.sensors.c", partitions*200)
	checkFar(t, readFar(t, ctx, central, "site-7.sensors.c", partitions, partitions*200), edgeID, "sensors.c", partitions, 200)

	// `wren uplink status` asks every node and keeps each partition's
	// leader's row: the old leader's stale rows do not count.
	leaders := map[int32]int32{}
	for _, p := range brokers[1].Controller().Image().Topic("sensors.c").Partitions {
		leaders[p.Partition] = p.Leader
	}
	var out string
	pollFor(t, "uplink status merging the three nodes", 20*time.Second, func() bool {
		var code int
		code, out = uplinkStatusCLI(t, brokers[1], "--format", "json")
		var r struct {
			Links []struct {
				BacklogRecords int64 `json:"backlog_records"`
				SentRecords    int64 `json:"sent_records"`
				Nodes          []struct{ Node int32 }
				Partitions     []struct {
					Node, Partition int32
					Leader          bool
				}
			}
		}
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil || len(r.Links) != 1 {
			return false
		}
		l := r.Links[0]
		if len(l.Nodes) != 3 || len(l.Partitions) != partitions || l.BacklogRecords != 0 || l.SentRecords < partitions*200 {
			return false
		}
		for _, p := range l.Partitions {
			if !p.Leader || p.Node != leaders[p.Partition] {
				return false
			}
		}
		return true
	})
	t.Logf("wren uplink status --format json on three nodes:\n%s", out)
}

// TestUplinkFarSideRestarts: the central broker stops in the middle of
// forwarding and comes back on the same address; the edge kept the records
// meanwhile (store and forward) and the far side ends with every one of
// them once, in order.
func TestUplinkFarSideRestarts(t *testing.T) {
	ctx := testContext(t)
	centralCfg := fixedCentral(t)
	central := centralCfg()
	edge := uplinkEdge(t, t.TempDir(), central)
	ecl, eadm := newClient(t, edge, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	edgeID := clusterOf(t, ctx, eadm)
	if _, err := eadm.CreateTopic(ctx, 2, 1, nil, "sensors.d"); err != nil {
		t.Fatal(err)
	}
	produceUplink(t, ctx, ecl, "sensors.d", 2, 0, 2000)
	_, cadm := newClient(t, central, kgo.MetadataMinAge(10*time.Millisecond))
	held := int64(0)
	for held == 0 && ctx.Err() == nil {
		if ends, err := cadm.ListEndOffsets(ctx, "site-7.sensors.d"); err == nil {
			ends.Each(func(o kadm.ListedOffset) { held += max(o.Offset, 0) })
		}
	}
	if err := central.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("the far side held at least %d of 4000 records when it stopped", held)
	// The edge takes more records while the far side is away.
	produceUplink(t, ctx, ecl, "sensors.d", 2, 2000, 500)
	central = centralCfg()
	_, cadm = newClient(t, central, kgo.MetadataMinAge(10*time.Millisecond))
	waitFarRecords(t, ctx, cadm, "site-7.sensors.d", 5000)
	checkFar(t, readFar(t, ctx, central, "site-7.sensors.d", 2, 5000), edgeID, "sensors.d", 2, 2500)
	if st := edge.UplinkStatus(); len(st) != 1 || st[0].LastError == "" {
		t.Logf("status after the far side's restart: %+v", st)
	}
}

// TestUplinkStartLatest: a link with start.position = "latest" forwards
// only what is written after it started on a far partition that never
// held a record; the records already in the local log stay home.
func TestUplinkStartLatest(t *testing.T) {
	ctx := testContext(t)
	central := startBroker(t, testConfig(t, t.TempDir(), ""))
	_, cadm := newClient(t, central, kgo.MetadataMinAge(10*time.Millisecond))
	dir := t.TempDir()
	plain, err := Start(testConfig(t, dir, ""), Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	pcl, padm := newClient(t, plain, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if _, err := padm.CreateTopic(ctx, 1, 1, nil, "sensors.e"); err != nil {
		t.Fatal(err)
	}
	produceUplink(t, ctx, pcl, "sensors.e", 1, 0, 5)
	pcl.Close()
	if err := plain.Close(); err != nil {
		t.Fatal(err)
	}

	cfg := testConfig(t, dir, fmt.Sprintf(`
[uplink.central]
bootstrap.servers = [%q]
topics = ["sensors.e"]
start.position = "latest"
tail.settle.ms = 100
`, central.Addr().String()))
	edge, err := Start(cfg, Options{Logger: testLogger(t), UplinkRefresh: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { edge.Close() })
	pollFor(t, "the link forwarding sensors.e", 20*time.Second, func() bool {
		st := edge.UplinkStatus()
		return len(st) == 1 && len(st[0].Partitions) == 1 && st[0].Partitions[0].Active
	})
	ecl, _ := newClient(t, edge, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceUplink(t, ctx, ecl, "sensors.e", 1, 5, 3)
	waitFarRecords(t, ctx, cadm, "sensors.e", 3)
	for i, r := range readFar(t, ctx, central, "sensors.e", 1, 3)[0] {
		if string(r.Key) != "k-"+strconv.Itoa(5+i) {
			t.Fatalf("far record %d has key %q, want k-%d", i, r.Key, 5+i)
		}
	}
}

// TestUplinkSettlePerPartition: tail.settle.ms is waited by each
// partition on its own. With a ten-minute settle, a partition whose far
// topic exists (so its tail must settle first) waits, while a partition
// already forwarded keeps being forwarded: its new records reach the far
// side within seconds.
func TestUplinkSettlePerPartition(t *testing.T) {
	ctx := testContext(t)
	central := startBroker(t, testConfig(t, t.TempDir(), ""))
	_, cadm := newClient(t, central, kgo.MetadataMinAge(10*time.Millisecond))
	cfg := testConfig(t, t.TempDir(), fmt.Sprintf(`
[uplink.central]
bootstrap.servers = [%q]
topics = ["sensors\\..*"]
remote.topic.prefix = "site-7."
tail.settle.ms = 600000
`, central.Addr().String()))
	edge, err := Start(cfg, Options{Logger: testLogger(t), UplinkRefresh: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { edge.Close() })
	ecl, eadm := newClient(t, edge, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	partition := func(topic string) (uplink.PartitionStatus, bool) {
		for _, st := range edge.UplinkStatus() {
			for _, p := range st.Partitions {
				if p.Topic == topic {
					return p, true
				}
			}
		}
		return uplink.PartitionStatus{}, false
	}

	// sensors.a's far topic is the link's own, just created: nothing to
	// settle, it is forwarded at once.
	createTopic(t, eadm, "sensors.a", 1, nil)
	produceUplink(t, ctx, ecl, "sensors.a", 1, 0, 1)
	waitFarRecords(t, ctx, cadm, "site-7.sensors.a", 1)

	// sensors.b's far topic exists already: its tail settles for ten
	// minutes.
	createTopic(t, cadm, "site-7.sensors.b", 1, nil)
	createTopic(t, eadm, "sensors.b", 1, nil)
	pollFor(t, "sensors.b settling", 20*time.Second, func() bool {
		p, ok := partition("sensors.b")
		return ok && p.Settling && !p.Active
	})

	// Meanwhile sensors.a goes on.
	produceUplink(t, ctx, ecl, "sensors.a", 1, 1, 5)
	quick, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	waitFarRecords(t, quick, cadm, "site-7.sensors.a", 6)
	checkFar(t, readFar(t, ctx, central, "site-7.sensors.a", 1, 6), clusterOf(t, ctx, eadm), "sensors.a", 1, 6)
	if p, _ := partition("sensors.b"); !p.Settling || p.Active || p.Err != "" {
		t.Fatalf("sensors.b: %+v, want still settling", p)
	}
	if p, _ := partition("sensors.a"); !p.Active || p.Settling || p.Sent != 6 {
		t.Fatalf("sensors.a: %+v, want active with 6 sent", p)
	}
}

// TestUplinkSettleRefusesGrowingTail: a far partition another writer
// keeps appending to never settles: after three waits it is refused
// with the reason, and the link's other partition is forwarded all
// along.
func TestUplinkSettleRefusesGrowingTail(t *testing.T) {
	ctx := testContext(t)
	central := startBroker(t, testConfig(t, t.TempDir(), ""))
	ccl, cadm := newClient(t, central, kgo.MetadataMinAge(10*time.Millisecond))
	createTopic(t, cadm, "site-7.sensors.busy", 1, nil)
	// Another writer appends to the far partition every 10 ms.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			if err := ccl.ProduceSync(ctx, &kgo.Record{Topic: "site-7.sensors.busy", Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil && ctx.Err() == nil {
				t.Errorf("the other writer: %v", err)
				return
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	cfg := testConfig(t, t.TempDir(), fmt.Sprintf(`
[uplink.central]
bootstrap.servers = [%q]
topics = ["sensors\\..*"]
remote.topic.prefix = "site-7."
tail.settle.ms = 200
`, central.Addr().String()))
	edge, err := Start(cfg, Options{Logger: testLogger(t), UplinkRefresh: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { edge.Close() })
	ecl, eadm := newClient(t, edge, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, eadm, "sensors.busy", 1, nil)
	createTopic(t, eadm, "sensors.quiet", 1, nil)
	var busy uplink.PartitionStatus
	pollFor(t, "sensors.busy refused as still growing", 20*time.Second, func() bool {
		for _, st := range edge.UplinkStatus() {
			for _, p := range st.Partitions {
				if p.Topic == "sensors.busy" {
					busy = p
				}
			}
		}
		return strings.Contains(busy.Err, "did not hold still")
	})
	// Refused: never forwarded. It may be settling again (a later
	// refresh tries anew, the last refusal kept as its error).
	if busy.Active || busy.Sent != 0 {
		t.Fatalf("sensors.busy: %+v, want refused, nothing sent", busy)
	}
	produceUplink(t, ctx, ecl, "sensors.quiet", 1, 0, 3)
	waitFarRecords(t, ctx, cadm, "site-7.sensors.quiet", 3)
}
