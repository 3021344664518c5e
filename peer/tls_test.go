package peer

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/wire"
)

// certDir runs InitCerts for voters into a fresh directory.
func certDir(t *testing.T, voters map[election.NodeID]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "certs")
	if err := InitCerts(CertsOptions{Dir: dir, Voters: voters}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// swappableTLS is a TLS whose certificate and trust store a test
// replaces, as the broker's reloader does.
type swappableTLS struct {
	cert atomic.Pointer[tls.Certificate]
	cas  atomic.Pointer[x509.CertPool]
	base *tls.Config
}

func (s *swappableTLS) load(t testing.TB, keystore, truststore string) {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(keystore, keystore)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(truststore)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		t.Fatalf("%s holds no certificate", truststore)
	}
	s.cert.Store(&cert)
	s.cas.Store(pool)
}

func (s *swappableTLS) config() *TLS {
	return &TLS{Certificate: s.cert.Load, CAs: s.cas.Load, Base: s.base}
}

// tlsLayers starts one layer per listener, node i with dir's
// node-i.pem, and returns them with their TLS material and the log.
func tlsLayers(t *testing.T, lns []net.Listener, voters map[election.NodeID]string, dir string, base ...*tls.Config) ([]*Layer, []*swappableTLS, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	var layers []*Layer
	var mats []*swappableTLS
	for i := range lns {
		id := election.NodeID(i + 1)
		m := &swappableTLS{}
		if len(base) > 0 {
			m.base = base[0]
		}
		m.load(t, filepath.Join(dir, NodeCertFile(id)), filepath.Join(dir, CAFile))
		l, err := start(Config{ID: id, Voters: voters, Listener: lns[i], Logger: logger, TLS: m.config(),
			BackoffMin: 5 * time.Millisecond, BackoffMax: 50 * time.Millisecond},
			func(election.NodeID, uint64, kmsg.Request) *wire.Body { return nil })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		layers = append(layers, l)
		mats = append(mats, m)
	}
	return layers, mats, logs
}

// Three voters over mutual TLS with certificates from InitCerts connect
// to each other, in TLS 1.3 and in TLS 1.2 alone; a probe in plaintext
// is still answered.
func TestTLSPeersConnect(t *testing.T) {
	t.Run("TLS 1.3", func(t *testing.T) { testTLSPeersConnect(t, nil) })
	t.Run("TLS 1.2", func(t *testing.T) {
		testTLSPeersConnect(t, &tls.Config{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12})
	})
}

func testTLSPeersConnect(t *testing.T, base *tls.Config) {
	lns, voters := listeners(t, 3)
	dir := certDir(t, voters)
	layers, _, _ := tlsLayers(t, lns, voters, dir, base)
	waitFor(t, "every node connected to every other", 10*time.Second, func() bool {
		for i, l := range layers {
			for j := range layers {
				if i != j && !l.Connected(election.NodeID(j+1)) {
					return false
				}
			}
		}
		return true
	})
	if id, ok := Probe(context.Background(), voters[2]); !ok || id != 2 {
		t.Fatalf("probe of a TLS listener: node %d, ok %v; want node 2", id, ok)
	}
}

// A peer whose certificate comes from another CA, one whose certificate
// names another node, and one that speaks plaintext are refused, with a
// log line on the refusing node that says why; the voters stay connected.
func TestTLSPeersRefused(t *testing.T) {
	lns, voters := listeners(t, 3)
	dir := certDir(t, voters)
	other := certDir(t, voters) // another cluster's CA, same voters
	layers, _, logs := tlsLayers(t, lns[:2], voters, dir)
	waitFor(t, "nodes 1 and 2 connected", 10*time.Second, func() bool { return layers[0].Connected(2) && layers[1].Connected(1) })
	lns[2].Close()

	for _, tc := range []struct {
		name, keystore, truststore string
		id                         election.NodeID
		want                       string
	}{
		{"another CA", filepath.Join(other, NodeCertFile(3)), filepath.Join(other, CAFile), 3, "TLS handshake failed"},
		{"another node's certificate", filepath.Join(dir, NodeCertFile(1)), filepath.Join(dir, CAFile), 3, "names node 1, not node 3"},
		{"plaintext", "", "", 3, "connected in plaintext"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			cfg := Config{ID: tc.id, Voters: voters, Listener: ln, Logger: slog.New(slog.DiscardHandler),
				BackoffMin: 5 * time.Millisecond, BackoffMax: 50 * time.Millisecond}
			if tc.keystore != "" {
				m := &swappableTLS{}
				m.load(t, tc.keystore, tc.truststore)
				cfg.TLS = m.config()
			}
			l, err := start(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			waitFor(t, "a refusal logged: "+tc.want, 10*time.Second, func() bool { return strings.Contains(logs.String(), tc.want) })
			if l.Connected(1) || l.Connected(2) {
				t.Fatalf("the intruder is connected")
			}
			if _, err := l.DialReplica(1); err == nil {
				t.Fatalf("the intruder opened a replica connection")
			}
		})
	}
	if !layers[0].Connected(2) || !layers[1].Connected(1) {
		t.Fatal("the voters lost each other")
	}
}

