package kafka

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/groups"
)

// fakeAuthorizer answers with allow (nil allows nothing) and keeps every
// question it was asked.
type fakeAuthorizer struct {
	allow func(q authQuestion) bool

	mu    sync.Mutex
	asked []authQuestion
}

// authQuestion is one Authorize call.
type authQuestion struct {
	principal, host string
	op              kmsg.ACLOperation
	rt              kmsg.ACLResourceType
	name            string
}

func (a *fakeAuthorizer) Authorize(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	q := authQuestion{principal, host, op, rt, name}
	a.mu.Lock()
	a.asked = append(a.asked, q)
	a.mu.Unlock()
	return a.allow != nil && a.allow(q)
}

func (a *fakeAuthorizer) questions() []authQuestion {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.asked)
}

func allowAll(authQuestion) bool { return true }

// use makes a the fixture's authorizer.
func (f *seamFixture) use(a *fakeAuthorizer) {
	f.node.Authorizer = func() Authorizer { return a }
}

// authRule is what an API's refusal looks like: a request at the API's
// highest version, and the error codes of its answer that the refusal
// sets (a refused principal gets exactly refused; an allowed one none of
// the authorization codes).
type authRule struct {
	none    bool // ApiVersions and SASL: no authorization
	req     func() kmsg.Request
	codes   func(kmsg.Response) []int16
	refused []*kerr.Error
}

var (
	taf = kerr.TopicAuthorizationFailed
	gaf = kerr.GroupAuthorizationFailed
	caf = kerr.ClusterAuthorizationFailed
)

func topicPartitionCodes[T any](topics []T, parts func(T) []int16) []int16 {
	var out []int16
	for _, t := range topics {
		out = append(out, parts(t)...)
	}
	return out
}

