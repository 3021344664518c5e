package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/uplink"
)

// uplinkLong says whether the uplink fault tests run their long mode
// (WREN_UPLINK_LONG=1): outages of minutes instead of seconds.
func uplinkLong() bool { return os.Getenv("WREN_UPLINK_LONG") == "1" }

// kafkaProxy stands between a link and the far broker, which advertises
// the proxy's address so that every client it tells where to go comes
// back through it. It reads the Kafka frames both ways, so a test can cut
// every connection and refuse new ones (cut), close a connection in the
// middle of a request (midProduce), or of an answer (midAnswer), or
// forward requests while swallowing the answers (dropAnswers). The
// faulted requests are Produce (the link pushing) unless faultKey names
// another API, such as Fetch (the link pulling).
type kafkaProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns map[*kafkaProxyConn]bool
	// down: connections close and new ones are refused.
	down   bool
	closed bool
	// faultKey is the API key of the requests midProduce, midAnswer
	// and dropAnswers act on: 0 (Produce) unless set.
	faultKey int16
	// midProduce are the requests of faultKey still to cut in the
	// middle: each sends part of its bytes then closes its connection.
	midProduce int
	midCut     int
	// midAnswer are the answers of faultKey still to cut in the middle:
	// part of each reaches the client, then its connection closes.
	midAnswer    int
	midAnswerCut int
	// dropAnswers: answers of faultKey are read and not delivered.
	dropAnswers bool
	dropped     int
	// delay holds each Produce request that long before it goes on (and
	// the requests after it on its connection, which keep their order).
	delay time.Duration
}

type kafkaProxyConn struct {
	client, upstream net.Conn
	mu               sync.Mutex
	apiKeys          map[int32]int16 // by correlation id
}

func (c *kafkaProxyConn) close() {
	c.client.Close()
	c.upstream.Close()
}

// newKafkaProxy listens on a free loopback port; target is set later
// (setTarget) when the far broker's port is known.
func newKafkaProxy(t *testing.T, target string) *kafkaProxy {
	t.Helper()
	return newKafkaProxyAt(t, "127.0.0.1:0", target)
}

// newKafkaProxyAt is newKafkaProxy listening on listen: a far broker that
// another program started already advertises that address.
func newKafkaProxyAt(t *testing.T, listen, target string) *kafkaProxy {
	t.Helper()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	p := &kafkaProxy{ln: ln, target: target, conns: map[*kafkaProxyConn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *kafkaProxy) addr() string { return p.ln.Addr().String() }

func (p *kafkaProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.carry(c)
		}()
	}
}

func (p *kafkaProxy) carry(client net.Conn) {
	p.mu.Lock()
	down := p.down || p.closed
	p.mu.Unlock()
	if down {
		client.Close()
		return
	}
	upstream, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		client.Close()
		return
	}
	c := &kafkaProxyConn{client: client, upstream: upstream, apiKeys: map[int32]int16{}}
	p.mu.Lock()
	if p.down || p.closed {
		p.mu.Unlock()
		c.close()
		return
	}
	p.conns[c] = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
		c.close()
	}()
	done := make(chan struct{}, 2)
	go func() { p.requests(c); c.close(); done <- struct{}{} }()
	go func() { p.answers(c); c.close(); done <- struct{}{} }()
	<-done
	<-done
}

// readKafkaFrame reads one size-prefixed Kafka frame, size included.
func readKafkaFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 256<<20 {
		return nil, fmt.Errorf("proxy: frame of %d bytes", n)
	}
	frame := make([]byte, 4+n)
	copy(frame, size[:])
	_, err := io.ReadFull(r, frame[4:])
	return frame, err
}

