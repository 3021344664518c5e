package kafka

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func newTestQuotaManager() (*quotaManager, *fakeClock) {
	clock := &fakeClock{}
	clock.ns.Store(int64(1000 * time.Hour))
	return newQuotaManager(DefaultQuotaWindowNum, DefaultQuotaWindowSize, clock.now), clock
}

// TestQuotaRateThrottle: Kafka's Rate and throttle time. A first burst
// is measured over the whole window less one sample (10 s), so a rate of
// 1000 B/s lets 10 000 bytes through at once; 15 000 bytes in the first
// half second are (15000/10.5 - 1000)/1000 * 10.5 s = 4.5 s over. Once the
// window has passed, the rate starts from nothing again.
func TestQuotaRateThrottle(t *testing.T) {
	m, clock := newTestQuotaManager()
	l := quotaLimit{rate: m.rate(quotaSensorKey{typ: quotaProduce, client: "c"}), bound: 1000}
	max := time.Duration(m.window.full())
	if got := m.record(&l, 5000, max); got != 0 {
		t.Fatalf("5000 bytes at once: throttle %v, want none", got)
	}
	clock.advance(500 * time.Millisecond)
	if got := m.record(&l, 10000, max); got != 4500*time.Millisecond {
		t.Fatalf("15000 bytes in 0.5 s: throttle %v, want 4.5s", got)
	}
	// The request percentage's bound: one sample window.
	if got := m.record(&l, 1e6, time.Duration(m.window.size)); got != time.Second {
		t.Fatalf("bounded throttle %v, want 1s", got)
	}
	clock.advance(12 * time.Second)
	if got := m.record(&l, 1, max); got != 0 {
		t.Fatalf("after the window: throttle %v, want none", got)
	}
	// Steady 2000 B/s over many windows: twice the quota, throttled by
	// about the window (11 s of samples, the oldest partly spent).
	var last time.Duration
	for range 150 {
		clock.advance(100 * time.Millisecond)
		last = m.record(&l, 200, max)
	}
	if last < 9*time.Second || last > 11*time.Second {
		t.Fatalf("steady twice the quota: throttle %v, want about 10 s", last)
	}
}

// TestQuotaUnrecord: a throttled Fetch's bytes taken back out leave the
// rate as it was, so the same fetch once the throttle has passed is let
// through; windowBytes is what the rate lets through alone (Kafka's
// getMaxValueInQuotaWindow: 10 s of samples at 1000 B/s), and a record of
// that much alone is not throttled, one byte more is.
func TestQuotaUnrecord(t *testing.T) {
	m, clock := newTestQuotaManager()
	l := quotaLimit{rate: m.rate(quotaSensorKey{typ: quotaFetch, client: "c"}), bound: 1000}
	max := time.Duration(m.window.full())
	if got := m.windowBytes(&l); got != 10000 {
		t.Fatalf("windowBytes %v, want 10000", got)
	}
	if got := m.record(&l, 8000, max); got != 0 {
		t.Fatalf("8000 bytes: throttle %v, want none", got)
	}
	throttle := m.record(&l, 8000, max)
	if throttle <= 0 {
		t.Fatal("16000 bytes at once: not throttled")
	}
	m.unrecord(&l, 8000)
	clock.advance(100 * time.Millisecond)
	if got := m.record(&l, 1000, max); got != 0 {
		t.Fatalf("9000 bytes counted after the unrecord: throttle %v, want none", got)
	}
	clock.advance(12 * time.Second)
	if got := m.record(&l, 10000, max); got != 0 {
		t.Fatalf("windowBytes alone: throttle %v, want none", got)
	}
	clock.advance(12 * time.Second)
	if got := m.record(&l, 10001, max); got == 0 {
		t.Fatal("one byte past windowBytes alone: not throttled")
	}
}

// TestQuotaRateDropsIdle: a rate idle for a whole window is dropped when
// its shard makes another, and a connection holding it records into its
// replacement.
func TestQuotaRateDropsIdle(t *testing.T) {
	m, clock := newTestQuotaManager()
	key := quotaSensorKey{typ: quotaRequest, user: "u"}
	l := quotaLimit{rate: m.rate(key), bound: 10}
	m.record(&l, 1, time.Second)
	old := l.rate
	clock.advance(30 * time.Second)
	// Make rates until one lands in the same shard (and sweeps it).
	for i := 0; !old.dead && i < 10000; i++ {
		m.rate(quotaSensorKey{typ: quotaRequest, user: fmt.Sprint("other", i)})
	}
	if !old.dead {
		t.Fatal("the idle rate was not dropped")
	}
	m.record(&l, 1, time.Second)
	if l.rate == old || l.rate != m.rate(key) {
		t.Fatal("the holder did not move to the replacement rate")
	}
}

