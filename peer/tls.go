package peer

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/wire"
)

// Mutual TLS between the peers. When the CONTROLLER listener speaks SSL
// (Config.TLS), every connection of the layer is TLS both ways: the
// listener requires a client certificate, and every connection a node
// dials (the message channel, replica connections, its identity checks)
// presents this node's certificate and verifies the listener's. Both
// certificates must chain to the trust store, and both must name the
// voter at the other end, by the identity rule:
//
//   - the certificate carries exactly one URI SAN of the form
//     wren://node/ID (NodeURI), and ID is the node id of that end: the id
//     the dialer claims in its handshake, or the id of the voter the
//     dialer meant to reach;
//   - its DNS or IP SANs name that voter's host exactly as
//     controller.quorum.voters gives it (x509 host matching, wildcards
//     included).
//
// The node id is what tells voters apart when they share a host (three
// nodes on one machine, as in tests); the host is what ties the
// certificate to this cluster's voters when a CA signs for other clusters
// too. The cluster itself is the trust store: `wren cluster certs init`
// makes a private CA per cluster, so a node of another cluster, whose
// certificate chains to another CA, fails the TLS handshake. A peer that
// fails either check is refused: its connection closed, a log line
// (ERROR, at most one per remote host and reason each
// refusalLogInterval) on the refusing side, and on the dialing side the
// error of its connection, which says why.
//
// A plaintext connection to a TLS listener is read as the layer's
// plaintext handshake (TLS records begin with byte 0x16, Kafka frames of
// the allowed sizes with 0x00): a probe (probe.go), which a tool sends
// without a certificate, is answered; anything else is refused with a
// message naming the listener's protocol, so a node left on PLAINTEXT
// says why its peers refuse it.

// TLS is the CONTROLLER listener's mutual TLS material, read again at
// each connection, so a reloader that swaps what the functions return
// changes every new connection and none that is open.
type TLS struct {
	// Certificate is this node's certificate and key, presented by the
	// listener and by every connection the node dials.
	Certificate func() *tls.Certificate
	// CAs is the trust store the other end's certificate must chain to.
	CAs func() *x509.CertPool
	// Base carries the TLS versions and cipher suites; nil means TLS 1.2
	// and 1.3 with Go's suites.
	Base *tls.Config
}

// NodeURI is the URI SAN that names node id in a peer certificate.
func NodeURI(id election.NodeID) string { return fmt.Sprintf("wren://node/%d", id) }

// certNodeIDs are the node ids a certificate names with NodeURI SANs.
func certNodeIDs(cert *x509.Certificate) []election.NodeID {
	var out []election.NodeID
	for _, u := range cert.URIs {
		if id, ok := parseNodeURI(u); ok {
			out = append(out, id)
		}
	}
	return out
}

func parseNodeURI(u *url.URL) (election.NodeID, bool) {
	if u.Scheme != "wren" || u.Host != "node" {
		return 0, false
	}
	s, ok := strings.CutPrefix(u.Path, "/")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 {
		return 0, false
	}
	return election.NodeID(n), true
}

// CheckOwnCertificate checks that cert, this node's, passes the identity
// rule for node id at addr, its voter entry: a node with a wrong
// certificate is told so at start (or its reload is refused), rather
// than refused by every peer.
func CheckOwnCertificate(cert *tls.Certificate, id election.NodeID, addr string) error {
	leaf := cert.Leaf
	if leaf == nil {
		if len(cert.Certificate) == 0 {
			return errors.New("no certificate")
		}
		var err error
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return err
		}
	}
	if err := VerifyPeerCertificate(leaf, id, addr); err != nil {
		return fmt.Errorf("this node's certificate cannot serve between the peers: %w (`wren cluster certs` makes ones that can)", err)
	}
	return nil
}

