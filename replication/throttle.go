package replication

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/config"
)

// The replication throttle (Kafka's KIP-73 replication quotas): a leader
// limits the bytes it serves to followers of its throttled partitions
// (leader.replication.throttled.rate, leader.replication.throttled.replicas
// naming partition:this-broker), and a follower the bytes it fetches of
// its throttled partitions (follower.replication.throttled.rate,
// follower.replication.throttled.replicas naming partition:this-broker).
// Only replicas outside the ISR are held back, as Kafka's
// shouldLeaderThrottle and shouldFollowerThrottle have it; the bytes of
// every throttled partition count toward the rate, so a throttle bounds
// the whole of their replication traffic. When the rate is used up, a
// throttled partition is left out of the fetch (follower) or answered with
// no records (leader) while the others flow.
//
// Kafka checks the rate over a window of samples and lets one fetch run
// over it; wren keeps a token bucket and also bounds each throttled read
// to the tokens left, so that a rate far below replica.fetch.max.bytes is
// still kept to. A read returns at least one whole batch, so a batch
// larger than the bucket still moves; the bucket then runs into debt,
// which it pays back before the next throttled read.

// Unthrottled is the rate of a throttle that holds nothing back: Kafka's
// default, Long.MAX_VALUE.
const Unthrottled int64 = math.MaxInt64

// throttleBurst is how many seconds of the rate a full bucket holds.
const throttleBurst = time.Second

// Throttle is a token bucket of bytes per second, safe for concurrent use.
// A rate of Unthrottled (or below 0) holds nothing back; a rate of 0 holds
// every throttled replica back.
type Throttle struct {
	now func() time.Time

	mu   sync.Mutex
	rate int64
	// tokens are the bytes that may still go; below zero, the debt of a
	// read that ran over. Invariant: tokens <= the bucket's capacity.
	tokens float64
	last   time.Time

	// bytes counts the bytes of throttled partitions recorded; held the
	// partition fetches held back because the rate was used up.
	bytes, held atomic.Int64
}

// NewThrottle returns an unthrottled Throttle on the clock now (nil:
// time.Now).
func NewThrottle(now func() time.Time) *Throttle {
	if now == nil {
		now = time.Now
	}
	return &Throttle{now: now, rate: Unthrottled, last: now()}
}

// SetRate sets the rate in bytes per second. A new rate starts with a
// full bucket when it lifts a throttle, and keeps the tokens (up to its
// capacity) when it changes one.
func (t *Throttle) SetRate(bytesPerSecond int64) {
	if bytesPerSecond < 0 {
		bytesPerSecond = Unthrottled
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if bytesPerSecond == t.rate {
		return
	}
	t.refillLocked()
	was := t.rate
	t.rate = bytesPerSecond
	if was == Unthrottled {
		t.tokens = t.capacityLocked()
	}
	t.tokens = min(t.tokens, t.capacityLocked())
}

// Rate is the rate in bytes per second (Unthrottled when none).
func (t *Throttle) Rate() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rate
}

func (t *Throttle) capacityLocked() float64 {
	return float64(t.rate) * throttleBurst.Seconds()
}

func (t *Throttle) refillLocked() {
	now := t.now()
	if d := now.Sub(t.last); d > 0 && t.rate != Unthrottled {
		t.tokens = min(t.capacityLocked(), t.tokens+d.Seconds()*float64(t.rate))
	}
	t.last = now
}

// Available is how many bytes throttled partitions may take now: 0 or
// less when the rate is used up, math.MaxInt64 when unthrottled.
func (t *Throttle) Available() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rate == Unthrottled {
		return math.MaxInt64
	}
	t.refillLocked()
	return int64(math.Floor(t.tokens))
}

// Record takes n bytes of throttled partitions from the bucket, which may
// go into debt.
func (t *Throttle) Record(n int64) {
	if n <= 0 {
		return
	}
	t.bytes.Add(n)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rate == Unthrottled {
		return
	}
	t.refillLocked()
	t.tokens -= float64(n)
}

// Held counts one partition fetch held back.
func (t *Throttle) Held() { t.held.Add(1) }

// ThrottleStats are a throttle's counters since the broker started.
type ThrottleStats struct {
	// Rate is the rate in force, bytes per second (Unthrottled: none).
	Rate int64
	// Bytes are the bytes of throttled partitions served or fetched.
	Bytes int64
	// Held counts partition fetches held back for the rate.
	Held int64
}

// Stats reads the throttle's counters.
func (t *Throttle) Stats() ThrottleStats {
	return ThrottleStats{Rate: t.Rate(), Bytes: t.bytes.Load(), Held: t.held.Load()}
}