// TestQuotaResolution: each quota type takes the first entity of Kafka's
// precedence list that sets it, and counts per matched entity with its
// defaults filled in.
func TestQuotaResolution(t *testing.T) {
	set := func(user, client *cluster.QuotaName, key string, v float64) cluster.Record {
		var e cluster.QuotaEntity
		if user != nil {
			e.User = *user
		}
		if client != nil {
			e.ClientID = *client
		}
		return cluster.Record{Kind: cluster.KindClientQuota, ClientQuota: &cluster.ClientQuotaRecord{Entity: e.Data(), Key: key, Value: v}}
	}
	n := func(s string) *cluster.QuotaName { q := cluster.Named(s); return &q }
	def := func() *cluster.QuotaName { q := cluster.DefaultName(); return &q }
	im, err := cluster.ImageOf(
		set(nil, def(), cluster.QuotaProducerByteRate, 8),
		set(nil, n("c"), cluster.QuotaProducerByteRate, 7),
		set(def(), nil, cluster.QuotaProducerByteRate, 6),
		set(def(), def(), cluster.QuotaProducerByteRate, 5),
		set(def(), n("c"), cluster.QuotaProducerByteRate, 4),
		set(n("alice"), nil, cluster.QuotaProducerByteRate, 3),
		set(n("alice"), def(), cluster.QuotaProducerByteRate, 2),
		set(n("alice"), n("c"), cluster.QuotaProducerByteRate, 1),
		set(nil, n("c"), cluster.QuotaRequestPercentage, 50),
		set(nil, n("ANONYMOUS"), cluster.QuotaConsumerByteRate, 9), // a client id, not the user
		set(n("ANONYMOUS"), nil, cluster.QuotaConsumerByteRate, 10),
	)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := newTestQuotaManager()
	for _, tc := range []struct {
		principal, client string
		produce           float64
		key               quotaSensorKey
	}{
		{"User:alice", "c", 1, quotaSensorKey{user: "alice", client: "c"}},
		{"User:alice", "d", 2, quotaSensorKey{user: "alice", client: "d"}},
		{"User:bob", "c", 4, quotaSensorKey{user: "bob", client: "c"}},
		{"User:bob", "d", 5, quotaSensorKey{user: "bob", client: "d"}},
		{"", "c", 4, quotaSensorKey{user: "ANONYMOUS", client: "c"}},
	} {
		var q connQuotas
		m.resolve(&q, im, tc.principal, tc.client)
		l := q.limits[quotaProduce]
		if l.bound != tc.produce || l.rate == nil || l.rate.key != tc.key {
			t.Errorf("%s %s: produce quota %v of %+v, want %v of %+v", tc.principal, tc.client, l.bound, l.rate, tc.produce, tc.key)
		}
	}
	// Fewer entities: the user-only and client-only levels.
	im2, _ := cluster.ImageOf(set(n("alice"), nil, cluster.QuotaProducerByteRate, 3), set(nil, n("c"), cluster.QuotaProducerByteRate, 7),
		set(nil, def(), cluster.QuotaRequestPercentage, 20), set(n("ANONYMOUS"), nil, cluster.QuotaConsumerByteRate, 10))
	var q connQuotas
	m.resolve(&q, im2, "User:alice", "c")
	if l := q.limits[quotaProduce]; l.bound != 3 || l.rate.key != (quotaSensorKey{typ: quotaProduce, user: "alice"}) {
		t.Errorf("alice's own quota: %v %+v", l.bound, l.rate.key)
	}
	if l := q.limits[quotaRequest]; l.bound != 20 || l.rate.key != (quotaSensorKey{typ: quotaRequest, client: "c"}) {
		t.Errorf("the default client's request quota: %v %+v", l.bound, l.rate.key)
	}
	if q.limits[quotaFetch].rate != nil {
		t.Error("alice has a fetch quota")
	}
	m.resolve(&q, im2, "User:ANONYMOUS", "x")
	if l := q.limits[quotaFetch]; l.bound != 10 {
		t.Errorf("the anonymous user's fetch quota: %v", l.bound)
	}
}

