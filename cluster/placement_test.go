package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"pgregory.net/rapid"
)

// genBrokers draws 1-9 brokers with distinct ids; with racks, every broker
// gets one of `racks` racks (with even set, racks of equal size).
func genBrokers(t *rapid.T, racks int, even bool) []PlacementBroker {
	n := rapid.IntRange(1, 9).Draw(t, "brokers")
	if even && racks > 0 {
		n = racks * rapid.IntRange(1, 3).Draw(t, "brokers per rack")
	}
	ids := rapid.Permutation([]int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}).Draw(t, "ids")[:n]
	out := make([]PlacementBroker, n)
	for i, id := range ids {
		out[i] = PlacementBroker{ID: id}
		if racks > 0 {
			if even {
				out[i].Rack = fmt.Sprintf("r%d", i%racks)
			} else {
				out[i].Rack = fmt.Sprintf("r%d", rapid.IntRange(0, racks-1).Draw(t, "rack"))
			}
		}
	}
	return out
}

// loads counts replicas and preferred leaders per unfenced broker.
func loads(brokers []PlacementBroker, assignments [][]int32) (replicas, leaders map[int32]int) {
	replicas, leaders = map[int32]int{}, map[int32]int{}
	for _, b := range brokers {
		if !b.Fenced {
			replicas[b.ID], leaders[b.ID] = 0, 0
		}
	}
	for _, rs := range assignments {
		for j, id := range rs {
			if _, ok := replicas[id]; !ok {
				continue // a fenced or unregistered broker takes no part
			}
			replicas[id]++
			if j == 0 {
				leaders[id]++
			}
		}
	}
	return replicas, leaders
}

func spread(m map[int32]int) int {
	lo, hi := -1, 0
	for _, v := range m {
		if lo == -1 || v < lo {
			lo = v
		}
		hi = max(hi, v)
	}
	return hi - max(lo, 0)
}

func checkDistinctUnfenced(t *rapid.T, brokers []PlacementBroker, got [][]int32, partitions, rf int) {
	if len(got) != partitions {
		t.Fatalf("%d partitions placed, want %d", len(got), partitions)
	}
	for p, rs := range got {
		if len(rs) != rf {
			t.Fatalf("partition %d has replicas %v, want %d", p, rs, rf)
		}
		for j, id := range rs {
			if slices.Contains(rs[:j], id) {
				t.Fatalf("partition %d has broker %d twice: %v", p, id, rs)
			}
			i := slices.IndexFunc(brokers, func(b PlacementBroker) bool { return b.ID == id })
			if i < 0 || brokers[i].Fenced {
				t.Fatalf("partition %d placed on broker %d, not an unfenced registered broker: %v", p, id, brokers)
			}
		}
	}
}

// From an empty cluster, topic after topic (each with its own partition
// count and replication factor), replica and leader counts per broker
// never differ by more than one. With racks of equal size and one
// replication factor they differ by at most two: spreading every
// partition over the racks comes first, and a greedy placement cannot
// always have both.
func TestPlacementBalancedFromUniformStart(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		racks := rapid.SampledFrom([]int{0, 0, 2, 3}).Draw(t, "racks")
		brokers := genBrokers(t, racks, true)
		var all [][]int32
		topics := rapid.IntRange(1, 8).Draw(t, "topics")
		rf := rapid.IntRange(1, len(brokers)).Draw(t, "rf")
		for range topics {
			partitions := rapid.IntRange(1, 40).Draw(t, "partitions")
			if racks == 0 {
				rf = rapid.IntRange(1, len(brokers)).Draw(t, "rf")
			}
			got, err := PlaceReplicas(brokers, all, partitions, rf)
			if err != nil {
				t.Fatal(err)
			}
			checkDistinctUnfenced(t, brokers, got, partitions, rf)
			all = append(all, got...)
			reps, leads := loads(brokers, all)
			bound := 1
			if racks > 0 {
				bound = 2
			}
			if s := spread(reps); s > bound {
				t.Fatalf("replica counts differ by %d: %v (after %v)", s, reps, got)
			}
			if s := spread(leads); s > bound {
				t.Fatalf("leader counts differ by %d: %v (after %v)", s, leads, got)
			}
		}
	})
}

// Partitions added one at a time (CreatePartitions, over and over) keep
// the balance too.
func TestPlacementBalancedOneByOne(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		brokers := genBrokers(t, 0, false)
		rf := rapid.IntRange(1, len(brokers)).Draw(t, "rf")
		var all [][]int32
		for range rapid.IntRange(1, 60).Draw(t, "partitions") {
			got, err := PlaceReplicas(brokers, all, 1, rf)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, got...)
			reps, leads := loads(brokers, all)
			if spread(reps) > 1 || spread(leads) > 1 {
				t.Fatalf("unbalanced after %d partitions: replicas %v leaders %v", len(all), reps, leads)
			}
		}
	})
}

