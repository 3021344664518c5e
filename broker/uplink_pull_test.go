package broker

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/wren-broker/wren/uplink"
)

// pullEdge starts an edge broker in dir whose [uplink.central] forwards
// sensors\..* to central as site-7.* and pulls central's
// site-7.commands.* into central.site-7.commands.*; extra is appended to
// the link's table.
func pullEdge(t *testing.T, dir string, central *Broker, extra string) *Broker {
	t.Helper()
	cfg := testConfig(t, dir, fmt.Sprintf(`
[uplink.central]
bootstrap.servers = [%q]
topics = ["sensors\\..*"]
remote.topic.prefix = "site-7."
pull.topics = ["site-7\\.commands\\..*"]
pull.local.topic.prefix = "central."
tail.settle.ms = 100
%s`, central.Addr().String(), extra))
	b, err := Start(cfg, Options{Logger: testLogger(t), UplinkRefresh: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// localHeld is what the topic's partitions hold together (end offsets).
func localHeld(ctx context.Context, adm *kadm.Client, topic string) int64 {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += max(o.Offset, 0) })
	return n
}

// TestUplinkPullExactlyOnce: the central cluster's site-7.commands.*
// topics are pulled into the edge's central.site-7.commands.* (made by
// the link with the far partition count), every record exactly once, in
// order, in the same partition, with its key, headers, timestamp and the
// far provenance, across a restart of the edge in the middle of pulling;
// a far topic created later is picked up; the pulled topics are never
// forwarded back; status shows them with their direction, and a pause
// stops the pull side too.
func TestUplinkPullExactlyOnce(t *testing.T) {
	ctx := testContext(t)
	central := startBroker(t, testConfig(t, t.TempDir(), ""))
	ccl, cadm := newClient(t, central, kgo.MetadataMinAge(10*time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	centralID := clusterOf(t, ctx, cadm)
	const far, local = "site-7.commands.a", "central.site-7.commands.a"
	if _, err := cadm.CreateTopic(ctx, 3, 1, nil, far); err != nil {
		t.Fatal(err)
	}
	produceUplink(t, ctx, ccl, far, 3, 0, 200)

	edgeDir := t.TempDir()
	edge := pullEdge(t, edgeDir, central, "")
	_, eadm := newClient(t, edge, kgo.MetadataMinAge(10*time.Millisecond))
	waitFarRecords(t, ctx, eadm, local, 600)
	tds, err := eadm.ListTopics(ctx, local)
	if err != nil || len(tds[local].Partitions) != 3 {
		t.Fatalf("local topic %s: %+v, %v; want 3 partitions", local, tds[local], err)
	}

	// More records, and the edge closed as soon as it holds some of
	// them: its restart resumes from what its own log holds.
	const second = 2000
	produceUplink(t, ctx, ccl, far, 3, 200, second)
	for localHeld(ctx, eadm, local) <= 600 && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	held := localHeld(ctx, eadm, local)
	if err := edge.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("the edge held %d of %d records when it closed", held, 3*(200+second))
	edge = pullEdge(t, edgeDir, central, "")
	_, eadm = newClient(t, edge, kgo.MetadataMinAge(10*time.Millisecond))
	waitFarRecords(t, ctx, eadm, local, 3*(200+second))
	checkFar(t, readFar(t, ctx, edge, local, 3, 3*(200+second)), centralID, far, 3, 200+second)

	// A far topic created after the link started is picked up.
	if _, err := cadm.CreateTopic(ctx, 1, 1, nil, "site-7.commands.b"); err != nil {
		t.Fatal(err)
	}
	produceUplink(t, ctx, ccl, "site-7.commands.b", 1, 0, 7)
	waitFarRecords(t, ctx, eadm, "central.site-7.commands.b", 7)
	checkFar(t, readFar(t, ctx, edge, "central.site-7.commands.b", 1, 7), centralID, "site-7.commands.b", 1, 7)

	// Nothing pulled went back up: the link forwards sensors.* only, and
	// the central side holds no topic made from the pulled ones.
	ctds, err := cadm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range ctds.Names() {
		if strings.Contains(name, "central.") {
			t.Fatalf("central holds %s: a pulled topic went back up", name)
		}
	}

	// Status: the four pulled partitions, active, caught up.
	var st []uplink.Status
	for ctx.Err() == nil {
		st = edge.UplinkStatus()
		done := len(st) == 1 && len(st[0].Partitions) == 4
		for _, p := range st[0].Partitions {
			done = done && p.Direction == uplink.DirectionPull && p.Active && p.Leader && p.Backlog == 0 && p.Err == "" && p.Next > 0 &&
				p.FarTopic == strings.TrimPrefix(p.Topic, "central.")
		}
		if done {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ctx.Err() != nil {
		t.Fatalf("uplink status never settled: %+v", st)
	}

	// Paused, the link pulls nothing; resumed, it pulls again.
	links := edge.links()
	links[0].SetPaused(true)
	for ctx.Err() == nil {
		s := links[0].Status()
		active := false
		for _, p := range s.Partitions {
			active = active || p.Active
		}
		if !active {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	produceUplink(t, ctx, ccl, "site-7.commands.b", 1, 7, 3)
	time.Sleep(500 * time.Millisecond) // five refreshes: a paused link must not pull
	if n := localHeld(ctx, eadm, "central.site-7.commands.b"); n != 7 {
		t.Fatalf("a paused link pulled: the local topic holds %d records, want 7", n)
	}
	links[0].SetPaused(false)
	waitFarRecords(t, ctx, eadm, "central.site-7.commands.b", 10)
	checkFar(t, readFar(t, ctx, edge, "central.site-7.commands.b", 1, 10), centralID, "site-7.commands.b", 1, 10)
}

// TestUplinkPullLoopAtRunTime: a loop that only regular expressions make
// (config time cannot see it) is refused at run time on both sides: the
// pull side refuses the far topic, naming the keys, and the push side
// never forwards the local topic; the local topic is not made.
func TestUplinkPullLoopAtRunTime(t *testing.T) {
	ctx := testContext(t)
	central := startBroker(t, testConfig(t, t.TempDir(), ""))
	ccl, cadm := newClient(t, central, kgo.MetadataMinAge(10*time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if _, err := cadm.CreateTopic(ctx, 1, 1, nil, "site-7.commands.a"); err != nil {
		t.Fatal(err)
	}
	produceUplink(t, ctx, ccl, "site-7.commands.a", 1, 0, 5)
	// topics also matches central.site-7.commands.a.
	cfg := testConfig(t, t.TempDir(), fmt.Sprintf(`
[uplink.central]
bootstrap.servers = [%q]
topics = ["central\\..*"]
pull.topics = ["site-7\\.commands\\..*"]
pull.local.topic.prefix = "central."
tail.settle.ms = 0
`, central.Addr().String()))
	edge, err := Start(cfg, Options{Logger: testLogger(t), UplinkRefresh: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { edge.Close() })
	var st []uplink.Status
	for ctx.Err() == nil {
		st = edge.UplinkStatus()
		if len(st) == 1 && len(st[0].Partitions) == 1 && strings.Contains(st[0].Partitions[0].Err, "no circular sending") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ctx.Err() != nil {
		t.Fatalf("the loop was never refused: %+v", st)
	}
	if p := st[0].Partitions[0]; p.Direction != uplink.DirectionPull || !strings.Contains(p.Err, "uplink.central.topics") || p.Active {
		t.Fatalf("refused partition: %+v", p)
	}
	ecl, eadm := newClient(t, edge)
	if tds, err := eadm.ListTopics(ctx); err != nil || tds.Has("central.site-7.commands.a") {
		t.Fatalf("the edge made the looping topic: %v, %v", tds.Names(), err)
	}
	// Made by hand and written to, the pull target is not forwarded by
	// the push side either, while another topic its topics match is.
	for _, name := range []string{"central.site-7.commands.a", "central.other"} {
		if _, err := eadm.CreateTopic(ctx, 1, 1, nil, name); err != nil {
			t.Fatal(err)
		}
		if err := ecl.ProduceSync(ctx, &kgo.Record{Topic: name, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	waitFarRecords(t, ctx, cadm, "central.other", 1)
	for range 5 { // five refreshes after central.other went
		time.Sleep(100 * time.Millisecond)
	}
	if tds, err := cadm.ListTopics(ctx); err != nil || tds.Has("central.site-7.commands.a") {
		t.Fatalf("the push side forwarded the pull target: %v, %v", tds.Names(), err)
	}
	for _, p := range edge.UplinkStatus()[0].Partitions {
		if p.Direction == uplink.DirectionPush && p.Topic != "central.other" {
			t.Fatalf("the push side took %s", p.Topic)
		}
	}
}

// TestUplinkPullFromLeaders: on a three-node edge each node pulls exactly
// the local partitions it leads (the local topic made once, by the
// controller node's link, with the far partition count), writing through
// itself as their leader with acks=all; leadership leaving a node moves
// the pulling to the new leaders, which resume from their local tails,
// so every record is there once, in order. `wren uplink status` shows the
// pulled partitions with their direction.
func TestUplinkPullFromLeaders(t *testing.T) {
	ctx := testContext(t)
	central := startBroker(t, testConfig(t, t.TempDir(), ""))
	ccl, cadm := newClient(t, central, kgo.MetadataMinAge(10*time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	centralID := clusterOf(t, ctx, cadm)
	const far, local, partitions = "site-7.commands.c", "central.site-7.commands.c", 6
	if _, err := cadm.CreateTopic(ctx, partitions, 1, nil, far); err != nil {
		t.Fatal(err)
	}
	produceUplink(t, ctx, ccl, far, partitions, 0, 100)
	brokers := startThreeBrokersOpts(t, fmt.Sprintf(`
[uplink.central]
bootstrap.servers = [%q]
pull.topics = ["site-7\\.commands\\..*"]
pull.local.topic.prefix = "central."
tail.settle.ms = 100
`, central.Addr().String()), Options{UplinkRefresh: 100 * time.Millisecond})
	_, eadm := threeNodeAdmin(t, brokers)
	waitFarRecords(t, ctx, eadm, local, partitions*100)

	checkLeaders := func() {
		t.Helper()
		pollFor(t, "each node pulling exactly the partitions it leads", 20*time.Second, func() bool {
			active := 0
			for _, b := range brokers {
				leads := map[int32]bool{}
				for _, p := range b.Controller().Image().Topic(local).Partitions {
					leads[p.Partition] = p.Leader == b.cfg.NodeID
				}
				for _, st := range b.UplinkStatus() {
					for _, p := range st.Partitions {
						if p.Direction != uplink.DirectionPull || p.Active != leads[p.Partition] {
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
	displaceLeaders(t, brokers, local, brokers[0].cfg.NodeID)
	checkLeaders()
	produceUplink(t, ctx, ccl, far, partitions, 100, 100)
	waitFarRecords(t, ctx, eadm, local, partitions*200)
	checkFar(t, readFar(t, ctx, brokers[1], local, partitions, partitions*200), centralID, far, partitions, 200)

	pollFor(t, "uplink status showing the pulled partitions", 20*time.Second, func() bool {
		code, out := uplinkStatusCLI(t, brokers[1])
		return code == 0 && strings.Count(out, " pulling ") == partitions
	})
}

// TestUplinkPullSIGKILL: a wren process pulling a backlog from the
// central broker is SIGKILLed three times in the middle of it and
// restarted; the local topic ends up holding every far record exactly
// once, in order, with key, value, headers, timestamp and provenance
// (the resume point is read back from the local log each time).
func TestUplinkPullSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the wren binary")
	}
	const (
		farTopic   = "site-7.commands.k"
		localTopic = "central.site-7.commands.k"
		partitions = 3
		perPart    = 6000
	)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	far := startFarBroker(t)
	acked, centralID := produceUplinkBacklog(t, ctx, far.proxy.addr(), farTopic, partitions, perPart)

	dir := t.TempDir()
	node := &clusterNode{id: 1, logf: filepath.Join(dir, "wren.log")}
	node.conf, node.addr = writeSingleNodeConfig(t, dir, filepath.Join(dir, "data"), "", fmt.Sprintf(`[logging]
level = "info"

[uplink.central]
bootstrap.servers = [%q]
pull.topics = ["site-7\\.commands\\..*"]
pull.local.topic.prefix = "central."
tail.settle.ms = 200
`, far.proxy.addr()))
	bin := wrenBinary(t)
	node.start(t, bin)
	defer node.kill()
	defer func() {
		if t.Failed() {
			uplinkLogTail(t, node.logf)
		}
	}()
	lcl, err := kgo.NewClient(kgo.SeedBrokers(node.addr), kgo.MetadataMinAge(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer lcl.Close()
	ladm := kadm.NewClient(lcl)
	total := int64(partitions * perPart)
	var at []int64
	last := int64(0)
	for _, frac := range []int64{20, 45, 70} {
		want := min(max(total*frac/100, last+total/20), total)
		deadline := time.Now().Add(2 * time.Minute)
		for localHeld(ctx, ladm, localTopic) < want {
			if time.Now().After(deadline) {
				t.Fatalf("timed out after 2m waiting for the local topic holding %d%% of the backlog (it holds %d)", frac, localHeld(ctx, ladm, localTopic))
			}
			time.Sleep(5 * time.Millisecond)
		}
		node.kill()
		node.start(t, bin)
		held := int64(0)
		for held == 0 && ctx.Err() == nil {
			if held = localHeld(ctx, ladm, localTopic); held == 0 {
				time.Sleep(5 * time.Millisecond)
			}
		}
		at = append(at, held)
		last = held
	}
	t.Logf("killed with the local topic holding about %v of %d records", at, total)
	snap := acked.snapshot()
	got := readFarTopic(t, ctx, []string{node.addr}, localTopic, lastOffsets(snap), 2*time.Minute)
	rep := checkUplinkFar(got, snap, centralID, farTopic)
	t.Logf("%v", rep)
	if rep.losses+rep.reorders+rep.damaged+rep.duplicates+rep.extra > 0 {
		t.Fatalf("%v", rep)
	}
}

// TestUplinkPullAtRunTime: `wren uplink add --pull-topics` makes a
// run-time link (cluster-wide configs uplink.NAME.KEY) that pulls; one
// whose names make a loop is refused with INVALID_CONFIG naming
// uplink.NAME.pull.topics, and nothing is set.
func TestUplinkPullAtRunTime(t *testing.T) {
	ctx := testContext(t)
	central := startBroker(t, testConfig(t, t.TempDir(), ""))
	ccl, cadm := newClient(t, central, kgo.MetadataMinAge(10*time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	centralID := clusterOf(t, ctx, cadm)
	if _, err := cadm.CreateTopic(ctx, 2, 1, nil, "cmd"); err != nil {
		t.Fatal(err)
	}
	produceUplink(t, ctx, ccl, "cmd", 2, 0, 20)
	edge, err := Start(testConfig(t, t.TempDir(), ""), Options{Logger: testLogger(t), UplinkRefresh: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { edge.Close() })
	_, eadm := newClient(t, edge, kgo.MetadataMinAge(10*time.Millisecond))

	code, out := uplinkCLI(t, edge, "add", "loop", "--far", central.Addr().String(), "--topics", "cmd", "--pull-topics", "cmd")
	if code == 0 || !strings.Contains(out, "uplink.loop.pull.topics") || !strings.Contains(out, "no circular sending") {
		t.Fatalf("a looping link added: exit %d: %s", code, out)
	}
	code, out = uplinkCLI(t, edge, "add", "central", "--far", central.Addr().String(), "--pull-topics", "cmd",
		"--set", "pull.local.topic.prefix=central.", "--set", "tail.settle.ms=100")
	if code != 0 {
		t.Fatalf("uplink add exited %d: %s", code, out)
	}
	waitFarRecords(t, ctx, eadm, "central.cmd", 40)
	checkFar(t, readFar(t, ctx, edge, "central.cmd", 2, 40), centralID, "cmd", 2, 20)
	if n := linkNames(edge); len(n) != 1 || n[0] != "central" {
		t.Fatalf("links %v", n)
	}
}