// requests carries the client's requests to the far broker, cutting one
// Produce request in the middle when armed. With a delay, each request
// reaches the far broker that long after the proxy read it, and those
// read before the client went away are still delivered, as a slow network
// delivers the bytes a dead process had sent.
func (p *kafkaProxy) requests(c *kafkaProxyConn) {
	type pending struct {
		frame []byte
		at    time.Time
		tear  bool
	}
	q := make(chan pending, 4096)
	go func() {
		defer close(q)
		for {
			frame, err := readKafkaFrame(c.client)
			if err != nil || len(frame) < 12 {
				return
			}
			key := int16(binary.BigEndian.Uint16(frame[4:6]))
			corr := int32(binary.BigEndian.Uint32(frame[8:12]))
			c.mu.Lock()
			c.apiKeys[corr] = key
			c.mu.Unlock()
			p.mu.Lock()
			tear := key == p.faultKey && p.midProduce > 0 && len(frame) > 32
			if tear {
				p.midProduce--
				p.midCut++
			}
			var delay time.Duration
			if key == 0 {
				delay = p.delay
			}
			p.mu.Unlock()
			q <- pending{frame, time.Now().Add(delay), tear}
			if tear {
				return
			}
		}
	}()
	for r := range q {
		if d := time.Until(r.at); d > 0 {
			tm := time.NewTimer(d)
			<-tm.C
		}
		if r.tear {
			// Part of the request reaches the far broker, then the
			// connection closes: it must never append a torn request.
			c.upstream.Write(r.frame[:len(r.frame)/2])
			c.close()
			return
		}
		if _, err := c.upstream.Write(r.frame); err != nil {
			c.close()
			return
		}
	}
}

// answers carries the far broker's answers back, swallowing Produce
// answers while dropAnswers is set. Once the client is gone the answers
// are read and dropped until the far broker's side closes.
func (p *kafkaProxy) answers(c *kafkaProxyConn) {
	gone := false
	for {
		frame, err := readKafkaFrame(c.upstream)
		if err != nil || len(frame) < 8 {
			return
		}
		corr := int32(binary.BigEndian.Uint32(frame[4:8]))
		c.mu.Lock()
		key, ok := c.apiKeys[corr]
		delete(c.apiKeys, corr)
		c.mu.Unlock()
		p.mu.Lock()
		drop := ok && key == p.faultKey && p.dropAnswers
		if drop {
			p.dropped++
		}
		tear := ok && !drop && !gone && key == p.faultKey && p.midAnswer > 0 && len(frame) > 32
		if tear {
			p.midAnswer--
			p.midAnswerCut++
		}
		p.mu.Unlock()
		if drop || gone {
			continue
		}
		if tear {
			c.client.Write(frame[:len(frame)/2])
			c.close()
			return
		}
		if _, err := c.client.Write(frame); err != nil {
			gone = true
		}
	}
}

// cut closes every connection and refuses new ones until restore.
func (p *kafkaProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.close()
	}
}

// closeAll closes every connection, new ones being let through.
func (p *kafkaProxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.close()
	}
}