// authRules has a rule for every key of the API table
// (TestAuthorizationRulesComplete): a new API is not served before its
// authorization is decided.
var authRules = map[kmsg.Key]authRule{
	kmsg.ApiVersions:      {none: true},
	kmsg.SASLHandshake:    {none: true},
	kmsg.SASLAuthenticate: {none: true},
	kmsg.Produce: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrProduceRequest()
			r.Acks, r.TimeoutMillis = 1, 1000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = []byte{}
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		},
		codes: func(m kmsg.Response) []int16 {
			return topicPartitionCodes(m.(*kmsg.ProduceResponse).Topics, func(t kmsg.ProduceResponseTopic) (c []int16) {
				for _, p := range t.Partitions {
					c = append(c, p.ErrorCode)
				}
				return c
			})
		},
		refused: []*kerr.Error{taf},
	},
	kmsg.Fetch: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrFetchRequest()
			r.ReplicaID, r.SessionEpoch, r.MaxBytes = -1, -1, 1<<20
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 1 << 20
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		},
		codes: func(m kmsg.Response) []int16 {
			r := m.(*kmsg.FetchResponse)
			return append([]int16{r.ErrorCode}, topicPartitionCodes(r.Topics, func(t kmsg.FetchResponseTopic) (c []int16) {
				for _, p := range t.Partitions {
					c = append(c, p.ErrorCode)
				}
				return c
			})...)
		},
		refused: []*kerr.Error{nil, taf},
	},
	kmsg.ListOffsets: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrListOffsetsRequest()
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp = -1
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		},
		codes: func(m kmsg.Response) []int16 {
			return topicPartitionCodes(m.(*kmsg.ListOffsetsResponse).Topics, func(t kmsg.ListOffsetsResponseTopic) (c []int16) {
				for _, p := range t.Partitions {
					c = append(c, p.ErrorCode)
				}
				return c
			})
		},
		refused: []*kerr.Error{taf},
	},
	kmsg.Metadata: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr("t")
			r.Topics = append(r.Topics, rt)
			return r
		},
		codes: func(m kmsg.Response) (c []int16) {
			for _, t := range m.(*kmsg.MetadataResponse).Topics {
				c = append(c, t.ErrorCode)
			}
			return c
		},
		refused: []*kerr.Error{taf},
	},
	kmsg.OffsetCommit: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrOffsetCommitRequest()
			r.Group, r.Generation, r.MemberID = "g", 1, "m"
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Offset = 3
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		},
		codes: func(m kmsg.Response) []int16 {
			return topicPartitionCodes(m.(*kmsg.OffsetCommitResponse).Topics, func(t kmsg.OffsetCommitResponseTopic) (c []int16) {
				for _, p := range t.Partitions {
					c = append(c, p.ErrorCode)
				}
				return c
			})
		},
		refused: []*kerr.Error{gaf},
	},
	kmsg.TxnOffsetCommit: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrTxnOffsetCommitRequest()
			r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch = "tx", "g", 7, 0
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Offset = 3
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		},
		codes: func(m kmsg.Response) []int16 {
			return topicPartitionCodes(m.(*kmsg.TxnOffsetCommitResponse).Topics, func(t kmsg.TxnOffsetCommitResponseTopic) (c []int16) {
				for _, p := range t.Partitions {
					c = append(c, p.ErrorCode)
				}
				return c
			})
		},
		refused: []*kerr.Error{kerr.TransactionalIDAuthorizationFailed},
	},
	kmsg.OffsetFetch: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			rg := kmsg.NewOffsetFetchRequestGroup()
			rg.Group = "g"
			rt := kmsg.NewOffsetFetchRequestGroupTopic()
			rt.Topic, rt.Partitions = "t", []int32{0}
			rg.Topics = append(rg.Topics, rt)
			r.Groups = append(r.Groups, rg)
			return r
		},
		codes: func(m kmsg.Response) (c []int16) {
			for _, g := range m.(*kmsg.OffsetFetchResponse).Groups {
				c = append(c, g.ErrorCode)
			}
			return c
		},
		refused: []*kerr.Error{gaf},
	},
	kmsg.FindCoordinator: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorKeys = []string{"g"}
			return r
		},
		codes: func(m kmsg.Response) (c []int16) {
			for _, k := range m.(*kmsg.FindCoordinatorResponse).Coordinators {
				c = append(c, k.ErrorCode)
			}
			return c
		},
		refused: []*kerr.Error{gaf},
	},
	kmsg.JoinGroup: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrJoinGroupRequest()
			r.Group, r.ProtocolType, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = "g", "consumer", 10000, 10000
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name = "range"
			r.Protocols = append(r.Protocols, p)
			return r
		},
		codes:   func(m kmsg.Response) []int16 { return []int16{m.(*kmsg.JoinGroupResponse).ErrorCode} },
		refused: []*kerr.Error{gaf},
	},
	kmsg.Heartbeat: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrHeartbeatRequest()
			r.Group, r.Generation, r.MemberID = "g", 1, "m"
			return r
		},
		codes:   func(m kmsg.Response) []int16 { return []int16{m.(*kmsg.HeartbeatResponse).ErrorCode} },
		refused: []*kerr.Error{gaf},
	},
	kmsg.LeaveGroup: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrLeaveGroupRequest()
			r.Group = "g"
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID = "m"
			r.Members = append(r.Members, m)
			return r
		},
		codes:   func(m kmsg.Response) []int16 { return []int16{m.(*kmsg.LeaveGroupResponse).ErrorCode} },
		refused: []*kerr.Error{gaf},
	},
	kmsg.SyncGroup: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrSyncGroupRequest()
			r.Group, r.Generation, r.MemberID = "g", 1, "m"
			return r
		},
		codes:   func(m kmsg.Response) []int16 { return []int16{m.(*kmsg.SyncGroupResponse).ErrorCode} },
		refused: []*kerr.Error{gaf},
	},
	kmsg.DescribeGroups: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.Groups = []string{"g"}
			return r
		},
		codes: func(m kmsg.Response) (c []int16) {
			for _, g := range m.(*kmsg.DescribeGroupsResponse).Groups {
				c = append(c, g.ErrorCode)
			}
			return c
		},
		refused: []*kerr.Error{gaf},
	},
	kmsg.ListGroups: {
		// Filtered as Kafka does: no error, and no group the principal
		// may not DESCRIBE (the fixture's coordinator lists one).
		req: func() kmsg.Request { return kmsg.NewPtrListGroupsRequest() },
		codes: func(m kmsg.Response) []int16 {
			r := m.(*kmsg.ListGroupsResponse)
			c := []int16{r.ErrorCode}
			for range r.Groups {
				c = append(c, -1)
			}
			return c
		},
		refused: []*kerr.Error{nil},
	},
	kmsg.CreateTopics: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrCreateTopicsRequest()
			r.TimeoutMillis = 1000
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "new", 1, 1
			r.Topics = append(r.Topics, rt)
			return r
		},
		codes: func(m kmsg.Response) (c []int16) {
			for _, t := range m.(*kmsg.CreateTopicsResponse).Topics {
				c = append(c, t.ErrorCode)
			}
			return c
		},
		refused: []*kerr.Error{taf},
	},
	kmsg.DeleteTopics: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrDeleteTopicsRequest()
			r.TimeoutMillis = 1000
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.Topic = kmsg.StringPtr("t")
			r.Topics = append(r.Topics, rt)
			return r
		},
		codes: func(m kmsg.Response) (c []int16) {
			for _, t := range m.(*kmsg.DeleteTopicsResponse).Topics {
				c = append(c, t.ErrorCode)
			}
			return c
		},
		refused: []*kerr.Error{taf},
	},
	kmsg.DeleteRecords: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrDeleteRecordsRequest()
			r.TimeoutMillis = 1000
			rt := kmsg.NewDeleteRecordsRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewDeleteRecordsRequestTopicPartition()
			rp.Offset = 5
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		},
		codes: func(m kmsg.Response) []int16 {
			return topicPartitionCodes(m.(*kmsg.DeleteRecordsResponse).Topics, func(t kmsg.DeleteRecordsResponseTopic) (c []int16) {
				for _, p := range t.Partitions {
					c = append(c, p.ErrorCode)
				}
				return c
			})
		},
		refused: []*kerr.Error{taf},
	},
	kmsg.InitProducerID: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.TransactionTimeoutMillis = 60000
			return r
		},
		codes:   func(m kmsg.Response) []int16 { return []int16{m.(*kmsg.InitProducerIDResponse).ErrorCode} },
		refused: []*kerr.Error{caf},
	},
	kmsg.OffsetForLeaderEpoch: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrOffsetForLeaderEpochRequest()
			r.ReplicaID = -1
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.CurrentLeaderEpoch, rp.LeaderEpoch = 5, 5
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		},
		codes: func(m kmsg.Response) []int16 {
			return topicPartitionCodes(m.(*kmsg.OffsetForLeaderEpochResponse).Topics, func(t kmsg.OffsetForLeaderEpochResponseTopic) (c []int16) {
				for _, p := range t.Partitions {
					c = append(c, p.ErrorCode)
				}
				return c
			})
		},
		refused: []*kerr.Error{taf},
	},
	kmsg.DescribeConfigs: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			for _, res := range []struct {
				t    kmsg.ConfigResourceType
				name string
			}{{kmsg.ConfigResourceTypeTopic, "t"}, {kmsg.ConfigResourceTypeBroker, "1"}} {
				rr := kmsg.NewDescribeConfigsRequestResource()
				rr.ResourceType, rr.ResourceName = res.t, res.name
				r.Resources = append(r.Resources, rr)
			}
			return r
		},
		codes: func(m kmsg.Response) (c []int16) {
			for _, r := range m.(*kmsg.DescribeConfigsResponse).Resources {
				c = append(c, r.ErrorCode)
			}
			return c
		},
		refused: []*kerr.Error{taf, caf},
	},
	kmsg.AlterConfigs: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrAlterConfigsRequest()
			rr := kmsg.NewAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = "retention.ms", kmsg.StringPtr("1000")
			rr.Configs = append(rr.Configs, c)
			r.Resources = append(r.Resources, rr)
			return r
		},
		codes: func(m kmsg.Response) (c []int16) {
			for _, r := range m.(*kmsg.AlterConfigsResponse).Resources {
				c = append(c, r.ErrorCode)
			}
			return c
		},
		refused: []*kerr.Error{taf},
	},
	kmsg.DescribeLogDirs: {
		req:     func() kmsg.Request { return kmsg.NewPtrDescribeLogDirsRequest() },
		codes:   func(m kmsg.Response) []int16 { return []int16{m.(*kmsg.DescribeLogDirsResponse).ErrorCode} },
		refused: []*kerr.Error{caf},
	},
	kmsg.CreatePartitions: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrCreatePartitionsRequest()
			r.TimeoutMillis = 1000
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = "t", 5
			r.Topics = append(r.Topics, rt)
			return r
		},
		codes: func(m kmsg.Response) (c []int16) {
			for _, t := range m.(*kmsg.CreatePartitionsResponse).Topics {
				c = append(c, t.ErrorCode)
			}
			return c
		},
		refused: []*kerr.Error{taf},
	},
	kmsg.DeleteGroups: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrDeleteGroupsRequest()
			r.Groups = []string{"g"}
			return r
		},
		codes: func(m kmsg.Response) (c []int16) {
			for _, g := range m.(*kmsg.DeleteGroupsResponse).Groups {
				c = append(c, g.ErrorCode)
			}
			return c
		},
		refused: []*kerr.Error{gaf},
	},
	kmsg.ElectLeaders: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrElectLeadersRequest()
			r.TimeoutMillis = 1000
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic, rt.Partitions = "t", []int32{0}
			r.Topics = append(r.Topics, rt)
			return r
		},
		codes: func(m kmsg.Response) []int16 {
			r := m.(*kmsg.ElectLeadersResponse)
			return append([]int16{r.ErrorCode}, topicPartitionCodes(r.Topics, func(t kmsg.ElectLeadersResponseTopic) (c []int16) {
				for _, p := range t.Partitions {
					c = append(c, p.ErrorCode)
				}
				return c
			})...)
		},
		refused: []*kerr.Error{caf, caf},
	},
	kmsg.IncrementalAlterConfigs: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrIncrementalAlterConfigsRequest()
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = "retention.ms", kmsg.StringPtr("1000")
			rr.Configs = append(rr.Configs, c)
			r.Resources = append(r.Resources, rr)
			return r
		},
		codes: func(m kmsg.Response) (c []int16) {
			for _, r := range m.(*kmsg.IncrementalAlterConfigsResponse).Resources {
				c = append(c, r.ErrorCode)
			}
			return c
		},
		refused: []*kerr.Error{taf},
	},
	kmsg.AlterPartitionAssignments: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
			r.TimeoutMillis = 1000
			rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			rp.Replicas = []int32{2}
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		},
		codes: func(m kmsg.Response) []int16 {
			r := m.(*kmsg.AlterPartitionAssignmentsResponse)
			return append([]int16{r.ErrorCode}, topicPartitionCodes(r.Topics, func(t kmsg.AlterPartitionAssignmentsResponseTopic) (c []int16) {
				for _, p := range t.Partitions {
					c = append(c, p.ErrorCode)
				}
				return c
			})...)
		},
		refused: []*kerr.Error{caf, caf},
	},
	kmsg.ListPartitionReassignments: {
		req:     func() kmsg.Request { return kmsg.NewPtrListPartitionReassignmentsRequest() },
		codes:   func(m kmsg.Response) []int16 { return []int16{m.(*kmsg.ListPartitionReassignmentsResponse).ErrorCode} },
		refused: []*kerr.Error{caf},
	},
	kmsg.OffsetDelete: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrOffsetDeleteRequest()
			r.Group = "g"
			rt := kmsg.NewOffsetDeleteRequestTopic()
			rt.Topic = "t"
			rt.Partitions = append(rt.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
			r.Topics = append(r.Topics, rt)
			return r
		},
		codes:   func(m kmsg.Response) []int16 { return []int16{m.(*kmsg.OffsetDeleteResponse).ErrorCode} },
		refused: []*kerr.Error{gaf},
	},
	kmsg.DescribeACLs: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrDescribeACLsRequest()
			r.ResourceType, r.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
			r.Operation, r.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			return r
		},
		codes:   func(m kmsg.Response) []int16 { return []int16{m.(*kmsg.DescribeACLsResponse).ErrorCode} },
		refused: []*kerr.Error{caf},
	},
	kmsg.CreateACLs: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrCreateACLsRequest()
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral
			c.Principal, c.Host = "User:alice", "*"
			c.Operation, c.PermissionType = kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
			r.Creations = append(r.Creations, c)
			return r
		},
		codes: func(m kmsg.Response) (c []int16) {
			for _, r := range m.(*kmsg.CreateACLsResponse).Results {
				c = append(c, r.ErrorCode)
			}
			return c
		},
		refused: []*kerr.Error{caf},
	},
	kmsg.DeleteACLs: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrDeleteACLsRequest()
			f := kmsg.NewDeleteACLsRequestFilter()
			f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
			f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			r.Filters = append(r.Filters, f)
			return r
		},
		codes: func(m kmsg.Response) (c []int16) {
			for _, r := range m.(*kmsg.DeleteACLsResponse).Results {
				c = append(c, r.ErrorCode)
			}
			return c
		},
		refused: []*kerr.Error{caf},
	},
	kmsg.DescribeClientQuotas: {
		req: func() kmsg.Request { return kmsg.NewPtrDescribeClientQuotasRequest() },
		codes: func(m kmsg.Response) []int16 {
			return []int16{m.(*kmsg.DescribeClientQuotasResponse).ErrorCode}
		},
		refused: []*kerr.Error{caf},
	},
	kmsg.AlterClientQuotas: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrAlterClientQuotasRequest()
			e := kmsg.NewAlterClientQuotasRequestEntry()
			ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
			name := "sensor"
			ent.Type, ent.Name = "client-id", &name
			e.Entity = append(e.Entity, ent)
			op := kmsg.NewAlterClientQuotasRequestEntryOp()
			op.Key, op.Value = "producer_byte_rate", 1024
			e.Ops = append(e.Ops, op)
			r.Entries = append(r.Entries, e)
			return r
		},
		codes: func(m kmsg.Response) (c []int16) {
			for _, e := range m.(*kmsg.AlterClientQuotasResponse).Entries {
				c = append(c, e.ErrorCode)
			}
			return c
		},
		refused: []*kerr.Error{caf},
	},
	kmsg.DescribeUserSCRAMCredentials: {
		req: func() kmsg.Request { return kmsg.NewPtrDescribeUserSCRAMCredentialsRequest() },
		codes: func(m kmsg.Response) []int16 {
			return []int16{m.(*kmsg.DescribeUserSCRAMCredentialsResponse).ErrorCode}
		},
		refused: []*kerr.Error{caf},
	},
	kmsg.AlterUserSCRAMCredentials: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
			d.Name, d.Mechanism = "alice", 2
			r.Deletions = append(r.Deletions, d)
			return r
		},
		codes: func(m kmsg.Response) (c []int16) {
			for _, r := range m.(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
				c = append(c, r.ErrorCode)
			}
			return c
		},
		refused: []*kerr.Error{caf},
	},
	kmsg.DescribeQuorum: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrDescribeQuorumRequest()
			rt := kmsg.NewDescribeQuorumRequestTopic()
			rt.Topic = metadataTopicName
			rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
			r.Topics = append(r.Topics, rt)
			return r
		},
		codes:   func(m kmsg.Response) []int16 { return []int16{m.(*kmsg.DescribeQuorumResponse).ErrorCode} },
		refused: []*kerr.Error{caf},
	},
	kmsg.DescribeCluster: {
		req:     func() kmsg.Request { return kmsg.NewPtrDescribeClusterRequest() },
		codes:   func(m kmsg.Response) []int16 { return []int16{m.(*kmsg.DescribeClusterResponse).ErrorCode} },
		refused: []*kerr.Error{caf},
	},
	kmsg.DescribeProducers: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrDescribeProducersRequest()
			rt := kmsg.NewDescribeProducersRequestTopic()
			rt.Topic, rt.Partitions = "t", []int32{0}
			r.Topics = append(r.Topics, rt)
			return r
		},
		codes: func(m kmsg.Response) []int16 {
			return topicPartitionCodes(m.(*kmsg.DescribeProducersResponse).Topics, func(t kmsg.DescribeProducersResponseTopic) (c []int16) {
				for _, p := range t.Partitions {
					c = append(c, p.ErrorCode)
				}
				return c
			})
		},
		refused: []*kerr.Error{taf},
	},
	kmsg.AddPartitionsToTxn: {
		// The batched form (v4+, the partition leaders' verification)
		// needs CLUSTER_ACTION; v0-3 WRITE on the transactional id and
		// the topics (TestTxnAuthorization).
		req: func() kmsg.Request {
			r := kmsg.NewPtrAddPartitionsToTxnRequest()
			rt := kmsg.NewAddPartitionsToTxnRequestTransaction()
			rt.TransactionalID, rt.ProducerID, rt.VerifyOnly = "tx", 1, true
			tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			tt.Topic, tt.Partitions = "t", []int32{0}
			rt.Topics = append(rt.Topics, tt)
			r.Transactions = append(r.Transactions, rt)
			return r
		},
		codes:   func(m kmsg.Response) []int16 { return []int16{m.(*kmsg.AddPartitionsToTxnResponse).ErrorCode} },
		refused: []*kerr.Error{caf},
	},
	kmsg.AddOffsetsToTxn: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrAddOffsetsToTxnRequest()
			r.TransactionalID, r.ProducerID, r.Group = "tx", 1, "g"
			return r
		},
		codes:   func(m kmsg.Response) []int16 { return []int16{m.(*kmsg.AddOffsetsToTxnResponse).ErrorCode} },
		refused: []*kerr.Error{kerr.TransactionalIDAuthorizationFailed},
	},
	kmsg.EndTxn: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrEndTxnRequest()
			r.TransactionalID, r.ProducerID, r.Commit = "tx", 1, true
			return r
		},
		codes:   func(m kmsg.Response) []int16 { return []int16{m.(*kmsg.EndTxnResponse).ErrorCode} },
		refused: []*kerr.Error{kerr.TransactionalIDAuthorizationFailed},
	},
	kmsg.WriteTxnMarkers: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrWriteTxnMarkersRequest()
			m := kmsg.NewWriteTxnMarkersRequestMarker()
			m.ProducerID, m.Committed = 1, true
			mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			mt.Topic, mt.Partitions = "t", []int32{0}
			m.Topics = append(m.Topics, mt)
			r.Markers = append(r.Markers, m)
			return r
		},
		codes: func(m kmsg.Response) (c []int16) {
			for _, mk := range m.(*kmsg.WriteTxnMarkersResponse).Markers {
				for _, t := range mk.Topics {
					for _, p := range t.Partitions {
						c = append(c, p.ErrorCode)
					}
				}
			}
			return c
		},
		refused: []*kerr.Error{caf},
	},
	kmsg.ConsumerGroupHeartbeat: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			r.Group, r.MemberID, r.RebalanceTimeoutMillis = "g", "m", 10000
			r.SubscribedTopicNames = []string{"t"}
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			return r
		},
		codes:   func(m kmsg.Response) []int16 { return []int16{m.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode} },
		refused: []*kerr.Error{gaf},
	},
	kmsg.ConsumerGroupDescribe: {
		req: func() kmsg.Request {
			r := kmsg.NewPtrConsumerGroupDescribeRequest()
			r.Groups = []string{"g"}
			return r
		},
		codes: func(m kmsg.Response) (c []int16) {
			for _, g := range m.(*kmsg.ConsumerGroupDescribeResponse).Groups {
				c = append(c, g.ErrorCode)
			}
			return c
		},
		refused: []*kerr.Error{gaf},
	},
}

