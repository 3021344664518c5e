package acl

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ClusterName is the name of the one CLUSTER resource.
const ClusterName = "kafka-cluster"

// Wildcards: WildcardPrincipal and WildcardHost in a binding match every
// principal and host; WildcardName, the name of a LITERAL binding,
// matches every resource of its type.
const (
	WildcardPrincipal = "User:*"
	WildcardHost      = "*"
	WildcardName      = "*"
)

// ErrInvalid is wrapped by the errors of Validate and Filter.Validate:
// Kafka answers them INVALID_REQUEST.
var ErrInvalid = errors.New("acl: invalid")

// Binding is one ACL: Permission of Principal from Host to do Operation
// on the resources of ResourceType that ResourceName and PatternType
// name.
type Binding struct {
	ResourceType kmsg.ACLResourceType
	ResourceName string
	PatternType  kmsg.ACLResourcePatternType
	Principal    string
	Host         string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// invalid is an ErrInvalid with Kafka's message.
type invalid string

func (e invalid) Error() string { return string(e) }
func (e invalid) Is(target error) bool {
	return target == ErrInvalid
}

// Validate reports why b may not be stored, with the message Kafka's
// controller gives (AclControlManager.validateNewAcl and AclApis), or nil.
func (b Binding) Validate() error {
	switch {
	case b.ResourceType < kmsg.ACLResourceTypeTopic || b.ResourceType > kmsg.ACLResourceTypeUser:
		return invalid(fmt.Sprintf("Invalid resourceType %s", b.ResourceType))
	case b.PatternType != kmsg.ACLResourcePatternTypeLiteral && b.PatternType != kmsg.ACLResourcePatternTypePrefixed:
		return invalid(fmt.Sprintf("Invalid patternType %s", b.PatternType))
	case b.Operation < kmsg.ACLOperationAll || b.Operation > kmsg.ACLOperationDescribeTokens:
		return invalid(fmt.Sprintf("Invalid operation %s", b.Operation))
	case b.Permission != kmsg.ACLPermissionTypeAllow && b.Permission != kmsg.ACLPermissionTypeDeny:
		return invalid(fmt.Sprintf("Invalid permissionType %s", b.Permission))
	case b.ResourceName == "":
		return invalid("Resource name should not be empty")
	case b.ResourceType == kmsg.ACLResourceTypeCluster && b.ResourceName != ClusterName:
		return invalid("The only valid name for the CLUSTER resource is " + ClusterName)
	}
	if err := ValidatePrincipal(b.Principal); err != nil {
		return err
	}
	return ValidateHost(b.Host)
}

// ValidatePrincipal checks a principal is "Type:name", both parts not
// empty, as Kafka parses a KafkaPrincipal.
func ValidatePrincipal(p string) error {
	typ, name, ok := strings.Cut(p, ":")
	switch {
	case !ok:
		return invalid(fmt.Sprintf("Could not parse principal from `%s` (no colon is present separating the principal type from the principal name)", p))
	case typ == "" || name == "":
		return invalid(fmt.Sprintf("Could not parse principal from `%s` (the principal type and name must not be empty)", p))
	}
	return nil
}

// ValidateHost checks a host is "*" or an IP address.
func ValidateHost(h string) error {
	if h == WildcardHost {
		return nil
	}
	if _, err := netip.ParseAddr(h); err != nil {
		return invalid(fmt.Sprintf("Invalid host `%s`: neither * nor an IP address", h))
	}
	return nil
}

// String is the binding as kafka-acls prints one.
func (b Binding) String() string {
	return fmt.Sprintf("(pattern=ResourcePattern(resourceType=%s, name=%s, patternType=%s), entry=(principal=%s, host=%s, operation=%s, permissionType=%s))",
		b.ResourceType, b.ResourceName, b.PatternType, b.Principal, b.Host, b.Operation, b.Permission)
}

// Compare orders bindings by resource type, name and pattern type, then
// principal, host, operation and permission: the order DescribeAcls lists
// them in.
func Compare(a, b Binding) int {
	return cmp.Or(
		cmp.Compare(a.ResourceType, b.ResourceType),
		strings.Compare(a.ResourceName, b.ResourceName),
		cmp.Compare(a.PatternType, b.PatternType),
		strings.Compare(a.Principal, b.Principal),
		strings.Compare(a.Host, b.Host),
		cmp.Compare(a.Operation, b.Operation),
		cmp.Compare(a.Permission, b.Permission),
	)
}

// Sort sorts bindings in Compare's order. It runs once per ACL change, not
// per request; sort.Slice, not slices.SortFunc, instantiates no pdqsort for
// Binding (14 KiB of the binary).
func Sort(bindings []Binding) {
	sort.Slice(bindings, func(i, j int) bool { return Compare(bindings[i], bindings[j]) < 0 })
}