func (p *kafkaProxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

func (p *kafkaProxy) close() {
	p.mu.Lock()
	p.closed = true
	p.ln.Close()
	for c := range p.conns {
		c.close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// farBroker is the far side of the fault tests: a wren broker on a fixed
// port and data directory (so it restarts where it was), advertising its
// proxy's address.
type farBroker struct {
	t     *testing.T
	dir   string
	port  int
	proxy *kafkaProxy
	b     *Broker
}

func startFarBroker(t *testing.T) *farBroker {
	t.Helper()
	f := &farBroker{t: t, dir: t.TempDir(), port: freePort(t)}
	f.proxy = newKafkaProxy(t, fmt.Sprintf("127.0.0.1:%d", f.port))
	f.start()
	t.Cleanup(func() {
		if f.b != nil {
			f.b.Close()
		}
	})
	return f
}

func (f *farBroker) start() {
	f.t.Helper()
	text := fmt.Sprintf(`
[broker]
node.id = 1
log.dirs = [%q]
listeners = ["PLAINTEXT://127.0.0.1:%d", "CONTROLLER://127.0.0.1:0"]
advertised.listeners = ["PLAINTEXT://%s"]

[http]
listen = "127.0.0.1:0"

[cluster]
controller.quorum.voters = ["1@127.0.0.1:9093"]
`, f.dir, f.port, f.proxy.addr())
	cfg, err := config.Parse("far.toml", []byte(text))
	if err != nil {
		f.t.Fatal(err)
	}
	if f.b, err = Start(cfg, Options{Logger: testLogger(f.t)}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *farBroker) stop() {
	f.t.Helper()
	if err := f.b.Close(); err != nil {
		f.t.Fatal(err)
	}
	f.b = nil
}

// produceUplinkBacklog creates topic on the broker at addr with the given
// partitions and writes perPart records of about 1 KiB to each (so that a
// link's catch-up takes a while), in requests of 1,000 records a
// partition; it returns them as acknowledged, and the cluster's id.
func produceUplinkBacklog(t *testing.T, ctx context.Context, addr, topic string, partitions, perPart int) (*uplinkAcked, string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, int32(partitions), 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	clusterID := clusterOf(t, ctx, adm)
	acked := &uplinkAcked{}
	pad := strings.Repeat("x", 1000)
	for i := 0; i < perPart; i += 1000 {
		var rs []*kgo.Record
		for j := i; j < i+1000; j++ {
			for p := range int32(partitions) {
				r := uplinkRecord(topic, p, j)
				r.Value = append(r.Value, pad...)
				rs = append(rs, r)
			}
		}
		res := cl.ProduceSync(ctx, rs...)
		if err := res.FirstErr(); err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			acked.add(r.Record)
		}
	}
	return acked, clusterID
}

// uplinkAcked are the local records acknowledged to the test's producer,
// by partition, in offset order, with their offsets.
type uplinkAcked struct {
	mu    sync.Mutex
	parts map[int32][]*kgo.Record
}

func (a *uplinkAcked) add(rs ...*kgo.Record) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.parts == nil {
		a.parts = map[int32][]*kgo.Record{}
	}
	for _, r := range rs {
		a.parts[r.Partition] = append(a.parts[r.Partition], r)
	}
}

func (a *uplinkAcked) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, rs := range a.parts {
		n += len(rs)
	}
	return n
}

// snapshot is the acknowledged records sorted by offset.
func (a *uplinkAcked) snapshot() map[int32][]*kgo.Record {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[int32][]*kgo.Record{}
	for p, rs := range a.parts {
		rs = slices.Clone(rs)
		slices.SortFunc(rs, func(x, y *kgo.Record) int { return int(x.Offset - y.Offset) })
		out[p] = rs
	}
	return out
}

// uplinkWriter writes records to a local topic until stopped, a batch per
// partition at a time, keeping the ones acknowledged.
type uplinkWriter struct {
	acked  *uplinkAcked
	cancel context.CancelFunc
	done   chan error
}

// startUplinkWriter writes batch records to each of the topic's
// partitions every tick until stop; records are numbered from first.
func startUplinkWriter(ctx context.Context, cl *kgo.Client, topic string, partitions int32, first, batch int, tick time.Duration, acked *uplinkAcked) *uplinkWriter {
	ctx, cancel := context.WithCancel(ctx)
	w := &uplinkWriter{acked: acked, cancel: cancel, done: make(chan error, 1)}
	go func() {
		tk := time.NewTicker(tick)
		defer tk.Stop()
		i := first
		for {
			var rs []*kgo.Record
			for range batch {
				for p := range partitions {
					rs = append(rs, uplinkRecord(topic, p, i))
				}
				i++
			}
			res := cl.ProduceSync(ctx, rs...)
			for _, r := range res {
				if r.Err == nil {
					acked.add(r.Record)
				}
			}
			if err := res.FirstErr(); err != nil {
				if ctx.Err() != nil {
					w.done <- nil
				} else {
					w.done <- err
				}
				return
			}
			select {
			case <-ctx.Done():
				w.done <- nil
				return
			case <-tk.C:
			}
		}
	}()
	return w
}

func (w *uplinkWriter) stop(t *testing.T) {
	t.Helper()
	w.cancel()
	if err := <-w.done; err != nil {
		t.Fatalf("local writer: %v", err)
	}
}

// uplinkReport is what checkUplinkFar found on the far side: each
// acknowledged local record must be there exactly once, in partition
// order, as it was written, with its provenance.
type uplinkReport struct {
	far, acked int
	// extra counts far records of local records not acknowledged to the
	// producer (written, their answer lost): allowed, reported.
	extra                                 int
	losses, duplicates, reorders, damaged int
	lossEx, dupEx, reorderEx, damagedEx   []string
}

func (r *uplinkReport) String() string {
	return fmt.Sprintf("far records %d, acknowledged %d, extra %d: losses %d %v, duplicates %d %v, reorders %d %v, damaged %d %v",
		r.far, r.acked, r.extra, r.losses, r.lossEx, r.duplicates, r.dupEx, r.reorders, r.reorderEx, r.damaged, r.damagedEx)
}

func example(ex []string, format string, args ...any) []string {
	if len(ex) < 5 {
		ex = append(ex, fmt.Sprintf(format, args...))
	}
	return ex
}

// readFarTopic reads every record of a far topic from the start
// (read_committed, as a consumer downstream would; opts are added to the
// client's), until each partition holds the last acknowledged record's
// provenance and then its end as listed once that is so. It fails the
// test at the deadline.
func readFarTopic(t *testing.T, ctx context.Context, seeds []string, farTopic string, last map[int32]int64, timeout time.Duration, opts ...kgo.Opt) map[int32][]*kgo.Record {
	t.Helper()
	ps := map[int32]kgo.Offset{}
	for p := range last {
		ps[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{farTopic: ps}),
		kgo.MetadataMinAge(50 * time.Millisecond), kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.FetchIsolationLevel(kgo.ReadCommitted())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := map[int32][]*kgo.Record{}
	high := map[int32]int64{} // highest local offset seen, by partition
	var ends map[int32]int64  // far ends once every last record is there
	for {
		if ends == nil {
			reached := true
			for p, l := range last {
				if h, ok := high[p]; !ok || h < l {
					reached = false
				}
			}
			if reached {
				listed, err := adm.ListEndOffsets(ctx, farTopic)
				if err == nil && listed.Error() == nil {
					ends = map[int32]int64{}
					listed.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
				}
			}
		}
		if ends != nil {
			done := true
			for p := range last {
				rs := out[p]
				if ends[p] > 0 && (len(rs) == 0 || rs[len(rs)-1].Offset < ends[p]-1) {
					done = false
				}
			}
			if done {
				return out
			}
		}
		if ctx.Err() != nil {
			n := 0
			for _, rs := range out {
				n += len(rs)
			}
			t.Fatalf("reading far topic %s: deadline with %d records read, highest local offsets %v, want %v", farTopic, n, high, last)
		}
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			out[r.Partition] = append(out[r.Partition], r)
			if src, ok := lastSource(r); ok {
				if h, seen := high[r.Partition]; !seen || src.Offset > h {
					high[r.Partition] = src.Offset
				}
			}
		})
	}
}

