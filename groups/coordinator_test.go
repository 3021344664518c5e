package groups

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"testing"
)

func TestPartitionForMatchesJava(t *testing.T) {
	// Values from Kafka 4.1's GroupCoordinatorService.partitionFor,
	// Utils.abs(groupId.hashCode()) % n, computed with a JDK and
	// kafka-clients. A negative hash (my-group, Hello World, kcat-2, the
	// emoji) tells Utils.abs from Utils.toPositive (h & 0x7fffffff), which
	// names another partition; Integer.MIN_VALUE (polygenelubricants) is 0.
	for _, tc := range []struct {
		group string
		n     int32
		want  int32
	}{
		{"", 50, 0},
		{"g", 50, 3},
		{"g", 12, 7},
		{"my-group", 50, 12},
		{"my-group", 12, 6},
		{"Hello World", 50, 26},
		{"Hello World", 12, 0},
		{"kcat-2", 12, 0},
		{"console-consumer-12345", 50, 6},
		{"grüße", 50, 23},
		{"\U0001F600emoji", 50, 27}, // beyond the BMP: a surrogate pair in Java
		{"\U0001F600emoji", 12, 5},
		{"polygenelubricants", 50, 0}, // hashCode Integer.MIN_VALUE
		{"polygenelubricants", 12, 0},
	} {
		if got := PartitionFor(tc.group, tc.n); got != tc.want {
			t.Errorf("PartitionFor(%q, %d) = %d, want %d", tc.group, tc.n, got, tc.want)
		}
	}
}

