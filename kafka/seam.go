package kafka

import (
	"context"
	"time"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/cluster/quorum"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/producer"
	"github.com/wren-broker/wren/groups"
	"github.com/wren-broker/wren/security/acl"
	"github.com/wren-broker/wren/txn"
)

// The seam between the wire protocol and the broker: the few verbs the
// handlers need, on five nouns (this node's partitions, the committed
// metadata image, the controller's write requests, the group coordinator,
// producer ids). The broker package passes its concrete cluster,
// replication and coordinator types (broker/seam.go adapts the shapes
// that differ); the handler tests pass small fakes (seam_test.go). A
// handler turns what these return into Kafka error codes, so
// NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, NOT_CONTROLLER and
// forwarding are decided on this side of the seam from the verbs' answers.

// Partitions are the partitions this node hosts.
type Partitions interface {
	// Partition returns this node's replica of tp, or nil when the node
	// does not host it (it must be a nil interface, not a typed nil).
	Partition(tp engine.TopicPartition) Replica
	// DeleteRecords moves tp's log start offset up to offset (-1: the
	// high watermark) and returns the new low watermark.
	DeleteRecords(tp engine.TopicPartition, offset int64) (int64, error)
	// CheckWritable is nil when the log directory can take writes and new
	// partitions: healthy and above its free-space floor.
	CheckWritable() error
	// LogDir is the log directory, for DescribeLogDirs.
	LogDir() LogDir
}

// LogDir is this node's one log directory as DescribeLogDirs reports it.
type LogDir interface {
	Dir() string
	// Failed is why the directory failed (an fdatasync error), nil while
	// it is healthy.
	Failed() error
	// Logs are its partition logs, sorted by topic, then partition.
	Logs() []PartitionLog
}

// PartitionLog is one partition's log in the log directory.
type PartitionLog interface {
	TopicPartition() engine.TopicPartition
	// Size is the bytes of its segments.
	Size() int64
	LogEndOffset() int64
}

// Replica is one partition replica on this node: its leadership, the
// high watermark, and the reads and writes of its log that the handlers
// make.
type Replica interface {
	// Leader reports whether this node leads the partition, and the
	// leader epoch it knows.
	Leader() (leader bool, leaderEpoch int32)
	HighWatermark() int64
	// LeaderState is Leader and HighWatermark read together, with the
	// leader epoch start offset: the log end offset when this replica
	// became leader at that epoch (-1 when it does not lead). Below it,
	// records of earlier leaders may be committed without this replica
	// knowing yet, so its high watermark is no answer for them.
	LeaderState() (leader bool, leaderEpoch int32, highWatermark, epochStartOffset int64)
	// HighWatermarkChanged returns a channel closed when the high
	// watermark next moves.
	HighWatermarkChanged() <-chan struct{}
	// AppendAsLeaderTimeout appends a batch as leader and returns the
	// wait for its acknowledgement under acks (at most timeout). What the
	// acknowledgement needs (the fdatasync, the followers' copies) starts
	// at the append, not at the wait: the handler waits for a request's
	// partitions one after another.
	AppendAsLeaderTimeout(records []byte, acks int16, timeout time.Duration) (engine.AppendInfo, func() error, error)
	// ReadForConsumer reads from offset below the high watermark and
	// returns the read, the high watermark and the log start offset.
	ReadForConsumer(offset, maxBytes int64, minOneMessage bool) (*engine.ReadResult, int64, int64, error)
	// ReadCommittedForConsumer is ReadForConsumer for read_committed:
	// below the last stable offset, with the aborted transactions of the
	// records read.
	ReadCommittedForConsumer(offset, maxBytes int64, minOneMessage bool) (engine.CommittedRead, error)
	// LastStableOffset is the last stable offset given the high
	// watermark hw.
	LastStableOffset(hw int64) int64

	// The log's own verbs.
	CheckWritable() error
	LogStartOffset() int64
	LogEndOffset() int64
	OffsetForTimestamp(ts int64) (offset, timestamp int64, leaderEpoch int32, found bool, err error)
	EndOffsetForEpoch(epoch int32) (int32, int64)
	LeaderEpochs() []engine.EpochEntry
	ProducerStates() []producer.Entry

	// AppendTxnMarkerAsLeader appends a transaction marker as the leader
	// and returns the wait for its acknowledgement under acks, as
	// AppendAsLeaderTimeout does (WriteTxnMarkers).
	AppendTxnMarkerAsLeader(m engine.TxnMarker, acks int16) (engine.AppendInfo, func() error, error)
}

