package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Dump renders the effective config as TOML, grouped by section: with all,
// every setting; without, only those whose value differs from its default.
// Loading the output gives back an Equal config. Settings with no value
// (Kafka's null) appear, with all, as a comment.
func (c *Config) Dump(all bool) string {
	var b strings.Builder
	if all {
		b.WriteString("# Effective configuration: every setting.\n")
	} else {
		b.WriteString("# Effective configuration: settings that differ from their defaults.\n")
	}
	for _, s := range sections {
		wrote := false
		for _, e := range registry {
			if e.Section != s.Name {
				continue
			}
			v := c.values[e.Name]
			// A node of several names itself even as node 1: loaded again,
			// a file that lists voters but no node.id must be told which
			// node it is (LoadNode).
			keep := e.Name == "node.id" && len(c.Voters) > 1
			if !all && !keep && reflect.DeepEqual(v, c.defaults[e.Name]) {
				continue
			}
			if !wrote {
				fmt.Fprintf(&b, "\n[%s]\n", s.Name)
				wrote = true
			}
			if v == nil {
				fmt.Fprintf(&b, "# %s is unset\n", e.Key())
				continue
			}
			fmt.Fprintf(&b, "%s = %s\n", e.TOMLKey(), tomlValue(v))
		}
		if s.Name == "security" && len(c.listenerSSL) > 0 {
			if !wrote {
				fmt.Fprintf(&b, "\n[%s]\n", s.Name)
			}
			for _, name := range slices.Sorted(maps.Keys(c.listenerSSL)) {
				for _, key := range slices.Sorted(maps.Keys(c.listenerSSL[name])) {
					fmt.Fprintf(&b, "listener.name.%s.%s = %s\n", name, key, tomlValue(c.listenerSSL[name][key].value))
				}
			}
		}
	}
	return b.String()
}

// Setting is one effective setting, as Settings lists it.
type Setting struct {
	Name    string `json:"name"`
	Section string `json:"section"`
	// Value is bool, int64, float64, string or []string; nil when unset.
	Value any `json:"value"`
	// Default reports whether the value is the setting's default.
	Default bool `json:"default"`
}

// Settings lists the effective settings in file order, as Dump prints
// them: with all, every setting; without, those that differ from their
// defaults.
func (c *Config) Settings(all bool) []Setting {
	var out []Setting
	for _, s := range sections {
		for _, e := range registry {
			if e.Section != s.Name {
				continue
			}
			v := c.values[e.Name]
			isDefault := reflect.DeepEqual(v, c.defaults[e.Name])
			if !all && isDefault {
				continue
			}
			out = append(out, Setting{Name: e.Name, Section: e.Section, Value: cloneValue(v), Default: isDefault})
		}
	}
	return out
}

