package broker

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"
)

// Hostile clients: each test runs the real wren binary with its default
// settings, attacks it as a hostile or broken client would, and runs a
// well-behaved client beside the attack that must keep being served. Each
// logs one "figures" line: the well-behaved client's operations, errors
// and p99 latency, and what became of the attack's connections. Then it
// checks that every record acknowledged to the well-behaved client reads
// back.
//
// By default each attack lasts a few seconds. With WREN_MEMORY_TEST=1 (root
// and the cgroup v1 memory controller) the broker runs in a 64 MiB memory
// cgroup, as TestMemory64MBProcess runs it, and each attack lasts longer:
// the slow senders then outlive FrameTimeout, so the test also shows the
// whole-frame deadline closing them. WREN_TEST_BIN runs the tests against
// another build, for figures from before a change.

// hostileOpTimeout bounds one operation of the well-behaved client: the
// clients' request.timeout.ms default. An operation that takes longer is
// an error.
const hostileOpTimeout = 30 * time.Second

// hostileLong reports whether the long, cgroup variant runs.
func hostileLong() bool { return os.Getenv("WREN_MEMORY_TEST") != "" }

// hostileDuration is how long an attack lasts: short by default, long
// enough to outlive the frame deadline in the long variant.
func hostileDuration(short time.Duration) time.Duration {
	if hostileLong() {
		return 75 * time.Second
	}
	return short
}

type hostileBroker struct {
	addr   string
	stderr *lockedBuffer
	pid    int
	exited chan error
}

// startHostileBroker runs wren serve with the default settings plus extra
// TOML lines for [broker], in a 64 MiB memory cgroup in the long variant.
func startHostileBroker(t *testing.T, extra string) *hostileBroker {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the wren binary")
	}
	bin := wrenBinary(t)
	cgroup := ""
	if hostileLong() {
		cgroup = newMemoryCgroup(t, 64<<20)
	}
	dir := t.TempDir()
	conf, addr := writeSingleNodeConfig(t, dir, filepath.Join(dir, "data"), extra, `[groups]
offsets.topic.num.partitions = 1
[logging]
level = "info"
`)
	b := &hostileBroker{addr: addr, stderr: &lockedBuffer{}, exited: make(chan error, 1)}
	var cmd *exec.Cmd
	if cgroup != "" {
		cmd = diesWithTest(exec.Command("sh", "-c", `echo $$ > "$1/cgroup.procs" && exec "$2" serve --config "$3"`, "sh", cgroup, bin, conf))
	} else {
		cmd = diesWithTest(exec.Command(bin, "serve", "--config", conf))
	}
	cmd.Stderr = b.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b.pid = cmd.Process.Pid
	go func() { b.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(unix.SIGTERM)
		select {
		case <-b.exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-b.exited
		}
	})
	waitListening(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := kadm.NewClient(admin).CreateTopic(ctx, 1, 1, nil, "good"); err != nil {
		t.Fatal(err)
	}
	return b
}

// latencies collects the well-behaved client's operations.
type latencies struct {
	mu     sync.Mutex
	took   []time.Duration
	errors int
	first  error
}

func (l *latencies) add(took time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil && took > hostileOpTimeout {
		err = fmt.Errorf("took %v, past %v", took, hostileOpTimeout)
	}
	if err != nil {
		l.errors++
		if l.first == nil {
			l.first = err
		}
		took = max(took, hostileOpTimeout)
	}
	l.took = append(l.took, took)
}

func (l *latencies) p99() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.took) == 0 {
		return 0
	}
	s := slices.Clone(l.took)
	slices.Sort(s)
	return s[(len(s)*99+99)/100-1]
}

func (l *latencies) String() string {
	p99 := l.p99()
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("ops=%d errors=%d p99=%v first_error=%v", len(l.took), l.errors, p99.Round(time.Millisecond), l.first)
}

