package assign

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// tps parses "t0p0 t1p2" into partitions.
func tps(s string) []TopicPartition {
	out := []TopicPartition{}
	for _, f := range strings.Fields(s) {
		i := strings.LastIndexByte(f, 'p')
		var p int32
		if _, err := fmt.Sscan(f[i+1:], &p); err != nil {
			panic(err)
		}
		out = append(out, TopicPartition{Topic: f[:i], Partition: p})
	}
	return out
}

func topicsOf(spec ...any) []Topic {
	var out []Topic
	for i := 0; i < len(spec); i += 2 {
		out = append(out, Topic{Name: spec[i].(string), Partitions: int32(spec[i+1].(int))})
	}
	return out
}

func member(id string, topics string, owned string) Member {
	return Member{MemberID: id, Topics: strings.Fields(topics), Owned: tps(owned), Generation: 1}
}

func want(kv ...string) GroupAssignment {
	out := GroupAssignment{}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i]] = tps(kv[i+1])
	}
	return out
}

func format(a GroupAssignment) string {
	var b strings.Builder
	for _, id := range sortedKeys(a) {
		fmt.Fprintf(&b, "%s:", id)
		for _, tp := range a[id] {
			fmt.Fprintf(&b, " %sp%d", tp.Topic, tp.Partition)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestExamples(t *testing.T) {
	all4 := "t0 t1 t2 t3"
	tests := []struct {
		name     string
		assignor Assignor
		members  []Member
		topics   []Topic
		want     GroupAssignment
	}{
		{
			// RangeAssignor javadoc.
			name:     "range javadoc",
			assignor: Range,
			members:  []Member{member("C1", "t0 t1", ""), member("C0", "t0 t1", "")},
			topics:   topicsOf("t0", 3, "t1", 3),
			want:     want("C0", "t0p0 t0p1 t1p0 t1p1", "C1", "t0p2 t1p2"),
		},
		{
			name:     "range uneven",
			assignor: Range,
			members:  []Member{member("a", "t", ""), member("b", "t", ""), member("c", "t", "")},
			topics:   topicsOf("t", 7),
			want:     want("a", "tp0 tp1 tp2", "b", "tp3 tp4", "c", "tp5 tp6"),
		},
		{
			// Static members sort first, by instance id, whatever their
			// member ids: a restarted static member keeps its range.
			name:     "range static members",
			assignor: Range,
			members: []Member{
				{MemberID: "a", Topics: []string{"t"}},
				{MemberID: "z", InstanceID: "i1", Topics: []string{"t"}},
				{MemberID: "y", InstanceID: "i2", Topics: []string{"t"}},
			},
			topics: topicsOf("t", 3),
			want:   want("z", "tp0", "y", "tp1", "a", "tp2"),
		},
		{
			name:     "range member without topics",
			assignor: Range,
			members:  []Member{member("a", "t missing", ""), member("b", "other", "")},
			topics:   topicsOf("t", 2),
			want:     want("a", "tp0 tp1", "b", ""),
		},
		{
			// RoundRobinAssignor javadoc, identical subscriptions.
			name:     "roundrobin javadoc",
			assignor: RoundRobin,
			members:  []Member{member("C0", "t0 t1", ""), member("C1", "t0 t1", "")},
			topics:   topicsOf("t0", 3, "t1", 3),
			want:     want("C0", "t0p0 t0p2 t1p1", "C1", "t0p1 t1p0 t1p2"),
		},
		{
			// RoundRobinAssignor javadoc, different subscriptions.
			name:     "roundrobin javadoc heterogeneous",
			assignor: RoundRobin,
			members:  []Member{member("C0", "t0", ""), member("C1", "t0 t1", ""), member("C2", "t0 t1 t2", "")},
			topics:   topicsOf("t0", 1, "t1", 2, "t2", 3),
			want:     want("C0", "t0p0", "C1", "t1p0", "C2", "t1p1 t2p0 t2p1 t2p2"),
		},
		{
			// KIP-54 / StickyAssignor javadoc example 1: C1 leaves a group
			// whose assignment was the round-robin one. Sticky keeps every
			// remaining ownership (Kafka's javadoc hands C1's partitions out
			// in another order; both keep everything and balance 4/4).
			name:     "sticky javadoc 1: member leaves",
			assignor: Sticky,
			members: []Member{
				member("C0", all4, "t0p0 t1p1 t3p0"),
				member("C2", all4, "t1p0 t2p1"),
			},
			topics: topicsOf("t0", 2, "t1", 2, "t2", 2, "t3", 2),
			want:   want("C0", "t0p0 t0p1 t1p1 t3p0", "C2", "t1p0 t2p0 t2p1 t3p1"),
		},
		{
			// StickyAssignor javadoc example 2, first rebalance.
			name:     "sticky javadoc 2: heterogeneous",
			assignor: Sticky,
			members:  []Member{member("C0", "t0", ""), member("C1", "t0 t1", ""), member("C2", "t0 t1 t2", "")},
			topics:   topicsOf("t0", 1, "t1", 2, "t2", 3),
			want:     want("C0", "t0p0", "C1", "t1p0 t1p1", "C2", "t2p0 t2p1 t2p2"),
		},
		{
			// StickyAssignor javadoc example 2, after C0 leaves: round robin
			// would move t1p0; sticky only hands out t0p0.
			name:     "sticky javadoc 2: C0 leaves",
			assignor: Sticky,
			members:  []Member{member("C1", "t0 t1", "t1p0 t1p1"), member("C2", "t0 t1 t2", "t2p0 t2p1 t2p2")},
			topics:   topicsOf("t0", 1, "t1", 2, "t2", 3),
			want:     want("C1", "t0p0 t1p0 t1p1", "C2", "t2p0 t2p1 t2p2"),
		},
		{
			// Two members claim t0p1 in the same generation: neither keeps
			// it (it is free again, and a happens to get it back). t0p2's
			// newer claim (generation 3) beats the older one.
			name:     "sticky generation conflicts",
			assignor: Sticky,
			members: []Member{
				{MemberID: "a", Topics: []string{"t0"}, Owned: tps("t0p0 t0p1 t0p2"), Generation: 2},
				{MemberID: "b", Topics: []string{"t0"}, Owned: tps("t0p1"), Generation: 2},
				{MemberID: "c", Topics: []string{"t0"}, Owned: tps("t0p2 t0p3"), Generation: 3},
			},
			topics: topicsOf("t0", 6),
			want:   want("a", "t0p0 t0p1", "b", "t0p4 t0p5", "c", "t0p2 t0p3"),
		},
		{
			// KIP-429: C1 joins while C0 owns everything. The eager sticky
			// answer moves three partitions at once; the cooperative one
			// first only takes them from C0.
			name:     "cooperative member joins: first rebalance",
			assignor: CooperativeSticky,
			members:  []Member{member("C0", "t0 t1", "t0p0 t0p1 t0p2 t1p0 t1p1 t1p2"), member("C1", "t0 t1", "")},
			topics:   topicsOf("t0", 3, "t1", 3),
			want:     want("C0", "t0p0 t0p1 t0p2", "C1", ""),
		},
		{
			name:     "cooperative member joins: second rebalance",
			assignor: CooperativeSticky,
			members:  []Member{member("C0", "t0 t1", "t0p0 t0p1 t0p2"), member("C1", "t0 t1", "")},
			topics:   topicsOf("t0", 3, "t1", 3),
			want:     want("C0", "t0p0 t0p1 t0p2", "C1", "t1p0 t1p1 t1p2"),
		},
		{
			name:     "sticky member joins",
			assignor: Sticky,
			members:  []Member{member("C0", "t0 t1", "t0p0 t0p1 t0p2 t1p0 t1p1 t1p2"), member("C1", "t0 t1", "")},
			topics:   topicsOf("t0", 3, "t1", 3),
			want:     want("C0", "t0p0 t0p1 t0p2", "C1", "t1p0 t1p1 t1p2"),
		},
		{
			// Uniform ignores generations: the same claims conflict.
			name:     "uniform",
			assignor: Uniform,
			members: []Member{
				{MemberID: "a", Topics: []string{"t0"}, Owned: tps("t0p0 t0p1"), Generation: 1},
				{MemberID: "b", Topics: []string{"t0"}, Owned: tps("t0p1"), Generation: 9},
			},
			topics: topicsOf("t0", 4),
			want:   want("a", "t0p0 t0p1", "b", "t0p2 t0p3"),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.assignor(tc.members, tc.topics)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got\n%swant\n%s", format(got), format(tc.want))
			}
		})
	}
}

// TestRangeRackAware follows KIP-881: each consumer takes, within its
// range quota, partitions with a replica in its rack.
func TestRangeRackAware(t *testing.T) {
	racks := [][]string{{"r1"}, {"r2"}, {"r1"}, {"r2"}}
	members := []Member{
		{MemberID: "a", Rack: "r2", Topics: []string{"t"}},
		{MemberID: "b", Rack: "r1", Topics: []string{"t"}},
	}
	topics := []Topic{{Name: "t", Partitions: 4, PartitionRacks: racks}}
	got, err := Range(members, topics)
	if err != nil {
		t.Fatal(err)
	}
	w := want("a", "tp1 tp3", "b", "tp0 tp2")
	if !reflect.DeepEqual(got, w) {
		t.Fatalf("got\n%swant\n%s", format(got), format(w))
	}

	// Co-partitioned topics (same consumers, same partition count) stay
	// together: partition p of both goes to one consumer.
	topics = append(topics, Topic{Name: "u", Partitions: 4, PartitionRacks: [][]string{{"r1", "r2"}, {"r2"}, {"r1", "r2"}, {"r2"}}})
	for i := range members {
		members[i].Topics = []string{"t", "u"}
	}
	got, err = Range(members, topics)
	if err != nil {
		t.Fatal(err)
	}
	w = want("a", "tp1 tp3 up1 up3", "b", "tp0 tp2 up0 up2")
	if !reflect.DeepEqual(got, w) {
		t.Fatalf("co-partitioned: got\n%swant\n%s", format(got), format(w))
	}

	// When every partition has replicas in the same racks, rack matching
	// gains nothing and Range is the plain one.
	topics = []Topic{{Name: "t", Partitions: 4, PartitionRacks: [][]string{{"r1", "r2"}, {"r2", "r1"}, {"r1", "r2"}, {"r1", "r2"}}}}
	got, err = Range(members, topics)
	if err != nil {
		t.Fatal(err)
	}
	w = want("a", "tp0 tp1", "b", "tp2 tp3")
	if !reflect.DeepEqual(got, w) {
		t.Fatalf("same racks: got\n%swant\n%s", format(got), format(w))
	}
}

func TestInvalidInput(t *testing.T) {
	tests := []struct {
		name    string
		members []Member
		topics  []Topic
		err     error
	}{
		{"duplicate member", []Member{{MemberID: "a"}, {MemberID: "a"}}, nil, ErrDuplicateMember},
		{"empty member id", []Member{{MemberID: ""}}, nil, ErrInvalidMember},
		{"duplicate topic", nil, topicsOf("t", 1, "t", 2), ErrDuplicateTopic},
		{"empty topic", nil, topicsOf("", 1), ErrInvalidTopic},
		{"negative partitions", nil, topicsOf("t", -1), ErrInvalidTopic},
		{"too many partitions", nil, topicsOf("t", MaxPartitions, "u", 1), ErrTooManyPartitions},
		{"rack lists", nil, []Topic{{Name: "t", Partitions: 2, PartitionRacks: [][]string{{"r"}}}}, ErrInvalidPartitionRacks},
	}
	for _, tc := range tests {
		for _, name := range []string{RangeName, RoundRobinName, StickyName, CooperativeStickyName, UniformName} {
			a, ok := ByName(name)
			if !ok {
				t.Fatalf("ByName(%q) not found", name)
			}
			if _, err := a(tc.members, tc.topics); !errors.Is(err, tc.err) {
				t.Errorf("%s/%s: err = %v, want %v", tc.name, name, err, tc.err)
			}
		}
	}
	if _, ok := ByName("uniform2"); ok {
		t.Error("ByName found an unknown assignor")
	}
}
