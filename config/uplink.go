package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2/unstable"
)

// Uplink is one [uplink.NAME] table: a link that forwards this node's
// topics to a central Kafka cluster (package uplink does the forwarding).
//
//	[uplink.central]
//	bootstrap.servers = ["central:9092"]
//	topics = ["alerts", "sensors\\..*"]
//	remote.topic.prefix = "site-7."
//	pull.topics = ["site-7\\.commands\\..*"]
//	pull.local.topic.prefix = "central."
//	start.position = "earliest"
//	security.protocol = "SASL_SSL"
//	ssl.truststore.location = "/etc/wren/central-ca.pem"
//	sasl.mechanism = "SCRAM-SHA-512"
//	sasl.username = "site-7"
//	compression = "zstd"
//	max.bytes.per.second = 1_000_000
type Uplink struct {
	// Name is NAME of [uplink.NAME]: lower-case letters, digits, '-' and
	// '_'. It names the link in logs, metrics and status.
	Name string
	// Enabled is false when the table says enabled = false: the link is
	// configured but not run.
	Enabled bool
	// BootstrapServers are the far cluster's host:port seeds (required).
	BootstrapServers []string
	// Topics are the local topics forwarded to the far side (required
	// unless PullTopics is set): an element that is a legal topic name
	// ([a-zA-Z0-9._-]) names that topic only; any other element is a
	// regular expression a whole topic name must match. Topics created
	// later are picked up; internal topics (__*) never are.
	Topics []string
	// RemoteTopicPrefix is put before a topic's name on the far side.
	RemoteTopicPrefix string
	// PullTopics are the far side's topics pulled into local topics
	// (pull.topics: central to edge, for commands and configuration),
	// names and regular expressions as Topics, matched against the far
	// names; far topics created later are picked up.
	PullTopics []string
	// PullLocalTopicPrefix is put before a pulled far topic's name to
	// name the local topic it is written to (pull.local.topic.prefix, ""
	// by default: the same name), as MirrorMaker 2 names a replicated
	// topic after its source.
	PullLocalTopicPrefix string
	// StartPosition is where a partition the far side holds nothing of
	// starts: "earliest" (every record the local log still holds),
	// "latest" (records written from now on), or an RFC 3339 time (the
	// first local record stamped at or after it), then in StartTime.
	StartPosition string
	StartTime     time.Time
	// SecurityProtocol is how the far side is reached, as a Kafka
	// client's security.protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or
	// SASL_SSL.
	SecurityProtocol string
	// SSL holds the far side's trust store and this link's client
	// certificate (ssl.truststore.location, ssl.keystore.location or
	// ssl.keystore.certificate.chain with ssl.keystore.key), read as a
	// listener's are, with the link's key names in its errors.
	SSL SSL
	// VerifyHostname is ssl.endpoint.identification.algorithm: "https"
	// (the default) checks that the far broker's certificate names the
	// host dialled; "" checks only that it chains to the trust store.
	VerifyHostname bool
	// SASLMechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 under a SASL
	// protocol, with SASLUsername; the password is never in the file
	// (Password).
	SASLMechanism, SASLUsername string
	// SASLPasswordFile names a file holding the password; "" reads it
	// from the environment variable UplinkPasswordEnv(Name).
	SASLPasswordFile string
	// Compression is the codec of the batches sent: none, gzip, snappy,
	// lz4 or zstd.
	Compression string
	// MaxBytesPerSecond caps what the link sends (the records' keys,
	// values and headers); 0 is no cap.
	MaxBytesPerSecond int64
	// TailSettle is how long a far partition's end offset must hold
	// still before its last record is trusted as the resume point, when
	// a partition starts being forwarded (tail.settle.ms; 5 s by default,
	// 0 trusts it at once): produce requests a crashed process or a
	// former leader wrote and the far side appends late would otherwise
	// be forwarded again (uplink/doc.go, "Fencing"). Each partition
	// waits on its own: the link's other partitions are forwarded
	// meanwhile.
	TailSettle time.Duration
	// MaxBacklogBytes is max.backlog.bytes: how many bytes of records the
	// link has not yet forwarded retention keeps for it on this node
	// (its partitions' backlogs together, as Status counts them), past
	// retention.ms and retention.bytes. 0 keeps nothing back (retention
	// deletes as if there were no link). The default,
	// DefaultUplinkMaxBacklogBytes, holds by default: an edge node's
	// point is not to lose what it could not send yet.
	MaxBacklogBytes int64
	// BacklogFullPolicy is backlog.full.policy, what happens past
	// MaxBacklogBytes: BacklogDropOldest (retention deletes the oldest
	// records not forwarded, counted as dropped) or BacklogRefuseWrites
	// (produce to the link's topics is refused until the link catches up).
	BacklogFullPolicy string
	// Pos is where the link's first table or key is in the file.
	Pos Position

	names    []string
	patterns []*regexp.Regexp

	pullNames    []string
	pullPatterns []*regexp.Regexp
}