// TestAuthorizationRulesComplete: every key of the API table has an
// authorization rule here, and every rule a key.
func TestAuthorizationRulesComplete(t *testing.T) {
	served := map[kmsg.Key]bool{}
	for _, e := range apiTable {
		served[e.Key] = true
		if _, ok := authRules[e.Key]; !ok {
			t.Errorf("%s is served without an authorization rule: decide what it needs (Kafka's KafkaApis), enforce it in its handler and add it to authRules", e.Key.Name())
		}
	}
	for k := range authRules {
		if !served[k] {
			t.Errorf("authRules has %s, which the API table does not serve", k.Name())
		}
	}
}

// authFixture is the seam fixture with a group coordinator that lists one
// group, a log directory, and a to authorize every request.
func authFixture(t *testing.T, a *fakeAuthorizer) (*seamFixture, *fakeCoordinator) {
	t.Helper()
	f, g := groupFixture(t)
	f.partitions.logDir = &fakeLogDir{dir: t.TempDir()}
	g.listed = []groups.ListedGroup{{Group: "g", ProtocolType: "consumer", State: "Stable", Type: "classic"}}
	if a != nil {
		f.use(a)
	}
	return f, g
}

// sideEffects is everything the fixture's fakes were asked to change.
func sideEffects(f *seamFixture, g *fakeCoordinator) []string {
	var out []string
	c := f.controller
	if len(c.created)+len(c.deleted)+len(c.partitionCalls)+len(c.alters)+len(c.elections)+len(c.reassignCalls)+len(c.listAsked)+len(c.scramCalls) > 0 {
		out = append(out, "the controller was asked")
	}
	if len(g.submitted) > 0 {
		out = append(out, "the group coordinator was asked")
	}
	for tp, r := range f.partitions.replicas {
		if len(r.appended) > 0 || r.logStart != 0 {
			out = append(out, "partition "+tp.Topic+" changed")
		}
	}
	if f.producerIDs.next != 1000 {
		out = append(out, "a producer id was handed out")
	}
	return out
}

