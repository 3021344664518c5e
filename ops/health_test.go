package ops

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestEvaluate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		h       ClusterHealth
		reasons []string
	}{
		{"healthy", ClusterHealth{ControllerID: 1, Nodes: []int32{1}}, []string{}},
		{"under-replicated is still healthy", ClusterHealth{ControllerID: 1, Nodes: []int32{1, 2},
			UnderReplicatedPartitions: []string{"t/0"}}, []string{}},
		{"no controller", ClusterHealth{ControllerID: -1, Nodes: []int32{1}}, []string{ReasonNoController}},
		{"everything wrong", ClusterHealth{ControllerID: -1, Nodes: []int32{2, 1}, DownNodes: []int32{2},
			LeaderlessPartitions: []string{"t/1", "t/0"}, OfflineLogDirs: []string{"node 1: /d: EIO"}},
			[]string{ReasonNoController, ReasonNodesDown, ReasonLeaderless, ReasonOfflineLogDirs}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.h
			h.Evaluate()
			if !reflect.DeepEqual(h.UnhealthyReasons, tc.reasons) || h.Healthy != (len(tc.reasons) == 0) {
				t.Fatalf("reasons %v healthy %v, want %v", h.UnhealthyReasons, h.Healthy, tc.reasons)
			}
			if (h.Err() == nil) != h.Healthy {
				t.Fatalf("Err() = %v with Healthy %v", h.Err(), h.Healthy)
			}
			for _, r := range tc.reasons {
				if !strings.Contains(h.Err().Error(), r) {
					t.Fatalf("Err() = %v does not name %s", h.Err(), r)
				}
			}
			if h.LeaderlessPartitions == nil || h.DownNodes == nil || h.OfflineLogDirs == nil {
				t.Fatalf("nil lists encode as JSON null: %+v", h)
			}
			if len(h.Nodes) > 1 && h.Nodes[0] > h.Nodes[1] {
				t.Fatalf("nodes not sorted: %v", h.Nodes)
			}
		})
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"topic.a-b_c": `"topic.a-b_c"`,
		`g"1`:         `"g\"1"`,
		`a\b`:         `"a\\b"`,
		"x\ny":        `"x\ny"`,
		"grüße":       `"grüße"`,
	} {
		if got := quote(in); got != want {
			t.Errorf("quote(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestTopicSeriesBounded: topics past maxTopicSeries share one series.
func TestTopicSeriesBounded(t *testing.T) {
	m := NewMetrics()
	for i := range maxTopicSeries + 10 {
		m.Produced(fmt.Sprintf("t%d", i), 1, 1)
	}
	var b strings.Builder
	m.WritePrometheus(&b)
	n := strings.Count(b.String(), "wren_kafka_records_produced_total{")
	if n != maxTopicSeries+1 {
		t.Fatalf("%d topic series, want %d and one %s", n, maxTopicSeries+1, otherTopic)
	}
	if !strings.Contains(b.String(), `wren_kafka_records_produced_total{topic="_other"} 10`) {
		t.Fatalf("the 10 topics past the limit are not counted under %s", otherTopic)
	}
}
