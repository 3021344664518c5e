package broker

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/internal/testcert"
	"github.com/wren-broker/wren/wire"
)

// writeAtomically replaces a file the way an operator's tooling should:
// write aside, then rename.
func writeAtomically(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// tlsBroker starts a broker with a PLAINTEXT and an SSL listener whose key
// store is keystore and trust store the CA, reloading every 20 ms; the
// PLAINTEXT listener's anonymous clients are super users (the tests' admin
// path), and security is more TOML for the [security] section.
func tlsBroker(t *testing.T, ca *testcert.CA, keystore, clientAuth string, security ...string) *Broker {
	t.Helper()
	dir := t.TempDir()
	trust := filepath.Join(dir, "ca.pem")
	writeAtomically(t, trust, ca.PEM)
	toml := fmt.Sprintf(`
[broker]
node.id = 1
log.dirs = [%q]
listeners = ["PLAINTEXT://127.0.0.1:0", "SSL://127.0.0.1:0", "CONTROLLER://127.0.0.1:0"]

[cluster]
controller.quorum.voters = ["1@127.0.0.1:9093"]

[security]
ssl.keystore.location = %q
ssl.truststore.location = %q
ssl.client.auth = %q
super.users = ["User:ANONYMOUS"]
%s

[http]
listen = "127.0.0.1:0"
`, filepath.Join(dir, "data"), keystore, trust, clientAuth, strings.Join(security, "\n"))
	cfg, err := config.Parse("test.toml", []byte(toml))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Start(cfg, Options{Logger: testLogger(t), TLSReloadInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func serverKeystore(t *testing.T, ca *testcert.CA, cn string) string {
	t.Helper()
	cert, key := ca.Issue(t, cn, x509.ExtKeyUsageServerAuth)
	p := filepath.Join(t.TempDir(), "server.pem")
	writeAtomically(t, p, append(cert, key...))
	return p
}

func tlsClient(t *testing.T, addr string, tc *tls.Config, opts ...kgo.Opt) (*kgo.Client, *kadm.Client) {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DialTLSConfig(tc), kgo.RequestTimeoutOverhead(10 * time.Second)}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, kadm.NewClient(cl)
}

// franz-go produces and consumes over TLS; the fetches are larger than
// the copy buffer that replaces sendfile under TLS; each listener's
// Metadata names its own port.
func TestTLSProduceConsume(t *testing.T) {
	ca := testcert.NewCA(t, "wren test CA")
	b := tlsBroker(t, ca, serverKeystore(t, ca, "broker"), "none")
	ctx := testContext(t)
	sslAddr := b.ListenerAddr("SSL").String()
	cl, adm := tlsClient(t, sslAddr, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"},
		kgo.FetchMaxBytes(4<<20), kgo.FetchMaxPartitionBytes(4<<20), kgo.ProducerBatchMaxBytes(1<<20),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "secure"); err != nil {
		t.Fatal(err)
	}

	// Metadata on each listener advertises that listener's port.
	for name, want := range map[string]net.Addr{"SSL": b.ListenerAddr("SSL"), "PLAINTEXT": b.ListenerAddr("PLAINTEXT")} {
		c := adm
		if name == "PLAINTEXT" {
			_, c = newClient(t, b)
		}
		md, err := c.BrokerMetadata(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(md.Brokers) != 1 || strconv.Itoa(int(md.Brokers[0].Port)) != portOf(t, want) {
			t.Errorf("%s listener: Metadata brokers %+v, want port %s", name, md.Brokers, portOf(t, want))
		}
	}

	const n, size = 64, 48 << 10 // 3 MiB: many copy buffers per fetch
	var records []*kgo.Record
	for i := range n {
		v := recordValue(i, size)
		records = append(records, &kgo.Record{Topic: "secure", Key: []byte(strconv.Itoa(i)), Value: v})
	}
	if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	_, copiedBefore := wire.SendFileStats()
	consumer, _ := tlsClient(t, sslAddr, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"},
		kgo.ConsumeTopics("secure"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(4<<20), kgo.FetchMaxPartitionBytes(4<<20))
	got := 0
	for got < n {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", got, n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatal(err) })
		fs.EachRecord(func(r *kgo.Record) {
			i, _ := strconv.Atoi(string(r.Key))
			if r.Offset != int64(got) || i != got || !bytes.Equal(r.Value, recordValue(i, size)) {
				t.Fatalf("record at offset %d: key %s, %d bytes", r.Offset, r.Key, len(r.Value))
			}
			got++
		})
	}
	if _, copied := wire.SendFileStats(); copied-copiedBefore < int64(n*size) {
		t.Errorf("TLS fetches copied %d bytes, want at least %d", copied-copiedBefore, n*size)
	}
}

// recordValue is record i's value: incompressible bytes, so that the
// bytes fetched are the bytes produced.
func recordValue(i, size int) []byte {
	v := make([]byte, size)
	mrand.NewChaCha8([32]byte{byte(i)}).Read(v)
	return v
}

func portOf(t *testing.T, a net.Addr) string {
	_, p, err := net.SplitHostPort(a.String())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// With ssl.client.auth required, a client without a certificate (or with
// one from another CA) is refused and one with a certificate is served,
// as the principal its certificate names through
// ssl.principal.mapping.rules: with client authentication required,
// allow.everyone.if.no.acl.found is false, so it may create a topic once
// an ACL lets User:device-7 do so, and not before.
func TestTLSMutualRequired(t *testing.T) {
	ca := testcert.NewCA(t, "wren test CA")
	b := tlsBroker(t, ca, serverKeystore(t, ca, "broker"), "required",
		`ssl.principal.mapping.rules = "RULE:^CN=([^,]+)(,.*)?$/$1/L, DEFAULT"`)
	addr := b.ListenerAddr("SSL").String()

	clientCert, clientKey := ca.Issue(t, "device-7", x509.ExtKeyUsageClientAuth)
	pair, err := tls.X509KeyPair(clientCert, clientKey)
	if err != nil {
		t.Fatal(err)
	}
	other := testcert.NewCA(t, "another CA")
	otherCert, otherKey := other.Issue(t, "intruder", x509.ExtKeyUsageClientAuth)
	otherPair, err := tls.X509KeyPair(otherCert, otherKey)
	if err != nil {
		t.Fatal(err)
	}

	for name, certs := range map[string][]tls.Certificate{"no certificate": nil, "another CA": {otherPair}} {
		t.Run(name, func(t *testing.T) {
			// TLS 1.3 finishes the client's side of the handshake before
			// the server checks its certificate: the refusal arrives as
			// the first read.
			conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1", Certificates: certs})
			if err == nil {
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err = conn.Write(apiVersionsFrame(1)); err == nil {
					_, err = conn.Read(make([]byte, 1))
				}
			}
			if err == nil {
				t.Fatal("a client without a trusted certificate was served")
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("refusal took the whole deadline: %v", err)
			}
			// And franz-go gets an error, not an answer.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			_, adm := tlsClient(t, addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1", Certificates: certs})
			if _, err := adm.BrokerMetadata(ctx); err == nil {
				t.Fatal("franz-go without a trusted certificate got metadata")
			}
		})
	}

	ctx := testContext(t)
	_, adm := tlsClient(t, addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1", Certificates: []tls.Certificate{pair}})
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "mtls"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("client with a certificate, before any ACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	_, admin := newClient(t, b)
	created, err := admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:device-7").Topics("mtls").Operations(kadm.OpCreate))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range created {
		if c.Err != nil {
			t.Fatalf("create ACL: %v", c.Err)
		}
	}
	pollFor(t, "the client with a certificate creating its topic as User:device-7", 10*time.Second, func() bool {
		_, err := adm.CreateTopic(ctx, 1, 1, nil, "mtls")
		return err == nil || errors.Is(err, kerr.TopicAlreadyExists)
	})
}

// apiVersionsFrame is an ApiVersions v0 request frame.
func apiVersionsFrame(corr int32) []byte {
	req := kmsg.NewApiVersionsRequest()
	body := req.AppendTo(nil)
	frame := binary.BigEndian.AppendUint32(nil, uint32(2+2+4+2+len(body)))
	frame = binary.BigEndian.AppendUint16(frame, uint16(req.Key()))
	frame = binary.BigEndian.AppendUint16(frame, 0)
	frame = binary.BigEndian.AppendUint32(frame, uint32(corr))
	frame = binary.BigEndian.AppendUint16(frame, 0xffff) // null client id
	return append(frame, body...)
}

// roundTrip sends an ApiVersions request on conn and reads its answer.
func roundTrip(conn net.Conn, corr int32) error {
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	defer conn.SetDeadline(time.Time{})
	if _, err := conn.Write(apiVersionsFrame(corr)); err != nil {
		return err
	}
	var hdr [8]byte
	if _, err := io.ReadFull(conn, hdr[:]); err != nil {
		return err
	}
	if got := int32(binary.BigEndian.Uint32(hdr[4:])); got != corr {
		return fmt.Errorf("correlation id %d, want %d", got, corr)
	}
	_, err := io.CopyN(io.Discard, conn, int64(binary.BigEndian.Uint32(hdr[:4]))-4)
	return err
}

// A plaintext Kafka client on the SSL port, a TLS record announcing a
// huge length there, and a TLS client on the PLAINTEXT port are all
// refused with the connection closed, without waiting for a deadline.
func TestTLSWrongProtocolRefused(t *testing.T) {
	ca := testcert.NewCA(t, "wren test CA")
	b := tlsBroker(t, ca, serverKeystore(t, ca, "broker"), "none")
	sslAddr, plainAddr := b.ListenerAddr("SSL").String(), b.ListenerAddr("PLAINTEXT").String()

	for name, first := range map[string][]byte{
		"plaintext ApiVersions": apiVersionsFrame(1),
		// A size prefix of 2 GiB: Kafka before KAFKA-4090 allocated it.
		"huge size prefix": {0x7f, 0xff, 0xff, 0xff, 0, 18, 0, 0},
		// A handshake record announcing 64 KiB, past TLS's 16 KiB limit.
		"oversized TLS record": {0x16, 0x03, 0x01, 0xff, 0xff, 1, 0, 0},
	} {
		t.Run(name, func(t *testing.T) {
			conn, err := net.Dial("tcp", sslAddr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := conn.Write(first); err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(io.Discard, io.LimitReader(conn, 1<<20))
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the connection stayed open: %v", err)
			}
			if n > 64 {
				t.Errorf("the broker answered %d bytes to a non-TLS client", n)
			}
		})
	}

	t.Run("TLS client on PLAINTEXT", func(t *testing.T) {
		d := &net.Dialer{Timeout: 10 * time.Second}
		conn, err := tls.DialWithDialer(d, "tcp", plainAddr, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})
		if err == nil {
			conn.Close()
			t.Fatal("a TLS handshake succeeded on the PLAINTEXT listener")
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the connection stayed open: %v", err)
		}
	})

	// The SSL listener still serves.
	ctx := testContext(t)
	_, adm := tlsClient(t, sslAddr, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})
	if _, err := adm.BrokerMetadata(ctx); err != nil {
		t.Fatal(err)
	}
	// The failures are counted by listener and reason.
	want := `wren_tls_handshake_failures_total{listener="SSL",reason="not_tls"} 3`
	pollFor(t, "the handshake failures in /metrics", 20*time.Second, func() bool {
		_, metrics := httpGet(t, b, "/metrics")
		return strings.Contains(metrics, want)
	})
}

// A replaced certificate is served to new connections without a restart;
// a connection opened before keeps working with the old one. A broken
// file keeps the current certificate.
func TestTLSCertificateReload(t *testing.T) {
	ca := testcert.NewCA(t, "wren test CA")
	keystore := serverKeystore(t, ca, "first")
	b := tlsBroker(t, ca, keystore, "none")
	addr := b.ListenerAddr("SSL").String()
	dial := func() *tls.Conn {
		t.Helper()
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		return conn
	}
	leafCN := func(c *tls.Conn) string { return c.ConnectionState().PeerCertificates[0].Subject.CommonName }

	old := dial()
	defer old.Close()
	if err := roundTrip(old, 1); err != nil {
		t.Fatal(err)
	}
	if cn := leafCN(old); cn != "first" {
		t.Fatalf("first certificate is %q", cn)
	}

	// A half-written file is not taken.
	writeAtomically(t, keystore, []byte("-----BEGIN CERTIFICATE-----\n"))
	cert, key := ca.Issue(t, "second", x509.ExtKeyUsageServerAuth)
	writeAtomically(t, keystore, append(cert, key...))
	pollFor(t, "the new certificate on a new connection", 20*time.Second, func() bool {
		c := dial()
		defer c.Close()
		cn := leafCN(c)
		if cn != "first" && cn != "second" {
			t.Fatalf("served certificate %q", cn)
		}
		return cn == "second"
	})
	if err := roundTrip(old, 2); err != nil {
		t.Fatalf("the connection opened before the reload: %v", err)
	}

	// A broken file leaves the current certificate in use.
	writeAtomically(t, keystore, []byte("garbage"))
	third, thirdKey := ca.Issue(t, "third", x509.ExtKeyUsageServerAuth)
	// Still the second until a good file arrives.
	if c := dial(); leafCN(c) != "second" {
		t.Fatalf("after a broken file, served %q", leafCN(c))
	} else {
		c.Close()
	}
	writeAtomically(t, keystore, append(third, thirdKey...))
	pollFor(t, "the certificate after a broken file", 20*time.Second, func() bool {
		c := dial()
		defer c.Close()
		return leafCN(c) == "third"
	})
	if err := roundTrip(old, 3); err != nil {
		t.Fatalf("the first connection after two reloads: %v", err)
	}
}
