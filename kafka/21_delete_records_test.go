package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDeleteRecords: the leader moves its log start offset; elsewhere
// NOT_LEADER_OR_FOLLOWER, or UNKNOWN_TOPIC_OR_PARTITION when the image has
// no such partition; past the high watermark OFFSET_OUT_OF_RANGE.
func TestDeleteRecords(t *testing.T) {
	for _, tc := range []struct {
		name      string
		topic     string
		partition int32
		offset    int64
		want      *kerr.Error
		wantLow   int64
	}{
		{name: "leader", topic: "t", partition: 0, offset: 4, wantLow: 4},
		{name: "to the high watermark", topic: "t", partition: 0, offset: -1, wantLow: 10},
		{name: "past the high watermark", topic: "t", partition: 0, offset: 11, want: kerr.OffsetOutOfRange, wantLow: -1},
		{name: "follower", topic: "t", partition: 1, offset: 4, want: kerr.NotLeaderForPartition, wantLow: -1},
		{name: "not hosted", topic: "t", partition: 2, offset: 4, want: kerr.NotLeaderForPartition, wantLow: -1},
		{name: "no such partition", topic: "t", partition: 3, offset: 4, want: kerr.UnknownTopicOrPartition, wantLow: -1},
		{name: "unknown topic", topic: "nope", partition: 0, offset: 4, want: kerr.UnknownTopicOrPartition, wantLow: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newSeamFixture(t)
			req := kmsg.NewPtrDeleteRecordsRequest()
			req.SetVersion(2)
			rt := kmsg.NewDeleteRecordsRequestTopic()
			rt.Topic = tc.topic
			rp := kmsg.NewDeleteRecordsRequestTopicPartition()
			rp.Partition, rp.Offset = tc.partition, tc.offset
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			got := f.do(t, req).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
			wantCode(t, "delete records", got.ErrorCode, tc.want)
			if got.LowWatermark != tc.wantLow {
				t.Errorf("low watermark %d, want %d", got.LowWatermark, tc.wantLow)
			}
		})
	}
}
