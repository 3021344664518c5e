package broker

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ACLs (KIP-11, KIP-290) through kadm, as kafka-acls and `wren acl`
// manage them, and the node's authorizer that follows them.

// describedLines prints kadm's describe results one binding a line,
// sorted.
func describedLines(t *testing.T, res kadm.DescribeACLsResults) string {
	t.Helper()
	var lines []string
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("describe filter: %v (%s)", r.Err, r.ErrMessage)
		}
		for _, d := range r.Described {
			lines = append(lines, fmt.Sprintf("%s/%s/%s/%s/%s/%s/%s", d.Type, d.Name, d.Pattern, d.Principal, d.Host, d.Operation, d.Permission))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// everyACL is the builder of a filter that matches every binding.
func everyACL() *kadm.ACLBuilder {
	return kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
		Allow().AllowHosts().Deny().DenyHosts().Operations()
}

// TestACLsOneNode: kadm creates ACLs, describes them, gets Kafka's code
// for a binding that may not be stored, deletes by filter; the node's
// authorizer follows every change; the ACLs survive a restart. ApiVersions
// lists the three APIs, v1-3.
func TestACLsOneNode(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, testConfig(t, dir, "[security]\nsuper.users = [\"User:admin\"]\n"))
	cl, adm := newClient(t, b)
	ctx := testContext(t)
	versions, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	listed := 0
	for _, k := range versions.ApiKeys {
		switch kmsg.Key(k.ApiKey) {
		case kmsg.DescribeACLs, kmsg.CreateACLs, kmsg.DeleteACLs:
			if k.MinVersion == 1 && k.MaxVersion == 3 {
				listed++
			}
		}
	}
	if listed != 3 {
		t.Errorf("ApiVersions does not list DescribeAcls, CreateAcls and DeleteAcls v1-3: %+v", versions.ApiKeys)
	}

	// Before any ACL: a PLAINTEXT-only node allows everyone (the derived
	// allow.everyone.if.no.acl.found).
	if a := b.Authorizer(); a.Len() != 0 || !a.Authorize("User:ANONYMOUS", "127.0.0.1", kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, "orders") {
		t.Fatal("without ACLs, a plaintext node's authorizer refuses")
	}
	created, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics("orders").Operations(kadm.OpRead, kadm.OpWrite))
	if err != nil {
		t.Fatal(err)
	}
	more, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:bob").Deny("User:mallory").DenyHosts("10.0.0.9").
		Groups("app-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpRead))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(created, more...) {
		if r.Err != nil {
			t.Fatalf("create %s %s %s: %v (%s)", r.Principal, r.Name, r.Operation, r.Err, r.ErrMessage)
		}
	}
	described, err := adm.DescribeACLs(ctx, everyACL())
	if err != nil {
		t.Fatal(err)
	}
	want := "GROUP/app-/PREFIXED/User:bob/*/READ/ALLOW\n" +
		"GROUP/app-/PREFIXED/User:mallory/10.0.0.9/READ/DENY\n" +
		"TOPIC/orders/LITERAL/User:alice/*/READ/ALLOW\n" +
		"TOPIC/orders/LITERAL/User:alice/*/WRITE/ALLOW"
	if got := describedLines(t, described); got != want {
		t.Fatalf("described:\n%s\nwant\n%s", got, want)
	}

	a := b.Authorizer()
	for _, c := range []struct {
		principal string
		op        kmsg.ACLOperation
		rt        kmsg.ACLResourceType
		name      string
		want      bool
	}{
		{"User:alice", kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, "orders", true},
		{"User:alice", kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, "orders", true},
		{"User:bob", kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "orders", false},
		{"User:admin", kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "orders", true},
		{"User:bob", kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "other", true}, // no ACL on it
		{"User:bob", kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, "app-1", true},
		{"User:alice", kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, "app-1", false},
	} {
		if got := a.Authorize(c.principal, "127.0.0.1", c.op, c.rt, c.name); got != c.want {
			t.Errorf("Authorize(%s, %s, %s, %s) = %t, want %t", c.principal, c.op, c.rt, c.name, got, c.want)
		}
	}
	if b.Authorizer() != a {
		t.Error("asked twice without an ACL change, the node built its authorizer again")
	}

	// Refused with Kafka's code: a CLUSTER resource of another name.
	bad := kmsg.NewPtrCreateACLsRequest()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeCluster, "my-cluster", kmsg.ACLResourcePatternTypeLiteral
	c.Principal, c.Host, c.Operation, c.PermissionType = "User:alice", "*", kmsg.ACLOperationAlter, kmsg.ACLPermissionTypeAllow
	bad.Creations = append(bad.Creations, c)
	resp, err := bad.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) != 1 || resp.Results[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("a CLUSTER ACL named my-cluster: %+v", resp.Results)
	}

	deleted, err := adm.DeleteACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("orders").Operations(kadm.OpWrite))
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 1 || deleted[0].Err != nil || len(deleted[0].Deleted) != 1 || deleted[0].Deleted[0].Operation != kadm.OpWrite {
		t.Fatalf("delete alice's WRITE: %+v", deleted)
	}
	if b.Authorizer().Authorize("User:alice", "127.0.0.1", kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, "orders") {
		t.Error("after the delete alice may still write")
	}

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = startBroker(t, testConfig(t, dir, "[security]\nsuper.users = [\"User:admin\"]\n"))
	_, adm = newClient(t, b)
	described, err = adm.DescribeACLs(ctx, everyACL())
	if err != nil {
		t.Fatal(err)
	}
	want = "GROUP/app-/PREFIXED/User:bob/*/READ/ALLOW\n" +
		"GROUP/app-/PREFIXED/User:mallory/10.0.0.9/READ/DENY\n" +
		"TOPIC/orders/LITERAL/User:alice/*/READ/ALLOW"
	if got := describedLines(t, described); got != want {
		t.Fatalf("after the restart described:\n%s\nwant\n%s", got, want)
	}
	if b.Authorizer().Len() != 3 {
		t.Fatalf("after the restart the authorizer holds %d ACLs", b.Authorizer().Len())
	}
}

