// Package acl is Kafka's access-control model (KIP-11, with KIP-290's
// prefixed resource patterns) as Kafka's StandardAuthorizer decides it:
// the ACL bindings the metadata log stores, the filters DescribeAcls and
// DeleteAcls match them with, and the Authorizer that answers, on every
// request, whether a principal from a host may do an operation on a
// resource. It is a leaf: plain values and pure functions, importing only
// the standard library and kmsg's enums, shared by cluster (which keeps
// the bindings in the metadata image), the protocol's ACL handlers and the
// broker (which hands the handlers the authorizer of the latest image).
//
// # Bindings
//
// A Binding grants (ALLOW) or refuses (DENY) one operation on one resource
// pattern to one principal from one host. Validate holds Kafka's rules for
// a binding that may be stored: a resource type other than ANY and
// UNKNOWN (the CLUSTER resource is named "kafka-cluster"), a LITERAL or
// PREFIXED pattern with a non-empty name, a principal "Type:name"
// ("User:*" is every principal), a host "*" or an IP address, an
// operation other than ANY and UNKNOWN, and ALLOW or DENY. wren has no
// delegation tokens: DELEGATION_TOKEN and USER bindings are stored as
// Kafka stores them and grant nothing here.
//
// # Filters
//
// A Filter selects bindings as DescribeAcls and DeleteAcls filters do
// (Kafka's AclBindingFilter): ANY matches every value of a field, a nil
// name, principal or host any string; the pattern type MATCH selects the
// bindings that would apply to the named resource (the literal name, the
// literal wildcard "*" and every prefix of the name).
//
// # Authorization
//
// New builds an Authorizer once from the bindings, the super users and
// allow.everyone.if.no.acl.found; Authorize is then read-only, safe for
// concurrent use and allocates nothing. Its answer is StandardAuthorizer's:
//
//   - a super user (its principal string among the super users) may do
//     everything;
//   - the bindings that apply to a resource are those of its type named
//     exactly (LITERAL), named "*" (LITERAL) or naming a prefix of it
//     (PREFIXED);
//   - of those, a binding counts when its principal is the caller's or
//     "User:*", its host the caller's or "*", and its operation the one
//     asked, ALL, or, for an ALLOW binding, one that implies it: READ,
//     WRITE, DELETE and ALTER imply DESCRIBE, ALTER_CONFIGS implies
//     DESCRIBE_CONFIGS;
//   - a DENY that counts refuses, whatever ALLOWs count; else an ALLOW
//     that counts grants;
//   - when no binding applies to the resource at all (whatever its
//     principal, host or operation), allowIfNoACL decides; otherwise the
//     answer is no.
//
// The bindings are indexed by resource type and name: a map of literal
// names, a map of prefixes with the sorted list of the prefix lengths in
// use, and within a name a map by principal, so a check costs a few map
// lookups per prefix length, not a scan of every binding.
//
// Hosts are compared as strings, as Kafka compares them; Authorize's host
// is the client's IP address in Go's canonical form (netip.Addr's String
// of the unmapped address, as net.IP's String gives it), and New brings
// the bindings' addresses to that form, so "::0001" in a binding matches
// a client at "::1".
package acl
