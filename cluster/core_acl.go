package cluster

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/security/acl"
)

// The ACL rules: CreateAcls and DeleteAcls (testdata/rules/acl.txt).

// DecideCreateACLs decides a CreateAcls request as Kafka's AclApis and
// AclControlManager do: a binding that may not be stored (acl.Binding's
// Validate: an UNKNOWN or ANY field, a pattern type other than LITERAL
// and PREFIXED, an empty name, a CLUSTER not named "kafka-cluster", a
// principal not "Type:name", a host neither "*" nor an IP address) is
// INVALID_REQUEST with Kafka's message; a binding that exists, or comes
// twice in the request, succeeds without a second record. One error per
// binding, in the request's order; the created ones are one entry.
func DecideCreateACLs(im *Image, _ RuleConfig, bindings []acl.Binding) Result[[]error] {
	var r Result[[]error]
	added := map[acl.Binding]bool{}
	for _, b := range bindings {
		if err := b.Validate(); err != nil {
			r.Response = append(r.Response, fmt.Errorf("%w: %s", kerr.InvalidRequest, err.Error()))
			continue
		}
		r.Response = append(r.Response, nil)
		if im.HasACL(b) || added[b] {
			continue
		}
		added[b] = true
		r.Records = append(r.Records, Record{Kind: KindACL, ACL: aclRecord(b, false)})
	}
	return r
}

// DeleteACLsResult is one DeleteAcls filter's outcome: the bindings it
// deleted, or why it was refused.
type DeleteACLsResult struct {
	Deleted []acl.Binding
	Err     error
}

// DecideDeleteACLs decides a DeleteAcls request as Kafka's
// AclControlManager does: a filter with an UNKNOWN element is
// INVALID_REQUEST; every other filter deletes the bindings it matches
// (acl.Filter.Matches), listed in acl.Compare's order. A binding two
// filters match is listed by both and deleted once; every deletion of
// the request is one entry.
func DecideDeleteACLs(im *Image, _ RuleConfig, filters []acl.Filter) Result[[]DeleteACLsResult] {
	var r Result[[]DeleteACLsResult]
	deleted := map[acl.Binding]bool{}
	for _, f := range filters {
		if err := f.Validate(); err != nil {
			r.Response = append(r.Response, DeleteACLsResult{Err: fmt.Errorf("%w: %s", kerr.InvalidRequest, err.Error())})
			continue
		}
		var res DeleteACLsResult
		for _, b := range im.ACLs() {
			if !f.Matches(b) {
				continue
			}
			res.Deleted = append(res.Deleted, b)
			if !deleted[b] {
				deleted[b] = true
				r.Records = append(r.Records, Record{Kind: KindACL, ACL: aclRecord(b, true)})
			}
		}
		r.Response = append(r.Response, res)
	}
	return r
}
