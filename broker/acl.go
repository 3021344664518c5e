package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/kafka"
	"github.com/wren-broker/wren/security/acl"
)

// The ACL authorizer of this node. The handlers ask it, on every request,
// whether a principal may do an operation on a resource; it answers from
// the ACLs of the latest metadata image this node applied, with
// super.users and allow.everyone.if.no.acl.found. The image keeps the
// authorizer of its ACLs once built (cluster.Image.ACLAuthorizer, an
// atomic pointer shared by the images that follow until an ACL record
// applies), so a question costs two atomic loads, a comparison of the
// super users and the index lookups: nothing is rebuilt per request.

// aclAuthorizer answers Authorize against the latest image.
type aclAuthorizer struct {
	ctrl *cluster.Controller
	// superUsers and allowIfNoACL are read once: both settings are
	// read-only, and the derived default walks the listeners.
	superUsers   []string
	allowIfNoACL bool
}

// Current is the authorizer of the latest image's ACLs.
func (a *aclAuthorizer) Current() *acl.Authorizer {
	return a.ctrl.Image().ACLAuthorizer(a.superUsers, a.allowIfNoACL)
}

// Authorize reports whether principal, connected from host, may do op on
// the resource of type rt named name (acl.Authorizer.Authorize), by the
// latest image's ACLs. It has the method set of kafka's Authorizer.
func (a *aclAuthorizer) Authorize(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return a.Current().Authorize(principal, host, op, rt, name)
}

// AuthorizeAll judges many names of one resource type against one
// image's authorizer, in order (kafka.BatchAuthorizer): Metadata over
// every topic and ListGroups ask it.
func (a *aclAuthorizer) AuthorizeAll(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, names []string) []bool {
	cur := a.Current()
	out := make([]bool, len(names))
	for i, name := range names {
		out[i] = cur.Authorize(principal, host, op, rt, name)
	}
	return out
}

// newACLAuthorizer is the authorizer of ctrl's images with cfg's
// settings.
// The bootstrap admin (bootstrap.admin.user) is a super user: it exists
// to administer a cluster whose listeners all authenticate from its
// first start, ACLs included.
func (b *Broker) newACLAuthorizer(ctrl *cluster.Controller) *aclAuthorizer {
	super := append([]string(nil), b.cfg.SuperUsers...)
	if u := b.cfg.BootstrapAdminUser; u != "" {
		super = append(super, "User:"+u)
	}
	return &aclAuthorizer{ctrl: ctrl, superUsers: super, allowIfNoACL: b.cfg.AllowEveryoneIfNoACLFound()}
}

// kafkaAuthorizer is what the Kafka handlers ask (kafka.Node.Authorizer):
// the test's override when given, else this node's ACL authorizer, or
// nil while it would allow everything (no ACL, allow.everyone.if.no.acl.found
// in effect), so a cluster without ACLs pays nothing per request.
func (b *Broker) kafkaAuthorizer(override func() kafka.Authorizer) func() kafka.Authorizer {
	if override != nil {
		return override
	}
	return func() kafka.Authorizer {
		if b.acls.allowIfNoACL && b.acls.ctrl.Image().ACLCount() == 0 {
			return nil
		}
		return b.acls
	}
}

// Authorizer is the ACL authorizer of the latest metadata image this
// node applied, with super.users and allow.everyone.if.no.acl.found;
// cheap enough to call per request.
func (b *Broker) Authorizer() *acl.Authorizer { return b.acls.Current() }

var _ kafka.BatchAuthorizer = (*aclAuthorizer)(nil)
