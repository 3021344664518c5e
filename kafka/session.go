package kafka

import (
	"context"
	"crypto/tls"
	"net"
	"sync/atomic"
)

// Session is one connection's state as handlers see it. It is owned by the
// connection's reader goroutine: handlers (which run there) may read and
// change it; Pendings (which run on the writer goroutine) must not.
type Session struct {
	// ListenerName and RemoteAddr are fixed for the connection's life.
	ListenerName string
	RemoteAddr   net.Addr
	// ClientSoftwareName and ClientSoftwareVersion come from ApiVersions
	// v3+ (KIP-511), for logs and metrics; empty before.
	ClientSoftwareName    string
	ClientSoftwareVersion string

	ctx           context.Context
	authenticated bool
	// principal is the SASL principal, or the client certificate's
	// (tlsPrincipal), or "" (User:ANONYMOUS).
	principal string
	// host is the client's IP without the port, as ACLs name it; for a
	// forwarded request, the host the forwarding node's client had.
	host string
	// listener is what the connection was accepted on; nil for
	// ServeForwarded's sessions and Serve's (the ServerConfig's and the
	// Node's listener).
	listener *Listener
	tlsState *tls.ConnectionState

	// sasl is the SASL exchange's state on a SASL listener.
	sasl saslSession
	// saslConfig is the SASL settings of the connection's listener; nil
	// on a listener without SASL.
	saslConfig *SASLConfig
	// closeAfter, when set by a handler, closes the connection for this
	// reason once the response to the request is written; nothing more
	// is read from it.
	closeAfter error
	// authDone is set once the session authenticated: the
	// authentication deadline's timer reads it from its own goroutine.
	authDone atomic.Bool
	// internal: the session came on an InternalListener (internal.go):
	// InternalPrincipal, judged by internalAuthorizer alone.
	internal bool
}

// TLS is the connection's TLS state after its handshake, nil on a
// plaintext listener: the client's certificate, when it gave one, is in
// PeerCertificates.
func (s *Session) TLS() *tls.ConnectionState { return s.tlsState }

// Context is canceled when the connection or the server closes.
func (s *Session) Context() context.Context { return s.ctx }

// Authenticated reports whether the session may send every key, with frames
// up to ServerConfig.MaxRequestBytes.
func (s *Session) Authenticated() bool { return s.authenticated }

// Principal is the identity the authorizer judges, as Kafka's
// DefaultKafkaPrincipalBuilder makes it: "User:name" after SASL; on a
// TLS listener without SASL whose client gave a certificate,
// "User:" and the certificate subject's distinguished name in RFC 2253
// form ("User:CN=device-7,OU=edge"), or what Listener.MapPrincipal made
// of it; otherwise User:ANONYMOUS.
func (s *Session) Principal() string {
	if s.principal == "" {
		return AnonymousPrincipal
	}
	return s.principal
}

// Host is the client's IP address without the port, as ACLs name hosts.
func (s *Session) Host() string {
	if s.host == "" {
		return hostOf(s.RemoteAddr)
	}
	return s.host
}

// Authenticate marks the session authenticated as principal: the SASL
// handlers call it when the exchange succeeds. The next frame read is
// held to the authenticated limits.
func (s *Session) Authenticate(principal string) {
	s.authenticated = true
	s.principal = principal
	s.authDone.Store(true)
}

// Listener is one client listener a Server serves: its name, the address
// Metadata and FindCoordinator give clients connected on it for this node
// (its advertised listener), and its TLS config, nil for PLAINTEXT.
type Listener struct {
	Name string
	Host string
	Port int32
	// TLS, when set, makes every connection a TLS server connection:
	// the handshake must finish within ServerConfig.TLSHandshakeTimeout,
	// and file chunks of responses are copied through a reused buffer
	// instead of sendfile(2).
	TLS *tls.Config
	// SASL, when set, makes clients on this listener authenticate with
	// SaslHandshake and SaslAuthenticate (SASL_PLAINTEXT, or SASL_SSL with
	// TLS), in place of the ServerConfig's SASL.
	SASL *SASLConfig
	// MapPrincipal, if set, turns the RFC 2253 distinguished name of a
	// client certificate's subject into the principal's name
	// (ssl.principal.mapping.rules), on a TLS listener without SASL. An
	// error closes the connection. Without it the name is the DN.
	MapPrincipal func(dn string) (string, error)

	// internal marks an InternalListener's (internal.go).
	internal bool
}

// listenerOf is the name and this node's advertised address for the
// listener sess was accepted on: the ServerConfig's and the Node's when
// the session names none.
func (s *Server) listenerOf(sess *Session) (name, host string, port int32) {
	if sess != nil && sess.listener != nil {
		return sess.listener.Name, sess.listener.Host, sess.listener.Port
	}
	n := s.node()
	return s.cfg.ListenerName, n.Host, n.Port
}