// ackedRecords are the well-behaved producer's acknowledged records.
type ackedRecords struct {
	mu sync.Mutex
	m  map[int64]string
}

func (a *ackedRecords) add(offset int64, value string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[int64]string{}
	}
	a.m[offset] = value
}

// checkReadBack reads topic good from the start and fails the test if an
// acknowledged record is missing or different.
func (a *ackedRecords) checkReadBack(t *testing.T, addr string) {
	t.Helper()
	a.mu.Lock()
	want := maps.Clone(a.m)
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("good"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(4<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen, total := 0, len(want)
	for seen < total {
		if ctx.Err() != nil {
			t.Errorf("read back %d of %d acknowledged records before the deadline", seen, total)
			return
		}
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if v, ok := want[r.Offset]; ok {
				if string(r.Value) != v {
					t.Errorf("offset %d: read %.30q, acknowledged %.30q", r.Offset, r.Value, v)
				}
				delete(want, r.Offset)
				seen++
			}
		})
	}
	t.Logf("all %d acknowledged records read back", seen)
}

// produceLoop produces records of size bytes one at a time with acks=all
// until ctx ends, timing each.
func produceLoop(ctx context.Context, t *testing.T, addr string, size int, lat *latencies, acked *ackedRecords) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("good"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DisableIdempotentWrite(), kgo.RecordDeliveryTimeout(hostileOpTimeout), kgo.ProducerLinger(0))
	if err != nil {
		t.Error(err)
		return
	}
	defer cl.Close()
	pad := strings.Repeat("w", size)
	for i := 0; ctx.Err() == nil; i++ {
		value := fmt.Sprintf("good-%d-%s", i, pad)
		opCtx, cancel := context.WithTimeout(context.Background(), hostileOpTimeout)
		start := time.Now()
		r, err := cl.ProduceSync(opCtx, &kgo.Record{Value: []byte(value)}).First()
		cancel()
		lat.add(time.Since(start), err)
		if err == nil {
			acked.add(r.Offset, value)
		}
	}
}

// metadataLoop sends a Metadata request (a small one) on a long-lived
// client until ctx ends, timing each.
func metadataLoop(ctx context.Context, t *testing.T, addr string, lat *latencies) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Error(err)
		return
	}
	defer cl.Close()
	for ctx.Err() == nil {
		opCtx, cancel := context.WithTimeout(context.Background(), hostileOpTimeout)
		start := time.Now()
		req := kmsg.NewPtrMetadataRequest()
		_, err := req.RequestWith(opCtx, cl)
		cancel()
		lat.add(time.Since(start), err)
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond): // pacing the client, not waiting for a condition
		}
	}
}

// newClientLoop opens a new client for every operation (fresh connections
// from the client's address: ApiVersions, Metadata, Produce) and produces
// one small record with acks=all.
func newClientLoop(ctx context.Context, t *testing.T, addr string, lat *latencies, acked *ackedRecords) {
	for i := 0; ctx.Err() == nil; i++ {
		start := time.Now()
		opCtx, cancel := context.WithTimeout(context.Background(), hostileOpTimeout)
		value := fmt.Sprintf("fresh-%d", i)
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("good"), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.DisableIdempotentWrite(), kgo.RecordDeliveryTimeout(hostileOpTimeout))
		if err == nil {
			var r *kgo.Record
			r, err = cl.ProduceSync(opCtx, &kgo.Record{Value: []byte(value)}).First()
			if err == nil {
				acked.add(r.Offset, value)
			}
			cl.Close()
		}
		cancel()
		lat.add(time.Since(start), err)
	}
}

// attackConns records the lives of the attack's connections.
type attackConns struct {
	opened, closed atomic.Int64
	mu             sync.Mutex
	longest        time.Duration
	open           map[int64]time.Time
	next           int64
}

func (a *attackConns) begin() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.open == nil {
		a.open = map[int64]time.Time{}
	}
	a.next++
	a.open[a.next] = time.Now()
	a.opened.Add(1)
	return a.next
}

