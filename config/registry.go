package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Entry describes one setting, as Kafka's ConfigDef.ConfigKey does, plus
// where it sits in wren's file and how it relates to topic configs. The
// registry of entries is the single source of truth: loading, checking,
// DescribeConfigs, AlterConfigs, Dump and config.example.toml all read it.
type Entry struct {
	// Name is the flattened name: Kafka's own where Kafka has the setting
	// (log.segment.bytes), else section.key for wren's own sections
	// (http.listen).
	Name string
	// Section is the grouping table the key must be written in.
	Section string
	Type    Type
	// Default is the built-in value (see the value types in validate.go);
	// nil means no value, as Kafka's null defaults (log.retention.ms unset
	// defers to log.retention.hours).
	Default any
	// DefaultDoc says how a default that depends on other settings is
	// computed; Default then holds the value for three or more voters.
	DefaultDoc string
	// Validator checks a value beyond its type; nil accepts any.
	Validator  *Validator
	Importance Importance
	Mode       Mode
	// Topic is the topic-level config this entry is the broker default for
	// ("" if none): log.segment.bytes is the default of segment.bytes.
	// Several entries may share one topic config; the first in registry
	// order wins (log.retention.ms over log.retention.minutes over
	// log.retention.hours), as in Kafka.
	Topic string
	// TopicScale converts this entry's unit to the topic config's
	// (3600000 for hours to ms). 0 means 1.
	TopicScale int64
	// Wren marks a setting Apache Kafka does not have.
	Wren bool
	// Sensitive settings (Kafka's PASSWORD type: private keys and their
	// passwords) are described with a null value, as Kafka does, so
	// DescribeConfigs never hands them out.
	Sensitive bool
	// KafkaDefault is Kafka 4.0's default where wren's differs, "" where
	// they agree. Doc says why it differs.
	KafkaDefault string
	Doc          string

	// derive computes a default from the values of earlier entries.
	derive func(values map[string]any) any
}

// Key is the entry's key as written inside its section.
func (e *Entry) Key() string {
	if s := sectionByName(e.Section); s != nil && s.Prefixed {
		return strings.TrimPrefix(e.Name, e.Section+".")
	}
	return e.Name
}

// TOMLKey is Key as a file must write it: quoted when the key is a
// dotted prefix of another key of its section, or has one (Kafka's
// max.connections and max.connections.per.ip): unquoted, TOML would read
// the longer one as a table inside the shorter.
func (e *Entry) TOMLKey() string {
	k := e.Key()
	for _, o := range registry {
		if o.Section == e.Section && o != e &&
			(strings.HasPrefix(o.Key(), k+".") || strings.HasPrefix(k, o.Key()+".")) {
			return quoteTOML(k)
		}
	}
	return k
}

// scale is TopicScale with 0 read as 1.
func (e *Entry) scale() int64 {
	if e.TopicScale == 0 {
		return 1
	}
	return e.TopicScale
}

// Section is a grouping table of the config file.
type Section struct {
	Name string
	Doc  string
	// Prefixed sections hold wren's own settings, whose flattened names
	// carry the section (listen in [http] is http.listen). In the other
	// sections the key is Kafka's full name and the section only groups.
	Prefixed bool
}

// Sections lists the config file's sections in file order.
func Sections() []Section { return slices.Clone(sections) }

// Entries lists every setting, grouped by section in file order. The
// entries are the registry itself: read them, never change them.
func Entries() []*Entry { return slices.Clone(registry) }

// Lookup finds a setting by its flattened name.
func Lookup(name string) (*Entry, bool) {
	e, ok := byName[name]
	return e, ok
}

func sectionByName(name string) *Section {
	for i := range sections {
		if sections[i].Name == name {
			return &sections[i]
		}
	}
	return nil
}

const (
	msPerHour   = 3600 * 1000
	msPerMinute = 60 * 1000
	mib         = 1 << 20
)

var sections = []Section{
	{Name: "broker", Doc: "This node: its id, data directories, listeners and request limits."},
	{Name: "cluster", Doc: "The peers and the controller. controller.quorum.voters must list the same nodes, in the same way, on every node."},
	{Name: "topics", Doc: "Defaults for new topics."},
	{Name: "storage", Doc: "Partition logs on disk: segments, retention, flushing, compaction. A key with a topic-level name is the default for that topic config."},
	{Name: "replication", Doc: "Followers, the ISR and partition leadership."},
	{Name: "groups", Doc: "Consumer groups and committed offsets."},
	{Name: "producers", Doc: "Idempotent producer state."},
	{Name: "security", Doc: "TLS of the client listeners, under Kafka's ssl.* names (PEM only). A listener's own value, listener.name.NAME.ssl.* (NAME in lower case, as Kafka writes it), overrides the shared one for that listener. A listener's key and trust stores (listener.name.NAME.ssl.keystore.*, ssl.key.password, ssl.truststore.*) may also be altered at run time for one broker with AlterConfigs or IncrementalAlterConfigs on its BROKER resource (kafka-configs --entity-type brokers --entity-name ID), as Kafka's dynamic keystore update: the new stores must load, and new connections get the new certificate while open ones stay up. Then the ACL authorizer's settings: its super users and what it answers where no ACL applies."},
	{Name: "http", Prefixed: true, Doc: "wren's own: the HTTP server for /metrics, /livez, /readyz and /v1/cluster/health."},
	{Name: "logging", Prefixed: true, Doc: "wren's own: the broker's log output."},
}

