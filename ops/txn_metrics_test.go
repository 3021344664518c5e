package ops

import (
	"bytes"
	"testing"
	"time"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// TestOpenTransactionMetrics: the log dir's open transactions and each
// partition's oldest open transaction's age.
func TestOpenTransactionMetrics(t *testing.T) {
	m, err := engine.OpenManager(vfs.NewMem(), "/data", engine.ManagerConfig{ClusterID: "txn-metrics", NodeID: 1, Defaults: engine.DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.GetOrCreateLog(engine.TopicPartition{Topic: "tx", Partition: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.GetOrCreateLog(engine.TopicPartition{Topic: "idle", Partition: 0}); err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(-90 * time.Second).UnixMilli()
	for pid := int64(1); pid <= 2; pid++ {
		b := batch.NewBuilder(batch.CompressionNone)
		b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.IsTransactional = pid, 0, 0, true
		b.Append(batch.Record{Timestamp: start + pid*30_000, Value: []byte("v")})
		raw, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(raw, 0); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	writeLogDir(&out, m)
	e, err := parseExposition(out.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if got := e.samples[`wren_storage_open_transactions{log_dir="/data"}`]; got != 2 {
		t.Fatalf("open transactions %v, want 2\n%s", got, out.String())
	}
	age, ok := e.samples[`wren_storage_oldest_open_transaction_age_seconds{topic="tx",partition="3"}`]
	if !ok || age < 59 || age > 600 {
		t.Fatalf("oldest open transaction age %v (present %v), want about 60 s\n%s", age, ok, out.String())
	}
	if _, ok := e.samples[`wren_storage_oldest_open_transaction_age_seconds{topic="idle",partition="0"}`]; ok {
		t.Fatal("a partition without a transaction has an age series")
	}
}