// BenchmarkQuotaRecord is the accounting of one request: a produce
// quota's record and throttle, on one rate (one client id, every
// goroutine) and on a rate per goroutine (a connection each).
func BenchmarkQuotaRecord(b *testing.B) {
	b.Run("shared", func(b *testing.B) {
		m := newQuotaManager(DefaultQuotaWindowNum, DefaultQuotaWindowSize, time.Now)
		r := m.rate(quotaSensorKey{typ: quotaProduce, client: "c"})
		b.RunParallel(func(pb *testing.PB) {
			l := quotaLimit{rate: r, bound: 1e12}
			for pb.Next() {
				m.record(&l, 1000, time.Second)
			}
		})
	})
	b.Run("per-conn", func(b *testing.B) {
		m := newQuotaManager(DefaultQuotaWindowNum, DefaultQuotaWindowSize, time.Now)
		var id atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			l := quotaLimit{rate: m.rate(quotaSensorKey{typ: quotaProduce, client: fmt.Sprint(id.Add(1))}), bound: 1e12}
			for pb.Next() {
				m.record(&l, 1000, time.Second)
			}
		})
	})
	b.Run("resolve", func(b *testing.B) {
		im, _ := cluster.ImageOf(cluster.Record{Kind: cluster.KindClientQuota, ClientQuota: &cluster.ClientQuotaRecord{
			Entity: cluster.QuotaEntity{ClientID: cluster.DefaultName()}.Data(), Key: cluster.QuotaProducerByteRate, Value: 1e6}})
		m := newQuotaManager(DefaultQuotaWindowNum, DefaultQuotaWindowSize, time.Now)
		var q connQuotas
		for range b.N {
			m.resolve(&q, im, "User:alice", "c")
		}
	})
}

// tickingClock advances a millisecond at every reading, so a handler's
// measured time is a whole number of readings.
type tickingClock struct{ ns atomic.Int64 }

func (c *tickingClock) now() time.Time { return time.Unix(0, c.ns.Add(int64(time.Millisecond))) }

// quotaObserver records QuotaObserver calls.
type quotaObserver struct {
	nopObserver
	mu    sync.Mutex
	calls []string
}

func (o *quotaObserver) Throttled(quota string, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, fmt.Sprintf("%s %v", quota, d))
}

// TestRequestPercentageThrottle: over a socket, with franz-go, a client
// id over its request_percentage gets Kafka's throttle (bounded by one
// sample window, 1 s) in throttle_time_ms, the Observer is told, and the
// connection is muted until the throttle ends; another client id is
// neither throttled nor counted.
func TestRequestPercentageThrottle(t *testing.T) {
	f := newSeamFixture(t)
	clock := &tickingClock{}
	clock.ns.Store(int64(1000 * time.Hour))
	f.s.quotas.now = clock.now
	obs := &quotaObserver{}
	f.s.cfg.Observer = obs
	f.addRecords(t, cluster.Record{Kind: cluster.KindClientQuota, ClientQuota: &cluster.ClientQuotaRecord{
		Entity: cluster.QuotaEntity{ClientID: cluster.Named("busy")}.Data(), Key: cluster.QuotaRequestPercentage, Value: 0.0001}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go f.s.Serve(ln)
	t.Cleanup(func() { f.s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()

	// muted counts the connections muted now.
	muted := func() int {
		n := 0
		f.s.mu.Lock()
		defer f.s.mu.Unlock()
		for c := range f.s.conns {
			if c.mutedUntil.Load() > clock.ns.Load() {
				n++
			}
		}
		return n
	}
	var mutedAfter int
	request := func(clientID string) int32 {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(ln.Addr().String()), kgo.ClientID(clientID))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		resp, err := cl.SeedBrokers()[0].Request(ctx, kmsg.NewPtrMetadataRequest())
		if err != nil {
			t.Fatal(err)
		}
		mutedAfter = muted()
		return resp.(*kmsg.MetadataResponse).ThrottleMillis
	}
	if got := request("idle"); got != 0 || mutedAfter != 0 {
		t.Fatalf("a client id without a quota: throttle %d ms, %d connections muted", got, mutedAfter)
	}
	// The handler took at least one tick (1 ms, 0.1% of a second) against
	// 0.0001%: far over, so the bound, one window.
	// (The client's ApiVersions before it is throttled too, and the
	// connection muted for it: the Metadata request waits.)
	if got := request("busy"); got != 1000 || mutedAfter != 1 {
		t.Fatalf("a client id over its request_percentage: throttle %d ms, want 1000; %d connections muted, want 1", got, mutedAfter)
	}
	// The writer tells the Observer once the response is out: poll.
	var calls []string
	for deadline := time.Now().Add(waitTimeout); ; time.Sleep(time.Millisecond) {
		obs.mu.Lock()
		calls = append(calls[:0], obs.calls...)
		obs.mu.Unlock()
		if len(calls) >= 2 || time.Now().After(deadline) {
			break
		}
	}
	if len(calls) != 2 || calls[0] != "request 1s" || calls[1] != "request 1s" {
		t.Fatalf("observer told %v, want [request 1s] for ApiVersions and Metadata", calls)
	}
}