// lastSource is a record's newest provenance header.
func lastSource(r *kgo.Record) (uplink.Source, bool) {
	for i := len(r.Headers) - 1; i >= 0; i-- {
		if r.Headers[i].Key == uplink.HeaderSource {
			src, err := uplink.ParseSource(r.Headers[i].Value)
			return src, err == nil
		}
	}
	return uplink.Source{}, false
}

// checkUplinkFar holds the far topic's records against the acknowledged
// local ones: every acknowledged record exactly once (losses and
// duplicates apart), in local offset order (reorders), with key, value,
// headers and timestamp as written and a provenance header naming the
// local cluster, topic, partition and offset (damaged).
func checkUplinkFar(far map[int32][]*kgo.Record, acked map[int32][]*kgo.Record, cluster, localTopic string) *uplinkReport {
	rep := &uplinkReport{}
	parts := map[int32]bool{}
	for p := range far {
		parts[p] = true
	}
	for p := range acked {
		parts[p] = true
	}
	for p := range parts {
		want := map[int64]*kgo.Record{}
		for _, r := range acked[p] {
			want[r.Offset] = r
			rep.acked++
		}
		seenAt := map[int64]int64{} // local offset -> far offset of its first copy
		highest := int64(-1)
		for _, r := range far[p] {
			rep.far++
			src, ok := lastSource(r)
			if !ok || src.Cluster != cluster || src.Topic != localTopic || src.Partition != p {
				rep.damaged++
				rep.damagedEx = example(rep.damagedEx, "far %d@%d: provenance %+v", p, r.Offset, src)
				continue
			}
			if at, dup := seenAt[src.Offset]; dup {
				rep.duplicates++
				rep.dupEx = example(rep.dupEx, "local %d@%d at far offsets %d and %d", p, src.Offset, at, r.Offset)
				continue
			}
			seenAt[src.Offset] = r.Offset
			if src.Offset < highest {
				rep.reorders++
				rep.reorderEx = example(rep.reorderEx, "local %d@%d at far offset %d, after local offset %d", p, src.Offset, r.Offset, highest)
			}
			highest = max(highest, src.Offset)
			w := want[src.Offset]
			if w == nil {
				rep.extra++
				continue
			}
			if d := uplinkDiff(w, r); d != "" {
				rep.damaged++
				rep.damagedEx = example(rep.damagedEx, "local %d@%d at far offset %d: %s", p, src.Offset, r.Offset, d)
			}
		}
		for _, r := range acked[p] {
			if _, ok := seenAt[r.Offset]; !ok {
				rep.losses++
				rep.lossEx = example(rep.lossEx, "local %d@%d", p, r.Offset)
			}
		}
	}
	return rep
}