// tomlValue renders a value as a TOML literal.
func tomlValue(v any) string {
	switch x := v.(type) {
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return formatDouble(x)
	case string:
		return quoteTOML(x)
	case []string:
		q := make([]string, len(x))
		for i, s := range x {
			q[i] = quoteTOML(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	panic(fmt.Sprintf("config: tomlValue: unexpected %T", v))
}

// quoteTOML writes a TOML basic string. TOML's escapes are a subset of
// Go's (no \x), so strconv.Quote will not do.
func quoteTOML(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			// Not UTF-8: TOML cannot hold the byte, so mark it visibly.
			b.WriteString(`\uFFFD`)
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteString(s[:size])
		}
		s = s[size:]
	}
	b.WriteByte('"')
	return b.String()
}

// ExampleFile renders config.example.toml: every setting, commented out at
// its default, with its documentation.
func ExampleFile() string {
	d := Default()
	var b strings.Builder
	b.WriteString(`# wren: every setting of the config file, with its default and what it does.
#
# Generated from the registry (config/registry.go); do not edit by hand:
#   go test ./config -run TestExampleFile -update
#
# Inside the Kafka sections each key is Apache Kafka's own server.properties
# name, so settings pasted from Kafka work unchanged. A line "#key = value"
# shows the default; uncomment it to change it. "dynamic" settings can also be
# altered at run time (IncrementalAlterConfigs); the others take a restart.
# Settings marked "NOT IN EFFECT YET" are accepted so that Kafka configs paste
# cleanly, but wren ignores them for now: wren config check and the broker's
# start-up log warn about each one set, and they cannot be altered at run time.
#
# One file for the whole cluster: the same file can be copied to every node.
# A node finds its own entry of controller.quorum.voters by --node-id N (or
# WREN_NODE_ID=N) given to wren serve, else by node.id in the file, else as
# the voter whose host is an address of this host. Settings that differ
# between nodes go in [node.N.SECTION] tables, which override the shared
# settings on node N only; N must be a voter, and node.id and
# controller.quorum.voters cannot differ between nodes. A node selected so
# whose file gives no listeners listens for clients on port 9092 and for
# peers at its voter entry's port. wren config check, config dump, storage
# check and storage repair take --node-id and WREN_NODE_ID as serve does.
# For example, node 2's own data directory:
#
# [node.2.broker]
# log.dirs = ["/var/lib/wren-node-2"]
`)
	for _, s := range sections {
		fmt.Fprintf(&b, "\n[%s]\n", s.Name)
		wrapComment(&b, s.Doc)
		for _, e := range registry {
			if e.Section != s.Name {
				continue
			}
			b.WriteString("\n")
			attrs := []string{e.Type.word()}
			if v := e.Validator.String(); v != "" {
				attrs = append(attrs, v)
			}
			switch {
			case e.Mode == ReadOnly:
				attrs = append(attrs, "read-only")
			case startOnly[e.Name]:
				attrs = append(attrs, "read-only in wren (dynamic in Kafka)")
			default:
				attrs = append(attrs, "dynamic: "+e.Mode.String())
			}
			if e.Topic != "" {
				attrs = append(attrs, "topic config "+e.Topic)
			}
			if e.Wren {
				attrs = append(attrs, "wren's own")
			}
			fmt.Fprintf(&b, "# %s (%s)\n", e.Key(), strings.Join(attrs, "; "))
			if reason, ignored := NotInEffect(e.Name); ignored {
				wrapComment(&b, "NOT IN EFFECT YET: "+reason+".")
			}
			wrapComment(&b, e.Doc)
			def := "unset"
			if v := d.defaults[e.Name]; v != nil {
				def = tomlValue(v)
			}
			if e.DefaultDoc != "" {
				def = e.DefaultDoc + " (" + def + " with the built-in single voter)"
			}
			line := "Default: " + def + "."
			if e.KafkaDefault != "" {
				line += " Kafka's: " + e.KafkaDefault + "."
			}
			wrapComment(&b, line)
			if v := d.defaults[e.Name]; v != nil {
				fmt.Fprintf(&b, "#%s = %s\n", e.TOMLKey(), tomlValue(v))
			}
		}
	}
	b.WriteString(uplinkExample)
	return b.String()
}

// uplinkExample documents [uplink.NAME] (uplink.go), commented out with
// "# " so that uncommenting the settings above leaves it out.
const uplinkExample = `
# [uplink.NAME]: forward this node's topics to a central Kafka cluster (Apache Kafka or another
# wren). The local log is the buffer: a link down for hours resumes where it stopped, oldest
# first. The far side holds every record once, in its partition's order, with its key, headers
# and timestamp and a wren-uplink-source header (CLUSTER/TOPIC/PARTITION/OFFSET); the resume
# point is read back from the far partition's last record, so the far side needs no
# transactions. Local partition p goes to far partition p (a far topic missing is created with
# the local partition count). Each partition is forwarded by the node that leads it, which reads
# it through an internal connection inside the process (no client listener is needed, whatever
# its security). A record that came from the far cluster is never sent back. Any number of links; NAME is lower-case letters, digits, '-' and '_'.
#
# [uplink.central]
# enabled = true                        # false keeps the link configured but stopped
# bootstrap.servers = ["central:9092"]  # required: the far cluster's host:port seeds
# topics = ["alerts", "sensors\\..*"]   # required: topic names (a name matches itself only)
#                                       # or regular expressions a whole name matches; topics
#                                       # created later are picked up, internal ones never
# remote.topic.prefix = "site-7."       # put before each topic's name on the far side
# pull.topics = ["site-7\\.commands\\..*"]  # far topics pulled into local ones (central to
#                                       # edge: commands, configuration), names or regular
#                                       # expressions as topics; far topics created later are
#                                       # picked up. topics or pull.topics is required. Far
#                                       # partition p goes to local partition p, exactly once, in
#                                       # order, written through its local leader with acks=all,
#                                       # with the far wren-uplink-source header; the resume point
#                                       # is read back from the local partition's last record. A
#                                       # local topic missing is created with the far partition
#                                       # count. A pulled topic is never forwarded by any link
#                                       # (refused when the config says so, skipped at run time)
# pull.local.topic.prefix = ""          # put before a far topic's name to name the local topic
# start.position = "earliest"           # where a partition whose destination never held a
#                                       # record starts: earliest (all the source log holds),
#                                       # latest, or an RFC 3339 time (the first record stamped at
#                                       # or after); for both directions
# compression = "none"                  # none, gzip, snappy, lz4 or zstd
# max.bytes.per.second = 0              # cap on what the link sends (keys, values, headers),
#                                       # the backlog oldest first at the cap; 0 is no cap
# max.backlog.bytes = 1073741824        # unforwarded bytes retention keeps for the link; 0: none
# backlog.full.policy = "drop-oldest"   # past it: drop-oldest (counted) or refuse-writes
# security.protocol = "PLAINTEXT"       # PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
# # ssl.truststore.location = "/etc/wren/central-ca.pem"  # PEM CAs; the system's when unset
# # ssl.keystore.location = "/etc/wren/edge.pem"   # PEM certificate and key, for mutual TLS
# #                                     # (or ssl.keystore.certificate.chain with ssl.keystore.key)
# # ssl.endpoint.identification.algorithm = "https"  # "" checks the chain, not the host name
# # sasl.mechanism = "SCRAM-SHA-512"    # PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
# # sasl.username = "site-7"            # the password is never in this file: it is read from
# #                                     # WREN_UPLINK_CENTRAL_PASSWORD (NAME upper-cased, '-' as
# #                                     # '_'), or from the file sasl.password.file names
# tail.settle.ms = 5000                 # how long a far partition's end must hold still before
#                                       # its last record is trusted as the resume point; 0
#                                       # trusts it at once (requests a crashed node wrote that
#                                       # land later are then forwarded twice)
`

// wrapComment writes text as "# " lines of at most about 100 columns.
func wrapComment(b *strings.Builder, text string) {
	const width = 98
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			b.WriteString("# " + line + "\n")
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		b.WriteString("# " + line + "\n")
	}
}
