package acl

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Filter selects bindings as a DescribeAcls or DeleteAcls filter does
// (Kafka's AclBindingFilter). ANY in an enum field and nil in a string
// field match every value; PatternType MATCH selects the bindings that
// apply to the resource ResourceName names (all of its type when nil).
type Filter struct {
	ResourceType kmsg.ACLResourceType
	ResourceName *string
	PatternType  kmsg.ACLResourcePatternType
	Principal    *string
	Host         *string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// Any is the filter that matches every binding.
var Any = Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny,
	Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}

// Validate refuses a filter with an UNKNOWN element (a value Kafka does
// not know reads as UNKNOWN), as Kafka refuses one.
func (f Filter) Validate() error {
	var unknown []string
	if f.ResourceType < kmsg.ACLResourceTypeAny || f.ResourceType > kmsg.ACLResourceTypeUser {
		unknown = append(unknown, fmt.Sprintf("resource type %d", f.ResourceType))
	}
	if f.PatternType < kmsg.ACLResourcePatternTypeAny || f.PatternType > kmsg.ACLResourcePatternTypePrefixed {
		unknown = append(unknown, fmt.Sprintf("pattern type %d", f.PatternType))
	}
	if f.Operation < kmsg.ACLOperationAny || f.Operation > kmsg.ACLOperationDescribeTokens {
		unknown = append(unknown, fmt.Sprintf("operation %d", f.Operation))
	}
	if f.Permission < kmsg.ACLPermissionTypeAny || f.Permission > kmsg.ACLPermissionTypeAllow {
		unknown = append(unknown, fmt.Sprintf("permission type %d", f.Permission))
	}
	if len(unknown) > 0 {
		return invalid("The filter contains UNKNOWN elements: " + strings.Join(unknown, ", "))
	}
	return nil
}

// Matches reports whether f selects b (Kafka's
// ResourcePatternFilter.matches and AccessControlEntryFilter.matches).
func (f Filter) Matches(b Binding) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != b.ResourceType {
		return false
	}
	if f.PatternType != kmsg.ACLResourcePatternTypeAny && f.PatternType != kmsg.ACLResourcePatternTypeMatch && f.PatternType != b.PatternType {
		return false
	}
	if f.ResourceName != nil {
		name := *f.ResourceName
		if f.PatternType != kmsg.ACLResourcePatternTypeMatch {
			if name != b.ResourceName {
				return false
			}
		} else {
			switch b.PatternType {
			case kmsg.ACLResourcePatternTypeLiteral:
				if name != b.ResourceName && b.ResourceName != WildcardName {
					return false
				}
			case kmsg.ACLResourcePatternTypePrefixed:
				if !strings.HasPrefix(name, b.ResourceName) {
					return false
				}
			default:
				return false
			}
		}
	}
	if f.Principal != nil && *f.Principal != b.Principal {
		return false
	}
	if f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation != kmsg.ACLOperationAny && f.Operation != b.Operation {
		return false
	}
	return f.Permission == kmsg.ACLPermissionTypeAny || f.Permission == b.Permission
}