// The identity rule: the node URI must be the node's, and only it; the
// host must be the voter's.
func TestVerifyPeerCertificate(t *testing.T) {
	voters := map[election.NodeID]string{1: "127.0.0.1:9093", 2: "node-b.example:9093"}
	dir := certDir(t, voters)
	leaf := func(id election.NodeID) *x509.Certificate {
		c, err := tls.LoadX509KeyPair(filepath.Join(dir, NodeCertFile(id)), filepath.Join(dir, NodeCertFile(id)))
		if err != nil {
			t.Fatal(err)
		}
		return c.Leaf
	}
	for _, tc := range []struct {
		cert *x509.Certificate
		id   election.NodeID
		addr string
		want string
	}{
		{leaf(1), 1, "127.0.0.1:9093", ""},
		{leaf(2), 2, "node-b.example:9093", ""},
		{leaf(1), 2, "127.0.0.1:9093", "names node 1, not node 2"},
		{leaf(1), 1, "127.0.0.2:9093", "does not name its voter host 127.0.0.2"},
		{leaf(2), 2, "node-c.example:9093", "does not name its voter host node-c.example"},
	} {
		err := VerifyPeerCertificate(tc.cert, tc.id, tc.addr)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("node %d at %s: %v, want %q", tc.id, tc.addr, err, tc.want)
		}
	}
}

// New certificates swapped in (same CA; then a new CA whose bundle the
// trust store holds with the old one) serve the next connections, with
// no restart.
func TestTLSRotation(t *testing.T) {
	lns, voters := listeners(t, 2)
	dir := certDir(t, voters)
	layers, mats, _ := tlsLayers(t, lns, voters, dir)
	connected := func() bool { return layers[0].Connected(2) && layers[1].Connected(1) }
	waitFor(t, "connected", 10*time.Second, connected)
	check := func(what string) {
		t.Helper()
		rc, err := layers[0].DialReplica(2)
		if err != nil {
			t.Fatalf("%s: replica connection: %v", what, err)
		}
		rc.Close()
	}
	if err := RotateCerts(CertsOptions{Dir: dir, Voters: voters}, false); err != nil {
		t.Fatal(err)
	}
	for i, m := range mats {
		m.load(t, filepath.Join(dir, NodeCertFile(election.NodeID(i+1))), filepath.Join(dir, CAFile))
	}
	check("new leaves of the same CA")

	if err := RotateCerts(CertsOptions{Dir: dir, Voters: voters}, true); err != nil {
		t.Fatal(err)
	}
	// The bundle goes to every node first: a node that trusts only the
	// old CA would refuse a new leaf.
	for _, m := range mats {
		old := m.cert.Load()
		m.load(t, filepath.Join(dir, NodeCertFile(1)), filepath.Join(dir, CAFile))
		m.cert.Store(old) // the trust store only
	}
	check("the bundle everywhere, old leaves")
	mats[0].load(t, filepath.Join(dir, NodeCertFile(1)), filepath.Join(dir, CAFile))
	check("node 1 on the new CA, node 2 on the old")
	mats[1].load(t, filepath.Join(dir, NodeCertFile(2)), filepath.Join(dir, CAFile))
	check("both on the new CA")
	if err := DropOldCAs(CertsOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	for i, m := range mats {
		m.load(t, filepath.Join(dir, NodeCertFile(election.NodeID(i+1))), filepath.Join(dir, CAFile))
	}
	check("the old CA dropped")
	if !connected() {
		t.Fatal("the message channel dropped during the rotation")
	}
}

// A node refused by its peers' TLS says so at ERROR, naming the peer.
func TestTLSRefusedDialerLogs(t *testing.T) {
	lns, voters := listeners(t, 2)
	dir := certDir(t, voters)
	other := certDir(t, voters)
	tlsLayers(t, lns[:1], voters, dir)
	logs := &syncBuffer{}
	m := &swappableTLS{}
	// Trusts the cluster's CA, presents another's certificate.
	m.load(t, filepath.Join(other, NodeCertFile(2)), filepath.Join(dir, CAFile))
	l, err := start(Config{ID: 2, Voters: voters, Listener: lns[1], Logger: slog.New(slog.NewTextHandler(logs, nil)), TLS: m.config(),
		BackoffMin: 5 * time.Millisecond, BackoffMax: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	waitFor(t, "the refused node logs why", 10*time.Second, func() bool {
		return strings.Contains(logs.String(), "level=ERROR") && strings.Contains(logs.String(), "refused this node's certificate")
	})
}
