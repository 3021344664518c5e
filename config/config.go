package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
)

// Config is one node's effective configuration. The typed fields are filled
// from the registry's values through their `config` tags (bind), so the
// registry stays the only place that knows names, types and defaults; a
// test fails if a setting has no field or a field no setting. Settings that
// are broker defaults of topic configs (log.segment.bytes, log.retention.*)
// are read through TopicDefaults, with Kafka's precedence already applied.
//
// A Config is immutable once built; share it freely.
type Config struct {
	// Uplinks are the [uplink.NAME] tables, in file order (uplink.go);
	// disabled ones included.
	Uplinks []Uplink

	// [broker]
	NodeID                  int32      `config:"node.id"`
	LogDirs                 []string   `config:"log.dirs"`
	Listeners               []Listener `config:"listeners"`
	AdvertisedListeners     []Listener `config:"advertised.listeners"`
	ControllerListenerNames []string   `config:"controller.listener.names"`
	// ListenerSecurityProtocolMap is the raw value; ListenerProtocol reads it.
	ListenerSecurityProtocolMap string `config:"listener.security.protocol.map"`
	SocketRequestMaxBytes       int32  `config:"socket.request.max.bytes"`
	QueuedMaxRequestBytes       int64  `config:"queued.max.request.bytes"`
	QueuedMaxRequests           int32  `config:"queued.max.requests"`
	MaxConnections              int32  `config:"max.connections"`
	MaxConnectionsPerIP         int32  `config:"max.connections.per.ip"`
	// MaxConnectionsPerIPOverrides is the raw value; ParsePerIPOverrides
	// reads it.
	MaxConnectionsPerIPOverrides string `config:"max.connections.per.ip.overrides"`
	ConnectionsMaxIdleMs         int64  `config:"connections.max.idle.ms"`
	MemorySoftLimitBytes         int64  `config:"memory.soft.limit.bytes"`
	QuotaWindowNum               int32  `config:"quota.window.num"`
	QuotaWindowSizeSeconds       int32  `config:"quota.window.size.seconds"`
	// SASL on SASL_PLAINTEXT and SASL_SSL listeners.
	SaslEnabledMechanisms                 []string `config:"sasl.enabled.mechanisms"`
	SaslServerMaxReceiveSize              int32    `config:"sasl.server.max.receive.size"`
	ConnectionFailedAuthenticationDelayMs int32    `config:"connection.failed.authentication.delay.ms"`
	ConnectionsMaxReauthMs                int64    `config:"connections.max.reauth.ms"`

	// [cluster]
	Voters                        []Voter `config:"controller.quorum.voters"`
	ClusterID                     string  `config:"cluster.id"`
	QuorumFetchTimeoutMs          int32   `config:"controller.quorum.fetch.timeout.ms"`
	QuorumElectionTimeoutMs       int32   `config:"controller.quorum.election.timeout.ms"`
	QuorumElectionBackoffMaxMs    int32   `config:"controller.quorum.election.backoff.max.ms"`
	QuorumRequestTimeoutMs        int32   `config:"controller.quorum.request.timeout.ms"`
	ControllerHeartbeatIntervalMs int32   `config:"controller.heartbeat.interval.ms"`
	ControllerLeaseMs             int32   `config:"controller.lease.ms"`
	BrokerHeartbeatIntervalMs     int32   `config:"broker.heartbeat.interval.ms"`
	BrokerSessionTimeoutMs        int32   `config:"broker.session.timeout.ms"`

	// [topics]
	NumPartitions            int32 `config:"num.partitions"`
	DefaultReplicationFactor int32 `config:"default.replication.factor"`
	AutoCreateTopicsEnable   bool  `config:"auto.create.topics.enable"`

	// [storage]
	LogRetentionCheckIntervalMs        int64  `config:"log.retention.check.interval.ms"`
	LogFlushPolicy                     string `config:"log.flush.policy"` // FlushPolicyAck or FlushPolicyInterval
	LogFlushOffsetCheckpointIntervalMs int32  `config:"log.flush.offset.checkpoint.interval.ms"`
	LogScrubberEnable                  bool   `config:"log.scrubber.enable"`
	LogScrubberIOMaxBytesPerSecond     int64  `config:"log.scrubber.io.max.bytes.per.second"`
	LogScrubberIntervalMs              int64  `config:"log.scrubber.interval.ms"`
	LogCleanerEnable                   bool   `config:"log.cleaner.enable"`
	LogCleanerThreads                  int32  `config:"log.cleaner.threads"`
	LogCleanerBackoffMs                int64  `config:"log.cleaner.backoff.ms"`
	LogCleanerDedupeBufferSize         int64  `config:"log.cleaner.dedupe.buffer.size"`
	LogDirFailureTimeoutMs             int64  `config:"log.dir.failure.timeout.ms"`
	LogOpenFilesMax                    int32  `config:"log.open.files.max"` // 0: derived from RLIMIT_NOFILE
	MaxDecompressedBatchBytes          int32  `config:"max.decompressed.batch.bytes"`
	MaxDecompressedInflightBytes       int64  `config:"max.decompressed.inflight.bytes"`

	// The free-space floor of each log dir.
	LogDirMinFreeBytes   int64   `config:"log.dir.min.free.bytes"`
	LogDirMinFreePercent float64 `config:"log.dir.min.free.percent"`

	// [replication]
	ReplicaLagTimeMaxMs                 int64 `config:"replica.lag.time.max.ms"`
	AutoLeaderRebalanceEnable           bool  `config:"auto.leader.rebalance.enable"`
	LeaderImbalanceCheckIntervalSeconds int64 `config:"leader.imbalance.check.interval.seconds"`
	LeaderImbalancePerBrokerPercentage  int32 `config:"leader.imbalance.per.broker.percentage"`
	ReplicaFetchMaxBytes                int32 `config:"replica.fetch.max.bytes"`
	ReplicaFetchMinBytes                int32 `config:"replica.fetch.min.bytes"`
	ReplicaFetchWaitMaxMs               int32 `config:"replica.fetch.wait.max.ms"`
	ReplicaFetchResponseMaxBytes        int32 `config:"replica.fetch.response.max.bytes"`
	ReplicaFetchBackoffMs               int32 `config:"replica.fetch.backoff.ms"`
	LeaderReplicationThrottledRate      int64 `config:"leader.replication.throttled.rate"`
	FollowerReplicationThrottledRate    int64 `config:"follower.replication.throttled.rate"`

	// [groups]
	GroupInitialRebalanceDelayMs        int32    `config:"group.initial.rebalance.delay.ms"`
	GroupMinSessionTimeoutMs            int32    `config:"group.min.session.timeout.ms"`
	GroupMaxSessionTimeoutMs            int32    `config:"group.max.session.timeout.ms"`
	GroupMaxSize                        int32    `config:"group.max.size"`
	GroupConsumerAssignors              []string `config:"group.consumer.assignors"`
	GroupConsumerSessionTimeoutMs       int32    `config:"group.consumer.session.timeout.ms"`
	GroupConsumerMinSessionTimeoutMs    int32    `config:"group.consumer.min.session.timeout.ms"`
	GroupConsumerMaxSessionTimeoutMs    int32    `config:"group.consumer.max.session.timeout.ms"`
	GroupConsumerHeartbeatIntervalMs    int32    `config:"group.consumer.heartbeat.interval.ms"`
	GroupConsumerMinHeartbeatIntervalMs int32    `config:"group.consumer.min.heartbeat.interval.ms"`
	GroupConsumerMaxHeartbeatIntervalMs int32    `config:"group.consumer.max.heartbeat.interval.ms"`
	GroupConsumerMaxSize                int32    `config:"group.consumer.max.size"`
	OffsetsTopicNumPartitions           int32    `config:"offsets.topic.num.partitions"`
	OffsetsTopicReplicationFactor       int16    `config:"offsets.topic.replication.factor"`
	OffsetsRetentionMinutes             int32    `config:"offsets.retention.minutes"`
	OffsetsRetentionCheckIntervalMs     int64    `config:"offsets.retention.check.interval.ms"`
	OffsetMetadataMaxBytes              int32    `config:"offset.metadata.max.bytes"`

	// [producers]
	ProducerIDExpirationMs              int32 `config:"producer.id.expiration.ms"`
	ProducerIDExpirationCheckIntervalMs int32 `config:"producer.id.expiration.check.interval.ms"`
	TransactionalIDExpirationMs         int32 `config:"transactional.id.expiration.ms"`
	TransactionMaxTimeoutMs             int32 `config:"transaction.max.timeout.ms"`
	TransactionAbortCleanupIntervalMs   int32 `config:"transaction.abort.timed.out.transaction.cleanup.interval.ms"`
	TransactionStateLogNumPartitions    int32 `config:"transaction.state.log.num.partitions"`
	TransactionStateLogReplication      int16 `config:"transaction.state.log.replication.factor"`
	TransactionStateLogMinISR           int32 `config:"transaction.state.log.min.isr"`

	// [security]: the shared values; ListenerSSL applies a listener's
	// own listener.name.NAME.ssl.* over them.
	SSLKeystoreType             string   `config:"ssl.keystore.type"`
	SSLKeystoreLocation         string   `config:"ssl.keystore.location"`
	SSLKeystoreCertificateChain string   `config:"ssl.keystore.certificate.chain"`
	SSLKeystoreKey              string   `config:"ssl.keystore.key"`
	SSLKeyPassword              string   `config:"ssl.key.password"`
	SSLTruststoreType           string   `config:"ssl.truststore.type"`
	SSLTruststoreLocation       string   `config:"ssl.truststore.location"`
	SSLTruststoreCertificates   string   `config:"ssl.truststore.certificates"`
	SSLClientAuth               string   `config:"ssl.client.auth"`
	SSLEnabledProtocols         []string `config:"ssl.enabled.protocols"`
	SSLCipherSuites             []string `config:"ssl.cipher.suites"`
	SSLPrincipalMappingRules    string   `config:"ssl.principal.mapping.rules"`
	// The bootstrap admin (bootstrap.go).
	BootstrapAdminUser       string `config:"bootstrap.admin.user"`
	BootstrapAdminScramValue string `config:"bootstrap.admin.scram"`

	// The ACL authorizer. AllowEveryoneIfNoACL is nil while unset: read
	// it with AllowEveryoneIfNoACLFound, which derives the default.
	SuperUsers           []string `config:"super.users"`
	AllowEveryoneIfNoACL *bool    `config:"allow.everyone.if.no.acl.found"`

	// [http]
	HTTPListen string `config:"http.listen"`

	// [logging]
	LoggingLevel  string `config:"logging.level"`
	LoggingFormat string `config:"logging.format"`

	// TopicDefaults are the topic configs a topic without overrides gets:
	// message.max.bytes, min.insync.replicas, compression.type and every
	// log.* setting with a topic-level name, in topic units.
	TopicDefaults TopicConfig

	file string
	// values holds every entry's value by name (nil for an unset nullable
	// one); defaults the value each would have if nothing set it.
	// Invariant: values and defaults have a key for every registry entry.
	values, defaults map[string]any
	// given holds the settings that were set, in the file or at run time
	// (WithDynamic), and where.
	given map[string]given
	// listenerSSL holds listener.name.NAME.ssl.* by lower-case listener
	// name, then by the ssl.* name it overrides.
	listenerSSL map[string]map[string]given
	// perNodeSSL: a shared file read for no node in particular sets ssl.*
	// in [node.N.security] tables; checkSSL leaves the material to the
	// check of each node.
	perNodeSSL bool
}

