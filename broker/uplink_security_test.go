package broker

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/internal/testcert"
	"github.com/wren-broker/wren/uplink"
)

// secureCentral starts a far-side broker with a PLAINTEXT listener (the
// test's admin path) and a listener of protocol (SSL or SASL_SSL) whose
// certificate the CA signed and whose trust store is the CA; clientAuth
// is its ssl.client.auth. It returns the broker and the secure
// listener's address.
func secureCentral(t *testing.T, ca *testcert.CA, protocol, clientAuth string) (*Broker, string) {
	t.Helper()
	dir := t.TempDir()
	trust := filepath.Join(dir, "ca.pem")
	writeAtomically(t, trust, ca.PEM)
	cfg, err := config.Parse("test.toml", []byte(fmt.Sprintf(`
[broker]
node.id = 1
log.dirs = [%q]
listeners = ["PLAINTEXT://127.0.0.1:0", "%s://127.0.0.1:0", "CONTROLLER://127.0.0.1:0"]

[cluster]
controller.quorum.voters = ["1@127.0.0.1:9093"]

[http]
listen = "127.0.0.1:0"

[security]
ssl.keystore.location = %q
ssl.truststore.location = %q
ssl.client.auth = %q
allow.everyone.if.no.acl.found = true
`, filepath.Join(dir, "data"), protocol, serverKeystore(t, ca, "127.0.0.1"), trust, clientAuth)))
	if err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, cfg)
	return b, b.ListenerAddr(protocol).String()
}