func (a *attackConns) end(id int64, byServer bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if byServer {
		a.longest = max(a.longest, time.Since(a.open[id]))
		a.closed.Add(1)
	}
	delete(a.open, id)
}

// oldestOpen is the age of the oldest attack connection still open.
func (a *attackConns) oldestOpen() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	var oldest time.Duration
	for _, t := range a.open {
		oldest = max(oldest, time.Since(t))
	}
	return oldest
}

func (a *attackConns) String() string {
	a.mu.Lock()
	longest := a.longest
	a.mu.Unlock()
	return fmt.Sprintf("attack_conns=%d closed_by_broker=%d longest_closed=%v",
		a.opened.Load(), a.closed.Load(), longest.Round(time.Millisecond))
}

// dialAttack dials addr from local (a loopback address of its own).
func dialAttack(ctx context.Context, local, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	return d.DialContext(ctx, "tcp", addr)
}

// apiVersionsRoundTrip sends ApiVersions v3 and reads the answer.
func apiVersionsRoundTrip(nc net.Conn) error {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "hostile", "1"
	b := make([]byte, 4, 64)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.Version))
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint16(b, 7)
	b = append(b, "hostile"...)
	b = append(b, 0)
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	defer nc.SetDeadline(time.Time{})
	if _, err := nc.Write(b); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		return err
	}
	_, err := io.CopyN(io.Discard, nc, int64(binary.BigEndian.Uint32(size[:])))
	return err
}

// slowSender opens a connection from local, sends ApiVersions, announces a
// Produce frame of size bytes, sends its first bytes and then one byte
// every gap, until the broker closes it; then it starts again.
func slowSender(ctx context.Context, t *testing.T, local, addr string, size int, gap time.Duration, conns *attackConns) {
	frame := produceFrame(t, "good", uncompressedBatch(t, size-200))
	for ctx.Err() == nil {
		nc, err := dialAttack(ctx, local, addr)
		if err != nil {
			continue
		}
		if apiVersionsRoundTrip(nc) != nil {
			nc.Close()
			continue
		}
		id := conns.begin()
		closed := make(chan struct{})
		go func() {
			// The broker sends nothing until the frame is whole: a read
			// returns when it closes the connection.
			io.Copy(io.Discard, nc)
			close(closed)
		}()
		n := 64
		nc.Write(frame[:n])
		tick := time.NewTicker(gap)
	trickle:
		for {
			select {
			case <-ctx.Done():
				break trickle
			case <-closed:
				break trickle
			case <-tick.C:
				if n < len(frame)-1 {
					nc.Write(frame[n : n+1])
					n++
				}
			}
		}
		tick.Stop()
		select {
		case <-closed:
			conns.end(id, true)
		default:
			conns.end(id, false)
		}
		nc.Close()
		<-closed
	}
}

