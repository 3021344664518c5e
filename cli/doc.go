// Package cli is wren's command line: `wren serve` runs the broker, every
// other command is an admin or client tool that speaks the Kafka protocol
// to a broker (franz-go's kgo and kadm), or reads wren's files offline
// (dump-log, config).
//
// # Shape
//
// App builds the command tree from an Env: the standard streams, and the
// Serve hook through which the broker is started. Nothing here touches
// os.Stdout, os.Exit or signals; main.go owns those, and tests run the very
// same App in-process with buffers (see helpers_test.go). Main runs an App
// and turns its error into an exit status.
//
// One file per command group (topic.go, produce.go, consume.go with
// balancer.go, offsets.go, group.go with group_seek.go and
// group_offsets.go, cluster.go, config.go, dumplog.go, version.go,
// perf.go); each builds its *cli.Command and keeps its actions short, with
// the work in helpers.
//
// # Conventions users expect
//
// Names, flags and output layouts are Kafka's and rpk's, because scripts
// parse them: `topic describe` prints kafka-topics --describe's lines,
// `offsets` prints kafka-get-offsets' T:P:OFFSET, `dump-log` prints
// kafka-dump-log's lines byte for byte for the same segment, `perf`
// prints kafka-producer-perf-test's and kafka-consumer-perf-test's lines,
// and `group describe` and `group seek` print kafka-consumer-groups'
// columns (--describe, --members, --state, --reset-offsets).
// Every client command takes -b/--bootstrap-server (alias --brokers, env
// WREN_BROKERS) and --format text|json. Flags may follow positional
// arguments (`wren topic create T -p 3`), as with Kafka's tools and rpk,
// and a command's flags may come before its name (`wren -b HOST topic
// list`); urfave/cli v2 stops at the first positional and knows a flag
// only at its own command, so Main reorders the arguments first (args.go).
//
// Errors read as a user needs them (usage.go): said once, without the
// package prefixes that wrap them; an unknown command gets the closest
// command as a suggestion; a bad flag gets one usage line and a pointer
// to --help on stderr, never the whole help on stdout. A timeout names
// the broker's address and the command; a connection closed at its first
// request makes it probe the --bootstrap-server addresses, and one that is
// a CONTROLLER listener is named as such (peer.Probe). A broker's refusal
// reads "CODE: its message" (kafkaReason). `wren completion bash|zsh|fish`
// prints a completion script (completion.go): bash and zsh ask the binary,
// passing the words typed and --generate-bash-completion, which Main
// answers from the command tree without running any command (urfave's own
// handling ran `topic delete T --<TAB>`); fish gets a script generated
// from the command tree, since urfave's fish generator is not in release
// builds (the urfave_cli_no_docs tag). Each registers wren and the name
// the binary was invoked by (./wren).
//
// # Limits
//
// Input from outside is bounded: a produced line by --max-message-bytes, a
// batch read by dump-log by --max-batch-bytes (and the file's size), index
// files by maxIndexFileBytes, DescribeTopicPartitions paging by a page
// count, perf's --record-size by maxPerfRecordBytes. --timeout bounds a
// command, not each request: every request of it shares one deadline,
// --timeout after the command began (withTimeout), so an admin command or
// consume's checks end within it however many requests they make.
// produce also gives up once a record has waited --timeout since its line
// was read (kgo's delivery timeout alone does not end a wait for a
// producer id); time spent waiting for input with every record
// acknowledged does not count, so input that is there at the start is
// done within --timeout and a producer fed by hand keeps running. perf
// produce, which runs for --num-records or --duration, gives up once
// records have waited --timeout with no acknowledgement coming. cluster
// health --watch bounds each look. produce and consume check that their
// topics exist first (kgo never auto-creates a topic, and would otherwise
// retry a missing one for a minute or wait forever).
//
// # Groups
//
// `group` handles classic groups (DescribeGroups) and KIP-848 consumer
// groups (ConsumerGroupDescribe), telling them apart by ListGroups v5's
// group type, or by asking ConsumerGroupDescribe when a broker below v5
// does not know the group as a classic one. LAG is the high watermark
// minus the committed offset; as in Kafka, a partition without a committed
// offset shows "-" and adds nothing to TOTAL-LAG. `group seek` is a dry run
// unless --execute, and --execute commits outside group management
// (generation -1, no member id), which it refuses while the group has
// members. `group delete-offsets` sends OffsetDelete for the named
// partitions (a topic alone: its partitions in the metadata and those the
// group committed, so a deleted topic's offsets can go too) and prints
// each partition's answer; the coordinator refuses the topics the group's
// members subscribe to.
//
// `consume --group` is a member (kgo.ConsumerGroup) with a client-side
// assignor (--protocol classic) or the broker's (--protocol consumer,
// refused unless every broker serves ConsumerGroupHeartbeat, rather than
// franz-go's silent fall back to classic); it autocommits and commits what
// it printed on exit (-n, --idle-timeout, a signal).
//
// The classic protocol's assignor is wren's own: assignBalancer
// (balancer.go) adapts groups/assign's range, roundrobin, sticky and
// cooperative-sticky to franz-go's GroupBalancer, so the code that assigns
// KIP-848 groups on the broker also assigns the classic groups a wren
// client leads. Subscriptions and assignments are the Java client's bytes
// for each protocol name (assign.EncodeSubscription), so wren, franz-go,
// Java and librdkafka members share a group and any of them may lead it.
// A malformed member subscription fails the leader's join (an error from
// MemberBalancer), never a panic. Eager sticky remembers its last
// assignment itself, as Kafka's StickyAssignor does: franz-go forgets an
// eager member's assignment when it revokes it before rejoining.
//
// # Exit status
//
// 0 on success; 2 for a command line that cannot be understood (unknown
// command or flag, wrong arguments), with a usage line; 1 on any other
// error, printed as "wren: ..." on stderr. config check prints each
// problem itself and exits 1; warnings (settings not in effect yet) leave
// it at 0. storage check exits 3 when it finds damaged data, so a monitor
// tells damage from a failed check. A cancelled context
// (SIGINT, SIGTERM) ends consume and perf normally, with their summaries.
//
// # Not done here
//
//   - consume has no "exit at end of partition" mode; -n, --idle-timeout or
//     a signal ends it.
//   - dump-log reads .log, .index and .timeindex; producer snapshots and
//     Kafka's --index-sanity-check / --verify-index-only are not done.
//   - partitions move/elect-leader and cluster health are not written yet
//     (the broker does not serve them).
//   - group: no --all-groups; seek has no --by-duration, --to-current or
//     --from-file.
//   - The classic assignors ignore racks: the leader passes no partition
//     racks to Range (KIP-881), and wren's members send no client.rack.
package cli
