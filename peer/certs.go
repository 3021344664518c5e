package peer

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/wren-broker/wren/election"
)

// The certificates of `wren cluster certs init` and `rotate`: a private
// CA per cluster and one certificate per voter that passes the identity
// rule (tls.go), in one directory:
//
//   - ca.pem: the trust store, every node's ssl.truststore.location: the
//     CA's certificate, and during a CA rotation the old CA's after it
//     (a bundle, so old and new certificates are both trusted);
//   - ca-key.pem (0600): the CA's private key; it stays with the operator
//     and goes on no node;
//   - node-N.pem (0600): node N's certificate and key in one file, its
//     ssl.keystore.location.
//
// Keys are ECDSA P-256 in PKCS#8. Every file is written whole (a
// temporary file renamed over the old), so a node reloading its files
// never reads half of one.

// Names of the files in a certificate directory.
const (
	CAFile    = "ca.pem"
	CAKeyFile = "ca-key.pem"
)

// NodeCertFile is the name of node id's certificate and key file.
func NodeCertFile(id election.NodeID) string { return fmt.Sprintf("node-%d.pem", id) }

// Default validities of `wren cluster certs`.
const (
	DefaultLeafValidity = 825 * 24 * time.Hour
	DefaultCAValidity   = 3650 * 24 * time.Hour
)

// CertsOptions say what `wren cluster certs` writes and where.
type CertsOptions struct {
	// Dir holds the files; created (0700) when missing.
	Dir string
	// Voters are controller.quorum.voters: id to host:port.
	Voters map[election.NodeID]string
	// Nodes, when not empty, limits a rotation to these voters.
	Nodes []election.NodeID
	// LeafValidity and CAValidity: 0 means the defaults.
	LeafValidity, CAValidity time.Duration
	// Force lets init replace files that exist.
	Force bool
	// Wrote, if set, is told of each file once written, with what it is.
	Wrote func(path, what string)
}

func (o *CertsOptions) defaults() {
	if o.LeafValidity <= 0 {
		o.LeafValidity = DefaultLeafValidity
	}
	if o.CAValidity <= 0 {
		o.CAValidity = DefaultCAValidity
	}
}

func (o *CertsOptions) wrote(path, what string) {
	if o.Wrote != nil {
		o.Wrote(path, what)
	}
}

// InitCerts makes a new CA and one certificate per voter in o.Dir. It
// refuses to replace any file there without o.Force.
func InitCerts(o CertsOptions) error {
	o.defaults()
	if len(o.Voters) == 0 {
		return errors.New("peer: no voters to make certificates for (controller.quorum.voters)")
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return err
	}
	ids := slices.Sorted(maps.Keys(o.Voters))
	if !o.Force {
		names := []string{CAFile, CAKeyFile}
		for _, id := range ids {
			names = append(names, NodeCertFile(id))
		}
		for _, n := range names {
			if _, err := os.Stat(filepath.Join(o.Dir, n)); err == nil {
				return fmt.Errorf("peer: %s exists; not replacing the certificates in %s (use rotate to renew them, or --force to start over)", filepath.Join(o.Dir, n), o.Dir)
			}
		}
	}
	ca, key, err := newCA(o.CAValidity)
	if err != nil {
		return err
	}
	if err := writeCA(&o, ca, key, nil); err != nil {
		return err
	}
	return issueAll(&o, ids, ca, key)
}

// RotateCerts issues new certificates for the voters (o.Nodes, or all)
// from the CA in o.Dir; with newCA, from a new CA first, whose
// certificate leads ca.pem with the old ones after it, so that nodes
// trust both while their certificates are replaced one at a time.
func RotateCerts(o CertsOptions, withNewCA bool) error {
	o.defaults()
	ca, key, bundle, err := readCA(o.Dir)
	if err != nil {
		return err
	}
	if withNewCA {
		old := bundle
		if ca, key, err = newCA(o.CAValidity); err != nil {
			return err
		}
		if err := writeCA(&o, ca, key, old); err != nil {
			return err
		}
	}
	ids := o.Nodes
	if len(ids) == 0 {
		ids = slices.Sorted(maps.Keys(o.Voters))
	}
	for _, id := range ids {
		if _, ok := o.Voters[id]; !ok {
			return fmt.Errorf("peer: node %d is not in controller.quorum.voters", id)
		}
	}
	return issueAll(&o, ids, ca, key)
}

// DropOldCAs rewrites ca.pem with only the CA whose key is ca-key.pem:
// the end of a CA rotation, once every node presents a certificate of
// the new CA.
func DropOldCAs(o CertsOptions) error {
	ca, key, _, err := readCA(o.Dir)
	if err != nil {
		return err
	}
	return writeCA(&o, ca, key, nil)
}