func TestSeededMemberIDs(t *testing.T) {
	a, b, c := SeededMemberIDs(42), SeededMemberIDs(42), SeededMemberIDs(43)
	uuid := regexp.MustCompile(`^client-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for i := range 1000 {
		x, y, z := a("client"), b("client"), c("client")
		if x != y {
			t.Fatalf("draw %d: same seed gave %s and %s", i, x, y)
		}
		if x == z {
			t.Fatalf("draw %d: seeds 42 and 43 both gave %s", i, x)
		}
		if !uuid.MatchString(x) {
			t.Fatalf("draw %d: %q is not prefix-UUIDv4", i, x)
		}
		if seen[x] {
			t.Fatalf("draw %d: %s repeated", i, x)
		}
		seen[x] = true
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	for name, mutate := range map[string]func(*Config){
		"negative delay":         func(c *Config) { c.InitialRebalanceDelayMs = -1 },
		"inverted session range": func(c *Config) { c.MaxSessionTimeoutMs = c.MinSessionTimeoutMs - 1 },
		"zero max size":          func(c *Config) { c.MaxSize = 0 },
		"zero retention":         func(c *Config) { c.OffsetsRetentionMs = 0 },
		"zero max groups":        func(c *Config) { c.MaxGroups = 0 },
	} {
		cfg := DefaultConfig()
		mutate(&cfg)
		if err := cfg.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: got %v", name, err)
		}
		if _, err := NewCoordinator(cfg, 0, 1, SeededMemberIDs(1)); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: NewCoordinator: got %v", name, err)
		}
	}
	for _, p := range [][2]int32{{-1, 3}, {3, 3}, {0, 0}} {
		if _, err := NewCoordinator(DefaultConfig(), p[0], p[1], SeededMemberIDs(1)); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("partition %d of %d: got %v", p[0], p[1], err)
		}
	}
	if _, err := NewCoordinator(DefaultConfig(), 0, 1, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("nil id source: got %v", err)
	}
}

func TestReplayRejectsImpossibleMetadata(t *testing.T) {
	member := func(id, instance string) MemberMetadataValue {
		return MemberMetadataValue{MemberID: id, InstanceID: instance}
	}
	for name, m := range map[string]*GroupMetadataValue{
		"negative generation": {ProtocolType: "consumer", Generation: -1},
		"no protocol":         {ProtocolType: "consumer", Generation: 1, Leader: "a", Members: []MemberMetadataValue{member("a", "")}},
		"leader not a member": {ProtocolType: "consumer", Generation: 1, Protocol: "range", Leader: "b", Members: []MemberMetadataValue{member("a", "")}},
		"repeated member":     {ProtocolType: "consumer", Generation: 1, Protocol: "range", Leader: "a", Members: []MemberMetadataValue{member("a", ""), member("a", "")}},
		"repeated instance":   {ProtocolType: "consumer", Generation: 1, Protocol: "range", Leader: "a", Members: []MemberMetadataValue{member("a", "i"), member("b", "i")}},
		"empty member id":     {ProtocolType: "consumer", Generation: 1, Protocol: "range", Leader: "", Members: []MemberMetadataValue{member("", "")}},
	} {
		c, err := NewCoordinator(DefaultConfig(), 0, 1, SeededMemberIDs(1))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Replay(Record{Kind: GroupMetadataRecord, Group: "g", Metadata: m}); !errors.Is(err, ErrCorruptRecord) {
			t.Errorf("%s: got %v", name, err)
		}
	}
	c, _ := NewCoordinator(DefaultConfig(), 0, 1, SeededMemberIDs(1))
	if err := c.Replay(Record{Kind: OffsetCommitRecord, Group: "g", TopicPartition: TopicPartition{"", 0}, Offset: &OffsetAndMetadata{}}); !errors.Is(err, ErrCorruptRecord) {
		t.Errorf("offset without topic: got %v", err)
	}
	if err := c.CompleteLoad(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Replay(Record{Kind: GroupMetadataRecord, Group: "g"}); !errors.Is(err, ErrNotLoading) {
		t.Errorf("replay after load: got %v", err)
	}
	if err := c.CompleteLoad(0); !errors.Is(err, ErrNotLoading) {
		t.Errorf("second CompleteLoad: got %v", err)
	}
}

// TestUnloadAnswersEverything: after Unload every request kind is
// answered NOT_COORDINATOR, and nothing is persisted.
func TestUnloadAnswersEverything(t *testing.T) {
	c, _ := NewCoordinator(testConfig(), 0, 1, SeededMemberIDs(7))
	if err := c.CompleteLoad(0); err != nil {
		t.Fatal(err)
	}
	c.Join(JoinRequest{RequestID: 1, Group: "g", ClientID: "a", SessionTimeoutMs: 10000, ProtocolType: "consumer", Protocols: []Protocol{{Name: "range"}}}, 0)
	rd := c.Ready()
	if len(rd.Responses) != 1 || rd.Responses[0].Join.ErrorCode != 0 {
		t.Fatalf("join: %+v", rd)
	}
	id := rd.Responses[0].Join.MemberID
	// A second member starts a rebalance and waits for id to rejoin.
	c.Join(JoinRequest{RequestID: 2, Group: "g", ClientID: "b", SessionTimeoutMs: 10000, ProtocolType: "consumer", Protocols: []Protocol{{Name: "range"}}}, 0)
	if rd := c.Ready(); !rd.Empty() {
		t.Fatalf("second join answered at once: %+v", rd)
	}
	c.Unload()
	c.Join(JoinRequest{RequestID: 3, Group: "g", SessionTimeoutMs: 10000, ProtocolType: "consumer", Protocols: []Protocol{{Name: "range"}}}, 0)
	c.Sync(SyncRequest{RequestID: 4, Group: "g", Generation: 1, MemberID: id}, 0)
	c.Heartbeat(HeartbeatRequest{RequestID: 5, Group: "g", Generation: 1, MemberID: id}, 0)
	c.Leave(LeaveRequest{RequestID: 6, Group: "g", Members: []LeavingMember{{MemberID: id}}}, 0)
	c.CommitOffsets(CommitRequest{RequestID: 7, Group: "g", Generation: 1, MemberID: id, Offsets: []OffsetCommit{{Topic: "t", Offset: 1}}}, 0)
	c.FetchOffsets(FetchOffsetsRequest{RequestID: 8, Group: "g"})
	c.DescribeGroup(DescribeGroupRequest{RequestID: 9, Group: "g"})
	c.DeleteGroup(DeleteGroupRequest{RequestID: 10, Group: "g"}, 0)
	c.Tick(1 << 40)
	c.ExpireOffsets(1 << 40)
	c.PartitionCountChanged("t", 0)
	rd = c.Ready()
	if len(rd.Records) != 0 {
		t.Fatalf("unloaded coordinator persisted %+v", rd.Records)
	}
	if len(rd.Responses) != 9 || rd.Responses[0].RequestID != 2 {
		t.Fatalf("%d responses, want 9 starting with the waiting join: %+v", len(rd.Responses), rd.Responses)
	}
	for _, r := range rd.Responses {
		if code := responseCode(r); code != errNotCoordinator {
			t.Errorf("request %d: %s, want NOT_COORDINATOR", r.RequestID, errName(code))
		}
	}
	if _, code := c.ListGroups(); code != errNotCoordinator {
		t.Errorf("ListGroups: %s", errName(code))
	}
}

// responseCode is a response's error: the top-level one, or the first
// partition's for a commit.
func responseCode(r Response) int16 {
	switch {
	case r.Join != nil:
		return r.Join.ErrorCode
	case r.Sync != nil:
		return r.Sync.ErrorCode
	case r.Heartbeat != nil:
		return r.Heartbeat.ErrorCode
	case r.Leave != nil:
		return r.Leave.ErrorCode
	case r.Commit != nil:
		return r.Commit.Partitions[0].ErrorCode
	case r.Fetch != nil:
		return r.Fetch.ErrorCode
	case r.Describe != nil:
		return r.Describe.ErrorCode
	case r.Delete != nil:
		return r.Delete.ErrorCode
	}
	panic("empty response")
}

func TestResponseWithError(t *testing.T) {
	in := []Response{
		{RequestID: 1, Join: &JoinResponse{Generation: 3, MemberID: "m", LeaderID: "m", Members: []JoinMember{{MemberID: "m"}}}},
		{RequestID: 2, Sync: &SyncResponse{Assignment: []byte{1}}},
		{RequestID: 3, Heartbeat: &HeartbeatResponse{}},
		{RequestID: 4, Leave: &LeaveResponse{Members: []LeaveMemberResult{{MemberID: "m"}}}},
		{RequestID: 5, Commit: &CommitResponse{Partitions: []PartitionResult{{Topic: "t"}, {Topic: "t", Partition: 1}}}},
		{RequestID: 6, Fetch: &FetchOffsetsResponse{Offsets: []FetchedOffset{{Topic: "t"}}}},
		{RequestID: 7, Describe: &DescribeGroupResponse{Group: "g", State: "Stable"}},
		{RequestID: 8, Delete: &DeleteGroupResponse{}},
	}
	for _, r := range in {
		out := r.WithError(errNotCoordinator)
		if out.RequestID != r.RequestID || responseCode(out) != errNotCoordinator {
			t.Errorf("%+v → %+v", r, out)
		}
		if out.Join != nil && (out.Join.Generation != -1 || out.Join.Members != nil || out.Join.MemberID != "m") {
			t.Errorf("join error response kept success fields: %+v", out.Join)
		}
		if out.Commit != nil && (len(out.Commit.Partitions) != 2 || out.Commit.Partitions[1].ErrorCode != errNotCoordinator) {
			t.Errorf("commit error response: %+v", out.Commit)
		}
	}
}

// A load names the groups whose records sit in a partition that
// PartitionFor does not map them to (written by a wren whose mapping
// differed), with their committed offsets, and only those.
func TestLoadNamesMisplacedGroups(t *testing.T) {
	const count = 12
	home, other := "", ""
	for i := range 1000 {
		id := fmt.Sprintf("g%d", i)
		switch {
		case home == "" && PartitionFor(id, count) == 3:
			home = id
		case other == "" && PartitionFor(id, count) != 3:
			other = id
		}
	}
	c, err := NewCoordinator(DefaultConfig(), 3, count, SeededMemberIDs(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range []Record{
		{Kind: OffsetCommitRecord, Group: home, TopicPartition: TopicPartition{"t", 0}, Offset: &OffsetAndMetadata{Offset: 5, LeaderEpoch: -1}},
		{Kind: OffsetCommitRecord, Group: other, TopicPartition: TopicPartition{"t", 1}, Offset: &OffsetAndMetadata{Offset: 9, LeaderEpoch: -1}},
		{Kind: OffsetCommitRecord, Group: other, TopicPartition: TopicPartition{"t", 0}, Offset: &OffsetAndMetadata{Offset: 7, LeaderEpoch: -1}},
	} {
		if err := c.Replay(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.CompleteLoad(0); err != nil {
		t.Fatal(err)
	}
	got := c.Misplaced()
	want := map[string][]string{other: {"t:0:7", "t:1:9"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Misplaced() = %v, want %v", got, want)
	}
}