// TestHostileSlowSenderProcess: one connection announces an 8 MiB Produce
// frame and trickles its body, sixteen more announce 64 KiB frames (the
// small-request share) and trickle theirs, all from one address. A
// well-behaved producer of 120 KB records and a Metadata client on another
// address must keep being served, and the attack's connections must be
// closed: at once while others wait for what they hold, at FrameTimeout
// (30 s) otherwise.
func TestHostileSlowSenderProcess(t *testing.T) {
	b := startHostileBroker(t, "")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var conns attackConns
	var wg sync.WaitGroup
	gap := 5 * time.Second
	wg.Add(17)
	go func() { defer wg.Done(); slowSender(ctx, t, "127.0.0.2", b.addr, 8<<20-4096, gap, &conns) }()
	for range 16 {
		go func() { defer wg.Done(); slowSender(ctx, t, "127.0.0.2", b.addr, 64<<10, gap, &conns) }()
	}
	// Let the attack take the budgets before the well-behaved clients start.
	waitFor(t, 10*time.Second, "the attack's 17 connections", func() bool { return conns.opened.Load() >= 17 })

	var produce, metadata latencies
	var acked ackedRecords
	good, stopGood := context.WithCancel(context.Background())
	var goodWG sync.WaitGroup
	goodWG.Add(2)
	go func() { defer goodWG.Done(); produceLoop(good, t, b.addr, 120_000, &produce, &acked) }()
	go func() { defer goodWG.Done(); metadataLoop(good, t, b.addr, &metadata) }()
	runFor(t, b, hostileDuration(8*time.Second))
	stopGood()
	goodWG.Wait()
	oldest := conns.oldestOpen()
	stop()
	wg.Wait()

	t.Logf("figures slow-sender: produce 120KB %v; metadata %v; %v; oldest still open when the attack stopped %v",
		&produce, &metadata, &conns, oldest.Round(time.Millisecond))
	for name, l := range map[string]*latencies{"produce": &produce, "metadata": &metadata} {
		if l.errors > 0 || len(l.took) == 0 || l.p99() > 5*time.Second {
			t.Errorf("well-behaved %s: %v", name, l)
		}
	}
	if conns.closed.Load() == 0 {
		t.Errorf("the broker closed none of the slow senders' connections: %v", &conns)
	}
	if limit := 30*time.Second + 5*time.Second; oldest > limit {
		t.Errorf("a slow sender's connection was still open after %v (frame deadline 30 s)", oldest)
	}
	acked.checkReadBack(t, b.addr)
}

// TestHostileIdleConnectionsProcess: five addresses open 256 connections
// each, send one ApiVersions on each and idle, and open a new one whenever
// one is closed (leaking clients). A well-behaved client that opens new
// connections for every operation must keep being served.
func TestHostileIdleConnectionsProcess(t *testing.T) {
	b := startHostileBroker(t, "")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var conns attackConns
	var wg sync.WaitGroup
	var open atomic.Int64
	for a := 2; a <= 6; a++ {
		local := fmt.Sprintf("127.0.0.%d", a)
		for range 256 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					nc, err := dialAttack(ctx, local, b.addr)
					if err != nil {
						continue
					}
					if apiVersionsRoundTrip(nc) != nil {
						nc.Close()
						select {
						case <-ctx.Done():
						case <-time.After(500 * time.Millisecond): // pacing the reconnects of a refused client
						}
						continue
					}
					id := conns.begin()
					open.Add(1)
					closed := make(chan struct{})
					go func() { io.Copy(io.Discard, nc); close(closed) }()
					select {
					case <-ctx.Done():
						conns.end(id, false)
					case <-closed:
						conns.end(id, true)
					}
					open.Add(-1)
					nc.Close()
					<-closed
				}
			}()
		}
	}
	// The defaults before wren shared the slots fairly let 1024 in; now
	// the 128 slots kept for addresses with few connections stay free.
	waitFor(t, 60*time.Second, "the idle connections to fill the broker", func() bool { return open.Load() >= 880 })

	var fresh latencies
	var acked ackedRecords
	good, stopGood := context.WithCancel(context.Background())
	var goodWG sync.WaitGroup
	goodWG.Add(1)
	go func() { defer goodWG.Done(); newClientLoop(good, t, b.addr, &fresh, &acked) }()
	runFor(t, b, hostileDuration(8*time.Second))
	stopGood()
	goodWG.Wait()
	stop()
	wg.Wait()

	t.Logf("figures idle-connections: new client per produce %v; %v", &fresh, &conns)
	if fresh.errors > 0 || len(fresh.took) == 0 || fresh.p99() > 5*time.Second {
		t.Errorf("well-behaved client opening new connections: %v", &fresh)
	}
	acked.checkReadBack(t, b.addr)
}