// TestACLsThreeNodes: ACLs created through a node that is not the
// controller (forwarded) are described by another, and every node's
// authorizer holds them; a delete through the third node reaches all.
func TestACLsThreeNodes(t *testing.T) {
	brokers := startThreeNodes(t, func(_ int, text string) string {
		return text + "\n[security]\nallow.everyone.if.no.acl.found = false\nsuper.users = [\"User:ANONYMOUS\"]\n"
	}, nil)
	ctx := testContext(t)
	// A kadm client pinned to one node: its requests go there.
	adminAt := func(b *Broker) *kadm.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.RequestTimeoutOverhead(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return kadm.NewClient(cl)
	}
	ctrl := actingController(t, brokers).Controller().NodeID()
	var others []*Broker
	for _, b := range brokers {
		if b.Controller().NodeID() != ctrl {
			others = append(others, b)
		}
	}
	// kadm sends CreateAcls and DeleteAcls to any broker; a raw request
	// to the pinned node's seed makes it the one that forwards.
	create := kmsg.NewPtrCreateACLsRequest()
	for _, name := range []string{"sensors", "alerts"} {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, name, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:gateway", "*", kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow
		create.Creations = append(create.Creations, c)
	}
	seedRequest := func(b *Broker, req kmsg.Request) kmsg.Response {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.RequestTimeoutOverhead(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		resp, err := cl.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			t.Fatalf("request to node %d: %v", b.Controller().NodeID(), err)
		}
		return resp
	}
	for _, r := range seedRequest(others[0], create).(*kmsg.CreateACLsResponse).Results {
		if r.ErrorCode != 0 {
			t.Fatalf("create through node %d: %v", others[0].Controller().NodeID(), kerr.ErrorForCode(r.ErrorCode))
		}
	}
	want := "TOPIC/alerts/LITERAL/User:gateway/*/WRITE/ALLOW\nTOPIC/sensors/LITERAL/User:gateway/*/WRITE/ALLOW"
	// describesAt polls until node b describes want.
	describesAt := func(b *Broker, want string) {
		t.Helper()
		adm := adminAt(b)
		var got string
		pollFor(t, fmt.Sprintf("node %d describes the ACLs", b.Controller().NodeID()), 10*time.Second, func() bool {
			described, err := adm.DescribeACLs(ctx, everyACL())
			if err != nil {
				return false
			}
			got = describedLines(t, described)
			return got == want
		})
	}
	describesAt(others[1], want)
	for _, b := range brokers {
		pollFor(t, fmt.Sprintf("node %d's authorizer holds the ACLs", b.Controller().NodeID()), 10*time.Second, func() bool {
			return b.Authorizer().Len() == 2
		})
		a := b.Authorizer()
		if !a.Authorize("User:gateway", "10.1.1.1", kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, "alerts") ||
			a.Authorize("User:other", "10.1.1.1", kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, "alerts") ||
			a.Authorize("User:gateway", "10.1.1.1", kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, "unlisted") {
			t.Errorf("node %d's authorizer does not decide by the ACLs (allow.everyone.if.no.acl.found false)", b.Controller().NodeID())
		}
	}

	del := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	name := "sensors"
	f.ResourceType, f.ResourceName, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, &name, kmsg.ACLResourcePatternTypeLiteral
	f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del.Filters = append(del.Filters, f)
	dresp := seedRequest(others[1], del).(*kmsg.DeleteACLsResponse)
	if len(dresp.Results) != 1 || dresp.Results[0].ErrorCode != 0 || len(dresp.Results[0].MatchingACLs) != 1 {
		t.Fatalf("delete through node %d: %+v", others[1].Controller().NodeID(), dresp.Results)
	}
	describesAt(others[0], "TOPIC/alerts/LITERAL/User:gateway/*/WRITE/ALLOW")
	for _, b := range brokers {
		pollFor(t, fmt.Sprintf("node %d's authorizer drops the deleted ACL", b.Controller().NodeID()), 10*time.Second, func() bool {
			return b.Authorizer().Len() == 1
		})
	}
}