// PullMatches says whether the link pulls far topic far.
func (u *Uplink) PullMatches(far string) bool {
	if strings.HasPrefix(far, "__") {
		return false
	}
	if slices.Contains(u.pullNames, far) {
		return true
	}
	for _, p := range u.pullPatterns {
		if p.MatchString(far) {
			return true
		}
	}
	return false
}

// PullLocal is the local topic far topic far is pulled into.
func (u *Uplink) PullLocal(far string) string { return u.PullLocalTopicPrefix + far }

// PullTarget says whether local topic local is one the link pulls into
// (a far topic it pulls, named with pull.local.topic.prefix).
func (u *Uplink) PullTarget(local string) bool {
	far, ok := strings.CutPrefix(local, u.PullLocalTopicPrefix)
	return ok && len(u.PullTopics) > 0 && u.PullMatches(far)
}

// PushTarget says whether far topic far is one the link forwards to
// (remote.topic.prefix before a local topic it forwards).
func (u *Uplink) PushTarget(far string) bool {
	local, ok := strings.CutPrefix(far, u.RemoteTopicPrefix)
	return ok && u.Matches(local)
}

// PullLoop says why the link's pull side would make a loop with links
// (this one among them, as the running links of a node are), "" if it
// would not: local topic local, pulled from far topic far, is forwarded
// by a link's push side, or far is where this link's push side forwards
// to (what it sends would come back). Checked at run time for every
// topic; config time catches what names alone show (checkUplinkLoops).
func (u *Uplink) PullLoop(far string, links []Uplink) string {
	local := u.PullLocal(far)
	for i := range links {
		if links[i].Matches(local) {
			return fmt.Sprintf("local topic %s (pulled from far topic %s by uplink.%s.pull.topics) is forwarded by uplink.%s.topics: "+
				"a pulled record would be sent back out (no circular sending)", local, far, u.Name, links[i].Name)
		}
	}
	if u.PushTarget(far) {
		return fmt.Sprintf("far topic %s (uplink.%s.pull.topics) is where uplink.%s.topics forwards %s to: "+
			"what the link sends would come back (no circular sending)", far, u.Name, u.Name, strings.TrimPrefix(far, u.RemoteTopicPrefix))
	}
	return ""
}

// Matches says whether the link forwards topic.
func (u *Uplink) Matches(topic string) bool {
	if strings.HasPrefix(topic, "__") {
		return false
	}
	if slices.Contains(u.names, topic) {
		return true
	}
	for _, p := range u.patterns {
		if p.MatchString(topic) {
			return true
		}
	}
	return false
}

// DefaultUplinkTailSettle is tail.settle.ms when the file does not set it.
const DefaultUplinkTailSettle = 5 * time.Second

