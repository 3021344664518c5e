package broker

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCompactedTopicKeepsLatestPerKey: a topic with cleanup.policy=compact
// on a running broker; the background cleaner leaves exactly the latest
// record of every key, at its original offset.
func TestCompactedTopicKeepsLatestPerKey(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a few MiB and waits for the cleaner")
	}
	b := startBroker(t, testConfig(t, t.TempDir(), "[storage]\nlog.cleaner.backoff.ms = 50\n"))
	ctx := testContext(t)
	cl, adm := newClient(t, b, kgo.DefaultProduceTopic("compacted"), kgo.ProducerBatchMaxBytes(64<<10),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // 4 MiB: several segments
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
		"cleanup.policy":            kmsg.StringPtr("compact"),
		"segment.bytes":             kmsg.StringPtr("1048576"),
		"min.cleanable.dirty.ratio": kmsg.StringPtr("0.01"),
	}, "compacted"); err != nil {
		t.Fatal(err)
	}
	const keys, rounds = 100, 40
	latest := map[string]int64{}
	value := bytes.Repeat([]byte("v"), 1000)
	for r := 0; r < rounds; r++ {
		var batch []*kgo.Record
		for k := 0; k < keys; k++ {
			batch = append(batch, &kgo.Record{Key: []byte(fmt.Sprint("key-", k)), Value: append([]byte(fmt.Sprint(r, "|")), value...)})
		}
		res := cl.ProduceSync(ctx, batch...)
		if err := res.FirstErr(); err != nil {
			t.Fatal(err)
		}
		for _, pr := range res {
			latest[string(pr.Record.Key)] = pr.Record.Offset
		}
	}
	// The active segment is never cleaned (Kafka's rule): push the rounds
	// out of it with more than a segment of one other key.
	var filler []*kgo.Record
	for i := 0; i < 1100; i++ {
		filler = append(filler, &kgo.Record{Key: []byte("filler"), Value: value})
	}
	if err := cl.ProduceSync(ctx, filler...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Wait, with a deadline, until a full read shows one record per key,
	// at the offset of that key's latest record.
	deadline := time.Now().Add(60 * time.Second)
	for {
		seen := map[string][]int64{}
		for _, r := range readAllRecords(t, b, "compacted") {
			if string(r.Key) != "filler" {
				seen[string(r.Key)] = append(seen[string(r.Key)], r.Offset)
			}
		}
		done := len(seen) == keys
		for k, offs := range seen {
			done = done && len(offs) == 1
			if offs[len(offs)-1] != latest[k] {
				t.Fatalf("key %s: newest record read at %d, its latest write was at %d", k, offs[len(offs)-1], latest[k])
			}
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s the log still holds more than one record for some of %d keys", keys)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readAllRecords reads a one-partition topic from its start to its end.
func readAllRecords(t *testing.T, b *Broker, topic string) []*kgo.Record {
	t.Helper()
	ctx := testContext(t)
	cl, adm := newClient(t, b, kgo.ConsumeTopics(topic), kgo.FetchMaxWait(50*time.Millisecond))
	defer cl.Close()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	var out []*kgo.Record
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, r)
			if r.Offset >= end.Offset-1 {
				done = true
			}
		})
		if done {
			return out
		}
	}
}
