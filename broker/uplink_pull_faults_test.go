package broker

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// directDial makes a client dial addr whatever broker address it is told
// to reach: a test's own clients reach a far broker that advertises its
// fault proxy without going through the proxy, so that they keep working
// while the link is cut.
func directDial(addr string) kgo.Opt {
	return kgo.Dialer(func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	})
}

// uplinkPullRig is an edge broker whose link pulls a far topic from a far
// broker through a kafkaProxy, and a writer on the far side that reaches
// the far broker directly.
type uplinkPullRig struct {
	t               *testing.T
	ctx             context.Context
	far             *farBroker
	edge            *Broker
	ecl             *kgo.Client
	fcl             *kgo.Client
	farID           string
	farTopic, local string
	partitions      int32
	acked           *uplinkAcked
}

func newUplinkPullRig(t *testing.T, ctx context.Context) *uplinkPullRig {
	t.Helper()
	r := &uplinkPullRig{t: t, ctx: ctx, farTopic: "site-7.commands.f", local: "central.site-7.commands.f", partitions: 3, acked: &uplinkAcked{}}
	r.far = startFarBroker(t)
	direct := fmt.Sprintf("127.0.0.1:%d", r.far.port)
	var err error
	r.fcl, err = kgo.NewClient(kgo.SeedBrokers(direct), directDial(direct), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.fcl.Close)
	fadm := kadm.NewClient(r.fcl)
	r.farID = clusterOf(t, ctx, fadm)
	if _, err := fadm.CreateTopic(ctx, r.partitions, 1, nil, r.farTopic); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, t.TempDir(), fmt.Sprintf(`
[uplink.central]
bootstrap.servers = [%q]
pull.topics = ["site-7\\.commands\\..*"]
pull.local.topic.prefix = "central."
tail.settle.ms = 200
`, r.far.proxy.addr()))
	edge, err := Start(cfg, Options{Logger: testLogger(t), UplinkRefresh: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { edge.Close() })
	r.edge = edge
	r.ecl, _ = newClient(t, edge, kgo.MetadataMinAge(50*time.Millisecond))
	return r
}

// localHolds polls until the local topic holds at least n records.
func (r *uplinkPullRig) localHolds(n int64, timeout time.Duration) {
	r.t.Helper()
	adm := kadm.NewClient(r.ecl)
	pollFor(r.t, fmt.Sprintf("the local topic holding %d records", n), timeout, func() bool {
		ctx, cancel := context.WithTimeout(r.ctx, 2*time.Second)
		defer cancel()
		return localHeld(ctx, adm, r.local) >= n
	})
}

// check reads the local topic and fails the test on any loss, duplicate,
// reorder or damaged record of what the far side acknowledged.
func (r *uplinkPullRig) check(what string) {
	r.t.Helper()
	acked := r.acked.snapshot()
	got := readFarTopic(r.t, r.ctx, []string{r.edge.Addr().String()}, r.local, lastOffsets(acked), 90*time.Second)
	rep := checkUplinkFar(got, acked, r.farID, r.farTopic)
	p := r.far.proxy
	p.mu.Lock()
	r.t.Logf("%s: %v; proxy: %d fetch requests and %d fetch answers cut in the middle, %d fetch answers swallowed; link's last session error: %q",
		what, rep, p.midCut, p.midAnswerCut, p.dropped, r.edge.UplinkStatus()[0].LastError)
	p.mu.Unlock()
	if rep.losses+rep.duplicates+rep.reorders+rep.damaged+rep.extra > 0 {
		r.t.Fatalf("%s: %v", what, rep)
	}
}

// TestUplinkPullFaults is the pull side's counterpart of the push side's
// fault proxy tests: a link pulling from a far broker (a writer keeps
// writing to it directly) is cut for a while, then has Fetch requests
// and Fetch answers cut in the middle, then its Fetch answers swallowed
// until its connections close (WREN_UPLINK_LONG=1: a longer cut, more
// of each); the local topic ends with every record the
// far side acknowledged exactly once, in order, as written, with the far
// provenance.
func TestUplinkPullFaults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), uplinkOutage()+3*time.Minute)
	defer cancel()
	began := time.Now()
	tears, drops := 1, 1
	if uplinkLong() {
		tears, drops = 5, 3
	}
	r := newUplinkPullRig(t, ctx)
	p := r.far.proxy
	p.mu.Lock()
	p.faultKey = int16(kmsg.Fetch)
	p.mu.Unlock()
	w := startUplinkWriter(ctx, r.fcl, r.farTopic, r.partitions, 0, 5, 10*time.Millisecond, r.acked)
	r.localHolds(300, 30*time.Second)

	// The link cut while the far side keeps taking writes.
	p.cut()
	outage := time.NewTimer(uplinkOutage())
	<-outage.C
	p.restore()
	r.localHolds(int64(r.acked.count()), uplinkOutage()+time.Minute)

	t.Logf("%v: caught up after the cut", time.Since(began))

	// Fetch requests, then Fetch answers, cut in the middle.
	for i := range tears {
		p.mu.Lock()
		p.midProduce++
		p.mu.Unlock()
		pollFor(t, fmt.Sprintf("fetch request %d cut in the middle", i+1), 30*time.Second, func() bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			return p.midCut > i
		})
	}
	t.Logf("%v: %d fetch requests cut", time.Since(began), tears)
	for i := range tears {
		p.mu.Lock()
		p.midAnswer++
		p.mu.Unlock()
		pollFor(t, fmt.Sprintf("fetch answer %d cut in the middle", i+1), 30*time.Second, func() bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			return p.midAnswerCut > i
		})
	}

	t.Logf("%v: %d fetch answers cut", time.Since(began), tears)

	// Fetch answers swallowed, then the connections closed or cut. The
	// link's consumer sends its next fetch on a connection only after the
	// answer to the last one, so one swallowed answer holds it.
	for round := range drops {
		p.mu.Lock()
		p.dropAnswers, p.dropped = true, 0
		p.mu.Unlock()
		pollFor(t, fmt.Sprintf("round %d: fetch answers swallowed", round), 30*time.Second, func() bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			return p.dropped >= 1
		})
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
	t.Logf("%v: fetch answers swallowed %d times", time.Since(began), drops)
	r.localHolds(int64(r.acked.count()), time.Minute)
	w.stop(t)
	t.Logf("%v: caught up", time.Since(began))
	r.check("pulling through a cut, torn fetch requests and answers, and swallowed answers")
}