// uplinkKeys are the keys of an [uplink.NAME] table, with their types.
var uplinkKeys = map[string]*Entry{
	"enabled":                 {Name: "enabled", Type: TypeBoolean},
	"bootstrap.servers":       {Name: "bootstrap.servers", Type: TypeList},
	"topics":                  {Name: "topics", Type: TypeList},
	"remote.topic.prefix":     {Name: "remote.topic.prefix", Type: TypeString},
	"pull.topics":             {Name: "pull.topics", Type: TypeList},
	"pull.local.topic.prefix": {Name: "pull.local.topic.prefix", Type: TypeString},
	"start.position":          {Name: "start.position", Type: TypeString},

	"security.protocol":                     {Name: "security.protocol", Type: TypeString},
	"ssl.truststore.location":               {Name: "ssl.truststore.location", Type: TypeString},
	"ssl.keystore.location":                 {Name: "ssl.keystore.location", Type: TypeString},
	"ssl.keystore.certificate.chain":        {Name: "ssl.keystore.certificate.chain", Type: TypeString},
	"ssl.keystore.key":                      {Name: "ssl.keystore.key", Type: TypeString},
	"ssl.endpoint.identification.algorithm": {Name: "ssl.endpoint.identification.algorithm", Type: TypeString},
	"sasl.mechanism":                        {Name: "sasl.mechanism", Type: TypeString},
	"sasl.username":                         {Name: "sasl.username", Type: TypeString},
	"sasl.password.file":                    {Name: "sasl.password.file", Type: TypeString},
	"compression":                           {Name: "compression", Type: TypeString},
	"max.bytes.per.second":                  {Name: "max.bytes.per.second", Type: TypeLong},
	"tail.settle.ms":                        {Name: "tail.settle.ms", Type: TypeLong},
	"max.backlog.bytes":                     {Name: "max.backlog.bytes", Type: TypeLong},
	"backlog.full.policy":                   {Name: "backlog.full.policy", Type: TypeString},
}

// DefaultUplinkMaxBacklogBytes is max.backlog.bytes when unset: 1 GiB of
// records not yet forwarded kept past retention, per link and node. A
// fixed figure rather than a share of the disk, so it reads the same on
// every node and in every test; an operator sizes it to the disk and the
// longest outage to ride out.
const DefaultUplinkMaxBacklogBytes = 1 << 30

// The values of backlog.full.policy.
const (
	BacklogDropOldest   = "drop-oldest"
	BacklogRefuseWrites = "refuse-writes"
)

// UplinkCompressions are the codecs compression takes.
var UplinkCompressions = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// UplinkSASLMechanisms are the mechanisms sasl.mechanism takes.
var UplinkSASLMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// UplinkPasswordEnv names the environment variable that holds link
// name's SASL password when sasl.password.file is not set:
// WREN_UPLINK_NAME_PASSWORD, NAME upper-cased and '-' made '_'. As for
// the bootstrap admin, the file holds no password.
func UplinkPasswordEnv(name string) string {
	return "WREN_UPLINK_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "_PASSWORD"
}

// TLS says whether the link reaches the far side over TLS.
func (u *Uplink) TLS() bool {
	return u.SecurityProtocol == ProtocolSSL || u.SecurityProtocol == ProtocolSASLSSL
}

// SASL says whether the link authenticates with SASL.
func (u *Uplink) SASL() bool {
	return u.SecurityProtocol == ProtocolSASLPlaintext || u.SecurityProtocol == ProtocolSASLSSL
}

// TLSConfig is the client tls.Config of a link whose protocol is SSL or
// SASL_SSL (nil for the others): the trust store's CAs (the system's
// when none is set), the client certificate when one is set, host names
// checked unless ssl.endpoint.identification.algorithm is "". The files
// are read at each call, so a session started after a certificate was
// renewed presents the new one.
func (u *Uplink) TLSConfig() (*tls.Config, error) {
	if !u.TLS() {
		return nil, nil
	}
	s := u.SSL
	tc := s.BaseTLSConfig()
	if s.KeystoreLocation != "" || s.KeystoreChain != "" || s.KeystoreKey != "" {
		cert, err := s.Certificate()
		if err != nil {
			return nil, err
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	roots, err := s.ClientCAs()
	if err != nil {
		return nil, err
	}
	tc.RootCAs = roots
	if !u.VerifyHostname {
		// The chain is still verified, against the trust store, only not
		// the name in it: Kafka's ssl.endpoint.identification.algorithm="".
		tc.InsecureSkipVerify = true
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the far broker presented no certificate")
			}
			opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}
	}
	return tc, nil
}

