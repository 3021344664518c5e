package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func fetchRequest(partition, currentLeaderEpoch int32, offset int64) *kmsg.FetchRequest {
	r := kmsg.NewPtrFetchRequest()
	r.SetVersion(12)
	r.ReplicaID, r.MaxBytes, r.MinBytes, r.MaxWaitMillis = -1, 1<<20, 1, 0
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.FetchOffset, rp.PartitionMaxBytes = partition, currentLeaderEpoch, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	return r
}

// TestFetchErrors: leadership and the client's leader epoch are checked
// per partition before any read, with Kafka's codes.
func TestFetchErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		partition int32
		epoch     int32
		offset    int64
		replicaID int32
		want      *kerr.Error
	}{
		{name: "leader", partition: 0, epoch: 5, replicaID: -1},
		{name: "no epoch given", partition: 0, epoch: -1, replicaID: -1},
		{name: "fenced epoch", partition: 0, epoch: 4, replicaID: -1, want: kerr.FencedLeaderEpoch},
		{name: "newer epoch", partition: 0, epoch: 6, replicaID: -1, want: kerr.UnknownLeaderEpoch},
		{name: "follower", partition: 1, epoch: 5, replicaID: -1, want: kerr.NotLeaderForPartition},
		{name: "not hosted", partition: 2, epoch: 5, replicaID: -1, want: kerr.UnknownTopicOrPartition},
		{name: "above the high watermark", partition: 0, epoch: 5, offset: 11, replicaID: -1, want: kerr.OffsetOutOfRange},
		{name: "a replica id on a client listener", partition: 0, epoch: 5, replicaID: 2, want: kerr.TopicAuthorizationFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newSeamFixture(t)
			req := fetchRequest(tc.partition, tc.epoch, tc.offset)
			req.ReplicaID = tc.replicaID
			resp := f.do(t, req).(*kmsg.FetchResponse)
			rp := resp.Topics[0].Partitions[0]
			wantCode(t, "fetch", rp.ErrorCode, tc.want)
			wantHW := int64(-1)
			if tc.want == nil || tc.want == kerr.OffsetOutOfRange {
				wantHW = 10
			}
			if rp.HighWatermark != wantHW {
				t.Errorf("high watermark %d, want %d", rp.HighWatermark, wantHW)
			}
		})
	}
}

// TestFetchSession: a request naming a fetch session is refused whole.
func TestFetchSession(t *testing.T) {
	f := newSeamFixture(t)
	req := fetchRequest(0, 5, 0)
	req.SessionID, req.SessionEpoch = 7, 1
	resp := f.do(t, req).(*kmsg.FetchResponse)
	wantCode(t, "fetch with a session", resp.ErrorCode, kerr.FetchSessionIDNotFound)
}
