package replication

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

func oneRecord(t *testing.T) []byte {
	t.Helper()
	b := batch.NewBuilder(batch.CompressionNone)
	b.Append(batch.Record{Timestamp: 1, Value: []byte("v")})
	raw, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// The high watermark follows what the flush policy makes durable: under
// ack it moves only once the fdatasync covering an append returned; under
// interval once the append is written. Consumers read only below it.
func TestHighWatermarkFollowsFlushPolicy(t *testing.T) {
	for _, policy := range []engine.FlushPolicy{engine.FlushAck, engine.FlushInterval} {
		opts := engine.DefaultOptions()
		opts.FlushPolicy = policy
		l, _, err := engine.Open(vfs.NewMem(), "/d/t-0", engine.TopicPartition{Topic: "t"}, opts, engine.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := newPartition(engine.TopicPartition{Topic: "t"}, l)
		if _, _, err := p.AppendAsLeader(oneRecord(t), -1); !errors.Is(err, kerr.NotLeaderForPartition) {
			t.Fatalf("%v: append on a non-leader: %v", policy, err)
		}
		if err := p.becomeLeader(3); err != nil {
			t.Fatal(err)
		}
		changed := p.HighWatermarkChanged()
		info, wait, err := p.AppendAsLeader(oneRecord(t), -1)
		if err != nil {
			t.Fatal(err)
		}
		if info.FirstOffset != 0 {
			t.Fatalf("first offset %d", info.FirstOffset)
		}
		if policy == engine.FlushAck && p.HighWatermark() != 0 {
			t.Fatalf("ack: high watermark %d before the fdatasync", p.HighWatermark())
		}
		if err := wait(); err != nil {
			t.Fatal(err)
		}
		if p.HighWatermark() != 1 {
			t.Fatalf("%v: high watermark %d after the append completed", policy, p.HighWatermark())
		}
		select {
		case <-changed:
		default:
			t.Fatalf("%v: the high watermark moved without waking fetchers", policy)
		}
		r, hw, _, err := p.ReadForConsumer(0, 1<<20, true)
		if err != nil || hw != 1 || r.Slice.Size == 0 {
			t.Fatalf("%v: consumer read: hw %d size %d %v", policy, hw, r.Slice.Size, err)
		}
		r.Release()
		if ep := l.LeaderEpochs(); len(ep) != 1 || ep[0] != (engine.EpochEntry{Epoch: 3, StartOffset: 0}) {
			t.Fatalf("%v: epochs %v", policy, ep)
		}
		l.Close()
	}
}