// TestHostileGatewayProcess: 300 clients behind one address (devices
// behind a gateway, or the clients of one busy host), each producing a
// record every 200 ms on its own connections, must all be served with the
// default settings.
func TestHostileGatewayProcess(t *testing.T) {
	b := startHostileBroker(t, "")
	var lat latencies
	var acked ackedRecords
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	const devices = 300
	for d := range devices {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.DefaultProduceTopic("good"), kgo.RequiredAcks(kgo.AllISRAcks()),
				kgo.DisableIdempotentWrite(), kgo.RecordDeliveryTimeout(hostileOpTimeout))
			if err != nil {
				lat.add(0, err)
				return
			}
			defer cl.Close()
			for i := 0; ctx.Err() == nil; i++ {
				value := fmt.Sprintf("device-%d-%d", d, i)
				opCtx, cancel := context.WithTimeout(context.Background(), hostileOpTimeout)
				start := time.Now()
				r, err := cl.ProduceSync(opCtx, &kgo.Record{Value: []byte(value)}).First()
				cancel()
				lat.add(time.Since(start), err)
				if err == nil {
					acked.add(r.Offset, value)
				}
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond): // a device's pace, not waiting for a condition
				}
			}
		}()
	}
	runFor(t, b, hostileDuration(8*time.Second))
	stop()
	wg.Wait()
	refused := strings.Count(b.stderr.String(), "connection refused")
	t.Logf("figures gateway: %d devices on one address: %v; refusal log lines %d", devices, &lat, refused)
	if lat.errors > 0 || len(lat.took) == 0 || lat.p99() > 5*time.Second {
		t.Errorf("devices behind one address: %v", &lat)
	}
	acked.checkReadBack(t, b.addr)
}

// TestHostileTLSOnPlaintextProcess: a client configured for TLS keeps
// trying the plaintext port, ten handshakes a second. The broker says what
// is wrong in one line, instead of a frame size out of range each time,
// and the well-behaved producer is not disturbed.
func TestHostileTLSOnPlaintextProcess(t *testing.T) {
	b := startHostileBroker(t, "")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var conns attackConns
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			id := conns.begin()
			d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: &tls.Config{InsecureSkipVerify: true}}
			nc, err := d.DialContext(ctx, "tcp", b.addr)
			if err == nil {
				nc.Close()
			}
			conns.end(id, err != nil && ctx.Err() == nil)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond): // the client's retry pace
			}
		}
	}()
	var produce latencies
	var acked ackedRecords
	good, stopGood := context.WithCancel(context.Background())
	var goodWG sync.WaitGroup
	goodWG.Add(1)
	go func() { defer goodWG.Done(); produceLoop(good, t, b.addr, 1000, &produce, &acked) }()
	runFor(t, b, hostileDuration(5*time.Second))
	stopGood()
	goodWG.Wait()
	stop()
	wg.Wait()
	logs := b.stderr.String()
	named := strings.Count(logs, "TLS handshake received on a plaintext listener")
	sizes := strings.Count(logs, "request frame size out of range")
	t.Logf("figures tls-on-plaintext: produce %v; %v; log lines naming TLS %d, frame-size lines %d", &produce, &conns, named, sizes)
	if produce.errors > 0 || len(produce.took) == 0 {
		t.Errorf("well-behaved producer: %v", &produce)
	}
	if sizes != 0 || named < 1 || named > int(hostileDuration(5*time.Second)/time.Minute)+1 {
		t.Errorf("%d lines name the TLS client, %d say frame size out of range; want one a minute and none", named, sizes)
	}
	acked.checkReadBack(t, b.addr)
}

// runFor lets the attack run for d, failing the test if the broker exits.
func runFor(t *testing.T, b *hostileBroker, d time.Duration) {
	t.Helper()
	select {
	case err := <-b.exited:
		t.Fatalf("the broker exited during the attack: %v\n%s", err, tail(b.stderr.String(), 3000))
	case <-time.After(d):
	}
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