// uplinkDiff says how a far record differs from the local one it
// forwards, "" if it does not: the far one carries the local headers and
// then the provenance header.
func uplinkDiff(local, far *kgo.Record) string {
	var d []string
	if string(local.Key) != string(far.Key) {
		d = append(d, fmt.Sprintf("key %q, want %q", far.Key, local.Key))
	}
	if string(local.Value) != string(far.Value) {
		d = append(d, fmt.Sprintf("value %q, want %q", far.Value, local.Value))
	}
	if !local.Timestamp.Equal(far.Timestamp) {
		d = append(d, fmt.Sprintf("timestamp %v, want %v", far.Timestamp, local.Timestamp))
	}
	hs := far.Headers
	if len(hs) > 0 {
		hs = hs[:len(hs)-1]
	}
	if !slices.EqualFunc(hs, local.Headers, func(a, b kgo.RecordHeader) bool { return a.Key == b.Key && string(a.Value) == string(b.Value) }) {
		d = append(d, fmt.Sprintf("headers %v, want %v and the provenance", far.Headers, local.Headers))
	}
	return strings.Join(d, "; ")
}

// lastOffsets are each partition's last acknowledged local offset.
func lastOffsets(acked map[int32][]*kgo.Record) map[int32]int64 {
	out := map[int32]int64{}
	for p, rs := range acked {
		if len(rs) > 0 {
			out[p] = rs[len(rs)-1].Offset
		}
	}
	return out
}

// uplinkFaultRig is an edge broker whose link goes to a far broker
// through a kafkaProxy, and a local writer.
type uplinkFaultRig struct {
	t               *testing.T
	ctx             context.Context
	far             *farBroker
	edge            *Broker
	ecl             *kgo.Client
	edgeID          string
	topic, farTopic string
	partitions      int32
	acked           *uplinkAcked
}