// VerifyPeerCertificate checks the identity rule: cert names node id,
// and the host of addr (the voter's entry, host:port). The chain is
// checked by the TLS handshake before.
func VerifyPeerCertificate(cert *x509.Certificate, id election.NodeID, addr string) error {
	ids := certNodeIDs(cert)
	switch {
	case len(ids) == 0:
		return fmt.Errorf("certificate %q names no node (a URI SAN %s)", cert.Subject.CommonName, NodeURI(id))
	case len(ids) > 1:
		return fmt.Errorf("certificate %q names %d nodes; a peer certificate names one", cert.Subject.CommonName, len(ids))
	case ids[0] != id:
		return fmt.Errorf("certificate %q names node %d, not node %d", cert.Subject.CommonName, ids[0], id)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if err := cert.VerifyHostname(host); err != nil {
		return fmt.Errorf("certificate %q of node %d does not name its voter host %s: %v", cert.Subject.CommonName, id, host, err)
	}
	return nil
}

// IdentityError is a peer refused by the identity rule or by its
// certificate's chain: the other end is not the voter it must be.
type IdentityError struct {
	Node election.NodeID
	Err  error
}

func (e *IdentityError) Error() string {
	return fmt.Sprintf("node %d refused by mutual TLS: %v", e.Node, e.Err)
}
func (e *IdentityError) Unwrap() error { return e.Err }

func (t *TLS) base() *tls.Config {
	if t.Base != nil {
		return t.Base.Clone()
	}
	return &tls.Config{MinVersion: tls.VersionTLS12}
}

// dial opens a connection to node to at addr: TCP, then, when the layer
// speaks TLS, the TLS handshake that checks the listener is that voter.
// raw is the TCP connection, to track and close (closing it never waits
// on a TLS alert to a dead peer); c is the one to read and write.
func (l *Layer) dial(to election.NodeID, addr string) (raw, c net.Conn, err error) {
	raw, err = net.DialTimeout("tcp", addr, l.cfg.DialTimeout)
	if err != nil {
		return nil, nil, err
	}
	deadPeerAfter(raw, l.cfg.DialTimeout)
	if !l.track(raw) {
		raw.Close()
		return nil, nil, net.ErrClosed
	}
	t := l.cfg.TLS
	if t == nil {
		return raw, raw, nil
	}
	cfg := t.base()
	cert := t.Certificate()
	cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	cfg.RootCAs = t.CAs()
	host, _, _ := net.SplitHostPort(addr)
	cfg.ServerName = host
	var idErr error
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			idErr = errors.New("the listener presented no certificate")
		} else {
			idErr = VerifyPeerCertificate(cs.PeerCertificates[0], to, addr)
		}
		return idErr
	}
	tc := tls.Client(raw, cfg)
	raw.SetDeadline(time.Now().Add(l.cfg.DialTimeout))
	if err := tc.Handshake(); err != nil {
		l.untrack(raw)
		var ve *tls.CertificateVerificationError
		if idErr != nil || errors.As(err, &ve) || refusedByTLS(err) {
			// The listener is not the voter, or (TLS 1.2, whose
			// handshake checks both ends) it refused this node's
			// certificate.
			return nil, nil, &IdentityError{Node: to, Err: err}
		}
		return nil, nil, fmt.Errorf("TLS handshake with node %d at %s: %w", to, addr, err)
	}
	return raw, tc, nil
}

// refusedByTLS reports whether err is a TLS alert the other end sent:
// it refused this end's certificate.
func refusedByTLS(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "remote error"
}

// sniffedConn is a connection whose first bytes were read into r to see
// whether it speaks TLS; reads go through r.
type sniffedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *sniffedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// recordTypeHandshake opens every TLS connection's first record.
const recordTypeHandshake = 0x16

