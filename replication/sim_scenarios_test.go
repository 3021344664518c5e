package replication

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// replScenarios are the data-plane simulator's fault schedules, run in
// turn over the seeds.
var replScenarios = []replScenario{
	{Name: "calm", FaultMs: 1200, Faults: replFaults{DelayMaxMs: 3}},
	{Name: "lossy", FaultMs: 1500, Faults: replFaults{LossPct: 10, DupPct: 2, DelayMaxMs: 8}},
	{Name: "crashes", FaultMs: 2000, Faults: replFaults{LossPct: 3, DelayMaxMs: 5, CrashPerMille: 4, DownMaxMs: 150}},
	{Name: "partitions", FaultMs: 2000, Faults: replFaults{LossPct: 3, DelayMaxMs: 5, PartitionPerMille: 8}},
	{Name: "chaos", FaultMs: 2000, Faults: replFaults{LossPct: 8, DupPct: 2, DelayMaxMs: 10, CrashPerMille: 3, DownMaxMs: 200, PartitionPerMille: 5}},
	{Name: "chaos-minisr1", MinISR: 1, FaultMs: 2000, Faults: replFaults{LossPct: 8, DelayMaxMs: 10, CrashPerMille: 3, DownMaxMs: 200, PartitionPerMille: 5}},
	// F12: kill leader A; as soon as B leads, kill B; restart A, then B.
	// Both lose what they had not synced.
	{Name: "F12", FaultMs: 1500, Faults: replFaults{DelayMaxMs: 3}, Events: []replEvent{
		{At: 200, Kind: evCrashLeader, Slot: "A"},
		{Kind: evCrashNewLeader, Slot: "B", Other: "A"},
		{At: 100, Kind: evRestart, Slot: "A"},
		{At: 100, Kind: evRestart, Slot: "B"},
	}},
	// F13: the ISR shrinks to the leader alone, which then crashes losing
	// what it had not synced: no replica that lacks acknowledged records
	// may lead (with min.insync.replicas 2 the high watermark stopped;
	// with 1 the followers left the ISR holding less).
	{Name: "F13", FaultMs: 1500, Faults: replFaults{DelayMaxMs: 3}, Events: []replEvent{
		{At: 200, Kind: evCutFollowers, Slot: "A"},
		{Kind: evISRIsLeader, Slot: "A"},
		{At: 30, Kind: evCrashSlot, Slot: "A"},
		{At: 50, Kind: evHeal},
		{At: 150, Kind: evRestart, Slot: "A"},
	}},
	{Name: "F13-minisr1", MinISR: 1, FaultMs: 1500, Faults: replFaults{DelayMaxMs: 3}, Events: []replEvent{
		{At: 200, Kind: evCutFollowers, Slot: "A"},
		{Kind: evISRIsLeader, Slot: "A"},
		{At: 30, Kind: evCrashSlot, Slot: "A"},
		{At: 50, Kind: evHeal},
		{At: 150, Kind: evRestart, Slot: "A"},
	}},
	// F14: every node loses power at once; every unsynced byte is gone.
	// Under flush policy ack nothing acknowledged is, and recovery
	// rebuilds the high watermark, leader epochs and producer state.
	{Name: "F14", FaultMs: 1500, Faults: replFaults{LossPct: 2, DelayMaxMs: 4}, Events: []replEvent{
		{At: 300, Kind: evCrashAll},
		{At: 50, Kind: evRestartAll},
		{At: 400, Kind: evCrashAll},
		{At: 1, Kind: evRestartAll},
	}},
	// F14 with the nodes down past the session timeout: the controller
	// fences them one by one (the ISR shrinks, the ELR keeps the last
	// members, KIP-966) and elects from the ELR as they come back.
	{Name: "F14-fenced", FaultMs: 1500, Faults: replFaults{LossPct: 2, DelayMaxMs: 4}, Events: []replEvent{
		{At: 300, Kind: evCrashAll},
		{At: 250, Kind: evRestartAll},
	}},
}

