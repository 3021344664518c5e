package groups

// This file holds the coordinator's inputs (requests) and outputs
// (responses, records) as plain values. They carry Kafka's fields without
// its wire versions: the kafka package decodes a request with kmsg, fills
// one of these, and encodes the answer for the version the client spoke.

// ConsumerProtocolType is the protocol type of Kafka consumers. Only for
// it does the coordinator read the members' metadata (the subscribed
// topics), which it needs for offset expiry in a Stable group and for
// rebalancing when a subscribed topic's partition count changes.
const ConsumerProtocolType = "consumer"

// Protocol is one assignment protocol a member supports, with its
// metadata (for "consumer", Kafka's ConsumerProtocolSubscription bytes).
type Protocol struct {
	Name     string
	Metadata []byte
}

// TopicPartition names a committed partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// JoinRequest is a JoinGroup request. RequestID is the driver's opaque
// handle; the response that answers it carries it back, possibly many
// inputs later (a join waits for the join phase to end).
type JoinRequest struct {
	RequestID  uint64
	Group      string
	MemberID   string // "" for a member that has none yet
	InstanceID string // group.instance.id; "" for a dynamic member (KIP-345)
	// RequireKnownMemberID is true from JoinGroup v4 on (KIP-394): a
	// dynamic member without a member id is given one with
	// MEMBER_ID_REQUIRED and must join again with it.
	RequireKnownMemberID bool
	ClientID             string
	ClientHost           string
	SessionTimeoutMs     int32
	// RebalanceTimeoutMs <= 0 (JoinGroup v0 has none) means the session
	// timeout, as in Kafka.
	RebalanceTimeoutMs int32
	ProtocolType       string
	Protocols          []Protocol // in the member's order of preference
	Reason             string     // KIP-800; informational only
}

// JoinMember is one member as the leader's JoinGroup response lists it.
type JoinMember struct {
	MemberID   string
	InstanceID string
	Metadata   []byte // for the group's selected protocol
}

// JoinResponse answers a JoinRequest. On error Generation is -1 and the
// protocol and leader are empty; MemberID is the id the member should use
// next ("" when it must start over).
type JoinResponse struct {
	ErrorCode    int16
	Generation   int32
	ProtocolType string
	Protocol     string
	LeaderID     string
	MemberID     string
	Members      []JoinMember // only in the leader's response
}

// MemberAssignment is one member's assignment as the leader sends it.
type MemberAssignment struct {
	MemberID   string
	Assignment []byte
}

// SyncRequest is a SyncGroup request. ProtocolType and Protocol are sent
// from v5 on; "" means not sent.
type SyncRequest struct {
	RequestID    uint64
	Group        string
	Generation   int32
	MemberID     string
	InstanceID   string
	ProtocolType string
	Protocol     string
	Assignments  []MemberAssignment // only the leader's request carries them
}

// SyncResponse answers a SyncRequest.
type SyncResponse struct {
	ErrorCode    int16
	ProtocolType string
	Protocol     string
	Assignment   []byte
}

// HeartbeatRequest is a Heartbeat request.
type HeartbeatRequest struct {
	RequestID  uint64
	Group      string
	Generation int32
	MemberID   string
	InstanceID string
}

// HeartbeatResponse answers a HeartbeatRequest.
type HeartbeatResponse struct {
	ErrorCode int16
}

// LeavingMember is one member of a LeaveGroup request. From v3 on a
// request names several; an administrator may name a static member by
// InstanceID alone (MemberID "").
type LeavingMember struct {
	MemberID   string
	InstanceID string
	Reason     string
}

// LeaveRequest is a LeaveGroup request. For v0-2 the driver passes the one
// member and reports that member's ErrorCode as the top-level error.
type LeaveRequest struct {
	RequestID uint64
	Group     string
	Members   []LeavingMember
}

// LeaveMemberResult is the outcome for one LeavingMember.
type LeaveMemberResult struct {
	MemberID   string
	InstanceID string
	ErrorCode  int16
}

// LeaveResponse answers a LeaveRequest.
type LeaveResponse struct {
	ErrorCode int16
	Members   []LeaveMemberResult
}

