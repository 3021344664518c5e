package broker

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/wren-broker/wren/config"
)

// linkNames are the names of the links b runs.
func linkNames(b *Broker) []string {
	var out []string
	for _, st := range b.UplinkStatus() {
		out = append(out, st.Name)
	}
	return out
}

// TestUplinkAddRemoveAtRunTime: on a three-node edge with no link in its
// files, `wren uplink add` starts a link on every node; each record is
// forwarded exactly once; a restarted node runs the link again (it is in
// the metadata log); `wren uplink remove` stops it on every node, and
// nothing is forwarded after.
func TestUplinkAddRemoveAtRunTime(t *testing.T) {
	ctx := testContext(t)
	central := startBroker(t, testConfig(t, t.TempDir(), ""))
	_, cadm := newClient(t, central, kgo.MetadataMinAge(10*time.Millisecond))
	o := Options{UplinkRefresh: 100 * time.Millisecond}
	brokers := startThreeBrokersOpts(t, "", o)
	ecl, eadm := threeNodeAdmin(t, brokers)
	const partitions = 6
	createReplicatedTopic(t, brokers, eadm, "sensors.a", partitions)
	edgeID := clusterOf(t, ctx, eadm)
	pcl, err := kgo.NewClient(append(ecl.Opts(), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	produceUplink(t, ctx, pcl, "sensors.a", partitions, 0, 100)
	for _, b := range brokers {
		if n := linkNames(b); len(n) != 0 {
			t.Fatalf("node %d runs links %v before any was added", b.cfg.NodeID, n)
		}
	}

	code, out := uplinkCLI(t, brokers[1], "add", "central", "--far", central.Addr().String(), "--topics", `sensors\..*`,
		"--set", "remote.topic.prefix=site-7.", "--set", "tail.settle.ms=100")
	if code != 0 || !strings.Contains(out, "uplink central added on every node") {
		t.Fatalf("uplink add exited %d: %s", code, out)
	}
	pollFor(t, "every node running the run-time link", 20*time.Second, func() bool {
		for _, b := range brokers {
			if n := linkNames(b); len(n) != 1 || n[0] != "central" {
				return false
			}
		}
		return true
	})
	waitFarRecords(t, ctx, cadm, "site-7.sensors.a", partitions*100)

	// A node restarts: it runs the link again, from the metadata log.
	old := brokers[2]
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	o.Logger = testLogger(t)
	if brokers[2], err = Start(old.cfg, o); err != nil {
		t.Fatalf("restart node 3: %v", err)
	}
	pollFor(t, "the restarted node running the run-time link", 20*time.Second, func() bool {
		n := linkNames(brokers[2])
		return len(n) == 1 && n[0] == "central"
	})
	createReplicatedTopic(t, brokers, eadm, "sensors.b", partitions) // full ISRs again
	produceUplink(t, ctx, pcl, "sensors.a", partitions, 100, 100)
	waitFarRecords(t, ctx, cadm, "site-7.sensors.a", partitions*200)
	checkFar(t, readFar(t, ctx, central, "site-7.sensors.a", partitions, partitions*200), edgeID, "sensors.a", partitions, 200)

	// Removed: every node stops the link, and nothing more goes.
	if code, out := uplinkCLI(t, brokers[0], "remove", "central"); code != 0 || !strings.Contains(out, "uplink central removed") {
		t.Fatalf("uplink remove exited %d: %s", code, out)
	}
	pollFor(t, "every node stopping the run-time link", 20*time.Second, func() bool {
		for _, b := range brokers {
			if len(linkNames(b)) != 0 {
				return false
			}
		}
		return true
	})
	produceUplink(t, ctx, pcl, "sensors.a", partitions, 200, 20)
	ends, err := cadm.ListEndOffsets(ctx, "site-7.sensors.a")
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(lo kadm.ListedOffset) {
		if lo.Offset != 200 {
			t.Errorf("far partition %d ends at %d after the link was removed, want 200", lo.Partition, lo.Offset)
		}
	})
	if _, err := cadm.ListEndOffsets(ctx, "site-7.sensors.b"); err != nil {
		t.Fatal(err)
	}
}

// TestUplinkRemoveReleasesHold: a run-time link whose far side is away
// holds its topic's records from retention; `wren uplink remove` stops it
// and retention deletes them. Bad run-time links are refused with
// INVALID_CONFIG and the key named, a password above all.
func TestUplinkRemoveReleasesHold(t *testing.T) {
	ctx := testContext(t)
	far := fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1)[0]) // nobody answers there
	cfg := testConfig(t, t.TempDir(), `
[storage]
log.retention.check.interval.ms = 50
`)
	edge, err := Start(cfg, Options{Logger: testLogger(t), UplinkRefresh: 100 * time.Millisecond, UplinkDownAfter: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { edge.Close() })
	_, adm := newClient(t, edge)

	// Refused, with the key named.
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--set", "sasl.password=secret"}, "uplink.bad.sasl.password"},
		{[]string{"--set", "compression=brotli"}, "uplink.bad.compression"},
		{[]string{"--set", "security.protocol=SASL_SSL", "--set", "sasl.mechanism=PLAIN"}, "uplink.bad.sasl.username"},
		{[]string{"--set", "no.such.key=1"}, "uplink.bad.no.such.key"},
	} {
		code, out := uplinkCLI(t, edge, append([]string{"add", "bad", "--far", far, "--topics", "x"}, c.args...)...)
		if code == 0 || !strings.Contains(out, c.says) {
			t.Errorf("uplink add %v exited %d, want a refusal naming %s: %s", c.args, code, c.says, out)
		}
	}
	v := "a:1"
	res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: config.UplinkKey("bad", "bootstrap.servers"), Value: &v}})
	if err != nil || !errors.Is(res[0].Err, kerr.InvalidConfig) || res[0].ErrMessage == "" || !strings.Contains(res[0].ErrMessage, "uplink.bad.topics") {
		t.Fatalf("a link without topics: %v %+v", err, res)
	}
	if n := linkNames(edge); len(n) != 0 {
		t.Fatalf("links %v after refusals", n)
	}

	code, out := uplinkCLI(t, edge, "add", "hold", "--far", far, "--topics", `sensors\..*`, "--set", fmt.Sprintf("max.backlog.bytes=%d", 64<<20))
	if code != 0 {
		t.Fatalf("uplink add exited %d: %s", code, out)
	}
	pollFor(t, "the run-time link running", 20*time.Second, func() bool { n := linkNames(edge); return len(n) == 1 && n[0] == "hold" })
	holdTopics(t, ctx, edge, "sensors.h", "other.h")
	cl := holdProducer(t, edge)
	const n = 300 // about 5 MiB: five segments
	if err := cl.ProduceSync(ctx, append(holdRecords("sensors.h", 0, n), holdRecords("other.h", 0, n)...)...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pollFor(t, "retention on other.h", 20*time.Second, func() bool { return logStart(t, edge, "other.h") > 0 })
	before := logStart(t, edge, "other.h")
	if err := cl.ProduceSync(ctx, holdRecords("other.h", n, 100)...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pollFor(t, "retention on other.h again", 20*time.Second, func() bool { return logStart(t, edge, "other.h") > before })
	if s := logStart(t, edge, "sensors.h"); s != 0 {
		t.Fatalf("retention deleted sensors.h up to %d while the run-time link holds it", s)
	}

	if code, out := uplinkCLI(t, edge, "remove", "hold", "--format", "json"); code != 0 || !strings.Contains(out, `"link": "hold"`) {
		t.Fatalf("uplink remove exited %d: %s", code, out)
	}
	pollFor(t, "the run-time link stopped", 20*time.Second, func() bool { return len(linkNames(edge)) == 0 })
	pollFor(t, "retention on sensors.h once the link is removed", 20*time.Second, func() bool { return logStart(t, edge, "sensors.h") > 0 })
}

// TestUplinkFileLinkWins: a run-time link named as a link of the node's
// file is not run there: the file's link runs on, unchanged.
func TestUplinkFileLinkWins(t *testing.T) {
	ctx := testContext(t)
	central := startBroker(t, testConfig(t, t.TempDir(), ""))
	_, cadm := newClient(t, central, kgo.MetadataMinAge(10*time.Millisecond))
	edge := uplinkEdge(t, t.TempDir(), central)
	ecl, eadm := newClient(t, edge, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, topic := range []string{"sensors.w", "other.w"} {
		if _, err := eadm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	produceUplink(t, ctx, ecl, "sensors.w", 1, 0, 10)
	waitFarRecords(t, ctx, cadm, "site-7.sensors.w", 10)
	fileLink := edge.links()[0]

	if code, out := uplinkCLI(t, edge, "add", "central", "--far", central.Addr().String(), "--topics", "other.w", "--set", "remote.topic.prefix=rt."); code != 0 {
		t.Fatalf("uplink add exited %d: %s", code, out)
	}
	// The pause comes after the add: once it is applied, so is the add.
	if code, out := uplinkCLI(t, edge, "pause", "central"); code != 0 {
		t.Fatalf("uplink pause exited %d: %s", code, out)
	}
	pollFor(t, "the link paused", 20*time.Second, func() bool { st := edge.UplinkStatus(); return len(st) == 1 && st[0].Paused })
	st := edge.UplinkStatus()
	if ls := edge.links(); len(st) != 1 || len(ls) != 1 || ls[0] != fileLink {
		t.Fatalf("the file's link was replaced: %+v", st)
	}
	for _, p := range st[0].Partitions {
		if p.Topic != "sensors.w" {
			t.Fatalf("the link forwards %s: the run-time link's topics", p.Topic)
		}
	}
	if code, out := uplinkCLI(t, edge, "resume", "central"); code != 0 {
		t.Fatalf("uplink resume exited %d: %s", code, out)
	}
	produceUplink(t, ctx, ecl, "sensors.w", 1, 10, 10)
	waitFarRecords(t, ctx, cadm, "site-7.sensors.w", 20)
	// The run-time link's keys stay stored; remove deletes them and
	// leaves the file's link alone.
	if code, out := uplinkCLI(t, edge, "remove", "central"); code != 0 {
		t.Fatalf("uplink remove exited %d: %s", code, out)
	}
	if code, out := uplinkCLI(t, edge, "add", "Bad.Name", "--far", "a:1", "--topics", "x"); code == 0 || !strings.Contains(out, "uplink name") {
		t.Fatalf("uplink add of a bad name exited %d: %s", code, out)
	}
	produceUplink(t, ctx, ecl, "sensors.w", 1, 20, 10)
	waitFarRecords(t, ctx, cadm, "site-7.sensors.w", 30)
	if ls := edge.links(); len(ls) != 1 || ls[0] != fileLink {
		t.Fatalf("after remove: %v", linkNames(edge))
	}
}
