package config

import (
	"fmt"
	"sort"
)

// Settings the registry documents (so that Kafka configs paste cleanly and
// `config dump --all` is complete) but wren does not apply yet. A file may
// set them: loading accepts them, and `wren config check` and the broker's
// start-up log warn about each one set, by name. AlterConfigs and
// IncrementalAlterConfigs refuse to set them (INVALID_CONFIG with the
// reason), because a stored value that changes nothing would lie to the
// operator.
//
// Keys are flattened broker names and topic config names. A broker
// setting that is the default of a topic config is listed under the topic
// name (segment.jitter.ms covers log.roll.jitter.ms and
// log.roll.jitter.hours). When a setting is implemented, remove it here
// and regenerate config.example.toml (TestExampleFile).
var notInEffect = map[string]string{
	// [cluster]: the election counts its timeout from
	// controller.quorum.fetch.timeout.ms (KRaft's follower timeout), not
	// from this one.
	"controller.quorum.election.timeout.ms": "the election times out after controller.quorum.fetch.timeout.ms plus up to controller.quorum.election.backoff.max.ms",
	// Topic configs (and their broker defaults).
	"compression.type":                "batches are stored as the producer compressed them",
	"segment.jitter.ms":               "segments roll at segment.ms exactly",
	"message.timestamp.before.max.ms": "record timestamps are not checked against it yet",
	"message.timestamp.after.max.ms":  "record timestamps are not checked against it yet",
	"file.delete.delay.ms":            "segments removed by retention are deleted at once",
	// [storage]
	"log.cleaner.threads":        "the cleaner runs one pass at a time",
	"log.dir.failure.timeout.ms": "a failed log dir is reported to the controller by heartbeat (which moves its leaderships), and the broker goes on running if it cannot be told",
	// [groups]: KIP-848 members get group.consumer.session.timeout.ms and
	// group.consumer.heartbeat.interval.ms; what a member may ask for is
	// not bounded yet.
	"group.consumer.min.session.timeout.ms":    "members cannot choose their session timeout yet",
	"group.consumer.max.session.timeout.ms":    "members cannot choose their session timeout yet",
	"group.consumer.min.heartbeat.interval.ms": "members cannot choose their heartbeat interval yet",
	"group.consumer.max.heartbeat.interval.ms": "members cannot choose their heartbeat interval yet",
}

// offValues are values of ignored settings that ask for what wren does
// anyway, so setting them warns about nothing.
var offValues = map[string]any{}

// startOnly are settings Kafka can alter at run time that wren reads only
// at start: a file may set them, but altering them at run time is refused
// rather than stored without effect.
var startOnly = map[string]bool{
	"log.cleaner.backoff.ms":         true,
	"log.cleaner.dedupe.buffer.size": true,
	"producer.id.expiration.ms":      true,
}

// NotInEffect reports whether wren ignores the setting named (a flattened
// broker name or a topic config name) and, if so, why.
func NotInEffect(name string) (reason string, ignored bool) {
	if reason, ok := notInEffect[name]; ok {
		return reason, true
	}
	if e, ok := byName[name]; ok && e.Topic != "" {
		reason, ok := notInEffect[e.Topic]
		return reason, ok
	}
	return "", false
}

// clusterOnly are topic configs whose broker default only the controller
// reads, for every broker at once: a value in one broker's own layer
// would apply only while that broker is the controller, so setting one
// there is refused.
var clusterOnly = map[string]string{
	"unclean.leader.election.enable": "the controller's leader elections read it for the whole cluster",
}

// AlterTarget is the resource a run-time config change sets a key on.
type AlterTarget int8

const (
	// AlterTopic: a topic's own config (CreateTopics' configs too).
	AlterTopic AlterTarget = iota
	// AlterClusterDefault: the cluster-wide default (BROKER resource "").
	AlterClusterDefault
	// AlterBroker: one broker's own layer (BROKER resource named by id).
	AlterBroker
)