var registry = []*Entry{
	// [broker]
	{Name: "node.id", Section: "broker", Type: TypeInt, Default: int64(1), Validator: between(0, math.MaxInt32),
		Importance: High, Mode: ReadOnly, KafkaDefault: "none (required)",
		Doc: "This node's id, unique in the cluster and listed in controller.quorum.voters. Kafka requires it; wren defaults to 1 so that `wren serve` alone runs a single-node cluster."},
	{Name: "log.dirs", Section: "broker", Type: TypeList, Default: []string{"./wren-data"}, Validator: logDirsValidator,
		Importance: High, Mode: ReadOnly, KafkaDefault: "/tmp/kafka-logs (through log.dir)",
		Doc: "Directories that hold partition logs. Each is locked by one broker and carries the cluster id; a directory from another cluster is refused, never wiped."},
	{Name: "listeners", Section: "broker", Type: TypeList, Default: []string{"PLAINTEXT://127.0.0.1:9092", "CONTROLLER://127.0.0.1:9093"},
		Validator: listenersValidator, Importance: High, Mode: ReadOnly, KafkaDefault: "PLAINTEXT://:9092",
		Doc: "Addresses to listen on, as NAME://host:port (an empty host binds every interface). Client listeners are named PLAINTEXT; the listener named in controller.listener.names serves peers. Kafka can change listeners per broker at run time; wren binds them once."},
	{Name: "advertised.listeners", Section: "broker", Type: TypeList, Default: []string{}, Validator: advertisedValidator,
		Importance: High, Mode: ReadOnly,
		Doc: "Addresses given to clients in Metadata responses, when they differ from listeners (NAT, containers, 0.0.0.0). Each names a listener. Empty: the client listeners themselves."},
	{Name: "controller.listener.names", Section: "broker", Type: TypeList, Default: []string{"CONTROLLER"}, Validator: listenerNamesValidator,
		Importance: High, Mode: ReadOnly,
		Doc: "Names of the listeners that serve controller and election traffic between peers. The client listeners refuse those requests."},
	{Name: "listener.security.protocol.map", Section: "broker", Type: TypeString, Default: defaultProtocolMap, Validator: protocolMapValidator,
		Importance: High, Mode: ReadOnly,
		Doc: "The security protocol of each listener name, as NAME:PROTOCOL pairs separated by commas. PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL are served (SASL with sasl.enabled.mechanisms against the SCRAM users of the metadata log). A listener named after a protocol speaks it without an entry; the controller listener speaks PLAINTEXT unless mapped to SSL, which is mutual TLS between the peers: each presents its certificate (ssl.client.auth required is implied), which must chain to the trust store and name the voter it is (`wren cluster certs init`)."},
	{Name: "socket.request.max.bytes", Section: "broker", Type: TypeInt, Default: int64(8 * mib), Validator: atLeast(1),
		Importance: High, Mode: ReadOnly, KafkaDefault: "104857600",
		Doc: "The largest request frame accepted. A larger size prefix closes the connection before any of the body is read (logged at a bounded rate). A frame is held whole in memory while it is handled, so Kafka's 100 MiB would let one client take more than a 64 MB host has. 8 MiB holds a Produce request with seven batches of the default message.max.bytes: the Java producer (max.request.size) and librdkafka (message.max.bytes) send at most 1 MB per request, and a franz-go producer writing full batches to many partitions at once should set BrokerMaxWriteBytes to this value. A frame larger than queued.max.request.bytes waits for the whole budget and is read alone, so memory for frames stays within the larger of the two."},
	{Name: "message.max.bytes", Section: "broker", Type: TypeInt, Default: int64(1048588), Validator: atLeast(0), Topic: "max.message.bytes",
		Importance: High, Mode: ClusterWide,
		Doc: "The largest record batch (after compression) a partition accepts; a larger one gets MESSAGE_TOO_LARGE."},
	{Name: "queued.max.request.bytes", Section: "broker", Type: TypeLong, Default: int64(8 * mib), Validator: atLeast(-1),
		Importance: Medium, Mode: ReadOnly, KafkaDefault: "-1",
		Doc: "The most bytes of request frames all client connections together hold in memory, from the size prefix until the request is handled. A connection whose next frame does not fit waits its turn before reading the body: it stops reading its socket, so TCP pushes back on the client, and waiting connections are served first come, first served, except that an address already holding its share (this divided by the addresses holding or waiting) passes its turn while another address waits. Once admitted, a frame must arrive whole within 30 s (the clients' own request.timeout.ms default), and while other requests wait for what it holds, a frame that at its rate so far would hold it more than 5 s is closed after 1 s: a client that announces a large frame and trickles its body cannot hold the budget others need. wren_kafka_request_budget_waiting shows requests waiting, a WARN says so every 10 s at most, and a budget that granted nothing to waiting requests for 10 s makes the node not ready and the cluster unhealthy (request_budget_starved). Frames of at most 64 KiB have their own share on top, an eighth of this, so small requests (metadata, fetches, a well-behaved producer's) never queue behind large ones. Kafka leaves it unbounded (-1; here -1 or 0); 8 MiB, one request of socket.request.max.bytes at a time, kept the broker under a 64 MiB memory cgroup with 200 connections sending 8 MiB requests and decompression bombs."},
	{Name: "queued.max.requests", Section: "broker", Type: TypeInt, Default: int64(500), Validator: atLeast(1),
		Importance: High, Mode: ReadOnly,
		Doc: "The most requests read and not yet handled, across all client connections; beyond it connections stop reading until some are handled. wren handles each connection's requests in order on that connection, so this bounds how many connections read or handle a request at once (Kafka's queue between network and handler threads); answers waiting for an fdatasync or a long poll do not count, as in Kafka."},
	{Name: "max.connections", Section: "broker", Type: TypeInt, Default: int64(1024), Validator: atLeast(1),
		Importance: Medium, Mode: ClusterWide, KafkaDefault: "2147483647",
		Doc: "The most client connections the broker accepts. Kafka sets no limit; a small host runs out of memory and file descriptors first (each connection costs about 20 KiB), so wren caps it, and shares the slots fairly: at the limit a new connection closes an idle one, taking first a connection that sent nothing but ApiVersions and has been silent for 1 s, then one idle for 30 s, from the address with the most connections (a newcomer from an address with many displaces only connections of addresses with more), counted in wren_kafka_connections_evicted_total; an eighth of the slots is kept for addresses with fewer than 4 connections, so a new client is served whatever the others hold. Only when nothing is idle is the new connection closed at once, counted in wren_kafka_connections_refused_total. A change at run time governs connections accepted from then on."},
	{Name: "max.connections.per.ip", Section: "broker", Type: TypeInt, Default: int64(0), Validator: atLeast(0),
		Importance: Medium, Mode: ClusterWide, KafkaDefault: "2147483647",
		Doc: "The most client connections from one address, except those in max.connections.per.ip.overrides; later ones are closed at once. 0 (the default): no per-address limit, as in Kafka. A per-address cap refuses legitimate clients: the devices behind one NAT gateway share an address, and so do the many short-lived connections of clients running on one host (a client-heavy test run from one host had 318 to 453 connections refused by a cap of 256). The protection comes from fair shares instead: max.connections closes idle connections of the largest addresses first and keeps slots for new addresses, and queued.max.request.bytes is shared fairly between addresses."},
	{Name: "max.connections.per.ip.overrides", Section: "broker", Type: TypeString, Default: "", Validator: perIPOverridesValidator,
		Importance: Medium, Mode: ClusterWide,
		Doc: "Per-address exceptions to max.connections.per.ip, in Kafka's format: address:count pairs separated by commas (\"10.0.0.5:500,[fd00::1]:0\"). wren takes IP addresses only: a host name would be resolved once and go stale."},
	{Name: "connections.max.idle.ms", Section: "broker", Type: TypeLong, Default: int64(600000), Validator: atLeast(1),
		Importance: Medium, Mode: ReadOnly,
		Doc: "A connection that sends no request for this long, with nothing in flight, is closed. A new connection must complete its first request within 10 seconds (at most this), so connections that never speak do not hold slots for the full idle time."},
	{Name: "quota.window.num", Section: "broker", Type: TypeInt, Default: int64(11), Validator: atLeast(1),
		Importance: Low, Mode: ReadOnly,
		Doc: "The number of samples client quotas keep (producer_byte_rate, consumer_byte_rate, request_percentage set with AlterClientQuotas): a rate is measured over this many windows of quota.window.size.seconds."},
	{Name: "quota.window.size.seconds", Section: "broker", Type: TypeInt, Default: int64(1), Validator: atLeast(1),
		Importance: Low, Mode: ReadOnly,
		Doc: "The span of one sample of the client quotas' rates. A request over its quota waits at most one window for request_percentage, and at most quota.window.num windows for the byte rates."},
	{Name: "memory.soft.limit.bytes", Section: "broker", Type: TypeLong, Default: int64(0), Validator: atLeast(-1),
		Importance: Medium, Mode: ReadOnly, Wren: true,
		Doc: "A soft limit on the Go runtime's memory (as GOMEMLIMIT, which wins when set): near it the garbage collector runs more often and returns freed memory to the system, so resident memory comes back down after a burst instead of staying at its peak. 0: three quarters of the memory cgroup's limit when the broker runs under one (systemd MemoryMax=, a container), none otherwise; -1: none. It is soft: the hard bounds are queued.max.request.bytes and max.decompressed.inflight.bytes."},
	{Name: "sasl.enabled.mechanisms", Section: "broker", Type: TypeList, Default: []string{"SCRAM-SHA-512", "SCRAM-SHA-256"},
		Validator: listOf("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"), Importance: Medium, Mode: ReadOnly, KafkaDefault: "GSSAPI",
		Doc: "The SASL mechanisms a SASL_PLAINTEXT or SASL_SSL listener offers: any of PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, checked against the SCRAM credentials of the metadata log (`wren user create`, kafka-configs --entity-type users). Kafka's default, GSSAPI (Kerberos), is not served; PLAIN, which sends the password itself, is offered only when listed, and belongs on SASL_SSL listeners."},
	{Name: "sasl.server.max.receive.size", Section: "broker", Type: TypeInt, Default: int64(524288), Validator: atLeast(1024),
		Importance: Low, Mode: ReadOnly,
		Doc: "The largest frame a SASL connection may send before it authenticates, and while it re-authenticates. A larger size prefix closes the connection before any of the frame is read or allocated."},
	{Name: "connection.failed.authentication.delay.ms", Section: "broker", Type: TypeInt, Default: int64(100), Validator: atLeast(0),
		Importance: Low, Mode: ReadOnly,
		Doc: "A failed SASL authentication is answered, and its connection closed, this long after the failure, which slows a client guessing passwords. 0: at once. Every failure (a wrong password, an unknown user, a malformed message) gets the same answer, SASL_AUTHENTICATION_FAILED with one message."},
	{Name: "connections.max.reauth.ms", Section: "broker", Type: TypeLong, Default: int64(0), Validator: atLeast(0),
		Importance: Medium, Mode: ReadOnly,
		Doc: "When positive, a SASL session lasts this long (KIP-368): clients that support re-authentication (SaslAuthenticate v1+) re-authenticate over their connection before it ends, with the same user and mechanism, and a connection that sends any other request after its session ended is closed. Credentials deleted or changed then stop working on open connections within this time. 0: sessions last as long as their connection."},

	// [cluster]
	{Name: "controller.quorum.voters", Section: "cluster", Type: TypeList, Default: []string{"1@127.0.0.1:9093"}, Validator: votersValidator,
		Importance: High, Mode: ReadOnly, KafkaDefault: "\"\"",
		Doc: "Every peer of the cluster as id@host:port, the address of its controller listener. The same list on every node: the controller is elected among these, and a majority of them must agree."},
	{Name: "cluster.id", Section: "cluster", Type: TypeString, Default: "", Validator: clusterIDValidator,
		Importance: High, Mode: ReadOnly, Wren: true,
		Doc: "The cluster id, as `kafka-storage random-uuid` prints it (22 characters of URL-safe base64). Empty: the first start generates one and stores it in meta.properties. Set it to make a node refuse data directories and peers of any other cluster."},
	{Name: "controller.quorum.fetch.timeout.ms", Section: "cluster", Type: TypeInt, Default: int64(2000), Validator: atLeast(1),
		Importance: High, Mode: ReadOnly,
		Doc: "How long a node goes without hearing a live controller before it starts an election."},
	{Name: "controller.quorum.election.timeout.ms", Section: "cluster", Type: TypeInt, Default: int64(1000), Validator: atLeast(1),
		Importance: High, Mode: ReadOnly,
		Doc: "How long a candidate waits for a majority of votes before it retries the election."},
	{Name: "controller.quorum.election.backoff.max.ms", Section: "cluster", Type: TypeInt, Default: int64(500), Validator: atLeast(0),
		Importance: High, Mode: ReadOnly, KafkaDefault: "1000",
		Doc: "The longest random backoff before a new election, so that candidates do not keep splitting the vote. wren's 500 ms (Kafka: 1 s): a new controller follows a dead one within controller.quorum.fetch.timeout.ms plus this backoff, and 1 s put the worst case past 3 s; the Bully probe round (the lower id stands back for a live higher one, and nobody bumps the epoch without a majority of grants) already keeps candidates from splitting the vote, so a narrower spread costs no extra elections."},
	{Name: "controller.quorum.request.timeout.ms", Section: "cluster", Type: TypeInt, Default: int64(2000), Validator: atLeast(1),
		Importance: High, Mode: ReadOnly,
		Doc: "How long a node waits for a peer's answer to a controller request before giving up on it."},
	{Name: "controller.heartbeat.interval.ms", Section: "cluster", Type: TypeInt, Default: int64(500), Validator: atLeast(1),
		Importance: Medium, Mode: ReadOnly, Wren: true,
		Doc: "How often the controller sends heartbeats to its peers to renew its lease. Must be below controller.lease.ms."},
	{Name: "controller.lease.ms", Section: "cluster", Type: TypeInt, Default: int64(1500), Validator: atLeast(1),
		Importance: Medium, Mode: ReadOnly, Wren: true,
		Doc: "The controller acts only while a majority acknowledged a heartbeat within this time (monotonic clock); otherwise it steps down. Must be below controller.quorum.fetch.timeout.ms, so that a deposed controller stops acting before the others elect a new one."},
	{Name: "broker.heartbeat.interval.ms", Section: "cluster", Type: TypeInt, Default: int64(1000), Validator: atLeast(1),
		Importance: Medium, Mode: ReadOnly, KafkaDefault: "2000",
		Doc: "How often a broker tells the controller it is alive. wren's 1 s (Kafka: 2 s) goes with its shorter session timeout."},
	{Name: "broker.session.timeout.ms", Section: "cluster", Type: TypeInt, Default: int64(4000), Validator: atLeast(1),
		Importance: Medium, Mode: ReadOnly, KafkaDefault: "9000",
		Doc: "How long the controller waits without a heartbeat before it fences a broker and moves its leaderships: the time a dead leader's partitions stay unavailable. wren's 4 s (Kafka: 9 s) suits three nodes on one LAN and keeps failover within 5 s; four missed heartbeats are still needed, so one slow beat does not fence a live broker."},

	// [topics]
	{Name: "num.partitions", Section: "topics", Type: TypeInt, Default: int64(1), Validator: atLeast(1),
		Importance: Medium, Mode: ReadOnly,
		Doc: "Partitions of a topic created without a partition count."},
	{Name: "default.replication.factor", Section: "topics", Type: TypeInt, Default: int64(3), Validator: between(1, math.MaxInt16),
		DefaultDoc: "the number of controller.quorum.voters, at most 3", derive: derivedReplicationFactor,
		Importance: Medium, Mode: ReadOnly, KafkaDefault: "1",
		Doc: "Replicas of a topic created without a replication factor. Listing three peers should give a replicated cluster with no more settings, so wren derives it from the voter count."},
	{Name: "min.insync.replicas", Section: "topics", Type: TypeInt, Default: int64(2), Validator: atLeast(1), Topic: "min.insync.replicas",
		DefaultDoc: "2, at most default.replication.factor", derive: derivedMinInsyncReplicas,
		Importance: High, Mode: ClusterWide, KafkaDefault: "1",
		Doc: "With acks=all, the fewest in-sync replicas that must hold a write before it is acknowledged (else NOT_ENOUGH_REPLICAS). wren defaults to 2 so that an acknowledged write survives the loss of one node; a single-node cluster gets 1."},
	{Name: "auto.create.topics.enable", Section: "topics", Type: TypeBoolean, Default: false,
		Importance: High, Mode: ReadOnly, KafkaDefault: "true",
		Doc: "Create a topic when a client asks for metadata of one that does not exist. Off in wren: a typo in a topic name should fail, not fill a small disk."},
	{Name: "compression.type", Section: "topics", Type: TypeString, Default: "producer", Topic: "compression.type",
		Validator:  oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
		Importance: High, Mode: ClusterWide,
		Doc: "The codec batches are stored with: producer keeps the producer's, the others recompress."},

	// [storage]
	{Name: "log.segment.bytes", Section: "storage", Type: TypeInt, Default: int64(128 * mib), Validator: atLeast(mib), Topic: "segment.bytes",
		Importance: High, Mode: ClusterWide, KafkaDefault: "1073741824",
		Doc: "Roll to a new segment when the active one reaches this size. Retention deletes whole segments, so wren's 128 MiB keeps disk use closer to the retention limits on small disks."},
	{Name: "log.roll.ms", Section: "storage", Type: TypeLong, Default: nil, Validator: atLeast(1), Topic: "segment.ms",
		Importance: High, Mode: ClusterWide,
		Doc: "Roll to a new segment when the active one's first batch is this old, so time retention can delete it. Unset: log.roll.hours."},
	{Name: "log.roll.hours", Section: "storage", Type: TypeInt, Default: int64(168), Validator: atLeast(1), Topic: "segment.ms", TopicScale: msPerHour,
		Importance: High, Mode: ReadOnly,
		Doc: "log.roll.ms in hours, used when log.roll.ms is unset."},
	{Name: "log.roll.jitter.ms", Section: "storage", Type: TypeLong, Default: nil, Validator: atLeast(0), Topic: "segment.jitter.ms",
		Importance: High, Mode: ClusterWide,
		Doc: "The most random time subtracted from the roll time, so partitions do not all roll at once. Unset: log.roll.jitter.hours."},
	{Name: "log.roll.jitter.hours", Section: "storage", Type: TypeInt, Default: int64(0), Validator: atLeast(0), Topic: "segment.jitter.ms", TopicScale: msPerHour,
		Importance: High, Mode: ReadOnly,
		Doc: "log.roll.jitter.ms in hours, used when log.roll.jitter.ms is unset."},
	{Name: "log.retention.ms", Section: "storage", Type: TypeLong, Default: nil, Validator: atLeast(-1), Topic: "retention.ms",
		Importance: High, Mode: ClusterWide,
		Doc: "Delete a segment once its newest record is this old; -1 keeps data forever. Unset: log.retention.minutes, then log.retention.hours."},
	{Name: "log.retention.minutes", Section: "storage", Type: TypeInt, Default: nil, Validator: atLeast(-1), Topic: "retention.ms", TopicScale: msPerMinute,
		Importance: High, Mode: ReadOnly,
		Doc: "log.retention.ms in minutes, used when log.retention.ms is unset."},
	{Name: "log.retention.hours", Section: "storage", Type: TypeInt, Default: int64(168), Validator: atLeast(-1), Topic: "retention.ms", TopicScale: msPerHour,
		Importance: High, Mode: ReadOnly,
		Doc: "log.retention.ms in hours, used when log.retention.ms and log.retention.minutes are unset."},
	{Name: "log.retention.bytes", Section: "storage", Type: TypeLong, Default: int64(-1), Validator: atLeast(-1), Topic: "retention.bytes",
		Importance: High, Mode: ClusterWide,
		Doc: "Delete the oldest segments while a partition is larger than this; -1 sets no size limit."},
	{Name: "log.retention.check.interval.ms", Section: "storage", Type: TypeLong, Default: int64(300000), Validator: atLeast(1),
		Importance: Medium, Mode: ReadOnly,
		Doc: "How often retention looks for segments to delete."},
	{Name: "log.index.interval.bytes", Section: "storage", Type: TypeInt, Default: int64(4096), Validator: atLeast(0), Topic: "index.interval.bytes",
		Importance: Medium, Mode: ClusterWide,
		Doc: "Bytes of log between two offset index entries: a read scans at most this much past its index hit."},
	{Name: "log.index.size.max.bytes", Section: "storage", Type: TypeInt, Default: int64(10 * mib), Validator: atLeast(4), Topic: "segment.index.bytes",
		Importance: Medium, Mode: ClusterWide,
		Doc: "The largest offset or time index of a segment; a full index rolls the segment. A cap, not a reservation: index files grow with their entries (about 256 KiB for a full 128 MiB segment at the default log.index.interval.bytes), so a large cap costs no disk."},
	{Name: "log.flush.policy", Section: "storage", Type: TypeString, Default: "ack", Validator: oneOf("ack", "interval"),
		Importance: High, Mode: ReadOnly, Wren: true,
		Doc: "ack: a write is acknowledged (and the high watermark moves) only once it is fdatasync'ed on every replica that counts toward acks, so it survives power loss on all nodes at once. interval trades that durability for Kafka's page-cache behaviour: writes are acknowledged from memory and flushed by log.flush.interval.messages and log.flush.interval.ms, so a power cut can lose acknowledged data."},
	{Name: "log.flush.interval.messages", Section: "storage", Type: TypeLong, Default: int64(math.MaxInt64), Validator: atLeast(1), Topic: "flush.messages",
		Importance: High, Mode: ClusterWide,
		Doc: "With log.flush.policy interval: fdatasync a partition after this many messages."},
	{Name: "log.flush.interval.ms", Section: "storage", Type: TypeLong, Default: nil, Validator: atLeast(0), Topic: "flush.ms",
		Importance: High, Mode: ClusterWide,
		Doc: "With log.flush.policy interval: fdatasync a partition when its oldest unflushed message is this old. Unset: log.flush.scheduler.interval.ms."},
	{Name: "log.flush.scheduler.interval.ms", Section: "storage", Type: TypeLong, Default: int64(math.MaxInt64), Validator: atLeast(0), Topic: "flush.ms",
		Importance: High, Mode: ReadOnly,
		Doc: "With log.flush.policy interval: how often to look for partitions due a flush."},
	{Name: "log.flush.offset.checkpoint.interval.ms", Section: "storage", Type: TypeInt, Default: int64(60000), Validator: atLeast(0),
		Importance: High, Mode: ReadOnly,
		Doc: "How often the recovery point of each partition is written to recovery-point-offset-checkpoint; recovery after a crash scans the log from there."},
	{Name: "log.cleanup.policy", Section: "storage", Type: TypeList, Default: []string{"delete"}, Validator: listOf("compact", "delete"), Topic: "cleanup.policy",
		Importance: Medium, Mode: ClusterWide,
		Doc: "delete removes old segments by retention time and size; compact keeps the last record of every key; both may be given."},
	{Name: "log.open.files.max", Section: "storage", Type: TypeInt, Default: int64(0), Validator: atLeast(0),
		Importance: Medium, Mode: ReadOnly, Wren: true,
		Doc: "The most segment and index files the broker keeps open (a partition's segment has three). 0 derives it at start from the process's open-file limit (RLIMIT_NOFILE; on Linux Go raises the soft limit to the hard one): the limit, less headroom for client connections (max.connections, at most a quarter of the limit), less 64 for the metadata log, peer and listener sockets, checkpoints and the log cleaner; at least 8 (a set value below 8 is refused at start). Cold files close and reopen on demand, so any number of partitions runs within it; files in use (a fetch's sendfile, a partition's unsynced writes) are never closed. When every file is in use, the operation that needs one more fails with KAFKA_STORAGE_ERROR, which clients retry, and the broker logs it at most every 10 s; the log dir does not fail. wren_storage_open_files shows the files open against the budget."},
	{Name: "log.scrubber.enable", Section: "storage", Type: TypeBoolean, Default: true,
		Importance: Medium, Mode: ReadOnly, Wren: true,
		Doc: "Re-read every segment in the background, check every batch's CRC-32C and the offset indexes, so damaged data on a flash card is found before a consumer meets it. A damaged partition goes offline (KAFKA_STORAGE_ERROR for the damaged offsets, no appends) until repaired with wren storage repair; a bad index is rebuilt in place."},
	{Name: "log.scrubber.io.max.bytes.per.second", Section: "storage", Type: TypeLong, Default: int64(mib), Validator: atLeast(1),
		Importance: Medium, Mode: ReadOnly, Wren: true,
		Doc: "The scrubber's read rate cap. 1 MiB/s is a few percent of what an SD card or eMMC reads sequentially, so produce and fetch barely notice it; a pass over 8 GiB of logs takes about two and a half hours."},
	{Name: "log.scrubber.interval.ms", Section: "storage", Type: TypeLong, Default: int64(86400000), Validator: atLeast(1000),
		Importance: Medium, Mode: ReadOnly, Wren: true,
		Doc: "Time from the start of one scrubber pass to the start of the next; a pass that takes longer is followed at once by the next. The first pass starts when the broker does."},
	{Name: "log.cleaner.enable", Section: "storage", Type: TypeBoolean, Default: true,
		Importance: Medium, Mode: ReadOnly,
		Doc: "Run the log cleaner, which compacts topics with cleanup.policy compact (such as __consumer_offsets)."},
	{Name: "log.cleaner.threads", Section: "storage", Type: TypeInt, Default: int64(1), Validator: atLeast(0),
		Importance: Medium, Mode: ClusterWide,
		Doc: "Partitions compacted at the same time."},
	{Name: "log.cleaner.backoff.ms", Section: "storage", Type: TypeLong, Default: int64(15000), Validator: atLeast(0),
		Importance: Medium, Mode: ClusterWide,
		Doc: "How long the cleaner sleeps when no partition needs compacting."},
	{Name: "log.cleaner.dedupe.buffer.size", Section: "storage", Type: TypeLong, Default: int64(16 * mib), Validator: atLeast(mib),
		Importance: Medium, Mode: ClusterWide, KafkaDefault: "134217728",
		Doc: "Memory for the key map of compaction, shared by all cleaner threads. Kafka's 128 MiB is twice what a small host has in all; 16 MiB compacts about half a million keys per pass."},
	{Name: "log.cleaner.delete.retention.ms", Section: "storage", Type: TypeLong, Default: int64(86400000), Validator: atLeast(0), Topic: "delete.retention.ms",
		Importance: Medium, Mode: ClusterWide,
		Doc: "How long compaction keeps tombstones, so that a consumer reading from the start sees the delete."},
	{Name: "log.cleaner.min.cleanable.ratio", Section: "storage", Type: TypeDouble, Default: 0.5, Validator: betweenDouble(0, 1), Topic: "min.cleanable.dirty.ratio",
		Importance: Medium, Mode: ClusterWide,
		Doc: "Compact a log once this share of it has not been compacted yet."},
	{Name: "log.cleaner.min.compaction.lag.ms", Section: "storage", Type: TypeLong, Default: int64(0), Validator: atLeast(0), Topic: "min.compaction.lag.ms",
		Importance: Medium, Mode: ClusterWide,
		Doc: "The youngest a record may be and still be compacted away."},
	{Name: "log.cleaner.max.compaction.lag.ms", Section: "storage", Type: TypeLong, Default: int64(math.MaxInt64), Validator: atLeast(1), Topic: "max.compaction.lag.ms",
		Importance: Medium, Mode: ClusterWide,
		Doc: "The oldest a record may get before its log is compacted whatever the dirty ratio."},
	{Name: "log.message.timestamp.type", Section: "storage", Type: TypeString, Default: "CreateTime", Validator: oneOf("CreateTime", "LogAppendTime"), Topic: "message.timestamp.type",
		Importance: Medium, Mode: ClusterWide,
		Doc: "CreateTime keeps the producer's timestamps; LogAppendTime stamps the broker's clock on every batch."},
	{Name: "log.message.timestamp.before.max.ms", Section: "storage", Type: TypeLong, Default: int64(math.MaxInt64), Validator: atLeast(0), Topic: "message.timestamp.before.max.ms",
		Importance: Medium, Mode: ClusterWide,
		Doc: "With CreateTime, refuse a batch (INVALID_TIMESTAMP) whose timestamp is further than this behind the broker's clock."},
	{Name: "log.message.timestamp.after.max.ms", Section: "storage", Type: TypeLong, Default: int64(3600000), Validator: atLeast(0), Topic: "message.timestamp.after.max.ms",
		Importance: Medium, Mode: ClusterWide,
		Doc: "With CreateTime, refuse a batch (INVALID_TIMESTAMP) whose timestamp is further than this ahead of the broker's clock. Edge devices with unset clocks hit this; raise it rather than let bad timestamps drive retention."},
	{Name: "log.preallocate", Section: "storage", Type: TypeBoolean, Default: false, Topic: "preallocate",
		Importance: Medium, Mode: ClusterWide,
		Doc: "Reserve disk space for a new segment when it is created (fallocate), so a full disk shows at roll, not mid-write."},
	{Name: "log.segment.delete.delay.ms", Section: "storage", Type: TypeLong, Default: int64(60000), Validator: atLeast(0), Topic: "file.delete.delay.ms",
		Importance: High, Mode: ClusterWide,
		Doc: "How long a segment deleted by retention stays on disk (renamed .deleted), so reads in progress can finish."},
	{Name: "log.dir.failure.timeout.ms", Section: "storage", Type: TypeLong, Default: int64(30000), Validator: atLeast(1),
		Importance: Low, Mode: ReadOnly,
		Doc: "A failed log directory (a failed fdatasync, or a write error other than a full disk) is never retried; one failed because an fdatasync ran out of space recovers in place once space is back above log.dir.min.free.bytes. If the controller cannot be told of a failure within this time, the broker shuts down rather than keep serving stale leaderships."},
	{Name: "log.dir.min.free.bytes", Section: "storage", Type: TypeLong, Default: int64(256 * mib), Validator: atLeast(0),
		Importance: High, Mode: ReadOnly, Wren: true,
		Doc: "Free-space floor of each log dir, with log.dir.min.free.percent; the floor is the smaller of the two, and 0 in either turns it off. Below the floor, Produce to the partitions in the dir gets KAFKA_STORAGE_ERROR, which clients retry, and CreateTopics and CreatePartitions are refused, while retention, compaction and group offset commits go on; in a cluster the node hands the partitions it leads to in-sync replicas and leaves every ISR meanwhile (as with a failed log dir). Writes resume by themselves once free space is an eighth above the floor, and the node takes its leaderships back by the preferred-leader rebalance. Free space is what statfs gives unprivileged users. 256 MiB holds a log cleaner pass over two default 128 MiB segments and leaves the rest of a shared SD card or eMMC room to breathe, so a full disk is met here, with a retriable error, rather than as ENOSPC in the middle of a write (as Redpanda's storage_min_free_bytes)."},
	{Name: "log.dir.min.free.percent", Section: "storage", Type: TypeDouble, Default: 5.0, Validator: betweenDouble(0, 100),
		Importance: High, Mode: ReadOnly, Wren: true,
		Doc: "Free-space floor of each log dir as a percentage of its file system, with log.dir.min.free.bytes (the smaller wins). 5% scales the floor down on small disks, where 256 MiB would be too much: it rules below about 5 GiB (200 MB on a 4 GB card, 1 MiB on a 20 MiB test file system, which leaves most of it usable), while 8 to 64 GB cards get the 256 MiB floor."},
	{Name: "max.decompressed.batch.bytes", Section: "storage", Type: TypeInt, Default: int64(8 * mib), Validator: atLeast(1),
		Importance: Medium, Mode: ReadOnly, Wren: true,
		Doc: "The most bytes one compressed batch may decompress to while it is validated; a batch past it is refused (CORRUPT_MESSAGE), which stops decompression bombs. At least message.max.bytes, at most max.decompressed.inflight.bytes. 8 MiB is eight times the default message.max.bytes: producers bound their batches before compression (1 MB in librdkafka and franz-go, 16 KiB in the Java client), so no real batch comes near it."},
	{Name: "max.decompressed.inflight.bytes", Section: "storage", Type: TypeLong, Default: int64(8 * mib), Validator: atLeast(1),
		Importance: Medium, Mode: ReadOnly, Wren: true,
		Doc: "The most memory all batches being validated at once may decompress into, across connections and partitions. A validation waits for its share before decompressing: the size a batch declares (snappy, zstd), else up to twice max.decompressed.batch.bytes, clamped to this budget (such a batch then decompresses alone). 8 MiB, one batch at the per-batch cap at a time, fits a 64 MiB host. Without it, 50 connections each sending a small batch that expands to the per-batch cap held 50 caps at once."},

	// [replication]
	{Name: "replica.lag.time.max.ms", Section: "replication", Type: TypeLong, Default: int64(30000), Validator: atLeast(1),
		Importance: High, Mode: ReadOnly,
		Doc: "A follower that has not caught up to the leader's log end offset within this time leaves the ISR."},
	{Name: "unclean.leader.election.enable", Section: "replication", Type: TypeBoolean, Default: false, Topic: "unclean.leader.election.enable",
		Importance: High, Mode: ClusterWide,
		Doc: "Let a replica outside the ISR become leader when no ISR member is alive: the partition comes back, but acknowledged records may be lost (the lost range is logged, and kept in the data-loss ledger). The controller decides by the topic's value, else the cluster-wide dynamic default, else its own file; it cannot be set for one broker. Turning it on at run time elects leaderless partitions at once."},
	{Name: "auto.leader.rebalance.enable", Section: "replication", Type: TypeBoolean, Default: true,
		Importance: High, Mode: ReadOnly,
		Doc: "Move leadership back to each partition's preferred replica (the first of its assignment) when the imbalance passes leader.imbalance.per.broker.percentage."},
	{Name: "leader.imbalance.check.interval.seconds", Section: "replication", Type: TypeLong, Default: int64(300), Validator: atLeast(1),
		Importance: High, Mode: ReadOnly,
		Doc: "How often the controller checks leader balance."},
	{Name: "leader.imbalance.per.broker.percentage", Section: "replication", Type: TypeInt, Default: int64(10), Validator: between(0, 100),
		Importance: High, Mode: ReadOnly,
		Doc: "The share of a broker's preferred leaderships held elsewhere that triggers a rebalance."},
	{Name: "replica.fetch.max.bytes", Section: "replication", Type: TypeInt, Default: int64(mib), Validator: atLeast(0),
		Importance: Medium, Mode: ReadOnly,
		Doc: "Bytes a follower asks for per partition in one fetch, at least: a follower of few partitions asks each for an equal share of replica.fetch.response.max.bytes, as each fetch round costs it an fdatasync under log.flush.policy ack. A larger first batch is still returned whole."},
	{Name: "replica.fetch.min.bytes", Section: "replication", Type: TypeInt, Default: int64(1), Validator: atLeast(1),
		Importance: Medium, Mode: ReadOnly,
		Doc: "Bytes a follower's fetch waits for before the leader answers (up to replica.fetch.wait.max.ms)."},
	{Name: "replica.fetch.wait.max.ms", Section: "replication", Type: TypeInt, Default: int64(500), Validator: atLeast(0),
		Importance: Medium, Mode: ReadOnly,
		Doc: "The longest a leader holds a follower's fetch waiting for data. At most replica.lag.time.max.ms, or idle followers would drop out of the ISR."},
	{Name: "replica.fetch.response.max.bytes", Section: "replication", Type: TypeInt, Default: int64(10 * mib), Validator: atLeast(0),
		Importance: Medium, Mode: ReadOnly,
		Doc: "Bytes a follower asks for in one fetch across all partitions."},
	{Name: "replica.fetch.backoff.ms", Section: "replication", Type: TypeInt, Default: int64(1000), Validator: atLeast(0),
		Importance: Medium, Mode: ReadOnly,
		Doc: "How long a follower waits after a fetch error before it fetches again."},
	{Name: "leader.replication.throttled.rate", Section: "replication", Type: TypeLong, Default: int64(math.MaxInt64), Validator: atLeast(0),
		Importance: Medium, Mode: ClusterWide,
		Doc: "Bytes per second this broker serves, as leader, to followers of the partitions its topics name with this broker's id in leader.replication.throttled.replicas (KIP-73). Only followers outside the ISR are held back, but the bytes of every throttled partition count. kafka-reassign-partitions --throttle and wren partitions move --throttle set it for the move and remove it afterwards. 0 holds throttled replicas back entirely."},
	{Name: "follower.replication.throttled.rate", Section: "replication", Type: TypeLong, Default: int64(math.MaxInt64), Validator: atLeast(0),
		Importance: Medium, Mode: ClusterWide,
		Doc: "Bytes per second this broker fetches, as follower, of the partitions its topics name with this broker's id in follower.replication.throttled.replicas (KIP-73), while it is outside their ISR. Set and removed with leader.replication.throttled.rate by a throttled reassignment."},

	// [groups]
	{Name: "group.initial.rebalance.delay.ms", Section: "groups", Type: TypeInt, Default: int64(3000), Validator: atLeast(0),
		Importance: Medium, Mode: ReadOnly,
		Doc: "How long an empty classic group waits for more members before its first rebalance."},
	{Name: "group.min.session.timeout.ms", Section: "groups", Type: TypeInt, Default: int64(6000), Validator: atLeast(1),
		Importance: Medium, Mode: ReadOnly,
		Doc: "The shortest session timeout a classic group member may ask for."},
	{Name: "group.max.session.timeout.ms", Section: "groups", Type: TypeInt, Default: int64(1800000), Validator: atLeast(1),
		Importance: Medium, Mode: ReadOnly,
		Doc: "The longest session timeout a classic group member may ask for."},
	{Name: "group.max.size", Section: "groups", Type: TypeInt, Default: int64(math.MaxInt32), Validator: atLeast(1),
		Importance: Medium, Mode: ReadOnly,
		Doc: "The most members of one classic group; later joins get GROUP_MAX_SIZE_REACHED."},
	{Name: "group.consumer.assignors", Section: "groups", Type: TypeList, Default: []string{"uniform", "range"}, Validator: listOf("uniform", "range"),
		Importance: Medium, Mode: ReadOnly,
		Doc: "Server-side assignors of consumer groups (KIP-848), by name; the first is used when a member names none."},
	{Name: "group.consumer.session.timeout.ms", Section: "groups", Type: TypeInt, Default: int64(45000), Validator: atLeast(1),
		Importance: Medium, Mode: ReadOnly,
		Doc: "A consumer group member that sends no heartbeat for this long is removed."},
	{Name: "group.consumer.min.session.timeout.ms", Section: "groups", Type: TypeInt, Default: int64(45000), Validator: atLeast(1),
		Importance: Medium, Mode: ReadOnly,
		Doc: "The shortest session timeout a consumer group may set."},
	{Name: "group.consumer.max.session.timeout.ms", Section: "groups", Type: TypeInt, Default: int64(60000), Validator: atLeast(1),
		Importance: Medium, Mode: ReadOnly,
		Doc: "The longest session timeout a consumer group may set."},
	{Name: "group.consumer.heartbeat.interval.ms", Section: "groups", Type: TypeInt, Default: int64(5000), Validator: atLeast(1),
		Importance: Medium, Mode: ReadOnly,
		Doc: "How often consumer group members are told to send a heartbeat. Below group.consumer.session.timeout.ms."},
	{Name: "group.consumer.min.heartbeat.interval.ms", Section: "groups", Type: TypeInt, Default: int64(5000), Validator: atLeast(1),
		Importance: Medium, Mode: ReadOnly,
		Doc: "The shortest heartbeat interval a consumer group may set."},
	{Name: "group.consumer.max.heartbeat.interval.ms", Section: "groups", Type: TypeInt, Default: int64(15000), Validator: atLeast(1),
		Importance: Medium, Mode: ReadOnly,
		Doc: "The longest heartbeat interval a consumer group may set."},
	{Name: "group.consumer.max.size", Section: "groups", Type: TypeInt, Default: int64(math.MaxInt32), Validator: atLeast(1),
		Importance: Medium, Mode: ReadOnly,
		Doc: "The most members of one consumer group."},
	{Name: "offsets.topic.num.partitions", Section: "groups", Type: TypeInt, Default: int64(12), Validator: atLeast(1),
		Importance: High, Mode: ReadOnly, KafkaDefault: "50",
		Doc: "Partitions of __consumer_offsets, used when the topic is created. A group's coordinator is the leader of partition hash(group) % the topic's partition count; once the topic exists its real count is used, as in Kafka, so changing this later changes nothing. Kafka's 50 spreads coordinators over large clusters; an edge cluster of one to a few nodes gains nothing from it and pays for every partition in files, open descriptors and start-up time, so wren creates 12, which divide evenly over 1, 2, 3, 4 or 6 nodes."},
	{Name: "offsets.topic.replication.factor", Section: "groups", Type: TypeShort, Default: int64(3), Validator: atLeast(1),
		DefaultDoc: "the number of controller.quorum.voters, at most 3", derive: derivedReplicationFactor,
		Importance: High, Mode: ReadOnly, KafkaDefault: "3",
		Doc: "Replicas of __consumer_offsets. Kafka's 3 leaves a single node without a group coordinator, so wren derives it from the voter count."},
	{Name: "offsets.retention.minutes", Section: "groups", Type: TypeInt, Default: int64(10080), Validator: atLeast(1),
		Importance: High, Mode: ReadOnly,
		Doc: "How long the committed offsets of an empty group are kept."},
	{Name: "offsets.retention.check.interval.ms", Section: "groups", Type: TypeLong, Default: int64(600000), Validator: atLeast(1),
		Importance: High, Mode: ReadOnly,
		Doc: "How often expired offsets are looked for."},
	{Name: "offset.metadata.max.bytes", Section: "groups", Type: TypeInt, Default: int64(4096), Validator: atLeast(0),
		Importance: High, Mode: ReadOnly,
		Doc: "The longest metadata string a client may commit with an offset (OFFSET_METADATA_TOO_LARGE beyond)."},

	// [producers]
	{Name: "producer.id.expiration.ms", Section: "producers", Type: TypeInt, Default: int64(86400000), Validator: atLeast(1),
		Importance: Low, Mode: ClusterWide,
		Doc: "A partition forgets a producer id's sequence state this long after its last write; a later retry gets UNKNOWN_PRODUCER_ID. Bounds the memory of many short-lived producers."},
	{Name: "producer.id.expiration.check.interval.ms", Section: "producers", Type: TypeInt, Default: int64(600000), Validator: atLeast(1),
		Importance: Low, Mode: ReadOnly,
		Doc: "How often expired producer ids are looked for."},
	{Name: "transactional.id.expiration.ms", Section: "producers", Type: TypeInt, Default: int64(604800000), Validator: atLeast(1),
		Importance: High, Mode: ReadOnly,
		Doc: "How long the transaction coordinator keeps a transactional id with no transaction in progress after its last use; then it forgets the id (a tombstone in __transaction_state)."},
	{Name: "transaction.max.timeout.ms", Section: "producers", Type: TypeInt, Default: int64(900000), Validator: atLeast(1),
		Importance: High, Mode: ReadOnly,
		Doc: "The longest transaction.timeout.ms a producer may ask for (INVALID_TRANSACTION_TIMEOUT beyond). A transaction open longer than its timeout is aborted by the coordinator, and holds back read_committed consumers until then."},
	{Name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", Section: "producers", Type: TypeInt, Default: int64(10000), Validator: atLeast(1),
		Importance: Low, Mode: ReadOnly,
		Doc: "How often the transaction coordinator looks for transactions past their timeout (and transactional ids to expire)."},
	{Name: "transaction.state.log.num.partitions", Section: "producers", Type: TypeInt, Default: int64(50), Validator: atLeast(1),
		Importance: High, Mode: ReadOnly,
		Doc: "Partitions of __transaction_state, used when the topic is created (at the first transactional producer). A transactional id's coordinator is the leader of partition hash(id) % the topic's partition count; once the topic exists its real count is used, as in Kafka."},
	{Name: "transaction.state.log.replication.factor", Section: "producers", Type: TypeShort, Default: int64(3), Validator: atLeast(1),
		DefaultDoc: "the number of controller.quorum.voters, at most 3", derive: derivedReplicationFactor,
		Importance: High, Mode: ReadOnly, KafkaDefault: "3",
		Doc: "Replicas of __transaction_state, at most the cluster's nodes."},
	{Name: "transaction.state.log.min.isr", Section: "producers", Type: TypeInt, Default: int64(2), Validator: atLeast(1),
		Importance: High, Mode: ReadOnly,
		Doc: "min.insync.replicas of __transaction_state, at most its replication factor: the transaction coordinator's records are written with acks=all."},

	// [security]
	{Name: "ssl.keystore.type", Section: "security", Type: TypeString, Default: "PEM", Validator: oneOf("PEM"),
		Importance: Medium, Mode: ReadOnly, KafkaDefault: "JKS",
		Doc: "The format of the key store: PEM only (Kafka's KIP-651). Java's JKS and PKCS12 stores are not read; convert them with openssl or keytool."},
	{Name: "ssl.keystore.location", Section: "security", Type: TypeString, Default: "",
		Importance: High, Mode: ReadOnly,
		Doc: "A PEM file holding this broker's certificate chain (leaf first) and its private key, for SSL listeners. The file is read again when it changes (checked every few seconds): new connections get the new certificate, open ones stay up. Set this or ssl.keystore.certificate.chain with ssl.keystore.key."},
	{Name: "ssl.keystore.certificate.chain", Section: "security", Type: TypeString, Default: "",
		Importance: High, Mode: ReadOnly,
		Doc: "The certificate chain in PEM, inline, instead of ssl.keystore.location; goes with ssl.keystore.key."},
	{Name: "ssl.keystore.key", Section: "security", Type: TypeString, Default: "", Sensitive: true,
		Importance: High, Mode: ReadOnly,
		Doc: "The private key in PEM (PKCS#8, PKCS#1 or SEC 1), inline, instead of ssl.keystore.location; goes with ssl.keystore.certificate.chain."},
	{Name: "ssl.key.password", Section: "security", Type: TypeString, Default: "", Sensitive: true,
		Importance: High, Mode: ReadOnly,
		Doc: "The password of an encrypted private key. Only legacy PEM encryption (Proc-Type: 4,ENCRYPTED) is read; an encrypted PKCS#8 key is refused with an error: decrypt it with `openssl pkcs8 -in key.pem -out plain.pem` and protect the file instead."},
	{Name: "ssl.truststore.type", Section: "security", Type: TypeString, Default: "PEM", Validator: oneOf("PEM"),
		Importance: Medium, Mode: ReadOnly, KafkaDefault: "JKS",
		Doc: "The format of the trust store: PEM only."},
	{Name: "ssl.truststore.location", Section: "security", Type: TypeString, Default: "",
		Importance: High, Mode: ReadOnly,
		Doc: "A PEM file of CA certificates that client certificates must chain to (ssl.client.auth requested or required). Reloaded when it changes, as ssl.keystore.location."},
	{Name: "ssl.truststore.certificates", Section: "security", Type: TypeString, Default: "",
		Importance: High, Mode: ReadOnly,
		Doc: "The trusted CA certificates in PEM, inline, instead of ssl.truststore.location."},
	{Name: "ssl.client.auth", Section: "security", Type: TypeString, Default: "none", Validator: oneOf("none", "requested", "required"),
		Importance: Medium, Mode: ReadOnly,
		Doc: "Whether SSL listeners ask clients for a certificate: none; requested (a client may present one, which must then chain to the trust store); required (mutual TLS: a client without a valid certificate is refused during the handshake)."},
	{Name: "ssl.enabled.protocols", Section: "security", Type: TypeList, Default: []string{"TLSv1.2", "TLSv1.3"}, Validator: listOf("TLSv1.2", "TLSv1.3"),
		Importance: Medium, Mode: ReadOnly,
		Doc: "The TLS versions SSL listeners accept. Older ones are not offered at all."},
	{Name: "ssl.cipher.suites", Section: "security", Type: TypeList, Default: []string{}, Validator: cipherSuitesValidator,
		Importance: Low, Mode: ReadOnly,
		Doc: "The TLS 1.2 cipher suites SSL listeners accept, by their IANA names (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256). Empty: Go's secure defaults. TLS 1.3 suites are always the three of the standard and cannot be narrowed; listing them is allowed and changes nothing."},
	{Name: "super.users", Section: "security", Type: TypeList, Default: []string{}, Validator: principalList,
		Importance: Medium, Mode: ReadOnly,
		Doc: "Principals the ACL authorizer allows everything, whatever the ACLs say, as Type:name (User:admin). Kafka writes them separated by semicolons, because an SSL principal's name holds commas; here they are a list (a TOML array). A principal is User: and the SASL user name of a SASL listener's client; a client of a listener without authentication is User:ANONYMOUS."},
	{Name: "allow.everyone.if.no.acl.found", Section: "security", Type: TypeBoolean, Default: nil,
		Importance: Medium, Mode: ReadOnly, KafkaDefault: "false",
		Doc: "What the ACL authorizer answers for a resource no ACL applies to (of any principal): true allows every client, false refuses all but the super users. Unset, wren derives it from the client listeners: true while every client listener is PLAINTEXT, or SSL without ssl.client.auth=required, where clients are anonymous and ACLs could only refuse them; false once a client listener authenticates its clients (SASL_PLAINTEXT, SASL_SSL, or SSL with ssl.client.auth=required, its listener's own value included), as Kafka's false. Once ACLs exist for a resource they decide it either way."},

	{Name: "ssl.principal.mapping.rules", Section: "security", Type: TypeString, Default: "DEFAULT", Validator: principalRulesValidator,
		Importance: Low, Mode: ReadOnly,
		Doc: "How the distinguished name of a client certificate (RFC 2253: CN=Duke,OU=ServiceUsers,O=Org,C=US) becomes the principal's name on SSL listeners: comma-separated rules, tried in order, as Kafka writes them. RULE:pattern/replacement/ replaces a whole-DN match of pattern (a regular expression; $1 is its first group), with /L or /U after it to lower- or upper-case the result; DEFAULT keeps the DN. A DN no rule matches fails the authentication. Patterns are Go regular expressions: Java's back-references and look-arounds are refused."},

	{Name: "bootstrap.admin.user", Section: "security", Type: TypeString, Default: "",
		Importance: Medium, Mode: ReadOnly, Wren: true,
		Doc: "A SCRAM user the acting controller records when the metadata log has no credential of that name, so that a cluster whose listeners all ask for SASL can be administered from its first start; the ACL authorizer counts User:NAME among super.users, so it may do everything from the start. Its credential is bootstrap.admin.scram, or a password in the environment variable WREN_BOOTSTRAP_ADMIN_PASSWORD (SCRAM-SHA-512 and SCRAM-SHA-256 are then derived, 8192 iterations). Recorded once: an existing credential of the user is never replaced, so the key may stay in the file and the variable be removed after the first start. Empty: none."},
	{Name: "bootstrap.admin.scram", Section: "security", Type: TypeString, Default: "", Sensitive: true, Validator: scramSpecValidator,
		Importance: Medium, Mode: ReadOnly, Wren: true,
		Doc: "The bootstrap admin's credential, salted, as kafka-storage format --add-scram takes it: SCRAM-SHA-512=[salt=\"base64\",saltedpassword=\"base64\",iterations=8192] (name= may be given too and must be bootstrap.admin.user). A password= field is refused: the file holds no password."},

	// [http]
	{Name: "http.listen", Section: "http", Type: TypeString, Default: "127.0.0.1:9644", Validator: httpListenValidator,
		Importance: Medium, Mode: ReadOnly, Wren: true,
		Doc: "host:port of the HTTP server (/metrics, /livez, /readyz, /v1/cluster/health). Empty: no HTTP server."},

	// [logging]
	{Name: "logging.level", Section: "logging", Type: TypeString, Default: "info", Validator: oneOf("debug", "info", "warn", "error"),
		Importance: Medium, Mode: ReadOnly, Wren: true,
		Doc: "The least severe log level written."},
	{Name: "logging.format", Section: "logging", Type: TypeString, Default: "text", Validator: oneOf("text", "json"),
		Importance: Medium, Mode: ReadOnly, Wren: true,
		Doc: "text (logfmt) or json lines."},
}

