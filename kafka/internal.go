package kafka

import (
	"context"
	"fmt"
	"net"
	"os"
	"syscall"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// InternalPrincipal is the principal of every connection of an
// InternalListener: the uplink reading its own node.
const InternalPrincipal = "User:wren-uplink"

// internalKeys are the keys an internal session is served: what a
// franz-go consumer with partitions assigned directly sends to describe
// and read topics. Every other key is refused, item by item, with its
// authorization error (internalAuthorizer).
var internalKeys = map[kmsg.Key]bool{
	kmsg.ApiVersions:          true,
	kmsg.Metadata:             true,
	kmsg.ListOffsets:          true,
	kmsg.Fetch:                true,
	kmsg.OffsetForLeaderEpoch: true,
	kmsg.DescribeCluster:      true,
}

// internalWriteKeys are the keys an internal session is served only for
// the topics SetInternalWritable names (a link's pull side writing its
// pull targets): an idempotent producer's, WRITE on those topics and
// IDEMPOTENT_WRITE on the cluster, nothing else.
var internalWriteKeys = map[kmsg.Key]bool{
	kmsg.Produce:        true,
	kmsg.InitProducerID: true,
}

// InternalListener serves connections made inside the process, with no
// network address: each Dial makes a Unix socket pair, serves one end as
// a client connection of the Server (the same reader, writer, handlers
// and Fetch path as a client listener's) and returns the other. Its
// sessions are authenticated from the start as InternalPrincipal, with
// no SASL exchange and no TLS; they may only describe and read topics
// (internalKeys, and within them READ and DESCRIBE on topics and DESCRIBE
// on the cluster), and write the topics SetInternalWritable names (an
// uplink's pull targets), whatever the ACLs say: Node.Authorizer is never asked
// about them, and everything else is refused with the API's
// authorization error code. Their requests are never forwarded to the
// controller. They are outside the connection limits (MaxConnections,
// per address: they neither count nor are ever closed to make room), the
// request budgets (QueuedMaxRequestBytes, QueuedMaxRequests) and the
// client quotas; the idle and write timeouts still apply.
type InternalListener struct {
	s *Server
	l *Listener
}

// InternalListener returns the Server's internal listener. advertised
// names the client listener whose name and address its Metadata,
// FindCoordinator and DescribeCluster answers give (its TLS, SASL and
// MapPrincipal are not used).
func (s *Server) InternalListener(advertised Listener) *InternalListener {
	l := Listener{Name: advertised.Name, Host: advertised.Host, Port: advertised.Port, internal: true}
	return &InternalListener{s: s, l: &l}
}

// Dial opens a connection to the Server. It fails once the Server is
// closed.
func (il *InternalListener) Dial(ctx context.Context) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	client, server, err := socketPair()
	if err != nil {
		return nil, fmt.Errorf("kafka: internal connection: %w", err)
	}
	if !il.s.startInternalConn(server, il.l) {
		client.Close()
		return nil, ErrServerClosed
	}
	return client, nil
}

// DialContext is Dial with the signature of a dialer (franz-go's
// kgo.Dialer): network and address are ignored, every connection is to
// this node.
func (il *InternalListener) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	return il.Dial(ctx)
}

// socketPair is a connected pair of Unix stream sockets, as net.Conns.
func socketPair() (a, b net.Conn, err error) {
	// Under ForkLock so that no child started meanwhile inherits the
	// descriptors before they are close-on-exec (as package syscall
	// does); net.FileConn dups them close-on-exec.
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	conns := make([]net.Conn, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "wren-internal")
		conns[i], err = net.FileConn(f)
		f.Close()
		if err != nil {
			for _, c := range conns[:i] {
				c.Close()
			}
			if i == 0 {
				syscall.Close(fds[1])
			}
			return nil, nil, fmt.Errorf("socketpair: %w", err)
		}
	}
	return conns[0], conns[1], nil
}

// startInternalConn serves nc as an internal connection: no connection
// bound is checked and none counts it. False once the Server is closed.
func (s *Server) startInternalConn(nc net.Conn, l *Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		nc.Close()
		return false
	}
	c := newConn(s, nc, l)
	s.internal[c] = struct{}{}
	s.wg.Add(2)
	go c.readLoop()
	go c.writeLoop()
	return true
}

// internalAuthorizer judges internal sessions in place of Node.Authorizer:
// READ and DESCRIBE on topics and DESCRIBE on the cluster, on the keys of
// internalKeys only; WRITE on the topics write says yes to (an uplink's
// pull targets, SetInternalWritable) and IDEMPOTENT_WRITE on the cluster
// when write is set.
type internalAuthorizer struct {
	key   kmsg.Key
	write func(topic string) bool
}

func (a internalAuthorizer) Authorize(_, _ string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if internalWriteKeys[a.key] {
		if a.write == nil {
			return false
		}
		switch rt {
		case kmsg.ACLResourceTypeTopic:
			return op == kmsg.ACLOperationWrite && a.write(name)
		case kmsg.ACLResourceTypeCluster:
			return op == kmsg.ACLOperationIdempotentWrite
		}
		return false
	}
	if !internalKeys[a.key] {
		return false
	}
	switch rt {
	case kmsg.ACLResourceTypeTopic:
		return op == kmsg.ACLOperationRead || op == kmsg.ACLOperationDescribe
	case kmsg.ACLResourceTypeCluster:
		return op == kmsg.ACLOperationDescribe
	}
	return false
}

// SetInternalWritable sets the topics internal sessions may write
// (Produce, with an idempotent producer's InitProducerId): an uplink's
// pull targets. Nil (the default) keeps internal sessions read only.
func (s *Server) SetInternalWritable(write func(topic string) bool) {
	if write == nil {
		s.internalWrite.Store(nil)
		return
	}
	s.internalWrite.Store(&write)
}

// internalSession reports whether req came on an internal connection.
func internalSession(req *Request) bool {
	return req != nil && req.Session != nil && req.Session.internal
}