// CheckAlter refuses, with the message AlterConfigs gives, to set at run
// time a setting that would have no effect: one wren does not implement,
// for a broker resource one wren reads only at start, and for one broker's
// own layer one only the controller reads cluster-wide. CreateTopics'
// configs, AlterConfigs and IncrementalAlterConfigs all ask it, so a key
// is refused the same way whichever sets it.
func CheckAlter(name string, target AlterTarget) error {
	if reason, ignored := NotInEffect(name); ignored {
		return &AlterError{Err: ErrInvalidValue, Message: fmt.Sprintf(
			"%s is not in effect in wren yet (%s): it is accepted in a config file for compatibility but cannot be set at run time", name, reason)}
	}
	if target != AlterTopic && startOnly[name] {
		return &AlterError{Err: ErrNotDynamic, Message: fmt.Sprintf(
			"wren reads %s only at start: set it in the config file and restart the broker", name)}
	}
	if reason, ok := clusterOnly[name]; ok && target == AlterBroker {
		return &AlterError{Err: ErrNotDynamic, Message: fmt.Sprintf(
			"%s cannot be set for one broker (%s): set it as the cluster-wide default (the BROKER resource named \"\") or on a topic", name, reason)}
	}
	return nil
}

// Warning is a setting the file set that has no effect (Reason says
// why), or a valid setting that is unwise (Msg says why).
type Warning struct {
	File   string
	Pos    Position
	Key    string
	Reason string
	Msg    string
}

// Message is the warning without its place.
func (w Warning) Message() string {
	if w.Msg != "" {
		return w.Msg
	}
	return fmt.Sprintf("%s is not in effect in wren yet (%s)", w.Key, w.Reason)
}

func (w Warning) String() string {
	return fmt.Sprintf("%s:%d:%d: warning: %s", w.File, w.Pos.Line, w.Pos.Column, w.Message())
}

// Warnings lists, in file order, the settings the file set that wren does
// not apply yet, and a voter count that tolerates no more failures than a
// smaller one: `wren config check` prints them and `wren serve` logs them
// at start.
func (c *Config) Warnings() []Warning {
	var out []Warning
	for name, g := range c.given {
		if g.source != SourceStaticBroker {
			continue
		}
		if off, ok := offValues[name]; ok && g.value == off {
			continue
		}
		if reason, ignored := NotInEffect(name); ignored {
			out = append(out, Warning{File: c.file, Pos: g.pos, Key: name, Reason: reason})
		}
	}
	if w, ok := c.votersWarning(); ok {
		out = append(out, w)
	}
	out = append(out, c.sslWarnings()...)
	out = append(out, c.plaintextWarnings()...)
	// sort.SliceStable, not slices.SortFunc: no sort code instantiated
	// for Warning in the binary.
	sort.SliceStable(out, func(i, j int) bool {
		a, b := &out[i], &out[j]
		return a.Pos.Line < b.Pos.Line || a.Pos.Line == b.Pos.Line && a.Pos.Column < b.Pos.Column
	})
	return out
}

// votersWarning warns about a metadata quorum of two voters, or of any
// even number: a majority of two is both, so either one down stops the
// cluster (worse than one node alone), and 2n voters tolerate the n-1
// failures that 2n-1 do. One voter is a single node, by design.
func (c *Config) votersWarning() (Warning, bool) {
	const key = "controller.quorum.voters"
	n := len(c.Voters)
	g, set := c.given[key]
	if !set || n < 2 || n%2 == 1 {
		return Warning{}, false
	}
	msg := fmt.Sprintf("%s lists %d voters: a majority is %d, so the cluster stops once %d of them are down",
		key, n, n/2+1, n/2)
	if n == 2 {
		msg = fmt.Sprintf("%s lists 2 voters: a majority is 2, so the cluster stops when either one is down, "+
			"which makes two voters less available than one; list three (or one)", key)
	} else {
		msg += fmt.Sprintf(", as with %d voters, which survive the same %d failure(s): list an odd number, at least three", n-1, n/2-1)
	}
	return Warning{File: c.file, Pos: g.pos, Key: key, Msg: msg}, true
}
