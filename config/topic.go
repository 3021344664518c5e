package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
)

// TopicEntry is a topic-level config (segment.bytes). Its type and validator
// are those of its first synonym, the broker setting in the topic's unit.
type TopicEntry struct {
	Name       string
	Type       Type
	Validator  *Validator
	Doc        string
	Importance Importance
	// Synonyms are the broker settings that give its default, highest
	// precedence first: log.retention.ms, log.retention.minutes,
	// log.retention.hours for retention.ms.
	Synonyms []*Entry
	// Default is the value of a topic config without Synonyms.
	Default any
}

// TopicEntries lists every topic-level config in registry order.
func TopicEntries() []*TopicEntry {
	out := make([]*TopicEntry, len(topicOrder))
	for i, name := range topicOrder {
		out[i] = topics[name]
	}
	return out
}

// LookupTopic finds a topic-level config by name.
func LookupTopic(name string) (*TopicEntry, bool) {
	t, ok := topics[name]
	return t, ok
}

// TopicConfig is a topic's effective config, in the topic's units (ms), as
// the engine and the replication layer act on it.
type TopicConfig struct {
	SegmentBytes                int32    `config:"segment.bytes"`
	SegmentMs                   int64    `config:"segment.ms"`
	SegmentJitterMs             int64    `config:"segment.jitter.ms"`
	SegmentIndexBytes           int32    `config:"segment.index.bytes"`
	IndexIntervalBytes          int32    `config:"index.interval.bytes"`
	RetentionMs                 int64    `config:"retention.ms"`    // -1: no time limit
	RetentionBytes              int64    `config:"retention.bytes"` // -1: no size limit
	CleanupPolicy               []string `config:"cleanup.policy"`
	DeleteRetentionMs           int64    `config:"delete.retention.ms"`
	MinCleanableDirtyRatio      float64  `config:"min.cleanable.dirty.ratio"`
	MinCompactionLagMs          int64    `config:"min.compaction.lag.ms"`
	MaxCompactionLagMs          int64    `config:"max.compaction.lag.ms"`
	FlushMessages               int64    `config:"flush.messages"`
	FlushMs                     int64    `config:"flush.ms"`
	MaxMessageBytes             int32    `config:"max.message.bytes"`
	MinInsyncReplicas           int32    `config:"min.insync.replicas"`
	CompressionType             string   `config:"compression.type"`
	MessageTimestampType        string   `config:"message.timestamp.type"`
	MessageTimestampBeforeMaxMs int64    `config:"message.timestamp.before.max.ms"`
	MessageTimestampAfterMaxMs  int64    `config:"message.timestamp.after.max.ms"`
	UncleanLeaderElectionEnable bool     `config:"unclean.leader.election.enable"`
	FileDeleteDelayMs           int64    `config:"file.delete.delay.ms"`
	Preallocate                 bool     `config:"preallocate"`
	// The replication throttle lists (KIP-73): see ThrottledReplicas.
	LeaderReplicationThrottledReplicas   []string `config:"leader.replication.throttled.replicas"`
	FollowerReplicationThrottledReplicas []string `config:"follower.replication.throttled.replicas"`
}

// Dynamic holds broker settings altered at run time (IncrementalAlterConfigs
// on a broker resource, kept in the metadata log), as text by broker name.
// Values set this way must have passed ValidateBrokerConfig.
type Dynamic struct {
	// Broker is this broker's own layer (resource name = its node id).
	Broker map[string]string
	// ClusterDefault is the cluster-wide layer (empty resource name).
	ClusterDefault map[string]string
	// StoresElsewhere: Broker is another node's layer, whose listener
	// key and trust stores are files on that node, so they are not
	// loaded here (that node checked them before forwarding the change).
	StoresElsewhere bool
}

// Described is one row of a DescribeConfigs response.
type Described struct {
	Name string
	// Value is nil when the setting has no value (Kafka's null).
	Value    *string
	Source   Source
	ReadOnly bool
	// Sensitive values (private keys, passwords) are described as null,
	// as Kafka does.
	Sensitive bool
	Type      Type
	Doc       string
	// Synonyms are every place the value could come from, highest
	// precedence first (DescribeConfigs' include_synonyms).
	Synonyms []Synonym
}

// Synonym is one place a described value could come from.
type Synonym struct {
	Name   string
	Value  string
	Source Source
}

// layer is one candidate value for a setting, in its own unit.
type layer struct {
	name   string
	value  any
	source Source
	scale  int64
}

