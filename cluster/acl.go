package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/security/acl"
)

// ACLs in the metadata: one record per binding created or deleted
// (KindACL), the image's set of them with its authorizer, and the
// controller's CreateACLs and DeleteACLs (the rules are core_acl.go).
// Kafka's AccessControlEntryRecord and RemoveAccessControlEntryRecord
// name a binding by a random id; here the binding is its own key (two
// equal bindings are one ACL, as Kafka keeps them), so a delete record
// carries the whole binding: a reader of the log sees what went.

// ACLRecord creates (Delete false) or deletes (Delete true) one ACL
// binding. The enums are encoded by their Kafka names ("TOPIC",
// "PREFIXED", "READ", "ALLOW"), as kafka-acls prints them.
type ACLRecord struct {
	ResourceType kmsg.ACLResourceType        `json:"resource_type"`
	ResourceName string                      `json:"resource_name"`
	PatternType  kmsg.ACLResourcePatternType `json:"pattern_type"`
	Principal    string                      `json:"principal"`
	Host         string                      `json:"host"`
	Operation    kmsg.ACLOperation           `json:"operation"`
	Permission   kmsg.ACLPermissionType      `json:"permission"`
	Delete       bool                        `json:"delete,omitempty"`
}

func aclRecord(b acl.Binding, del bool) *ACLRecord {
	return &ACLRecord{ResourceType: b.ResourceType, ResourceName: b.ResourceName, PatternType: b.PatternType,
		Principal: b.Principal, Host: b.Host, Operation: b.Operation, Permission: b.Permission, Delete: del}
}

// Binding is the record's binding.
func (r *ACLRecord) Binding() acl.Binding {
	return acl.Binding{ResourceType: r.ResourceType, ResourceName: r.ResourceName, PatternType: r.PatternType,
		Principal: r.Principal, Host: r.Host, Operation: r.Operation, Permission: r.Permission}
}

// aclTable is an image's ACLs. Immutable once its image is published
// (an entry being applied changes only a table of its own, applyBatch),
// and shared by the images that follow until an ACL record applies: the
// sorted list and the authorizer are built once per table, on first use.
type aclTable struct {
	set map[acl.Binding]struct{}

	sortOnce sync.Once
	sorted   []acl.Binding
	// auth is the last authorizer built from this table, with the super
	// users and allowIfNoACL it was built for.
	auth atomic.Pointer[tableAuthorizer]
}

type tableAuthorizer struct {
	superUsers   []string
	allowIfNoACL bool
	a            *acl.Authorizer
}

// applyACL applies r to next (a copy of im). Creating a binding that
// exists, or deleting one that does not, breaks an invariant: the rules
// never write them.
func (next *Image) applyACL(im *Image, offset uint64, r *ACLRecord) error {
	b := r.Binding()
	if err := b.Validate(); err != nil {
		return fmt.Errorf("cluster: metadata record %d: ACL %s: %w", offset, b, err)
	}
	var set map[acl.Binding]struct{}
	if next.batch != nil && next.batch.aclTable {
		set = next.acls.set
	} else {
		if im.acls != nil {
			set = maps.Clone(im.acls.set)
		} else {
			set = map[acl.Binding]struct{}{}
		}
		next.acls = &aclTable{set: set}
		if next.batch != nil {
			next.batch.aclTable = true
		}
	}
	_, had := set[b]
	switch {
	case r.Delete && !had:
		return fmt.Errorf("cluster: metadata record %d deletes ACL %s, which does not exist", offset, b)
	case !r.Delete && had:
		return fmt.Errorf("cluster: metadata record %d creates ACL %s, which exists", offset, b)
	case r.Delete:
		delete(set, b)
	default:
		set[b] = struct{}{}
	}
	return nil
}

// ACLs are the image's ACL bindings in acl.Compare's order. The slice is
// shared: callers must not change it.
func (im *Image) ACLs() []acl.Binding {
	t := im.acls
	if t == nil {
		return nil
	}
	t.sortOnce.Do(func() {
		t.sorted = slices.Collect(maps.Keys(t.set))
		acl.Sort(t.sorted)
	})
	return t.sorted
}

// ACLCount is how many ACLs the image holds, without sorting them.
func (im *Image) ACLCount() int {
	if im == nil || im.acls == nil {
		return 0
	}
	return len(im.acls.set)
}

// HasACL reports whether b is one of the image's ACLs.
func (im *Image) HasACL(b acl.Binding) bool {
	if im.acls == nil {
		return false
	}
	_, ok := im.acls.set[b]
	return ok
}

// emptyAuthorizers caches the authorizer of an image without ACLs.
var emptyAuthorizers atomic.Pointer[tableAuthorizer]

// ACLAuthorizer is the authorizer of the image's ACLs with superUsers
// and allowIfNoACL (acl.New), built once per set of ACLs and kept with
// them: an image that shares its ACLs with the one before shares the
// authorizer, so asking for it on every request costs two atomic loads
// and a comparison of the super users, and it is rebuilt only once an
// ACL record applied (or the arguments changed).
func (im *Image) ACLAuthorizer(superUsers []string, allowIfNoACL bool) *acl.Authorizer {
	cache := &emptyAuthorizers
	if im.acls != nil {
		cache = &im.acls.auth
	}
	if c := cache.Load(); c != nil && c.allowIfNoACL == allowIfNoACL && slices.Equal(c.superUsers, superUsers) {
		return c.a
	}
	c := &tableAuthorizer{superUsers: slices.Clone(superUsers), allowIfNoACL: allowIfNoACL,
		a: acl.New(im.ACLs(), superUsers, allowIfNoACL)}
	cache.Store(c)
	return c.a
}

// aclRecords are the image's ACLs as the records that make them, in
// acl.Compare's order: a snapshot's.
func (im *Image) aclRecords() []ACLRecord {
	var out []ACLRecord
	for _, b := range im.ACLs() {
		out = append(out, *aclRecord(b, false))
	}
	return out
}

// CreateACLs creates ACL bindings (CreateAcls), all in one metadata
// entry (DecideCreateACLs); one error per binding, nil for created or
// already there. When the entry does not commit, every binding that
// would have been created gets the commit's error.
func (c *Controller) CreateACLs(ctx context.Context, bindings []acl.Binding) ([]error, error) {
	var results []error
	err := c.change(ctx, func() {
		r := DecideCreateACLs(c.Image(), c.rules(), bindings)
		results = r.Response
		if err := commitResult(c.commit, r); err != nil {
			for i := range results {
				if results[i] == nil {
					results[i] = err
				}
			}
		}
	})
	return results, err
}

// DeleteACLs deletes the ACL bindings the filters match (DeleteAcls),
// all in one metadata entry (DecideDeleteACLs); one result per filter.
// When the entry does not commit, every filter that matched gets the
// commit's error and no bindings.
func (c *Controller) DeleteACLs(ctx context.Context, filters []acl.Filter) ([]DeleteACLsResult, error) {
	var results []DeleteACLsResult
	err := c.change(ctx, func() {
		r := DecideDeleteACLs(c.Image(), c.rules(), filters)
		results = r.Response
		if err := commitResult(c.commit, r); err != nil {
			for i := range results {
				if results[i].Err == nil && len(results[i].Deleted) > 0 {
					results[i] = DeleteACLsResult{Err: err}
				}
			}
		}
	})
	return results, err
}
