package broker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestUplinkKafkaFarSide runs a link against a real Apache Kafka broker,
// in both directions at once, through the test's fault proxy:
// scripts/interop-uplink.sh starts the broker (scripts/kafka-run.sh) and
// sets
//
//	WREN_UPLINK_KAFKA        the broker's own address (the test's clients
//	                         dial it directly, whatever it advertises)
//	WREN_UPLINK_KAFKA_PROXY  the address the broker advertises, where the
//	                         test listens with its proxy, so that every
//	                         connection of the link goes through the proxy
//	WREN_UPLINK_KAFKA_DIR    the broker's kafka-run.sh directory, for its
//	                         restart
//
// Without WREN_UPLINK_KAFKA it skips; with it, a broker it cannot reach
// fails it. An edge wren process forwards sensors.* to Kafka's site-7.*
// and pulls Kafka's site-7.commands.* into central.site-7.commands.*,
// while a writer keeps writing to each side, through: the link cut for a
// while; Produce requests, Fetch requests and Fetch answers cut in the
// middle; Produce and Fetch answers swallowed; the edge SIGKILLed twice
// during a catch-up (a backlog written to both sides while the link was
// cut, forwarded at the link's cap); Kafka restarted (a clean stop and a
// start on the same data). Then a checker reads each receiving side
// read_committed and finds every acknowledged record exactly once, in its
// partition's order, with its key, value, headers, timestamp and a
// provenance header naming the source cluster, topic, partition and
// offset.
func TestUplinkKafkaFarSide(t *testing.T) {
	boot := os.Getenv("WREN_UPLINK_KAFKA")
	if boot == "" {
		t.Skip("WREN_UPLINK_KAFKA names no Apache Kafka broker (scripts/interop-uplink.sh starts one and runs this test)")
	}
	proxyAt, kdir := os.Getenv("WREN_UPLINK_KAFKA_PROXY"), os.Getenv("WREN_UPLINK_KAFKA_DIR")
	if proxyAt == "" || kdir == "" {
		t.Fatalf("WREN_UPLINK_KAFKA is set (%s) but WREN_UPLINK_KAFKA_PROXY (%q) or WREN_UPLINK_KAFKA_DIR (%q) is not", boot, proxyAt, kdir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	began := time.Now()
	step := func(format string, args ...any) {
		t.Logf("%5.1fs: %s", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
	}

	// Kafka, reached directly: it must answer.
	kcl, err := kgo.NewClient(kgo.SeedBrokers(boot), directDial(boot), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer kcl.Close()
	kadmc := kadm.NewClient(kcl)
	{
		rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
		m, err := kadmc.BrokerMetadata(rctx)
		rcancel()
		if err != nil || m.Cluster == "" {
			t.Fatalf("Apache Kafka at %s (WREN_UPLINK_KAFKA) does not answer: cluster %q, %v", boot, m.Cluster, err)
		}
	}
	kafkaID := clusterOf(t, ctx, kadmc)
	proxy := newKafkaProxyAt(t, proxyAt, boot)

	// Names of this run: the same broker may serve several runs.
	run := fmt.Sprintf("%d", time.Now().UnixNano()%1_000_000)
	const partitions = 3
	var (
		pushLocal = "sensors.k" + run
		pushFar   = "site-7." + pushLocal
		pullFar   = "site-7.commands.k" + run
		pullLocal = "central." + pullFar
	)
	if _, err := kadmc.CreateTopic(ctx, partitions, 1, nil, pullFar); err != nil {
		t.Fatal(err)
	}

	// The edge: one wren process. The cap slows the catch-ups down
	// enough that the SIGKILLs land in the middle of one.
	dir := t.TempDir()
	node := &clusterNode{id: 1, logf: filepath.Join(dir, "wren.log")}
	node.conf, node.addr = writeSingleNodeConfig(t, dir, filepath.Join(dir, "data"), "", fmt.Sprintf(`[logging]
level = "info"

[uplink.central]
bootstrap.servers = [%q]
topics = ["sensors\\..*"]
remote.topic.prefix = "site-7."
pull.topics = ["site-7\\.commands\\..*"]
pull.local.topic.prefix = "central."
max.bytes.per.second = 1000000
tail.settle.ms = 1000
`, proxyAt))
	bin := wrenBinary(t)
	node.start(t, bin)
	defer node.kill()
	defer func() {
		if t.Failed() {
			uplinkLogTail(t, node.logf)
		}
	}()
	ecl, err := kgo.NewClient(kgo.SeedBrokers(node.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer ecl.Close()
	eadm := kadm.NewClient(ecl)
	edgeID := clusterOf(t, ctx, eadm)
	if _, err := eadm.CreateTopic(ctx, partitions, 1, nil, pushLocal); err != nil {
		t.Fatal(err)
	}

	pushAcked, pullAcked := &uplinkAcked{}, &uplinkAcked{}
	// Writers: two records a partition every 20 ms on each side, numbered
	// from a new million each time one starts again.
	writers := 0
	startPush := func() *uplinkWriter {
		writers++
		return startUplinkWriter(ctx, ecl, pushLocal, partitions, writers*1_000_000, 2, 20*time.Millisecond, pushAcked)
	}
	startPull := func() *uplinkWriter {
		writers++
		return startUplinkWriter(ctx, kcl, pullFar, partitions, writers*1_000_000, 2, 20*time.Millisecond, pullAcked)
	}
	held := func(adm *kadm.Client, topic string) int64 {
		c, cc := context.WithTimeout(ctx, 5*time.Second)
		defer cc()
		return localHeld(c, adm, topic)
	}
	// caughtUp waits until each receiving side holds what its writer had
	// acknowledged when it was called.
	caughtUp := func(what string, timeout time.Duration) {
		t.Helper()
		push, pull := int64(pushAcked.count()), int64(pullAcked.count())
		pollFor(t, fmt.Sprintf("%s: Kafka holding %d forwarded records and the edge %d pulled ones", what, push, pull), timeout, func() bool {
			return held(kadmc, pushFar) >= push && held(eadm, pullLocal) >= pull
		})
		step("%s: caught up (%d pushed, %d pulled)", what, push, pull)
	}
	setFault := func(key int16, f func(p *kafkaProxy)) {
		proxy.mu.Lock()
		defer proxy.mu.Unlock()
		proxy.faultKey = key
		f(proxy)
	}
	proxyCount := func(f func(p *kafkaProxy) int) int {
		proxy.mu.Lock()
		defer proxy.mu.Unlock()
		return f(proxy)
	}

	pw, lw := startPush(), startPull()
	pollFor(t, "records flowing both ways", 90*time.Second, func() bool {
		return held(kadmc, pushFar) >= 300 && held(eadm, pullLocal) >= 300
	})
	step("records flowing both ways")

	// 1. The link cut while both sides keep taking writes.
	proxy.cut()
	outage := time.NewTimer(5 * time.Second)
	<-outage.C
	proxy.restore()
	caughtUp("after a cut of 5s", 2*time.Minute)

	// 2. Requests and answers cut in the middle: Produce requests (the
	// push side), Fetch requests and Fetch answers (the pull side).
	for _, k := range []struct {
		name   string
		key    int16
		answer bool
	}{{"produce request", int16(kmsg.Produce), false}, {"fetch request", int16(kmsg.Fetch), false}, {"fetch answer", int16(kmsg.Fetch), true}} {
		for i := range 2 {
			before := proxyCount(func(p *kafkaProxy) int { return p.midCut + p.midAnswerCut })
			setFault(k.key, func(p *kafkaProxy) {
				if k.answer {
					p.midAnswer++
				} else {
					p.midProduce++
				}
			})
			pollFor(t, fmt.Sprintf("%s %d cut in the middle", k.name, i+1), time.Minute, func() bool {
				return proxyCount(func(p *kafkaProxy) int { return p.midCut + p.midAnswerCut }) > before
			})
		}
	}
	caughtUp("after produce requests, fetch requests and fetch answers cut in the middle", 2*time.Minute)

	// 3. Answers swallowed until the connections close: Produce, then
	// Fetch.
	for _, key := range []int16{int16(kmsg.Produce), int16(kmsg.Fetch)} {
		setFault(key, func(p *kafkaProxy) { p.dropAnswers, p.dropped = true, 0 })
		pollFor(t, fmt.Sprintf("answers of api key %d swallowed", key), time.Minute, func() bool {
			return proxyCount(func(p *kafkaProxy) int { return p.dropped }) >= 1
		})
		proxy.closeAll()
		setFault(key, func(p *kafkaProxy) { p.dropAnswers = false })
	}
	caughtUp("after produce and fetch answers swallowed", 2*time.Minute)

	// 4. A backlog on both sides (the link cut while it is written), then
	// the edge SIGKILLed twice in the middle of its catch-up.
	pw.stop(t)
	proxy.cut()
	pushBefore, pullBefore := held(kadmc, pushFar), held(eadm, pullLocal)
	const backlog = 20_000 // a partition, each side: about 3 s at the cap
	writers++
	produceAcked(t, ctx, ecl, pushLocal, partitions, writers*1_000_000, backlog, pushAcked)
	writers++
	produceAcked(t, ctx, kcl, pullFar, partitions, writers*1_000_000, backlog, pullAcked)
	proxy.restore()
	step("a backlog of %d records a side written with the link cut", partitions*backlog)
	for _, frac := range []int64{20, 55} {
		want := int64(partitions*backlog) * frac / 100
		pollFor(t, fmt.Sprintf("%d%% of the backlog forwarded and pulled", frac), 2*time.Minute, func() bool {
			return held(kadmc, pushFar)-pushBefore >= want && held(eadm, pullLocal)-pullBefore >= want
		})
		pushed, pulled := held(kadmc, pushFar)-pushBefore, held(eadm, pullLocal)-pullBefore
		node.kill()
		step("edge SIGKILLed with about %d forwarded and %d pulled of the backlog's %d a side", pushed, pulled, partitions*backlog)
		node.start(t, bin)
	}
	pw = startPush()
	caughtUp("after two SIGKILLs of the edge in a catch-up", 3*time.Minute)

	// 5. Kafka restarted on the same data, the edge's writer going on.
	lw.stop(t)
	out, err := exec.CommandContext(ctx, "../scripts/kafka-run.sh", "restart", kdir).CombinedOutput()
	if err != nil {
		t.Fatalf("kafka-run.sh restart: %v\n%s", err, out)
	}
	step("Kafka restarted (%s)", strings.TrimSpace(string(out)))
	lw = startPull()
	caughtUp("after Kafka's restart", 3*time.Minute)

	pw.stop(t)
	lw.stop(t)
	step("writers stopped")
	pushSnap, pullSnap := pushAcked.snapshot(), pullAcked.snapshot()
	far := readFarTopic(t, ctx, []string{boot}, pushFar, lastOffsets(pushSnap), 2*time.Minute, directDial(boot))
	pushRep := checkUplinkFar(far, pushSnap, edgeID, pushLocal)
	local := readFarTopic(t, ctx, []string{node.addr}, pullLocal, lastOffsets(pullSnap), 2*time.Minute)
	pullRep := checkUplinkFar(local, pullSnap, kafkaID, pullFar)
	proxy.mu.Lock()
	step("proxy: %d requests and %d answers cut in the middle", proxy.midCut, proxy.midAnswerCut)
	proxy.mu.Unlock()
	step("push, wren to Kafka (read_committed): %v", pushRep)
	step("pull, Kafka to wren (read_committed): %v", pullRep)
	for _, r := range []struct {
		what string
		rep  *uplinkReport
	}{{"push", pushRep}, {"pull", pullRep}} {
		if r.rep.losses+r.rep.duplicates+r.rep.reorders+r.rep.damaged > 0 || r.rep.acked == 0 {
			t.Errorf("%s: %v", r.what, r.rep)
		}
	}
}

// produceAcked writes n records to each partition of topic, numbered from
// first, in requests of 1,000 a partition, and keeps them as acknowledged.
func produceAcked(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, partitions int32, first, n int, acked *uplinkAcked) {
	t.Helper()
	for i := first; i < first+n; i += 1000 {
		var rs []*kgo.Record
		for j := i; j < min(i+1000, first+n); j++ {
			for p := range partitions {
				rs = append(rs, uplinkRecord(topic, p, j))
			}
		}
		res := cl.ProduceSync(ctx, rs...)
		if err := res.FirstErr(); err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			acked.add(r.Record)
		}
	}
}