// startEdge starts an edge broker in dir with the [uplink.central] table
// link (TOML), refreshing every 100 ms, trusting a far tail that held
// still for 100 ms.
func startEdge(t *testing.T, dir, link string) *Broker {
	t.Helper()
	b, err := Start(testConfig(t, dir, "\n[uplink.central]\ntail.settle.ms = 100\n"+link), Options{Logger: testLogger(t), UplinkRefresh: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// forwardAndCheck writes 300 records to each of sensors.a's 2 partitions
// on the edge and checks that the far side holds each once, in order,
// in batches of the codec (kgo's numbering: 1 gzip, 4 zstd).
func forwardAndCheck(t *testing.T, central, edge *Broker, codec uint8) {
	t.Helper()
	ctx := testContext(t)
	_, cadm := newClient(t, central, kgo.MetadataMinAge(10*time.Millisecond))
	ecl, eadm := newClient(t, edge, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, eadm, "sensors.a", 2, nil)
	produceUplink(t, ctx, ecl, "sensors.a", 2, 0, 300)
	waitFarRecords(t, ctx, cadm, "site-7.sensors.a", 600)
	far := readFar(t, ctx, central, "site-7.sensors.a", 2, 600)
	checkFar(t, far, clusterOf(t, ctx, eadm), "sensors.a", 2, 300)
	for _, rs := range far {
		for _, r := range rs {
			if c := r.Attrs.CompressionType(); c != codec {
				t.Fatalf("far record at offset %d came in a batch of codec %d, want %d", r.Offset, c, codec)
			}
		}
	}
	if st := edge.UplinkStatus(); len(st) != 1 || st[0].Sent != 600 {
		t.Fatalf("link status %+v, want 600 sent", st)
	}
}

// TestUplinkSASLSSL: a link reaches the far side over SASL_SSL with
// SCRAM-SHA-512, its password from the environment, its batches zstd
// compressed: every record arrives once, in order.
func TestUplinkSASLSSL(t *testing.T) {
	ca := testcert.NewCA(t, "wren test CA")
	central, addr := secureCentral(t, ca, "SASL_SSL", "none")
	_, cadm := newClient(t, central)
	altered, err := cadm.AlterUserSCRAMs(testContext(t), nil, []kadm.UpsertSCRAM{{User: "site-7", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "s3cret"}})
	if err != nil || !altered.Ok() {
		t.Fatalf("create user: %v %+v", err, altered)
	}
	trust := filepath.Join(t.TempDir(), "ca.pem")
	writeAtomically(t, trust, ca.PEM)
	t.Setenv(config.UplinkPasswordEnv("central"), "s3cret")
	edge := startEdge(t, t.TempDir(), fmt.Sprintf(`bootstrap.servers = [%q]
topics = ["sensors\\..*"]
remote.topic.prefix = "site-7."
security.protocol = "SASL_SSL"
ssl.truststore.location = %q
sasl.mechanism = "SCRAM-SHA-512"
sasl.username = "site-7"
compression = "zstd"
`, addr, trust))
	forwardAndCheck(t, central, edge, 4)
}

// TestUplinkMutualTLS: a link reaches a far listener that requires client
// certificates with its own (inline PEM), host names checked, its
// batches gzip compressed and its bytes capped: every record arrives
// once, in order.
func TestUplinkMutualTLS(t *testing.T) {
	ca := testcert.NewCA(t, "wren test CA")
	central, addr := secureCentral(t, ca, "SSL", "required")
	cert, key := ca.Issue(t, "edge", x509.ExtKeyUsageClientAuth)
	trust := filepath.Join(t.TempDir(), "ca.pem")
	writeAtomically(t, trust, ca.PEM)
	edge := startEdge(t, t.TempDir(), fmt.Sprintf(`bootstrap.servers = [%q]
topics = ["sensors\\..*"]
remote.topic.prefix = "site-7."
security.protocol = "SSL"
ssl.truststore.location = %q
ssl.keystore.certificate.chain = '''%s'''
ssl.keystore.key = '''%s'''
ssl.endpoint.identification.algorithm = "https"
compression = "gzip"
max.bytes.per.second = 1_000_000
`, addr, trust, cert, key))
	forwardAndCheck(t, central, edge, 1)
}

// TestUplinkWrongPassword: a link whose password the far side refuses
// forwards nothing, says why in its last error, and tries again later;
// the broker runs on.
func TestUplinkWrongPassword(t *testing.T) {
	ca := testcert.NewCA(t, "wren test CA")
	central, addr := secureCentral(t, ca, "SASL_SSL", "none")
	_, cadm := newClient(t, central)
	altered, err := cadm.AlterUserSCRAMs(testContext(t), nil, []kadm.UpsertSCRAM{{User: "site-7", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "s3cret"}})
	if err != nil || !altered.Ok() {
		t.Fatalf("create user: %v %+v", err, altered)
	}
	dir := t.TempDir()
	trust, pw := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "password")
	writeAtomically(t, trust, ca.PEM)
	writeAtomically(t, pw, []byte("wrong\n"))
	edge := startEdge(t, t.TempDir(), fmt.Sprintf(`bootstrap.servers = [%q]
topics = ["sensors\\..*"]
security.protocol = "SASL_SSL"
ssl.truststore.location = %q
sasl.mechanism = "SCRAM-SHA-512"
sasl.username = "site-7"
sasl.password.file = %q
`, addr, trust, pw))
	var first uplink.Status
	pollFor(t, "the link's last error", 20*time.Second, func() bool {
		st := edge.UplinkStatus()
		if len(st) == 1 && st[0].LastError != "" {
			first = st[0]
		}
		return first.LastError != ""
	})
	if !strings.Contains(first.LastError, "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("last error %q, want it to say the authentication failed", first.LastError)
	}
	pollFor(t, "a second attempt", 20*time.Second, func() bool {
		st := edge.UplinkStatus()
		return len(st) == 1 && st[0].LastErrorAt.After(first.LastErrorAt)
	})
	_, eadm := newClient(t, edge)
	if _, err := eadm.ListTopics(testContext(t)); err != nil {
		t.Fatalf("the edge broker does not answer: %v", err)
	}
}

// TestUplinkStartTime: with start.position an RFC 3339 time, a far
// partition that never held a record starts at the first local record
// stamped at or after it.
func TestUplinkStartTime(t *testing.T) {
	ctx := testContext(t)
	central := startBroker(t, testConfig(t, t.TempDir(), ""))
	_, cadm := newClient(t, central, kgo.MetadataMinAge(10*time.Millisecond))
	dir := t.TempDir()
	plain, err := Start(testConfig(t, dir, ""), Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	pcl, padm := newClient(t, plain, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, padm, "sensors.t", 2, nil)
	produceUplink(t, ctx, pcl, "sensors.t", 2, 0, 200)
	pcl.Close()
	if err := plain.Close(); err != nil {
		t.Fatal(err)
	}
	// Record i is stamped 1_700_000_000_000 + i ms (uplinkRecord).
	at := time.UnixMilli(1_700_000_000_000 + 120).UTC().Format(time.RFC3339Nano)
	edge := startEdge(t, dir, fmt.Sprintf(`bootstrap.servers = [%q]
topics = ["sensors.t"]
start.position = %q
`, central.Addr().String(), at))
	waitFarRecords(t, ctx, cadm, "sensors.t", 160)
	far := readFar(t, ctx, central, "sensors.t", 2, 160)
	for p := range int32(2) {
		for i, r := range far[p] {
			if want := "k-" + strconv.Itoa(120+i); string(r.Key) != want {
				t.Fatalf("far partition %d record %d has key %q, want %s", p, i, r.Key, want)
			}
		}
	}
	if st := edge.UplinkStatus(); len(st) != 1 || st[0].Sent != 160 {
		t.Fatalf("link status %+v, want 160 sent", st)
	}
}

// The missing password of a SASL link is a start error naming where it
// goes.
func TestUplinkPasswordMissing(t *testing.T) {
	t.Setenv(config.UplinkPasswordEnv("central"), "") // restored after the test
	os.Unsetenv(config.UplinkPasswordEnv("central"))
	_, err := Start(testConfig(t, t.TempDir(), `
[uplink.central]
bootstrap.servers = ["127.0.0.1:1"]
topics = ["t"]
security.protocol = "SASL_PLAINTEXT"
sasl.mechanism = "PLAIN"
sasl.username = "u"
`), Options{Logger: testLogger(t)})
	if err == nil || !strings.Contains(err.Error(), "WREN_UPLINK_CENTRAL_PASSWORD") {
		t.Fatalf("start: %v, want an error naming WREN_UPLINK_CENTRAL_PASSWORD", err)
	}
}

// TestUplinkLocalSideSecured: an edge whose only client listener is
// SASL_SSL, with allow.everyone.if.no.acl.found false and no ACL at all,
// forwards all the same: the link reads the node through its internal
// listener as User:wren-uplink, which no ACL is asked about. The
// admin's records arrive once, in order, and no authorization was
// refused meanwhile.
func TestUplinkLocalSideSecured(t *testing.T) {
	central := startBroker(t, testConfig(t, t.TempDir(), ""))
	ca := testcert.NewCA(t, "wren test CA")
	dir := t.TempDir()
	trust := filepath.Join(dir, "ca.pem")
	writeAtomically(t, trust, ca.PEM)
	t.Setenv(config.BootstrapAdminPasswordEnv, "admin-password")
	cfg, err := config.Parse("edge.toml", []byte(fmt.Sprintf(`
[broker]
node.id = 1
log.dirs = [%q]
listeners = ["SASL_SSL://127.0.0.1:0", "CONTROLLER://127.0.0.1:0"]

[cluster]
controller.quorum.voters = ["1@127.0.0.1:9093"]

[http]
listen = "127.0.0.1:0"

[security]
ssl.keystore.location = %q
ssl.truststore.location = %q
allow.everyone.if.no.acl.found = false
bootstrap.admin.user = "admin"

[uplink.central]
bootstrap.servers = [%q]
topics = ["sensors\\..*"]
remote.topic.prefix = "site-7."
tail.settle.ms = 100
`, filepath.Join(dir, "data"), serverKeystore(t, ca, "127.0.0.1"), trust, central.Addr().String())))
	if err != nil {
		t.Fatal(err)
	}
	edge, err := Start(cfg, Options{Logger: testLogger(t), UplinkRefresh: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { edge.Close() })
	if a := edge.ListenerAddr("PLAINTEXT"); a != nil {
		t.Fatalf("the edge has a PLAINTEXT listener at %v", a)
	}

	ctx := testContext(t)
	tc := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}
	ecl, eadm := tlsClient(t, edge.ListenerAddr("SASL_SSL").String(), tc,
		kgo.SASL(kscram.Auth{User: "admin", Pass: "admin-password"}.AsSha512Mechanism()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	// The bootstrap admin's credential is recorded once the controller
	// acts: poll.
	pollFor(t, "the bootstrap admin creating sensors.a", 20*time.Second, func() bool {
		_, err := eadm.CreateTopic(ctx, 2, 1, nil, "sensors.a")
		return err == nil || errors.Is(err, kerr.TopicAlreadyExists)
	})
	acls, err := eadm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().Deny().Operations(kadm.OpAny))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range acls {
		if r.Err != nil || len(r.Described) > 0 {
			t.Fatalf("ACLs on the edge: %+v, %v; want none", r.Described, r.Err)
		}
	}
	produceUplink(t, ctx, ecl, "sensors.a", 2, 0, 100)
	_, cadm := newClient(t, central, kgo.MetadataMinAge(10*time.Millisecond))
	waitFarRecords(t, ctx, cadm, "site-7.sensors.a", 200)
	far := readFar(t, ctx, central, "site-7.sensors.a", 2, 200)
	checkFar(t, far, clusterOf(t, ctx, eadm), "sensors.a", 2, 100)
	st := edge.UplinkStatus()
	if len(st) != 1 || st[0].Sent != 200 || st[0].LastError != "" {
		t.Fatalf("link status %+v, want 200 sent and no error", st)
	}
	_, metrics := httpGet(t, edge, "/metrics")
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, "wren_authorization_denials_total") && !strings.HasSuffix(line, " 0") {
			t.Errorf("an authorization was refused: %s", line)
		}
	}
}
