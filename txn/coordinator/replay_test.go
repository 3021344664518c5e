package coordinator

import (
	"testing"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
	"github.com/wren-broker/wren/txn"
)

func meta(id string, epoch int16, st txn.State, parts ...txn.TopicPartition) *txn.Metadata {
	return &txn.Metadata{TransactionalID: id, ProducerID: 7, ProducerEpoch: epoch, TimeoutMs: 60000, State: st,
		Partitions: parts, StartMs: 10, LastUpdateMs: 20}
}

// appendRecords writes recs as one batch, as the driver does, plus a
// record of a key version this package does not know.
func appendRecords(t *testing.T, l *engine.Log, recs ...txn.Record) {
	t.Helper()
	b := batch.NewBuilder(batch.CompressionNone)
	for _, r := range recs {
		b.Append(batch.Record{Timestamp: 1000, Key: r.EncodeKey(), Value: r.EncodeValue()})
	}
	b.Append(batch.Record{Timestamp: 1000, Key: []byte{0, 9, 0, 0}, Value: []byte{0, 0}})
	raw, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(raw, 0); err != nil {
		t.Fatal(err)
	}
}

// TestReplay loads a coordinator from a real log: later records win, a
// tombstone removes an id, unknown key versions and control batches are
// skipped, nothing at or past the end offset (the high watermark) is
// applied, and a transaction found prepared gets its markers again.
func TestReplay(t *testing.T) {
	dir := t.TempDir() + "/" + StateTopic + "-0"
	l, _, err := engine.Open(vfs.NewOS(), dir, engine.TopicPartition{Topic: StateTopic, Partition: 0}, engine.DefaultOptions(), engine.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	tp := txn.TopicPartition{Topic: "t", Partition: 0}
	appendRecords(t, l, txn.Record{TransactionalID: "a", Metadata: meta("a", 0, txn.Empty)},
		txn.Record{TransactionalID: "b", Metadata: meta("b", 0, txn.Empty)})
	appendRecords(t, l, txn.Record{TransactionalID: "a", Metadata: meta("a", 0, txn.Ongoing, tp)},
		txn.Record{TransactionalID: "b"})
	// A control batch, as the log of a partition may hold: skipped.
	if _, err := l.AppendTxnMarker(engine.TxnMarker{ProducerID: 99, ProducerEpoch: 0, Commit: true}, 0); err != nil {
		t.Fatal(err)
	}
	appendRecords(t, l, txn.Record{TransactionalID: "a", Metadata: meta("a", 0, txn.PrepareCommit, tp)})
	acknowledged := l.LogEndOffset()
	appendRecords(t, l, txn.Record{TransactionalID: "a", Metadata: meta("a", 0, txn.CompleteCommit)})

	load := func(end int64) (*txn.Coordinator, txn.Ready) {
		c, err := txn.NewCoordinator(txn.DefaultConfig(), 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := replay(c, l, end); err != nil {
			t.Fatal(err)
		}
		c.CompleteLoad()
		return c, c.Ready()
	}
	c, rd := load(3)
	if m := c.Transaction("b"); m == nil || m.State != txn.Empty {
		t.Errorf("below 3: b %+v", m)
	}
	c, rd = load(acknowledged)
	if c.Transaction("b") != nil {
		t.Errorf("b survived its tombstone")
	}
	if m := c.Transaction("a"); m == nil || m.State != txn.PrepareCommit || len(m.Partitions) != 1 {
		t.Fatalf("a: %+v", m)
	}
	if len(rd.Markers) != 1 || !rd.Markers[0].Commit || rd.Markers[0].Partitions[0] != tp {
		t.Errorf("markers after the load: %+v", rd.Markers)
	}
	c, rd = load(l.LogEndOffset())
	if m := c.Transaction("a"); m.State != txn.CompleteCommit || len(rd.Markers) != 0 {
		t.Errorf("a after the Complete record: %+v, markers %+v", m, rd.Markers)
	}
}
