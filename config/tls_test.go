package config

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wren-broker/wren/internal/testcert"
)

// testKeyPair makes a certificate for 127.0.0.1 and returns the
// certificate and PKCS#8 key in PEM.
func testKeyPair(t *testing.T) (certPEM, keyPEM string) {
	t.Helper()
	c, k := testcert.NewCA(t, "wren test CA").Issue(t, "wren test", x509.ExtKeyUsageServerAuth)
	return string(c), string(k)
}

func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// An SSL listener with good material loads, with or without a listener's
// own settings; the key store may be one file or inline PEM.
func TestSSLListenerLoads(t *testing.T) {
	dir := t.TempDir()
	cert, key := testKeyPair(t)
	both := writeFile(t, dir, "both.pem", cert+key)
	ca := writeFile(t, dir, "ca.pem", cert)
	for name, file := range map[string]string{
		"file": "[broker]\nlisteners = [\"SSL://127.0.0.1:0\", \"CONTROLLER://127.0.0.1:9093\"]\n" +
			"[security]\nssl.keystore.location = " + quoteTOML(both) + "\nssl.truststore.location = " + quoteTOML(ca) + "\nssl.client.auth = \"required\"\n",
		"inline": "[broker]\nlisteners = [\"SSL://127.0.0.1:0\", \"CONTROLLER://127.0.0.1:9093\"]\n" +
			"[security]\nssl.keystore.certificate.chain = '''\n" + cert + "'''\nssl.keystore.key = '''\n" + key + "'''\n",
		"per listener": "[broker]\nlisteners = [\"PLAINTEXT://127.0.0.1:0\", \"EXTERNAL://127.0.0.1:0\", \"CONTROLLER://127.0.0.1:9093\"]\n" +
			"listener.security.protocol.map = \"PLAINTEXT:PLAINTEXT,EXTERNAL:SSL,CONTROLLER:PLAINTEXT\"\n" +
			"[security]\nlistener.name.external.ssl.keystore.location = " + quoteTOML(both) + "\nlistener.name.external.ssl.enabled.protocols = [\"TLSv1.3\"]\n",
	} {
		t.Run(name, func(t *testing.T) {
			c, err := Parse("config.toml", []byte(file))
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range c.Listeners {
				if c.ListenerProtocol(l.Name) != ProtocolSSL {
					continue
				}
				s := c.ListenerSSL(l.Name)
				if _, err := s.Certificate(); err != nil {
					t.Fatal(err)
				}
				tc := s.TLSConfig(nil, nil)
				if name == "per listener" && tc.MinVersion != 0x0304 {
					t.Errorf("per-listener ssl.enabled.protocols not applied: min version %x", tc.MinVersion)
				}
			}
			again, err := Parse("dump.toml", []byte(c.Dump(false)))
			if err != nil {
				t.Fatalf("dump does not load: %v\n%s", err, c.Dump(false))
			}
			if !again.Equal(c) {
				t.Errorf("dump does not load back equal:\n%s", c.Dump(false))
			}
		})
	}
}

