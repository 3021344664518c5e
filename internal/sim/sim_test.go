package sim

import (
	"fmt"
	"os"
	"slices"
	"strconv"
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
	failovers := map[string][]int{}
	var messages, crashes, pauses int
	for seed := first; seed < first+uint64(seeds); seed++ {
		sc := Scenarios[seed%uint64(len(Scenarios))]
		res, err := Run(sc, seed, Options{})
		if err != nil {
			t.Fatalf("%v\nreplay: WREN_SEED=%d go test ./internal/sim/ -run 'TestSim$' -v", err, seed)
		}
		worst[sc.Name] = max(worst[sc.Name], res.SettleTicks)
		if res.Failover >= 0 {
			failovers[sc.Name] = append(failovers[sc.Name], res.Failover)
		}
		messages += res.Messages
		crashes += res.Crashes
		pauses += res.Pause
	}
	t.Logf("%d seeds in %v: %d messages, %d crashes, %d pauses", seeds, time.Since(start).Round(time.Millisecond), messages, crashes, pauses)
	for _, sc := range Scenarios {
		if w, ok := worst[sc.Name]; ok {
			line := fmt.Sprintf("%-16s worst settle after the faults: %3d ticks (bound %d)", sc.Name, w, LivenessBound)
			if f := failovers[sc.Name]; len(f) > 0 {
				slices.Sort(f)
				line += fmt.Sprintf("; failover p50 %d p99 %d max %d ticks over %d runs", f[len(f)/2], f[len(f)*99/100], f[len(f)-1], len(f))
			}
			t.Log(line)
		}
	}
}

// The checks are not vacuous: a driver that sends before it persists, and
// crashes in between, lets a node vote twice in one epoch, and the
// simulator finds it within a few hundred seeds.
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