// given is a value set explicitly rather than defaulted.
type given struct {
	value  any
	source Source   // SourceStaticBroker, SourceDynamicBroker or SourceDynamicDefaultBroker
	pos    Position // in the file, for SourceStaticBroker
}

// The values of log.flush.policy.
const (
	FlushPolicyAck      = "ack"
	FlushPolicyInterval = "interval"
)

// Default is the configuration of `wren serve` with no file: one node, id
// 1, voter 1@127.0.0.1:9093, clients on PLAINTEXT://127.0.0.1:9092, data in
// ./wren-data, flush policy ack.
func Default() *Config {
	c := newConfig("defaults", nil)
	if errs := check(c, nil); len(errs) > 0 {
		panic(fmt.Sprintf("config: the built-in defaults fail their own checks: %v", errs))
	}
	return c
}

// newConfig builds a Config from the values that were set (by flattened
// name) and fills the rest with defaults, computed in registry order so
// that a derived default sees the values it depends on.
func newConfig(file string, explicit map[string]given) *Config {
	c := &Config{
		file:     file,
		values:   make(map[string]any, len(registry)),
		defaults: make(map[string]any, len(registry)),
		given:    make(map[string]given, len(explicit)),
	}
	for _, e := range registry {
		d := cloneValue(e.Default)
		if e.derive != nil {
			d = e.derive(c.values)
		}
		c.defaults[e.Name] = d
		if g, ok := explicit[e.Name]; ok {
			g.value = cloneValue(g.value)
			c.given[e.Name] = g
			c.values[e.Name] = cloneValue(g.value)
		} else {
			c.values[e.Name] = cloneValue(d)
		}
	}
	c.bind()
	return c
}