// SetReplicationThrottle sets this broker's leader and follower rates in
// bytes per second (leader.replication.throttled.rate and
// follower.replication.throttled.rate; Unthrottled: none). They apply
// from the next fetch on.
func (m *Manager) SetReplicationThrottle(leaderRate, followerRate int64) {
	m.leaderThrottle.SetRate(leaderRate)
	m.followerThrottle.SetRate(followerRate)
}

// noteCaughtUp records whether a fetch brought fl up to the leader's
// high watermark.
func (fm *fetcherManager) noteCaughtUp(fl *followed, rp kmsg.FetchResponseTopicPartition) {
	if rp.ErrorCode == 0 {
		fl.caughtUp.Store(fl.p.log.LogEndOffset() >= rp.HighWatermark)
	}
}

// recordFollower counts the bytes a fetch brought for fl toward the
// follower rate when fl is throttled here as follower.
func (fm *fetcherManager) recordFollower(fl *followed, n int) {
	if fm.throttle != nil && fl.p.throttled.follower.Load() {
		fm.throttle.Record(int64(n))
	}
}

// ReplicationThrottleStats reads the leader's and the follower's
// throttle counters.
func (m *Manager) ReplicationThrottleStats() (leader, follower ThrottleStats) {
	return m.leaderThrottle.Stats(), m.followerThrottle.Stats()
}

// throttledAs says whether p is throttled on this broker as leader and as
// follower (set from the topic configs by ApplyImage).
type throttledAs struct {
	leader, follower atomic.Bool
}

// inISR reports whether replica is in p's ISR as the metadata has it.
func (p *Partition) inISR(replica int32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.core.isr {
		if r == replica {
			return true
		}
	}
	return false
}

// leaderThrottledFor reports whether this leader holds back p's records
// from follower: p is throttled here as leader and follower is outside
// the ISR (Kafka's shouldLeaderThrottle).
func (p *Partition) leaderThrottledFor(follower int32) bool {
	return p.throttled.leader.Load() && !p.inISR(follower)
}

// followerBudget admits the follower's throttled partitions into one
// fetch: for each of parts, the most bytes it may ask, or 0 when it is
// held back this round. Partitions not throttled, or whose replica here
// is in the ISR or caught up with the leader's high watermark (Kafka's
// shouldFollowerThrottle), ask for maxBytes; the others share what the
// bucket holds. A caught-up replica must fetch, or its leader never sees
// it at the log end and never adds it to the ISR.
func (fm *fetcherManager) followerBudget(parts []*followed, maxBytes int32) (kept []*followed, limits []int32) {
	t := fm.throttle
	avail := int64(-1)
	for _, fl := range parts {
		limit := maxBytes
		if t != nil && fl.p.throttled.follower.Load() && !fl.caughtUp.Load() && !fl.p.inISR(fm.self) {
			if avail < 0 {
				avail = max(t.Available(), 0)
			}
			if avail == 0 {
				t.Held()
				continue
			}
			limit = int32(min(int64(maxBytes), avail))
			avail -= int64(limit)
		}
		kept = append(kept, fl)
		limits = append(limits, limit)
	}
	return kept, limits
}

// Topic configs of the replication throttle (KIP-73).
const (
	leaderThrottledReplicas   = "leader.replication.throttled.replicas"
	followerThrottledReplicas = "follower.replication.throttled.replicas"
)

// throttledReplicas reads a topic's throttle lists as they concern this
// broker. They were validated when set; one that does not parse throttles
// nothing, with a log line.
func (m *Manager) throttledReplicas(topic string, configs map[string]string) (leader, follower config.ThrottledReplicas) {
	parse := func(key string) config.ThrottledReplicas {
		v, ok := configs[key]
		if !ok {
			return config.ThrottledReplicas{}
		}
		r, err := config.ParseThrottledReplicas(v, m.nodeID)
		if err != nil {
			m.logger.Error("topic throttle list does not parse; not throttling", "topic", topic, "key", key, "err", err)
		}
		return r
	}
	return parse(leaderThrottledReplicas), parse(followerThrottledReplicas)
}

// throttledRead is what one read for a follower took from the leader's
// throttle: the bytes of throttled partitions, and the partitions held
// back.
type throttledRead struct {
	bytes, held int64
}

// recordFetch counts a read whose response is sent.
func (t *Throttle) recordFetch(r throttledRead) {
	t.Record(r.bytes)
	t.held.Add(r.held)
}
