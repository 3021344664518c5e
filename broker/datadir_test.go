package broker

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/groups"
	"github.com/wren-broker/wren/groups/coordinator"
)

// TestOffsetsTopicKeepsItsPartitionCount: offsets.topic.num.partitions
// applies only when __consumer_offsets is created. A broker restarted with
// another value (as after wren's default moved from Kafka's 50 to 12) keeps
// the topic's real count, so every group maps to the partition that holds
// its offsets and no committed offset is lost.
func TestOffsetsTopicKeepsItsPartitionCount(t *testing.T) {
	dir := t.TempDir()
	const created, later = 7, 3
	cfgWith := func(n int) string {
		return fmt.Sprintf("[groups]\ngroup.initial.rebalance.delay.ms = 0\noffsets.topic.num.partitions = %d\n", n)
	}
	var names []string
	moved := 0
	for i := 0; i < 24; i++ {
		g := fmt.Sprintf("group-%d", i)
		names = append(names, g)
		if groups.PartitionFor(g, created) != groups.PartitionFor(g, later) {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("no group would move between partition counts; the test would prove nothing")
	}

	b := startBroker(t, testConfig(t, dir, cfgWith(created)))
	_, adm := newClient(t, b)
	ctx := testContext(t)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	for i, g := range names {
		var offs kadm.Offsets
		offs.Add(kadm.Offset{Topic: "orders", Partition: int32(i % 2), At: int64(100 + i), LeaderEpoch: -1})
		if err := adm.CommitAllOffsets(ctx, g, offs); err != nil {
			t.Fatalf("commit for %s: %v", g, err)
		}
	}
	mustClose(t, b)

	b = startBroker(t, testConfig(t, dir, cfgWith(later)))
	if got := b.groups.Partitions(); got != created {
		t.Fatalf("group coordinator maps groups over %d partitions, want the topic's %d", got, created)
	}
	if tp := b.controller.Image().Topic(coordinator.OffsetsTopic); tp == nil || len(tp.Partitions) != created {
		t.Fatalf("%s after restart: %+v", coordinator.OffsetsTopic, tp)
	}
	_, adm = newClient(t, b)
	for i, g := range names {
		got, err := adm.FetchOffsets(ctx, g)
		if err != nil {
			t.Fatalf("fetch offsets of %s: %v", g, err)
		}
		o, ok := got.Lookup("orders", int32(i%2))
		if !ok || o.Err != nil || o.At != int64(100+i) {
			t.Fatalf("%s after restart: %+v (found %v), want offset %d", g, o, ok, 100+i)
		}
	}
}

// TestRefusesLostMetaProperties: a data directory whose meta.properties
// was deleted keeps its partitions and metadata log; the broker refuses it
// and names the cluster id to restore, instead of inventing a new one.
func TestRefusesLostMetaProperties(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, testConfig(t, dir, "[groups]\noffsets.topic.num.partitions = 2\n"))
	id := b.controller.ClusterID()
	mustClose(t, b)
	meta := dir + "/" + engine.MetaPropertiesFile
	if err := os.Remove(meta); err != nil {
		t.Fatal(err)
	}
	_, err := Start(testConfig(t, dir, ""), Options{Logger: testLogger(t)})
	if !errors.Is(err, engine.ErrMetaPropertiesMissing) {
		t.Fatalf("start without meta.properties: %v", err)
	}
	for _, want := range []string{meta, "cluster.id=" + id, "metadata log", "node.id=1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, serr := os.Stat(meta); !os.IsNotExist(serr) {
		t.Fatalf("the refused start wrote %s: %v", meta, serr)
	}

	// Restored as the error says, the directory opens with its cluster id.
	var restore string
	if i := strings.Index(err.Error(), "version=1"); i >= 0 {
		restore = err.Error()[i:]
	}
	var lines []string
	for _, kv := range strings.Split(restore, ", ") {
		k, v, _ := strings.Cut(kv, "=")
		v, _, _ = strings.Cut(v, " ")
		lines = append(lines, k+"="+v)
	}
	if err := os.WriteFile(meta, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b = startBroker(t, testConfig(t, dir, ""))
	if got := b.controller.ClusterID(); got != id {
		t.Fatalf("restored cluster id %s, want %s", got, id)
	}
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(testContext(t), mustClient(t, b)); err != nil {
		t.Fatal(err)
	}
}

func mustClose(t *testing.T, b *Broker) {
	t.Helper()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

func mustClient(t *testing.T, b *Broker) kmsg.Requestor {
	cl, _ := newClient(t, b)
	return cl
}

// A node started on another node's data directory (two nodes' log.dirs
// mixed up) is refused, and told whose directory it is: node 1's of its
// cluster, not another cluster's; the directory is left as it was.
func TestRefusesAnotherNodesDataDir(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, testConfig(t, dir, ""))
	id := b.controller.ClusterID()
	mustClose(t, b)
	meta := dir + "/" + engine.MetaPropertiesFile
	before, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("node2.toml", []byte(fmt.Sprintf(`
[broker]
node.id = 2
log.dirs = [%q]
listeners = ["PLAINTEXT://127.0.0.1:0", "CONTROLLER://127.0.0.1:0"]
[http]
listen = ""
[cluster]
controller.quorum.voters = ["2@127.0.0.1:9093"]
`, dir)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Start(cfg, Options{Logger: testLogger(t)})
	if !errors.Is(err, engine.ErrNodeIDMismatch) {
		t.Fatalf("node 2 on node 1's directory: %v, want ErrNodeIDMismatch", err)
	}
	want := "data directory " + dir + " belongs to node 1 of cluster " + id + ", not node 2"
	if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "another cluster") {
		t.Fatalf("error %q does not say %q (and only that)", err, want)
	}
	after, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Fatalf("the refused start changed %s", meta)
	}
}
