package cluster

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/security/acl"
)

// TestACLRecordEncoding: an ACL record names its enums as Kafka does, so
// a reader of the log sees "TOPIC" and "READ"; a name it does not know
// does not decode.
func TestACLRecordEncoding(t *testing.T) {
	b := acl.Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "t", PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Principal: "User:a", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}
	data, err := encodeRecord(Record{Kind: KindACL, ACL: aclRecord(b, false)})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"acl","acl":{"resource_type":"TOPIC","resource_name":"t","pattern_type":"LITERAL","principal":"User:a","host":"*","operation":"READ","permission":"ALLOW"}}`
	if string(data) != want {
		t.Fatalf("encoded %s, want %s", data, want)
	}
	r, err := decodeRecord(data)
	if err != nil || r.ACL.Binding() != b || r.ACL.Delete {
		t.Fatalf("decoded %+v, %v", r.ACL, err)
	}
	if _, err := decodeRecord([]byte(strings.Replace(want, `"READ"`, `"READS"`, 1))); err == nil {
		t.Fatal("an unknown operation decoded")
	}
	// A record that decodes but breaks the rules does not apply.
	bad := b
	bad.ResourceName = ""
	if _, err := emptyImage().apply(1, Record{Kind: KindACL, ACL: aclRecord(bad, false)}); err == nil {
		t.Fatal("an ACL without a name applied")
	}
	if _, err := emptyImage().apply(1, Record{Kind: KindACL, ACL: aclRecord(b, true)}); err == nil {
		t.Fatal("the delete of an ACL that does not exist applied")
	}
}

// TestACLAuthorizerCached: the authorizer is built once per set of ACLs:
// images that share the ACLs share it, an ACL record gives the next
// image a new one, and other arguments build another.
func TestACLAuthorizerCached(t *testing.T) {
	b := acl.Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "t", PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Principal: "User:a", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}
	supers := []string{"User:admin"}
	im, err := applyRecords(emptyImage(), 1, []Record{{Kind: KindACL, ACL: aclRecord(b, false)}})
	if err != nil {
		t.Fatal(err)
	}
	a1 := im.ACLAuthorizer(supers, false)
	if a1.Len() != 1 || !a1.Authorize("User:a", "10.0.0.1", kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "t") ||
		a1.Authorize("User:b", "10.0.0.1", kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "t") {
		t.Fatal("the image's authorizer does not hold its ACL")
	}
	if a := im.ACLAuthorizer([]string{"User:admin"}, false); a != a1 {
		t.Fatal("asked again with equal arguments, the image built another authorizer")
	}
	next, err := applyRecords(im, 2, []Record{{Kind: KindCluster, Cluster: &ClusterRecord{ClusterID: "c"}}})
	if err != nil {
		t.Fatal(err)
	}
	if a := next.ACLAuthorizer(supers, false); a != a1 {
		t.Fatal("an image that shares the ACLs built another authorizer")
	}
	if a := next.ACLAuthorizer(supers, true); a == a1 || !a.Authorize("User:b", "h", kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "u") {
		t.Fatal("another allowIfNoACL did not build another authorizer")
	}
	b2 := b
	b2.Principal = "User:b"
	last, err := applyRecords(next, 3, []Record{{Kind: KindACL, ACL: aclRecord(b2, false)}, {Kind: KindACL, ACL: aclRecord(b, true)}})
	if err != nil {
		t.Fatal(err)
	}
	a3 := last.ACLAuthorizer(supers, false)
	if a3.Authorize("User:a", "h", kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "t") ||
		!a3.Authorize("User:b", "h", kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "t") {
		t.Fatal("the authorizer after an ACL change does not hold the new ACLs")
	}
	if len(im.ACLs()) != 1 || im.ACLs()[0] != b {
		t.Fatal("applying the next entry changed the ACLs of the image before")
	}
	if emptyImage().ACLAuthorizer(nil, true) != emptyImage().ACLAuthorizer(nil, true) {
		t.Fatal("images without ACLs do not share their authorizer")
	}
}
