package kafka

import (
	"hash/maphash"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
)

// Client quotas (KIP-13 byte rates, KIP-124 request percentage, KIP-219
// throttling), enforced by every node from its own metadata image, as
// Kafka's ClientQuotaManager and ClientRequestQuotaManager do:
//
//   - A connection's quota of each type is the first entity of Kafka's
//     precedence list that has the type's key: /users/U/clients/C,
//     /users/U/clients/<default>, /users/U, /users/<default>/clients/C,
//     /users/<default>/clients/<default>, /users/<default>,
//     /clients/C, /clients/<default>. U is the session's user (the
//     principal's name; ANONYMOUS before or without authentication), C
//     the request header's client id.
//   - The usage is counted per entity that matched, with its defaults
//     replaced by the connection's user and client id (Kafka's metric
//     tags): a default quota gives each user or client id a rate of its
//     own; connections of the same user and client id share one.
//   - Rates are Kafka's Rate over quota.window.num samples of
//     quota.window.size.seconds each: Produce counts its request's bytes,
//     a consumer's Fetch its response's bytes, every request of an
//     authenticated session its handler's time as a percentage of one
//     thread's second.
//   - Over the quota, the throttle is Kafka's: (rate - quota) / quota
//     times the window the rate was measured over; the request
//     percentage's is bounded by one sample window, the byte rates' by
//     the whole window (Kafka leaves those unbounded). The response
//     carries it in throttle_time_ms (the larger of the byte rate's and
//     the request time's), and the connection is muted for it (KIP-219):
//     the reader reads nothing more from it until the time passes. A
//     throttled consumer Fetch is answered empty, its bytes taken back
//     out of the rate (conn.throttleFetch), as Kafka's handleFetchRequest.
//
// The hot path takes no lock shared across connections: a connection
// caches its resolved rates until the image, its principal or its client
// id change, and a rate has a lock of its own; the map of rates is
// sharded. A rate idle for a whole window measures zero and is dropped
// when its shard next makes a rate.

// quotaType is one kind of client quota.
type quotaType uint8

const (
	quotaProduce quotaType = iota
	quotaFetch
	quotaRequest
	numQuotaTypes
)

// quotaTypeNames are the metrics' labels; quotaTypeKeys the image's keys.
var (
	quotaTypeNames = [numQuotaTypes]string{"produce", "fetch", "request"}
	quotaTypeKeys  = [numQuotaTypes]string{cluster.QuotaProducerByteRate, cluster.QuotaConsumerByteRate, cluster.QuotaRequestPercentage}
)

// Kafka's defaults of quota.window.num and quota.window.size.seconds.
const (
	DefaultQuotaWindowNum  = 11
	DefaultQuotaWindowSize = time.Second
)

// anonymousUser is the user of a session with no authenticated
// principal (Kafka's KafkaPrincipal.ANONYMOUS).
const anonymousUser = "ANONYMOUS"

// QuotaObserver is told of every throttled response, for metrics, when
// the Server's Observer implements it too: the quota type that decided
// the throttle ("produce", "fetch", "request") and the throttle.
type QuotaObserver interface {
	Throttled(quota string, throttle time.Duration)
}

// quotaWindow is the rates' sampling: n samples of size nanoseconds.
type quotaWindow struct {
	n    int
	size int64
}

// full is the span a rate remembers.
func (w quotaWindow) full() int64 { return int64(w.n) * w.size }

// quotaSensorKey names one rate: a quota type and the matched entity's
// user and client id ("" for a part the entity does not have).
type quotaSensorKey struct {
	typ          quotaType
	user, client string
}

// quotaRate is Kafka's Rate over a SampledStat: samples of window.size,
// at most window.n of them, the oldest reused.
type quotaRate struct {
	key quotaSensorKey

	mu      sync.Mutex
	samples []quotaSample
	current int
	// last is the time of the last record (ns).
	last int64
	// dead: dropped from its shard; a holder looks the rate up again.
	dead bool
}

type quotaSample struct {
	start int64
	value float64
}

// record adds v at now and returns the rate (per second) and the span it
// was measured over (ns), as Kafka's Sensor.record then Rate.measure;
// ok is false when the rate was dropped.
func (r *quotaRate) record(w quotaWindow, now int64, v float64) (rate float64, span int64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dead {
		return 0, 0, false
	}
	r.last = now
	switch {
	case len(r.samples) == 0:
		r.samples = append(r.samples, quotaSample{start: now})
		r.current = 0
	case now-r.samples[r.current].start >= w.size:
		r.current = (r.current + 1) % w.n
		if r.current >= len(r.samples) {
			r.samples = append(r.samples, quotaSample{start: now})
		} else {
			r.samples[r.current] = quotaSample{start: now}
		}
	}
	r.samples[r.current].value += v
	// Kafka's purgeObsoleteSamples, then windowSize.
	var total float64
	oldest := now
	for i := range r.samples {
		s := &r.samples[i]
		if now-s.start > w.full() {
			*s = quotaSample{start: now}
		}
		total += s.value
		oldest = min(oldest, s.start)
	}
	span = now - oldest
	if full, least := span/w.size, int64(w.n-1); full < least {
		span += (least - full) * w.size
	}
	if span <= 0 {
		span = int64(time.Millisecond)
	}
	return total / (float64(span) / 1e9), span, true
}

