package sim

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSim runs WREN_SIM_SEEDS seeds (300 by default), the scenarios in
// turn. WREN_SEED=n runs only seed n, as a failure says.
func TestSim(t *testing.T) {
	seeds := envInt(t, "WREN_SIM_SEEDS", 300)
	first := uint64(1)
	if s := os.Getenv("WREN_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("WREN_SEED=%q: %v", s, err)
		}
		first, seeds = n, 1
	}
	start := time.Now()
	worst := map[string]int{}
	worstLive := map[string]int{}
	failovers := map[string][]int{}
	var steady, takeOffice []int
	var messages, crashes, pauses, committed int
	for seed := first; seed < first+uint64(seeds); seed++ {
		sc := Scenarios[seed%uint64(len(Scenarios))]
		res, err := Run(sc, seed, Options{})
		if err != nil {
			t.Fatalf("%v\nreplay: WREN_SEED=%d go test ./internal/sim/ -run 'TestSim$' -v", err, seed)
		}
		worst[sc.Name] = max(worst[sc.Name], res.SettleTicks)
		worstLive[sc.Name] = max(worstLive[sc.Name], res.LivenessTicks)
		if res.Failover >= 0 {
			failovers[sc.Name] = append(failovers[sc.Name], res.Failover)
		}
		if strings.HasPrefix(sc.Name, "calm") {
			steady = append(steady, res.CommitTicks...)
		}
		if sc.Faults == calm {
			// One scheduled fault on a calm network: a clean controller change.
			takeOffice = append(takeOffice, res.TakeOfficeTicks...)
		}
		messages += res.Messages
		crashes += res.Crashes
		pauses += res.Pause
		committed += res.Committed
	}
	t.Logf("%d seeds in %v: %d messages, %d crashes, %d pauses, %d entries committed", seeds,
		time.Since(start).Round(time.Millisecond), messages, crashes, pauses, committed)
	t.Logf("commit latency at steady state (calm scenarios), propose to commit at the controller: %s", percentiles(steady))
	t.Logf("controller change on a calm network (calm, F scenarios), won to leader-change entry committed (may propose): %s", percentiles(takeOffice))
	for _, sc := range Scenarios {
		if w, ok := worst[sc.Name]; ok {
			line := fmt.Sprintf("%-16s worst settle after the faults: %3d ticks, then a proposal applied everywhere: %3d ticks (bound %d for both)",
				sc.Name, w, worstLive[sc.Name], LivenessBound)
			if f := failovers[sc.Name]; len(f) > 0 {
				line += "; failover " + percentiles(f)
			}
			t.Log(line)
		}
	}
}

func percentiles(v []int) string {
	if len(v) == 0 {
		return "no samples"
	}
	slices.Sort(v)
	return fmt.Sprintf("p50 %d p99 %d max %d ticks over %d", v[len(v)/2], v[len(v)*99/100], v[len(v)-1], len(v))
}

// The checks are not vacuous: a driver that sends before it persists, and
// crashes in between, acknowledges entries it then loses (and may vote
// twice), and the simulator finds it within a few hundred seeds.
func TestSimCatchesSendBeforePersist(t *testing.T) {
	sc := Scenario{Name: "send-before-persist", Nodes: 3, Ticks: 1500,
		Faults: Faults{LossPct: 10, DelayMin: 1, DelayMax: 6, PartitionPerMille: 10, CrashPerMille: 30}}
	for seed := uint64(1); seed <= 500; seed++ {
		if _, err := Run(sc, seed, Options{SendBeforePersist: true}); err != nil {
			t.Logf("seed %d: %v", seed, err)
			return
		}
	}
	t.Fatal("500 seeds of a driver that sends before it persists broke no invariant")
}

// The log checks on their own are not vacuous either: a driver that
// applies entries as soon as they are in its log, committed or not, is
// caught applying an entry that is not committed.
func TestSimCatchesApplyUncommitted(t *testing.T) {
	sc := Scenario{Name: "apply-uncommitted", Nodes: 3, Ticks: 1500,
		Faults: Faults{LossPct: 10, DelayMin: 1, DelayMax: 6, PartitionPerMille: 10, CrashPerMille: 5}}
	for seed := uint64(1); seed <= 200; seed++ {
		_, err := Run(sc, seed, Options{ApplyUncommitted: true})
		if err != nil {
			if !strings.Contains(err.Error(), "applies") {
				t.Fatalf("seed %d: want an apply check to fail, got: %v", seed, err)
			}
			t.Logf("seed %d: %v", seed, err)
			return
		}
	}
	t.Fatal("200 seeds of a driver that applies uncommitted entries broke no invariant")
}

func envInt(t *testing.T, key string, def int) int {
	s := os.Getenv(key)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", key, s)
	}
	return n
}
