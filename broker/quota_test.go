package broker

import (
	"bytes"
	"crypto/rand"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Client quotas (KIP-546 through kadm, KIP-219 throttling) on three
// nodes, with franz-go clients.

// throttles records the throttles franz-go reports (HookBrokerThrottle).
type throttles struct {
	mu  sync.Mutex
	got []time.Duration
}

func (h *throttles) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got = append(h.got, d)
}

func (h *throttles) seen() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Duration(nil), h.got...)
}

// TestClientQuotasThreeNodes: a producer_byte_rate set through kadm for
// one client id reaches every node's image (described on each); a
// producer of that client id sending past it gets throttle_time_ms in its
// responses and the throttle counted in the metrics, while a producer of
// another client id sending the same is not throttled. The same for a
// consumer_byte_rate and consumers. The windows are
// short (2 of 1 s) so the throttles are seconds at most; nothing measures
// time, only the throttles the responses carry.
func TestClientQuotasThreeNodes(t *testing.T) {
	brokers := startThreeNodes(t, func(_ int, text string) string {
		return strings.Replace(text, "[broker]\n", "[broker]\nquota.window.num = 2\nquota.window.size.seconds = 1\n", 1)
	}, nil)
	ctx := testContext(t)
	_, adm := threeNodeAdmin(t, brokers)

	const rate = 10 << 10 // bytes per second
	slow := "slow-producer"
	altered, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &slow}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: rate}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range altered {
		if a.Err != nil {
			t.Fatalf("alter %v: %v %s", a.Entity, a.Err, a.ErrMessage)
		}
	}
	// Every node answers with the quota, at once: the change waited for
	// them all.
	for _, b := range brokers {
		c, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.RequestTimeoutOverhead(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		comp := kmsg.NewDescribeClientQuotasRequestComponent()
		comp.EntityType, comp.MatchType = "client-id", 2
		req.Components = append(req.Components, comp)
		resp, err := c.SeedBrokers()[0].Request(ctx, req)
		c.Close()
		if err != nil {
			t.Fatalf("describe on node %d: %v", b.Controller().NodeID(), err)
		}
		r := resp.(*kmsg.DescribeClientQuotasResponse)
		if r.ErrorCode != 0 || len(r.Entries) != 1 || *r.Entries[0].Entity[0].Name != slow || len(r.Entries[0].Values) != 1 ||
			r.Entries[0].Values[0].Key != "producer_byte_rate" || r.Entries[0].Values[0].Value != rate {
			t.Fatalf("describe on node %d: %v %+v", b.Controller().NodeID(), kerr.ErrorForCode(r.ErrorCode), r.Entries)
		}
	}

	if _, err := adm.CreateTopics(ctx, 1, 3, nil, "quota"); err != nil {
		t.Fatal(err)
	}
	produce := func(clientID string) []time.Duration {
		t.Helper()
		h := &throttles{}
		var seeds []string
		for _, b := range brokers {
			seeds = append(seeds, b.Addr().String())
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ClientID(clientID), kgo.WithHooks(h),
			kgo.DefaultProduceTopic("quota"), kgo.RequestTimeoutOverhead(10*time.Second), kgo.ProducerLinger(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		// Three rounds of 3 × 10 KiB: the first round alone is past what a
		// second of the window lets through.
		for round := range 3 {
			var recs []*kgo.Record
			for range 3 {
				v := make([]byte, 10<<10)
				rand.Read(v) // incompressible: the request carries every byte
				recs = append(recs, &kgo.Record{Value: v})
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatalf("%s round %d: %v", clientID, round, err)
			}
		}
		return h.seen()
	}
	if got := produce("fast-producer"); len(got) != 0 {
		t.Fatalf("a client id without a quota was throttled: %v", got)
	}
	got := produce(slow)
	if len(got) == 0 {
		t.Fatal("a producer past its producer_byte_rate saw no throttle_time_ms")
	}
	t.Logf("throttles of %s: %v", slow, got)
	for _, d := range got {
		// Kafka's bound for a byte rate here: the whole window, 2 s.
		if d <= 0 || d > 2*time.Second {
			t.Fatalf("throttles %v, want each in (0, 2s]", got)
		}
	}
	// The server counts a throttle once its response is on the way, so
	// the client may read the response first: poll until the metrics
	// catch up with what the client saw.
	var throttled int
	countThrottled := func() bool {
		throttled = 0
		for _, b := range brokers {
			var buf bytes.Buffer
			b.ops.metrics.WritePrometheus(&buf)
			for _, line := range strings.Split(buf.String(), "\n") {
				if v, ok := strings.CutPrefix(line, `wren_kafka_quota_throttled_responses_total{quota="produce"} `); ok {
					n, err := strconv.Atoi(v)
					if err != nil {
						t.Fatalf("metrics line %q", line)
					}
					throttled += n
				}
			}
		}
		return throttled >= len(got)
	}
	pollFor(t, "the metrics counting every throttled produce response the client saw", 10*time.Second, countThrottled)

	// A consumer_byte_rate holds back a consumer of that client id (the
	// fetch response's bytes count); another client id reads freely.
	slowConsumer := "slow-consumer"
	altered, err = adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &slowConsumer}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: rate}},
	}})
	if err != nil || altered[0].Err != nil {
		t.Fatalf("consumer quota: %v %+v", err, altered)
	}
	consume := func(clientID string) []time.Duration {
		t.Helper()
		h := &throttles{}
		var seeds []string
		for _, b := range brokers {
			seeds = append(seeds, b.Addr().String())
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ClientID(clientID), kgo.WithHooks(h),
			kgo.ConsumeTopics("quota"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RequestTimeoutOverhead(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for n := 0; n < 18; {
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("%s after %d records: %v", clientID, n, err)
			}
			n += fs.NumRecords()
		}
		return h.seen()
	}
	if got := consume("fast-consumer"); len(got) != 0 {
		t.Fatalf("a consumer without a quota was throttled: %v", got)
	}
	if got := consume(slowConsumer); len(got) == 0 {
		t.Fatal("a consumer past its consumer_byte_rate saw no throttle_time_ms")
	} else {
		t.Logf("throttles of %s: %v", slowConsumer, got)
	}

	// Removed: described nowhere.
	altered, err = adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &slow}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Remove: true}},
	}, {
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &slowConsumer}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Remove: true}},
	}})
	if err != nil || altered[0].Err != nil || altered[1].Err != nil {
		t.Fatalf("remove: %v %+v", err, altered)
	}
	described, err := adm.DescribeClientQuotas(ctx, false, nil)
	if err != nil || len(described) != 0 {
		t.Fatalf("after the removal: %v %+v", err, described)
	}
}
