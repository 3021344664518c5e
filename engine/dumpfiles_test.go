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

	// Transactions: three transactional producers, COMMIT and ABORT
	// markers, so segments hold control batches and .txnindex files; one
	// transaction is left open, so the snapshots keep its first offset.
	tl, err := m.GetOrCreateLog(TopicPartition{"wren-dump-txn", 0})
	mustNotErr(t, err)
	seqs := map[int64]int32{}
	for i := 0; i < 90; i++ {
		pid := int64(20 + i%3)
		b := batch.NewBuilder(batch.CompressionType(i % 5))
		b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.IsTransactional = pid, 0, seqs[pid], true
		for r := 0; r < 3; r++ {
			b.Append(batch.Record{Timestamp: ts + int64(i*10+r), Key: []byte{byte('a' + r)}, Value: make([]byte, 300+i*17%500)})
		}
		raw, err := b.Build()
		mustNotErr(t, err)
		_, err = tl.Append(raw, 0)
		mustNotErr(t, err)
		seqs[pid] += 3
		if i%5 == 4 && i < 85 {
			_, err := tl.AppendTxnMarker(TxnMarker{ProducerID: pid, ProducerEpoch: 0, Commit: i%10 == 4, CoordinatorEpoch: int32(i / 30)}, 0)
			mustNotErr(t, err)
		}
	}
	if len(tl.Segments()) < 3 || len(tl.OpenTxns()) == 0 {
		t.Fatalf("want several segments and an open transaction, got %d and %v", len(tl.Segments()), tl.OpenTxns())
	}
	aborted := 0
	for _, seg := range tl.Segments() {
		entries, err := readAbortedTxns(m.fs, tl.Dir(), seg.BaseOffset)
		mustNotErr(t, err)
		aborted += len(entries)
	}
	if aborted != 8 {
		t.Fatalf("%d aborted transactions indexed, want 8", aborted)
	}
	checkIndexesAgree(t, tl)
	mustNotErr(t, m.Close())
}