// Topic returns a topic's effective config: its overrides (topic config
// name → text, as CreateTopics and AlterConfigs give them) over the dynamic
// broker layers over this config. It refuses what Kafka refuses: an unknown
// name, a bad value, min.compaction.lag.ms above max.compaction.lag.ms.
// dyn may be nil.
func (c *Config) Topic(overrides map[string]string, dyn *Dynamic) (TopicConfig, error) {
	tc, err := c.resolveTopic(overrides, dyn)
	if err == nil && tc.MinCompactionLagMs > tc.MaxCompactionLagMs {
		err = &AlterError{Err: ErrInvalidValue, Message: fmt.Sprintf(
			"conflict topic config setting min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)",
			tc.MinCompactionLagMs, tc.MaxCompactionLagMs)}
	}
	if err != nil {
		return TopicConfig{}, err
	}
	return tc, nil
}

// resolveTopic applies precedence, and checks each value but not how they
// relate (Topic does, and the file's cross-checks do).

func (c *Config) resolveTopic(overrides map[string]string, dyn *Dynamic) (TopicConfig, error) {
	if err := checkTopicNames(overrides); err != nil {
		return TopicConfig{}, err
	}
	values := make(map[string]any, len(topics))
	for _, name := range topicOrder {
		chain, err := c.topicChain(topics[name], overrides, dyn)
		if err != nil {
			return TopicConfig{}, err
		}
		values[name] = chain[0].topicValue()
	}
	var tc TopicConfig
	bindStruct(reflect.ValueOf(&tc).Elem(), values)
	return tc, nil
}

// DescribeTopic lists every topic config of a topic with its value, source
// and synonyms, in registry order, as DescribeConfigs reports a topic.
func (c *Config) DescribeTopic(overrides map[string]string, dyn *Dynamic) ([]Described, error) {
	if err := checkTopicNames(overrides); err != nil {
		return nil, err
	}
	out := make([]Described, 0, len(topicOrder))
	for _, name := range topicOrder {
		t := topics[name]
		chain, err := c.topicChain(t, overrides, dyn)
		if err != nil {
			return nil, err
		}
		v := formatString(chain[0].topicValue())
		out = append(out, Described{Name: name, Value: &v, Source: chain[0].source, Type: t.Type,
			Doc: t.Doc, Synonyms: synonyms(chain)})
	}
	return out, nil
}

// DescribeBroker lists every broker setting with its value, source and
// synonyms, in registry order, as DescribeConfigs reports a broker.
func (c *Config) DescribeBroker(dyn *Dynamic) ([]Described, error) {
	out := make([]Described, 0, len(registry))
	for _, e := range registry {
		group := []*Entry{e}
		if e.Topic != "" {
			syn := topics[e.Topic].Synonyms
			group = syn[slices.Index(syn, e):]
		}
		chain, err := c.chain(group, dyn)
		if err != nil {
			return nil, err
		}
		d := Described{Name: e.Name, Source: SourceDefault, ReadOnly: e.Mode == ReadOnly, Type: e.Type,
			Doc: e.Doc, Synonyms: synonyms(chain)}
		if len(chain) > 0 && chain[0].name == e.Name {
			v := formatString(chain[0].value)
			d.Value, d.Source = &v, chain[0].source
		}
		if e.Sensitive {
			d.Sensitive, d.Value = true, nil
			for i := range d.Synonyms {
				d.Synonyms[i].Value = ""
			}
		}
		out = append(out, d)
	}
	if dyn != nil {
		// A listener's own TLS settings set at run time (Kafka describes
		// them too); sensitive ones as null.
		for _, name := range slices.Sorted(maps.Keys(dyn.Broker)) {
			_, sub, ok := listenerKey(name)
			e := byName[sub]
			if !ok || e == nil {
				continue
			}
			v := dyn.Broker[name]
			d := Described{Name: name, Value: &v, Source: SourceDynamicBroker, Type: e.Type, Doc: e.Doc, Sensitive: e.Sensitive,
				Synonyms: []Synonym{{Name: name, Value: v, Source: SourceDynamicBroker}}}
			if e.Sensitive {
				d.Value, d.Synonyms[0].Value = nil, ""
			}
			out = append(out, d)
		}
	}
	return out, nil
}

// topicChain lists where t's value may come from, highest precedence first;
// it is never empty, because every topic config has a default.
func (c *Config) topicChain(t *TopicEntry, overrides map[string]string, dyn *Dynamic) ([]layer, error) {
	var out []layer
	if text, ok := overrides[t.Name]; ok {
		v, err := parseChecked(t.Name, t.Type, t.Validator, text)
		if err != nil {
			return nil, err
		}
		out = append(out, layer{name: t.Name, value: v, source: SourceDynamicTopic, scale: 1})
	}
	rest, err := c.chain(t.Synonyms, dyn)
	if err != nil {
		return nil, err
	}
	out = append(out, rest...)
	if len(t.Synonyms) == 0 && t.Default != nil {
		out = append(out, layer{name: t.Name, value: t.Default, source: SourceDefault, scale: 1})
	}
	if len(out) == 0 {
		panic(fmt.Sprintf("config: topic config %s has no default", t.Name))
	}
	return out, nil
}