// Metadata is the read side of the control plane: the committed metadata
// image and the facts about the quorum that handlers report.
type Metadata interface {
	// Image is the committed metadata image; never nil, never modified.
	Image() *cluster.Image
	ClusterID() string
	NodeID() int32
	// ControllerID is the acting controller, -1 while none is known.
	ControllerID() int32
	ControllerEpoch() int32
	// Brokers lists the live brokers' ids, sorted.
	Brokers() []int32
	// BrokerAddr is the address broker id registered for listener.
	BrokerAddr(id int32, listener string) (host string, port int32, ok bool)
	Voters() []int32
	// QuorumStatus is this node's view of the metadata quorum; false on
	// a one-voter cluster, which has none.
	QuorumStatus(ctx context.Context) (quorum.Status, bool, error)
}

// ControllerAPI is the write side of the control plane: requests that
// change the metadata image. On a node that is not the acting controller
// they fail with an error wrapping kerr.NotController, unless forwarded.
type ControllerAPI interface {
	CreateTopics(ctx context.Context, topics []cluster.CreateTopic, validateOnly bool) ([]cluster.TopicResult, error)
	DeleteTopics(ctx context.Context, names []string) ([]cluster.TopicResult, error)
	CreatePartitions(ctx context.Context, name string, count int32, assignment [][]int32, validateOnly bool) error
	AlterConfigs(ctx context.Context, rt cluster.ResourceType, name string, ops []cluster.ConfigOp, replace, validateOnly bool) error
	ElectLeaders(ctx context.Context, el cluster.Election, partitions []cluster.TopicPartition) ([]cluster.ElectLeadersResult, error)
	AlterPartitionReassignments(ctx context.Context, reqs []cluster.Reassignment, allowRFChange bool) ([]cluster.ReassignmentResult, error)
	ListPartitionReassignments(partitions []cluster.TopicPartition) ([]cluster.OngoingReassignment, error)
	// AlterScramCredentials deletes and upserts SCRAM credentials, one
	// result per user (cluster.DecideAlterScramCredentials).
	AlterScramCredentials(ctx context.Context, req cluster.AlterScramRequest) ([]cluster.ScramResult, error)
	// AlterClientQuotas sets and removes client quotas, one result per
	// entity (cluster.DecideAlterClientQuotas); validateOnly commits
	// nothing.
	AlterClientQuotas(ctx context.Context, alts []cluster.QuotaAlteration, validateOnly bool) ([]cluster.QuotaResult, error)
	// CreateACLs creates ACL bindings, one error per binding
	// (cluster.DecideCreateACLs).
	CreateACLs(ctx context.Context, bindings []acl.Binding) ([]error, error)
	// DeleteACLs deletes the ACL bindings the filters match, one result
	// per filter (cluster.DecideDeleteACLs).
	DeleteACLs(ctx context.Context, filters []acl.Filter) ([]cluster.DeleteACLsResult, error)

	// ShouldForward reports whether requests that change metadata should
	// go to another node, the acting controller.
	ShouldForward() bool
	// ForwardRequest sends an encoded request to the acting controller
	// and returns its encoded response; origin is the client's principal
	// and host, which the controller authorizes the request with.
	ForwardRequest(ctx context.Context, key, version int16, body []byte, origin cluster.RequestOrigin) ([]byte, error)
}

// ChangePropagator is a ControllerAPI that can hold the answer to a
// metadata change until the other nodes show it (cluster.Controller's
// WaitPropagated): it waits, on the acting controller, until every other
// live unfenced node applied the image up to offset, for at most timeout,
// and returns the nodes that had not. An optional ability: a
// ControllerAPI without it answers at once.
type ChangePropagator interface {
	WaitPropagated(ctx context.Context, offset uint64, timeout time.Duration) []int32
}

// GroupInput feeds one request to a group's coordinator core.
type GroupInput = func(c GroupCore, requestID uint64, nowMs int64)

// GroupCore is the group coordinator's core (a groups.Coordinator) as the
// handlers' inputs see it: only its request verbs, one small interface per
// protocol, so a handler test can record the request a handler built and
// answer it without a real coordinator.
type GroupCore interface {
	ClassicGroups
	GroupOffsets
	GroupAdmin
	ConsumerGroups
}

