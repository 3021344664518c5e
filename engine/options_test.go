package engine

import (
	"testing"
	"time"

	"github.com/wren-broker/wren/internal/vfs"
)

// TestOptionsShared: the logs of a Manager point at one Options value, a
// topic config change gives the topic's logs one new value and leaves the
// other topics' alone, and setting the defaults back shares them again.
func TestOptionsShared(t *testing.T) {
	m, err := OpenManager(vfs.NewMem(), "/data", ManagerConfig{ClusterID: "c", NodeID: 1, Defaults: testOptions(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	get := func(topic string, p int32) *Log {
		l, err := m.GetOrCreateLog(TopicPartition{Topic: topic, Partition: p})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a0, a1, b0 := get("a", 0), get("a", 1), get("b", 0)
	if a0.opts != a1.opts || a0.opts != b0.opts {
		t.Fatalf("logs with the default options hold %p, %p, %p, want one value", a0.opts, a1.opts, b0.opts)
	}
	defaults := *a0.opts
	changed := defaults
	changed.RetentionMs = 1234
	for _, l := range []*Log{a0, a1} {
		if err := l.UpdateOptions(changed); err != nil {
			t.Fatal(err)
		}
	}
	if a0.opts != a1.opts || a0.opts == b0.opts {
		t.Fatalf("after a change of topic a: a0 %p, a1 %p, b0 %p", a0.opts, a1.opts, b0.opts)
	}
	if a0.Options().RetentionMs != 1234 || b0.Options().RetentionMs != defaults.RetentionMs {
		t.Fatalf("retention.ms a %d, b %d", a0.Options().RetentionMs, b0.Options().RetentionMs)
	}
	// A partition of topic a opened later takes its topic's value.
	if a2 := get("a", 2); a2.opts == a0.opts {
		t.Fatalf("a log opened with the defaults shares topic a's changed options")
	}
	// The same options again change nothing; the defaults again share them.
	before := a0.opts
	if err := a0.UpdateOptions(changed); err != nil || a0.opts != before {
		t.Fatalf("an unchanged update replaced the value (%v)", err)
	}
	if err := a0.UpdateOptions(defaults); err != nil || a0.opts != b0.opts {
		t.Fatalf("the defaults again are not shared (%v)", err)
	}
}

// TestSameOptions: options compare by value, the clock aside, and the
// decompression budget by identity.
func TestSameOptions(t *testing.T) {
	a, b := DefaultOptions(), DefaultOptions()
	if !sameOptions(&a, &b) {
		t.Fatal("equal options differ")
	}
	b.Now = time.Now
	if !sameOptions(&a, &b) {
		t.Fatal("a clock makes options differ")
	}
	b.MinCleanableDirtyRatio = 0.25
	if sameOptions(&a, &b) {
		t.Fatal("options with different dirty ratios are the same")
	}
}
