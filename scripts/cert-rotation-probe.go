//go:build ignore

// cert-rotation-probe.go: the TLS side of scripts/cert-rotation.sh, built
// with `go build -o PROBE scripts/cert-rotation-probe.go`. It dials a
// node's CONTROLLER listener over mutual TLS as a tool would (presenting
// -cert, trusting -ca), sends a probe handshake (peer.ProbeNodeID: the node
// answers with its id and closes, and logs the probe at DEBUG only, so a
// probe never shows as a refused peer), and reads the certificate the node
// served.
//
// Without -want it probes once and prints the served certificate:
//
//	node=2 serial=… sha256=… subject="CN=wren node 2" issuer="CN=wren cluster CA …"
//
// With -want FILE it probes every -every until the node serves the
// certificate in FILE (a node reloads its files on a timer), then prints
// the same line with waited_ms=…; it fails after -timeout.
//
// -cert must be a certificate the node trusts at the time (else its TLS
// handshake refuses the probe, which it logs): the script presents the
// newest certificate of the node's own id once every node trusts its CA.
//
// Usage:
//
//	cert-rotation-probe -addr HOST:PORT -node N -cert NODE.pem -ca CA.pem [-want NODE.pem] [-every 20ms] [-timeout 15s]
package main

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/wren-broker/wren/peer"
	"github.com/wren-broker/wren/wire"
)

func main() {
	addr := flag.String("addr", "", "the node's CONTROLLER listener, host:port")
	node := flag.Int("node", 0, "the node id the listener must answer with")
	certFile := flag.String("cert", "", "PEM file of the certificate and key to present")
	caFile := flag.String("ca", "", "PEM file of the CAs the node's certificate must chain to")
	wantFile := flag.String("want", "", "wait until the node serves the certificate of this PEM file")
	every := flag.Duration("every", 20*time.Millisecond, "time between probes while waiting")
	timeout := flag.Duration("timeout", 15*time.Second, "give up waiting after this long")
	flag.Parse()
	if *addr == "" || *node <= 0 || *certFile == "" || *caFile == "" || *every <= 0 || *timeout <= 0 {
		fail(errors.New("usage: cert-rotation-probe -addr HOST:PORT -node N -cert FILE -ca FILE [-want FILE] [-every D] [-timeout D]"))
	}
	pair, err := tls.LoadX509KeyPair(*certFile, *certFile)
	if err != nil {
		fail(fmt.Errorf("-cert %s: %w", *certFile, err))
	}
	caPEM, err := os.ReadFile(*caFile)
	if err != nil {
		fail(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		fail(fmt.Errorf("-ca %s: no certificate in it", *caFile))
	}
	var want *x509.Certificate
	if *wantFile != "" {
		w, err := tls.LoadX509KeyPair(*wantFile, *wantFile)
		if err != nil {
			fail(fmt.Errorf("-want %s: %w", *wantFile, err))
		}
		want = w.Leaf
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: roots}
	start := time.Now()
	deadline := start.Add(*timeout)
	for {
		got, err := probe(*addr, cfg, *node)
		if err == nil && (want == nil || got.Equal(want)) {
			line := describe(*node, got)
			if want != nil {
				line += fmt.Sprintf(" waited_ms=%d", time.Since(start).Milliseconds())
			}
			fmt.Println(line)
			return
		}
		if want == nil {
			fail(err)
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("still serves %s", describe(*node, got))
			}
			fail(fmt.Errorf("node %d did not serve the certificate of %s within %s: %w", *node, *wantFile, *timeout, err))
		}
		time.Sleep(*every)
	}
}

// probe does one TLS handshake and probe handshake with addr and returns
// the certificate the listener served.
func probe(addr string, cfg *tls.Config, node int) (*x509.Certificate, error) {
	d := &net.Dialer{Timeout: 2 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	served := c.ConnectionState().PeerCertificates[0]
	frame := wire.AppendRequestHeader(make([]byte, 4, 64), peer.APIKeyHandshake, 0, 1, "wren-probe", false)
	frame = peer.AppendHandshake(frame, peer.Handshake{From: peer.ProbeNodeID})
	if err := wire.WriteFrame(c, frame); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return nil, fmt.Errorf("the probe's answer: %w", err)
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 1<<16 {
		return nil, fmt.Errorf("the probe's answer is %d bytes", n)
	}
	resp := make([]byte, n)
	if _, err := io.ReadFull(c, resp); err != nil {
		return nil, fmt.Errorf("the probe's answer: %w", err)
	}
	h, err := peer.DecodeHandshake(resp[4:])
	if err != nil {
		return nil, err
	}
	if int(h.From) != node {
		return nil, fmt.Errorf("%s answered as node %d, not %d", addr, h.From, node)
	}
	return served, nil
}

func describe(node int, c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	serial := c.SerialNumber.Text(16)
	if len(serial) > 16 {
		serial = serial[:16]
	}
	return fmt.Sprintf("node=%d serial=%s sha256=%x subject=%q issuer=%q", node, serial, sum[:8], c.Subject.String(), c.Issuer.String())
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "cert-rotation-probe:", err)
	os.Exit(1)
}
