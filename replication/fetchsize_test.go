package replication

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/internal/vfs"
)

func TestPartitionFetchBytes(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		partitionMax, responseMax int32
		partitions                int
		want                      int32
	}{
		{mib, 10 * mib, 1, 10 * mib},
		{mib, 10 * mib, 2, 5 * mib},
		{mib, 10 * mib, 10, mib},
		{mib, 10 * mib, 1000, mib},      // the configured amount is a floor
		{4 * mib, 10 * mib, 4, 4 * mib}, // a larger configured amount wins
		{mib, 0, 2, mib},                // no response bound: as configured
		{mib, 10 * mib, 0, mib},         // nothing to share
		{512, 1 << 29, 1 << 30, 512},    // more partitions than bytes
		{mib, 1<<31 - 1, 1, 1<<31 - 1},  // no overflow
	} {
		if got := partitionFetchBytes(tc.partitionMax, tc.responseMax, tc.partitions); got != tc.want {
			t.Errorf("partitionFetchBytes(%d, %d, %d) = %d, want %d", tc.partitionMax, tc.responseMax, tc.partitions, got, tc.want)
		}
		if got := partitionFetchBytes(tc.partitionMax, tc.responseMax, tc.partitions); tc.partitions > 0 && tc.responseMax > 0 &&
			got > tc.partitionMax && int64(got)*int64(tc.partitions) > int64(tc.responseMax) {
			t.Errorf("partitionFetchBytes(%d, %d, %d) = %d: the shares exceed the response bound", tc.partitionMax, tc.responseMax, tc.partitions, got)
		}
	}
}

// fetchCapture is a leader that answers a Fetch of fewer than want
// partitions at once with no records, and hands a Fetch of want partitions
// to the test and holds it, as a long poll, until the fetcher closes the
// connection.
type fetchCapture struct {
	want     int
	requests chan *kmsg.FetchRequest
	closed   chan struct{}
}

func (c *fetchCapture) RoundTrip(r kmsg.Request, _ time.Time) ([]byte, error) {
	req, ok := r.(*kmsg.FetchRequest)
	if !ok {
		return nil, fmt.Errorf("fetchCapture: %s", kmsg.NameForKey(r.Key()))
	}
	if n := len(req.Topics); n == 1 && len(req.Topics[0].Partitions) == c.want {
		c.requests <- req
		<-c.closed
		return nil, errors.New("fetchCapture: closed")
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	for _, rt := range req.Topics {
		t := kmsg.NewFetchResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = rp.Partition
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp.AppendTo(nil), nil
}

func (c *fetchCapture) Close() error {
	select {
	case <-c.closed:
	default:
		close(c.closed)
	}
	return nil
}

// A follower of two partitions on one leader asks each for half the
// response bound, not Kafka's 1 MiB: its rounds each cost an fdatasync,
// so they must carry enough to keep acks=all producers moving. The
// response bound itself is what the fetch carries as its MaxBytes.
func TestFollowerFetchSharesResponseBytes(t *testing.T) {
	conn := &fetchCapture{want: 2, requests: make(chan *kmsg.FetchRequest, 1), closed: make(chan struct{})}
	fm := newFetcherManager(2, FetchConfig{
		Dial:          func(int32) (LeaderConn, error) { return conn, nil },
		MaxBytes:      1 << 20,
		ResponseBytes: 10 << 20,
		WaitMaxMs:     10,
	}, slog.New(slog.DiscardHandler))
	defer fm.stopAll()
	for i := range 2 {
		tp := engine.TopicPartition{Topic: "t", Partition: int32(i)}
		l, _, err := engine.Open(vfs.NewMem(), fmt.Sprintf("/d/t-%d", i), tp, engine.DefaultOptions(), engine.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		p := newPartition(tp, l, nil, 0)
		if err := p.becomeLeaderOrFollower(false, 1); err != nil {
			t.Fatal(err)
		}
		fm.follow(tp, p, 1, 1)
	}
	var req *kmsg.FetchRequest
	select {
	case req = <-conn.requests:
	case <-time.After(10 * time.Second):
		t.Fatal("no fetch carrying both partitions within 10 s")
	}
	if req.MaxBytes != 10<<20 {
		t.Errorf("fetch MaxBytes %d, want replica.fetch.response.max.bytes %d", req.MaxBytes, 10<<20)
	}
	for _, rp := range req.Topics[0].Partitions {
		if rp.PartitionMaxBytes != 5<<20 {
			t.Errorf("partition %d: PartitionMaxBytes %d, want half the response bound, %d", rp.Partition, rp.PartitionMaxBytes, 5<<20)
		}
	}
}
