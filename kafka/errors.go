package kafka

import "errors"

// Sentinel errors. Each one names a reason a connection is closed or a
// server refuses to start; they are wrapped with the details (%w) and
// logged, never sent to the client: the Kafka protocol has no way to
// answer a frame it could not parse.
var (
	// ErrServerClosed is returned by Serve after Close.
	ErrServerClosed = errors.New("kafka: server closed")

	// ErrFrameSize: a size prefix <= 0 or above the limit in force.
	ErrFrameSize = errors.New("kafka: request frame size out of range")
	// ErrFrameStalled: a frame started but its next bytes did not arrive
	// within ServerConfig.FrameTimeout.
	ErrFrameStalled = errors.New("kafka: request frame stalled")
	// ErrFrameDeadline: a frame's body was not read whole within
	// ServerConfig.FrameTimeout of its admission to the request budget.
	ErrFrameDeadline = errors.New("kafka: request frame not complete within its deadline")
	// ErrFrameTooSlow: a frame held part of the request budget that
	// other requests waited for, and its bytes arrived too slowly to
	// give it back in time (see Server.watchBudgets).
	ErrFrameTooSlow = errors.New("kafka: request frame arriving too slowly while other requests wait for the request budget")
	// ErrEvicted: the connection was idle (or had sent nothing but
	// ApiVersions) when the Server neared MaxConnections and another
	// client needed its slot.
	ErrEvicted = errors.New("kafka: idle connection closed to make room for a new one")
	// ErrTLSOnPlaintext: the first bytes were a TLS handshake, not a
	// Kafka frame.
	ErrTLSOnPlaintext = errors.New("kafka: TLS handshake received on a plaintext listener: the client is configured for SSL (security.protocol) but this listener is PLAINTEXT")
	// ErrHTTPOnKafka: the first bytes were an HTTP request.
	ErrHTTPOnKafka = errors.New("kafka: HTTP request received on a Kafka listener: the client speaks HTTP (the broker's HTTP endpoints are on http.listen)")
	// ErrIdle: no request for ServerConfig.IdleTimeout while nothing was
	// in flight (connections.max.idle.ms).
	ErrIdle = errors.New("kafka: connection idle")
	// ErrFirstRequestTimeout: a new connection sent no complete request
	// within ServerConfig.FirstRequestTimeout.
	ErrFirstRequestTimeout = errors.New("kafka: no request within the first-request timeout")

	// ErrMalformedHeader: the request header cannot be parsed.
	ErrMalformedHeader = errors.New("kafka: malformed request header")
	// ErrUnknownAPIKey: the key is not in the API table of this listener.
	ErrUnknownAPIKey = errors.New("kafka: unknown api key")
	// ErrUnsupportedVersion: the version is outside the advertised range.
	ErrUnsupportedVersion = errors.New("kafka: unsupported api version")
	// ErrNotAuthenticated: a request other than the handshake keys arrived
	// before the session authenticated.
	ErrNotAuthenticated = errors.New("kafka: request before authentication")
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
)

// ErrBadConfig: a ServerConfig or API table that cannot work.
var ErrBadConfig = errors.New("kafka: bad server config")

// ErrFrameTruncated: the connection ended in the middle of a frame.
var ErrFrameTruncated = errors.New("kafka: connection closed mid-frame")

// ErrTooManyEntries: a request holds more array entries than its key's
// pre-check allows (see maxProduceEntries).
var ErrTooManyEntries = errors.New("kafka: request has too many entries")