// From any start (a skewed cluster, fenced brokers, replicas on brokers
// that left), the new replicas never widen the replica imbalance beyond
// max(old, 1), and each partition has rf distinct unfenced brokers.
func TestPlacementNeverWorsensReplicaBalance(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		brokers := genBrokers(t, rapid.IntRange(0, 3).Draw(t, "racks"), false)
		for i := range brokers {
			brokers[i].Fenced = rapid.IntRange(0, 4).Draw(t, "fenced") == 0
		}
		unfenced := 0
		for _, b := range brokers {
			if !b.Fenced {
				unfenced++
			}
		}
		var existing [][]int32
		for range rapid.IntRange(0, 20).Draw(t, "existing") {
			existing = append(existing, []int32{rapid.Int32Range(0, 12).Draw(t, "replica")})
		}
		if unfenced == 0 {
			if _, err := PlaceReplicas(brokers, existing, 1, 1); !errors.Is(err, kerr.InvalidReplicationFactor) {
				t.Fatalf("no unfenced broker: %v", err)
			}
			return
		}
		rf := rapid.IntRange(1, unfenced).Draw(t, "rf")
		partitions := rapid.IntRange(1, 30).Draw(t, "partitions")
		before, _ := loads(brokers, existing)
		got, err := PlaceReplicas(brokers, existing, partitions, rf)
		if err != nil {
			t.Fatal(err)
		}
		checkDistinctUnfenced(t, brokers, got, partitions, rf)
		racks := map[string]bool{}
		for _, b := range brokers {
			if !b.Fenced {
				racks[b.Rack] = true
			}
		}
		if len(racks) == 1 { // rack spreading may cost balance; without racks it must not
			after, _ := loads(brokers, append(slices.Clone(existing), got...))
			if spread(after) > max(spread(before), 1) {
				t.Fatalf("replica spread %d -> %d: %v -> %v", spread(before), spread(after), before, after)
			}
		}
	})
}

// Every partition spans min(rf, racks) racks, whatever the rack sizes.
func TestPlacementCoversRacks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		brokers := genBrokers(t, rapid.IntRange(1, 4).Draw(t, "racks"), false)
		racks := map[string]bool{}
		for _, b := range brokers {
			racks[b.Rack] = true
		}
		rf := rapid.IntRange(1, len(brokers)).Draw(t, "rf")
		got, err := PlaceReplicas(brokers, nil, rapid.IntRange(1, 30).Draw(t, "partitions"), rf)
		if err != nil {
			t.Fatal(err)
		}
		for p, rs := range got {
			used := map[string]bool{}
			for _, id := range rs {
				used[brokers[slices.IndexFunc(brokers, func(b PlacementBroker) bool { return b.ID == id })].Rack] = true
			}
			if want := min(rf, len(racks)); len(used) != want {
				t.Fatalf("partition %d %v spans %d racks, want %d (brokers %v)", p, rs, len(used), want, brokers)
			}
		}
	})
}

// The same input gives the same placement, in whatever order the brokers
// come.
func TestPlacementDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		brokers := genBrokers(t, rapid.IntRange(0, 3).Draw(t, "racks"), false)
		rf := rapid.IntRange(1, len(brokers)).Draw(t, "rf")
		existing, _ := PlaceReplicas(brokers, nil, rapid.IntRange(1, 10).Draw(t, "existing"), rf)
		partitions := rapid.IntRange(1, 20).Draw(t, "partitions")
		a, err := PlaceReplicas(brokers, existing, partitions, rf)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := PlaceReplicas(rapid.Permutation(brokers).Draw(t, "order"), existing, partitions, rf)
		if !slices.EqualFunc(a, b, slices.Equal) {
			t.Fatalf("placement differs with the broker order: %v vs %v", a, b)
		}
	})
}

func TestPlacementErrors(t *testing.T) {
	three := []PlacementBroker{{ID: 1}, {ID: 2}, {ID: 3, Fenced: true}}
	_, err := PlaceReplicas(three, nil, 1, 3)
	if !errors.Is(err, kerr.InvalidReplicationFactor) || !strings.Contains(err.Error(), "replication factor 3 is larger than the 2 available") ||
		!strings.Contains(err.Error(), "3 registered, 1 fenced") {
		t.Fatalf("rf 3 on 2 unfenced brokers: %v", err)
	}
	if _, err := PlaceReplicas(three, nil, 0, 1); !errors.Is(err, kerr.InvalidPartitions) {
		t.Fatalf("0 partitions: %v", err)
	}
	if _, err := PlaceReplicas(three, nil, 1, 0); !errors.Is(err, kerr.InvalidReplicationFactor) {
		t.Fatalf("rf 0: %v", err)
	}
	for _, tc := range []struct {
		assignment [][]int32
		rf         int
		want       string // "" = valid
	}{
		{[][]int32{{1, 2}, {2, 1}}, -1, ""},
		{[][]int32{{1, 2}, {2, 1}}, 2, ""},
		{nil, -1, "lists no partitions"},
		{[][]int32{{}}, -1, "empty replica list"},
		{[][]int32{{1, 2}, {2}}, -1, "partition 1 of the manual assignment has 1 replica(s), the others 2"},
		{[][]int32{{1}}, 2, "has 1 replica(s), the others 2"},
		{[][]int32{{1, 1}}, -1, "names broker 1 more than once"},
		{[][]int32{{1, 7}}, -1, "broker 7, but no such broker is registered"},
		{[][]int32{{3}}, -1, "broker 3, which is fenced"},
	} {
		err := ValidateAssignment(three, tc.assignment, tc.rf)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%v: %v", tc.assignment, err)
			}
			continue
		}
		if !errors.Is(err, kerr.InvalidReplicaAssignment) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v rf %d: %v, want INVALID_REPLICA_ASSIGNMENT %q", tc.assignment, tc.rf, err, tc.want)
		}
	}
}

// A worked example: six brokers in three racks, RF 3.
func TestPlacementRackExample(t *testing.T) {
	brokers := []PlacementBroker{{1, "a", false}, {2, "a", false}, {3, "b", false}, {4, "b", false}, {5, "c", false}, {6, "c", false}}
	got, err := PlaceReplicas(brokers, nil, 6, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := "[[1 3 5] [2 4 6] [3 1 5] [4 2 6] [5 1 3] [6 2 4]]"
	if s := fmt.Sprint(got); s != want {
		t.Fatalf("placement %s, want %s", s, want)
	}
}