// TestAuthorizationRefused: a principal the authorizer refuses everything
// gets each API's authorization error (or, where Kafka filters, an answer
// without what it may not see), and nothing changes. The same requests
// from a principal allowed everything get no authorization error.
func TestAuthorizationRefused(t *testing.T) {
	for _, e := range apiTable {
		rule := authRules[e.Key]
		if rule.none || rule.req == nil {
			continue
		}
		t.Run(e.Key.Name(), func(t *testing.T) {
			deny := &fakeAuthorizer{}
			f, g := authFixture(t, deny)
			req := rule.req()
			req.SetVersion(e.Max)
			got := rule.codes(f.do(t, req))
			want := make([]int16, len(rule.refused))
			for i, k := range rule.refused {
				if k != nil {
					want[i] = k.Code
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("refused: codes %v, want %v", codeNames(got), codeNames(want))
			}
			if se := sideEffects(f, g); len(se) > 0 {
				t.Errorf("refused, yet %v", se)
			}
			qs := deny.questions()
			if len(qs) == 0 {
				t.Fatal("the authorizer was not asked")
			}
			for _, q := range qs {
				if q.principal != AnonymousPrincipal || q.host != "192.0.2.7" {
					t.Errorf("asked about %q from %q, want %s from 192.0.2.7", q.principal, q.host, AnonymousPrincipal)
				}
			}

			allow := &fakeAuthorizer{allow: allowAll}
			f, _ = authFixture(t, allow)
			req = rule.req()
			req.SetVersion(e.Max)
			for _, c := range rule.codes(f.do(t, req)) {
				switch c {
				case taf.Code, gaf.Code, caf.Code, kerr.TransactionalIDAuthorizationFailed.Code:
					t.Errorf("allowed, yet answered %s", codeName(c))
				}
			}
			if len(allow.questions()) == 0 {
				t.Error("the allowed request was not authorized")
			}
		})
	}
}

func codeNames(codes []int16) []string {
	out := make([]string, len(codes))
	for i, c := range codes {
		out[i] = codeName(c)
		if c == -1 {
			out[i] = "a listed group"
		}
	}
	return out
}

// TestAuthorizationNone: without an Authorizer every request is served as
// before (the fixture's own tests), and with one that allows all, ApiVersions
// asks nothing.
func TestAuthorizationNone(t *testing.T) {
	a := &fakeAuthorizer{}
	f, _ := authFixture(t, a)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
	if resp := f.do(t, req).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions: %s", codeName(resp.ErrorCode))
	}
	if qs := a.questions(); len(qs) > 0 {
		t.Fatalf("ApiVersions asked the authorizer %v", qs)
	}
	f.node.Authorizer = func() Authorizer { return nil }
	m := kmsg.NewPtrMetadataRequest()
	m.Version = 12
	if resp := f.do(t, m).(*kmsg.MetadataResponse); len(resp.Topics) != 1 {
		t.Fatalf("a nil Authorizer: %d topics listed, want 1", len(resp.Topics))
	}
}