// ClassicGroups are the classic rebalance protocol's verbs.
type ClassicGroups interface {
	Join(req groups.JoinRequest, nowMs int64)
	Sync(req groups.SyncRequest, nowMs int64)
	Heartbeat(req groups.HeartbeatRequest, nowMs int64)
	Leave(req groups.LeaveRequest, nowMs int64)
}

// GroupOffsets are the committed offsets' verbs.
type GroupOffsets interface {
	CommitOffsets(req groups.CommitRequest, nowMs int64)
	TxnCommitOffsets(req groups.TxnCommitRequest, nowMs int64)
	FetchOffsets(req groups.FetchOffsetsRequest)
	DeleteOffsets(req groups.OffsetDeleteRequest, nowMs int64)
}

// GroupAdmin describes and deletes classic groups.
type GroupAdmin interface {
	DescribeGroup(req groups.DescribeGroupRequest)
	DeleteGroup(req groups.DeleteGroupRequest, nowMs int64)
}

// ConsumerGroups are the KIP-848 consumer protocol's verbs.
type ConsumerGroups interface {
	ConsumerHeartbeat(req groups.ConsumerHeartbeatRequest, nowMs int64)
	ConsumerDescribe(req groups.ConsumerDescribeRequest)
}

// GroupCoordinator serves the consumer groups whose __consumer_offsets
// partitions this node leads.
type GroupCoordinator interface {
	// Submit hands input to the coordinator of group at once, so one
	// connection's requests reach it in order.
	Submit(ctx context.Context, group string, input GroupInput) GroupCall
	// ListGroups lists the groups of the partitions this node leads, with
	// a Kafka error code when some could not be listed.
	ListGroups(ctx context.Context) ([]groups.ListedGroup, int16, error)
}

// GroupCall is one submitted group request.
type GroupCall interface {
	// Wait returns the coordinator's response. An error wrapping
	// kerr.NotCoordinator or kerr.CoordinatorNotAvailable is answered
	// with that code; any other error means ctx ended.
	Wait(ctx context.Context) (groups.Response, error)
}

// ProducerIDs hands out idempotent producers' ids.
type ProducerIDs interface {
	// Next returns an id never handed out before, in this cluster.
	Next(ctx context.Context) (int64, error)
}

// TxnInput feeds one request to a transactional id's coordinator core.
type TxnInput = func(c TxnCore, requestID uint64, nowMs int64)

// TxnCore is the transaction coordinator's core (a txn.Coordinator) as the
// handlers' inputs see it: its request verbs.
type TxnCore interface {
	InitProducerID(req txn.InitRequest, nowMs int64)
	AddPartitions(req txn.AddPartitionsRequest, nowMs int64)
	EndTxn(req txn.EndRequest, nowMs int64)
}

// TxnCoordinator serves the transactional ids whose __transaction_state
// partitions this node leads.
type TxnCoordinator interface {
	// Submit hands input to the coordinator of the transactional id at
	// once, so one connection's requests reach it in order.
	Submit(ctx context.Context, id string, input TxnInput) TxnCall
	// Verify asks the coordinator of req's transactional id, on this
	// node or another, whether req's partitions are in the producer's
	// ongoing transaction (AddPartitionsToTxn with verifyOnly, KIP-890):
	// what a partition leader asks before the first transactional batch
	// of a transaction.
	Verify(ctx context.Context, req txn.AddPartitionsRequest) (txn.Response, error)
	// EnsureTopic reports whether __transaction_state exists, and when it
	// does not, starts creating it in the background (Kafka creates it on
	// the first FindCoordinator for a transactional id).
	EnsureTopic() bool
}

// TxnCall is one submitted transaction coordinator request.
type TxnCall interface {
	// Wait returns the coordinator's response. An error wrapping a
	// kerr.Error is answered with that code; any other error means ctx
	// ended or the coordinator closed.
	Wait(ctx context.Context) (txn.Response, error)
}

// GroupTxnMarkers writes transaction markers to __consumer_offsets
// partitions, through the group coordinator's own ordered append path,
// and applies the transaction's pending offsets (groups/coordinator's
// Driver).
type GroupTxnMarkers interface {
	WriteTxnMarker(ctx context.Context, partition int32, producerID int64, producerEpoch int16,
		coordinatorEpoch int32, commit bool) error
}