// topicOnly are the topic configs that no broker setting gives a default
// to: Kafka's replication throttle lists (KIP-73), set per topic by a
// throttled reassignment.
var topicOnly = []*TopicEntry{
	{Name: "leader.replication.throttled.replicas", Type: TypeList, Default: []string{}, Validator: throttledReplicasValidator, Importance: Medium,
		Doc: "Replicas whose leader throttles replication to followers outside the ISR, at the leading broker's leader.replication.throttled.rate: partition:broker pairs (\"0:1,0:2\": partition 0 led by broker 1 or 2), or * for every replica of the topic."},
	{Name: "follower.replication.throttled.replicas", Type: TypeList, Default: []string{}, Validator: throttledReplicasValidator, Importance: Medium,
		Doc: "Replicas that throttle their own fetching while outside the ISR, at their broker's follower.replication.throttled.rate: partition:broker pairs (\"0:3\": partition 0's replica on broker 3), or * for every replica of the topic."},
}

// byName indexes the registry; topics indexes the topic-level configs.
var (
	byName = map[string]*Entry{}
	topics = map[string]*TopicEntry{}
	// topicOrder lists topic config names in registry order.
	topicOrder []string
)

func init() {
	for _, e := range registry {
		if _, dup := byName[e.Name]; dup {
			panic("config: duplicate registry entry " + e.Name)
		}
		byName[e.Name] = e
		if e.Topic == "" {
			continue
		}
		t := topics[e.Topic]
		if t == nil {
			t = &TopicEntry{Name: e.Topic, Type: e.Type, Validator: e.Validator, Doc: e.Doc, Importance: e.Importance}
			topics[e.Topic] = t
			topicOrder = append(topicOrder, e.Topic)
		}
		t.Synonyms = append(t.Synonyms, e)
	}
	for _, t := range topicOnly {
		if _, dup := topics[t.Name]; dup {
			panic("config: duplicate topic config " + t.Name)
		}
		topics[t.Name] = t
		topicOrder = append(topicOrder, t.Name)
	}
	checkBindings()
}