// TestAuthorizationMetadata: Metadata lists only the topics the principal
// may DESCRIBE, refuses named ones it may not (existing or not, and
// creates none), and computes the authorized operations when asked.
func TestAuthorizationMetadata(t *testing.T) {
	secretID := cluster.UUID{4, 4}
	a := &fakeAuthorizer{allow: func(q authQuestion) bool {
		return q.rt == kmsg.ACLResourceTypeTopic && q.name == "t" && (q.op == kmsg.ACLOperationDescribe || q.op == kmsg.ACLOperationRead)
	}}
	f, _ := authFixture(t, a)
	f.node.Config.AutoCreateTopicsEnable = true
	f.addRecords(t,
		cluster.Record{Kind: cluster.KindTopic, Topic: &cluster.TopicRecord{Name: "secret", ID: secretID}},
		cluster.Record{Kind: cluster.KindPartition, Partition: &cluster.PartitionRecord{TopicID: secretID, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}})

	all := kmsg.NewPtrMetadataRequest()
	all.Version = 10
	all.IncludeClusterAuthorizedOperations, all.IncludeTopicAuthorizedOperations = true, true
	resp := f.do(t, all).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 || *resp.Topics[0].Topic != "t" {
		var names []string
		for _, mt := range resp.Topics {
			names = append(names, *mt.Topic)
		}
		t.Fatalf("all topics: %v, want [t]", names)
	}
	if ops, want := resp.Topics[0].AuthorizedOperations, int32(1<<kmsg.ACLOperationDescribe|1<<kmsg.ACLOperationRead); ops != want {
		t.Errorf("t's authorized operations %b, want %b", ops, want)
	}
	if resp.AuthorizedOperations != 0 {
		t.Errorf("cluster authorized operations %b, want none", resp.AuthorizedOperations)
	}

	named := kmsg.NewPtrMetadataRequest()
	named.Version, named.AllowAutoTopicCreation = 12, true
	for _, name := range []string{"t", "secret", "missing"} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		named.Topics = append(named.Topics, rt)
	}
	byID := kmsg.NewMetadataRequestTopic()
	byID.TopicID = secretID
	named.Topics = append(named.Topics, byID)
	resp = f.do(t, named).(*kmsg.MetadataResponse)
	want := []int16{0, taf.Code, taf.Code, taf.Code}
	for i, mt := range resp.Topics {
		if mt.ErrorCode != want[i] {
			t.Errorf("topic %d: %s, want %s", i, codeName(mt.ErrorCode), codeName(want[i]))
		}
		if mt.ErrorCode != 0 && len(mt.Partitions) > 0 {
			t.Errorf("topic %d: refused, yet its partitions are listed", i)
		}
	}
	if resp.Topics[3].Topic != nil {
		t.Errorf("a refused topic id is named %q", *resp.Topics[3].Topic)
	}
	if resp.Topics[0].AuthorizedOperations != -2147483648 {
		t.Errorf("authorized operations not asked for, yet %d", resp.Topics[0].AuthorizedOperations)
	}
	if len(f.controller.created) > 0 {
		t.Errorf("a topic was auto-created without CREATE: %v", f.controller.created)
	}

	// CREATE on the topic allows its auto-creation.
	a.allow = func(q authQuestion) bool {
		return q.rt == kmsg.ACLResourceTypeTopic && q.name == "missing"
	}
	one := kmsg.NewPtrMetadataRequest()
	one.Version, one.AllowAutoTopicCreation = 12, true
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("missing")
	one.Topics = append(one.Topics, rt)
	f.do(t, one)
	if len(f.controller.created) != 1 || f.controller.created[0].Name != "missing" {
		t.Errorf("CREATE on the topic: created %v, want [missing]", f.controller.created)
	}
}

