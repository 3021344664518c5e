package config

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wren-broker/wren/internal/testcert"
)

func TestUplinkParse(t *testing.T) {
	c, err := Parse("config.toml", []byte(`uplink.inline = { bootstrap.servers = ["b:1"], topics = ["y.*"] }
[broker]
node.id = 1

[uplink.central]
bootstrap.servers = ["central:9092", "central-2:9092"]
topics = ["alerts", "sensors\\..*"]
remote.topic.prefix = "site-7."
start.position = "latest"
max.backlog.bytes = 0
backlog.full.policy = "Refuse-Writes"

[uplink.backup]
enabled = false
bootstrap.servers = ["backup:9092"]
topics = ["x"]
`))
	if err != nil {
		t.Fatal(err)
	}
	c.Uplinks = append(c.Uplinks[1:], c.Uplinks[0]) // file order: inline first
	if len(c.Uplinks) != 3 {
		t.Fatalf("got %d links, want 3: %+v", len(c.Uplinks), c.Uplinks)
	}
	u := c.Uplinks[0]
	if u.Name != "central" || !u.Enabled || !slices.Equal(u.BootstrapServers, []string{"central:9092", "central-2:9092"}) ||
		u.RemoteTopicPrefix != "site-7." || u.StartPosition != "latest" || u.Pos.Line != 5 {
		t.Errorf("central: %+v", u)
	}
	for topic, want := range map[string]bool{
		"alerts": true, "sensors.a": true, "sensors.": true, "sensorsXa": false, "alerts2": false,
		"x.sensors.a": false, "__sensors.a": false,
	} {
		if got := u.Matches(topic); got != want {
			t.Errorf("central matches %q: %v, want %v", topic, got, want)
		}
	}
	if u.MaxBacklogBytes != 0 || u.BacklogFullPolicy != BacklogRefuseWrites {
		t.Errorf("central: max.backlog.bytes %d, backlog.full.policy %q", u.MaxBacklogBytes, u.BacklogFullPolicy)
	}
	if b := c.Uplinks[1]; b.MaxBacklogBytes != DefaultUplinkMaxBacklogBytes || b.BacklogFullPolicy != BacklogDropOldest {
		t.Errorf("backup's defaults: max.backlog.bytes %d, backlog.full.policy %q", b.MaxBacklogBytes, b.BacklogFullPolicy)
	}
	if b := c.Uplinks[1]; b.Name != "backup" || b.Enabled || b.StartPosition != "earliest" || b.RemoteTopicPrefix != "" {
		t.Errorf("backup: %+v", b)
	}
	// A plain topic name is a name, not a pattern: its dot matches a dot only.
	if b := c.Uplinks[1]; !b.Matches("x") || b.Matches("xx") {
		t.Errorf("backup matches x %v, xx %v", b.Matches("x"), b.Matches("xx"))
	}
	if in := c.Uplinks[2]; in.Name != "inline" || !in.Matches("yes") || in.Matches("no") {
		t.Errorf("inline: %+v", in)
	}
}

func TestUplinkErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"missing keys", "[uplink.a]\nremote.topic.prefix = \"p.\"\n",
			[]string{"config.toml:1:2: [uplink.a] needs bootstrap.servers", "config.toml:1:2: [uplink.a] needs topics (forwarded to the far side) or pull.topics (pulled from it)"}},
		{"unknown key", "[uplink.a]\nbootstrap.servers = [\"h:1\"]\ntopics = [\"t\"]\nbootstrap.server = 1\n",
			[]string{"config.toml:4:1: unknown key bootstrap.server in [uplink.a] (known: backlog.full.policy, bootstrap.servers, compression, enabled, max.backlog.bytes, max.bytes.per.second, pull.local.topic.prefix, pull.topics, remote.topic.prefix, sasl.mechanism, sasl.password.file, sasl.username, security.protocol, ssl.endpoint.identification.algorithm, ssl.keystore.certificate.chain, ssl.keystore.key, ssl.keystore.location, ssl.truststore.location, start.position, tail.settle.ms, topics)"}},
		{"bad regex", "[uplink.a]\nbootstrap.servers = [\"h:1\"]\ntopics = [\"a(\"]\n",
			[]string{"config.toml:3:1: uplink.a.topics: \"a(\" is neither a topic name nor a regular expression: error parsing regexp: missing closing ): `^(?:a()$`"}},
		{"bad server", "[uplink.a]\nbootstrap.servers = [\"nohost\"]\ntopics = [\"t\"]\n",
			[]string{"config.toml:2:1: uplink.a.bootstrap.servers: invalid value \"nohost\": \"nohost\" is not host:port"}},
		{"bad start", "[uplink.a]\nbootstrap.servers = [\"h:1\"]\ntopics = [\"t\"]\nstart.position = \"middle\"\n",
			[]string{"config.toml:4:18: uplink.a.start.position: invalid value \"middle\": earliest, latest or an RFC 3339 time (2024-05-01T00:00:00Z)"}},
		{"wrong type", "[uplink.a]\nbootstrap.servers = [\"h:1\"]\ntopics = [\"t\"]\nenabled = \"yes\"\n",
			[]string{"config.toml:4:11: uplink.a.enabled: expected true or false, got string \"yes\""}},
		{"duplicate", "uplink.a.topics = [\"u\"]\n[uplink.a]\nbootstrap.servers = [\"h:1\"]\ntopics = [\"t\"]\n[uplink.a.x]\ny = 1\n",
			[]string{"config.toml:4:1: duplicate key uplink.a.topics (first set at 1:1)",
				"config.toml:6:1: unknown key x.y in [uplink.a] (known: backlog.full.policy, bootstrap.servers, compression, enabled, max.backlog.bytes, max.bytes.per.second, pull.local.topic.prefix, pull.topics, remote.topic.prefix, sasl.mechanism, sasl.password.file, sasl.username, security.protocol, ssl.endpoint.identification.algorithm, ssl.keystore.certificate.chain, ssl.keystore.key, ssl.keystore.location, ssl.truststore.location, start.position, tail.settle.ms, topics)"}},
		{"bad name", "[uplink.\"A B\"]\nx = 1\n", []string{"config.toml:1:2: uplink name \"A B\": use lower-case letters, digits, '-' and '_' (at most 64)"}},
		{"bare table", "[uplink]\nx = 1\n", []string{"config.toml:1:2: table [uplink]: a link's settings go in [uplink.NAME], as [uplink.central]"}},
		{"bad prefix", "[uplink.a]\nbootstrap.servers = [\"h:1\"]\ntopics = [\"t\"]\nremote.topic.prefix = \"a/b\"\n",
			[]string{"config.toml:4:23: uplink.a.remote.topic.prefix: invalid value \"a/b\": a prefix uses a topic name's characters only ([a-zA-Z0-9._-])"}},
		{"bad backlog", "[uplink.a]\nbootstrap.servers = [\"h:1\"]\ntopics = [\"t\"]\nmax.backlog.bytes = -1\n",
			[]string{"config.toml:4:21: uplink.a.max.backlog.bytes: invalid value -1: bytes, 0 for no hold"}},
		{"bad policy", "[uplink.a]\nbootstrap.servers = [\"h:1\"]\ntopics = [\"t\"]\nbacklog.full.policy = \"block\"\n",
			[]string{"config.toml:4:23: uplink.a.backlog.full.policy: invalid value \"block\": drop-oldest or refuse-writes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseErrs(t, tc.in)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// The example file's [uplink.central], uncommented, loads as it says.
func TestUplinkExample(t *testing.T) {
	ex := ExampleFile()
	i := strings.Index(ex, "# [uplink.central]")
	if i < 0 {
		t.Fatal("config.example.toml has no [uplink.central] example")
	}
	var toml strings.Builder
	for line := range strings.Lines(ex[i:]) {
		toml.WriteString(strings.TrimPrefix(line, "# "))
	}
	c, err := Parse("example.toml", []byte(toml.String()))
	if err != nil {
		t.Fatalf("%v\n%s", err, toml.String())
	}
	if len(c.Uplinks) != 1 || !c.Uplinks[0].Matches("sensors.a") || !c.Uplinks[0].Matches("alerts") || c.Uplinks[0].RemoteTopicPrefix != "site-7." {
		t.Fatalf("example link: %+v", c.Uplinks)
	}
}

// The far side's security, compression, cap and a start time are read
// under a Kafka client's key names; the TLS material loads at parse.
func TestUplinkSecurityParse(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, "wren test CA")
	cert, key := ca.Issue(t, "edge", x509.ExtKeyUsageClientAuth)
	trust, keystore, pw := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "edge.pem"), filepath.Join(dir, "pw")
	for f, data := range map[string][]byte{trust: ca.PEM, keystore: append(cert, key...), pw: []byte("s3cret\n")} {
		if err := os.WriteFile(f, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, err := Parse("config.toml", []byte(fmt.Sprintf(`
[uplink.central]
bootstrap.servers = ["central:9092"]
topics = ["t"]
security.protocol = "sasl_ssl"
ssl.truststore.location = %q
ssl.keystore.location = %q
ssl.endpoint.identification.algorithm = ""
sasl.mechanism = "scram-sha-512"
sasl.username = "site-7"
sasl.password.file = %q
compression = "zstd"
max.bytes.per.second = 1_000_000
start.position = "2024-05-01T12:00:00.5+02:00"

[uplink.mtls]
bootstrap.servers = ["central:9093"]
topics = ["t"]
security.protocol = "SSL"
ssl.truststore.location = %q
ssl.keystore.certificate.chain = '''%s'''
ssl.keystore.key = '''%s'''

[uplink.plain]
bootstrap.servers = ["central:9094"]
topics = ["t"]
security.protocol = "SASL_PLAINTEXT"
sasl.mechanism = "PLAIN"
sasl.username = "u"

[uplink.default]
bootstrap.servers = ["central:9095"]
topics = ["t"]
`, trust, keystore, pw, trust, cert, key)))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Uplinks) != 4 {
		t.Fatalf("got %d links, want 4", len(c.Uplinks))
	}
	u := c.Uplinks[0]
	if u.SecurityProtocol != "SASL_SSL" || !u.TLS() || !u.SASL() || u.VerifyHostname || u.SASLMechanism != "SCRAM-SHA-512" ||
		u.SASLUsername != "site-7" || u.Compression != "zstd" || u.MaxBytesPerSecond != 1_000_000 ||
		!u.StartTime.Equal(time.Date(2024, 5, 1, 10, 0, 0, 5e8, time.UTC)) {
		t.Errorf("central: %+v", u)
	}
	if p, err := u.Password(); p != "s3cret" || err != nil {
		t.Errorf("central password %q, %v", p, err)
	}
	tc, err := u.TLSConfig()
	if err != nil || tc == nil || len(tc.Certificates) != 1 || tc.RootCAs == nil || !tc.InsecureSkipVerify || tc.VerifyConnection == nil {
		t.Fatalf("central TLS config %+v, %v", tc, err)
	}
	// Without host name checks the chain is still checked: a certificate
	// of another CA is refused, one of the trust store's passes whatever
	// host it names.
	other, _ := testcert.NewCA(t, "other CA").Issue(t, "far", x509.ExtKeyUsageServerAuth)
	ours, _ := ca.Issue(t, "far", x509.ExtKeyUsageServerAuth)
	for name, c := range map[string]struct {
		pemCert []byte
		ok      bool
	}{"other CA": {other, false}, "our CA": {ours, true}} {
		b, _ := pem.Decode(c.pemCert)
		leaf, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		err = tc.VerifyConnection(tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}})
		if (err == nil) != c.ok {
			t.Errorf("%s: verify %v, want ok %v", name, err, c.ok)
		}
	}
	m := c.Uplinks[1]
	if tc, err := m.TLSConfig(); err != nil || len(tc.Certificates) != 1 || tc.InsecureSkipVerify || m.SASL() || !m.VerifyHostname {
		t.Errorf("mtls: %+v, TLS %+v, %v", m, tc, err)
	}
	p := c.Uplinks[2]
	if tc, err := p.TLSConfig(); tc != nil || err != nil || !p.SASL() || p.SASLMechanism != "PLAIN" {
		t.Errorf("plain: %+v, TLS %v, %v", p, tc, err)
	}
	t.Setenv(UplinkPasswordEnv("plain"), "from-env")
	if pw, err := p.Password(); pw != "from-env" || err != nil || UplinkPasswordEnv("my-link") != "WREN_UPLINK_MY_LINK_PASSWORD" {
		t.Errorf("plain password %q, %v", pw, err)
	}
	d := c.Uplinks[3]
	if d.SecurityProtocol != "PLAINTEXT" || d.TLS() || d.SASL() || d.Compression != "none" || d.MaxBytesPerSecond != 0 ||
		d.StartPosition != "earliest" || !d.StartTime.IsZero() {
		t.Errorf("default: %+v", d)
	}
	if _, err := d.Password(); err == nil || !strings.Contains(err.Error(), "WREN_UPLINK_DEFAULT_PASSWORD") {
		t.Errorf("no password: %v", err)
	}
}

