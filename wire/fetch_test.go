package wire

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/internal/vfs"
)

// TestFetchEncodingMatchesKmsg encodes random Fetch responses by hand (with
// record data as file chunks) and with kmsg (with the same bytes in
// memory) for every served version, and compares the bytes.
func TestFetchEncodingMatchesKmsg(t *testing.T) {
	fsys := vfs.NewMem()
	f, err := fsys.Create("/records")
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 1<<16)
	rng := rand.New(rand.NewSource(1))
	rng.Read(data)
	f.WriteAt(data, 0)
	for version := int16(4); version <= 12; version++ {
		for trial := 0; trial < 20; trial++ {
			var topics []FetchTopic
			resp := kmsg.NewFetchResponse()
			resp.Version = version
			resp.ThrottleMillis = rng.Int31()
			if version >= 7 {
				resp.ErrorCode = int16(rng.Intn(3))
				resp.SessionID = rng.Int31()
			}
			for ti := 0; ti < rng.Intn(4); ti++ {
				ft := FetchTopic{Topic: string(rune('a' + ti))}
				kt := kmsg.NewFetchResponseTopic()
				kt.Topic = ft.Topic
				for pi := 0; pi < rng.Intn(4); pi++ {
					off, n := rng.Int63n(1<<15), rng.Int63n(1<<14)
					if rng.Intn(3) == 0 {
						n = 0
					}
					fp := FetchPartition{Partition: int32(pi), ErrorCode: int16(rng.Intn(5)), HighWatermark: rng.Int63(), LastStableOffset: rng.Int63(), LogStartOffset: rng.Int63()}
					if version < 5 {
						fp.LogStartOffset = -1
					}
					if n > 0 {
						fp.Records = FileSlice{File: f, Position: off, Size: n}
					}
					kp := kmsg.NewFetchResponseTopicPartition()
					kp.Partition, kp.ErrorCode, kp.HighWatermark, kp.LastStableOffset, kp.LogStartOffset = fp.Partition, fp.ErrorCode, fp.HighWatermark, fp.LastStableOffset, fp.LogStartOffset
					kp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
					for range rng.Intn(3) {
						a := AbortedTransaction{ProducerID: rng.Int63(), FirstOffset: rng.Int63()}
						fp.AbortedTransactions = append(fp.AbortedTransactions, a)
						ka := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
						ka.ProducerID, ka.FirstOffset = a.ProducerID, a.FirstOffset
						kp.AbortedTransactions = append(kp.AbortedTransactions, ka)
					}
					ft.Partitions = append(ft.Partitions, fp)
					kp.RecordBatches = append([]byte{}, data[off:off+n]...)
					kt.Partitions = append(kt.Partitions, kp)
				}
				topics = append(topics, ft)
				resp.Topics = append(resp.Topics, kt)
			}
			want := resp.AppendTo(nil)
			got, err := AppendTo(nil, EncodeFetchResponse(version, resp.ThrottleMillis, resp.ErrorCode, resp.SessionID, topics))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("v%d trial %d: hand encoding differs from kmsg (%d vs %d bytes)", version, trial, len(got), len(want))
			}
			// And kmsg decodes it back.
			back := kmsg.NewFetchResponse()
			back.Version = version
			if err := back.ReadFrom(got); err != nil {
				t.Fatalf("v%d: kmsg cannot read the hand encoding: %v", version, err)
			}
		}
	}
}
