package broker

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/peer"
	"github.com/wren-broker/wren/wire"
)

// Mutual TLS between the peers: three nodes whose CONTROLLER listener
// speaks SSL with the certificates of `wren cluster certs init`
// (peer.InitCerts, which the command calls).

// peerTLSCluster is three nodes over mutual TLS: their voters, the
// certificate directory each node reads (one shared, or one per node),
// and their logs.
type peerTLSCluster struct {
	t       *testing.T
	ports   []int
	voters  map[election.NodeID]string
	certs   string   // the directory init and rotate write
	nodeDir []string // the directory node i+1 reads: ca.pem and node-N.pem
	dataDir []string
	logs    []*lockedBuffer
	brokers []*Broker
}

// newPeerTLSCluster makes the certificates; perNode gives each node its
// own copy of its files (an operator's copies), else all read certs.
func newPeerTLSCluster(t *testing.T, perNode bool) *peerTLSCluster {
	t.Helper()
	c := &peerTLSCluster{t: t, ports: freePorts(t, 3), voters: map[election.NodeID]string{}}
	for i, p := range c.ports {
		c.voters[election.NodeID(i+1)] = fmt.Sprintf("127.0.0.1:%d", p)
	}
	root := t.TempDir()
	c.certs = filepath.Join(root, "certs")
	if err := peer.InitCerts(peer.CertsOptions{Dir: c.certs, Voters: c.voters}); err != nil {
		t.Fatal(err)
	}
	for id := 1; id <= 3; id++ {
		d := c.certs
		if perNode {
			d = filepath.Join(root, fmt.Sprintf("node%d", id))
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		c.nodeDir = append(c.nodeDir, d)
		c.dataDir = append(c.dataDir, filepath.Join(t.TempDir(), "data"))
		c.logs = append(c.logs, &lockedBuffer{})
		if perNode {
			c.install(id, peer.CAFile)
			c.install(id, peer.NodeCertFile(election.NodeID(id)))
		}
	}
	c.brokers = make([]*Broker, 3)
	t.Cleanup(func() {
		for _, b := range c.brokers {
			if b != nil {
				b.Close()
			}
		}
	})
	return c
}

// install copies a file of the certificate directory to node id's, as
// an operator does: written beside, renamed over.
func (c *peerTLSCluster) install(id int, name string) {
	c.t.Helper()
	data, err := os.ReadFile(filepath.Join(c.certs, name))
	if err != nil {
		c.t.Fatal(err)
	}
	writeAtomically(c.t, filepath.Join(c.nodeDir[id-1], name), data)
}

func (c *peerTLSCluster) configText(id int) string {
	text := quorumConfigText(id, c.dataDir[id-1], c.ports)
	text = strings.Replace(text, "[broker]\n", "[broker]\nlistener.security.protocol.map = \"PLAINTEXT:PLAINTEXT,CONTROLLER:SSL\"\n", 1)
	return text + fmt.Sprintf("[security]\nlistener.name.controller.ssl.keystore.location = %q\nlistener.name.controller.ssl.truststore.location = %q\n",
		filepath.Join(c.nodeDir[id-1], peer.NodeCertFile(election.NodeID(id))), filepath.Join(c.nodeDir[id-1], peer.CAFile))
}

func (c *peerTLSCluster) start(id int) {
	c.t.Helper()
	cfg, err := config.Parse(fmt.Sprintf("node%d.toml", id), []byte(c.configText(id)))
	if err != nil {
		c.t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(c.logs[id-1], &slog.HandlerOptions{Level: slog.LevelDebug}))
	b, err := Start(cfg, Options{Logger: logger, TLSReloadInterval: 20 * time.Millisecond})
	if err != nil {
		c.t.Fatalf("start node %d: %v\n%s", id, err, c.logs[id-1])
	}
	c.brokers[id-1] = b
}

func (c *peerTLSCluster) startAll() {
	c.t.Helper()
	for id := 1; id <= 3; id++ {
		c.start(id)
	}
	c.waitRegistered(c.brokers)
}

func (c *peerTLSCluster) waitRegistered(brokers []*Broker) {
	c.t.Helper()
	pollFor(c.t, "one controller known to all, three brokers registered", 30*time.Second, func() bool {
		ctrl := brokers[0].Controller().ControllerID()
		for _, b := range brokers {
			if ctrl < 0 || b.Controller().ControllerID() != ctrl || len(b.Controller().Brokers()) != 3 {
				return false
			}
		}
		return true
	})
}

func (c *peerTLSCluster) live() []*Broker {
	var out []*Broker
	for _, b := range c.brokers {
		if b != nil {
			out = append(out, b)
		}
	}
	return out
}

// leaf reads node id's certificate in the certificate directory.
func (c *peerTLSCluster) leaf(dir string, id election.NodeID) tls.Certificate {
	c.t.Helper()
	f := filepath.Join(dir, peer.NodeCertFile(id))
	pair, err := tls.LoadX509KeyPair(f, f)
	if err != nil {
		c.t.Fatal(err)
	}
	return pair
}

func (c *peerTLSCluster) pool(dir string) *x509.CertPool {
	c.t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, peer.CAFile))
	if err != nil {
		c.t.Fatal(err)
	}
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(data)
	return p
}

