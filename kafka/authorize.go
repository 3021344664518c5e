package kafka

import (
	"net"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Authorization, as Kafka's KafkaApis and AuthHelper do it: each handler
// asks the node's Authorizer whether the session's principal, connected
// from its host, may do an operation on each resource the request names,
// answers a refused item with the API's authorization error code, and
// never acts on it. Each handler's header comment names its rule;
// authorize_test.go holds them in one table, checked against every key of
// the API table.
// Node.Authorizer nil, or returning nil, means no authorization: every
// request is allowed, as before ACLs.

// Authorizer decides whether principal, connected from host, may do op on a resource.
type Authorizer interface {
	Authorize(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool
}

// TypeAuthorizer is an optional ability of an Authorizer: whether
// principal may do op on at least one resource of type rt, by any ACL
// (Kafka's authorizeByResourceType, which InitProducerId asks about
// topics). Without it the handlers ask Authorize about each topic of the
// image.
type TypeAuthorizer interface {
	AuthorizeAny(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool
}

// BatchAuthorizer is an optional ability of an Authorizer: many names of
// one resource type judged in one call (one lock, one look-up of the
// principal's ACLs), answered in order. Metadata over every topic and
// ListGroups use it.
type BatchAuthorizer interface {
	AuthorizeAll(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, names []string) []bool
}

// ClusterResourceName is the name of the one CLUSTER resource, as in
// Kafka.
const ClusterResourceName = "kafka-cluster"

// AnonymousPrincipal is the principal of a session that did not
// authenticate: no SASL, and no client certificate.
const AnonymousPrincipal = "User:ANONYMOUS"

// AuthzObserver is told about every refused authorization, for the
// metric of denials by resource type, when the Server's Observer
// implements it too. resourceType is lower case: "topic", "group",
// "cluster", "transactional_id".
type AuthzObserver interface {
	AuthorizationDenied(resourceType string)
}

// authz is one request's authorization context: the Authorizer in force
// when the request arrived (nil: everything is allowed), and who asks.
type authz struct {
	s         *Server
	a         Authorizer
	req       *Request
	principal string
	host      string
}

// authz returns req's authorization context. It reads Node.Authorizer
// once, so a request is judged by one set of ACLs throughout.
func (s *Server) authz(req *Request) authz {
	z := authz{s: s, req: req}
	if internalSession(req) {
		// Never Node.Authorizer: the internal principal may do what
		// internalAuthorizer allows, whatever the ACLs say.
		ia := internalAuthorizer{key: kmsg.Key(req.Header.ApiKey)}
		if w := s.internalWrite.Load(); w != nil {
			ia.write = *w
		}
		z.a, z.principal, z.host = ia, InternalPrincipal, req.Session.Host()
		return z
	}
	if n := s.broker; n != nil && n.Authorizer != nil {
		z.a = n.Authorizer()
	}
	if z.a != nil && req != nil && req.Session != nil {
		z.principal, z.host = req.Session.Principal(), req.Session.Host()
	} else if z.a != nil {
		z.principal = AnonymousPrincipal
	}
	return z
}

// authorized reports whether req's principal may do op on the resource,
// and logs and counts a refusal.
func (s *Server) authorized(req *Request, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return s.authz(req).allow(op, rt, name)
}

// on reports whether authorization is in force.
func (z authz) on() bool { return z.a != nil }

// allow reports whether the principal may do op on the resource; a
// refusal is logged (at a bounded rate) and counted.
func (z authz) allow(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if z.a == nil {
		return true
	}
	if z.a.Authorize(z.principal, z.host, op, rt, name) {
		return true
	}
	z.denied(op, rt, name)
	return false
}

// check is allow without the log line and the count: for filtering what
// a principal may see (Metadata of every topic, ListGroups) and for the
// authorized-operations bitfields, where Kafka does not log either.
func (z authz) check(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return z.a == nil || z.a.Authorize(z.principal, z.host, op, rt, name)
}

// checker is check as a function of a resource name alone, for a check
// made later, away from the request: it keeps the Authorizer and who
// asks, not the request. nil when authorization is off.
func (z authz) checker(op kmsg.ACLOperation, rt kmsg.ACLResourceType) func(name string) bool {
	if z.a == nil {
		return nil
	}
	a, principal, host := z.a, z.principal, z.host
	return func(name string) bool { return a.Authorize(principal, host, op, rt, name) }
}

// checkAll is check over many names of one resource type, in order, in
// one call when the Authorizer is a BatchAuthorizer.
func (z authz) checkAll(op kmsg.ACLOperation, rt kmsg.ACLResourceType, names []string) []bool {
	out := make([]bool, len(names))
	if z.a == nil {
		for i := range out {
			out[i] = true
		}
		return out
	}
	if b, ok := z.a.(BatchAuthorizer); ok {
		if got := b.AuthorizeAll(z.principal, z.host, op, rt, names); len(got) == len(names) {
			return got
		}
		return out // a wrong answer allows nothing
	}
	for i, name := range names {
		out[i] = z.a.Authorize(z.principal, z.host, op, rt, name)
	}
	return out
}

// allowEvery reports whether the principal may do op on every one of
// names; it stops at the first refusal.
func (z authz) allowEvery(op kmsg.ACLOperation, rt kmsg.ACLResourceType, names []string) bool {
	for _, name := range names {
		if !z.allow(op, rt, name) {
			return false
		}
	}
	return true
}

// allowAny reports whether the principal may do op on some resource of
// type rt (Kafka's authorizeByResourceType), asking the Authorizer about
// names when it cannot answer that itself.
func (z authz) allowAny(op kmsg.ACLOperation, rt kmsg.ACLResourceType, names []string) bool {
	if z.a == nil {
		return true
	}
	if ta, ok := z.a.(TypeAuthorizer); ok {
		return ta.AuthorizeAny(z.principal, z.host, op, rt)
	}
	for _, name := range names {
		if z.a.Authorize(z.principal, z.host, op, rt, name) {
			return true
		}
	}
	return false
}

// configResource is the ACL resource that guards a config resource, and
// the code of a refusal, as Kafka's: a broker's and a broker logger's
// configs (and client metrics') are the cluster's; a topic's and a
// group's their own. An unknown type is left to the handler (ok false).
func configResource(t kmsg.ConfigResourceType, name string) (rt kmsg.ACLResourceType, rname string, code int16, ok bool) {
	switch t {
	case kmsg.ConfigResourceTypeTopic:
		return kmsg.ACLResourceTypeTopic, name, kerr.TopicAuthorizationFailed.Code, true
	case kmsg.ConfigResourceTypeGroupConfig:
		return kmsg.ACLResourceTypeGroup, name, kerr.GroupAuthorizationFailed.Code, true
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeClientMetrics:
		return kmsg.ACLResourceTypeCluster, ClusterResourceName, kerr.ClusterAuthorizationFailed.Code, true
	}
	return 0, "", 0, false
}

// allowConfig is allow for a config resource: 0, or the code of the
// refusal.
func (z authz) allowConfig(op kmsg.ACLOperation, t kmsg.ConfigResourceType, name string) int16 {
	rt, rname, code, ok := configResource(t, name)
	if !ok || z.allow(op, rt, rname) {
		return 0
	}
	return code
}

// supportedOps are the operations each resource type's authorized
// operations bitfield is made of (Kafka's AclEntry.supportedOperations).
var supportedOps = map[kmsg.ACLResourceType][]kmsg.ACLOperation{
	kmsg.ACLResourceTypeTopic: {kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate,
		kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs},
	kmsg.ACLResourceTypeGroup: {kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete},
	kmsg.ACLResourceTypeCluster: {kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite,
		kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe},
}

// operations is the authorized operations bitfield of a resource (KIP-430):
// bit op set for each supported operation the principal may do; every
// supported operation without authorization, as Kafka answers.
func (z authz) operations(rt kmsg.ACLResourceType, name string) int32 {
	var bits int32
	for _, op := range supportedOps[rt] {
		if z.check(op, rt, name) {
			bits |= 1 << uint(op)
		}
	}
	return bits
}

// denied logs a refusal, at most one line a second with the count of
// the lines held back, and counts it for the metrics.
func (z authz) denied(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) {
	rtName := resourceTypeLabel(rt)
	if o, ok := z.s.cfg.Observer.(AuthzObserver); ok {
		o.AuthorizationDenied(rtName)
	}
	if ok, suppressed := z.s.authLog.allow(); ok {
		api := ""
		if z.req != nil {
			api = kmsg.NameForKey(z.req.Header.ApiKey)
		}
		z.s.log.Info("authorization denied", "principal", z.principal, "host", z.host, "api", api,
			"resource_type", rtName, "resource", name, "operation", strings.ToLower(op.String()),
			"suppressed", suppressed)
	}
}

// resourceTypeLabel is rt in lower case, for logs and metric labels.
func resourceTypeLabel(rt kmsg.ACLResourceType) string {
	switch rt {
	case kmsg.ACLResourceTypeTopic:
		return "topic"
	case kmsg.ACLResourceTypeGroup:
		return "group"
	case kmsg.ACLResourceTypeCluster:
		return "cluster"
	case kmsg.ACLResourceTypeTransactionalId:
		return "transactional_id"
	case kmsg.ACLResourceTypeDelegationToken:
		return "delegation_token"
	case kmsg.ACLResourceTypeUser:
		return "user"
	}
	return "unknown"
}

// hostOf is a client address without its port, as ACLs name hosts: the
// IP, without an IPv4-in-IPv6 prefix.
func hostOf(a net.Addr) string {
	switch a := a.(type) {
	case nil:
		return ""
	case *net.TCPAddr:
		if ip4 := a.IP.To4(); ip4 != nil {
			return ip4.String()
		}
		return a.IP.String()
	}
	s := a.String()
	if h, _, err := net.SplitHostPort(s); err == nil {
		return h
	}
	return s
}