// TestAuthorizationPartial: a request's items are judged one by one: the
// refused ones get the code, the others are served, and only they reach
// the partitions, the controller or the coordinator.
func TestAuthorizationPartial(t *testing.T) {
	a := &fakeAuthorizer{allow: func(q authQuestion) bool {
		return q.rt != kmsg.ACLResourceTypeTopic || q.name == "t"
	}}
	f, g := authFixture(t, a)
	f.addRecords(t, cluster.Record{Kind: cluster.KindTopic, Topic: &cluster.TopicRecord{Name: "u", ID: cluster.UUID{5}}},
		cluster.Record{Kind: cluster.KindPartition, Partition: &cluster.PartitionRecord{TopicID: cluster.UUID{5}, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}})
	f.partitions.replicas[engine.TopicPartition{Topic: "u", Partition: 0}] = &fakeReplica{leader: true, hw: 10, logEnd: 10}

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version = 6
	for _, name := range []string{"t", "u"} {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		del.Topics = append(del.Topics, rt)
	}
	dresp := f.do(t, del).(*kmsg.DeleteTopicsResponse)
	wantCode(t, "delete t", dresp.Topics[0].ErrorCode, nil)
	wantCode(t, "delete u", dresp.Topics[1].ErrorCode, taf)
	if !slices.Equal(f.controller.deleted, []string{"t"}) {
		t.Errorf("the controller deleted %v, want [t]", f.controller.deleted)
	}

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation, commit.MemberID = 9, "g", 1, "m"
	for _, name := range []string{"t", "u"} {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = name
		rt.Partitions = append(rt.Partitions, kmsg.NewOffsetCommitRequestTopicPartition())
		commit.Topics = append(commit.Topics, rt)
	}
	cresp := f.do(t, commit).(*kmsg.OffsetCommitResponse)
	wantCode(t, "commit t", cresp.Topics[0].Partitions[0].ErrorCode, nil)
	wantCode(t, "commit u", cresp.Topics[1].Partitions[0].ErrorCode, taf)
	cr := lastGroupRequest[groups.CommitRequest](t, g)
	if len(cr.Offsets) != 1 || cr.Offsets[0].Topic != "t" {
		t.Errorf("the coordinator was asked to commit %v, want t's alone", cr.Offsets)
	}

	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version = 9
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = "g"
	for _, name := range []string{"t", "u"} {
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.Partitions = name, []int32{0}
		rg.Topics = append(rg.Topics, rt)
	}
	fetch.Groups = append(fetch.Groups, rg)
	fresp := f.do(t, fetch).(*kmsg.OffsetFetchResponse)
	codes := map[string]int16{}
	for _, rt := range fresp.Groups[0].Topics {
		codes[rt.Topic] = rt.Partitions[0].ErrorCode
	}
	if codes["t"] != 0 || codes["u"] != taf.Code {
		t.Errorf("offset fetch codes %v, want t ok and u TOPIC_AUTHORIZATION_FAILED", codes)
	}
	fr := lastGroupRequest[groups.FetchOffsetsRequest](t, g)
	if len(fr.Partitions) != 1 || fr.Partitions[0].Topic != "t" {
		t.Errorf("the coordinator was asked for %v, want t's alone", fr.Partitions)
	}
}

