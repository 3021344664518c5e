package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// checker runs the checks that involve more than one setting. Each problem
// is reported at the first of its settings that the file set (a problem
// among defaults alone is a bug in the registry, which Default catches).
type checker struct {
	c      *Config
	failed map[string]bool
	errs   []*Error
}

// check returns every cross-setting problem of c. failed names settings
// whose value was refused; checks involving them are skipped.
func check(c *Config, failed map[string]bool) []*Error {
	k := &checker{c: c, failed: failed}
	k.voters()
	k.logDirs()
	k.replication()
	k.listeners()
	k.orders()
	k.bootstrapAdmin()
	return k.errs
}

// skip reports whether a check on these settings should not run.
func (k *checker) skip(keys ...string) bool {
	return slices.ContainsFunc(keys, func(key string) bool { return k.failed[key] })
}

// fail records a problem with keys, at the first one the file set.
func (k *checker) fail(keys []string, format string, args ...any) {
	e := &Error{File: k.c.file, Key: keys[0], Msg: fmt.Sprintf(format, args...)}
	for _, key := range keys {
		if g, ok := k.c.given[key]; ok {
			e.Key, e.Pos = key, g.pos
			break
		}
	}
	k.errs = append(k.errs, e)
}

// failAt records a problem at the first of keys the file set, which may
// be a listener's listener.name.NAME.ssl.* override; the message names
// keys[0].
func (k *checker) failAt(keys []string, format string, args ...any) {
	e := &Error{File: k.c.file, Key: keys[0], Msg: fmt.Sprintf(format, args...)}
	for _, key := range keys {
		if g, ok := k.c.given[key]; ok {
			e.Pos = g.pos
			break
		}
		if rest, ok := strings.CutPrefix(key, "listener.name."); ok {
			if name, sub, ok := strings.Cut(rest, "."); ok {
				if g, ok := k.c.listenerSSL[name][sub]; ok {
					e.Pos = g.pos
					break
				}
			}
		}
	}
	k.errs = append(k.errs, e)
}

// voters checks that this node is a voter; the list itself (syntax,
// duplicate ids) is its validator's business.
func (k *checker) voters() {
	const voters = "controller.quorum.voters"
	if k.skip(voters, "node.id") {
		return
	}
	c := k.c
	ids := make([]string, len(c.Voters))
	for i, v := range c.Voters {
		ids[i] = fmt.Sprint(v.ID)
	}
	if !slices.ContainsFunc(c.Voters, func(v Voter) bool { return v.ID == c.NodeID }) {
		k.fail([]string{"node.id", voters}, "node.id %d is not in %s (node ids %s): every node is a voter",
			c.NodeID, voters, strings.Join(ids, ", "))
	}
}

// LogDirsMessage is why a config with several log.dirs is refused; serve
// and config check say the same.
func LogDirsMessage(n int) string {
	return fmt.Sprintf("log.dirs: wren serves exactly one log dir for now; log.dirs has %d", n)
}

func (k *checker) logDirs() {
	if k.skip("log.dirs") || len(k.c.LogDirs) <= 1 {
		return
	}
	k.fail([]string{"log.dirs"}, "%s", LogDirsMessage(len(k.c.LogDirs)))
}

func (k *checker) replication() {
	c := k.c
	n := len(c.Voters)
	if !k.skip("default.replication.factor", "controller.quorum.voters") && int(c.DefaultReplicationFactor) > n {
		k.fail([]string{"default.replication.factor", "controller.quorum.voters"},
			"default.replication.factor %d is above the %d node(s) of controller.quorum.voters", c.DefaultReplicationFactor, n)
	}
	if !k.skip("offsets.topic.replication.factor", "controller.quorum.voters") && int(c.OffsetsTopicReplicationFactor) > n {
		k.fail([]string{"offsets.topic.replication.factor", "controller.quorum.voters"},
			"offsets.topic.replication.factor %d is above the %d node(s) of controller.quorum.voters", c.OffsetsTopicReplicationFactor, n)
	}
	if !k.skip("min.insync.replicas", "default.replication.factor") && c.TopicDefaults.MinInsyncReplicas > c.DefaultReplicationFactor {
		k.fail([]string{"min.insync.replicas", "default.replication.factor"},
			"min.insync.replicas %d is above default.replication.factor %d: acks=all writes to new topics would always fail",
			c.TopicDefaults.MinInsyncReplicas, c.DefaultReplicationFactor)
	}
}