// Bad TLS settings are refused with the key and the line to fix.
func TestSSLConfigErrors(t *testing.T) {
	dir := t.TempDir()
	cert, key := testKeyPair(t)
	_, otherKey := testKeyPair(t)
	bad := writeFile(t, dir, "bad.pem", "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n")
	mismatched := writeFile(t, dir, "mismatched.pem", cert+otherKey)
	encrypted := writeFile(t, dir, "enc.pem", cert+"-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n")
	good := writeFile(t, dir, "good.pem", cert+key)
	missing := filepath.Join(dir, "missing.pem")
	const ssl = "[broker]\nlisteners = [\"SSL://127.0.0.1:0\", \"CONTROLLER://127.0.0.1:9093\"]\n[security]\n"
	for _, tc := range []struct{ name, file, want string }{
		{"missing file", ssl + "ssl.keystore.location = " + quoteTOML(missing) + "\n",
			"config.toml:4:1: ssl.keystore.location: open " + missing + ": no such file or directory"},
		{"bad PEM", ssl + "ssl.keystore.location = " + quoteTOML(bad) + "\n",
			"config.toml:4:1: ssl.keystore.location: holds no PEM CERTIFICATE block"},
		{"key of another certificate", ssl + "ssl.keystore.location = " + quoteTOML(mismatched) + "\n",
			"config.toml:4:1: ssl.keystore.location: certificate and key do not make a key pair"},
		{"encrypted PKCS#8", ssl + "ssl.keystore.location = " + quoteTOML(encrypted) + "\n",
			"config.toml:4:1: ssl.keystore.location: the private key is encrypted PKCS#8, which wren cannot read"},
		{"no certificate", ssl, "config.toml:2:1: ssl.keystore.location: listener SSL speaks TLS and needs a certificate"},
		{"client auth without trust store", ssl + "ssl.keystore.location = " + quoteTOML(good) + "\nssl.client.auth = \"required\"\n",
			"config.toml:5:1: ssl.client.auth: required asks for client certificates on listener SSL, but no trust store is set"},
		{"bad trust store", ssl + "ssl.keystore.location = " + quoteTOML(good) + "\nssl.truststore.location = " + quoteTOML(bad) + "\n",
			"config.toml:5:1: ssl.truststore.location: holds no PEM CERTIFICATE block"},
		{"unknown protocol", "[broker]\nlisteners = [\"A://127.0.0.1:0\", \"CONTROLLER://127.0.0.1:9093\"]\nlistener.security.protocol.map = \"A:TLS\"\n",
			`config.toml:3:34: listener.security.protocol.map: invalid value "A:TLS": A: unknown security protocol "TLS" (known: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)`},
		{"listener outside the map", "[broker]\nlisteners = [\"A://127.0.0.1:0\", \"CONTROLLER://127.0.0.1:9093\"]\nlistener.security.protocol.map = \"B:SSL\"\n",
			"config.toml:3:1: listeners: A://127.0.0.1:0 has no security protocol: add A:PLAINTEXT (or SSL) to listener.security.protocol.map"},
		{"SASL_SSL without a certificate", "[broker]\nlisteners = [\"SASL_SSL://127.0.0.1:0\", \"CONTROLLER://127.0.0.1:9093\"]\n",
			"config.toml:2:1: ssl.keystore.location: listener SASL_SSL speaks TLS and needs a certificate: set it, or ssl.keystore.certificate.chain with ssl.keystore.key"},
		{"controller over SASL_SSL", "[broker]\nlistener.security.protocol.map = \"PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL\"\n",
			"config.toml:2:1: listener.security.protocol.map: controller listener CONTROLLER must be PLAINTEXT or SSL (mutual TLS between the peers), not SASL_SSL"},
		{"controller over SSL without a trust store", "[broker]\nlistener.security.protocol.map = \"PLAINTEXT:PLAINTEXT,CONTROLLER:SSL\"\n[security]\nssl.keystore.location = " + quoteTOML(good) + "\n",
			"config.toml:2:1: ssl.truststore.location: the controller listener CONTROLLER speaks mutual TLS and needs a trust store"},
		{"controller over SSL without client auth", "[broker]\nlistener.security.protocol.map = \"PLAINTEXT:PLAINTEXT,CONTROLLER:SSL\"\n[security]\nssl.keystore.location = " + quoteTOML(good) + "\nlistener.name.controller.ssl.client.auth = \"none\"\n",
			"config.toml:5:1: listener.name.controller.ssl.client.auth: the controller listener CONTROLLER always requires the peers' certificates"},
		{"unknown cipher suite", ssl + "ssl.keystore.location = " + quoteTOML(good) + "\nssl.cipher.suites = [\"TLS_RSA_WITH_RC4_128_SHA\"]\n",
			`config.toml:5:1: ssl.cipher.suites: invalid value ["TLS_RSA_WITH_RC4_128_SHA"]: unknown or insecure cipher suite "TLS_RSA_WITH_RC4_128_SHA"`},
		{"unknown TLS version", ssl + "ssl.keystore.location = " + quoteTOML(good) + "\nssl.enabled.protocols = [\"TLSv1.1\"]\n",
			`config.toml:5:1: ssl.enabled.protocols: invalid value ["TLSv1.1"]: "TLSv1.1" is not allowed`},
		{"override of no listener", ssl + "ssl.keystore.location = " + quoteTOML(good) + "\nlistener.name.other.ssl.client.auth = \"none\"\n",
			"config.toml:5:1: listener.name.other.ssl.client.auth: there is no listener OTHER in listeners"},
		{"override of a key that has none", ssl + "ssl.keystore.location = " + quoteTOML(good) + "\nlistener.name.ssl.log.dirs = [\"x\"]\n",
			"config.toml:5:1: key listener.name.ssl.log.dirs: log.dirs cannot be set per listener"},
		{"override with a bad file", ssl + "ssl.keystore.location = " + quoteTOML(good) + "\nlistener.name.ssl.ssl.keystore.location = " + quoteTOML(missing) + "\n",
			"config.toml:5:1: listener.name.ssl.ssl.keystore.location: open " + missing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("config.toml", []byte(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v\nwant an error containing %q", err, tc.want)
			}
		})
	}
}

