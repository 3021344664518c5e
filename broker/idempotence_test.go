package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/wren-broker/wren/config"
)

// faultProxy forwards Kafka connections to a broker and, for a fraction
// of Produce responses, drops the response and resets the connection: the
// client cannot know whether its batch was written, so it retries it.
type faultProxy struct {
	ln        net.Listener
	target    string
	dropRate  float64
	rng       *rand.Rand
	mu        sync.Mutex
	responses int
	dropped   atomic.Int64
	wg        sync.WaitGroup
}

func newFaultProxy(t *testing.T, dropRate float64, seed int64) *faultProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln, dropRate: dropRate, rng: rand.New(rand.NewSource(seed))}
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

// drop decides for one Produce response. Besides the random 20%, the
// third response always goes, so a short run with few requests still
// exercises a retry.
func (p *faultProxy) drop() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.responses++
	return p.responses == 3 || p.rng.Float64() < p.dropRate
}

func (p *faultProxy) serve() {
	p.wg.Add(1)
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.handle(c)
		}()
	}
}

func (p *faultProxy) handle(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	// Correlation ids of Produce requests, in order.
	var mu sync.Mutex
	produce := map[int32]bool{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			frame, err := readFrame(client)
			if err != nil {
				server.Close()
				return
			}
			if len(frame) >= 8 && binary.BigEndian.Uint16(frame[4:]) == 0 {
				mu.Lock()
				produce[int32(binary.BigEndian.Uint32(frame[8:]))] = true
				mu.Unlock()
			}
			if _, err := server.Write(frame); err != nil {
				return
			}
		}
	}()
	for {
		frame, err := readFrame(server)
		if err != nil {
			break
		}
		corr := int32(binary.BigEndian.Uint32(frame[4:]))
		mu.Lock()
		isProduce := produce[corr]
		delete(produce, corr)
		mu.Unlock()
		if isProduce && p.drop() {
			p.dropped.Add(1)
			break // the response is lost and the connection resets
		}
		if _, err := client.Write(frame); err != nil {
			break
		}
	}
	client.Close()
	server.Close()
	<-done
}

// readFrame reads one size-prefixed frame, returned with its prefix.
func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 200<<20 {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	frame := make([]byte, 4+n)
	copy(frame, size[:])
	_, err := io.ReadFull(r, frame[4:])
	return frame, err
}

// TestIdempotentProducerThroughFaultyNetwork: a franz-go producer with
// idempotence on sends 200,000 records over 6 partitions through a proxy
// that loses 20% of Produce responses and resets the connection each time.
// Every retry of a written batch must be answered from the producer state,
// so a full read shows each record exactly once, in order per partition.
func TestIdempotentProducerThroughFaultyNetwork(t *testing.T) {
	records := 200_000
	if testing.Short() {
		records = 20_000
	}
	seed := time.Now().UnixNano()
	t.Logf("proxy seed %d", seed)
	proxy := newFaultProxy(t, 0.2, seed)
	cfg, err := config.Parse("test.toml", []byte(fmt.Sprintf(`
[broker]
node.id = 1
log.dirs = [%q]
listeners = ["PLAINTEXT://127.0.0.1:0", "CONTROLLER://127.0.0.1:0"]
advertised.listeners = ["PLAINTEXT://%s"]
[http]
listen = "127.0.0.1:0"

[cluster]
controller.quorum.voters = ["1@127.0.0.1:9093"]
`, t.TempDir(), proxy.ln.Addr().String())))
	if err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, cfg)
	proxy.target = b.Addr().String()
	go proxy.serve()
	ctx := testContext(t)
	_, adm := newClient(t, b)
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, "idem"); err != nil {
		t.Fatal(err)
	}
	producer, err := kgo.NewClient(kgo.SeedBrokers(proxy.ln.Addr().String()), kgo.DefaultProduceTopic("idem"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(1<<30), kgo.RequestRetries(1<<30),
		kgo.ProducerLinger(time.Millisecond), kgo.MaxBufferedRecords(20_000), kgo.ProducerBatchMaxBytes(8<<10), kgo.RetryBackoffFn(func(int) time.Duration { return time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	var failed atomic.Int64
	var firstErr atomic.Value
	for i := 0; i < records; i++ {
		r := &kgo.Record{Partition: int32(i % 6), Value: []byte(fmt.Sprintf("%d", i))}
		producer.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}
		})
	}
	if err := producer.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d records failed, first: %v", n, firstErr.Load())
	}
	t.Logf("%d Produce responses dropped with a connection reset", proxy.dropped.Load())
	if proxy.dropped.Load() == 0 {
		t.Fatal("the proxy dropped nothing: the test tested nothing")
	}
	// Read everything back directly from the broker.
	consumer, _ := newClient(t, b)
	checkExactlyOnceInOrder(t, ctx, consumer, "idem", 6, records)
}

// checkExactlyOnceInOrder reads topic from the start and checks that
// record n (its value) sits in partition n % partitions, in order, exactly
// once, and that the log holds nothing else.
func checkExactlyOnceInOrder(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, partitions int32, records int) {
	t.Helper()
	cl.AddConsumeTopics(topic)
	next := map[int32]int{}
	for p := int32(0); p < partitions; p++ {
		next[p] = int(p)
	}
	for got := 0; got < records; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records: %v", got, records, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			var n int
			fmt.Sscan(string(r.Value), &n)
			if n != next[r.Partition] {
				t.Fatalf("partition %d offset %d: record %d, want %d (a duplicate or a gap)", r.Partition, r.Offset, n, next[r.Partition])
			}
			next[r.Partition] += int(partitions)
			got++
		})
	}
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != int64(records) {
		t.Fatalf("the log holds %d records, %d were produced: duplicates", total, records)
	}
}
