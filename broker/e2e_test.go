package broker

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestEndToEndWithFranzGo: a real client against a real broker on a free
// loopback port: a 3-partition topic, 100,000 records with each codec
// (keys, headers, varied sizes), consumed back byte for byte in
// per-partition order; ListOffsets by timestamp; DeleteRecords; a config
// altered and described; then a restart of the broker on the same data
// directory and a full read again.
func TestEndToEndWithFranzGo(t *testing.T) {
	perCodec := 100_000
	if testing.Short() {
		perCodec = 5_000
	}
	dir := t.TempDir()
	cfg := testConfig(t, dir, "")
	b := startBroker(t, cfg)
	ctx := testContext(t)
	_, adm := newClient(t, b)
	const topic = "e2e"
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
	}{
		{"none", kgo.NoCompression()}, {"gzip", kgo.GzipCompression()}, {"snappy", kgo.SnappyCompression()},
		{"lz4", kgo.Lz4Compression()}, {"zstd", kgo.ZstdCompression()},
	}
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var sent []*kgo.Record
	for ci, c := range codecs {
		cl, _ := newClient(t, b, kgo.ProducerBatchCompression(c.codec), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		var batch []*kgo.Record
		for i := 0; i < perCodec; i++ {
			n := ci*perCodec + i
			r := &kgo.Record{
				Partition: int32(n % 3),
				Key:       []byte(fmt.Sprintf("key-%d", n%1000)),
				Value:     bytes.Repeat([]byte{byte(n)}, 10+n%200),
				Headers:   []kgo.RecordHeader{{Key: "codec", Value: []byte(c.name)}, {Key: "n", Value: []byte(fmt.Sprint(n))}},
				Timestamp: base.Add(time.Duration(n) * time.Millisecond),
			}
			if n%97 == 0 {
				r.Key = nil
			}
			batch = append(batch, r)
		}
		if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", c.name, err)
		}
		sent = append(sent, batch...)
		cl.Close()
	}
	checkAll := func(b *Broker, from map[int32]int64) {
		t.Helper()
		want := map[int32][]*kgo.Record{}
		for _, r := range sent {
			if r.Offset >= from[r.Partition] {
				want[r.Partition] = append(want[r.Partition], r)
			}
		}
		offsets := map[string]map[int32]kgo.Offset{topic: {}}
		for p := int32(0); p < 3; p++ {
			offsets[topic][p] = kgo.NewOffset().At(from[p])
		}
		cl, _ := newClient(t, b, kgo.ConsumePartitions(offsets), kgo.FetchMaxWait(200*time.Millisecond))
		got := map[int32][]*kgo.Record{}
		total, wantTotal := 0, 0
		for _, w := range want {
			wantTotal += len(w)
		}
		for total < wantTotal {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("consumed %d of %d records: %v", total, wantTotal, err)
			}
			fs.EachError(func(_ string, p int32, err error) { t.Fatalf("fetch partition %d: %v", p, err) })
			fs.EachRecord(func(r *kgo.Record) {
				got[r.Partition] = append(got[r.Partition], r)
				total++
			})
		}
		for p, w := range want {
			g := got[p]
			if len(g) != len(w) {
				t.Fatalf("partition %d: %d records, want %d", p, len(g), len(w))
			}
			for i := range w {
				if g[i].Offset != w[i].Offset || !bytes.Equal(g[i].Key, w[i].Key) || (g[i].Key == nil) != (w[i].Key == nil) ||
					!bytes.Equal(g[i].Value, w[i].Value) || !g[i].Timestamp.Equal(w[i].Timestamp) || len(g[i].Headers) != len(w[i].Headers) {
					t.Fatalf("partition %d record %d: got offset %d key %q, want offset %d key %q", p, i, g[i].Offset, g[i].Key, w[i].Offset, w[i].Key)
				}
				for h := range w[i].Headers {
					if g[i].Headers[h].Key != w[i].Headers[h].Key || !bytes.Equal(g[i].Headers[h].Value, w[i].Headers[h].Value) {
						t.Fatalf("partition %d record %d header %d differs", p, i, h)
					}
				}
			}
		}
	}
	checkAll(b, nil)

	// ListOffsets by timestamp: the first record at or after it.
	probe := sent[len(sent)/2]
	lo, err := adm.ListOffsetsAfterMilli(ctx, probe.Timestamp.UnixMilli(), topic)
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 3; p++ {
		o, _ := lo.Lookup(topic, p)
		var want int64 = -1
		for _, r := range sent {
			if r.Partition == p && !r.Timestamp.Before(probe.Timestamp) {
				want = r.Offset
				break
			}
		}
		if o.Err != nil || o.Offset != want {
			t.Fatalf("offset after %v on partition %d: %d (%v), want %d", probe.Timestamp, p, o.Offset, o.Err, want)
		}
	}

	// DeleteRecords on partition 1.
	cut := int64(1234)
	dr, err := adm.DeleteRecords(ctx, kadm.Offsets{topic: {1: {Topic: topic, Partition: 1, At: cut}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := dr.Lookup(topic, 1); r.Err != nil || r.LowWatermark != cut {
		t.Fatalf("delete records: %+v", r)
	}

	// Alter a config and describe it.
	alter, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("86400000")}}, topic)
	if err == nil {
		err = alter[0].Err
	}
	if err != nil {
		t.Fatal(err)
	}
	rc, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range rc[0].Configs {
		if c.Key == "retention.ms" && c.Value != nil && *c.Value == "86400000" && c.Source == 1 /* DYNAMIC_TOPIC_CONFIG */ {
			found = true
		}
	}
	if !found {
		t.Fatalf("retention.ms not described as set: %+v", rc[0].Configs)
	}

	// Restart on the same directory: everything reads back, the deleted
	// records stay deleted and the config stays altered.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2 := startBroker(t, testConfig(t, dir, ""))
	checkAll(b2, map[int32]int64{1: cut})
	_, adm2 := newClient(t, b2)
	rc, err = adm2.DescribeTopicConfigs(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc[0].Configs {
		if c.Key == "retention.ms" && (c.Value == nil || *c.Value != "86400000") {
			t.Fatalf("retention.ms after restart: %v", c.Value)
		}
	}
}
