package kafka

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/security/acl"
)

// aclController makes f's controller decide ACL changes with the real
// rules on the fixture's image and commit into it.
func aclController(t *testing.T, f *seamFixture) {
	f.controller.createACLs = func(bs []acl.Binding) ([]error, error) {
		r := cluster.DecideCreateACLs(f.metadata.image, cluster.RuleConfig{}, bs)
		f.addRecords(t, r.Records...)
		return r.Response, r.Err
	}
	f.controller.deleteACLs = func(fs []acl.Filter) ([]cluster.DeleteACLsResult, error) {
		r := cluster.DecideDeleteACLs(f.metadata.image, cluster.RuleConfig{}, fs)
		f.addRecords(t, r.Records...)
		return r.Response, r.Err
	}
}

func creation(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = rt, name, pt
	c.Principal, c.Host, c.Operation, c.PermissionType = principal, host, op, perm
	return c
}

// describedACLs prints a DescribeAcls answer one binding a line.
func describedACLs(resp *kmsg.DescribeACLsResponse) string {
	var lines []string
	for _, r := range resp.Resources {
		for _, a := range r.ACLs {
			lines = append(lines, fmt.Sprintf("%s/%s/%s/%s/%s/%s/%s", r.ResourceType, r.ResourceName, r.ResourcePatternType,
				a.Principal, a.Host, a.Operation, a.PermissionType))
		}
	}
	return strings.Join(lines, "\n")
}

func describeACLsReq(version int16, rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType) *kmsg.DescribeACLsRequest {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.Version = version
	req.ResourceType, req.ResourceName, req.ResourcePatternType = rt, name, pt
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	return req
}

