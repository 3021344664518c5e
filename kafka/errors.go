package kafka

import (
	"errors"

	"github.com/wren-broker/wren/wire"
)

// Sentinel errors. Each one names a reason a connection is closed or a
// server refuses to start; they are wrapped with the details (%w) and
// logged, never sent to the client: the Kafka protocol has no way to
// answer a frame it could not parse.
var (
	// ErrServerClosed is returned by Serve after Close.
	ErrServerClosed = errors.New("kafka: server closed")

	// ErrFrameTooSlow: a frame held part of the request budget that
	// other requests waited for, and its bytes arrived too slowly to
	// give it back in time (see Server.watchBudgets).
	ErrFrameTooSlow = errors.New("kafka: request frame arriving too slowly while other requests wait for the request budget")
	// ErrEvicted: the connection was idle (or had sent nothing but
	// ApiVersions) when the Server neared MaxConnections and another
	// client needed its slot.
	ErrEvicted = errors.New("kafka: idle connection closed to make room for a new one")

	// ErrUnknownAPIKey: the key is not in the API table of this listener.
	ErrUnknownAPIKey = errors.New("kafka: unknown api key")
	// ErrUnsupportedVersion: the version is outside the advertised range.
	ErrUnsupportedVersion = errors.New("kafka: unsupported api version")
	// ErrNotAuthenticated: a request other than the handshake keys arrived
	// before the session authenticated.
	ErrNotAuthenticated = errors.New("kafka: request before authentication")
	// ErrAuthenticationFailed: a SASL authentication failed (a wrong
	// password, an unknown user, a malformed token, a mechanism not
	// enabled, a request out of order); the connection is closed once
	// the answer is sent.
	ErrAuthenticationFailed = errors.New("kafka: SASL authentication failed")
	// ErrAuthenticationTimeout: the connection did not authenticate
	// within SASLConfig.AuthDeadline.
	ErrAuthenticationTimeout = errors.New("kafka: SASL authentication not completed in time")
	// ErrSessionExpired: a request other than a re-authentication arrived
	// after the session's lifetime (connections.max.reauth.ms, KIP-368).
	ErrSessionExpired = errors.New("kafka: SASL session expired without re-authentication")
	// ErrMalformedBody: kmsg could not decode the request body.
	ErrMalformedBody = errors.New("kafka: malformed request body")

	// ErrHandlerPanic: a handler or pending response panicked. The
	// connection is closed; the broker keeps running.
	ErrHandlerPanic = errors.New("kafka: handler panicked")
	// ErrBadResponse: a handler returned a response that does not match
	// its request (wrong key or version, malformed splice). A bug in the
	// handler; the connection is closed rather than sending garbage.
	ErrBadResponse = errors.New("kafka: handler returned a bad response")
	// ErrResponseTooLarge: an encoded response does not fit the int32 size
	// prefix.
	ErrResponseTooLarge = errors.New("kafka: response too large")
	// ErrPlaintextOnTLS: a connection to a TLS listener did not open with
	// a TLS handshake: the client is configured for PLAINTEXT.
	ErrPlaintextOnTLS = errors.New("kafka: plaintext received on an SSL listener: the client is configured for PLAINTEXT (security.protocol) but this listener is SSL")
)

// The frame reader's errors (package wire), under the names this package
// has always given them: reading a frame, the request header, a frame
// too slow, idle or of another protocol.
var (
	ErrFrameSize           = wire.ErrFrameSize
	ErrFrameStalled        = wire.ErrFrameStalled
	ErrFrameDeadline       = wire.ErrFrameDeadline
	ErrFrameTruncated      = wire.ErrFrameTruncated
	ErrTLSOnPlaintext      = wire.ErrTLSOnPlaintext
	ErrHTTPOnKafka         = wire.ErrHTTPOnKafka
	ErrIdle                = wire.ErrIdle
	ErrFirstRequestTimeout = wire.ErrFirstRequestTimeout
	ErrMalformedHeader     = wire.ErrMalformedHeader
)

// ErrBadConfig: a ServerConfig or API table that cannot work.
var ErrBadConfig = errors.New("kafka: bad server config")

// ErrTooManyEntries: a request holds more array entries than its key's
// pre-check allows (see maxProduceEntries).
var ErrTooManyEntries = errors.New("kafka: request has too many entries")