// TestReplicationSim runs the data-plane simulator over seeds:
// WREN_REPL_SIM_SEEDS of them, else WREN_SIM_SEEDS, else 300 (40 under
// the race detector); WREN_SEED=n
// runs seed n alone, as a failure says, and WREN_SIM_TRACE=1 prints the
// trace of every seed run.
func TestReplicationSim(t *testing.T) {
	seeds := simEnvInt(t, "WREN_REPL_SIM_SEEDS", simEnvInt(t, "WREN_SIM_SEEDS", simDefaultSeeds))
	first := uint64(1)
	if s := os.Getenv("WREN_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("WREN_SEED=%q: %v", s, err)
		}
		first, seeds = n, 1
	}
	start := time.Now()
	var total simStats
	for seed := first; seed < first+uint64(seeds); seed++ {
		sc := replScenarios[seed%uint64(len(replScenarios))]
		s := newReplSim(sc, seed, bugNone)
		err := s.run()
		if os.Getenv("WREN_SIM_TRACE") != "" {
			t.Logf("seed %d, scenario %s, trace (its last lines):\n%s", seed, sc.Name, strings.Join(s.trace, "\n"))
		}
		if err != nil {
			t.Fatalf("%v\nreplay: WREN_SEED=%d go test ./replication/ -run 'TestReplicationSim$' -v", err, seed)
		}
		total.crashes += s.stats.crashes
		total.acked += s.stats.acked
		total.retries += s.stats.retries
		total.leaderChanges += s.stats.leaderChanges
		total.messages += s.stats.messages
		total.truncations += s.stats.truncations
	}
	t.Logf("%d seeds in %v: %d batches acknowledged, %d producer retries, %d crashes, %d leader changes, %d follower truncations, %d messages",
		seeds, time.Since(start).Round(time.Millisecond), total.acked, total.retries, total.crashes, total.leaderChanges, total.truncations, total.messages)
}

// The checks are not vacuous: a follower whose fetch offset counts
// toward the high watermark before its append is durable acknowledges
// records that a crash then loses.
func TestReplicationSimCatchesUnsyncedFollower(t *testing.T) {
	sc := replScenario{Name: "unsynced-follower", FaultMs: 2000,
		Faults: replFaults{DelayMaxMs: 3, CrashPerMille: 8, DownMaxMs: 100}}
	for seed := uint64(1); seed <= 200; seed++ {
		if err := newReplSim(sc, seed, bugCountUnsyncedFollower).run(); err != nil {
			t.Logf("seed %d: %v", seed, firstLine(err))
			return
		}
	}
	t.Fatal("200 seeds of a follower counted before its fdatasync broke no invariant")
}

// Nor is the truncation check: a follower that truncates to its own high
// watermark (KIP-101's first scenario) loses committed records once it
// leads.
func TestReplicationSimCatchesTruncateToHighWatermark(t *testing.T) {
	sc := replScenario{Name: "truncate-to-hw", FaultMs: 2000,
		Faults: replFaults{LossPct: 5, DelayMaxMs: 8, CrashPerMille: 4, DownMaxMs: 100, PartitionPerMille: 4}}
	for seed := uint64(1); seed <= 200; seed++ {
		if err := newReplSim(sc, seed, bugTruncateToHighWatermark).run(); err != nil {
			t.Logf("seed %d: %v", seed, firstLine(err))
			return
		}
	}
	t.Fatal("200 seeds of a follower truncating to its high watermark broke no invariant")
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\ntrace")
	return s
}

func simEnvInt(t *testing.T, key string, def int) int {
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

// Under flush policy interval (Kafka's page-cache durability) the same
// power loss of every node loses acknowledged records, and the checker
// says so: the ack policy is what F14 depends on.
func TestReplicationSimIntervalLosesOnPowerLoss(t *testing.T) {
	sc := replScenario{Name: "F14-interval", FaultMs: 1000, Faults: replFaults{DelayMaxMs: 4}, Events: []replEvent{
		{At: 300, Kind: evCrashAll},
		{At: 50, Kind: evRestartAll},
	}}
	for seed := uint64(1); seed <= 50; seed++ {
		if err := newReplSim(sc, seed, bugFlushInterval).run(); err != nil {
			t.Logf("seed %d: %v", seed, firstLine(err))
			return
		}
	}
	t.Fatal("50 seeds of every node losing power under flush policy interval lost nothing")
}
