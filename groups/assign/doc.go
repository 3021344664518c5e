// Package assign holds the consumer group partition assignors as pure
// functions: members and topic metadata in, a GroupAssignment out. No
// goroutines, no clock, no I/O. The broker runs them for KIP-848 groups
// (group.consumer.assignors: "uniform", "range"); a wren client that leads a
// classic group runs them too ("range", "roundrobin", "sticky",
// "cooperative-sticky"), and the classic protocol's ConsumerProtocol bytes
// are encoded and decoded here (EncodeSubscription, DecodeSubscription,
// EncodeAssignment, DecodeAssignment) with kmsg's schemas.
//
// Each assignor follows the Kafka class of the same name, so a mixed group
// of Java, librdkafka and wren members agrees on the result:
//
//	Range             RangeAssignor: per-topic ranges, rack-aware per KIP-881
//	RoundRobin        RoundRobinAssignor: partitions dealt in turn
//	Sticky            StickyAssignor: balanced, keeps current ownership
//	CooperativeSticky CooperativeStickyAssignor: Sticky, revoke before move
//	Uniform           KIP-848 UniformAssignor: Sticky on the coordinator's state
//
// # Invariants
//
// For every assignor and every valid input:
//
//   - Every partition of a topic that some member subscribes to is assigned
//     to exactly one member, and only to a member subscribed to its topic.
//     CooperativeSticky alone leaves some unassigned: those it takes from
//     their owner in this rebalance.
//   - Every member has an entry, partitions sorted by topic then partition.
//   - Determinism: the result depends on the contents of the input only.
//     Members are sorted (static members by group.instance.id first, as
//     Kafka's MemberInfo does), topics by name, partitions by number, and no
//     result depends on map iteration. The same group computed on two
//     brokers, or on a broker and a client, gives the same bytes.
//   - Balance: with identical subscriptions, Range gives each member
//     ⌊P/C⌋ or ⌈P/C⌉ partitions of each topic, and RoundRobin, Sticky and
//     Uniform ⌊N/C⌋ or ⌈N/C⌉ in all. With different subscriptions, Sticky
//     and Uniform end where no partition can move to a subscribed member
//     holding two or more fewer than its owner.
//   - Stickiness: with identical subscriptions, Sticky and Uniform take
//     away from their valid owners the fewest partitions any balanced
//     assignment must; a rebalance of an already balanced group moves
//     nothing.
//   - Revoke first: CooperativeSticky never assigns a partition that some
//     member claims to anyone but the member whose claim won, so no
//     partition has two owners at once.
//
// Inputs from outside are bounded: MaxPartitions per assignment,
// MaxMetadataBytes per decoded subscription or assignment, and decoding
// allocates in proportion to the bytes it was given.
//
// # Gaps
//
//   - Kafka's server-side "range" (KIP-848, Kafka 3.7+) is also sticky;
//     Range here is the classic, non-sticky RangeAssignor. Both are valid
//     assignments; ours may move more partitions on a membership change.
//   - Sticky, CooperativeSticky and Uniform ignore racks.
//   - Topics are named, not identified by topic id: a KIP-848 caller maps
//     ids to names first.
//   - Names compare as Go strings (UTF-8 bytes); Java compares UTF-16 code
//     units. The orders differ only for names with characters above U+FFFF
//     mixed with U+E000–U+FFFF.
package assign