// bind fills the typed fields from values.
func (c *Config) bind() {
	bindStruct(reflect.ValueOf(c).Elem(), c.values)
	td, err := c.resolveTopic(nil, nil)
	if err != nil {
		// Every value in c passed its validator, and resolveTopic checks
		// nothing else without overrides.
		panic(fmt.Sprintf("config: topic defaults do not resolve: %v", err))
	}
	c.TopicDefaults = td
}

// File is the name the config was loaded from ("defaults" for Default).
func (c *Config) File() string { return c.file }

// Value returns a setting's effective value by flattened name: bool, int64,
// float64, string or []string, or nil when unset. ok is false for an
// unknown name.
func (c *Config) Value(name string) (v any, ok bool) {
	v, ok = c.values[name]
	return cloneValue(v), ok
}

// Position says where the file set a setting; ok is false when the setting
// has its default.
func (c *Config) Position(name string) (pos Position, ok bool) {
	g, ok := c.given[name]
	if !ok || g.source != SourceStaticBroker {
		return Position{}, false
	}
	return g.pos, true
}

// Equal reports whether two configs have the same effective values, wherever
// those came from.
func (c *Config) Equal(o *Config) bool {
	if !reflect.DeepEqual(c.values, o.values) || len(c.listenerSSL) != len(o.listenerSSL) {
		return false
	}
	for name, m := range c.listenerSSL {
		om := o.listenerSSL[name]
		if len(m) != len(om) {
			return false
		}
		for k, g := range m {
			if og, ok := om[k]; !ok || !reflect.DeepEqual(g.value, og.value) {
				return false
			}
		}
	}
	return true
}

