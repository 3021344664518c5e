// Package config reads, checks and describes wren's configuration: a TOML
// file whose keys are Apache Kafka's own setting names, either one per node
// or one for the whole cluster, from which each node selects itself by
// node id or by its address among the voters (node.go).
//
// # The registry
//
// Every setting is one Entry in a single registry (registry.go), modelled on
// Kafka's ConfigDef: flattened name, section, type, default, validator,
// documentation, importance, update mode (read-only, per-broker or
// cluster-wide, as Kafka's DynamicBrokerConfig) and, for broker defaults of
// topic configs, the topic-level name (log.segment.bytes ↔ segment.bytes).
// Loading, cross-checks, DescribeConfigs (DescribeBroker, DescribeTopic),
// AlterConfigs (ValidateTopicConfig, ValidateBrokerConfig), Dump and
// config.example.toml all read the registry, and the typed fields of Config
// and TopicConfig are bound to it by their `config` tags; nothing else
// knows a name, type or default. Adding a setting means adding an Entry
// and, unless it is a topic config's broker default, a tagged field. The
// few topic configs no broker setting defaults (Kafka's replication
// throttle lists) are TopicEntries of their own, in topicOnly, with a
// Default.
//
// # The file
//
// Sections group settings; inside the Kafka sections ([broker], [cluster],
// [topics], [storage], [replication], [groups], [producers]) the key is
// Kafka's full name. TOML reads log.segment.bytes as a dotted key, so the
// loader works on key paths rather than tables: the path of a value from
// the root, less the section, joined with dots, is the name. Quoted keys,
// [storage.log] headers, storage.log.segment.bytes at the top level and
// inline tables all flatten to the same name. wren's own sections ([http],
// [logging]) carry their name into the setting's (listen in [http] is
// http.listen).
//
// Loading is strict and reports every problem at once, each as
// file:line:column: syntax errors, unknown sections and keys (with the
// nearest name), a key in the wrong section (with the right one),
// duplicates, wrong types, refused values, and the cross-setting checks of
// check.go (voters, replication factors, listeners, contradicting
// timeouts). Files over MaxFileBytes are refused unread.
//
// # Precedence and sources
//
// A topic config's value comes from, highest first: the topic's override
// (DYNAMIC_TOPIC_CONFIG), then each of its broker synonyms in registry order
// (log.retention.ms before log.retention.minutes before log.retention.hours,
// as Kafka), each from this broker's run-time value (DYNAMIC_BROKER_CONFIG),
// the cluster-wide run-time value (DYNAMIC_DEFAULT_BROKER_CONFIG) or the
// file (STATIC_BROKER_CONFIG); then the first synonym with a default
// (DEFAULT_CONFIG). Hours and minutes are converted to the topic's ms.
//
// The cluster-wide run-time layer also holds keys no registry Entry
// names: uplink.NAME.paused (uplink_pause.go) and the run-time links'
// uplink.NAME.KEY (uplink_dynamic.go), read by the uplinks rather than
// by WithDynamic, and checked with the file's [uplink.NAME] code.
//
// # Defaults
//
// Kafka 4.0's, except where a small edge host is better served, and each
// such Entry records Kafka's value in KafkaDefault:
//
//   - node.id 1, log.dirs ./wren-data, listeners on 127.0.0.1 (9092 for
//     clients, 9093 CONTROLLER) and controller.quorum.voters 1@127.0.0.1:9093,
//     so `wren serve` with no file runs a single-node cluster.
//   - log.segment.bytes 128 MiB instead of 1 GiB: retention deletes whole
//     segments, and small disks cannot spare a gigabyte of slack.
//   - min.insync.replicas 2 instead of 1, so an acknowledged write survives
//     one node's loss. It is capped at default.replication.factor, which is
//     derived from the voter count (at most 3) instead of Kafka's fixed 1; so
//     are offsets.topic.replication.factor and
//     transaction.state.log.replication.factor (Kafka: 3). A single node
//     gets 1 for all four; three voters get 3, 2, 3 and 3.
//   - auto.create.topics.enable false instead of true: a typo in a topic name
//     should fail, not fill a disk.
//   - log.flush.policy "ack" (wren's own): a write is acknowledged only once
//     fdatasync'ed on every replica that counts toward acks. "interval" is
//     Kafka's page-cache behaviour, paced by log.flush.interval.messages and
//     log.flush.interval.ms.
//   - log.cleaner.dedupe.buffer.size 16 MiB instead of 128 MiB, and
//     max.connections 1024 instead of unlimited: memory and descriptors of a
//     small host.
//   - broker.session.timeout.ms 4000 instead of 9000, and
//     broker.heartbeat.interval.ms 1000 instead of 2000: a dead leader's
//     partitions move within about 5 s on a three-node LAN cluster.
//   - controller.quorum.election.backoff.max.ms 500 instead of 1000: a new
//     controller follows a dead one within controller.quorum.fetch.timeout.ms
//     plus this backoff, and 1 s put the worst case past 3 s; the Bully
//     probe round already keeps candidates from splitting the vote.
//   - log.dir.min.free.bytes 256 MiB and log.dir.min.free.percent 5 (wren's
//     own; the smaller wins): a free-space floor below which Produce gets a
//     retriable KAFKA_STORAGE_ERROR, so a full disk is met before ENOSPC.
//   - offsets.topic.num.partitions 12 instead of 50: Kafka's 50 spreads group
//     coordinators over large clusters; a cluster of a few nodes gains
//     nothing and pays per partition in files, descriptors and start-up
//     time. It applies only when __consumer_offsets is created; an existing
//     topic keeps its partition count, which group placement follows.
//   - socket.request.max.bytes 8 MiB instead of 100 MiB, queued.max.request.bytes
//     8 MiB instead of unbounded: memory bounded for a 64 MB host, shared
//     fairly between client addresses (see the keys' docs for the figures).
//     max.connections.per.ip stays unbounded as in Kafka: a cap refuses the
//     devices behind one gateway; fair shares of max.connections protect
//     instead.
//   - sasl.enabled.mechanisms SCRAM-SHA-512 and SCRAM-SHA-256 instead of
//     GSSAPI: Kerberos is not served; PLAIN only when listed, as in Kafka.
//   - allow.everyone.if.no.acl.found, unset, is derived from the client
//     listeners instead of Kafka's false: true while no client listener
//     authenticates its clients (PLAINTEXT, SSL without required client
//     certificates), so a cluster without security keeps serving everyone
//     once an ACL is created for one resource; false as soon as one does.
//
// wren's own settings (Entry.Wren): memory.soft.limit.bytes, cluster.id,
// controller.heartbeat.interval.ms, controller.lease.ms, log.flush.policy,
// log.open.files.max,
// log.scrubber.enable, log.scrubber.io.max.bytes.per.second,
// log.scrubber.interval.ms, log.dir.min.free.bytes, log.dir.min.free.percent,
// max.decompressed.batch.bytes, max.decompressed.inflight.bytes,
// bootstrap.admin.user, bootstrap.admin.scram, http.listen,
// logging.level, logging.format.
//
//   - ssl.keystore.type and ssl.truststore.type PEM instead of JKS: PEM is
//     the only store format read (Kafka's KIP-651 keys); Java stores are
//     converted with openssl or keytool.
//
// listener.security.protocol.map: Kafka's default map; a client listener
// named outside it speaks PLAINTEXT while the map is left at its default
// (files written before the setting existed name listeners INTERNAL and
// the like), and controller listeners speak PLAINTEXT unless mapped to SSL:
// mutual TLS between the peers (ControllerSSL; listener.name.controller.ssl.*
// falling back to the shared ssl.*, client authentication always required,
// a trust store needed). SASL_PLAINTEXT and
// SASL_SSL listeners authenticate with the sasl.* settings; SASL_SSL takes
// the ssl.* settings as SSL does.
//
// Kafka names deliberately absent: process.roles (every wren node is broker
// and voter), log.dir (use
// log.dirs), and log.segment.ms, which Kafka does not have either (the
// broker side of segment.ms is log.roll.ms). Pasting one of the older names
// gets a pointer to the current one.
//
// Invariants: Default passes every check (it panics otherwise); every
// registry default passes its own validator; a setting's name that is a
// dotted prefix of another's in the same section is written quoted (else
// the file could not hold both); Dump(all) of any loaded config loads back to an Equal config.
package config