// chain lists the layers of a group of broker settings (one setting, or the
// synonyms of a topic config from some point on): each one's run-time and
// file values in order, then the first default that is not null.
func (c *Config) chain(group []*Entry, dyn *Dynamic) ([]layer, error) {
	var out []layer
	for _, e := range group {
		for _, l := range []struct {
			values map[string]string
			source Source
		}{{dynBroker(dyn), SourceDynamicBroker}, {dynDefault(dyn), SourceDynamicDefaultBroker}} {
			if text, ok := l.values[e.Name]; ok {
				v, err := parseChecked(e.Name, e.Type, e.Validator, text)
				if err != nil {
					return nil, err
				}
				out = append(out, layer{name: e.Name, value: v, source: l.source, scale: e.scale()})
			}
		}
		if g, ok := c.given[e.Name]; ok {
			out = append(out, layer{name: e.Name, value: g.value, source: g.source, scale: e.scale()})
		}
	}
	for _, e := range group {
		if d := c.defaults[e.Name]; d != nil {
			out = append(out, layer{name: e.Name, value: d, source: SourceDefault, scale: e.scale()})
			break
		}
	}
	return out, nil
}

func dynBroker(d *Dynamic) map[string]string {
	if d == nil {
		return nil
	}
	return d.Broker
}

func dynDefault(d *Dynamic) map[string]string {
	if d == nil {
		return nil
	}
	return d.ClusterDefault
}

// topicValue converts a layer's value to the topic config's unit. A
// negative time stays -1 ("no limit"), as Kafka's retention does.
func (l layer) topicValue() any {
	if l.scale == 1 {
		return l.value
	}
	n := l.value.(int64)
	if n < 0 {
		return int64(-1)
	}
	return n * l.scale
}

func synonyms(chain []layer) []Synonym {
	out := make([]Synonym, len(chain))
	for i, l := range chain {
		out[i] = Synonym{Name: l.name, Value: formatString(l.value), Source: l.source}
	}
	return out
}

func checkTopicNames(overrides map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(overrides)) {
		if _, ok := topics[name]; !ok {
			return &AlterError{Err: ErrUnknownConfig, Message: "Unknown topic config name: " + name}
		}
	}
	return nil
}

// parseChecked parses text as t and runs the validator, with Kafka's message.
func parseChecked(name string, t Type, v *Validator, text string) (any, error) {
	x, err := parseString(t, text)
	if err == nil {
		err = v.Check(x)
	}
	if err != nil {
		return nil, invalidValue(name, text, err)
	}
	return x, nil
}

// ValidateTopicConfig checks one topic config as CreateTopics and
// (Incremental)AlterConfigs on a topic resource do. Settings that depend on
// each other (min.compaction.lag.ms and max.compaction.lag.ms) are checked
// together by Topic.
func ValidateTopicConfig(name, value string) error {
	t, ok := topics[name]
	if !ok {
		return &AlterError{Err: ErrUnknownConfig, Message: "Unknown topic config name: " + name}
	}
	_, err := parseChecked(name, t.Type, t.Validator, value)
	return err
}

// ValidateBrokerConfig checks one broker setting as (Incremental)AlterConfigs
// on a broker resource does: perBroker for a node's own layer, false for the
// cluster-wide default.
func ValidateBrokerConfig(name, value string, perBroker bool) error {
	if IsUplinkKey(name) {
		// The controller checks values only (it passes perBroker true
		// for every layer); the layer is checked where the request
		// arrives (WithDynamic, CheckUplinkChange) and, for a run-time
		// link, at the controller too (CheckUplinkChange).
		perBroker = false
	}
	_, err := parseBrokerValue(name, value, perBroker)
	return err
}

func parseBrokerValue(name, value string, perBroker bool) (any, error) {
	if _, sub, ok := listenerKey(name); ok {
		return parseListenerValue(name, sub, value, perBroker)
	}
	if _, ok := uplinkPausedName(name); ok {
		return parseUplinkPaused(name, value, perBroker)
	}
	if _, _, ok := uplinkLinkKey(name); ok {
		return parseUplinkLinkValue(name, value, perBroker)
	}
	e, ok := byName[name]
	if !ok {
		return nil, &AlterError{Err: ErrUnknownConfig, Message: "Unknown broker config name: " + name}
	}
	switch {
	case e.Mode == ReadOnly:
		return nil, &AlterError{Err: ErrNotDynamic, Message: "Cannot update these configs dynamically: Set(" + name + ")"}
	case e.Mode == PerBroker && !perBroker:
		return nil, &AlterError{Err: ErrNotDynamic, Message: "Cannot update these configs at default cluster level, broker id must be specified: Set(" + name + ")"}
	}
	return parseChecked(name, e.Type, e.Validator, value)
}