// handshakeAs connects to node to's CONTROLLER listener as a peer would,
// presenting cert and claiming node from, and returns the listener's
// certificate and its handshake answer (or the error that ended the
// connection).
func handshakeAs(t *testing.T, addr string, cert tls.Certificate, roots *x509.CertPool, voters map[election.NodeID]string, from, to election.NodeID) (*x509.Certificate, peer.Handshake, error) {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots, ServerName: "127.0.0.1"})
	if err != nil {
		return nil, peer.Handshake{}, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	server := c.ConnectionState().PeerCertificates[0]
	frame := wire.AppendRequestHeader(make([]byte, 4, 64), peer.APIKeyHandshake, 0, 7, "wren-quorum-"+strconv.Itoa(int(from)), false)
	frame = peer.AppendHandshake(frame, peer.Handshake{PeerSetHash: peer.PeerSetHash(voters), From: from, To: to})
	if err := wire.WriteFrame(c, frame); err != nil {
		return server, peer.Handshake{}, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return server, peer.Handshake{}, err
	}
	resp := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, resp); err != nil || len(resp) < 4 {
		return server, peer.Handshake{}, fmt.Errorf("response: %v", err)
	}
	h, err := peer.DecodeHandshake(resp[4:])
	return server, h, err
}

// A three-node cluster over mutual TLS elects a controller, replicates an
// acks=all topic (the replica connections are TLS: their records are
// copied, not sent with sendfile), and fails over when the leader stops;
// peers with a certificate of another CA, naming another node or a
// non-voter, or naming no voter host, are refused with a log line, and
// the cluster carries on.
func TestPeerTLSThreeNodes(t *testing.T) {
	c := newPeerTLSCluster(t, false)
	c.startAll()
	brokers := c.live()
	cl, adm := threeNodeAdmin(t, brokers)
	createReplicatedTopic(t, brokers, adm, "secure-peers", 1)
	ctx := testContext(t)

	_, copiedBefore := wire.SendFileStats()
	const n = 200
	for i := range n {
		r := &kgo.Record{Topic: "secure-peers", Key: []byte(strconv.Itoa(i)), Value: recordValue(i, 4096)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d (acks=all): %v", i, err)
		}
	}
	if _, copied := wire.SendFileStats(); copied-copiedBefore < n*4096 {
		t.Errorf("replication copied %d bytes through TLS, want at least %d", copied-copiedBefore, n*4096)
	}
	// Then records large enough that a follower's fetch answer spans many
	// TLS records, which the leader gathers into few writes: they must
	// come out of the followers byte for byte (checked after the
	// failover, from a former follower's log).
	const big, bigSize = 24, 96 << 10
	var bigRecords []*kgo.Record
	for i := n; i < n+big; i++ {
		bigRecords = append(bigRecords, &kgo.Record{Topic: "secure-peers", Key: []byte(strconv.Itoa(i)), Value: recordValue(i, bigSize)})
	}
	if err := cl.ProduceSync(ctx, bigRecords...).FirstErr(); err != nil {
		t.Fatalf("produce %d records of %d bytes (acks=all): %v", big, bigSize, err)
	}

	// The intruders, against node 1, while the cluster runs.
	other := filepath.Join(t.TempDir(), "other")
	if err := peer.InitCerts(peer.CertsOptions{Dir: other, Voters: c.voters}); err != nil {
		t.Fatal(err)
	}
	nonVoter := issueFromClusterCA(t, c.certs, 4, c.voters[2])
	wrongHost := issueFromClusterCA(t, c.certs, 2, "127.0.0.2:1")
	for _, tc := range []struct {
		name  string
		cert  tls.Certificate
		roots *x509.CertPool
		want  string
	}{
		{"another CA", c.leaf(other, 2), c.pool(other), "TLS handshake failed"},
		{"another node's certificate", c.leaf(c.certs, 3), c.pool(c.certs), "names node 3, not node 2"},
		{"a non-voter's certificate", nonVoter, c.pool(c.certs), "names node 4, not node 2"},
		{"not the voter's host", wrongHost, c.pool(c.certs), "does not name its voter host 127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, h, err := handshakeAs(t, c.voters[1], tc.cert, tc.roots, c.voters, 2, 1)
			if err == nil && h.ErrorCode == 0 {
				t.Fatalf("node 1 accepted the intruder as node 2")
			}
			pollFor(t, "node 1 logs the refusal: "+tc.want, 10*time.Second, func() bool {
				return strings.Contains(c.logs[0].String(), tc.want)
			})
		})
	}
	// The genuine certificate passes the same way.
	if _, h, err := handshakeAs(t, c.voters[1], c.leaf(c.certs, 2), c.pool(c.certs), c.voters, 2, 1); err != nil || h.ErrorCode != 0 {
		t.Fatalf("node 2's own certificate: %v %+v", err, h)
	}

	// Fail over: the leader stops; a follower leads, with every record.
	leader := brokers[0].Controller().Image().Topic("secure-peers").Partitions[0].Leader
	c.brokers[leader-1].Close()
	c.brokers[leader-1] = nil
	rest := c.live()
	pollFor(t, "a new leader of secure-peers", 20*time.Second, func() bool {
		p := rest[0].Controller().Image().Topic("secure-peers").Partitions[0]
		return p.Leader >= 0 && p.Leader != leader
	})
	var seeds []string
	for _, b := range rest {
		seeds = append(seeds, b.Addr().String())
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("secure-peers"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	got := 0
	for got < n+big {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d after the failover: %v", got, n+big, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Key) != strconv.Itoa(got) {
				t.Fatalf("record %d has key %s", got, r.Key)
			}
			size := 4096
			if got >= n {
				size = bigSize
			}
			if !bytes.Equal(r.Value, recordValue(got, size)) {
				t.Fatalf("record %d: %d bytes of value differ from the %d produced", got, len(r.Value), size)
			}
			got++
		})
	}
}

