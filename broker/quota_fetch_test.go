package broker

import (
	"crypto/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestQuotaFetchThrottledEmpty: a consumer_byte_rate holds a consumer
// back as Kafka's handleFetchRequest does. A franz-go consumer of that
// client id reads every record of a topic holding several times what the
// quota lets through in its window, so it makes progress, and it is told
// to wait (throttle_time_ms) on the way. A Fetch that the quota throttles
// is answered with the throttle and no topics, not with the records; one
// that it lets through carries records and no throttle. Nothing measures
// time: only what the responses carry.
func TestQuotaFetchThrottledEmpty(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), "")
	cfg.QuotaWindowNum, cfg.QuotaWindowSizeSeconds = 3, 1
	b := startBroker(t, cfg)
	cl, adm := newClient(t, b)
	ctx := testContext(t)
	const topic = "quota-fetch"
	createTopic(t, adm, topic, 1, nil)

	// 96 KiB of records against 16 KiB/s, 32 KiB in the quota's window
	// (quota.window.num - 1 samples of one second).
	const rate, records, size = 16 << 10, 96, 1 << 10
	// Batches of 4 KiB, so that fetches can be held to the quota's bound.
	for range records / 4 {
		var batch []*kgo.Record
		for range 4 {
			// Random bytes: compression does not shrink them below the
			// quota.
			value := make([]byte, size)
			rand.Read(value)
			batch = append(batch, &kgo.Record{Topic: topic, Value: value})
		}
		if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	slow, big := "slow-reader", "big-reader"
	altered, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &slow}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: rate}},
	}, {
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &big}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: rate}},
	}})
	if err != nil || altered[0].Err != nil || altered[1].Err != nil {
		t.Fatalf("consumer quota: %v %+v", err, altered)
	}
	described := func() bool {
		d, err := adm.DescribeClientQuotas(ctx, false, nil)
		return err == nil && len(d) == 2
	}
	pollFor(t, "the quota in the image", 10*time.Second, described)

	h := &throttles{}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.ClientID(slow), kgo.WithHooks(h),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RequestTimeoutOverhead(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	for n := 0; n < records; {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("after %d records: %v", n, err)
		}
		n += fs.NumRecords()
	}
	if got := h.seen(); len(got) == 0 {
		t.Fatal("a consumer reading past its consumer_byte_rate saw no throttle_time_ms")
	} else {
		t.Logf("throttles: %v", got)
	}
	consumer.Close()

	// By hand, with the same client id (the same rate): fetch from the
	// start until a fetch is throttled; each answer is either records
	// without a throttle or a throttle without topics.
	raw, _ := newClient(t, b, kgo.ClientID(slow))
	fetch := func() *kmsg.FetchResponse {
		f := kmsg.NewPtrFetchRequest()
		f.ReplicaID, f.MaxBytes, f.MaxWaitMillis = -1, 1<<20, 0
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LogStartOffset = 1<<20, -1, -1
		ft.Partitions = append(ft.Partitions, fp)
		f.Topics = append(f.Topics, ft)
		return direct[*kmsg.FetchResponse](t, raw, f)
	}
	var served, throttled int
	pollFor(t, "a throttled fetch", 30*time.Second, func() bool {
		r := fetch()
		switch {
		case r.ThrottleMillis > 0:
			if len(r.Topics) != 0 {
				t.Fatalf("a fetch throttled for %d ms carries %d topics", r.ThrottleMillis, len(r.Topics))
			}
			throttled++
		case len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 || len(r.Topics[0].Partitions[0].RecordBatches) == 0:
			t.Fatalf("an unthrottled fetch from the start carries no records: %+v", r.Topics)
		default:
			if n := len(r.Topics[0].Partitions[0].RecordBatches); n > rate*2 {
				t.Fatalf("a fetch carries %d bytes, past the %d the quota lets through in its window", n, rate*2)
			}
			served++
		}
		return throttled > 0
	})
	t.Logf("fetches served before the throttle: %d", served)

	// One record batch larger than the quota lets through in its window:
	// answered empty it would be throttled for ever (as in Kafka), so it
	// goes out with its records and a throttle, and the consumer moves.
	const bigTopic = "quota-fetch-big"
	createTopic(t, adm, bigTopic, 1, nil)
	value := make([]byte, 3*rate)
	rand.Read(value)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: bigTopic, Value: value}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	hb := &throttles{}
	bigConsumer, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.ClientID(big), kgo.WithHooks(hb),
		kgo.ConsumeTopics(bigTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RequestTimeoutOverhead(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer bigConsumer.Close()
	for n := 0; n < 1; {
		fs := bigConsumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("the batch past the quota's window: %v", err)
		}
		n += fs.NumRecords()
	}
	pollFor(t, "the throttle of the batch past the quota's window", 10*time.Second, func() bool { return len(hb.seen()) > 0 })
}
