package cli

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/peer"
)

// certsCluster writes a three-voter config file and returns its path.
func certsCluster(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "wren.toml")
	text := "[broker]\nlog.dirs = [" + quoteTOMLString(filepath.Join(dir, "data")) + "]\n[cluster]\ncontroller.quorum.voters = [\"1@127.0.0.1:9093\", \"2@node-b.example:9093\", \"3@10.0.0.3:9093\"]\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func quoteTOMLString(s string) string { return "'" + s + "'" }

// loadLeaf reads node id's certificate from dir and checks it against
// the identity rule for its voter, and against the trust store.
func loadLeaf(t *testing.T, dir string, id election.NodeID, addr string) *x509.Certificate {
	t.Helper()
	f := filepath.Join(dir, peer.NodeCertFile(id))
	st, err := os.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", f, st.Mode().Perm())
	}
	pair, err := tls.LoadX509KeyPair(f, f)
	if err != nil {
		t.Fatal(err)
	}
	if err := peer.VerifyPeerCertificate(pair.Leaf, id, addr); err != nil {
		t.Errorf("node %d: %v", id, err)
	}
	pool := x509.NewCertPool()
	data, err := os.ReadFile(filepath.Join(dir, peer.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(data)
	if _, err := pair.Leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("node %d: does not chain to ca.pem: %v", id, err)
	}
	return pair.Leaf
}

func countCerts(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return n
		}
		n++
	}
}

// certs init writes the CA and a certificate per voter that passes the
// identity rule, prints config lines that load, and refuses to run twice
// without --force; rotate renews the leaves, and with --new-ca bundles
// the old CA until --drop-old-ca.
func TestClusterCerts(t *testing.T) {
	conf := certsCluster(t)
	dir := filepath.Join(filepath.Dir(conf), "certs")
	voters := map[election.NodeID]string{1: "127.0.0.1:9093", 2: "node-b.example:9093", 3: "10.0.0.3:9093"}
	r := mustRun(t, "", "cluster", "certs", "init", "-c", conf)
	for _, f := range []string{"ca.pem", "ca-key.pem", "node-1.pem", "node-2.pem", "node-3.pem"} {
		if !strings.Contains(r.stderr, "wrote "+filepath.Join(dir, f)) {
			t.Errorf("no progress line for %s:\n%s", f, r.stderr)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "ca-key.pem")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("ca-key.pem: %v %v, want mode 0600", st.Mode(), err)
	}
	leaves := map[election.NodeID]*x509.Certificate{}
	for id, addr := range voters {
		leaves[id] = loadLeaf(t, dir, id, addr)
	}
	// The printed lines, appended to the file, make a config that loads
	// for every node, with the controller listener on SSL.
	orig, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	merged := strings.Replace(string(orig), "[broker]\n", "", 1)
	merged = strings.Replace(r.stdout, "[broker]\n", "[broker]\n"+strings.SplitN(merged, "[cluster]", 2)[0], 1) + "\n[cluster]" + strings.SplitN(merged, "[cluster]", 2)[1]
	withTLS := filepath.Join(filepath.Dir(conf), "tls.toml")
	if err := os.WriteFile(withTLS, []byte(merged), 0o644); err != nil {
		t.Fatal(err)
	}
	for id := range voters {
		cfg, err := config.LoadWith(withTLS, config.Options{NodeID: int32(id)})
		if err != nil {
			t.Fatalf("node %d, config with the printed lines:\n%s\n%v", id, merged, err)
		}
		ssl, ok := cfg.ControllerSSL()
		if !ok || ssl.KeystoreLocation != filepath.Join(dir, peer.NodeCertFile(id)) || ssl.TruststoreLocation != filepath.Join(dir, "ca.pem") {
			t.Fatalf("node %d: controller SSL %v %+v", id, ok, ssl)
		}
	}

	if r := mustFail(t, "", "cluster", "certs", "init", "-c", conf); !strings.Contains(r.stderr, "exists; not replacing") {
		t.Errorf("second init: %s", r.stderr)
	}
	mustRun(t, "", "cluster", "certs", "init", "-c", conf, "--force")

	// Rotation of node 2 only, same CA.
	before := map[election.NodeID]*x509.Certificate{}
	for id, addr := range voters {
		before[id] = loadLeaf(t, dir, id, addr)
	}
	mustRun(t, "", "cluster", "certs", "rotate", "-c", conf, "--node", "2")
	for id, addr := range voters {
		after := loadLeaf(t, dir, id, addr)
		if changed := !after.Equal(before[id]); changed != (id == 2) {
			t.Errorf("node %d: certificate changed %v after rotate --node 2", id, changed)
		}
	}
	// A new CA: ca.pem trusts both until --drop-old-ca.
	r = mustRun(t, "", "cluster", "certs", "rotate", "-c", conf, "--new-ca")
	if !strings.Contains(r.stdout, "--drop-old-ca") {
		t.Errorf("rotate --new-ca does not say how the rotation ends:\n%s", r.stdout)
	}
	if n := countCerts(t, filepath.Join(dir, "ca.pem")); n != 2 {
		t.Fatalf("ca.pem holds %d certificates after --new-ca, want 2", n)
	}
	for id, addr := range voters {
		loadLeaf(t, dir, id, addr)
	}
	mustRun(t, "", "cluster", "certs", "rotate", "-c", conf, "--drop-old-ca")
	if n := countCerts(t, filepath.Join(dir, "ca.pem")); n != 1 {
		t.Fatalf("ca.pem holds %d certificates after --drop-old-ca, want 1", n)
	}
	for id, addr := range voters {
		loadLeaf(t, dir, id, addr)
	}
	if r := mustFail(t, "", "cluster", "certs", "rotate", "-c", conf, "--node", "9"); !strings.Contains(r.stderr, "node 9 is not in controller.quorum.voters") {
		t.Errorf("rotate of a non-voter: %s", r.stderr)
	}
}
