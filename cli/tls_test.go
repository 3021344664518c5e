package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wren-broker/wren/broker"
	"github.com/wren-broker/wren/config"
)

// sslBroker starts a one-node broker whose client listener is SSL with a
// self-signed certificate for 127.0.0.1, and returns its address and the
// certificate's file (the client's trust store).
func sslBroker(t *testing.T) (addr, caFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	caFile = filepath.Join(dir, "ca.pem")
	keystore := filepath.Join(dir, "broker.pem")
	if err := os.WriteFile(caFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keystore, append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k})...), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("test.toml", []byte(fmt.Sprintf(`
[broker]
log.dirs = [%q]
listeners = ["SSL://127.0.0.1:0", "CONTROLLER://127.0.0.1:0"]
[http]
listen = ""
[security]
ssl.keystore.location = %q
`, filepath.Join(dir, "data"), keystore)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.Start(cfg, broker.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b.Addr().String(), caFile
}

// The client commands reach an SSL listener with --tls-truststore; the
// flags are checked before anything is dialled.
func TestClientCommandsOverTLS(t *testing.T) {
	addr, ca := sslBroker(t)
	tlsArgs := []string{"-b", addr, "--tls-truststore", ca, "--timeout", "20s"}
	mustRun(t, "", append([]string{"topic", "create", "secure", "-p", "1", "-r", "1"}, tlsArgs...)...)
	mustRun(t, "one\ntwo\n", append([]string{"produce", "secure"}, tlsArgs...)...)
	r := mustRun(t, "", append([]string{"consume", "secure", "-n", "2"}, tlsArgs...)...)
	if r.stdout != "one\ntwo\n" {
		t.Errorf("consumed %q", r.stdout)
	}
	r = mustFail(t, "", "topic", "list", "-b", addr, "--tls-cert", ca)
	if !strings.Contains(r.stderr, "--tls-cert and --tls-key go together") {
		t.Errorf("stderr %q", r.stderr)
	}
}