// OffsetCommit is one partition of an OffsetCommit request.
type OffsetCommit struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32 // -1 if unknown
	Metadata    string
}

// CommitRequest is an OffsetCommit request. Generation -1 with an empty
// MemberID is a commit from outside group management (a simple consumer,
// an admin reset), accepted only while the group is Empty.
type CommitRequest struct {
	RequestID  uint64
	Group      string
	Generation int32
	MemberID   string
	InstanceID string
	// RetentionTimeMs is OffsetCommit v2-4's retention_time_ms; -1 (the
	// default, and every later version) means offsets.retention.minutes.
	RetentionTimeMs int64
	Offsets         []OffsetCommit
	// Version is the OffsetCommit version: a KIP-848 member must commit
	// with v9+, the first to mean a member epoch by the generation.
	Version int16
}

// PartitionResult is one partition's error in a CommitResponse.
type PartitionResult struct {
	Topic     string
	Partition int32
	ErrorCode int16
}

// CommitResponse answers a CommitRequest, partition by partition in the
// request's order.
type CommitResponse struct {
	Partitions []PartitionResult
}

// FetchOffsetsRequest is one group of an OffsetFetch request. Partitions
// nil means every partition the group has committed.
type FetchOffsetsRequest struct {
	RequestID  uint64
	Group      string
	Partitions []TopicPartition
	// RequireStable is OffsetFetch v7+'s require_stable (KIP-447): a
	// partition with pending transactional offsets answers
	// UNSTABLE_OFFSET_COMMIT instead of its committed offset.
	RequireStable bool
}

// TxnCommitRequest is a TxnOffsetCommit request: offsets a transactional
// producer commits for a group, pending until its transaction's marker.
// Generation is -1 and MemberID and InstanceID are empty when the request
// carries none (v0-2).
type TxnCommitRequest struct {
	RequestID     uint64
	Group         string
	ProducerID    int64
	ProducerEpoch int16
	Generation    int32
	MemberID      string
	InstanceID    string
	Offsets       []OffsetCommit
}

// TxnMarkerRequest is a transaction marker the driver appended to the
// coordinator's partition for a producer: COMMIT (Commit) or ABORT.
type TxnMarkerRequest struct {
	RequestID     uint64
	ProducerID    int64
	ProducerEpoch int16
	Commit        bool
}

// TxnMarkerResponse answers a TxnMarkerRequest.
type TxnMarkerResponse struct {
	ErrorCode int16
}

// FetchedOffset is one partition of a FetchOffsetsResponse; Offset -1 when
// nothing is committed.
type FetchedOffset struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	ErrorCode   int16
}

// FetchOffsetsResponse answers a FetchOffsetsRequest.
type FetchOffsetsResponse struct {
	ErrorCode int16
	Offsets   []FetchedOffset
}

// DescribeGroupRequest is one group of a DescribeGroups request.
type DescribeGroupRequest struct {
	RequestID uint64
	Group     string
}

// DescribedMember is one member in a DescribeGroupResponse. Metadata (for
// the selected protocol) and Assignment are filled only in a Stable group,
// as Kafka does.
type DescribedMember struct {
	MemberID   string
	InstanceID string
	ClientID   string
	ClientHost string
	Metadata   []byte
	Assignment []byte
}

// DescribeGroupResponse answers a DescribeGroupRequest. A group that does
// not exist is GROUP_ID_NOT_FOUND with State "Dead"; DescribeGroups v0-5
// report it with no error (the kafka package maps it).
type DescribeGroupResponse struct {
	ErrorCode    int16
	Group        string
	State        string
	ProtocolType string
	Protocol     string
	Members      []DescribedMember
}

// DeleteGroupRequest is one group of a DeleteGroups request.
type DeleteGroupRequest struct {
	RequestID uint64
	Group     string
}

// DeleteGroupResponse answers a DeleteGroupRequest.
type DeleteGroupResponse struct {
	ErrorCode int16
}

// OffsetDeleteRequest is an OffsetDelete request: one group's committed
// offsets to drop.
type OffsetDeleteRequest struct {
	RequestID  uint64
	Group      string
	Partitions []TopicPartition
}