// Private keys and their passwords are never described.
func TestSSLKeysSensitive(t *testing.T) {
	c, err := Parse("config.toml", []byte("[security]\nssl.key.password = \"secret\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := c.DescribeBroker(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if d.Name == "ssl.key.password" || d.Name == "ssl.keystore.key" {
			if !d.Sensitive || d.Value != nil {
				t.Errorf("%s described as %v (sensitive %v)", d.Name, d.Value, d.Sensitive)
			}
			for _, s := range d.Synonyms {
				if strings.Contains(s.Value, "secret") {
					t.Errorf("%s synonym %s shows the value", d.Name, s.Name)
				}
			}
		}
	}
}

// Certificates given per node in a shared file are checked for the node
// chosen, and not reported missing when no node is.
func TestSSLPerNode(t *testing.T) {
	dir := t.TempDir()
	cert, key := testKeyPair(t)
	good := writeFile(t, dir, "good.pem", cert+key)
	missing := filepath.Join(dir, "missing.pem")
	file := "[broker]\nlisteners = [\"SSL://127.0.0.1:0\", \"CONTROLLER://127.0.0.1:0\"]\n" +
		"[cluster]\ncontroller.quorum.voters = [\"1@a:9093\", \"2@b:9093\"]\n" +
		"[node.1.security]\nssl.keystore.location = " + quoteTOML(good) + "\n" +
		"[node.2.security]\nssl.keystore.location = " + quoteTOML(missing) + "\n"
	if _, err := Parse("config.toml", []byte(file)); err != nil {
		t.Errorf("no node chosen: %v", err)
	}
	if _, err := ParseWith("config.toml", []byte(file), Options{NodeID: 1}); err != nil {
		t.Errorf("node 1: %v", err)
	}
	_, err := ParseWith("config.toml", []byte(file), Options{NodeID: 2})
	if want := "config.toml:8:1: ssl.keystore.location: open " + missing; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("node 2: got %v, want %q", err, want)
	}
}

