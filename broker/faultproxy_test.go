package broker

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/peer"
)

// peerProxies stand in front of every node's CONTROLLER listener, so a
// test can cut a node off from its peers (F07: its connections close) or
// hold its links silent (TestThreeProcessCluster's isolate mode: nothing
// closes, nothing arrives) while clients still reach its client listener. controller.quorum.voters names the proxies; each
// proxy forwards to its node's real CONTROLLER listener. Every peer
// connection opens with a handshake that names the dialing node, so a
// proxy knows both ends of each connection it carries.
type peerProxies struct {
	mu sync.Mutex
	// cut are the nodes cut off from every peer: their connections are
	// closed and new ones refused, both ways.
	cut map[int32]bool
	// fetchCut are the follower-to-leader pairs whose replica
	// connections (Fetch, OffsetForLeaderEpoch) are closed and refused,
	// while the quorum's connections between the same nodes carry on.
	fetchCut map[[2]int32]bool
	conns    map[*proxiedConn]bool
	lns      []net.Listener
	closed   bool
	wg       sync.WaitGroup
	refused  int

	// silent are the nodes whose links are held silent, both ways, as a
	// network that drops their packets would: no connection closes, the
	// bytes wait in the proxy (then in the kernel's socket buffers, and
	// the writer blocks once they are full), and a new connection gets
	// no answer to its handshake, until heal delivers everything late.
	silent map[int32]bool
	// audible is signalled when silent shrinks or the proxies close.
	audible *sync.Cond

	// certs, when set (useTLS), are the nodes' certificates by id from 1,
	// and roots their CA: the nodes speak mutual TLS, and each proxy ends
	// the dialer's TLS as the node it stands for and dials that node as
	// the dialer.
	certs []tls.Certificate
	roots *x509.CertPool
}

// useTLS makes the proxies speak mutual TLS with the certificates of
// `wren cluster certs init` in dir, for nodes 1 to n. Called before any
// node starts.
func (pp *peerProxies) useTLS(t *testing.T, dir string, n int) {
	t.Helper()
	for id := 1; id <= n; id++ {
		f := filepath.Join(dir, peer.NodeCertFile(election.NodeID(id)))
		pair, err := tls.LoadX509KeyPair(f, f)
		if err != nil {
			t.Fatal(err)
		}
		pp.certs = append(pp.certs, pair)
	}
	data, err := os.ReadFile(filepath.Join(dir, peer.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	pp.roots = x509.NewCertPool()
	pp.roots.AppendCertsFromPEM(data)
}

type proxiedConn struct {
	from, to int32
	// replica: the connection opened with a replica handshake, so it
	// carries a follower's fetches rather than the quorum's messages.
	replica          bool
	client, upstream net.Conn
	// rawClient and rawUpstream are the TCP connections under client and
	// upstream when they are TLS (else the same): closed directly, so a
	// close never waits to send a TLS alert to a silent end.
	rawClient, rawUpstream net.Conn
}

func (c *proxiedConn) close() {
	c.rawClient.Close()
	c.rawUpstream.Close()
}

// newPeerProxies listens on a free loopback port for each node; targets
// are the nodes' real CONTROLLER addresses, by id from 1. It returns the
// proxies' addresses in the same order.
func newPeerProxies(t *testing.T, targets []string) (*peerProxies, []string) {
	t.Helper()
	pp := &peerProxies{cut: map[int32]bool{}, fetchCut: map[[2]int32]bool{}, silent: map[int32]bool{}, conns: map[*proxiedConn]bool{}}
	pp.audible = sync.NewCond(&pp.mu)
	var addrs []string
	for i, target := range targets {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		pp.lns = append(pp.lns, ln)
		addrs = append(addrs, ln.Addr().String())
		pp.wg.Add(1)
		go pp.accept(ln, int32(i+1), target)
	}
	t.Cleanup(pp.close)
	return pp, addrs
}

func (pp *peerProxies) accept(ln net.Listener, to int32, target string) {
	defer pp.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		pp.wg.Add(1)
		go func() {
			defer pp.wg.Done()
			pp.carry(c, to, target)
		}()
	}
}

// carry reads the handshake frame to learn the dialing node, then pipes
// bytes both ways unless either end is cut off.
func (pp *peerProxies) carry(client net.Conn, to int32, target string) {
	client.SetReadDeadline(time.Now().Add(5 * time.Second))
	rawClient := client
	if pp.certs != nil {
		client = tls.Server(client, &tls.Config{Certificates: []tls.Certificate{pp.certs[to-1]},
			ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pp.roots})
	}
	frame, from, err := readHandshakeFrame(client)
	client.SetReadDeadline(time.Time{})
	if err != nil || pp.certs != nil && (from < 1 || int(from) > len(pp.certs)) {
		rawClient.Close()
		return
	}
	// A connection opened to or from a silent node is not dialed on
	// before heal: its dialer hears nothing, as when its SYN is dropped.
	if !pp.waitAudible(from, to) {
		rawClient.Close()
		return
	}
	rawUpstream, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		rawClient.Close()
		return
	}
	upstream := rawUpstream
	if pp.certs != nil {
		tc := tls.Client(rawUpstream, &tls.Config{Certificates: []tls.Certificate{pp.certs[from-1]}, RootCAs: pp.roots, ServerName: "127.0.0.1"})
		rawUpstream.SetDeadline(time.Now().Add(5 * time.Second))
		err := tc.Handshake()
		rawUpstream.SetDeadline(time.Time{})
		if err != nil {
			rawClient.Close()
			rawUpstream.Close()
			return
		}
		upstream = tc
	}
	// The request header starts with the api key.
	replica := int16(binary.BigEndian.Uint16(frame[4:6])) == peer.APIKeyReplicaHandshake
	pc := &proxiedConn{from: from, to: to, replica: replica, client: client, upstream: upstream, rawClient: rawClient, rawUpstream: rawUpstream}
	pp.mu.Lock()
	if pp.closed || pp.cut[from] || pp.cut[to] || (replica && pp.fetchCut[[2]int32{from, to}]) {
		pp.refused++
		pp.mu.Unlock()
		pc.close()
		return
	}
	pp.conns[pc] = true
	pp.mu.Unlock()
	defer func() {
		pp.mu.Lock()
		delete(pp.conns, pc)
		pp.mu.Unlock()
		pc.close()
	}()
	if _, err := upstream.Write(frame); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { pp.pipe(upstream, client, from, to); done <- struct{}{} }()
	go func() { pp.pipe(client, upstream, to, from); done <- struct{}{} }()
	<-done
	pc.close()
	<-done
}