func (k *checker) listeners() {
	const (
		listeners  = "listeners"
		advertised = "advertised.listeners"
		names      = "controller.listener.names"
		protoMap   = "listener.security.protocol.map"
	)
	if k.skip(listeners, names, protoMap) {
		return
	}
	c := k.c
	isController := func(name string) bool {
		return slices.ContainsFunc(c.ControllerListenerNames, func(n string) bool { return strings.EqualFold(n, name) })
	}
	var client []Listener
	for i, l := range c.Listeners {
		switch proto := c.ListenerProtocol(l.Name); {
		case proto == "":
			k.fail([]string{protoMap, listeners}, "listeners: %s has no security protocol: add %s:PLAINTEXT (or SSL) to %s", l, l.Name, protoMap)
		case isController(l.Name) && proto != ProtocolPlaintext && proto != ProtocolSSL:
			k.fail([]string{protoMap, listeners}, "%s: controller listener %s must be PLAINTEXT or SSL (mutual TLS between the peers), not %s", protoMap, l.Name, proto)
		case isController(l.Name) && proto == ProtocolSSL:
			k.checkControllerSSL(l.Name)
		case proto == ProtocolSSL || proto == ProtocolSASLSSL:
			k.checkSSL(l.Name)
		}
		for _, m := range c.Listeners[:i] {
			if l.Port != 0 && l.Port == m.Port && (l.Host == m.Host || l.Host == "" || m.Host == "" || isWildcard(l.Host) || isWildcard(m.Host)) {
				k.fail([]string{listeners}, "listeners: %s and %s use the same port", m, l)
			}
		}
		if !isController(l.Name) {
			client = append(client, l)
		}
	}
	for _, n := range c.ControllerListenerNames {
		if !slices.ContainsFunc(c.Listeners, func(l Listener) bool { return strings.EqualFold(l.Name, n) }) {
			k.fail([]string{names, listeners}, "controller.listener.names: listener %s is not in listeners", n)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.listenerSSL)) {
		if !slices.ContainsFunc(c.Listeners, func(l Listener) bool { return strings.EqualFold(l.Name, name) }) {
			for _, sub := range slices.Sorted(maps.Keys(c.listenerSSL[name])) {
				k.failAt([]string{"listener.name." + name + "." + sub}, "listener.name.%s.%s: there is no listener %s in listeners", name, sub, strings.ToUpper(name))
			}
		}
	}
	if len(client) == 0 {
		k.fail([]string{listeners}, "listeners: no listener for clients: every one is in controller.listener.names")
	}
	if k.skip(advertised) {
		return
	}
	for _, a := range c.AdvertisedListeners {
		switch {
		case isController(a.Name):
			k.fail([]string{advertised}, "advertised.listeners: %s is a controller listener; clients are never sent there", a)
		case !slices.ContainsFunc(c.Listeners, func(l Listener) bool { return l.Name == a.Name }):
			k.fail([]string{advertised}, "advertised.listeners: %s names no listener in listeners", a)
		case a.Host == "" || isWildcard(a.Host):
			k.fail([]string{advertised}, "advertised.listeners: %s is not an address a client can dial", a)
		}
	}
	for _, l := range client {
		if !isWildcard(l.Host) {
			continue
		}
		if !slices.ContainsFunc(c.AdvertisedListeners, func(a Listener) bool { return a.Name == l.Name }) {
			k.fail([]string{advertised, listeners},
				"listeners: %s binds every interface, which clients cannot dial: give advertised.listeners an address for %s", l, l.Name)
		}
	}
}

// order is one "a must be below (or at most) b" rule between settings.
type order struct {
	lo, hi string
	strict bool
	why    string
}

var orders = []order{
	{"controller.heartbeat.interval.ms", "controller.lease.ms", true, "the lease would lapse between heartbeats"},
	{"controller.lease.ms", "controller.quorum.fetch.timeout.ms", true, "peers could elect a new controller while the old one still holds its lease"},
	{"broker.heartbeat.interval.ms", "broker.session.timeout.ms", true, "live brokers would be fenced between heartbeats"},
	{"replica.fetch.wait.max.ms", "replica.lag.time.max.ms", false, "idle followers would drop out of the ISR"},
	{"group.min.session.timeout.ms", "group.max.session.timeout.ms", false, "no session timeout could be accepted"},
	{"group.consumer.min.session.timeout.ms", "group.consumer.session.timeout.ms", false, "the default is outside the allowed range"},
	{"group.consumer.session.timeout.ms", "group.consumer.max.session.timeout.ms", false, "the default is outside the allowed range"},
	{"group.consumer.min.heartbeat.interval.ms", "group.consumer.heartbeat.interval.ms", false, "the default is outside the allowed range"},
	{"group.consumer.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms", false, "the default is outside the allowed range"},
	{"group.consumer.heartbeat.interval.ms", "group.consumer.session.timeout.ms", true, "members would time out between heartbeats"},
	{"log.cleaner.min.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms", false, "no record could ever be compacted in time"},
	{"message.max.bytes", "socket.request.max.bytes", true, "a produce request holding the largest batch could not be received"},
	{"message.max.bytes", "max.decompressed.batch.bytes", false, "an uncompressed batch that fits could not be compressed"},
	{"max.decompressed.batch.bytes", "max.decompressed.inflight.bytes", false, "a batch that fits the per-batch cap could never get its share of the budget"},
}

func (k *checker) orders() {
	for _, o := range orders {
		if k.skip(o.lo, o.hi) {
			continue
		}
		lo, hi := k.c.values[o.lo].(int64), k.c.values[o.hi].(int64)
		if lo < hi || (!o.strict && lo == hi) {
			continue
		}
		rel := "at most"
		if o.strict {
			rel = "below"
		}
		// Report at hi when only hi was set: that is the line to change.
		keys := []string{o.lo, o.hi}
		if _, set := k.c.given[o.lo]; !set {
			keys = []string{o.hi, o.lo}
		}
		k.fail(keys, "%s (%d) must be %s %s (%d): %s", o.lo, lo, rel, o.hi, hi, o.why)
	}
}

// ServeErrors are what `wren serve` refuses in a config that is otherwise
// valid, because this build cannot do it yet; config check reports the
// same, so a file it accepts starts. Several voters are served now: the
// metadata quorum replicates the control plane, and acks=all is refused
// (NOT_ENOUGH_REPLICAS) where min.insync.replicas asks for copies that
// partition replication does not make yet.
func (c *Config) ServeErrors() Errors {
	return nil
}
