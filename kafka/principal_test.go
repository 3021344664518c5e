package kafka

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"log/slog"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/internal/testcert"
)

var (
	oidCN    = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidOU    = asn1.ObjectIdentifier{2, 5, 4, 11}
	oidO     = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidDC    = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}
	oidEmail = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
)

func rdn(atvs ...pkix.AttributeTypeAndValue) pkix.RelativeDistinguishedNameSET {
	return pkix.RelativeDistinguishedNameSET(atvs)
}

func atv(oid asn1.ObjectIdentifier, v string) pkix.AttributeTypeAndValue {
	return pkix.AttributeTypeAndValue{Type: oid, Value: v}
}

// TestRFC2253: subjects are written as Java's X500Principal writes them
// in RFC 2253 form, which is what Kafka's principals and ACLs hold.
func TestRFC2253(t *testing.T) {
	for _, c := range []struct {
		seq  pkix.RDNSequence
		want string
	}{
		{pkix.RDNSequence{rdn(atv(oidOU, "edge")), rdn(atv(oidCN, "device-7"))}, "CN=device-7,OU=edge"},
		{pkix.RDNSequence{rdn(atv(oidDC, "com")), rdn(atv(oidDC, "example")), rdn(atv(oidO, "Acme, Inc.")), rdn(atv(oidCN, "a+b"), atv(oidOU, "x"))},
			// The attributes of one RDN in their DER (sorted) order, as Java.
			`OU=x+CN=a\+b,O=Acme\, Inc.,DC=example,DC=com`},
		{pkix.RDNSequence{rdn(atv(oidCN, " padded "))}, `CN=\ padded\ `},
		{pkix.RDNSequence{rdn(atv(oidCN, `q"u;o<t>e#=\`))}, `CN=q\"u\;o\<t\>e\#\=\\`},
		// emailAddress has no RFC 2253 keyword: its OID and DER value.
		{pkix.RDNSequence{rdn(atv(oidEmail, "a@b")), rdn(atv(oidCN, "d"))}, "CN=d,1.2.840.113549.1.9.1=#0c03614062"},
		{pkix.RDNSequence{}, ""},
	} {
		raw, err := asn1.Marshal(c.seq)
		if err != nil {
			t.Fatal(err)
		}
		got, err := rfc2253(raw)
		if err != nil {
			t.Fatalf("%v: %v", c.seq, err)
		}
		if got != c.want {
			t.Errorf("%v: %q, want %q", c.seq, got, c.want)
		}
	}
	if _, err := rfc2253([]byte{0x30, 0x05, 0x31}); err == nil {
		t.Error("a truncated subject formatted")
	}
}

// FuzzRFC2253: a client certificate's subject comes from the network.
// Any bytes format or fail with an error, never a panic.
func FuzzRFC2253(f *testing.F) {
	for _, seq := range []pkix.RDNSequence{
		{rdn(atv(oidOU, "edge")), rdn(atv(oidCN, "device-7"))},
		{rdn(atv(oidEmail, "a@b"), atv(oidCN, "x,y"))},
	} {
		raw, err := asn1.Marshal(seq)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add([]byte{0x30, 0x00})
	f.Fuzz(func(t *testing.T, raw []byte) {
		rfc2253(raw)
	})
}

// clientCert issues a client certificate whose subject is subject.
func clientCert(t *testing.T, ca *testcert.CA, subject pkix.Name) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// who is a session's principal and host, as a handler saw them.
type who struct{ principal, host string }

// principalServer serves Metadata on l (TLS with client certificates
// verified if given) and reports each caller's principal and host.
func principalServer(t *testing.T, l Listener) (*testServer, <-chan who) {
	t.Helper()
	seen := make(chan who, 4)
	table := testTable(metadataRow(func(s *Server, req *Request) (Pending, error) {
		seen <- who{req.Session.Principal(), req.Session.Host()}
		return Respond(metadataResponse(req)), nil
	}))
	logs := newLogRecorder(t)
	s, err := newServer(ServerConfig{Logger: slog.New(logs)}, nil, table)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.ServeListener(ln, l) }()
	t.Cleanup(func() {
		s.Close()
		<-served
	})
	return &testServer{Server: s, addr: ln.Addr().String(), logs: logs}, seen
}

// TestPrincipals: a session without SASL and without a client certificate
// is User:ANONYMOUS; one with a certificate is User: and its subject in
// RFC 2253 form, or what the listener's MapPrincipal makes of it; the host
// is the client's IP address.
func TestPrincipals(t *testing.T) {
	ca := testcert.NewCA(t, "wren test CA")
	serverCert := ca.TLSCertificate(t, "127.0.0.1")
	device := clientCert(t, ca, pkix.Name{CommonName: "device-7", OrganizationalUnit: []string{"edge"}})
	listener := func(mapPrincipal func(string) (string, error)) Listener {
		return Listener{Name: "SSL", TLS: &tls.Config{Certificates: []tls.Certificate{serverCert},
			ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: ca.Pool()}, MapPrincipal: mapPrincipal}
	}
	ask := func(t *testing.T, ts *testServer, seen <-chan who, certs ...tls.Certificate) who {
		t.Helper()
		nc, err := tls.DialWithDialer(&net.Dialer{Timeout: waitTimeout}, "tcp", ts.addr,
			&tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1", Certificates: certs})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		c := &rawClient{t: t, nc: nc}
		c.send(requestFrame(metadataRequest(1), 1, "c"))
		c.readResponse(kmsg.Metadata, 1)
		return recv(t, seen, "the metadata call")
	}

	ts, seen := principalServer(t, listener(nil))
	if w := ask(t, ts, seen, device); w != (who{"User:CN=device-7,OU=edge", "127.0.0.1"}) {
		t.Errorf("with a certificate: %+v", w)
	}
	if w := ask(t, ts, seen); w != (who{AnonymousPrincipal, "127.0.0.1"}) {
		t.Errorf("without a certificate: %+v", w)
	}

	mapped, seen := principalServer(t, listener(func(dn string) (string, error) {
		if dn == "CN=device-7,OU=edge" {
			return "device-7", nil
		}
		return "", errors.New("no rule matches")
	}))
	if w := ask(t, mapped, seen, device); w.principal != "User:device-7" {
		t.Errorf("mapped: %+v", w)
	}
	other := clientCert(t, ca, pkix.Name{CommonName: "stranger"})
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: waitTimeout}, "tcp", mapped.addr,
		&tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1", Certificates: []tls.Certificate{other}})
	if err == nil {
		c := &rawClient{t: t, nc: nc}
		c.send(requestFrame(metadataRequest(1), 1, "c"))
		c.expectClosed()
		nc.Close()
	}
	mapped.logs.waitFor(t, "a close for a subject that maps to no principal", func(r logRecord) bool {
		return r.err() != nil && strings.Contains(r.err().Error(), "no rule matches")
	})

	plain, seen := principalServer(t, Listener{Name: "PLAINTEXT"})
	c := dial(t, plain.addr)
	c.send(requestFrame(metadataRequest(1), 1, "c"))
	c.readResponse(kmsg.Metadata, 1)
	if w := recv(t, seen, "the plaintext call"); w != (who{AnonymousPrincipal, "127.0.0.1"}) {
		t.Errorf("plaintext: %+v", w)
	}
}

// TestHostOf: ACLs name a client by its IP address alone: no port, no
// IPv4-in-IPv6 prefix, no IPv6 brackets.
func TestHostOf(t *testing.T) {
	for _, c := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 5}, "192.0.2.7"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:10.0.0.1"), Port: 5}, "10.0.0.1"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 5}, "2001:db8::1"},
		{&net.UnixAddr{Name: "/run/x", Net: "unix"}, "/run/x"},
		{nil, ""},
	} {
		if got := hostOf(c.addr); got != c.want {
			t.Errorf("%v: %q, want %q", c.addr, got, c.want)
		}
	}
}
