// Package kafka is wren's Kafka wire-protocol server: connections, request
// dispatch through one explicit API table (apis.go), and one file per API
// key (NN_name.go, with a "// Name: vA-B / Behavior: / Not implemented:"
// header). Requests are decoded and responses encoded with franz-go's kmsg;
// only the Fetch response, which splices segment file ranges in with
// sendfile, is assembled by hand (SplicedResponse). Framing, the request
// header and that Fetch encoder live in package wire, which replication
// and the CONTROLLER listener's transport use too.
//
// # Connection model
//
// Each connection has two goroutines.
//
// The reader reads a frame, parses the request header, looks the key up in
// the table, checks the version, decodes the body and calls the handler,
// synchronously and in request order. Order matters: Produce handlers
// append in the order requests arrived on the connection, which idempotent
// producers rely on. A handler returns a Pending.
//
// The writer completes the Pendings in the same order and writes each
// response. A Produce handler appends at once and returns a Pending that
// waits for the fdatasync: the next pipelined request appends meanwhile, so
// one fdatasync covers both (group commit across pipelined requests), and
// responses still leave in request order.
//
// Invariants:
//   - Responses leave in request order; every non-nil Pending is called
//     exactly once; every SplicedResponse is released exactly once.
//   - Session state is touched only on the reader goroutine.
//   - At most ServerConfig.MaxInFlightPerConn requests wait between reader
//     and writer; beyond that the reader stops reading (TCP backpressure).
//
// # Limits
//
// Everything a client controls is bounded before memory is committed:
//   - Frame size: 0 < size <= MaxRequestBytes (socket.request.max.bytes),
//     or MaxRequestBytesBeforeAuth until the session authenticates; and per
//     key, apiEntry.MaxRequestBytes, checked as soon as the first two body
//     bytes (the key) arrive. A size prefix above the cap is refused
//     before any of the body is read.
//   - Memory: before its body is read, a frame waits for its share of the
//     Server's request budgets (QueuedMaxRequestBytes, QueuedMaxRequests;
//     frames of at most 64 KiB have their own share, so small requests
//     never queue behind large ones), first come, first served, except
//     that a client address holding its share passes its turn while
//     another address waits; it gives it back once handled. While waiting
//     the connection reads nothing, so TCP pushes back on the client. The
//     buffer is then allocated whole.
//   - Time: IdleTimeout between requests (extended while requests are in
//     flight); FrameTimeout for a whole frame body from its admission
//     (not re-armed by each read), and while others wait for the budget
//     it holds, a frame arriving too slowly to give it back within
//     slowFrameHold is closed (fairness.go); WriteTimeout per socket
//     write. Requests waiting for the budget are counted (BudgetStats),
//     warned about at a bounded rate, and a budget that admits nothing
//     to its waiters for BudgetStarvedAfter is starved (health).
//   - Counts: kmsg (v1.15) refuses an array whose count times the minimum
//     wire size of its element exceeds the bytes left, before allocating
//     (TestHugeArrayCountsAllocateNothing). What remains is the ratio of Go
//     struct size to minimum wire size: a valid frame dense with empty
//     elements decodes to up to ~27x its size, one that fails deep inside
//     to ~44x, and distinct unknown tagged fields (kept in a map) to ~36x
//     (TestDecodeAmplification measures it per key). So keys without record
//     data get a 1 MiB frame cap (smallRequestBytes: at most ~44 MiB
//     decoded), and Produce, the one key allowed large frames, gets a
//     pre-check (apiEntry.Precheck, precheckProduce) that walks the body
//     without allocating and refuses more than 65536 topics and
//     partitions or 1024 tagged fields: its decoded structure stays under
//     ~8 MiB and its record bytes alias the frame.
//   - Bytes after a decoded body are ignored, as kmsg does.
//   - Connections: MaxConnections per Server, MaxConnectionsPerIP per
//     client address (with overrides; none by default), changeable at run
//     time (SetConnectionLimits); FirstRequestTimeout from accept to the
//     first complete request. Slots are shared fairly (fairness.go): near
//     MaxConnections a new connection closes an idle one, ApiVersions-only
//     connections and the largest address first, and an eighth of the
//     slots is kept for addresses with few connections.
//   - A TLS handshake or an HTTP request where a frame should start is
//     named as such, in one log line a minute.
//   - Log lines about refused and bad connections: ConnLogLinesPerSecond;
//     the rest are counted, and the count rides on the next line let
//     through. A client that merely goes away (EOF, reset) is DEBUG.
//
// # Authentication
//
// ServerConfig.SASL makes a listener authenticate with SASL (sasl.go,
// 17_sasl_handshake.go, 36_sasl_authenticate.go): PLAIN, SCRAM-SHA-256
// and SCRAM-SHA-512 over security/scram, with the credentials of the
// metadata image (ImageAuthenticator). Until a connection authenticates
// it may send only ApiVersions, SaslHandshake v0-1 and SaslAuthenticate
// v0-2 (after SaslHandshake v0, bare SASL tokens: queued's raw), in
// frames of at most sasl.server.max.receive.size checked on the size
// prefix, and must finish within SASLConfig.AuthDeadline. A failure
// of any kind is answered after connection.failed.authentication.delay.ms
// with one generic SASL_AUTHENTICATION_FAILED message (no user can be told
// from another), and the connection closes after the answer (the reader
// stops at the request, the writer closes once it is written: queued's
// closeAfter). With connections.max.reauth.ms a session has a lifetime
// (KIP-368): a SaslHandshake on an authenticated connection begins a
// re-authentication with the same mechanism, which must end with the same
// principal; past its lifetime a connection's next request of any other
// key closes it. The principal, User:name, is Session.Principal.
//
// # Authorization
//
// Without SASL, a TLS client's certificate names the principal: User: and
// its subject in RFC 2253 form (principal.go), or what
// Listener.MapPrincipal makes of it; any other session is User:ANONYMOUS.
// Node.Authorizer, when set, judges every request (authorize.go) as Kafka's
// KafkaApis does: each handler asks about the resources it names (topics,
// groups, the cluster "kafka-cluster") with the session's principal and
// client IP, answers a refused item with its API's authorization error and
// never acts on it, and filters what Kafka filters (Metadata's and
// ListGroups' lists). Each handler's header states its rule;
// authorize_test.go checks every key of the API table against them.
// Refusals are logged at most once a second and counted
// (AuthzObserver). A forwarded request is authorized on the node that got
// it and again on the controller, with the client's principal and host
// carried along (forward.go).
//
// # The internal listener
//
// Server.InternalListener serves connections made inside the process
// (internal.go): each Dial makes a Unix socket pair and serves one end
// with the same connection code as a client listener's. It has no
// network address, so the uplink reads its own node through it whatever
// the client listeners' security. Its sessions are User:wren-uplink
// (InternalPrincipal), authenticated from the start (no SASL exchange,
// no TLS), and judged by a built-in rule instead of Node.Authorizer,
// which is never asked about them: on ApiVersions, Metadata, ListOffsets,
// Fetch (as a consumer), OffsetForLeaderEpoch and DescribeCluster they
// may READ and DESCRIBE topics and DESCRIBE the cluster; on Produce and
// InitProducerId (an idempotent producer) they may WRITE only the topics
// Server.SetInternalWritable names (the uplink's pull targets) and
// IDEMPOTENT_WRITE the cluster only while it names some; every other
// request, and every other operation (auto-creating a topic, a replica's
// fetch), is refused with its API's authorization error, whatever the
// ACLs say. Their requests are never forwarded to the controller (which
// would judge the principal by the ACLs). They are outside the
// connection bounds (they are not counted in MaxConnections or
// Connections, and never closed to make room), the request budgets and
// the client quotas.
//
// # Client quotas
//
// Client quotas (KIP-13, KIP-124, KIP-219) are set with AlterClientQuotas
// (49_alter_client_quotas.go, decided by the controller and kept in the
// metadata log) and enforced by every node from its own image
// (quota.go): producer_byte_rate on Produce request bytes,
// consumer_byte_rate on a consumer's Fetch response bytes,
// request_percentage on handler time, each resolved for the
// connection's user and client id by Kafka's precedence and measured
// over quota.window.num samples of quota.window.size.seconds
// (ServerConfig.QuotaWindowNum, QuotaWindowSize). A request over its
// quota is answered at once with Kafka's throttle in throttle_time_ms and
// the connection is muted for that long: its reader reads nothing more
// until then (conn.waitMuted, a timer only while muted). A throttled
// consumer Fetch is answered, as Kafka does, with the throttle and no
// topics, its bytes not counted; a Fetch asks for no more than its quota
// lets through in one window (Request.FetchQuotaBytes). A Produce over
// its quota is appended, then throttled, as in Kafka. A QuotaObserver
// is told every throttle. Nothing is counted while no quota is set.
//
// # Metrics
//
// ServerConfig.Observer is told about every request (key, bytes in and
// out, latency), refused connection, and per-topic produced and fetched
// bytes; it must be cheap, as it runs on the connection goroutines. The
// kafka package never imports the metrics library or the HTTP server.
// An Observer that is a ProduceObserver too is told, per Produce, how
// long it waited behind the answers before it on its connection (queued)
// and from reading it to writing its answer (handled).
//
// # Error policy
//
//   - A frame that cannot be parsed, an unknown key, a key not allowed
//     before authentication, a version outside the table's range, a body
//     kmsg rejects: log and close the connection, as Kafka does. The one
//     exception is ApiVersions above our maximum, answered in v0 format
//     with UNSUPPORTED_VERSION and our ApiVersions range (KIP-511).
//   - Versions advertised only for old clients (below apiEntry.MinServed)
//     reach the handler with Request.CompatOnly; it answers with a clean
//     Kafka error.
//   - Per-partition or per-resource problems are Kafka error codes in the
//     response: the handler's business.
//   - A Go error from a handler or a Pending: log it and close the
//     connection. A panic in either is recovered, logged with its stack and
//     treated the same way; that recover is a last line of defence, not a
//     check.
//
// # The seam
//
// Handlers reach the broker only through Server's Node, whose fields are
// the narrow interfaces of seam.go: Partitions (and each Replica's few
// verbs), Metadata (the committed image), ControllerAPI (metadata changes
// and forwarding), GroupCoordinator (whose inputs see the coordinator's
// core only as GroupCore's verbs) and ProducerIDs. The package imports
// the value types of engine, cluster and groups but not replication or
// the group coordinator's driver; the broker package adapts those
// (broker/seam.go). Handlers turn what the verbs answer into Kafka error
// codes, so NOT_LEADER_OR_FOLLOWER, the leader-epoch fences, NOT_CONTROLLER
// and forwarding (forward.go) are decided here, and each API is tested
// beside its NN_name.go with small fakes (seam_test.go; the group APIs
// with a core that records the requests they build, groups_seam_test.go);
// TestHandlersStayBehindTheSeam keeps the concrete types out. The package's
// place among the others is in docs/ARCHITECTURE.md.
//
// # Listeners
//
// A Server serves a client listener: the keys of the API table and no
// others. The CONTROLLER listener, where nodes speak the metadata
// quorum's internal keys and replicate partitions, is cluster/quorum's
// transport; a client listener closes a connection that sends one of
// those keys, as it does for any key it does not know.
//
// One Server may serve several client listeners (ServeListener), as
// Kafka's listener model has them: each connection answers Metadata,
// DescribeCluster, FindCoordinator and Produce's leader hints with the
// advertised address of the listener it was accepted on. An SSL listener
// wraps each connection in crypto/tls: the handshake runs on the reader
// goroutine within TLSHandshakeTimeout, a plaintext client fails it at
// its first record header (no allocation from a misread size, Kafka's
// KAFKA-4090), and spliced Fetch responses are copied through a pooled
// 64 KiB buffer (wire.WriteCopy) instead of sendfile(2), which cannot
// encrypt: Kafka copies too. Under crypto/tls, which makes one write per
// 16 KiB record, a wire.BatchConn gathers a response's records into
// writes of eight, an eighth of the system calls. The TLS config's
// GetCertificate and GetConfigForClient let the broker swap certificates
// for new handshakes while open connections keep theirs.
package kafka
