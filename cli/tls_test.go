package cli

import (
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wren-broker/wren/broker"
	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/internal/testcert"
)

// sslBroker starts a one-node broker whose client listener is SSL with a
// self-signed certificate for 127.0.0.1, and returns its address and the
// certificate's file (the client's trust store).
func sslBroker(t *testing.T) (addr, caFile string) {
	t.Helper()
	ca := testcert.NewCA(t, "wren test CA")
	certPEM, keyPEM := ca.Issue(t, "127.0.0.1", x509.ExtKeyUsageServerAuth)
	dir := t.TempDir()
	caFile = filepath.Join(dir, "ca.pem")
	keystore := filepath.Join(dir, "broker.pem")
	if err := os.WriteFile(caFile, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keystore, append(certPEM, keyPEM...), 0o600); err != nil {
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