func derivedReplicationFactor(values map[string]any) any {
	return min(int64(len(values["controller.quorum.voters"].([]string))), 3)
}

func derivedMinInsyncReplicas(values map[string]any) any {
	return min(values["default.replication.factor"].(int64), 2)
}

var logDirsValidator = custom("a non-empty list of distinct paths", func(v any) error {
	l := v.([]string)
	if len(l) == 0 {
		return fmt.Errorf("List must not be empty")
	}
	for i, d := range l {
		if strings.TrimSpace(d) == "" {
			return fmt.Errorf("Directory %d is empty", i+1)
		}
		if strings.ContainsRune(d, 0) {
			return fmt.Errorf("Directory %q holds a NUL byte", d)
		}
		if slices.Contains(l[:i], d) {
			return fmt.Errorf("Directory %s is listed twice", d)
		}
	}
	return nil
})

// listValidator checks every element of a list setting and reports every
// problem, not just the first, since an operator fixes them all at once.
func listValidator(desc string, nonEmpty bool, elem func(s string, prior []string) error) *Validator {
	return custom(desc, func(v any) error {
		l := v.([]string)
		if nonEmpty && len(l) == 0 {
			return fmt.Errorf("List must not be empty")
		}
		var problems []string
		for i, s := range l {
			if err := elem(s, l[:i]); err != nil {
				problems = append(problems, err.Error())
			}
		}
		if len(problems) > 0 {
			return errors.New(strings.Join(problems, "; "))
		}
		return nil
	})
}