// TestAuthorizationForwarded: a node that forwards a metadata change
// authorizes it first and sends the client's principal and host with it;
// the controller authorizes it again as that principal.
func TestAuthorizationForwarded(t *testing.T) {
	a := &fakeAuthorizer{}
	f, _ := authFixture(t, a)
	forwarded := f.forwardTo(t, func(req kmsg.Request) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = "new"
		resp.Topics = append(resp.Topics, rt)
		return resp
	})
	create := func() *kmsg.CreateTopicsRequest {
		r := kmsg.NewPtrCreateTopicsRequest()
		r.Version, r.TimeoutMillis = 7, 1000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "new", 1, 1
		r.Topics = append(r.Topics, rt)
		return r
	}
	resp := f.do(t, create()).(*kmsg.CreateTopicsResponse)
	wantCode(t, "refused on the forwarding node", resp.Topics[0].ErrorCode, taf)
	if len(*forwarded) > 0 {
		t.Fatal("a refused request was forwarded")
	}

	a.allow = allowAll
	resp = f.do(t, create()).(*kmsg.CreateTopicsResponse)
	wantCode(t, "allowed", resp.Topics[0].ErrorCode, nil)
	if len(*forwarded) != 1 {
		t.Fatalf("%d requests forwarded, want 1", len(*forwarded))
	}
	want := cluster.RequestOrigin{Principal: AnonymousPrincipal, Host: "192.0.2.7"}
	if got := f.controller.origins; len(got) != 1 || got[0] != want {
		t.Fatalf("forwarded with origins %v, want %v", got, want)
	}

	// The controller's side: the origin is the principal it judges.
	ctl := &fakeAuthorizer{}
	c, _ := authFixture(t, ctl)
	out, err := c.s.ServeForwarded(t.Context(), int16(kmsg.CreateTopics), 7, create().AppendTo(nil),
		cluster.RequestOrigin{Principal: "User:bob", Host: "10.0.0.9"})
	if err != nil {
		t.Fatal(err)
	}
	cresp := kmsg.NewPtrCreateTopicsResponse()
	cresp.Version = 7
	if err := cresp.ReadFrom(out); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "refused on the controller", cresp.Topics[0].ErrorCode, taf)
	qs := ctl.questions()
	if len(qs) == 0 || qs[len(qs)-1].principal != "User:bob" || qs[len(qs)-1].host != "10.0.0.9" {
		t.Fatalf("the controller asked %v, want User:bob from 10.0.0.9", qs)
	}
	if len(c.controller.created) > 0 {
		t.Fatal("the controller created a refused topic")
	}
	// A request from a node too old to carry the origin is anonymous.
	if _, err := c.s.ServeForwarded(t.Context(), int16(kmsg.CreateTopics), 7, create().AppendTo(nil), cluster.RequestOrigin{}); err != nil {
		t.Fatal(err)
	}
	qs = ctl.questions()
	if q := qs[len(qs)-1]; q.principal != AnonymousPrincipal {
		t.Fatalf("an origin-less forward judged as %q, want %s", q.principal, AnonymousPrincipal)
	}
}

// denialCounter is an Observer that counts denials by resource type.
type denialCounter struct {
	nopObserver
	mu     sync.Mutex
	denied map[string]int
}

func (d *denialCounter) AuthorizationDenied(rt string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.denied[rt]++
}

// TestAuthorizationAudit: each refusal is counted by resource type, and
// logged at most once a second with the count of lines held back.
func TestAuthorizationAudit(t *testing.T) {
	a := &fakeAuthorizer{}
	f, _ := authFixture(t, a)
	logs := newLogRecorder(t)
	obs := &denialCounter{denied: map[string]int{}}
	var err error
	f.s, err = newServer(ServerConfig{Logger: slog.New(logs), Observer: obs, NotControllerRetry: -1}, f.node, apiTable[:])
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	f.s.authLog = newLogLimiter(1, func() time.Time { return now })
	const n = 20
	for range n {
		req := authRules[kmsg.DescribeGroups].req()
		req.SetVersion(5)
		f.do(t, req)
	}
	req := authRules[kmsg.DescribeCluster].req()
	req.SetVersion(1)
	f.do(t, req)
	obs.mu.Lock()
	groupsDenied, clusterDenied := obs.denied["group"], obs.denied["cluster"]
	obs.mu.Unlock()
	if groupsDenied != n || clusterDenied != 1 {
		t.Fatalf("denials counted: group %d, cluster %d; want %d and 1", groupsDenied, clusterDenied, n)
	}
	denied := func(r logRecord) bool { return r.msg == "authorization denied" }
	if lines := logs.count(denied); lines != 1 {
		t.Fatalf("%d lines logged for %d refusals within a second, want 1", lines, n+1)
	}
	now = now.Add(time.Second)
	f.do(t, req)
	second := logs.waitAfter(t, "the next second's line", 1, denied)
	if second.attrs["suppressed"] != int64(n) {
		t.Errorf("the next line counts %v held back, want %d", second.attrs["suppressed"], n)
	}
	first := logs.waitFor(t, "the first refusal's line", func(r logRecord) bool { return r.msg == "authorization denied" })
	for _, k := range []string{"principal", "host", "api", "resource_type", "resource", "operation"} {
		if _, ok := first.attrs[k]; !ok {
			t.Errorf("the line has no %s: %v", k, first.attrs)
		}
	}
	if first.attrs["resource_type"] != "group" || first.attrs["operation"] != "describe" || first.attrs["api"] != "DescribeGroups" {
		t.Errorf("the line says %v", first.attrs)
	}
}

// TestAuthorizationKgo: franz-go through a SASL listener, with an
// authorizer that lets alice write to and read t and refuses bob: alice's
// idempotent producer gets its producer id and its record appended, bob's
// fails with TOPIC_AUTHORIZATION_FAILED and nothing more is appended.
func TestAuthorizationKgo(t *testing.T) {
	a := &fakeAuthorizer{allow: func(q authQuestion) bool {
		return q.principal == "User:alice" && q.rt == kmsg.ACLResourceTypeTopic && q.name == "t"
	}}
	f, _ := authFixture(t, a)
	s, err := newServer(ServerConfig{SASL: &SASLConfig{Authenticator: testAuthenticator(t)}, ListenerName: "SASL_PLAINTEXT",
		Logger: slog.New(newLogRecorder(t))}, f.node, apiTable[:])
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		<-served
	})
	addr := ln.Addr().(*net.TCPAddr)
	f.node.Host, f.node.Port = "127.0.0.1", int32(addr.Port)

	produce := func(user string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr.String()), kgo.SASL(mechanism(MechanismScramSHA512, user, testUsers[user])),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RetryTimeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		return cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: 0, Value: []byte("v")}).FirstErr()
	}
	if err := produce("alice"); err != nil {
		t.Fatalf("alice: %v", err)
	}
	if n := len(f.replica(0).appended); n != 1 {
		t.Fatalf("alice's produce appended %d batches, want 1", n)
	}
	if err := produce("bob"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if n := len(f.replica(0).appended); n != 1 {
		t.Fatalf("after bob's produce %d batches, want alice's alone", n)
	}
	var sawBob bool
	for _, q := range a.questions() {
		if q.host != "127.0.0.1" {
			t.Errorf("asked about a client at %q, want 127.0.0.1", q.host)
		}
		sawBob = sawBob || q.principal == "User:bob"
	}
	if !sawBob {
		t.Error("bob was never authorized")
	}
}

