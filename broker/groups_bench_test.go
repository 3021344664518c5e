package broker

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The rebalance benchmarks time one member joining a group of four over
// 12 partitions, until the five own all of them (each at least two), for
// the classic protocol (the client's cooperative-sticky balancer) and for
// KIP-848 (the broker's uniform assignor). Both heartbeat every
// heartbeatMs: a member hears of a rebalance only on a heartbeat, so the
// interval paces both protocols, and the same value keeps them comparable.
//
//	go test -run '^$' -bench 'Rebalance' -benchtime 20x ./broker
//
// With WREN_BENCH_BROKER=host:port they run against that broker instead
// of an in-process wren (Apache Kafka as the reference: start it with
// group.initial.rebalance.delay.ms=0 and both
// group.consumer.heartbeat.interval.ms and
// group.consumer.min.heartbeat.interval.ms at 100 for the 100 ms runs,
// at their defaults for the "defaults" runs: an external broker's interval
// is its own config).
//
// The "defaults" runs use each protocol's default interval instead
// (classic: the client's heartbeat.interval.ms, 3 s; KIP-848:
// group.consumer.heartbeat.interval.ms, 5 s).
func BenchmarkRebalanceJoinClassic(b *testing.B) {
	b.Run("heartbeat=100ms", func(b *testing.B) { benchmarkRebalanceJoin(b, false, 100) })
	b.Run("heartbeat=defaults", func(b *testing.B) { benchmarkRebalanceJoin(b, false, 3000) })
}

func BenchmarkRebalanceJoinKIP848(b *testing.B) {
	b.Run("heartbeat=100ms", func(b *testing.B) { benchmarkRebalanceJoin(b, true, 100) })
	b.Run("heartbeat=defaults", func(b *testing.B) { benchmarkRebalanceJoin(b, true, 5000) })
}

// ownership tracks which member owns which partitions, from the members'
// assign and revoke callbacks.
type ownership struct {
	mu      sync.Mutex
	owned   map[string]map[int32]bool
	changed chan struct{}
}

func (o *ownership) update(member string, ps []int32, add bool) {
	o.mu.Lock()
	if o.owned[member] == nil {
		o.owned[member] = map[int32]bool{}
	}
	for _, p := range ps {
		if add {
			o.owned[member][p] = true
		} else {
			delete(o.owned[member], p)
		}
	}
	o.mu.Unlock()
	select {
	case o.changed <- struct{}{}:
	default:
	}
}

// settled reports whether exactly members own all partitions, at least
// min each.
func (o *ownership) settled(members []string, partitions, min int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	total := 0
	for m, ps := range o.owned {
		if len(ps) > 0 && !contains(members, m) {
			return false
		}
		total += len(ps)
	}
	for _, m := range members {
		if len(o.owned[m]) < min {
			return false
		}
	}
	return total == partitions
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func (o *ownership) wait(ctx context.Context, tb testing.TB, members []string, partitions, min int) {
	for !o.settled(members, partitions, min) {
		select {
		case <-o.changed:
		case <-ctx.Done():
			tb.Fatalf("group did not settle on %v: %v (%v)", members, ctx.Err(), o.owned)
		}
	}
}

// benchBroker is the broker a benchmark talks to: WREN_BENCH_BROKER, or
// an in-process wren with the [groups] settings extra.
func benchBroker(b *testing.B, extra string) string {
	if addr := os.Getenv("WREN_BENCH_BROKER"); addr != "" {
		return addr
	}
	return startBroker(b, testConfig(b, b.TempDir(), extra)).Addr().String()
}

func benchmarkRebalanceJoin(b *testing.B, kip848 bool, heartbeatMs int) {
	const partitions = 12
	// Fresh names: an external broker keeps its topics and groups.
	topic := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	extra := fmt.Sprintf(`
[groups]
group.initial.rebalance.delay.ms = 0
offsets.topic.num.partitions = 5
group.consumer.heartbeat.interval.ms = %d
group.consumer.min.heartbeat.interval.ms = %d
`, heartbeatMs, heartbeatMs)
	addr := benchBroker(b, extra)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	// At the protocols' default heartbeat intervals a join takes seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		b.Fatal(err)
	}
	own := &ownership{owned: map[string]map[int32]bool{}, changed: make(chan struct{}, 1)}
	start := func(group, name string) *kgo.Client {
		opts := []kgo.Opt{
			kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ClientID(name),
			kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(time.Duration(heartbeatMs) * time.Millisecond),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { own.update(name, m[topic], true) }),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { own.update(name, m[topic], false) }),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { own.update(name, m[topic], false) }),
		}
		if kip848 {
			opts = append(opts, kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer())
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			b.Fatal(err)
		}
		// A consumer joins its group when it is first polled.
		go func() {
			for {
				if fs := cl.PollFetches(context.Background()); fs.IsClientClosed() {
					return
				}
			}
		}()
		return cl
	}
	group := topic
	four := []string{"m0", "m1", "m2", "m3"}
	for _, name := range four {
		cl := start(group, name)
		defer cl.Close()
	}
	own.wait(ctx, b, four, partitions, 3)
	b.ResetTimer()
	var joins time.Duration
	for i := range b.N {
		name := fmt.Sprintf("new%d", i)
		t0 := time.Now()
		cl := start(group, name)
		own.wait(ctx, b, append(four, name), partitions, 2)
		joins += time.Since(t0)
		b.StopTimer()
		cl.Close() // leaves; the four take its partitions back
		own.update(name, []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, false)
		own.wait(ctx, b, four, partitions, 3)
		b.StartTimer()
	}
	b.ReportMetric(float64(joins.Microseconds())/1000/float64(b.N), "ms/join")
}

// BenchmarkOffsetCommit commits one offset per partition of a 12-partition
// topic for a group outside group management, from one committer and from
// 16 at once (one group each): each commit is a record batch appended to
// __consumer_offsets and answered once durable, so the figure to compare
// is the disk's fdatasync rate (scripts/disk-baseline.sh), which group
// commit lets concurrent committers share.
//
//	go test -run '^$' -bench OffsetCommit -benchtime 2000x ./broker
func BenchmarkOffsetCommit(b *testing.B) {
	for _, committers := range []int{1, 16} {
		b.Run(fmt.Sprintf("committers=%d", committers), func(b *testing.B) {
			const partitions = 12
			topic := fmt.Sprintf("bench-%d", time.Now().UnixNano())
			cl, err := kgo.NewClient(kgo.SeedBrokers(benchBroker(b, groupsTestConfig)))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			ctx := testContext(b)
			if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
				b.Fatal(err)
			}
			// A broker may take a moment to know a new topic everywhere
			// (Kafka's coordinator answers UNKNOWN_TOPIC_OR_PARTITION
			// until its metadata has it): warm up until a commit passes.
			retry := time.NewTicker(50 * time.Millisecond)
			defer retry.Stop()
			for deadline := time.Now().Add(20 * time.Second); ; <-retry.C {
				resp, err := adm.CommitOffsets(ctx, topic+"-warmup", kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: 1}}})
				if err == nil {
					err = resp.Error()
				}
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			var wg sync.WaitGroup
			per := (b.N + committers - 1) / committers
			for c := range committers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					group := fmt.Sprintf("%s-committer-%d", topic, c)
					for i := range per {
						offsets := kadm.Offsets{}
						for p := range int32(partitions) {
							offsets.AddOffset(topic, p, int64(i+1), -1)
						}
						resp, err := adm.CommitOffsets(ctx, group, offsets)
						if err == nil {
							err = resp.Error()
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(per*committers)/b.Elapsed().Seconds(), "commits/s")
		})
	}
}