// quotaShards is the number of shards of the rates' map.
const quotaShards = 64

// quotaManager holds the rates of one Server's connections.
type quotaManager struct {
	// now is the clock (tests move it).
	now    func() time.Time
	window quotaWindow
	seed   maphash.Seed
	shards [quotaShards]quotaShard
}

type quotaShard struct {
	mu    sync.Mutex
	rates map[quotaSensorKey]*quotaRate
	// swept is when idle rates were last dropped (ns).
	swept int64
}

func newQuotaManager(n int, size time.Duration, now func() time.Time) *quotaManager {
	return &quotaManager{now: now, window: quotaWindow{n: n, size: int64(size)}, seed: maphash.MakeSeed()}
}

// rate returns key's rate, making it on first use. A shard drops its
// idle rates (no record for a whole window: they measure zero) at most
// once a window, when it makes one.
func (m *quotaManager) rate(key quotaSensorKey) *quotaRate {
	var h maphash.Hash
	h.SetSeed(m.seed)
	h.WriteByte(byte(key.typ))
	h.WriteString(key.user)
	h.WriteByte(0)
	h.WriteString(key.client)
	sh := &m.shards[h.Sum64()%quotaShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if r := sh.rates[key]; r != nil {
		return r
	}
	if sh.rates == nil {
		sh.rates = map[quotaSensorKey]*quotaRate{}
	}
	now := m.now().UnixNano()
	if now-sh.swept > m.window.full() {
		sh.swept = now
		for k, r := range sh.rates {
			r.mu.Lock()
			if now-r.last > m.window.full() {
				r.dead = true
				delete(sh.rates, k)
			}
			r.mu.Unlock()
		}
	}
	r := &quotaRate{key: key}
	sh.rates[key] = r
	return r
}

// quotaLimit is a connection's quota of one type: its rate and bound;
// rate nil when no entity sets the type.
type quotaLimit struct {
	rate  *quotaRate
	bound float64
}

// record adds v to the limit's rate and returns the throttle, 0 when
// under the quota, bounded by maxThrottle.
func (m *quotaManager) record(l *quotaLimit, v float64, maxThrottle time.Duration) time.Duration {
	if l.rate == nil {
		return 0
	}
	now := m.now().UnixNano()
	rate, span, ok := l.rate.record(m.window, now, v)
	if !ok {
		l.rate = m.rate(l.rate.key)
		if rate, span, ok = l.rate.record(m.window, now, v); !ok {
			return 0 // dropped again at once: cannot be, the sweep skips fresh rates
		}
	}
	if rate <= l.bound {
		return 0
	}
	ms := math.Round((rate - l.bound) / l.bound * float64(span) / 1e6)
	return min(time.Duration(ms)*time.Millisecond, maxThrottle)
}

// unrecord takes v back out of the limit's rate (Kafka's
// unrecordQuotaSensor): a throttled Fetch is answered without the
// records it counted.
func (m *quotaManager) unrecord(l *quotaLimit, v float64) {
	if l.rate == nil {
		return
	}
	l.rate.record(m.window, m.now().UnixNano(), -v)
}

// windowBytes is what l lets through when nothing else was counted:
// its rate over the shortest span a rate is measured over, quota.window.num
// - 1 samples (Kafka's getMaxValueInQuotaWindow).
func (m *quotaManager) windowBytes(l *quotaLimit) float64 {
	return l.bound * float64(max(m.window.n-1, 1)) * float64(m.window.size) / 1e9
}

// connQuotas is a connection's resolved quotas, owned by its reader: kept
// until the image, the principal or the client id change.
type connQuotas struct {
	im                  *cluster.Image
	principal, clientID string
	limits              [numQuotaTypes]quotaLimit
}

// quotaUser is the user a principal counts as: the name of "User:name",
// ANONYMOUS for none.
func quotaUser(principal string) string {
	_, name, ok := strings.Cut(principal, ":")
	if !ok || name == "" {
		return anonymousUser
	}
	return name
}

// resolve finds each type's quota for user and client as Kafka's
// DefaultQuotaCallback does, and its rate.
func (m *quotaManager) resolve(q *connQuotas, im *cluster.Image, principal, clientID string) {
	q.im, q.principal, q.clientID = im, principal, clientID
	user := quotaUser(principal)
	order := [...]cluster.QuotaEntity{
		{User: cluster.Named(user), ClientID: cluster.Named(clientID)},
		{User: cluster.Named(user), ClientID: cluster.DefaultName()},
		{User: cluster.Named(user)},
		{User: cluster.DefaultName(), ClientID: cluster.Named(clientID)},
		{User: cluster.DefaultName(), ClientID: cluster.DefaultName()},
		{User: cluster.DefaultName()},
		{ClientID: cluster.Named(clientID)},
		{ClientID: cluster.DefaultName()},
	}
	for t := range numQuotaTypes {
		q.limits[t] = quotaLimit{}
		for _, e := range order {
			bound, ok := im.ClientQuota(e, quotaTypeKeys[t])
			if !ok {
				continue
			}
			key := quotaSensorKey{typ: t}
			if e.User.Set {
				key.user = user
			}
			if e.ClientID.Set {
				key.client = clientID
			}
			q.limits[t] = quotaLimit{rate: m.rate(key), bound: bound}
			break
		}
	}
}

// resolveQuotas brings the connection's resolved quotas up to date with
// the image, its principal and its client id.
func (c *conn) resolveQuotas(im *cluster.Image) *connQuotas {
	q := &c.quotas
	if q.im != im || q.principal != c.sess.principal || q.clientID != c.clientID {
		c.s.quotas.resolve(q, im, c.sess.principal, c.clientID)
	}
	return q
}

// fetchQuotaBytes is Request.FetchQuotaBytes for a Fetch: for a
// consumer under a consumer_byte_rate, what Kafka's
// getMaxValueInQuotaWindow lets through (the rate times quota.window.num
// - 1 windows: the span a rate is measured over at least), less an
// estimate of the response's own fields, so that a response of that
// many record bytes alone measures no more than the quota. Kafka bounds
// the records alone, and a fetch whose fields take it just past the
// quota is throttled every time; the estimate keeps that from happening
// here. 0 when no quota applies.
func (c *conn) fetchQuotaBytes(im *cluster.Image, body kmsg.Request) int32 {
	f, ok := body.(*kmsg.FetchRequest)
	if !ok || f.ReplicaID >= 0 {
		return 0
	}
	l := c.resolveQuotas(im).limits[quotaFetch]
	if l.rate == nil {
		return 0
	}
	bytes := c.s.quotas.windowBytes(&l)
	overhead := 64
	for _, t := range f.Topics {
		overhead += len(t.Topic) + 24 + 64*len(t.Partitions)
	}
	bytes -= float64(overhead)
	return int32(min(max(bytes, 1), math.MaxInt32))
}

// quotaUse is what dispatch learned of a request's quotas: the throttle
// decided so far and its type, and the fetch limit the writer records
// the response's bytes against.
type quotaUse struct {
	throttle time.Duration
	typ      quotaType
	fetch    *quotaLimit
}

// quotasAfter records a request handled by the reader: its handler time
// (took) for an authenticated session, a Produce's frame bytes; and
// returns the throttle so far and, for a consumer's Fetch, the limit of
// its response. Nothing is recorded while the image has no quotas.
func (c *conn) quotasAfter(im *cluster.Image, key int16, body kmsg.Request, frameBytes int, took time.Duration) quotaUse {
	q := c.resolveQuotas(im)
	m := c.s.quotas
	var use quotaUse
	if c.sess.authenticated {
		// Kafka's nanosToPercentage: percent of one thread's second.
		use.throttle = m.record(&q.limits[quotaRequest], float64(took)*100/1e9, time.Duration(m.window.size))
		use.typ = quotaRequest
	}
	switch kmsg.Key(key) {
	case kmsg.Produce:
		if t := m.record(&q.limits[quotaProduce], float64(frameBytes+4), time.Duration(m.window.full())); t >= use.throttle && t > 0 {
			use.throttle, use.typ = t, quotaProduce
		}
	case kmsg.Fetch:
		if f, ok := body.(*kmsg.FetchRequest); ok && f.ReplicaID < 0 && q.limits[quotaFetch].rate != nil {
			l := q.limits[quotaFetch]
			use.fetch = &l
		}
	}
	return use
}

// throttled reports a throttle to the Observer and mutes the connection
// for it.
func (c *conn) throttled(typ quotaType, d time.Duration) {
	if d <= 0 {
		return
	}
	if o, ok := c.s.cfg.Observer.(QuotaObserver); ok {
		o.Throttled(quotaTypeNames[typ], d)
	}
	c.muteFor(d)
}

// muteFor mutes the connection until d from now, or later if it already
// is (KIP-219): the reader reads no request before then.
func (c *conn) muteFor(d time.Duration) {
	until := c.s.quotas.now().Add(d).UnixNano()
	for {
		cur := c.mutedUntil.Load()
		if cur >= until || c.mutedUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// waitMuted holds the reader while the connection is muted: a timer
// only while it is, none for a connection that was never throttled.
func (c *conn) waitMuted() error {
	until := c.mutedUntil.Load()
	if until == 0 {
		return nil
	}
	d := time.Duration(until - c.s.quotas.now().UnixNano())
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-c.ctx.Done():
		return c.ctx.Err()
	}
}