func serialNumber() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

func newCA(validity time.Duration) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	sn, err := serialNumber()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: "wren cluster CA " + now.UTC().Format("2006-01-02T15:04:05Z")},
		NotBefore:    now.Add(-time.Hour), NotAfter: now.Add(validity),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

// IssueNodeCert makes node id's certificate for the voter at addr
// (host:port), signed by ca: the URI SAN NodeURI(id) and the host as a
// DNS or IP SAN, for server and client authentication. It returns the
// certificate and its key in PEM, in one block of text.
func IssueNodeCert(ca *x509.Certificate, caKey *ecdsa.PrivateKey, id election.NodeID, addr string, validity time.Duration) ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	sn, err := serialNumber()
	if err != nil {
		return nil, err
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	u, err := url.Parse(NodeURI(id))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: sn, Subject: pkix.Name{CommonName: fmt.Sprintf("wren node %d", id)},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(validity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		URIs:        []*url.URL{u},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	if tmpl.NotAfter.After(ca.NotAfter) {
		tmpl.NotAfter = ca.NotAfter
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	out := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return append(out, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k})...), nil
}

func issueAll(o *CertsOptions, ids []election.NodeID, ca *x509.Certificate, key *ecdsa.PrivateKey) error {
	for _, id := range ids {
		data, err := IssueNodeCert(ca, key, id, o.Voters[id], o.LeafValidity)
		if err != nil {
			return fmt.Errorf("peer: certificate of node %d: %w", id, err)
		}
		path := filepath.Join(o.Dir, NodeCertFile(id))
		if err := writeFileAtomic(path, data, 0o600); err != nil {
			return err
		}
		o.wrote(path, fmt.Sprintf("node %d's certificate and key (%s, %s), valid until %s",
			id, NodeURI(id), o.Voters[id], time.Now().Add(o.LeafValidity).UTC().Format("2006-01-02")))
	}
	return nil
}

// writeCA writes ca.pem, then ca-key.pem: ca.pem holds the CA and then
// older CAs' certificates, which it still trusts. In that order a
// rotation cut short leaves the old key with a ca.pem that still holds
// its certificate, which rotate can read again.
func writeCA(o *CertsOptions, ca *x509.Certificate, key *ecdsa.PrivateKey, older []*x509.Certificate) error {
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})
	n := 1
	for _, c := range older {
		if bytes.Equal(c.Raw, ca.Raw) || time.Now().After(c.NotAfter) {
			continue
		}
		data = append(data, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
		n++
	}
	path := filepath.Join(o.Dir, CAFile)
	if err := writeFileAtomic(path, data, 0o644); err != nil {
		return err
	}
	what := fmt.Sprintf("the trust store: the CA %q, valid until %s", ca.Subject.CommonName, ca.NotAfter.UTC().Format("2006-01-02"))
	if n > 1 {
		what += fmt.Sprintf(", and %d older CA(s) trusted until the rotation ends", n-1)
	}
	o.wrote(path, what)
	keyPath := filepath.Join(o.Dir, CAKeyFile)
	if err := writeFileAtomic(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k}), 0o600); err != nil {
		return err
	}
	o.wrote(keyPath, "the CA's private key: keep it off the nodes")
	return nil
}

// readCA reads the CA of dir: its certificate (the one whose key is
// ca-key.pem), key, and every certificate of ca.pem.
func readCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, []*x509.Certificate, error) {
	certPath, keyPath := filepath.Join(dir, CAFile), filepath.Join(dir, CAKeyFile)
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("peer: the CA: %w (run init first)", err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("peer: the CA's key: %w", err)
	}
	b, _ := pem.Decode(keyPEM)
	if b == nil {
		return nil, nil, nil, fmt.Errorf("peer: %s holds no PEM key", keyPath)
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("peer: %s: %w", keyPath, err)
	}
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, nil, nil, fmt.Errorf("peer: %s: not an ECDSA key", keyPath)
	}
	var all []*x509.Certificate
	var ca *x509.Certificate
	for rest := certPEM; ; {
		var blk *pem.Block
		if blk, rest = pem.Decode(rest); blk == nil {
			break
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("peer: %s: %w", certPath, err)
		}
		all = append(all, c)
		if pub, ok := c.PublicKey.(*ecdsa.PublicKey); ok && pub.Equal(&key.PublicKey) && ca == nil {
			ca = c
		}
	}
	if ca == nil {
		return nil, nil, nil, fmt.Errorf("peer: no certificate of %s goes with the key in %s", certPath, keyPath)
	}
	return ca, key, all, nil
}

// writeFileAtomic writes data to a temporary file beside path, syncs
// it, and renames it over path.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
