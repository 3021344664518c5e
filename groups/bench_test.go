package groups

import (
	"fmt"
	"testing"
)

// stableGroups returns a coordinator with n Stable groups of members
// members each.
func stableGroups(b *testing.B, n, members int) (*Coordinator, []string) {
	b.Helper()
	cfg := testConfig()
	c, err := NewCoordinator(cfg, 0, 1, SeededMemberIDs(1))
	if err != nil {
		b.Fatal(err)
	}
	if err := c.CompleteLoad(0); err != nil {
		b.Fatal(err)
	}
	protocols := parseProtocols(ConsumerProtocolType, "range:t1")
	var req uint64
	var ids []string
	for gi := range n {
		group := fmt.Sprintf("g%d", gi)
		for range members {
			req++
			c.Join(JoinRequest{RequestID: req, Group: group, ClientID: "c", SessionTimeoutMs: 30000, RebalanceTimeoutMs: 30000, ProtocolType: ConsumerProtocolType, Protocols: protocols}, 0)
		}
		c.Ready()
		// Everyone rejoins so one generation holds them all.
		g := c.Group(group)
		for _, m := range g.Describe().Members {
			if !m.AwaitingJoin {
				req++
				c.Join(JoinRequest{RequestID: req, Group: group, MemberID: m.MemberID, ClientID: "c", SessionTimeoutMs: 30000, RebalanceTimeoutMs: 30000, ProtocolType: ConsumerProtocolType, Protocols: protocols}, 0)
			}
		}
		c.Ready()
		req++
		c.Sync(SyncRequest{RequestID: req, Group: group, Generation: g.generation, MemberID: g.leaderID}, 0)
		c.Ready()
		if g.state != Stable {
			b.Fatalf("group %s is %s", group, g.state)
		}
		if gi == 0 {
			for _, m := range g.members {
				ids = append(ids, m.memberID)
			}
		}
	}
	return c, ids
}

// BenchmarkCommitOffsets: one OffsetCommit of 10 partitions from a member
// of a Stable group, with its Ready.
func BenchmarkCommitOffsets(b *testing.B) {
	c, ids := stableGroups(b, 1, 3)
	offsets := make([]OffsetCommit, 10)
	for i := range offsets {
		offsets[i] = OffsetCommit{Topic: "t1", Partition: int32(i), LeaderEpoch: 1}
	}
	gen := c.Group("g0").generation
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		for j := range offsets {
			offsets[j].Offset = int64(i)
		}
		c.CommitOffsets(CommitRequest{RequestID: uint64(i), Group: "g0", Generation: gen, MemberID: ids[0], RetentionTimeMs: -1, Offsets: offsets}, 1000)
		if rd := c.Ready(); len(rd.Records) != len(offsets) {
			b.Fatalf("%d records", len(rd.Records))
		}
	}
}

// BenchmarkHeartbeat: one Heartbeat of a Stable group's member.
func BenchmarkHeartbeat(b *testing.B) {
	c, ids := stableGroups(b, 1, 3)
	gen := c.Group("g0").generation
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c.Heartbeat(HeartbeatRequest{RequestID: uint64(i), Group: "g0", Generation: gen, MemberID: ids[i%len(ids)]}, 1000)
		if rd := c.Ready(); rd.Responses[0].Heartbeat.ErrorCode != 0 {
			b.Fatal(errName(rd.Responses[0].Heartbeat.ErrorCode))
		}
	}
}

// BenchmarkTick: a Tick over 1000 Stable groups of 3 members where
// nothing expires, the driver's periodic cost.
func BenchmarkTick(b *testing.B) {
	c, _ := stableGroups(b, 1000, 3)
	b.ReportAllocs()
	for b.Loop() {
		c.Tick(1000)
	}
	if rd := c.Ready(); !rd.Empty() {
		b.Fatalf("tick did something: %d records, %d responses", len(rd.Records), len(rd.Responses))
	}
}

// BenchmarkEncodeOffsetCommit: key and value of one offset commit record.
func BenchmarkEncodeOffsetCommit(b *testing.B) {
	r := Record{Kind: OffsetCommitRecord, Group: "consumer-group-1", TopicPartition: TopicPartition{"orders", 3},
		Offset: &OffsetAndMetadata{Offset: 123456, LeaderEpoch: 4, CommitTimestampMs: 1700000000000, ExpireTimestampMs: -1}}
	b.ReportAllocs()
	for b.Loop() {
		_ = r.EncodeKey()
		_ = r.EncodeValue()
	}
}
