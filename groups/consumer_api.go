package groups

// This file holds the inputs and outputs of KIP-848 consumer groups
// (ConsumerGroupHeartbeat, ConsumerGroupDescribe) as plain values, as
// api.go does for the classic protocol.

// ConsumerGroupType and ClassicGroupType are the group types ListGroups
// v5 reports and filters on.
const (
	ConsumerGroupType = "consumer"
	ClassicGroupType  = "classic"
)

// Member epochs with a meaning of their own in ConsumerGroupHeartbeat.
const (
	// JoinMemberEpoch joins (or rejoins) the group.
	JoinMemberEpoch int32 = 0
	// LeaveMemberEpoch leaves the group.
	LeaveMemberEpoch int32 = -1
	// StaticLeaveMemberEpoch leaves for now: a static member keeps its
	// assignment until its session times out, and takes it back if it
	// rejoins with the same instance id before then.
	StaticLeaveMemberEpoch int32 = -2
)

// TopicMeta is one topic as the coordinator sees it: KIP-848 assignments
// name topics by id, the assignors by name.
type TopicMeta struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

// ConsumerHeartbeatRequest is a ConsumerGroupHeartbeat request. The Has*
// fields tell a field the client sent from one it left null (meaning
// "unchanged").
type ConsumerHeartbeatRequest struct {
	RequestID   uint64
	Group       string
	MemberID    string // v0 lets a joining member leave it empty
	MemberEpoch int32
	// InstanceID is group.instance.id; "" for a dynamic member. Like
	// RackID it is null ("unchanged") on most heartbeats.
	InstanceID         string
	RackID             string
	HasRackID          bool
	RebalanceTimeoutMs int32 // -1: not sent
	// SubscribedTopicNames and SubscribedTopicRegex: a member subscribes
	// to topics by name or by a regular expression (RE2; Kafka uses RE2J).
	SubscribedTopicNames    []string
	HasSubscribedTopicNames bool
	SubscribedTopicRegex    string
	HasSubscribedTopicRegex bool
	ServerAssignor          string // "": the group's default
	// TopicPartitions is what the member owns now; HasTopicPartitions is
	// false when it did not say (the field is null).
	TopicPartitions    []TopicPartitions
	HasTopicPartitions bool
	ClientID           string
	ClientHost         string
	// TopicDescribable reports whether the member's principal may
	// DESCRIBE topic; nil when authorization is off (every topic may be
	// described). The topics a regex subscription resolves to are only
	// those it allows, as Kafka's GroupMetadataManager keeps of a
	// resolved regex only the topics the member may describe (KIP-848's
	// authorized topics). The coordinator keeps the member's latest one
	// and asks it again whenever the topics change, so it must be cheap,
	// safe to call later from the coordinator's goroutine, and must not
	// hold on to the request.
	TopicDescribable func(topic string) bool
}

// ConsumerHeartbeatResponse answers a ConsumerHeartbeatRequest.
type ConsumerHeartbeatResponse struct {
	ErrorCode           int16
	ErrorMessage        string
	MemberID            string
	MemberEpoch         int32
	HeartbeatIntervalMs int32
	// Assignment is the member's whole assignment when it changed or the
	// request was a full one; nil means "unchanged".
	Assignment *[]TopicPartitions
}

// ConsumerDescribeRequest is one group of a ConsumerGroupDescribe request.
type ConsumerDescribeRequest struct {
	RequestID uint64
	Group     string
}

// ConsumerDescribedMember is one member in a ConsumerDescribeResponse.
type ConsumerDescribedMember struct {
	MemberID             string
	InstanceID           string
	RackID               string
	MemberEpoch          int32
	ClientID             string
	ClientHost           string
	SubscribedTopicNames []string
	SubscribedTopicRegex string
	Assignment           []TopicPartitions
	TargetAssignment     []TopicPartitions
}

// ConsumerDescribeResponse answers a ConsumerDescribeRequest.
type ConsumerDescribeResponse struct {
	ErrorCode       int16
	ErrorMessage    string
	Group           string
	State           string
	Epoch           int32
	AssignmentEpoch int32
	AssignorName    string
	Members         []ConsumerDescribedMember
}