// Password is the link's SASL password: the content of
// sasl.password.file (one trailing newline dropped), else the value of
// the environment variable UplinkPasswordEnv(Name). It is an error when
// neither gives one.
func (u *Uplink) Password() (string, error) {
	if u.SASLPasswordFile != "" {
		data, err := readPEMFile(u.SASLPasswordFile)
		if err != nil {
			return "", fmt.Errorf("uplink.%s.sasl.password.file: %v", u.Name, err)
		}
		p := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
		if p == "" {
			return "", fmt.Errorf("uplink.%s.sasl.password.file: %s is empty", u.Name, u.SASLPasswordFile)
		}
		return p, nil
	}
	env := UplinkPasswordEnv(u.Name)
	p, ok := os.LookupEnv(env)
	if !ok || p == "" {
		return "", fmt.Errorf("uplink %s: sasl.mechanism %s needs a password: set %s, or uplink.%s.sasl.password.file", u.Name, u.SASLMechanism, env, u.Name)
	}
	return p, nil
}

// uplinkDraft is a link while its keys are read.
type uplinkDraft struct {
	Uplink
	seen map[string]Position
}

// validUplinkName: a link's name shows in metric labels and file keys.
func validUplinkName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// uplinkTable handles an [uplink.NAME] or [uplink.NAME.sub] header.
func (l *loader) uplinkTable(parts []string, pos Position) {
	l.section, l.prefix, l.skip = nil, nil, true
	if len(parts) < 2 {
		l.errorf(pos, "", "table [uplink]: a link's settings go in [uplink.NAME], as [uplink.central]")
		return
	}
	if l.uplinkDraft(parts[1], pos) == nil {
		return
	}
	l.uplink, l.prefix, l.skip = parts[1], parts[2:], false
}

// uplinkDraft finds or starts link name's draft, nil (with an error) for a
// bad name.
func (l *loader) uplinkDraft(name string, pos Position) *uplinkDraft {
	if !validUplinkName(name) {
		l.errorf(pos, "", "uplink name %s: use lower-case letters, digits, '-' and '_' (at most 64)", quoteTOML(truncate(name, 40)))
		return nil
	}
	for _, d := range l.uplinks {
		if d.Name == name {
			return d
		}
	}
	d := newUplinkDraft(name, pos)
	l.uplinks = append(l.uplinks, d)
	return d
}