// A listener's own TLS settings given per node in a shared file
// (listener.name.NAME.ssl.* in [node.N.security], a node-specific key
// store) override the shared ones on that node only, key by key; a bad
// one is refused for the node chosen with the key and its line, and so is
// a duplicate within one node's tables.
func TestListenerSSLPerNode(t *testing.T) {
	dir := t.TempDir()
	cert1, key1 := testKeyPair(t)
	cert2, key2 := testKeyPair(t)
	shared := writeFile(t, dir, "shared.pem", cert1+key1)
	node2 := writeFile(t, dir, "node2.pem", cert2+key2)
	missing := filepath.Join(dir, "missing.pem")
	head := "[broker]\nlisteners = [\"PLAINTEXT://127.0.0.1:0\", \"EXTERNAL://127.0.0.1:0\", \"CONTROLLER://127.0.0.1:0\"]\n" +
		"listener.security.protocol.map = \"PLAINTEXT:PLAINTEXT,EXTERNAL:SSL,CONTROLLER:PLAINTEXT\"\n" +
		"[cluster]\ncontroller.quorum.voters = [\"1@a:9093\", \"2@b:9093\", \"3@c:9093\"]\n" +
		"[security]\nlistener.name.external.ssl.keystore.location = " + quoteTOML(shared) + "\n" +
		"listener.name.external.ssl.enabled.protocols = [\"TLSv1.3\"]\n"
	file := head +
		"[node.2.security]\nlistener.name.external.ssl.keystore.location = " + quoteTOML(node2) + "\n" +
		"[node.3.security]\nlistener.name.external.ssl.keystore.location = " + quoteTOML(missing) + "\n"
	if _, err := Parse("config.toml", []byte(file)); err != nil {
		t.Errorf("no node chosen: %v", err)
	}
	leaf := func(c *Config) []byte {
		t.Helper()
		s := c.ListenerSSL("EXTERNAL")
		crt, err := s.Certificate()
		if err != nil {
			t.Fatal(err)
		}
		if tc := s.TLSConfig(nil, nil); tc.MinVersion != 0x0304 {
			t.Errorf("the shared listener.name.external.ssl.enabled.protocols lost: min version %x", tc.MinVersion)
		}
		return crt.Certificate[0]
	}
	for id, cert := range map[int32]string{1: cert1, 2: cert2} {
		c, err := ParseWith("config.toml", []byte(file), Options{NodeID: id})
		if err != nil {
			t.Fatalf("node %d: %v", id, err)
		}
		if !bytes.Equal(leaf(c), certDER(t, cert)) {
			t.Errorf("node %d does not serve its own certificate", id)
		}
		if _, err := Parse("dump.toml", []byte(c.Dump(false))); err != nil {
			t.Errorf("node %d: dump does not load: %v\n%s", id, err, c.Dump(false))
		}
	}
	_, err := ParseWith("config.toml", []byte(file), Options{NodeID: 3})
	if want := "config.toml:12:1: listener.name.external.ssl.keystore.location: open " + missing; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("node 3: got %v, want %q", err, want)
	}
	for _, tc := range []struct{ name, tail, want string }{
		{"duplicate in one node", "[node.2.security]\nlistener.name.external.ssl.keystore.location = " + quoteTOML(node2) + "\n" +
			"[node.2.security.listener.name.external]\nssl.keystore.location = " + quoteTOML(node2) + "\n",
			"config.toml:12:1: duplicate key listener.name.external.ssl.keystore.location (first set at 10:1)"},
		{"not an ssl key", "[node.2.security]\nlistener.name.external.log.dirs = [\"x\"]\n",
			"config.toml:10:1: key listener.name.external.log.dirs: log.dirs cannot be set per listener"},
		{"outside [security]", "[node.2.broker]\nlistener.name.external.ssl.keystore.location = " + quoteTOML(node2) + "\n",
			"config.toml:10:1: key listener.name.external.ssl.keystore.location belongs in section [security]"},
		{"no such listener", "[node.2.security]\nlistener.name.other.ssl.client.auth = \"none\"\n",
			"config.toml:10:1: listener.name.other.ssl.client.auth: there is no listener OTHER in listeners"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseWith("config.toml", []byte(head+tc.tail), Options{NodeID: 2})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v\nwant an error containing %q", err, tc.want)
			}
		})
	}
}

// certDER is the DER of the first certificate of certPEM.
func certDER(t *testing.T, certPEM string) []byte {
	t.Helper()
	b, _ := pem.Decode([]byte(certPEM))
	if b == nil {
		t.Fatal("no PEM block")
	}
	return b.Bytes
}

