package config

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The broker ↔ topic name pairs of Kafka's documentation ("Server Default
// Property"), written out by hand so that a typo in the registry fails here.
var kafkaTopicSynonyms = map[string][]string{
	"segment.bytes":                   {"log.segment.bytes"},
	"segment.ms":                      {"log.roll.ms", "log.roll.hours"},
	"segment.jitter.ms":               {"log.roll.jitter.ms", "log.roll.jitter.hours"},
	"segment.index.bytes":             {"log.index.size.max.bytes"},
	"index.interval.bytes":            {"log.index.interval.bytes"},
	"retention.ms":                    {"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
	"retention.bytes":                 {"log.retention.bytes"},
	"cleanup.policy":                  {"log.cleanup.policy"},
	"delete.retention.ms":             {"log.cleaner.delete.retention.ms"},
	"min.cleanable.dirty.ratio":       {"log.cleaner.min.cleanable.ratio"},
	"min.compaction.lag.ms":           {"log.cleaner.min.compaction.lag.ms"},
	"max.compaction.lag.ms":           {"log.cleaner.max.compaction.lag.ms"},
	"flush.messages":                  {"log.flush.interval.messages"},
	"flush.ms":                        {"log.flush.interval.ms", "log.flush.scheduler.interval.ms"},
	"max.message.bytes":               {"message.max.bytes"},
	"min.insync.replicas":             {"min.insync.replicas"},
	"compression.type":                {"compression.type"},
	"message.timestamp.type":          {"log.message.timestamp.type"},
	"message.timestamp.before.max.ms": {"log.message.timestamp.before.max.ms"},
	"message.timestamp.after.max.ms":  {"log.message.timestamp.after.max.ms"},
	"unclean.leader.election.enable":  {"unclean.leader.election.enable"},
	"file.delete.delay.ms":            {"log.segment.delete.delay.ms"},
	"preallocate":                     {"log.preallocate"},
}

func TestTopicSynonymsAreKafkas(t *testing.T) {
	got := map[string][]string{}
	for _, te := range TopicEntries() {
		if len(te.Synonyms) == 0 {
			// Kafka's topic-only configs (the throttle lists) have a
			// default of their own instead.
			if te.Default == nil || te.Validator.Check(te.Default) != nil {
				t.Errorf("%s: no broker synonym and no valid default", te.Name)
			}
			continue
		}
		for _, e := range te.Synonyms {
			got[te.Name] = append(got[te.Name], e.Name)
		}
		if te.Synonyms[0].scale() != 1 {
			t.Errorf("%s: first synonym %s is scaled; the topic's type and validator come from it", te.Name, te.Synonyms[0].Name)
		}
		if te.Type != te.Synonyms[0].Type {
			t.Errorf("%s: type %s, first synonym %s", te.Name, te.Type, te.Synonyms[0].Type)
		}
	}
	if !reflect.DeepEqual(got, kafkaTopicSynonyms) {
		t.Errorf("topic synonyms:\n got %v\nwant %v", got, kafkaTopicSynonyms)
	}
}

func TestRegistryWellFormed(t *testing.T) {
	for _, e := range Entries() {
		s := sectionByName(e.Section)
		if s == nil {
			t.Errorf("%s: unknown section %q", e.Name, e.Section)
			continue
		}
		if s.Prefixed && !strings.HasPrefix(e.Name, s.Name+".") {
			t.Errorf("%s: names in [%s] must carry the section", e.Name, s.Name)
		}
		if e.Doc == "" || !strings.HasSuffix(e.Doc, ".") {
			t.Errorf("%s: doc must be a sentence", e.Name)
		}
		if e.Default != nil {
			if err := typeFits(e.Type, e.Default); err != "" {
				t.Errorf("%s: default %v: %s", e.Name, e.Default, err)
			}
			if err := e.Validator.Check(e.Default); err != nil {
				t.Errorf("%s: default %v fails its validator: %v", e.Name, e.Default, err)
			}
		}
		if e.TopicScale != 0 && e.Topic == "" {
			t.Errorf("%s: TopicScale without Topic", e.Name)
		}
		if (e.derive == nil) != (e.DefaultDoc == "") {
			t.Errorf("%s: a derived default needs DefaultDoc, and only it", e.Name)
		}
	}
}

func typeFits(t Type, v any) string {
	switch x := v.(type) {
	case bool:
		if t == TypeBoolean {
			return ""
		}
	case int64:
		if lo, hi := widthRange(t); isInteger(t) && x >= lo && x <= hi {
			return ""
		}
	case float64:
		if t == TypeDouble {
			return ""
		}
	case string:
		if t == TypeString {
			return ""
		}
	case []string:
		if t == TypeList {
			return ""
		}
	}
	return "does not fit " + t.String()
}

// TOML cannot hold both a.b = 1 and a.b.c = 2 in one table, so a name that
// is a dotted prefix of another in the same section is written quoted
// (Kafka's own names max.connections and max.connections.per.ip are), and
// a file holding both quoted loads.
func TestNamesArePathDisjoint(t *testing.T) {
	for _, a := range Entries() {
		for _, b := range Entries() {
			if a.Section != b.Section || !strings.HasPrefix(b.Key(), a.Key()+".") {
				continue
			}
			if !strings.HasPrefix(a.TOMLKey(), `"`) || !strings.HasPrefix(b.TOMLKey(), `"`) {
				t.Errorf("[%s]: %s is a prefix of %s, and they are not written quoted", a.Section, a.Key(), b.Key())
			}
			c := mustParse(t, fmt.Sprintf("[%s]\n%s = %s\n%s = %s\n", a.Section,
				a.TOMLKey(), tomlValue(a.Default), b.TOMLKey(), tomlValue(b.Default)))
			if !c.Equal(Default()) {
				t.Errorf("[%s]: %s and %s quoted at their defaults do not load as the defaults", a.Section, a.Key(), b.Key())
			}
		}
	}
}

// Every setting is read somewhere: a Config field, or TopicDefaults.
func TestEverySettingBound(t *testing.T) {
	bound := map[string]bool{}
	for _, typ := range []reflect.Type{reflect.TypeFor[Config](), reflect.TypeFor[TopicConfig]()} {
		for i := 0; i < typ.NumField(); i++ {
			if name := typ.Field(i).Tag.Get("config"); name != "" {
				bound[name] = true
			}
		}
	}
	for _, e := range Entries() {
		if e.Topic == "" && !bound[e.Name] {
			t.Errorf("%s has no Config field", e.Name)
		}
	}
	for _, te := range TopicEntries() {
		if !bound[te.Name] {
			t.Errorf("topic config %s has no TopicConfig field", te.Name)
		}
	}
}

// The enums travel on the wire as they are: cross-check them with the
// generated protocol package.
func TestEnumsMatchWire(t *testing.T) {
	for _, typ := range []Type{TypeBoolean, TypeString, TypeInt, TypeShort, TypeLong, TypeDouble, TypeList} {
		if got := kmsg.ConfigType(typ).String(); got != typ.String() {
			t.Errorf("Type %d: kmsg says %s, we say %s", typ, got, typ)
		}
	}
	for _, s := range []Source{SourceDynamicTopic, SourceDynamicBroker, SourceDynamicDefaultBroker, SourceStaticBroker, SourceDefault} {
		if got := kmsg.ConfigSource(s).String(); got != s.String() {
			t.Errorf("Source %d: kmsg says %s, we say %s", s, got, s)
		}
	}
}

// Each default that departs from Kafka's is explained in doc.go.
func TestEdgeDefaultsDocumented(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var wren []string
	for _, e := range Entries() {
		if e.KafkaDefault != "" && !strings.Contains(string(doc), e.Name) {
			t.Errorf("%s differs from Kafka's default (%s) but doc.go does not mention it", e.Name, e.KafkaDefault)
		}
		if e.Wren {
			wren = append(wren, e.Name)
		}
	}
	if want := "wren's own settings (Entry.Wren): " + strings.Join(wren, ", ") + "."; !strings.Contains(strings.Join(strings.Fields(strings.ReplaceAll(string(doc), "//", "")), " "), want) {
		t.Errorf("doc.go should list wren's own settings as:\n%s", want)
	}
}

func TestLookup(t *testing.T) {
	e, ok := Lookup("log.segment.bytes")
	if !ok || e.Section != "storage" || e.Topic != "segment.bytes" || e.Default != int64(128<<20) {
		t.Errorf("Lookup(log.segment.bytes) = %+v, %v", e, ok)
	}
	if _, ok := Lookup("segment.bytes"); ok {
		t.Error("Lookup found a topic-level name among broker settings")
	}
	te, ok := LookupTopic("retention.ms")
	if !ok || te.Type != TypeLong || len(te.Synonyms) != 3 {
		t.Errorf("LookupTopic(retention.ms) = %+v, %v", te, ok)
	}
	if e, _ := Lookup("http.listen"); e.Key() != "listen" {
		t.Errorf("http.listen key = %q", e.Key())
	}
	names := make([]string, 0)
	for _, s := range Sections() {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"broker", "cluster", "topics", "storage", "replication", "groups", "producers", "security", "http", "logging"}) {
		t.Errorf("sections %v", names)
	}
}