// accept returns the connection an accepted raw one carries: raw itself
// when the layer speaks plaintext; else, after the TLS handshake, the TLS
// connection, the peer's certificate and the BatchConn under the TLS
// connection, which gathers the records of a replica response into few
// writes (writeReplicaResponse). A connection that speaks plaintext to a
// TLS listener comes back with a nil certificate and plain set, for the
// handshake to answer a probe and refuse anything else.
func (l *Layer) accept(raw net.Conn) (c net.Conn, cert *x509.Certificate, batch *wire.BatchConn, plain bool, err error) {
	t := l.cfg.TLS
	if t == nil {
		return raw, nil, nil, false, nil
	}
	raw.SetDeadline(time.Now().Add(l.cfg.DialTimeout))
	br := bufio.NewReaderSize(raw, 4096)
	first, err := br.Peek(1)
	if err != nil {
		return nil, nil, nil, false, err
	}
	sc := &sniffedConn{Conn: raw, r: br}
	if first[0] != recordTypeHandshake {
		return sc, nil, nil, true, nil
	}
	cfg := t.base()
	cfg.Certificates = []tls.Certificate{*t.Certificate()}
	cfg.ClientCAs = t.CAs()
	cfg.ClientAuth = tls.RequireAndVerifyClientCert
	// Outside a batch the BatchConn writes straight through: the
	// handshake and the message channel's frames go out as they are made.
	batch = wire.NewBatchConn(sc)
	tc := tls.Server(batch, cfg)
	if err := tc.Handshake(); err != nil {
		l.refused(raw, "tls", "TLS handshake failed: "+err.Error())
		return nil, nil, nil, false, err
	}
	cs := tc.ConnectionState()
	return tc, cs.PeerCertificates[0], batch, false, nil
}

// checkAccepted applies the identity rule to an accepted connection's
// certificate once its handshake says which node it claims: "" when it
// may pass, else why not.
func (l *Layer) checkAccepted(cert *x509.Certificate, plain bool, from election.NodeID) string {
	if l.cfg.TLS == nil {
		return ""
	}
	if plain {
		return fmt.Sprintf("node %d connected in plaintext, but this CONTROLLER listener speaks mutual TLS (listener.security.protocol.map maps it to SSL); "+
			"give every node the same settings", from)
	}
	addr, ok := l.cfg.Voters[from]
	if !ok {
		return fmt.Sprintf("node %d is not a voter of this node's peer set", from)
	}
	if err := VerifyPeerCertificate(cert, from, addr); err != nil {
		return fmt.Sprintf("node %d refused by mutual TLS: %v", from, err)
	}
	return ""
}

// refusalLogInterval is the least time between two log lines about
// refusing the same remote host for the same reason: a refused peer
// retries every few seconds for as long as it runs.
const refusalLogInterval = 30 * time.Second

// refusalLog rate-limits the layer's refusal lines.
type refusalLog struct {
	mu   sync.Mutex
	last map[string]refusalEntry
}

type refusalEntry struct {
	at         time.Time
	suppressed int
}

// refused logs, at ERROR, that the connection from raw's remote was
// refused for reason, unless the same host was refused for the same
// class of reason less than refusalLogInterval ago; the next line says
// how many were not logged. A handshake's refusal is its own class (its
// text names nodes, not connections); failed TLS handshakes are one
// class, since their errors may name the connection's port.
func (l *Layer) refused(raw net.Conn, class, reason string) {
	remote := raw.RemoteAddr().String()
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	key := host + "\x00" + class
	r := &l.refusals
	r.mu.Lock()
	if r.last == nil || len(r.last) > 1024 {
		r.last = map[string]refusalEntry{}
	}
	e, seen := r.last[key]
	now := time.Now()
	if seen && now.Sub(e.at) < refusalLogInterval {
		e.suppressed++
		r.last[key] = e
		r.mu.Unlock()
		return
	}
	r.last[key] = refusalEntry{at: now}
	r.mu.Unlock()
	attrs := []any{"remote", remote, "reason", reason}
	if e.suppressed > 0 {
		attrs = append(attrs, "not_logged_since", e.suppressed)
	}
	l.log.Error("controller listener: refusing peer", attrs...)
}
