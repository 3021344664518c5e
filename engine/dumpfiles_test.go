package engine

import (
	"os"
	"testing"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// TestWriteSegmentsForKafkaTools writes a partition the way a broker
// would (every codec, idempotent and plain batches, several segments, a
// truncation, a clean shutdown) and checks it with the engine's own index
// checks. With WREN_KAFKA_DUMP_DIR set it leaves the data directory there,
// so scripts/kafka-dump-log.sh can run Kafka's DumpLogSegments on it (CI
// does).
func TestWriteSegmentsForKafkaTools(t *testing.T) {
	dir := os.Getenv("WREN_KAFKA_DUMP_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	opts := DefaultOptions()
	opts.SegmentBytes = 16 << 10
	opts.IndexIntervalBytes = 2048
	m, err := OpenManager(vfs.NewOS(), dir, ManagerConfig{ClusterID: "d3Jlbi1kdW1wLXRlc3Q", NodeID: 1, Defaults: opts})
	mustNotErr(t, err)
	l, err := m.GetOrCreateLog(TopicPartition{"wren-dump", 0})
	mustNotErr(t, err)
	ts := int64(1_790_000_000_000)
	for i := 0; i < 120; i++ {
		codec := batch.CompressionType(i % 5)
		b := batch.NewBuilder(codec)
		if i%2 == 0 {
			// An idempotent producer: id 7, epoch 0, sequences 0, 1, 2...
			b.ProducerID, b.ProducerEpoch, b.BaseSequence = 7, 0, int32(i/2*4)
		}
		for r := 0; r < 4; r++ {
			b.Append(batch.Record{
				Timestamp: ts + int64(i*10+r),
				Key:       []byte{byte('a' + r)},
				Value:     make([]byte, 200+i*13%700),
				Headers:   []batch.RecordHeader{{Key: "codec", Value: []byte(codec.String())}},
			})
		}
		raw, err := b.Build()
		mustNotErr(t, err)
		_, err = l.Append(raw, int32(i/40))
		mustNotErr(t, err)
	}
	mustNotErr(t, l.TruncateTo(l.LogEndOffset()-10))
	if len(l.Segments()) < 4 {
		t.Fatalf("want several segments, got %d", len(l.Segments()))
	}
	checkIndexesAgree(t, l)
	mustNotErr(t, m.Close())
}
