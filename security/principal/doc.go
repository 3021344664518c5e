// Package principal maps the distinguished name of a TLS client's
// certificate to the name of its principal, as Kafka's
// ssl.principal.mapping.rules do (KIP-371, Kafka's SslPrincipalMapper).
// It is a leaf: a parser and a mapper over strings, with no I/O, imported
// by config (which refuses bad rules at load) and used through the
// listener's MapPrincipal hook by the protocol's authorization.
//
// # Rules
//
// The rules are a comma-separated list, tried in order; the first that
// matches gives the name:
//
//	RULE:pattern/replacement/[L|U]
//	DEFAULT
//
// DEFAULT maps a DN to itself. RULE matches pattern against the whole DN
// in RFC 2253 form (CN=Duke,OU=ServiceUsers,O=Org,C=US, the most specific
// RDN first, as Java's X500Principal.getName() and Go's pkix.Name.String()
// write it), replaces every match with replacement ($1 is the first
// group) and lower-cases (L) or upper-cases (U) the result. A / or a
// backslash inside pattern or replacement is escaped with a backslash.
// Empty rules are skipped; a DN no rule matches is an error (Kafka fails
// the authentication). The rules are split and read with Kafka's own
// grammar, so a list Kafka accepts is accepted here and one it refuses is
// refused.
//
// # Where Go's regular expressions differ from Java's
//
// Patterns are compiled with Go's regexp (RE2), which covers what mapping
// rules use in practice (anchors, classes, groups, lazy and greedy
// quantifiers, alternation) with the same leftmost-first choice of match.
// A pattern Java would accept may still be refused, or read differently:
//
//   - back-references (\1), look-ahead and look-behind ((?=...),
//     (?<=...)), possessive quantifiers (a*+) and atomic groups ((?>...))
//     do not exist in RE2 and are refused at parse;
//   - character-class intersection ([a-z&&[^b]]) and Java's \p{javaX}
//     classes are refused;
//   - $ matches only at the very end of the DN, where Java's also matches
//     before a final line terminator, and . matches \r (Java's does not);
//     DNs hold neither in practice;
//   - after a non-empty match, a pattern that can also match the empty
//     string does not match again at the end of the DN, where Java's
//     replaceAll would append the replacement once more (RULE:.*/x/ gives
//     x here, xx in Kafka);
//   - L and U change case with Go's Unicode tables, Java with its English
//     locale's; they differ only for a few letters outside ASCII.
//
// The replacement is read as Java's Matcher reads it: $n takes the
// longest group number that exists, ${name} names a group, a backslash
// makes the next character literal, and (as Kafka does) a $n past the
// last group is kept as literal text. A replacement Java would fail on
// at the first client ($1 in a pattern with no group, a trailing
// backslash, an unknown ${name}) is refused here by Parse, at load.
package principal