// Each bad security, compression, cap or start value is an error at its
// key and line.
func TestUplinkSecurityErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A key in legacy PEM encryption, which a listener opens with
	// ssl.key.password and a link, whose file holds no password, cannot.
	ca := testcert.NewCA(t, "wren test CA")
	cert, key := ca.Issue(t, "edge", x509.ExtKeyUsageClientAuth)
	b, _ := pem.Decode(key)
	//lint:ignore SA1019 the legacy encryption is what is tested
	enc, err := x509.EncryptPEMBlock(rand.Reader, "PRIVATE KEY", b.Bytes, []byte("pw"), x509.PEMCipherAES256) //nolint:staticcheck
	if err != nil {
		t.Fatal(err)
	}
	encrypted := filepath.Join(dir, "encrypted.pem")
	if err := os.WriteFile(encrypted, append(cert, pem.EncodeToMemory(enc)...), 0o600); err != nil {
		t.Fatal(err)
	}
	const head = "[uplink.a]\nbootstrap.servers = [\"h:1\"]\ntopics = [\"t\"]\n"
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"protocol", head + "security.protocol = \"TLS\"\n",
			[]string{"config.toml:4:21: uplink.a.security.protocol: invalid value \"TLS\": PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"}},
		{"mechanism", head + "security.protocol = \"SASL_SSL\"\nsasl.mechanism = \"GSSAPI\"\nsasl.username = \"u\"\n",
			[]string{"config.toml:5:18: uplink.a.sasl.mechanism: invalid value \"GSSAPI\": PLAIN, SCRAM-SHA-256, SCRAM-SHA-512"}},
		{"sasl needs", head + "security.protocol = \"SASL_PLAINTEXT\"\n",
			[]string{"config.toml:4:1: uplink.a.sasl.mechanism: security.protocol SASL_PLAINTEXT needs it",
				"config.toml:4:1: uplink.a.sasl.username: security.protocol SASL_PLAINTEXT needs it"}},
		{"empty user", head + "security.protocol = \"SASL_PLAINTEXT\"\nsasl.mechanism = \"PLAIN\"\nsasl.username = \"\"\n",
			[]string{"config.toml:6:17: uplink.a.sasl.username: a user name is needed"}},
		{"password in file", head + "sasl.password = \"x\"\n",
			[]string{"config.toml:4:1: uplink.a.sasl.password: a password does not belong in the config file: put it in a file named by uplink.a.sasl.password.file, or in the environment variable WREN_UPLINK_A_PASSWORD"}},
		{"sasl without", head + "sasl.mechanism = \"PLAIN\"\n",
			[]string{"config.toml:4:1: uplink.a.sasl.mechanism: has no effect: security.protocol is PLAINTEXT (SASL_PLAINTEXT or SASL_SSL authenticate with SASL)"}},
		{"ssl without", head + "security.protocol = \"SASL_PLAINTEXT\"\nsasl.mechanism = \"PLAIN\"\nsasl.username = \"u\"\nssl.truststore.location = \"x\"\n",
			[]string{"config.toml:7:1: uplink.a.ssl.truststore.location: has no effect: security.protocol is SASL_PLAINTEXT (SSL or SASL_SSL reach the far side over TLS)"}},
		{"endpoint", head + "security.protocol = \"SSL\"\nssl.endpoint.identification.algorithm = \"none\"\n",
			[]string{"config.toml:5:41: uplink.a.ssl.endpoint.identification.algorithm: invalid value \"none\": \"https\" (check the far broker's host name) or \"\" (do not)"}},
		{"missing truststore", head + "security.protocol = \"SSL\"\nssl.truststore.location = \"/nonexistent/ca.pem\"\n",
			[]string{"config.toml:5:1: uplink.a.ssl.truststore.location: open /nonexistent/ca.pem: no such file or directory"}},
		{"truststore not PEM", head + "security.protocol = \"SSL\"\nssl.truststore.location = \"" + notPEM + "\"\n",
			[]string{"config.toml:5:1: uplink.a.ssl.truststore.location: holds no PEM CERTIFICATE block"}},
		{"keystore not PEM", head + "security.protocol = \"SSL\"\nssl.keystore.location = \"" + notPEM + "\"\n",
			[]string{"config.toml:5:1: uplink.a.ssl.keystore.location: holds no PEM CERTIFICATE block"}},
		{"chain without key", head + "security.protocol = \"SSL\"\nssl.keystore.certificate.chain = \"x\"\n",
			[]string{"config.toml:5:1: uplink.a.ssl.keystore.key: uplink.a.ssl.keystore.certificate.chain is set but the private key is empty"}},
		{"both keystores", head + "security.protocol = \"SSL\"\nssl.keystore.location = \"x\"\nssl.keystore.key = \"y\"\n",
			[]string{"config.toml:5:1: uplink.a.ssl.keystore.location: set either it or uplink.a.ssl.keystore.certificate.chain with uplink.a.ssl.keystore.key, not both"}},
		{"encrypted key", head + "security.protocol = \"SSL\"\nssl.keystore.location = \"" + encrypted + "\"\n",
			[]string{"config.toml:5:1: uplink.a.ssl.keystore.location: the private key is encrypted, and a link's config holds no password to open it: " +
				"decrypt it (openssl pkcs8 -in key.pem -out plain.pem) and protect the file instead"}},
		{"compression", head + "compression = \"brotli\"\n",
			[]string{"config.toml:4:15: uplink.a.compression: invalid value \"brotli\": none, gzip, snappy, lz4, zstd"}},
		{"cap negative", head + "max.bytes.per.second = -1\n",
			[]string{"config.toml:4:24: uplink.a.max.bytes.per.second: invalid value -1: bytes per second, 0 for no cap"}},
		{"cap type", head + "max.bytes.per.second = \"1MB\"\n",
			[]string{"config.toml:4:24: uplink.a.max.bytes.per.second: expected an integer, got string \"1MB\""}},
		{"start time", head + "start.position = \"2024-05-01 12:00\"\n",
			[]string{"config.toml:4:18: uplink.a.start.position: invalid value \"2024-05-01 12:00\": earliest, latest or an RFC 3339 time (2024-05-01T00:00:00Z)"}},
		{"password file empty", head + "security.protocol = \"SASL_PLAINTEXT\"\nsasl.mechanism = \"PLAIN\"\nsasl.username = \"u\"\nsasl.password.file = \"\"\n",
			[]string{"config.toml:7:22: uplink.a.sasl.password.file: a file name is needed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseErrs(t, tc.in)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// TestUplinkPull: pull.topics and pull.local.topic.prefix are read as
// topics and remote.topic.prefix are; a link may pull only; the far
// names it pulls and the local ones it pulls into are matched whole.
func TestUplinkPull(t *testing.T) {
	c, err := Parse("config.toml", []byte(`[broker]
node.id = 1

[uplink.central]
bootstrap.servers = ["central:9092"]
topics = ["sensors\\..*"]
remote.topic.prefix = "site-7."
pull.topics = ["site-7\\.commands\\..*", "config"]
pull.local.topic.prefix = "central."

[uplink.only-pull]
bootstrap.servers = ["central:9092"]
pull.topics = ["x"]
`))
	if err != nil {
		t.Fatal(err)
	}
	u := c.Uplinks[0]
	if u.PullLocalTopicPrefix != "central." || !slices.Equal(u.PullTopics, []string{"site-7\\.commands\\..*", "config"}) {
		t.Fatalf("central: %+v", u)
	}
	for far, want := range map[string]bool{"site-7.commands.a": true, "config": true, "configs": false, "site-7.commandsX": false, "__config": false} {
		if got := u.PullMatches(far); got != want {
			t.Errorf("pulls %q: %v, want %v", far, got, want)
		}
	}
	for local, want := range map[string]bool{"central.site-7.commands.a": true, "central.config": true, "config": false, "site-7.commands.a": false} {
		if got := u.PullTarget(local); got != want {
			t.Errorf("pull target %q: %v, want %v", local, got, want)
		}
	}
	if u.PullLocal("config") != "central.config" || !u.PushTarget("site-7.sensors.a") || u.PushTarget("sensors.a") {
		t.Error("PullLocal, PushTarget")
	}
	if p := c.Uplinks[1]; len(p.Topics) != 0 || p.Matches("x") || !p.PullTarget("x") {
		t.Errorf("only-pull: %+v", p)
	}
}

// TestUplinkPullLoops: a config whose names show a loop is refused at
// pull.topics, saying which key forwards what: a pulled topic forwarded
// by the same link or another, and a far topic a link both forwards to
// and pulls. Regular expressions against regular expressions are left to
// the run-time check.
func TestUplinkPullLoops(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"pulled topic forwarded", "[uplink.a]\nbootstrap.servers = [\"h:1\"]\ntopics = [\"cmd.*\"]\npull.topics = [\"cmd\"]\n",
			"config.toml:4:1: uplink.a.pull.topics: local topic cmd (pulled from far topic cmd by uplink.a.pull.topics) is forwarded by uplink.a.topics: a pulled record would be sent back out (no circular sending)"},
		{"pulled topic forwarded by another link", "[uplink.a]\nbootstrap.servers = [\"h:1\"]\npull.topics = [\"cmd\\\\..*\"]\n" +
			"pull.local.topic.prefix = \"in.\"\n[uplink.b]\nbootstrap.servers = [\"h:2\"]\ntopics = [\"in.cmd.x\"]\n",
			"config.toml:3:1: uplink.a.pull.topics: uplink.b.topics forwards in.cmd.x, a local topic uplink.a.pull.topics pulls into: a pulled record would be sent back out (no circular sending)"},
		{"far topic pushed and pulled", "[uplink.a]\nbootstrap.servers = [\"h:1\"]\ntopics = [\"s\"]\nremote.topic.prefix = \"e.\"\npull.topics = [\"e\\\\..*\"]\npull.local.topic.prefix = \"c.\"\n",
			"config.toml:5:1: uplink.a.pull.topics: far topic e.s (uplink.a.pull.topics) is where uplink.a.topics forwards s to: what the link sends would come back (no circular sending)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseErrs(t, tc.in)
			if !slices.Equal(got, []string{tc.want}) {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
	// The same at run time: the layer is refused at the key.
	err := CheckUplinkLayer(map[string]string{"uplink.a.bootstrap.servers": "h:1", "uplink.a.topics": "cmd", "uplink.a.pull.topics": "cmd"})
	if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), "uplink.a.pull.topics") || !strings.Contains(err.Error(), "no circular sending") {
		t.Errorf("CheckUplinkLayer: %v", err)
	}
	// Patterns against patterns: not decided here.
	if errs := parseErrs(t, "[uplink.a]\nbootstrap.servers = [\"h:1\"]\ntopics = [\"c\\\\..*\"]\npull.topics = [\"x.*\"]\npull.local.topic.prefix = \"c.\"\n"); len(errs) != 0 {
		t.Errorf("patterns: %q", errs)
	}
}
