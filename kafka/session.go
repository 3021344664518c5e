package kafka

import (
	"context"
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
	principal     string

	// sasl is the SASL exchange's state on a SASL listener.
	sasl saslSession
	// closeAfter, when set by a handler, closes the connection for this
	// reason once the response to the request is written; nothing more
	// is read from it.
	closeAfter error
	// authDone is set once the session authenticated: the
	// authentication deadline's timer reads it from its own goroutine.
	authDone atomic.Bool
}

// Context is canceled when the connection or the server closes.
func (s *Session) Context() context.Context { return s.ctx }

// Authenticated reports whether the session may send every key, with frames
// up to ServerConfig.MaxRequestBytes.
func (s *Session) Authenticated() bool { return s.authenticated }

// Principal is the authenticated identity, "User:name" after SASL, ""
// when none (a listener without authentication is authenticated as "").
// The authorizer reads it.
func (s *Session) Principal() string { return s.principal }

// Authenticate marks the session authenticated as principal: the SASL
// handlers call it when the exchange succeeds. The next frame read is
// held to the authenticated limits.
func (s *Session) Authenticate(principal string) {
	s.authenticated = true
	s.principal = principal
	s.authDone.Store(true)
}
