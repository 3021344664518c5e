package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
)

// TestListOffsets: latest is the high watermark, earliest the log start;
// leadership and the client's leader epoch are checked first.
func TestListOffsets(t *testing.T) {
	for _, tc := range []struct {
		name       string
		partition  int32
		epoch      int32
		timestamp  int64
		epochStart int64 // the leader epoch start offset; the high watermark is 10
		replicaID  int32 // 0 reads as a consumer's -1
		want       *kerr.Error
		wantOffset int64
	}{
		{name: "latest", partition: 0, epoch: 5, timestamp: engine.LatestTimestamp, wantOffset: 10},
		{name: "earliest", partition: 0, epoch: -1, timestamp: engine.EarliestTimestamp, wantOffset: 3},
		{name: "earliest local", partition: 0, epoch: -1, timestamp: -4, wantOffset: 3},
		{name: "earliest pending upload", partition: 0, epoch: -1, timestamp: -5, want: kerr.UnsupportedVersion, wantOffset: -1},
		{name: "fenced epoch", partition: 0, epoch: 4, timestamp: engine.LatestTimestamp, want: kerr.FencedLeaderEpoch, wantOffset: -1},
		{name: "newer epoch", partition: 0, epoch: 6, timestamp: engine.LatestTimestamp, want: kerr.UnknownLeaderEpoch, wantOffset: -1},
		{name: "follower", partition: 1, epoch: 5, timestamp: engine.LatestTimestamp, want: kerr.NotLeaderForPartition, wantOffset: -1},
		{name: "not hosted", partition: 2, epoch: 5, timestamp: engine.LatestTimestamp, want: kerr.UnknownTopicOrPartition, wantOffset: -1},
		// A leader whose high watermark has not reached its epoch start
		// (restarted with an old checkpoint, or new, before its followers
		// fetched) knows no true offset yet: retriable, for every kind of
		// lookup, as Kafka.
		{name: "latest below epoch start", partition: 0, epoch: 5, timestamp: engine.LatestTimestamp, epochStart: 12,
			want: kerr.OffsetNotAvailable, wantOffset: -1},
		{name: "earliest below epoch start", partition: 0, epoch: -1, timestamp: engine.EarliestTimestamp, epochStart: 12,
			want: kerr.OffsetNotAvailable, wantOffset: -1},
		{name: "timestamp below epoch start", partition: 0, epoch: -1, timestamp: 1000, epochStart: 12,
			want: kerr.OffsetNotAvailable, wantOffset: -1},
		{name: "max timestamp below epoch start", partition: 0, epoch: -1, timestamp: engine.MaxTimestamp, epochStart: 12,
			want: kerr.OffsetNotAvailable, wantOffset: -1},
		{name: "latest at epoch start", partition: 0, epoch: 5, timestamp: engine.LatestTimestamp, epochStart: 10, wantOffset: 10},
		{name: "debugging tool below epoch start", partition: 0, epoch: -1, timestamp: engine.LatestTimestamp, epochStart: 12,
			replicaID: -2, wantOffset: 10},
		// Leadership is checked first.
		{name: "follower below epoch start", partition: 1, epoch: 5, timestamp: engine.LatestTimestamp, epochStart: 12,
			want: kerr.NotLeaderForPartition, wantOffset: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newSeamFixture(t)
			f.replica(0).logStart = 3
			f.replica(0).logEnd = 12 // above the high watermark: not committed yet
			f.replica(0).epochStart = tc.epochStart
			f.replica(1).epochStart = tc.epochStart
			req := kmsg.NewPtrListOffsetsRequest()
			req.SetVersion(7)
			req.ReplicaID = -1
			if tc.replicaID != 0 {
				req.ReplicaID = tc.replicaID
			}
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = tc.partition, tc.epoch, tc.timestamp
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			got := f.do(t, req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
			wantCode(t, "list offsets", got.ErrorCode, tc.want)
			if got.Offset != tc.wantOffset {
				t.Errorf("offset %d, want %d", got.Offset, tc.wantOffset)
			}
		})
	}
}