// WithDynamic returns the config this broker runs with after run-time
// alterations: per-broker values over cluster-wide ones over c. Values are
// checked as ValidateBrokerConfig does.
func (c *Config) WithDynamic(dyn *Dynamic) (*Config, error) {
	if dyn == nil {
		return c, nil
	}
	explicit := maps.Clone(c.given)
	// Lowest precedence first, so that the per-broker layer overwrites.
	for _, layer := range []struct {
		values map[string]string
		source Source
	}{{dyn.ClusterDefault, SourceDynamicDefaultBroker}, {dyn.Broker, SourceDynamicBroker}} {
		for _, name := range slices.Sorted(maps.Keys(layer.values)) {
			if _, _, ok := listenerKey(name); ok {
				continue // withDynamicListenerSSL
			}
			if _, _, ok := uplinkLinkKey(name); ok && layer.source == SourceDynamicDefaultBroker {
				// A run-time link: the uplinks read it (RuntimeUplinks),
				// and CheckUplinkChange checked it as a whole.
				continue
			}
			v, err := parseBrokerValue(name, layer.values[name], layer.source == SourceDynamicBroker)
			if err != nil {
				return nil, err
			}
			if IsUplinkKey(name) {
				continue // the uplinks read them (UplinksPaused, RuntimeUplinks)
			}
			explicit[name] = given{value: v, source: layer.source}
		}
	}
	n := newConfig(c.file, explicit)
	n.listenerSSL, n.perNodeSSL = c.listenerSSL, c.perNodeSSL
	if dyn.StoresElsewhere {
		// The TLS material is another node's: checkSSL leaves it alone,
		// as for a file shared by nodes with their own ssl.* tables.
		n.perNodeSSL = true
	}
	if err := n.withDynamicListenerSSL(dyn.ClusterDefault, dyn.Broker, !dyn.StoresElsewhere); err != nil {
		return nil, err
	}
	if errs := check(n, nil); len(errs) > 0 {
		return nil, &AlterError{Err: ErrInvalidValue, Message: errs[0].Msg}
	}
	return n, nil
}

