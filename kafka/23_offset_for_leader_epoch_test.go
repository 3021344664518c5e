package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOffsetForLeaderEpoch: the end offset of an epoch from the leader's
// epoch cache (t-0 has epochs 2 from offset 0 and 5 from offset 7, log
// end 10), and Kafka's codes for the faults.
func TestOffsetForLeaderEpoch(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		topic                string
		partition            int32
		current, leaderEpoch int32
		want                 *kerr.Error
		wantEpoch            int32
		wantEnd              int64
	}{
		{name: "older epoch", topic: "t", current: 5, leaderEpoch: 2, wantEpoch: 2, wantEnd: 7},
		{name: "between epochs", topic: "t", current: -1, leaderEpoch: 4, wantEpoch: 2, wantEnd: 7},
		{name: "current epoch", topic: "t", current: 5, leaderEpoch: 5, wantEpoch: 5, wantEnd: 10},
		{name: "before the first epoch", topic: "t", current: 5, leaderEpoch: 1, wantEpoch: 1, wantEnd: 0},
		{name: "above the current epoch", topic: "t", current: -1, leaderEpoch: 6, wantEpoch: -1, wantEnd: -1},
		{name: "current epoch, nothing written in it yet", topic: "t", current: 5, leaderEpoch: 5, wantEpoch: 5, wantEnd: 10},
		{name: "fenced", topic: "t", current: 4, leaderEpoch: 2, want: kerr.FencedLeaderEpoch, wantEpoch: -1, wantEnd: -1},
		{name: "newer than ours", topic: "t", current: 6, leaderEpoch: 2, want: kerr.UnknownLeaderEpoch, wantEpoch: -1, wantEnd: -1},
		{name: "follower", topic: "t", partition: 1, current: 5, leaderEpoch: 2, want: kerr.NotLeaderForPartition, wantEpoch: -1, wantEnd: -1},
		{name: "in the image, not hosted", topic: "t", partition: 2, current: 5, leaderEpoch: 2, want: kerr.NotLeaderForPartition, wantEpoch: -1, wantEnd: -1},
		{name: "unknown topic", topic: "nope", current: 5, leaderEpoch: 2, want: kerr.UnknownTopicOrPartition, wantEpoch: -1, wantEnd: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newSeamFixture(t)
			if tc.name == "current epoch, nothing written in it yet" {
				f.replica(0).epochs = f.replica(0).epochs[:1]
			}
			req := kmsg.NewPtrOffsetForLeaderEpochRequest()
			req.SetVersion(4)
			req.ReplicaID = -1
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = tc.topic
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = tc.partition, tc.current, tc.leaderEpoch
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			got := f.do(t, req).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
			wantCode(t, "offset for leader epoch", got.ErrorCode, tc.want)
			if got.LeaderEpoch != tc.wantEpoch || got.EndOffset != tc.wantEnd {
				t.Errorf("epoch %d end %d, want epoch %d end %d", got.LeaderEpoch, got.EndOffset, tc.wantEpoch, tc.wantEnd)
			}
		})
	}
}
