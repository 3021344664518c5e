package broker

import (
	"crypto/tls"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/internal/testcert"
)

// saslConfig is a one-node config with a PLAINTEXT and a SASL_PLAINTEXT
// client listener on free loopback ports, data in dir; broker is TOML
// added to its [broker] section. Its tests are about authentication, so
// allow.everyone.if.no.acl.found is true (a SASL listener makes its
// default false): with no ACL every principal is allowed.
func saslConfig(t *testing.T, dir, broker string) *config.Config {
	t.Helper()
	cfg, err := config.Parse("test.toml", []byte(fmt.Sprintf(`
[broker]
node.id = 1
log.dirs = [%q]
listeners = ["PLAINTEXT://127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0", "CONTROLLER://127.0.0.1:0"]
%s
[cluster]
controller.quorum.voters = ["1@127.0.0.1:9093"]

[http]
listen = "127.0.0.1:0"
`, dir, broker)))
	if err != nil {
		t.Fatal(err)
	}
	allow := true
	cfg.AllowEveryoneIfNoACL = &allow
	return cfg
}

// TestSASLListener: a user created with AlterUserScramCredentials (kadm,
// as kafka-configs does) produces and consumes over SCRAM-SHA-512 and
// SCRAM-SHA-256 on a SASL listener, under the default settings; a wrong
// password and an unknown user are refused alike; PLAIN is not offered
// unless sasl.enabled.mechanisms lists it; a client without SASL gets
// nothing but a closed connection.
func TestSASLListener(t *testing.T) {
	b := startBroker(t, saslConfig(t, t.TempDir(), ""))
	_, adm := newClient(t, b)
	ctx := testContext(t)
	// One credential per mechanism, in a request each (Kafka refuses a
	// user twice in one).
	for _, m := range []kadm.ScramMechanism{kadm.ScramSha512, kadm.ScramSha256} {
		altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "device-1", Mechanism: m, Iterations: 8192, Password: "pw-1"}})
		if err != nil || !altered.Ok() {
			t.Fatalf("create: %v %+v", err, altered)
		}
	}
	createTopic(t, adm, "readings", 1, nil)
	addr := b.ListenerAddr("SASL_PLAINTEXT").String()

	client := func(m sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(m)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	for _, m := range []sasl.Mechanism{
		kscram.Auth{User: "device-1", Pass: "pw-1"}.AsSha512Mechanism(),
		kscram.Auth{User: "device-1", Pass: "pw-1"}.AsSha256Mechanism(),
	} {
		value := []byte("from " + m.Name())
		cl := client(m, kgo.ConsumeTopics("readings"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "readings", Value: value}).FirstErr(); err != nil {
			t.Fatalf("%s: produce: %v", m.Name(), err)
		}
		found := false
		for !found {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("%s: no record back: %v", m.Name(), err)
			}
			fs.EachRecord(func(r *kgo.Record) { found = found || string(r.Value) == string(value) })
		}
	}

	var refusals []string
	for _, m := range []sasl.Mechanism{
		kscram.Auth{User: "device-1", Pass: "wrong"}.AsSha512Mechanism(),
		kscram.Auth{User: "device-2", Pass: "wrong"}.AsSha512Mechanism(),
	} {
		err := client(m).Ping(ctx)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("ping: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
		refusals = append(refusals, err.Error())
	}
	if refusals[0] != refusals[1] {
		t.Fatalf("a wrong password and an unknown user refused differently:\n%s\n%s", refusals[0], refusals[1])
	}
	// The metrics count them by listener, mechanism and result.
	_, metrics := httpGet(t, b, "/metrics")
	for _, want := range []string{
		`wren_sasl_authentications_total{listener="SASL_PLAINTEXT",mechanism="SCRAM-SHA-512",result="success"}`,
		`wren_sasl_authentications_total{listener="SASL_PLAINTEXT",mechanism="SCRAM-SHA-256",result="success"}`,
		`wren_sasl_authentications_total{listener="SASL_PLAINTEXT",mechanism="SCRAM-SHA-512",result="failure"}`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if err := client(plain.Auth{User: "device-1", Pass: "pw-1"}.AsMechanism()).Ping(ctx); !errors.Is(err, kerr.UnsupportedSaslMechanism) {
		t.Fatalf("PLAIN: %v, want UNSUPPORTED_SASL_MECHANISM", err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(0), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err == nil {
		t.Fatal("a client without SASL was served")
	}
}

// TestSASLSSLListener: a SASL_SSL listener takes the ssl settings as an
// SSL one does and authenticates over TLS; PLAIN, listed in
// sasl.enabled.mechanisms, checks the same SCRAM credentials; a client
// that speaks TLS without SASL is refused, and so is one without TLS.
func TestSASLSSLListener(t *testing.T) {
	ca := testcert.NewCA(t, "wren test CA")
	dir := t.TempDir()
	keystore := serverKeystore(t, ca, "127.0.0.1")
	trust := filepath.Join(dir, "ca.pem")
	writeAtomically(t, trust, ca.PEM)
	cfg, err := config.Parse("test.toml", []byte(fmt.Sprintf(`
[broker]
node.id = 1
log.dirs = [%q]
listeners = ["PLAINTEXT://127.0.0.1:0", "SASL_SSL://127.0.0.1:0", "CONTROLLER://127.0.0.1:0"]
sasl.enabled.mechanisms = ["SCRAM-SHA-512", "PLAIN"]

[cluster]
controller.quorum.voters = ["1@127.0.0.1:9093"]

[http]
listen = "127.0.0.1:0"

[security]
ssl.keystore.location = %q
ssl.truststore.location = %q
allow.everyone.if.no.acl.found = true
`, filepath.Join(dir, "data"), keystore, trust)))
	if err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, cfg)
	_, adm := newClient(t, b)
	ctx := testContext(t)
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "gateway", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "s3cret"}})
	if err != nil || !altered.Ok() {
		t.Fatalf("create: %v %+v", err, altered)
	}
	createTopic(t, adm, "telemetry", 1, nil)
	addr := b.ListenerAddr("SASL_SSL").String()
	tc := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}
	for _, m := range []sasl.Mechanism{
		kscram.Auth{User: "gateway", Pass: "s3cret"}.AsSha512Mechanism(),
		plain.Auth{User: "gateway", Pass: "s3cret"}.AsMechanism(),
	} {
		cl, _ := tlsClient(t, addr, tc, kgo.SASL(m))
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "telemetry", Value: []byte(m.Name())}).FirstErr(); err != nil {
			t.Fatalf("%s over TLS: produce: %v", m.Name(), err)
		}
	}
	cl, _ := tlsClient(t, addr, tc, kgo.SASL(plain.Auth{User: "gateway", Pass: "wrong"}.AsMechanism()))
	if err := cl.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("PLAIN with a wrong password over TLS: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	for name, opts := range map[string][]kgo.Opt{
		"TLS without SASL": {kgo.DialTLSConfig(tc)},
		"SASL without TLS": {kgo.SASL(kscram.Auth{User: "gateway", Pass: "s3cret"}.AsSha512Mechanism())},
	} {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RetryTimeout(0), kgo.RequestRetries(0)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		err = cl.Ping(ctx)
		cl.Close()
		if err == nil {
			t.Fatalf("%s was served", name)
		}
	}
}