// uplinkValue handles key = value of link name; key is relative to the
// link's table.
func (l *loader) uplinkValue(name string, key string, value *unstable.Node, pos Position) {
	d := l.uplinkDraft(name, pos)
	if d == nil {
		return
	}
	full := "uplink." + name + "." + key
	if key == "sasl.password" || key == "sasl.jaas.config" {
		l.errorf(pos, full, "%s: a password does not belong in the config file: put it in a file named by uplink.%s.sasl.password.file, or in the environment variable %s",
			full, name, UplinkPasswordEnv(name))
		return
	}
	e, ok := uplinkKeys[key]
	if !ok {
		keys := make([]string, 0, len(uplinkKeys))
		for k := range uplinkKeys {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		l.errorf(pos, full, "unknown key %s in [uplink.%s] (known: %s)", key, name, strings.Join(keys, ", "))
		return
	}
	if first, dup := d.seen[key]; dup {
		l.errorf(pos, full, "duplicate key %s (first set at %d:%d)", full, first.Line, first.Column)
		return
	}
	d.seen[key] = pos
	v, vpos, err := l.convert(e, value, pos)
	if err == nil {
		err = d.set(key, v)
	}
	if err != nil {
		l.errorf(vpos, full, "%s: %v", full, err)
	}
}

// set takes one converted value.
func (d *uplinkDraft) set(key string, v any) error {
	switch key {
	case "enabled":
		d.Enabled = v.(bool)
	case "bootstrap.servers":
		servers := v.([]string)
		if len(servers) == 0 {
			return fmt.Errorf("at least one host:port is needed")
		}
		for _, s := range servers {
			if _, _, err := splitHostPort(s, 1); err != nil {
				return fmt.Errorf("invalid value %s: %v", quoteTOML(truncate(s, 60)), err)
			}
		}
		d.BootstrapServers = servers
	case "topics":
		topics := v.([]string)
		names, patterns, err := topicMatchers(topics)
		if err != nil {
			return err
		}
		d.Topics, d.names, d.patterns = topics, names, patterns
	case "pull.topics":
		topics := v.([]string)
		names, patterns, err := topicMatchers(topics)
		if err != nil {
			return err
		}
		d.PullTopics, d.pullNames, d.pullPatterns = topics, names, patterns
	case "remote.topic.prefix", "pull.local.topic.prefix":
		p := v.(string)
		if p != "" && !isTopicName(p) {
			return fmt.Errorf("invalid value %s: a prefix uses a topic name's characters only ([a-zA-Z0-9._-])", quoteTOML(truncate(p, 60)))
		}
		if key == "remote.topic.prefix" {
			d.RemoteTopicPrefix = p
		} else {
			d.PullLocalTopicPrefix = p
		}
	case "start.position":
		p := v.(string)
		if p != "earliest" && p != "latest" {
			t, err := time.Parse(time.RFC3339Nano, p)
			if err != nil {
				return fmt.Errorf("invalid value %s: earliest, latest or an RFC 3339 time (2024-05-01T00:00:00Z)", quoteTOML(truncate(p, 40)))
			}
			d.StartTime = t
		}
		d.StartPosition = p
	case "security.protocol":
		p := strings.ToUpper(v.(string))
		if !slices.Contains(protocols, p) {
			return fmt.Errorf("invalid value %s: %s", quoteTOML(truncate(v.(string), 40)), strings.Join(protocols, ", "))
		}
		d.SecurityProtocol = p
	case "ssl.truststore.location":
		d.SSL.TruststoreLocation = v.(string)
	case "ssl.keystore.location":
		d.SSL.KeystoreLocation = v.(string)
	case "ssl.keystore.certificate.chain":
		d.SSL.KeystoreChain = v.(string)
	case "ssl.keystore.key":
		d.SSL.KeystoreKey = v.(string)
	case "ssl.endpoint.identification.algorithm":
		switch a := v.(string); strings.ToLower(a) {
		case "https":
			d.VerifyHostname = true
		case "":
			d.VerifyHostname = false
		default:
			return fmt.Errorf("invalid value %s: \"https\" (check the far broker's host name) or \"\" (do not)", quoteTOML(truncate(a, 40)))
		}
	case "sasl.mechanism":
		m := strings.ToUpper(v.(string))
		if !slices.Contains(UplinkSASLMechanisms, m) {
			return fmt.Errorf("invalid value %s: %s", quoteTOML(truncate(v.(string), 40)), strings.Join(UplinkSASLMechanisms, ", "))
		}
		d.SASLMechanism = m
	case "sasl.username":
		if v.(string) == "" {
			return errors.New("a user name is needed")
		}
		d.SASLUsername = v.(string)
	case "sasl.password.file":
		if v.(string) == "" {
			return errors.New("a file name is needed")
		}
		d.SASLPasswordFile = v.(string)
	case "compression":
		c := strings.ToLower(v.(string))
		if !slices.Contains(UplinkCompressions, c) {
			return fmt.Errorf("invalid value %s: %s", quoteTOML(truncate(v.(string), 40)), strings.Join(UplinkCompressions, ", "))
		}
		d.Compression = c
	case "max.bytes.per.second":
		n := v.(int64)
		if n < 0 {
			return fmt.Errorf("invalid value %d: bytes per second, 0 for no cap", n)
		}
		d.MaxBytesPerSecond = n
	case "tail.settle.ms":
		ms := v.(int64)
		if ms < 0 || ms > 3_600_000 {
			return fmt.Errorf("invalid value %d: 0 to 3600000 (an hour)", ms)
		}
		d.TailSettle = time.Duration(ms) * time.Millisecond
	case "max.backlog.bytes":
		n := v.(int64)
		if n < 0 {
			return fmt.Errorf("invalid value %d: bytes, 0 for no hold", n)
		}
		d.MaxBacklogBytes = n
	case "backlog.full.policy":
		p := strings.ToLower(v.(string))
		if p != BacklogDropOldest && p != BacklogRefuseWrites {
			return fmt.Errorf("invalid value %s: %s or %s", quoteTOML(truncate(v.(string), 40)), BacklogDropOldest, BacklogRefuseWrites)
		}
		d.BacklogFullPolicy = p
	}
	return nil
}

// topicMatchers reads a list of topic names and regular expressions
// (topics, pull.topics).
func topicMatchers(topics []string) (names []string, patterns []*regexp.Regexp, err error) {
	if len(topics) == 0 {
		return nil, nil, fmt.Errorf("at least one topic name or regular expression is needed")
	}
	for _, t := range topics {
		if isTopicName(t) {
			names = append(names, t)
			continue
		}
		re, err := regexp.Compile("^(?:" + t + ")$")
		if err != nil {
			return nil, nil, fmt.Errorf("%s is neither a topic name nor a regular expression: %v", quoteTOML(truncate(t, 60)), err)
		}
		patterns = append(patterns, re)
	}
	return names, patterns, nil
}

// checkSecurity checks that the link's ssl.* and sasl.* keys go with its
// security.protocol, and loads its TLS material, each problem reported at
// the key to fix. loadTLS false leaves the files alone (the controller
// checks a run-time link whose files are on the nodes).
func (l *loader) checkSecurity(d *uplinkDraft, loadTLS bool) bool {
	ok := true
	at := func(key string) Position {
		// A key missing is reported where its partner is: the chain
		// without its key at the chain.
		for _, k := range []string{key, "ssl.keystore.certificate.chain", "ssl.keystore.key", "security.protocol"} {
			if p, set := d.seen[k]; set {
				return p
			}
		}
		return d.Pos
	}
	fail := func(key, format string, args ...any) {
		full := "uplink." + d.Name + "." + key
		l.errorf(at(key), full, "%s: "+format, append([]any{full}, args...)...)
		ok = false
	}
	for _, key := range slices.Sorted(maps.Keys(d.seen)) {
		switch {
		case strings.HasPrefix(key, "ssl.") && !d.TLS():
			fail(key, "has no effect: security.protocol is %s (SSL or SASL_SSL reach the far side over TLS)", d.SecurityProtocol)
		case strings.HasPrefix(key, "sasl.") && !d.SASL():
			fail(key, "has no effect: security.protocol is %s (SASL_PLAINTEXT or SASL_SSL authenticate with SASL)", d.SecurityProtocol)
		}
	}
	if d.SASL() {
		for _, key := range []string{"sasl.mechanism", "sasl.username"} {
			if _, set := d.seen[key]; !set {
				fail(key, "security.protocol %s needs it", d.SecurityProtocol)
			}
		}
	}
	if ok && loadTLS && d.TLS() {
		if _, err := d.TLSConfig(); err != nil {
			var se *SSLError
			switch {
			case errors.As(err, &se) && errors.Is(se.Err, errKeyEncrypted):
				// A link takes no ssl.key.password: the file holds no
				// password.
				key := "ssl.keystore.location"
				if d.SSL.KeystoreLocation == "" {
					key = "ssl.keystore.key"
				}
				l.errorf(at(key), "uplink."+d.Name+"."+key, "uplink.%s.%s: the private key is encrypted, and a link's config holds no password to open it: "+
					"decrypt it (openssl pkcs8 -in key.pem -out plain.pem) and protect the file instead", d.Name, key)
			case se != nil:
				key := strings.TrimPrefix(se.Key, "uplink."+d.Name+".")
				l.errorf(at(key), se.Key, "%s: %v", se.Key, se.Err)
			default:
				l.errorf(at("security.protocol"), "uplink."+d.Name+".security.protocol", "uplink.%s: %v", d.Name, err)
			}
			ok = false
		}
	}
	return ok
}

// checkUplinks reports the required keys missing, and returns the links.
// loadTLS says whether each link's TLS files are loaded (checkSecurity).
func (l *loader) checkUplinks(loadTLS bool) []Uplink {
	var out []Uplink
	for _, d := range l.uplinks {
		ok := true
		for _, key := range []string{"bootstrap.servers", "topics"} {
			if _, set := d.seen[key]; !set && (key != "topics" || len(d.PullTopics) == 0) {
				if l.runtime {
					l.errorf(d.Pos, "uplink."+d.Name+"."+key, "uplink.%s.%s is not set: a link needs bootstrap.servers, and topics or pull.topics", d.Name, key)
				} else {
					if key == "topics" {
						l.errorf(d.Pos, "uplink."+d.Name+"."+key, "[uplink.%s] needs topics (forwarded to the far side) or pull.topics (pulled from it)", d.Name)
					} else {
						l.errorf(d.Pos, "uplink."+d.Name+"."+key, "[uplink.%s] needs %s", d.Name, key)
					}
				}
				ok = false
			}
		}
		if !l.checkSecurity(d, loadTLS) {
			ok = false
		}
		if ok {
			out = append(out, d.Uplink)
		}
	}
	return l.checkUplinkLoops(out)
}

// checkUplinkLoops refuses the links whose pull side would make a loop
// that the names alone show (PullLoop): a pull.topics name whose local
// topic a link's topics forward, a topics name that a link's pull.topics
// pulls into, a far topic a link both forwards to and pulls. Regular
// expressions against regular expressions are checked at run time, topic
// by topic (the pull side refuses the topic, the push side skips it).
func (l *loader) checkUplinkLoops(links []Uplink) []Uplink {
	var out []Uplink
	for i := range links {
		u := &links[i]
		var msg string
		// This link's pull names, as far topics.
		for _, far := range u.pullNames {
			if msg = u.PullLoop(far, links); msg != "" {
				break
			}
		}
		// Any link's forwarded names, as local topics this one pulls into.
		for j := 0; msg == "" && j < len(links); j++ {
			for _, local := range links[j].names {
				if u.PullTarget(local) {
					msg = fmt.Sprintf("uplink.%s.topics forwards %s, a local topic uplink.%s.pull.topics pulls into: "+
						"a pulled record would be sent back out (no circular sending)", links[j].Name, local, u.Name)
					break
				}
			}
		}
		// This link's forwarded names, as far topics it would pull back.
		for _, local := range u.names {
			if msg == "" && len(u.PullTopics) > 0 && u.PullMatches(u.RemoteTopicPrefix+local) {
				msg = u.PullLoop(u.RemoteTopicPrefix+local, nil)
			}
		}
		if msg != "" {
			key := "uplink." + u.Name + ".pull.topics"
			pos := u.Pos
			for _, d := range l.uplinks {
				if d.Name == u.Name {
					if p, set := d.seen["pull.topics"]; set {
						pos = p
					}
				}
			}
			l.errorf(pos, key, "%s: %s", key, msg)
			continue
		}
		out = append(out, *u)
	}
	return out
}

// isTopicName: Kafka's legal topic characters, at most 249 of them.
func isTopicName(s string) bool {
	if s == "" || len(s) > 249 || s == "." || s == ".." {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
