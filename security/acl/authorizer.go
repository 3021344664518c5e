package acl

import (
	"net/netip"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Authorizer answers Authorize from an index of bindings built once by
// New. It is immutable: safe for concurrent use.
type Authorizer struct {
	superUsers   map[string]struct{}
	allowIfNoACL bool
	// byType are the bindings by resource type, indexed by its code.
	byType [kmsg.ACLResourceTypeUser + 1]*typeIndex
	n      int
}

// typeIndex holds the bindings of one resource type.
type typeIndex struct {
	// literal are the LITERAL bindings by name, the wildcard "*"
	// included.
	literal map[string]*group
	// prefixed are the PREFIXED bindings by prefix; prefixLens the
	// lengths of those prefixes, sorted and distinct: a name's prefixes
	// to look up are name[:l] for each l not above its length.
	prefixed   map[string]*group
	prefixLens []int
}

// group holds the bindings of one resource pattern by principal.
type group struct {
	byPrincipal map[string][]rule
}

// rule is the rest of a binding.
type rule struct {
	host string
	op   kmsg.ACLOperation
	deny bool
}

// New builds the authorizer of bindings (invalid ones are skipped: the
// metadata never holds one), superUsers (principal strings, "User:admin")
// and allowIfNoACL (allow.everyone.if.no.acl.found).
func New(bindings []Binding, superUsers []string, allowIfNoACL bool) *Authorizer {
	a := &Authorizer{superUsers: make(map[string]struct{}, len(superUsers)), allowIfNoACL: allowIfNoACL}
	for _, u := range superUsers {
		a.superUsers[u] = struct{}{}
	}
	for _, b := range bindings {
		if b.Validate() != nil {
			continue
		}
		ti := a.byType[b.ResourceType]
		if ti == nil {
			ti = &typeIndex{literal: map[string]*group{}, prefixed: map[string]*group{}}
			a.byType[b.ResourceType] = ti
		}
		groups := ti.literal
		if b.PatternType == kmsg.ACLResourcePatternTypePrefixed {
			groups = ti.prefixed
			if !slices.Contains(ti.prefixLens, len(b.ResourceName)) {
				ti.prefixLens = append(ti.prefixLens, len(b.ResourceName))
			}
		}
		g := groups[b.ResourceName]
		if g == nil {
			g = &group{byPrincipal: map[string][]rule{}}
			groups[b.ResourceName] = g
		}
		g.byPrincipal[b.Principal] = append(g.byPrincipal[b.Principal], rule{
			host: canonicalHost(b.Host), op: b.Operation, deny: b.Permission == kmsg.ACLPermissionTypeDeny})
		a.n++
	}
	for _, ti := range a.byType {
		if ti != nil {
			slices.Sort(ti.prefixLens)
		}
	}
	return a
}

// canonicalHost is an address in Go's canonical form (the form Authorize
// is given), "*" as it is.
func canonicalHost(h string) string {
	if h == WildcardHost {
		return h
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		return ip.Unmap().String()
	}
	return h
}

// Len is how many bindings the authorizer holds.
func (a *Authorizer) Len() int { return a.n }

// Authorize reports whether principal ("User:alice"), connected from host
// (its IP address), may do op on the resource of type rt named name (the
// CLUSTER resource is ClusterName), as Kafka's StandardAuthorizer decides
// (see the package documentation). It allocates nothing.
func (a *Authorizer) Authorize(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if _, ok := a.superUsers[principal]; ok {
		return true
	}
	if rt < 0 || int(rt) >= len(a.byType) || a.byType[rt] == nil {
		return a.allowIfNoACL
	}
	ti := a.byType[rt]
	var d decision
	d.check(ti.literal[name], principal, host, op)
	if name != WildcardName && !d.denied {
		d.check(ti.literal[WildcardName], principal, host, op)
	}
	for _, l := range ti.prefixLens {
		if l > len(name) || d.denied {
			break
		}
		d.check(ti.prefixed[name[:l]], principal, host, op)
	}
	switch {
	case d.denied:
		return false
	case d.allowed:
		return true
	case !d.found:
		return a.allowIfNoACL
	}
	return false
}

// decision gathers what the bindings that apply to a resource say.
type decision struct {
	// found: some binding applies to the resource; allowed: an ALLOW
	// counts; denied: a DENY counts.
	found, allowed, denied bool
}

func (d *decision) check(g *group, principal, host string, op kmsg.ACLOperation) {
	if g == nil {
		return
	}
	d.found = true
	d.rules(g.byPrincipal[principal], host, op)
	if principal != WildcardPrincipal {
		d.rules(g.byPrincipal[WildcardPrincipal], host, op)
	}
}

func (d *decision) rules(rules []rule, host string, op kmsg.ACLOperation) {
	for _, r := range rules {
		if (r.host != WildcardHost && r.host != host) || !opMatches(r.op, !r.deny, op) {
			continue
		}
		if r.deny {
			d.denied = true
			return
		}
		d.allowed = true
	}
}

// opMatches reports whether a binding's operation covers the operation
// asked: the same, ALL, or, for an ALLOW, one that implies it.
func opMatches(bound kmsg.ACLOperation, allow bool, asked kmsg.ACLOperation) bool {
	if bound == asked || bound == kmsg.ACLOperationAll {
		return true
	}
	if !allow {
		return false
	}
	switch asked {
	case kmsg.ACLOperationDescribe:
		switch bound {
		case kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
			return true
		}
	case kmsg.ACLOperationDescribeConfigs:
		return bound == kmsg.ACLOperationAlterConfigs
	}
	return false
}