func newUplinkFaultRig(t *testing.T, ctx context.Context) *uplinkFaultRig {
	t.Helper()
	r := &uplinkFaultRig{t: t, ctx: ctx, topic: "sensors.f", farTopic: "site-7.sensors.f", partitions: 3, acked: &uplinkAcked{}}
	r.far = startFarBroker(t)
	cfg := testConfig(t, t.TempDir(), fmt.Sprintf(`
[uplink.central]
bootstrap.servers = [%q]
topics = ["sensors\\..*"]
remote.topic.prefix = "site-7."
tail.settle.ms = 200
`, r.far.proxy.addr()))
	edge, err := Start(cfg, Options{Logger: testLogger(t), UplinkRefresh: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { edge.Close() })
	r.edge = edge
	var eadm *kadm.Client
	r.ecl, eadm = newClient(t, edge, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	r.edgeID = clusterOf(t, ctx, eadm)
	if _, err := eadm.CreateTopic(ctx, r.partitions, 1, nil, r.topic); err != nil {
		t.Fatal(err)
	}
	return r
}

// write starts a writer of batch records per partition every 10 ms.
func (r *uplinkFaultRig) write(batch int) *uplinkWriter {
	return startUplinkWriter(r.ctx, r.ecl, r.topic, r.partitions, 0, batch, 10*time.Millisecond, r.acked)
}

// stopWriting stops w.
func (r *uplinkFaultRig) stopWriting(w *uplinkWriter) {
	r.t.Helper()
	w.stop(r.t)
}

// farHolds polls until the far topic holds at least n records in all,
// through the proxy.
func (r *uplinkFaultRig) farHolds(n int64, timeout time.Duration) {
	r.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.far.proxy.addr()), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		r.t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	pollFor(r.t, fmt.Sprintf("the far side holding %d records", n), timeout, func() bool {
		ctx, cancel := context.WithTimeout(r.ctx, 2*time.Second)
		defer cancel()
		ends, err := adm.ListEndOffsets(ctx, r.farTopic)
		if err != nil {
			return false
		}
		var total int64
		ends.Each(func(o kadm.ListedOffset) { total += max(o.Offset, 0) })
		return total >= n
	})
}

// check reads the far topic and fails the test on any loss, duplicate,
// reorder or damaged record.
func (r *uplinkFaultRig) check(what string) {
	r.t.Helper()
	acked := r.acked.snapshot()
	far := readFarTopic(r.t, r.ctx, []string{r.far.proxy.addr()}, r.farTopic, lastOffsets(acked), 90*time.Second)
	rep := checkUplinkFar(far, acked, r.edgeID, r.topic)
	p := r.far.proxy
	p.mu.Lock()
	r.t.Logf("%s: %v; proxy: %d requests cut in the middle, %d answers swallowed; link's last session error: %q",
		what, rep, p.midCut, p.dropped, r.edge.UplinkStatus()[0].LastError)
	p.mu.Unlock()
	if rep.losses+rep.duplicates+rep.reorders+rep.damaged > 0 {
		r.t.Fatalf("%s: %v", what, rep)
	}
}

// TestUplinkCheckerFindsFaults: the checker tells losses, duplicates,
// reorders and damaged records apart, with their offsets.
func TestUplinkCheckerFindsFaults(t *testing.T) {
	rec := func(p int32, off int64, i int) *kgo.Record {
		r := uplinkRecord("sensors.z", p, i)
		r.Offset = off
		return r
	}
	fwd := func(r *kgo.Record, farOff int64) *kgo.Record {
		f := *r
		f.Headers = append(slices.Clone(r.Headers), kgo.RecordHeader{Key: uplink.HeaderSource,
			Value: []byte(uplink.Source{Cluster: "edge", Topic: "sensors.z", Partition: r.Partition, Offset: r.Offset}.String())})
		f.Offset = farOff
		return &f
	}
	var acked []*kgo.Record
	for i := range 6 {
		acked = append(acked, rec(0, int64(i), i))
	}
	damaged := fwd(acked[5], 5)
	damaged.Value = []byte("other")
	far := []*kgo.Record{fwd(acked[0], 0), fwd(acked[2], 1), fwd(acked[1], 2), fwd(acked[2], 3), fwd(acked[4], 4), damaged}
	rep := checkUplinkFar(map[int32][]*kgo.Record{0: far}, map[int32][]*kgo.Record{0: acked}, "edge", "sensors.z")
	if rep.losses != 1 || rep.duplicates != 1 || rep.reorders != 1 || rep.damaged != 1 || rep.extra != 0 {
		t.Fatalf("report %v, want one of each", rep)
	}
	for _, want := range []string{"local 0@3", "local 0@2 at far offsets 1 and 3", "local 0@1 at far offset 2, after local offset 2", "value \"other\""} {
		if !strings.Contains(rep.String(), want) {
			t.Errorf("report %v does not say %q", rep, want)
		}
	}
	if rep := checkUplinkFar(map[int32][]*kgo.Record{0: {fwd(acked[0], 0), fwd(acked[1], 1)}},
		map[int32][]*kgo.Record{0: acked[:2]}, "edge", "sensors.z"); rep.losses+rep.duplicates+rep.reorders+rep.damaged+rep.extra != 0 {
		t.Fatalf("clean far side reported %v", rep)
	}
}

// uplinkOutage is how long the link stays cut while the writer goes on:
// seconds by default, minutes in long mode.
func uplinkOutage() time.Duration {
	if uplinkLong() {
		return 3 * time.Minute
	}
	return 2 * time.Second
}

// TestUplinkLinkCut: the link to the far side is cut (every connection
// closed, new ones refused) for a while as the local writer goes on, then
// restored: the far side ends with every acknowledged record once, in
// order.
func TestUplinkLinkCut(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), uplinkOutage()+3*time.Minute)
	defer cancel()
	r := newUplinkFaultRig(t, ctx)
	w := r.write(5)
	r.farHolds(300, 30*time.Second)
	r.far.proxy.cut()
	outage := time.NewTimer(uplinkOutage())
	<-outage.C
	r.far.proxy.restore()
	r.farHolds(int64(r.acked.count()), uplinkOutage()+time.Minute)
	r.stopWriting(w)
	r.check("after a cut of " + uplinkOutage().String())
}

