package broker

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestUplinkCleanerHold: with the far side away, the log cleaner compacts
// a compacted topic no link forwards but leaves every record of a
// forwarded one (the link has not sent them); once the far side is up,
// every record, each superseded value too, is forwarded once, and then
// the forwarded topic is compacted.
func TestUplinkCleanerHold(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a few MiB and waits for the cleaner")
	}
	ctx := testContext(t)
	far, startCentral := holdCentral(t)
	cfg := testConfig(t, t.TempDir(), fmt.Sprintf(`
[storage]
log.cleaner.backoff.ms = 50

[uplink.central]
bootstrap.servers = [%q]
topics = ["sensors\\..*"]
remote.topic.prefix = "site-7."
max.backlog.bytes = %d
`, far, 64<<20))
	edge, err := Start(cfg, Options{Logger: testLogger(t), UplinkRefresh: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { edge.Close() })
	cl, adm := newClient(t, edge, kgo.ProducerBatchMaxBytes(64<<10), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for _, topic := range []string{"sensors.k", "other.k"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
			"cleanup.policy":            kmsg.StringPtr("compact"),
			"segment.bytes":             kmsg.StringPtr("1048576"),
			"min.cleanable.dirty.ratio": kmsg.StringPtr("0.01"),
		}, topic); err != nil {
			t.Fatal(err)
		}
	}
	const keys, rounds, fillers = 50, 40, 1100
	value := bytes.Repeat([]byte("v"), 1000)
	write := func(topic string) {
		var rs []*kgo.Record
		for r := 0; r < rounds; r++ {
			for k := 0; k < keys; k++ {
				rs = append(rs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint("key-", k)), Value: append([]byte(fmt.Sprint(r, "|")), value...)})
			}
		}
		// The active segment is never cleaned: more than a segment of
		// one other key pushes the rounds out of it.
		for i := 0; i < fillers; i++ {
			rs = append(rs, &kgo.Record{Topic: topic, Key: []byte("filler"), Value: value})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// sensors.k first: the pass that compacts other.k saw it whole.
	write("sensors.k")
	write("other.k")
	const total = keys*rounds + fillers
	compacted := func(topic string) bool {
		n := 0
		for _, r := range readAllRecords(t, edge, topic) {
			if string(r.Key) != "filler" {
				n++
			}
		}
		return n == keys
	}
	pollFor(t, "the cleaner compacting other.k", 60*time.Second, func() bool { return compacted("other.k") })
	if n := len(readAllRecords(t, edge, "sensors.k")); n != total {
		t.Fatalf("sensors.k holds %d records, want %d: the cleaner compacted what the link has not forwarded", n, total)
	}

	central := startCentral()
	_, cadm := newClient(t, central, kgo.MetadataMinAge(10*time.Millisecond))
	waitFarRecords(t, ctx, cadm, "site-7.sensors.k", total)
	checkFarOffsets(t, readFar(t, ctx, central, "site-7.sensors.k", 1, total)[0], 0)
	pollFor(t, "the cleaner compacting sensors.k once forwarded", 60*time.Second, func() bool { return compacted("sensors.k") })
}