func cloneValue(v any) any {
	if l, ok := v.([]string); ok {
		if l == nil {
			return []string{}
		}
		return slices.Clone(l)
	}
	return v
}

var (
	listenerType = reflect.TypeFor[Listener]()
	voterType    = reflect.TypeFor[Voter]()
)

// bindStruct sets each tagged field of dst from values. The types were
// matched against the registry in init (checkBindings), so a mismatch here
// is a broken invariant.
func bindStruct(dst reflect.Value, values map[string]any) {
	t := dst.Type()
	for i := 0; i < t.NumField(); i++ {
		name := t.Field(i).Tag.Get("config")
		if name == "" {
			continue
		}
		f := dst.Field(i)
		v, ok := values[name]
		if f.Kind() == reflect.Pointer && ok {
			// A boolean without a default: nil while unset.
			f.SetZero()
			if v != nil {
				p := reflect.New(f.Type().Elem())
				p.Elem().SetBool(v.(bool))
				f.Set(p)
			}
			continue
		}
		if !ok || v == nil {
			panic(fmt.Sprintf("config: field %s.%s: no value for %s", t.Name(), t.Field(i).Name, name))
		}
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(v.(bool))
		case reflect.Int16, reflect.Int32, reflect.Int64:
			f.SetInt(v.(int64))
		case reflect.Float64:
			f.SetFloat(v.(float64))
		case reflect.String:
			f.SetString(v.(string))
		case reflect.Slice:
			l := v.([]string)
			out := reflect.MakeSlice(f.Type(), len(l), len(l))
			for j, s := range l {
				out.Index(j).Set(reflect.ValueOf(parseElem(f.Type().Elem(), s)))
			}
			f.Set(out)
		default:
			panic(fmt.Sprintf("config: field %s.%s has unsupported kind %s", t.Name(), t.Field(i).Name, f.Kind()))
		}
	}
}

func parseElem(t reflect.Type, s string) any {
	switch t {
	case listenerType:
		l, err := ParseListener(s)
		if err != nil {
			panic(fmt.Sprintf("config: validated listener does not parse: %v", err))
		}
		return l
	case voterType:
		v, err := ParseVoter(s)
		if err != nil {
			panic(fmt.Sprintf("config: validated voter does not parse: %v", err))
		}
		return v
	}
	return s
}

// fieldKinds lists the Go field types a registry type binds to.
func fieldTypeFits(ft reflect.Type, t Type) bool {
	switch t {
	case TypeBoolean:
		return ft.Kind() == reflect.Bool || ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Bool
	case TypeShort:
		return ft.Kind() == reflect.Int16
	case TypeInt:
		return ft.Kind() == reflect.Int32
	case TypeLong:
		return ft.Kind() == reflect.Int64
	case TypeDouble:
		return ft.Kind() == reflect.Float64
	case TypeString:
		return ft.Kind() == reflect.String
	case TypeList:
		return ft.Kind() == reflect.Slice &&
			(ft.Elem().Kind() == reflect.String || ft.Elem() == listenerType || ft.Elem() == voterType)
	}
	return false
}

// checkBindings panics if a `config` tag names no setting, a type does not
// fit, or a broker field is tagged with a setting that has a topic-level
// name (read those through TopicDefaults).
func checkBindings() {
	walk := func(t reflect.Type, lookup func(string) (Type, bool)) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name := f.Tag.Get("config")
			if name == "" {
				continue
			}
			typ, ok := lookup(name)
			if !ok {
				panic(fmt.Sprintf("config: %s.%s is tagged %q, which is not a setting", t.Name(), f.Name, name))
			}
			if !fieldTypeFits(f.Type, typ) {
				panic(fmt.Sprintf("config: %s.%s is %s but %s is %s", t.Name(), f.Name, f.Type, name, typ))
			}
		}
	}
	walk(reflect.TypeFor[Config](), func(name string) (Type, bool) {
		e, ok := byName[name]
		if !ok || e.Topic != "" {
			return 0, false
		}
		return e.Type, true
	})
	walk(reflect.TypeFor[TopicConfig](), func(name string) (Type, bool) {
		t, ok := topics[name]
		if !ok {
			return 0, false
		}
		return t.Type, true
	})
}
