package broker

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/health"
	"github.com/wren-broker/wren/uplink"
)

// holdRecordBytes is the value size of the hold tests' records: with
// 1 MiB segments (the least segment.bytes), a few hundred make several.
const holdRecordBytes = 16 << 10

// holdCentral is fixedCentral with the address known before the far side
// first starts: an edge can point at it while it is away.
func holdCentral(t *testing.T) (string, func() *Broker) {
	port := freePorts(t, 1)[0]
	centralDir := t.TempDir()
	return fmt.Sprintf("127.0.0.1:%d", port), func() *Broker {
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
		cfg, err := config.Parse("central.toml", []byte(text))
		if err != nil {
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

// holdEdge starts an edge whose [uplink.central] forwards sensors\..* to
// far with max.backlog.bytes = budget under policy; retention looks
// every 50 ms.
func holdEdge(t *testing.T, far string, budget int64, policy string) *Broker {
	t.Helper()
	cfg := testConfig(t, t.TempDir(), fmt.Sprintf(`
[storage]
log.retention.check.interval.ms = 50

[uplink.central]
bootstrap.servers = [%q]
topics = ["sensors\\..*"]
remote.topic.prefix = "site-7."
max.backlog.bytes = %d
backlog.full.policy = %q
`, far, budget, policy))
	b, err := Start(cfg, Options{Logger: testLogger(t), UplinkRefresh: 100 * time.Millisecond, UplinkDownAfter: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// holdTopics creates topics of one partition with 1 MiB segments and
// retention.bytes = 1 MiB.
func holdTopics(t *testing.T, ctx context.Context, b *Broker, topics ...string) {
	t.Helper()
	_, adm := newClient(t, b)
	mib := strconv.Itoa(1 << 20)
	for _, topic := range topics {
		if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": &mib, "retention.bytes": &mib}, topic); err != nil {
			t.Fatal(err)
		}
	}
}

// holdRecords is n records of holdRecordBytes for topic, numbered from
// first.
func holdRecords(topic string, first, n int) []*kgo.Record {
	var rs []*kgo.Record
	for i := first; i < first+n; i++ {
		v := make([]byte, holdRecordBytes)
		copy(v, strconv.Itoa(i))
		rs = append(rs, &kgo.Record{Topic: topic, Key: []byte("k-" + strconv.Itoa(i)), Value: v})
	}
	return rs
}

// logStart is the local log start offset of topic's partition 0.
func logStart(t *testing.T, b *Broker, topic string) int64 {
	t.Helper()
	p := b.replicas.Partition(engine.TopicPartition{Topic: topic})
	if p == nil {
		t.Fatalf("no partition %s-0", topic)
	}
	return p.Log().LogStartOffset()
}

// holdProducer is a client whose batches stay small (many per segment).
func holdProducer(t *testing.T, b *Broker, opts ...kgo.Opt) *kgo.Client {
	cl, _ := newClient(t, b, append([]kgo.Opt{kgo.ProducerBatchMaxBytes(64 << 10), kgo.ProducerBatchCompression(kgo.NoCompression())}, opts...)...)
	return cl
}

// checkFarOffsets checks that the far partition 0 of topic holds the
// local offsets from, from+1, ... each once, in order.
func checkFarOffsets(t *testing.T, far []*kgo.Record, from int64) {
	t.Helper()
	for i, r := range far {
		var src uplink.Source
		for _, h := range r.Headers {
			if h.Key == uplink.HeaderSource {
				src, _ = uplink.ParseSource(h.Value)
			}
		}
		if src.Offset != from+int64(i) {
			t.Fatalf("far record %d comes from local offset %d, want %d", i, src.Offset, from+int64(i))
		}
	}
}

// TestUplinkRetentionHold: with the far side away since start (no
// cursor known), retention.bytes deletes nothing of a forwarded topic
// while its backlog is within max.backlog.bytes, though it deletes a
// topic the link does not forward; once the far side comes up the link
// forwards every record exactly once.
func TestUplinkRetentionHold(t *testing.T) {
	ctx := testContext(t)
	far, startCentral := holdCentral(t)
	edge := holdEdge(t, far, 64<<20, config.BacklogDropOldest)
	holdTopics(t, ctx, edge, "sensors.h", "other.h")
	cl := holdProducer(t, edge)
	const n = 300 // about 5 MiB: five segments
	if err := cl.ProduceSync(ctx, append(holdRecords("sensors.h", 0, n), holdRecords("other.h", 0, n)...)...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Retention ran: the topic no link forwards lost its oldest segments.
	pollFor(t, "retention on other.h", 20*time.Second, func() bool { return logStart(t, edge, "other.h") > 0 })
	// Another pass after that one, to be sure it ran over sensors.h too.
	before := logStart(t, edge, "other.h")
	if err := cl.ProduceSync(ctx, holdRecords("other.h", n, 100)...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pollFor(t, "retention on other.h again", 20*time.Second, func() bool { return logStart(t, edge, "other.h") > before })
	if s := logStart(t, edge, "sensors.h"); s != 0 {
		t.Fatalf("retention deleted sensors.h up to %d with the link's backlog within its budget", s)
	}
	if st := edge.UplinkStatus(); len(st) != 1 || st[0].Dropped != 0 || st[0].BacklogFull {
		t.Fatalf("status: %+v", st)
	}

	central := startCentral()
	_, cadm := newClient(t, central, kgo.MetadataMinAge(10*time.Millisecond))
	waitFarRecords(t, ctx, cadm, "site-7.sensors.h", n)
	checkFarOffsets(t, readFar(t, ctx, central, "site-7.sensors.h", 1, n)[0], 0)
	// Once forwarded, the records are retention's again.
	pollFor(t, "retention on sensors.h once forwarded", 20*time.Second, func() bool { return logStart(t, edge, "sensors.h") > 0 })
}

// TestUplinkRetentionDropOldest: past max.backlog.bytes under
// drop-oldest, retention deletes the oldest records not forwarded; every
// one is counted in the link's status, health and metrics, and the
// cluster is degraded.
func TestUplinkRetentionDropOldest(t *testing.T) {
	ctx := testContext(t)
	far, startCentral := holdCentral(t)
	edge := holdEdge(t, far, 2<<20, config.BacklogDropOldest)
	holdTopics(t, ctx, edge, "sensors.d")
	cl := holdProducer(t, edge)
	const n = 300
	if err := cl.ProduceSync(ctx, holdRecords("sensors.d", 0, n)...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var st []uplink.Status
	pollFor(t, "records dropped", 20*time.Second, func() bool {
		st = edge.UplinkStatus()
		return len(st) == 1 && st[0].Dropped > 0
	})
	// The link's budget stays held: the log keeps at least it (less the
	// segment rolled around it), more than retention.bytes alone keeps.
	lso := logStart(t, edge, "sensors.d")
	if size := edge.replicas.Partition(engine.TopicPartition{Topic: "sensors.d"}).Log().Size(); size <= 1<<20 {
		t.Fatalf("the log keeps %d bytes, no more than retention.bytes", size)
	}
	pollFor(t, "every dropped record counted", 20*time.Second, func() bool {
		st = edge.UplinkStatus()
		return st[0].Dropped == logStart(t, edge, "sensors.d")
	})
	lso = logStart(t, edge, "sensors.d")
	if st[0].DroppedBytes <= 0 || st[0].LastDrop.IsZero() {
		t.Fatalf("status: %+v", st[0])
	}
	h := clusterHealthHTTP(t, edge)
	if !h.Degraded || !slices.Contains(h.DegradedReasons, health.ReasonUplinkDropped) || len(h.Uplinks) != 1 ||
		h.Uplinks[0].DroppedRecords < lso || !h.Uplinks[0].RecentlyDropped {
		t.Fatalf("health: degraded %v %v, uplinks %+v", h.Degraded, h.DegradedReasons, h.Uplinks)
	}
	if v := scrape(t, edge)[`wren_uplink_dropped_records_total{link="central"}`]; v < float64(lso) {
		t.Fatalf("wren_uplink_dropped_records_total %v, want at least %d", v, lso)
	}

	// The far side comes up: it gets what is left, from the log start,
	// each once.
	central := startCentral()
	_, cadm := newClient(t, central, kgo.MetadataMinAge(10*time.Millisecond))
	lso = logStart(t, edge, "sensors.d")
	// What is left is forwarded, each once. Should retention drop more
	// while the link catches up, every record dropped is counted: the
	// far side then holds what the log kept, from its new start.
	var held, now int64
	defer func() {
		if t.Failed() {
			t.Logf("far topic holds %d records; the log starts at %d (%d when the far side came up); status %+v", held, now, lso, st[0])
		}
	}()
	pollFor(t, "the rest forwarded, each once", 30*time.Second, func() bool {
		held = farEnd(ctx, cadm, "site-7.sensors.d")
		now = logStart(t, edge, "sensors.d")
		st = edge.UplinkStatus()
		if held > n-now {
			t.Fatalf("far topic holds %d records, the log %d from %d: duplicates", held, n-now, now)
		}
		return held == n-now && st[0].Dropped == now
	})
	if now != lso {
		t.Logf("retention dropped %d more records (counted) while the link caught up", now-lso)
	}
	checkFarOffsets(t, readFar(t, ctx, central, "site-7.sensors.d", 1, int(n-now))[0], now)
}

// farEnd is the sum of a far topic's end offsets (0 while it cannot be
// listed).
func farEnd(ctx context.Context, adm *kadm.Client, topic string) int64 {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			total += o.Offset
		}
	})
	return total
}

// TestUplinkRetentionRefuseWrites: past max.backlog.bytes under
// refuse-writes, produce to the link's topics gets the retriable
// THROTTLING_QUOTA_EXCEEDED (counted, health degraded) and retention
// deletes nothing; once the far side is up and the link caught up,
// produce succeeds again and the far side holds every acknowledged
// record once.
func TestUplinkRetentionRefuseWrites(t *testing.T) {
	ctx := testContext(t)
	far, startCentral := holdCentral(t)
	edge := holdEdge(t, far, 2<<20, config.BacklogRefuseWrites)
	holdTopics(t, ctx, edge, "sensors.r")
	acked := 0
	refused := false
	// Raw produce requests: the refusal is seen as the broker gives it,
	// not after a client's retries.
	raw, _ := newClient(t, edge)
	produce := func(i int) int16 {
		t.Helper()
		rec := holdRecords("sensors.r", i, 1)[0]
		bb := batch.NewBuilder(batch.CompressionNone)
		bb.Append(batch.Record{Key: rec.Key, Value: rec.Value, Timestamp: time.Now().UnixMilli()})
		records, err := bb.Build()
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "sensors.r"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = records
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, raw)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	for i := 0; i < 1000 && !refused; i++ {
		switch code := produce(acked); code {
		case 0:
			acked++
		case kerr.ThrottlingQuotaExceeded.Code:
			refused = true
		default:
			t.Fatalf("produce %d: %v", i, kerr.ErrorForCode(code))
		}
	}
	if !refused || acked*holdRecordBytes < 2<<20 {
		t.Fatalf("refused %v after %d records", refused, acked)
	}
	st := edge.UplinkStatus()
	if len(st) != 1 || !st[0].BacklogFull || st[0].RefusedWrites == 0 || st[0].Dropped != 0 {
		t.Fatalf("status: %+v", st)
	}
	h := clusterHealthHTTP(t, edge)
	if !h.Degraded || !slices.Contains(h.DegradedReasons, health.ReasonUplinkBacklogFull) || !h.Uplinks[0].BacklogFull {
		t.Fatalf("health: degraded %v %v, uplinks %+v", h.Degraded, h.DegradedReasons, h.Uplinks)
	}
	if s := logStart(t, edge, "sensors.r"); s != 0 {
		t.Fatalf("retention deleted sensors.r up to %d under refuse-writes", s)
	}

	central := startCentral()
	_, cadm := newClient(t, central, kgo.MetadataMinAge(10*time.Millisecond))
	waitFarRecords(t, ctx, cadm, "site-7.sensors.r", int64(acked))
	pollFor(t, "writes taken again", 20*time.Second, func() bool {
		switch code := produce(acked); code {
		case 0:
			acked++
			return true
		case kerr.ThrottlingQuotaExceeded.Code:
			return false
		default:
			t.Fatalf("produce: %v", kerr.ErrorForCode(code))
			return false
		}
	})
	waitFarRecords(t, ctx, cadm, "site-7.sensors.r", int64(acked))
	checkFarOffsets(t, readFar(t, ctx, central, "site-7.sensors.r", 1, acked)[0], 0)
}

// TestUplinkRetentionHoldFollowers: on a three-node edge, the replicas
// that follow a forwarded partition delete nothing the leader's hold
// keeps (they take only the leader's log start), while every replica of
// a topic no link forwards applies retention.bytes.
func TestUplinkRetentionHoldFollowers(t *testing.T) {
	ctx := testContext(t)
	far := fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1)[0]) // nobody answers there
	brokers := startThreeBrokersOpts(t, fmt.Sprintf(`
[storage]
log.retention.check.interval.ms = 50

[uplink.central]
bootstrap.servers = [%q]
topics = ["sensors\\..*"]
remote.topic.prefix = "site-7."
max.backlog.bytes = %d
`, far, 64<<20), Options{UplinkRefresh: 100 * time.Millisecond})
	cl, adm := threeNodeAdmin(t, brokers)
	mib := strconv.Itoa(1 << 20)
	for _, topic := range []string{"sensors.f", "other.f"} {
		if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"segment.bytes": &mib, "retention.bytes": &mib}, topic); err != nil {
			t.Fatal(err)
		}
	}
	replicaStart := func(b *Broker, topic string) int64 {
		p := b.replicas.Partition(engine.TopicPartition{Topic: topic})
		if p == nil {
			return -1
		}
		return p.Log().LogStartOffset()
	}
	pcl, err := kgo.NewClient(append(cl.Opts(), kgo.ProducerBatchMaxBytes(64<<10), kgo.ProducerBatchCompression(kgo.NoCompression()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	const n = 300
	if err := pcl.ProduceSync(ctx, append(holdRecords("sensors.f", 0, n), holdRecords("other.f", 0, n)...)...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Every replica of other.f ran retention, twice after the records
	// were in.
	for round := 0; round < 2; round++ {
		before := make([]int64, len(brokers))
		for i, b := range brokers {
			before[i] = replicaStart(b, "other.f")
		}
		if err := pcl.ProduceSync(ctx, holdRecords("other.f", n+round*100, 100)...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		pollFor(t, "retention on every replica of other.f", 20*time.Second, func() bool {
			for i, b := range brokers {
				if replicaStart(b, "other.f") <= max(before[i], 0) {
					return false
				}
			}
			return true
		})
	}
	for _, b := range brokers {
		if s := replicaStart(b, "sensors.f"); s != 0 {
			t.Fatalf("node %d: sensors.f starts at %d: retention deleted what the link holds", b.cfg.NodeID, s)
		}
	}
}
