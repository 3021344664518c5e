package kafka

import "time"

// Observer is told about requests and connections, for metrics. The
// Server calls it on connection goroutines, once per request or event, so
// an implementation must be cheap and must never block: atomic counters,
// or an index into per-key slots, not a lock held across I/O.
type Observer interface {
	// RequestDone: a request of key was answered (or, for acks=0 Produce,
	// completed without an answer). took runs from the moment its frame
	// was read whole until its response was written; the byte counts
	// include the 4-byte size prefixes.
	RequestDone(key int16, requestBytes, responseBytes int64, took time.Duration)
	// ConnectionRefused: a connection was accepted and closed at once
	// because MaxConnections was reached.
	ConnectionRefused()
	// Produced: records and bytes of one Produce request's batches that
	// one topic's partitions appended (duplicates of idempotent producers
	// excluded).
	Produced(topic string, records, bytes int64)
	// Fetched: record bytes one Fetch response carries for one topic.
	Fetched(topic string, bytes int64)
}

// AuthObserver is told the outcome of every SASL authentication, for the
// metrics of authentications per listener and mechanism, when the
// Server's Observer implements it too. mechanism is "" for a failure
// before a mechanism was chosen (out of order, or not enabled); reauth
// marks a re-authentication (KIP-368).
type AuthObserver interface {
	SASLAuthentication(listener, mechanism string, ok, reauth bool)
}

// TLSObserver is told of every TLS handshake that failed on a listener,
// for the metric of handshake failures per listener, when the Server's
// Observer implements it too. reason is one of a few words: "timeout"
// (not done by TLSHandshakeTimeout), "not_tls" (the client spoke
// something else, plaintext Kafka most often), "closed" (the client hung
// up first) or "refused" (any other failure: no shared version or suite,
// a client certificate that does not verify).
type TLSObserver interface {
	TLSHandshakeFailed(listener, reason string)
}

// ProduceObserver is told, for every Produce request, where its time
// went on the broker, when the Server's Observer implements it too (the
// metrics of a slow produce: with replication.Observer, which splits the
// wait for its answer). queued runs from the moment its frame was read
// whole until the answers before it on its connection were written (the
// connection answers in request order; its append, fdatasync and
// replication started at once and ran meanwhile), handled until its own
// answer was written (for acks=0, until its appends were durable). Called
// on the connection's writer, once per Produce: it must be cheap and never
// block.
type ProduceObserver interface {
	ProduceDone(queued, handled time.Duration)
}

// nopObserver is the Observer of a Server configured without one.
type nopObserver struct{}

func (nopObserver) RequestDone(int16, int64, int64, time.Duration) {}
func (nopObserver) ConnectionRefused()                             {}
func (nopObserver) Produced(string, int64, int64)                  {}
func (nopObserver) Fetched(string, int64)                          {}

// Connections is the number of open connections.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Listening reports whether the Server is accepting connections on at
// least one listener: false before Serve, after Close, and after an
// accept loop stopped on an error.
func (s *Server) Listening() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.closed && len(s.listeners) > 0
}