// principalList checks Type:name principals (super.users).
var principalList = listValidator("principals, Type:name", false, func(s string, _ []string) error {
	typ, name, ok := strings.Cut(s, ":")
	if !ok || typ == "" || name == "" {
		return fmt.Errorf("%q is not a principal Type:name (User:admin)", s)
	}
	return nil
})

// listenerList checks NAME://host:port elements with distinct names.
func listenerList(nonEmpty bool) *Validator {
	return listValidator("NAME://host:port, ...", nonEmpty, func(s string, prior []string) error {
		l, err := ParseListener(s)
		if err != nil {
			return err
		}
		for _, p := range prior {
			if q, err := ParseListener(p); err == nil && q.Name == l.Name {
				return fmt.Errorf("listener name %s is used twice", l.Name)
			}
		}
		return nil
	})
}

var (
	listenersValidator  = listenerList(true)
	advertisedValidator = listenerList(false)
)

var listenerNamesValidator = listValidator("listener names", true, func(s string, _ []string) error {
	if !validListenerName(s) {
		return fmt.Errorf("listener name %q must be letters, digits and _", s)
	}
	return nil
})

var votersValidator = listValidator("id@host:port, ...", true, func(s string, prior []string) error {
	v, err := ParseVoter(s)
	if err != nil {
		return err
	}
	for _, p := range prior {
		w, err := ParseVoter(p)
		switch {
		case err != nil:
		case w.ID == v.ID:
			return fmt.Errorf("node id %d is listed twice (%s and %s)", v.ID, w, v)
		case w.Addr() == v.Addr():
			return fmt.Errorf("nodes %d and %d share the address %s", w.ID, v.ID, v.Addr())
		}
	}
	return nil
})

var clusterIDValidator = custom("empty, or 22 characters of URL-safe base64 (a UUID)", func(v any) error {
	s := v.(string)
	if s == "" {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 || len(s) != 22 {
		return fmt.Errorf("cluster id %q is not a base64 UUID like `kafka-storage random-uuid` prints (22 characters)", s)
	}
	return nil
})

var perIPOverridesValidator = custom("empty, or address:count, ...", func(v any) error {
	_, err := ParsePerIPOverrides(v.(string))
	return err
})

var httpListenValidator = custom("empty, or host:port", func(v any) error {
	s := v.(string)
	if s == "" {
		return nil
	}
	_, _, err := splitHostPort(s, 0)
	return err
})

var throttledReplicasValidator = custom("[partitionId]:[brokerId],[partitionId]:[brokerId],... or *", func(v any) error {
	_, err := parseThrottledReplicas(v.([]string))
	return err
})