// TestUplinkCutMidRequest: connections to the far side close in the
// middle of Produce requests, three times, as the writer goes on: a
// torn request is never appended, and the retries land once.
func TestUplinkCutMidRequest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := newUplinkFaultRig(t, ctx)
	w := r.write(5)
	r.farHolds(300, 30*time.Second)
	for i := range 3 {
		r.far.proxy.mu.Lock()
		r.far.proxy.midProduce++
		r.far.proxy.mu.Unlock()
		pollFor(t, fmt.Sprintf("produce request %d cut in the middle", i+1), 30*time.Second, func() bool {
			r.far.proxy.mu.Lock()
			defer r.far.proxy.mu.Unlock()
			return r.far.proxy.midCut > i
		})
	}
	r.farHolds(int64(r.acked.count()), time.Minute)
	r.stopWriting(w)
	r.check("after 3 produce requests cut in the middle")
}

// TestUplinkAnswersDropped: the far side gets the link's Produce requests
// and appends them, but its answers are swallowed, then every connection
// is cut: the producer's retries of what the far side holds already are
// recognised (idempotence), or the next session reads them in the tail.
func TestUplinkAnswersDropped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := newUplinkFaultRig(t, ctx)
	w := r.write(5)
	r.farHolds(300, 30*time.Second)
	for round := range 3 {
		p := r.far.proxy
		p.mu.Lock()
		p.dropAnswers, p.dropped = true, 0
		p.mu.Unlock()
		pollFor(t, fmt.Sprintf("round %d: produce answers swallowed", round), 30*time.Second, func() bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			return p.dropped >= 3
		})
		// The link's requests now wait for answers that never come;
		// the cut ends them.
		if round%2 == 0 {
			p.closeAll()
		} else {
			p.cut()
			p.restore()
		}
		p.mu.Lock()
		p.dropAnswers = false
		p.mu.Unlock()
	}
	r.farHolds(int64(r.acked.count()), time.Minute)
	r.stopWriting(w)
	r.check("after produce answers swallowed three times")
}

// TestUplinkFarRestarts: the far broker stops and starts again on the same
// data and port, twice, as the writer goes on.
func TestUplinkFarRestarts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := newUplinkFaultRig(t, ctx)
	w := r.write(5)
	held := int64(300)
	for range 2 {
		r.farHolds(held, time.Minute)
		r.far.stop()
		r.far.start()
		held = int64(r.acked.count())
	}
	r.farHolds(int64(r.acked.count()), time.Minute)
	r.stopWriting(w)
	r.check("after two restarts of the far broker")
}