// TestCreateDescribeDeleteACLs: bindings are created with Kafka's codes
// per binding, described from the image grouped by resource (v1 and v3
// alike), and deleted by filter with the deleted bindings listed.
func TestCreateDescribeDeleteACLs(t *testing.T) {
	f := newSeamFixture(t)
	aclController(t, f)
	const (
		topic, group, clusterRT = kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeCluster
		lit, pre                = kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
		allow, deny             = kmsg.ACLPermissionTypeAllow, kmsg.ACLPermissionTypeDeny
	)
	for _, version := range []int16{1, 3} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			req := kmsg.NewPtrCreateACLsRequest()
			req.Version = version
			req.Creations = append(req.Creations,
				creation(topic, "orders", lit, "User:alice", "*", kmsg.ACLOperationRead, allow),
				creation(topic, "orders-", pre, "User:alice", "*", kmsg.ACLOperationWrite, allow),
				creation(topic, "orders", lit, "User:bob", "10.0.0.1", kmsg.ACLOperationAll, deny),
				creation(group, "g", lit, "User:alice", "*", kmsg.ACLOperationRead, allow),
				creation(clusterRT, "other", lit, "User:alice", "*", kmsg.ACLOperationAlter, allow),
				creation(topic, "t", kmsg.ACLResourcePatternTypeMatch, "User:alice", "*", kmsg.ACLOperationRead, allow),
				creation(topic, "t", lit, "alice", "*", kmsg.ACLOperationRead, allow),
				creation(topic, "orders", lit, "User:alice", "*", kmsg.ACLOperationRead, allow),
			)
			resp := onWire(t, f.do(t, req).(*kmsg.CreateACLsResponse))
			var got []int16
			for _, r := range resp.Results {
				got = append(got, r.ErrorCode)
				if r.ErrorCode != 0 && (r.ErrorMessage == nil || *r.ErrorMessage == "") {
					t.Errorf("an error without a message: %+v", r)
				}
			}
			if len(resp.Results) != 8 || resp.Results[0].ErrorCode != 0 || resp.Results[3].ErrorCode != 0 || resp.Results[7].ErrorCode != 0 ||
				resp.Results[4].ErrorCode != kerr.InvalidRequest.Code || resp.Results[5].ErrorCode != kerr.InvalidRequest.Code ||
				resp.Results[6].ErrorCode != kerr.InvalidRequest.Code {
				t.Fatalf("results %v", got)
			}
			if m := *resp.Results[4].ErrorMessage; m != "The only valid name for the CLUSTER resource is kafka-cluster" {
				t.Errorf("bad cluster name: message %q", m)
			}

			all := onWire(t, f.do(t, describeACLsReq(version, kmsg.ACLResourceTypeAny, nil, kmsg.ACLResourcePatternTypeAny)).(*kmsg.DescribeACLsResponse))
			want := "TOPIC/orders/LITERAL/User:alice/*/READ/ALLOW\n" +
				"TOPIC/orders/LITERAL/User:bob/10.0.0.1/ALL/DENY\n" +
				"TOPIC/orders-/PREFIXED/User:alice/*/WRITE/ALLOW\n" +
				"GROUP/g/LITERAL/User:alice/*/READ/ALLOW"
			if all.ErrorCode != 0 || describedACLs(all) != want || len(all.Resources) != 3 {
				t.Fatalf("described (code %d, %d resources):\n%s\nwant\n%s", all.ErrorCode, len(all.Resources), describedACLs(all), want)
			}
			name := "orders-1"
			match := onWire(t, f.do(t, describeACLsReq(version, topic, &name, kmsg.ACLResourcePatternTypeMatch)).(*kmsg.DescribeACLsResponse))
			if describedACLs(match) != "TOPIC/orders-/PREFIXED/User:alice/*/WRITE/ALLOW" {
				t.Fatalf("MATCH orders-1 described:\n%s", describedACLs(match))
			}
			bad := onWire(t, f.do(t, describeACLsReq(version, 0, nil, kmsg.ACLResourcePatternTypeAny)).(*kmsg.DescribeACLsResponse))
			if bad.ErrorCode != kerr.InvalidRequest.Code || len(bad.Resources) != 0 {
				t.Fatalf("a filter with an UNKNOWN resource type: code %d, %d resources", bad.ErrorCode, len(bad.Resources))
			}

			del := kmsg.NewPtrDeleteACLsRequest()
			del.Version = version
			principal := "User:alice"
			df := kmsg.NewDeleteACLsRequestFilter()
			df.ResourceType, df.ResourcePatternType, df.Principal = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, &principal
			df.Operation, df.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			unknown := df
			unknown.Operation = 0
			everything := kmsg.NewDeleteACLsRequestFilter()
			everything.ResourceType, everything.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
			everything.Operation, everything.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			del.Filters = append(del.Filters, df, unknown, everything)
			dresp := onWire(t, f.do(t, del).(*kmsg.DeleteACLsResponse))
			if len(dresp.Results) != 3 || dresp.Results[0].ErrorCode != 0 || len(dresp.Results[0].MatchingACLs) != 3 ||
				dresp.Results[1].ErrorCode != kerr.InvalidRequest.Code || len(dresp.Results[2].MatchingACLs) != 4 {
				t.Fatalf("delete results %+v", dresp.Results)
			}
			if m := dresp.Results[0].MatchingACLs[0]; m.ResourceType != topic || m.ResourceName != "orders" || m.Principal != "User:alice" || m.Operation != kmsg.ACLOperationRead {
				t.Fatalf("first deleted %+v", m)
			}
			if left := f.metadata.image.ACLs(); len(left) != 0 {
				t.Fatalf("%d ACLs left", len(left))
			}
		})
	}
}

// TestACLsNotController: a node that is not the controller, and cannot
// forward, answers NOT_CONTROLLER on every binding and filter.
func TestACLsNotController(t *testing.T) {
	f := newSeamFixture(t)
	f.controller.notController = true
	f.s.cfg.NotControllerRetry = -1
	req := kmsg.NewPtrCreateACLsRequest()
	req.Version = 3
	req.Creations = append(req.Creations, creation(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, "User:a", "*",
		kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow))
	resp := onWire(t, f.do(t, req).(*kmsg.CreateACLsResponse))
	if len(resp.Results) != 1 || resp.Results[0].ErrorCode != kerr.NotController.Code {
		t.Fatalf("create results %+v", resp.Results)
	}
	del := kmsg.NewPtrDeleteACLsRequest()
	del.Version = 3
	df := kmsg.NewDeleteACLsRequestFilter()
	df.ResourceType, df.ResourcePatternType, df.Operation, df.PermissionType = 1, 1, 1, 1
	del.Filters = append(del.Filters, df)
	dresp := onWire(t, f.do(t, del).(*kmsg.DeleteACLsResponse))
	if len(dresp.Results) != 1 || dresp.Results[0].ErrorCode != kerr.NotController.Code {
		t.Fatalf("delete results %+v", dresp.Results)
	}
}
