package broker

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// isolation is TestThreeProcessCluster's WREN_FAILOVER_MODE=isolate: every
// link of the controller's CONTROLLER listener (the quorum's and the
// replicas' connections, both ways) is held silent by the peer proxies
// while the process keeps running and keeps its clients. Per trial it
// measures the time from the cut to a new controller seen by both
// survivors, to the isolated node no longer naming itself controller (its
// lease ran out), and to every partition it led having another leader;
// an acks=all produce sent straight to it must never be acknowledged.
// After the heal the isolated node must follow the new controller without
// another election: every node stays in the new controller's epoch.
type isolation struct {
	fc    *faultCluster
	topic string
	// http are the nodes' operations endpoints, by id from 1.
	http []string

	newController, steppedDown, leadersMoved, follow []time.Duration

	// The current trial: when the cut began, the partitions the isolated
	// node led then and its epoch, and its watchers' answers.
	cutAt    time.Time
	led      []int
	oldEpoch int64
	stepped  chan stepDown
	atOnce   chan string
	// newEpoch and elections are the new controller's epoch and its
	// count of elections seen, taken once it is elected; afterHeal
	// checks that neither moves.
	newEpoch, elections int64
}

// quorumMetrics scrapes a node's /metrics for its controller epoch and the
// elections it saw begin.
func quorumMetrics(ctx context.Context, addr string) (epoch, elections int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	epoch, elections = -1, -1
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		switch name {
		case "wren_controller_epoch":
			epoch, err = strconv.ParseInt(value, 10, 64)
		case "wren_controller_elections_total":
			elections, err = strconv.ParseInt(value, 10, 64)
		}
		if err != nil {
			return 0, 0, fmt.Errorf("%s from %s: %w", name, addr, err)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	if epoch < 0 || elections < 0 {
		return 0, 0, fmt.Errorf("no wren_controller_epoch or wren_controller_elections_total in %s/metrics", addr)
	}
	return epoch, elections, nil
}

func (iso *isolation) metrics(ctx context.Context, t *testing.T, n *clusterNode) (epoch, elections int64) {
	t.Helper()
	epoch, elections, err := quorumMetrics(ctx, iso.http[n.id-1])
	if err != nil {
		t.Fatalf("node %d: %v", n.id, err)
	}
	return epoch, elections
}

// stepDown is when the isolated node stopped naming itself controller,
// and whom it named then.
type stepDown struct {
	after      time.Duration
	controller int32
	err        string
}

// cut isolates old, the controller, after it has it lead partitions,
// and starts watching it.
func (iso *isolation) cut(ctx context.Context, t *testing.T, old *clusterNode) {
	t.Helper()
	iso.led = iso.leadSome(ctx, t, old)
	iso.oldEpoch, _ = iso.metrics(ctx, t, old)

	cut := time.Now()
	iso.cutAt = cut
	iso.fc.proxies.silence(int32(old.id))
	// The isolated node is watched on its own: it must stop naming itself
	// controller once its lease runs out, whatever the others do.
	stepped := make(chan stepDown, 1)
	iso.stepped = stepped
	go func() {
		deadline := cut.Add(30 * time.Second)
		for {
			c, _, err := metadataOf(ctx, old)
			if err == nil && c != int32(old.id) {
				stepped <- stepDown{after: time.Since(cut), controller: c}
				return
			}
			if time.Now().After(deadline) {
				stepped <- stepDown{err: fmt.Sprintf("node %d still names itself controller 30 s after it was isolated (last error %v)", old.id, err)}
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	// A produce to the isolated leader at once: it still takes it, and
	// must not acknowledge it, since no follower can reach it.
	iso.atOnce = make(chan string, 1)
	if len(iso.led) > 0 {
		go func(p int32, answer chan<- string) { answer <- produceDirect(ctx, t, old, iso.topic, p) }(int32(iso.led[0]), iso.atOnce)
	}
}

// elected checks and measures the rest, once the survivors agree on
// newCtrl, took after the cut: the new epoch, the isolated node's step
// down, its partitions' new leaders, and its refusal of acks=all produce.
func (iso *isolation) elected(ctx context.Context, t *testing.T, trial int, old *clusterNode, others []*clusterNode, newCtrl int32, took time.Duration) {
	t.Helper()
	iso.newController = append(iso.newController, took)
	for _, n := range others {
		if n.id == int(newCtrl) {
			iso.newEpoch, iso.elections = iso.metrics(ctx, t, n)
		}
	}
	if iso.newEpoch <= iso.oldEpoch {
		t.Fatalf("trial %d: new controller %d is in epoch %d, the isolated node %d was in %d", trial, newCtrl, iso.newEpoch, old.id, iso.oldEpoch)
	}

	sd := <-iso.stepped
	if sd.err != "" {
		t.Fatalf("trial %d: %s", trial, sd.err)
	}
	iso.steppedDown = append(iso.steppedDown, sd.after)

	moved := time.Duration(-1)
	var produced []string
	if len(iso.led) > 0 {
		for _, p := range iso.led {
			moved, _ = iso.fc.waitNewLeader(ctx, others[0], iso.topic, p, int32(old.id), iso.cutAt)
		}
		iso.leadersMoved = append(iso.leadersMoved, moved)
		produced = append(produced, <-iso.atOnce, produceDirect(ctx, t, old, iso.topic, int32(iso.led[0])))
		for _, got := range produced {
			if got == "ACKNOWLEDGED" {
				t.Fatalf("trial %d: isolated node %d acknowledged an acks=all produce to partition %d (min.insync.replicas 2)", trial, old.id, iso.led[0])
			}
		}
	}
	// Isolated, it cannot have won anything: its epoch is at most the new
	// controller's (it adopts that one only after the heal).
	isoEpoch, _ := iso.metrics(ctx, t, old)
	if isoEpoch > iso.newEpoch {
		t.Fatalf("trial %d: isolated node %d reached epoch %d, beyond the new controller's %d", trial, old.id, isoEpoch, iso.newEpoch)
	}
	t.Logf("trial %d: node %d isolated in epoch %d: controller %d elected in epoch %d after %v; node %d stopped naming itself controller after %v (names %d, in epoch %d); partitions it led %v moved after %v; produce to it at once: %s, after they moved: %s",
		trial, old.id, iso.oldEpoch, newCtrl, iso.newEpoch, took.Round(time.Millisecond), old.id, sd.after.Round(time.Millisecond), sd.controller, isoEpoch,
		iso.led, moved.Round(time.Millisecond), firstOr(produced, 0, "-"), firstOr(produced, 1, "-"))
}

// leadSome waits until every partition of the topic has its full ISR and
// old leads some of them, which it may not after an earlier trial moved
// its partitions away: it asks for preferred leaders, which the topic's
// assignment spreads over the three nodes. It returns the partitions old
// leads.
func (iso *isolation) leadSome(ctx context.Context, t *testing.T, old *clusterNode) []int {
	t.Helper()
	var seeds []string
	for _, n := range iso.fc.nodes {
		seeds = append(seeds, n.addr)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	deadline := time.Now().Add(90 * time.Second)
	for {
		_, ps := iso.fc.waitHealthy(ctx, old, iso.topic)
		var led []int
		for p, s := range ps {
			if s.leader == int32(old.id) {
				led = append(led, p)
			}
		}
		if len(led) > 0 {
			return led
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d leads no partition of %s after 90 s of preferred leader elections: %+v", old.id, iso.topic, ps)
		}
		ectx, cancel := context.WithTimeout(ctx, 5*time.Second)
		kadm.NewClient(cl).ElectLeaders(ectx, kadm.ElectPreferredReplica, nil)
		cancel()
		time.Sleep(100 * time.Millisecond)
	}
}

func firstOr(s []string, i int, def string) string {
	if i < len(s) {
		return s[i]
	}
	return def
}

// heal reconnects the isolated node, old: what it and its peers sent
// during the cut arrives now, late. It waits until old names newCtrl as
// the controller.
func (iso *isolation) heal(ctx context.Context, t *testing.T, trial int, old *clusterNode, newCtrl int32) {
	t.Helper()
	healed := time.Now()
	iso.fc.proxies.heal()
	deadline := healed.Add(30 * time.Second)
	for {
		c, _, err := metadataOf(ctx, old)
		if err == nil && c == newCtrl {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("trial %d: healed node %d names controller %d 30 s after the heal (error %v), want %d", trial, old.id, c, err, newCtrl)
		}
		time.Sleep(10 * time.Millisecond)
	}
	iso.follow = append(iso.follow, time.Since(healed))
}

// afterHeal checks, once the healed node follows newCtrl, that there was
// no second election: every node is in the new controller's epoch and the
// controller counts no election since its own. Then it waits until every
// partition has its full ISR again, for the next trial.
func (iso *isolation) afterHeal(ctx context.Context, t *testing.T, trial int, newCtrl int32) {
	t.Helper()
	for _, n := range iso.fc.nodes {
		epoch, elections := iso.metrics(ctx, t, n)
		if epoch != iso.newEpoch {
			t.Fatalf("trial %d: after the heal node %d is in epoch %d, want %d, controller %d's: a second election", trial, n.id, epoch, iso.newEpoch, newCtrl)
		}
		if n.id == int(newCtrl) && elections != iso.elections {
			t.Fatalf("trial %d: controller %d saw %d elections by its own, %d after the heal", trial, newCtrl, iso.elections, elections)
		}
	}
	iso.fc.waitHealthy(ctx, iso.fc.nodes[0], iso.topic)
}

// report logs the figures over every trial.
func (iso *isolation) report(t *testing.T) {
	t.Logf("isolation over %d trials: new controller seen by both survivors %s", len(iso.newController), durationStats(iso.newController))
	t.Logf("isolation over %d trials: isolated node stops naming itself controller %s", len(iso.steppedDown), durationStats(iso.steppedDown))
	t.Logf("isolation over %d trials that isolated a partition leader: every partition it led has a new leader %s", len(iso.leadersMoved), durationStats(iso.leadersMoved))
	t.Logf("isolation over %d trials: after the heal the isolated node names the new controller %s", len(iso.follow), durationStats(iso.follow))
}

// durationStats is min, p50, p99 and max; with fewer than 100 samples p99
// is the maximum.
func durationStats(d []time.Duration) string {
	if len(d) == 0 {
		return "no samples"
	}
	d = slices.Clone(d)
	slices.Sort(d)
	p99 := d[(len(d)*99+99)/100-1]
	return fmt.Sprintf("min %v p50 %v p99 %v max %v", d[0].Round(time.Millisecond), d[len(d)/2].Round(time.Millisecond),
		p99.Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond))
}