// TestAuthorizationProduceAcks0: a refused acks=0 produce, which gets no
// answer, closes its connection as Kafka's does, so the producer learns
// of it; nothing is appended.
func TestAuthorizationProduceAcks0(t *testing.T) {
	f, _ := authFixture(t, &fakeAuthorizer{})
	req := authRules[kmsg.Produce].req().(*kmsg.ProduceRequest)
	req.Version, req.Acks = 11, 0
	e := f.s.apis.lookup(int16(kmsg.Produce))
	sess := &Session{ListenerName: "PLAINTEXT", RemoteAddr: testClientAddr, ctx: t.Context(), authenticated: true}
	if _, err := f.s.serve(e, &Request{Header: RequestHeader{ApiKey: int16(kmsg.Produce), ApiVersion: 11}, Body: req, Session: sess}); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(sess.closeAfter, errProduceRefused) {
		t.Fatalf("closeAfter %v, want the refusal", sess.closeAfter)
	}
	if len(f.replica(0).appended) > 0 {
		t.Fatal("a refused acks=0 produce appended")
	}
}

// batchAuthorizer is a fakeAuthorizer that also judges many names at once.
type batchAuthorizer struct {
	*fakeAuthorizer
	batches int
}

func (b *batchAuthorizer) AuthorizeAll(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, names []string) []bool {
	b.batches++
	out := make([]bool, len(names))
	for i, name := range names {
		out[i] = b.allow(authQuestion{principal, host, op, rt, name})
	}
	return out
}

// TestAuthorizationBatch: Metadata of every topic asks a BatchAuthorizer
// once, and lists what it allows.
func TestAuthorizationBatch(t *testing.T) {
	b := &batchAuthorizer{fakeAuthorizer: &fakeAuthorizer{allow: func(q authQuestion) bool { return q.name == "t" }}}
	f, _ := authFixture(t, nil)
	f.node.Authorizer = func() Authorizer { return b }
	f.addRecords(t, cluster.Record{Kind: cluster.KindTopic, Topic: &cluster.TopicRecord{Name: "u", ID: cluster.UUID{5}}})
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	resp := f.do(t, req).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 || *resp.Topics[0].Topic != "t" {
		t.Fatalf("%d topics listed, want t alone", len(resp.Topics))
	}
	if b.batches != 1 || len(b.questions()) != 0 {
		t.Fatalf("%d batches and %d single questions, want one batch", b.batches, len(b.questions()))
	}
}

// TestAuthorizationConsumerGroupDescribe: a consumer group whose members
// are assigned a topic the principal may not DESCRIBE is answered
// TOPIC_AUTHORIZATION_FAILED without its members, as Kafka.
func TestAuthorizationConsumerGroupDescribe(t *testing.T) {
	a := &fakeAuthorizer{allow: func(q authQuestion) bool { return q.rt == kmsg.ACLResourceTypeGroup }}
	f, g := authFixture(t, a)
	g.answer = func(req any) (groups.Response, error) {
		return groups.Response{ConsumerDescribe: &groups.ConsumerDescribeResponse{Group: "g", State: "Stable",
			Members: []groups.ConsumerDescribedMember{{MemberID: "m1",
				Assignment: []groups.TopicPartitions{{TopicID: testTopicID, Partitions: []int32{0}}}}}}}, nil
	}
	req := authRules[kmsg.ConsumerGroupDescribe].req()
	req.SetVersion(1)
	resp := f.do(t, req).(*kmsg.ConsumerGroupDescribeResponse)
	wantCode(t, "g", resp.Groups[0].ErrorCode, taf)
	if len(resp.Groups[0].Members) > 0 {
		t.Fatal("the members are shown")
	}
	a.allow = allowAll
	resp = f.do(t, req).(*kmsg.ConsumerGroupDescribeResponse)
	if wantCode(t, "g allowed", resp.Groups[0].ErrorCode, nil); len(resp.Groups[0].Members) != 1 {
		t.Fatal("the member is not shown to who may see its topic")
	}
}

// TestAuthorizationOldVersions: the versions before a request's shape
// changed are refused in their own shape: OffsetFetch before v8 (per
// partition before v2, top level after), FindCoordinator before v4.
func TestAuthorizationOldVersions(t *testing.T) {
	f, g := authFixture(t, &fakeAuthorizer{})
	for _, v := range []int16{1, 5} {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group = v, "g"
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "t", []int32{0, 1}
		req.Topics = append(req.Topics, rt)
		resp := f.do(t, req).(*kmsg.OffsetFetchResponse)
		top, part := resp.ErrorCode, int16(0)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("v%d: %+v, want t's two partitions", v, resp.Topics)
		}
		part = resp.Topics[0].Partitions[0].ErrorCode
		if v < 2 {
			wantCode(t, "offset fetch v1 partition", part, gaf)
		} else {
			wantCode(t, "offset fetch v5", top, gaf)
		}
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorKey = 2, "g"
	resp := f.do(t, fc).(*kmsg.FindCoordinatorResponse)
	wantCode(t, "find coordinator v2", resp.ErrorCode, gaf)
	if len(g.submitted) > 0 {
		t.Fatalf("the coordinator was asked: %v", g.submitted)
	}
}