// pipe copies src to dst, holding each chunk while either end is silent.
func (pp *peerProxies) pipe(dst, src net.Conn, from, to int32) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !pp.waitAudible(from, to) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// waitAudible waits until neither a nor b is silent, and reports false if
// the proxies closed first.
func (pp *peerProxies) waitAudible(a, b int32) bool {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	for !pp.closed && (pp.silent[a] || pp.silent[b]) {
		pp.audible.Wait()
	}
	return !pp.closed
}

// readHandshakeFrame reads the first frame of a peer connection (size,
// Kafka request header v1, handshake body) and returns it whole with the
// node it comes from.
func readHandshakeFrame(r io.Reader) ([]byte, int32, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, 0, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 10 || n > 64<<10 {
		return nil, 0, fmt.Errorf("proxy: handshake frame of %d bytes", n)
	}
	frame := make([]byte, 4+n)
	copy(frame, size[:])
	if _, err := io.ReadFull(r, frame[4:]); err != nil {
		return nil, 0, err
	}
	// api key, api version, correlation id, then the client id.
	idLen := int(int16(binary.BigEndian.Uint16(frame[12:14])))
	if idLen < 0 || 14+idLen > len(frame) {
		return nil, 0, errors.New("proxy: bad client id in the handshake frame")
	}
	hs, err := peer.DecodeHandshake(frame[14+idLen:])
	if err != nil {
		return nil, 0, err
	}
	return frame, int32(hs.From), nil
}

// isolate cuts node off from every peer, both ways: its connections close
// and new ones are refused until heal.
func (pp *peerProxies) isolate(node int32) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	pp.cut[node] = true
	for pc := range pp.conns {
		if pc.from == node || pc.to == node {
			pc.close()
		}
	}
}

// silence holds every link of node silent, both ways, while it keeps
// running: unlike isolate no connection closes, so nothing tells either
// side that the network is gone but the silence itself, and what was in
// flight arrives after heal, late, as TCP retransmission would deliver it.
func (pp *peerProxies) silence(node int32) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	pp.silent[node] = true
}

// cutFetches stops follower from fetching from leader: their replica
// connections close and new ones are refused until heal. The quorum's
// connections stay up, so the controller still commits the leader's ISR
// changes (F13).
func (pp *peerProxies) cutFetches(follower, leader int32) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	pp.fetchCut[[2]int32{follower, leader}] = true
	for pc := range pp.conns {
		if pc.replica && pc.from == follower && pc.to == leader {
			pc.close()
		}
	}
}

// heal lets every node reach its peers again.
func (pp *peerProxies) heal() {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	clear(pp.cut)
	clear(pp.fetchCut)
	clear(pp.silent)
	pp.audible.Broadcast()
}

func (pp *peerProxies) close() {
	pp.mu.Lock()
	pp.closed = true
	pp.audible.Broadcast()
	for _, ln := range pp.lns {
		ln.Close()
	}
	for pc := range pp.conns {
		pc.close()
	}
	pp.mu.Unlock()
	pp.wg.Wait()
}