// OffsetDeleteResponse answers an OffsetDeleteRequest: a group-level error,
// or one result per partition in the request's order.
type OffsetDeleteResponse struct {
	ErrorCode  int16
	Partitions []PartitionResult
}

// ListedGroup is one group in ListGroups.
type ListedGroup struct {
	Group        string
	ProtocolType string
	// Type is ClassicGroupType or ConsumerGroupType (KIP-848).
	Type string
	// State is the state's name: a classic group's GroupState, or a
	// consumer group's (Empty, Assigning, Reconciling, Stable).
	State string
}

// Response is the answer to the request RequestID. Exactly one of the
// pointers is set, matching the request's kind.
type Response struct {
	RequestID uint64
	Join      *JoinResponse
	Sync      *SyncResponse
	Heartbeat *HeartbeatResponse
	Leave     *LeaveResponse
	Commit    *CommitResponse
	Fetch     *FetchOffsetsResponse
	Describe  *DescribeGroupResponse
	Delete    *DeleteGroupResponse
	TxnCommit *CommitResponse
	TxnMarker *TxnMarkerResponse

	OffsetDelete     *OffsetDeleteResponse
	ConsumerHB       *ConsumerHeartbeatResponse
	ConsumerDescribe *ConsumerDescribeResponse
}

// WithError returns r's kind of response carrying only the error code, for
// a driver that could not persist the Ready holding r (see doc.go).
func (r Response) WithError(code int16) Response {
	out := Response{RequestID: r.RequestID}
	switch {
	case r.Join != nil:
		out.Join = &JoinResponse{ErrorCode: code, Generation: -1, MemberID: r.Join.MemberID}
	case r.Sync != nil:
		out.Sync = &SyncResponse{ErrorCode: code}
	case r.Heartbeat != nil:
		out.Heartbeat = &HeartbeatResponse{ErrorCode: code}
	case r.Leave != nil:
		out.Leave = &LeaveResponse{ErrorCode: code}
	case r.Commit != nil:
		ps := make([]PartitionResult, len(r.Commit.Partitions))
		for i, p := range r.Commit.Partitions {
			ps[i] = PartitionResult{Topic: p.Topic, Partition: p.Partition, ErrorCode: code}
		}
		out.Commit = &CommitResponse{Partitions: ps}
	case r.TxnCommit != nil:
		ps := make([]PartitionResult, len(r.TxnCommit.Partitions))
		for i, p := range r.TxnCommit.Partitions {
			ps[i] = PartitionResult{Topic: p.Topic, Partition: p.Partition, ErrorCode: code}
		}
		out.TxnCommit = &CommitResponse{Partitions: ps}
	case r.TxnMarker != nil:
		out.TxnMarker = &TxnMarkerResponse{ErrorCode: code}
	case r.Fetch != nil:
		out.Fetch = &FetchOffsetsResponse{ErrorCode: code}
	case r.Describe != nil:
		out.Describe = &DescribeGroupResponse{ErrorCode: code, Group: r.Describe.Group, State: Dead.String()}
	case r.Delete != nil:
		out.Delete = &DeleteGroupResponse{ErrorCode: code}
	case r.OffsetDelete != nil:
		out.OffsetDelete = &OffsetDeleteResponse{ErrorCode: code}
	case r.ConsumerHB != nil:
		out.ConsumerHB = &ConsumerHeartbeatResponse{ErrorCode: code, MemberID: r.ConsumerHB.MemberID, MemberEpoch: r.ConsumerHB.MemberEpoch}
	case r.ConsumerDescribe != nil:
		out.ConsumerDescribe = &ConsumerDescribeResponse{ErrorCode: code, Group: r.ConsumerDescribe.Group}
	}
	return out
}

// Ready is what the coordinator asks the driver to do: append Records to
// its __consumer_offsets partition, and once they are durable, deliver
// Responses. See doc.go for the contract.
type Ready struct {
	Records   []Record
	Responses []Response
}

// Empty reports whether there is nothing to do.
func (rd Ready) Empty() bool { return len(rd.Records) == 0 && len(rd.Responses) == 0 }