// ssl.* settings that no listener uses are warned about, by key and line.
func TestSSLWithoutSSLListenerWarns(t *testing.T) {
	c, err := Parse("config.toml", []byte("[broker]\nlisteners = [\"PLAINTEXT://127.0.0.1:0\", \"CONTROLLER://127.0.0.1:0\"]\n"+
		"[security]\nssl.keystore.location = \"/etc/wren/broker.pem\"\nlistener.name.plaintext.ssl.client.auth = \"required\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range c.Warnings() {
		got = append(got, w.String())
	}
	want := []string{
		"config.toml:4:1: warning: ssl.keystore.location has no effect: no listener is SSL or SASL_SSL (listeners, listener.security.protocol.map)",
		"config.toml:5:1: warning: listener.name.plaintext.ssl.client.auth has no effect: listener PLAINTEXT is not SSL or SASL_SSL",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// ssl.principal.mapping.rules is read with Kafka's grammar at load: bad
// rules are refused with the key and line, a listener may have its own,
// and the listener's SSL settings map DNs by them.
func TestPrincipalMappingRules(t *testing.T) {
	dir := t.TempDir()
	cert, key := testKeyPair(t)
	good := writeFile(t, dir, "good.pem", cert+key)
	ssl := "[broker]\nlisteners = [\"SSL://127.0.0.1:0\", \"CONTROLLER://127.0.0.1:9093\"]\n[security]\nssl.keystore.location = " + quoteTOML(good) + "\n"
	for _, tc := range []struct{ name, file, want string }{
		{"bad rule", ssl + "ssl.principal.mapping.rules = \"DEFAULT/L\"\n",
			"config.toml:5:31: ssl.principal.mapping.rules: invalid value \"DEFAULT/L\": invalid rule: `DEFAULT/L`, unmatched substring: `/L`"},
		{"bad pattern", ssl + "ssl.principal.mapping.rules = \"RULE:^CN=(?<=x)$/$1/\"\n",
			"config.toml:5:31: ssl.principal.mapping.rules: invalid value"},
		{"bad listener rule", ssl + "listener.name.ssl.ssl.principal.mapping.rules = \"rule:x/y/\"\n",
			"config.toml:5:49: listener.name.ssl.ssl.principal.mapping.rules: invalid value \"rule:x/y/\": invalid rule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("config.toml", []byte(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v\nwant an error containing %q", err, tc.want)
			}
		})
	}
	c, err := Parse("config.toml", []byte(ssl+"ssl.principal.mapping.rules = \"RULE:^CN=([^,]*),.*$/$1/L, DEFAULT\"\n"+
		"listener.name.ssl.ssl.principal.mapping.rules = \"RULE:^CN=([^,]*),.*$/$1/U\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.ListenerSSL("SSL").MapPrincipal("CN=Duke,O=Org"); err != nil || got != "DUKE" {
		t.Errorf("listener's own rules: %q, %v; want DUKE", got, err)
	}
	if _, err := c.ListenerSSL("SSL").MapPrincipal("O=Org"); err == nil {
		t.Error("a DN the listener's rules do not match was mapped")
	}
	if got, err := c.ListenerSSL("OTHER").MapPrincipal("CN=Duke,O=Org"); err != nil || got != "duke" {
		t.Errorf("shared rules: %q, %v; want duke", got, err)
	}
}

// TestAllowEveryoneIfNoACLFound: set, the value; unset, true while no
// client listener authenticates its clients, false once one does (a
// SASL listener, an SSL listener requiring client certificates, by the
// shared setting or its own).
func TestAllowEveryoneIfNoACLFound(t *testing.T) {
	dir := t.TempDir()
	cert, key := testKeyPair(t)
	tlsFiles := "[security]\nssl.keystore.location = " + quoteTOML(writeFile(t, dir, "both.pem", cert+key)) +
		"\nssl.truststore.location = " + quoteTOML(writeFile(t, dir, "ca.pem", cert)) + "\n"
	listeners := func(ls ...string) string {
		return "[broker]\nlisteners = [\"" + strings.Join(append(ls, "CONTROLLER://127.0.0.1:9093"), "\", \"") + "\"]\n"
	}
	for _, tc := range []struct {
		name, file string
		want       bool
	}{
		{"defaults", "", true},
		{"plaintext", listeners("PLAINTEXT://127.0.0.1:9092"), true},
		{"ssl without client auth", listeners("PLAINTEXT://127.0.0.1:9092", "SSL://127.0.0.1:9094") + tlsFiles, true},
		{"ssl requesting client certificates", listeners("SSL://127.0.0.1:9094") + tlsFiles + "ssl.client.auth = \"requested\"\n", true},
		{"ssl requiring client certificates", listeners("SSL://127.0.0.1:9094") + tlsFiles + "ssl.client.auth = \"required\"\n", false},
		{"one ssl listener requiring them", listeners("SSL://127.0.0.1:9094") + tlsFiles + "listener.name.ssl.ssl.client.auth = \"required\"\n", false},
		{"sasl", listeners("PLAINTEXT://127.0.0.1:9092", "SASL_PLAINTEXT://127.0.0.1:9095"), false},
		{"sasl_ssl", listeners("SASL_SSL://127.0.0.1:9095") + tlsFiles, false},
		{"sasl, set", listeners("SASL_SSL://127.0.0.1:9095") + tlsFiles + "allow.everyone.if.no.acl.found = true\n", true},
		{"plaintext, set", "[security]\nallow.everyone.if.no.acl.found = false\nsuper.users = [\"User:admin\", \"User:CN=ops,O=x\"]\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("config.toml", []byte(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.AllowEveryoneIfNoACLFound(); got != tc.want {
				t.Fatalf("AllowEveryoneIfNoACLFound = %t, want %t", got, tc.want)
			}
		})
	}
	c, err := Parse("config.toml", []byte("[security]\nsuper.users = [\"User:admin\", \"User:CN=ops,O=x\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.SuperUsers, ";") != "User:admin;User:CN=ops,O=x" {
		t.Fatalf("super.users = %q", c.SuperUsers)
	}
	if _, err := Parse("config.toml", []byte("[security]\nsuper.users = [\"admin\"]\n")); err == nil || !strings.Contains(err.Error(), "super.users") {
		t.Fatalf("a super user without a type: %v", err)
	}
}