// issueFromClusterCA makes a certificate of the cluster's CA for node id
// at addr, as someone holding the CA key could.
func issueFromClusterCA(t *testing.T, dir string, id election.NodeID, addr string) tls.Certificate {
	t.Helper()
	caPair, err := tls.LoadX509KeyPair(filepath.Join(dir, peer.CAFile), filepath.Join(dir, peer.CAKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	pem, err := peer.IssueNodeCert(caPair.Leaf, caPair.PrivateKey.(*ecdsa.PrivateKey), id, addr, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(pem, pem)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

// probeTLS sends a probe over TLS to addr with cert: the listener's
// certificate when it answers (its TLS handshake took cert), else the
// error.
func probeTLS(t *testing.T, addr string, cert tls.Certificate, roots *x509.CertPool) (*x509.Certificate, error) {
	t.Helper()
	server, h, err := handshakeAs(t, addr, cert, roots, nil, peer.ProbeNodeID, 0)
	if err != nil {
		return nil, err
	}
	if h.From < 0 {
		return nil, fmt.Errorf("no node id in the probe's answer: %+v", h)
	}
	return server, nil
}

// Certificates replaced on the nodes one at a time, as `wren cluster
// certs rotate` says (new leaves of the same CA; then a new CA, its
// bundle everywhere first, the leaves one node at a time, the old CA
// dropped), are picked up without a restart: each node serves its new
// certificate and trusts what it must, acks=all keeps working, and a
// node that then starts (so every connection to it is new) joins the
// nodes that only reloaded.
func TestPeerTLSRotation(t *testing.T) {
	c := newPeerTLSCluster(t, true)
	c.startAll()
	brokers := c.live()
	cl, adm := threeNodeAdmin(t, brokers)
	createReplicatedTopic(t, brokers, adm, "rotated", 1)
	ctx := testContext(t)
	produced := 0
	produce := func(what string) {
		t.Helper()
		r := &kgo.Record{Topic: "rotated", Value: []byte(what)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce (acks=all) %s: %v", what, err)
		}
		produced++
	}
	produce("before")
	// serves waits until node id presents its certificate of the
	// certificate directory, as seen by a client holding another node's.
	serves := func(id election.NodeID) {
		t.Helper()
		want := c.leaf(c.certs, id).Leaf
		client := c.leaf(c.certs, id%3+1)
		pollFor(t, fmt.Sprintf("node %d serving its new certificate", id), 10*time.Second, func() bool {
			got, err := probeTLS(t, c.voters[id], client, c.pool(c.certs))
			return err == nil && got.Equal(want)
		})
	}

	// New leaves, same CA, one node at a time.
	if err := peer.RotateCerts(peer.CertsOptions{Dir: c.certs, Voters: c.voters}, false); err != nil {
		t.Fatal(err)
	}
	for id := 1; id <= 3; id++ {
		c.install(id, peer.NodeCertFile(election.NodeID(id)))
		serves(election.NodeID(id))
		produce(fmt.Sprintf("node %d on its new leaf", id))
	}

	// A new CA.
	oldClient := c.leaf(c.certs, 1)
	oldPool := c.pool(c.certs)
	if err := peer.RotateCerts(peer.CertsOptions{Dir: c.certs, Voters: c.voters}, true); err != nil {
		t.Fatal(err)
	}
	newClient := c.leaf(c.certs, 1)
	for id := 1; id <= 3; id++ {
		c.install(id, peer.CAFile)
		pollFor(t, fmt.Sprintf("node %d trusting the new CA", id), 10*time.Second, func() bool {
			_, err := probeTLS(t, c.voters[election.NodeID(id)], newClient, oldPool)
			return err == nil
		})
	}
	for id := 1; id <= 3; id++ {
		c.install(id, peer.NodeCertFile(election.NodeID(id)))
		serves(election.NodeID(id))
		produce(fmt.Sprintf("node %d on the new CA", id))
	}
	if err := peer.DropOldCAs(peer.CertsOptions{Dir: c.certs}); err != nil {
		t.Fatal(err)
	}
	// No node refused a peer so far. The probes below with the old CA are
	// refused on purpose: their client (Go's, holding a certificate no
	// longer of an acceptable CA) sends none, which no node does (a node
	// always presents its own), and the refusal may be logged after the
	// probe returns.
	checkNoRefusals := func(from []int) {
		t.Helper()
		for i := range c.logs {
			l := grepLines(c.logs[i].String()[from[i]:], "refusing peer")
			if l = grepLinesNot(l, "client didn't provide a certificate"); l != "" {
				t.Errorf("node %d refused a peer during the rotation:\n%s", i+1, l)
			}
		}
	}
	checkNoRefusals([]int{0, 0, 0})
	for id := 1; id <= 3; id++ {
		c.install(id, peer.CAFile)
		pollFor(t, fmt.Sprintf("node %d refusing the old CA", id), 10*time.Second, func() bool {
			_, err := probeTLS(t, c.voters[election.NodeID(id)], oldClient, c.pool(c.certs))
			return err != nil
		})
	}
	produce("old CA dropped")

	// Node 3 starts again: every connection to and from it is new, with
	// the certificates nodes 1 and 2 reloaded.
	var marks []int
	for i := range c.logs {
		marks = append(marks, len(c.logs[i].String()))
	}
	c.brokers[2].Close()
	c.brokers[2] = nil
	c.start(3)
	c.waitRegistered(c.live())
	pollFor(t, "node 3 back in the ISR", 20*time.Second, func() bool {
		p := c.brokers[0].Controller().Image().Topic("rotated").Partitions[0]
		return len(p.ISR) == 3
	})
	produce("node 3 restarted")
	checkNoRefusals(marks)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func grepLinesNot(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" && !strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// A node whose own certificate does not name it refuses to start, naming
// the setting and why, rather than being refused by every peer.
func TestPeerTLSWrongOwnCertificate(t *testing.T) {
	c := newPeerTLSCluster(t, true)
	data, err := os.ReadFile(filepath.Join(c.certs, peer.NodeCertFile(2)))
	if err != nil {
		t.Fatal(err)
	}
	writeAtomically(t, filepath.Join(c.nodeDir[0], peer.NodeCertFile(1)), data)
	cfg, err := config.Parse("node1.toml", []byte(c.configText(1)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Start(cfg, Options{Logger: testLogger(t)})
	if err == nil {
		b.Close()
		t.Fatal("node 1 started with node 2's certificate")
	}
	for _, want := range []string{"listener.name.controller.ssl.keystore.location", "names node 2, not node 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("start error %q does not say %q", err, want)
		}
	}
}
