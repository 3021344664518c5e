package config

import (
	"errors"
	"reflect"
	"testing"
)

func mustParse(t *testing.T, in string) *Config {
	t.Helper()
	c, err := Parse("config.toml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTopicResolution(t *testing.T) {
	c := mustParse(t, "[storage]\nlog.retention.hours = 1\nlog.segment.bytes = 2097152\n")
	dyn := &Dynamic{
		ClusterDefault: map[string]string{"log.retention.ms": "5000", "log.segment.bytes": "3145728"},
		Broker:         map[string]string{"log.segment.bytes": "4194304"},
	}
	for _, tc := range []struct {
		name      string
		overrides map[string]string
		dyn       *Dynamic
		retention int64
		segment   int32
	}{
		{"file", nil, nil, 3600 * 1000, 2 << 20},
		{"override", map[string]string{"retention.ms": "7", "segment.bytes": " 5242880 "}, nil, 7, 5 << 20},
		{"dynamic layers", nil, dyn, 5000, 4 << 20},
		{"override beats dynamic", map[string]string{"segment.bytes": "5242880"}, dyn, 5000, 5 << 20},
	} {
		tc2, err := c.Topic(tc.overrides, tc.dyn)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tc2.RetentionMs != tc.retention || tc2.SegmentBytes != tc.segment {
			t.Errorf("%s: retention.ms %d segment.bytes %d, want %d %d", tc.name, tc2.RetentionMs, tc2.SegmentBytes, tc.retention, tc.segment)
		}
	}
	if td, _ := c.Topic(nil, nil); !reflect.DeepEqual(td, c.TopicDefaults) {
		t.Errorf("Topic(nil, nil) differs from TopicDefaults")
	}
}

func TestTopicRefusals(t *testing.T) {
	c := Default()
	for _, tc := range []struct {
		overrides map[string]string
		sentinel  error
		msg       string
	}{
		{map[string]string{"retention.hours": "1"}, ErrUnknownConfig, "Unknown topic config name: retention.hours"},
		{map[string]string{"segment.bytes": "10"}, ErrInvalidValue, "Invalid value 10 for configuration segment.bytes: Value must be at least 1048576"},
		{map[string]string{"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, ErrInvalidValue,
			"conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"},
	} {
		_, err := c.Topic(tc.overrides, nil)
		var ae *AlterError
		if !errors.As(err, &ae) || !errors.Is(err, tc.sentinel) || ae.Message != tc.msg {
			t.Errorf("%v: got %v, want %q", tc.overrides, err, tc.msg)
		}
	}
}

func TestValidateTopicConfig(t *testing.T) {
	for _, tc := range []struct {
		name, value, msg string
	}{
		{"retention.ms", "-1", ""},
		{"cleanup.policy", "compact, delete", ""},
		{"unclean.leader.election.enable", " TRUE ", ""},
		{"min.cleanable.dirty.ratio", "0.1", ""},
		{"log.retention.ms", "1", "Unknown topic config name: log.retention.ms"},
		{"retention.ms", "7d", "Invalid value 7d for configuration retention.ms: Not a number of type LONG"},
		{"segment.bytes", "3000000000", "Invalid value 3000000000 for configuration segment.bytes: Not a number of type INT"},
		{"retention.ms", "-2", "Invalid value -2 for configuration retention.ms: Value must be at least -1"},
		{"preallocate", "yes", "Invalid value yes for configuration preallocate: Expected value to be either true or false"},
		{"compression.type", "brotli", "Invalid value brotli for configuration compression.type: allowed values are uncompressed, zstd, lz4, snappy, gzip, producer"},
		{"cleanup.policy", "compact,compact", "Invalid value compact,compact for configuration cleanup.policy: Values must not be duplicated: compact"},
		{"cleanup.policy", "", "Invalid value  for configuration cleanup.policy: List must not be empty"},
		{"min.cleanable.dirty.ratio", "half", "Invalid value half for configuration min.cleanable.dirty.ratio: Not a number of type DOUBLE"},
	} {
		err := ValidateTopicConfig(tc.name, tc.value)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.msg {
			t.Errorf("%s=%q: got %q, want %q", tc.name, tc.value, got, tc.msg)
		}
	}
}

func TestValidateBrokerConfig(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		perBroker   bool
		sentinel    error
		msg         string
	}{
		{"log.retention.ms", "1000", false, nil, ""},
		{"message.max.bytes", "2000000", true, nil, ""},
		{"node.id", "2", true, ErrNotDynamic, "Cannot update these configs dynamically: Set(node.id)"},
		{"log.retention.hours", "1", false, ErrNotDynamic, "Cannot update these configs dynamically: Set(log.retention.hours)"},
		{"retention.ms", "1", false, ErrUnknownConfig, "Unknown broker config name: retention.ms"},
		{"log.segment.bytes", "1", false, ErrInvalidValue, "Invalid value 1 for configuration log.segment.bytes: Value must be at least 1048576"},
	} {
		err := ValidateBrokerConfig(tc.name, tc.value, tc.perBroker)
		if tc.sentinel == nil {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, tc.sentinel) || err.Error() != tc.msg {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.msg)
		}
	}
}

func TestDescribeTopic(t *testing.T) {
	c := mustParse(t, "[storage]\nlog.retention.hours = 1\n")
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name      string
		overrides map[string]string
		dyn       *Dynamic
		want      Described
	}{
		{"static", nil, nil, Described{Value: str("3600000"), Source: SourceStaticBroker, Synonyms: []Synonym{
			{"log.retention.hours", "1", SourceStaticBroker},
			{"log.retention.hours", "168", SourceDefault},
		}}},
		{"override", map[string]string{"retention.ms": "60000"}, nil, Described{Value: str("60000"), Source: SourceDynamicTopic, Synonyms: []Synonym{
			{"retention.ms", "60000", SourceDynamicTopic},
			{"log.retention.hours", "1", SourceStaticBroker},
			{"log.retention.hours", "168", SourceDefault},
		}}},
		{"dynamic", nil, &Dynamic{Broker: map[string]string{"log.retention.ms": "9"}, ClusterDefault: map[string]string{"log.retention.ms": "8"}},
			Described{Value: str("9"), Source: SourceDynamicBroker, Synonyms: []Synonym{
				{"log.retention.ms", "9", SourceDynamicBroker},
				{"log.retention.ms", "8", SourceDynamicDefaultBroker},
				{"log.retention.hours", "1", SourceStaticBroker},
				{"log.retention.hours", "168", SourceDefault},
			}}},
	} {
		all, err := c.DescribeTopic(tc.overrides, tc.dyn)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != len(TopicEntries()) {
			t.Errorf("%s: %d rows, want %d", tc.name, len(all), len(TopicEntries()))
		}
		var got Described
		for _, d := range all {
			if d.Name == "retention.ms" {
				got = d
			}
		}
		if *got.Value != *tc.want.Value || got.Source != tc.want.Source || !reflect.DeepEqual(got.Synonyms, tc.want.Synonyms) || got.ReadOnly || got.Type != TypeLong {
			t.Errorf("%s: got %s %v %+v", tc.name, *got.Value, got.Source, got.Synonyms)
		}
	}
	if _, err := c.DescribeTopic(nil, &Dynamic{ClusterDefault: map[string]string{"log.retention.ms": "x"}}); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("bad dynamic value: %v", err)
	}
}

func TestDescribeBroker(t *testing.T) {
	c := mustParse(t, "[broker]\nnode.id = 1\n[storage]\nlog.retention.hours = 2\n")
	all, err := c.DescribeBroker(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(Entries()) {
		t.Fatalf("%d rows, want %d", len(all), len(Entries()))
	}
	rows := map[string]Described{}
	for _, d := range all {
		rows[d.Name] = d
	}
	if d := rows["node.id"]; *d.Value != "1" || d.Source != SourceStaticBroker || !d.ReadOnly || d.Type != TypeInt {
		t.Errorf("node.id: %+v", d)
	}
	if d := rows["log.retention.ms"]; d.Value != nil || d.Source != SourceDefault || d.ReadOnly ||
		!reflect.DeepEqual(d.Synonyms, []Synonym{{"log.retention.hours", "2", SourceStaticBroker}, {"log.retention.hours", "168", SourceDefault}}) {
		t.Errorf("log.retention.ms: %+v", d)
	}
	if d := rows["log.dirs"]; *d.Value != "./wren-data" || d.Source != SourceDefault || d.Type != TypeList {
		t.Errorf("log.dirs: %+v", d)
	}
}

func TestWithDynamic(t *testing.T) {
	c := mustParse(t, "[storage]\nlog.retention.hours = 1\n")
	n, err := c.WithDynamic(&Dynamic{
		ClusterDefault: map[string]string{"message.max.bytes": "2000000", "max.connections": "10"},
		Broker:         map[string]string{"max.connections": "20"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if n.TopicDefaults.MaxMessageBytes != 2000000 || n.MaxConnections != 20 || n.TopicDefaults.RetentionMs != 3600*1000 {
		t.Errorf("max.message.bytes %d max.connections %d retention %d", n.TopicDefaults.MaxMessageBytes, n.MaxConnections, n.TopicDefaults.RetentionMs)
	}
	if c.MaxConnections != 1024 {
		t.Errorf("WithDynamic changed the original")
	}
	if _, err := c.WithDynamic(&Dynamic{Broker: map[string]string{"node.id": "2"}}); !errors.Is(err, ErrNotDynamic) {
		t.Errorf("read-only: %v", err)
	}
	// Each value valid, together contradictory.
	_, err = c.WithDynamic(&Dynamic{ClusterDefault: map[string]string{"message.max.bytes": "200000000"}})
	if !errors.Is(err, ErrInvalidValue) || err.Error() != "message.max.bytes (200000000) must be below socket.request.max.bytes (8388608): a produce request holding the largest batch could not be received" {
		t.Errorf("contradiction: %v", err)
	}
}
