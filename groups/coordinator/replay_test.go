package coordinator

import (
	"fmt"
	"testing"

	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/groups"
	"github.com/wren-broker/wren/internal/vfs"
)

func commitRecord(group, topic string, partition int32, offset int64) groups.Record {
	r := groups.Record{Kind: groups.OffsetCommitRecord, Group: group, TopicPartition: groups.TopicPartition{Topic: topic, Partition: partition}}
	if offset >= 0 {
		r.Offset = &groups.OffsetAndMetadata{Offset: offset, LeaderEpoch: -1, CommitTimestampMs: 1000, ExpireTimestampMs: -1}
	}
	return r
}

// appendRecords writes recs as one batch, as the driver does, plus
// records of a key version this package does not know.
func appendRecords(t *testing.T, l *engine.Log, recs ...groups.Record) {
	t.Helper()
	b := batch.NewBuilder(batch.CompressionNone)
	for _, r := range recs {
		var value []byte
		if !r.Tombstone() {
			value = r.EncodeValue()
		}
		b.Append(batch.Record{Timestamp: 1000, Key: r.EncodeKey(), Value: value})
	}
	// A key version from a later Kafka (the transaction or share-group
	// records): skipped on load.
	b.Append(batch.Record{Timestamp: 1000, Key: []byte{0, 99, 0, 0}, Value: []byte{0, 0}})
	raw, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(raw, 0); err != nil {
		t.Fatal(err)
	}
}

// fetched loads a coordinator from l below end and returns group's
// committed offsets as "topic/partition=offset".
func fetched(t *testing.T, l *engine.Log, end int64, group string) []string {
	t.Helper()
	c, err := groups.NewCoordinator(groups.DefaultConfig(), 0, 1, groups.SeededMemberIDs(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := replay(c, l, end); err != nil {
		t.Fatal(err)
	}
	if err := c.CompleteLoad(2000); err != nil {
		t.Fatal(err)
	}
	c.FetchOffsets(groups.FetchOffsetsRequest{RequestID: 1, Group: group})
	rd := c.Ready()
	if len(rd.Responses) != 1 || rd.Responses[0].Fetch == nil || rd.Responses[0].Fetch.ErrorCode != 0 {
		t.Fatalf("fetch: %+v", rd.Responses)
	}
	var out []string
	for _, o := range rd.Responses[0].Fetch.Offsets {
		out = append(out, fmt.Sprintf("%s/%d=%d", o.Topic, o.Partition, o.Offset))
	}
	return out
}

// TestReplay loads a coordinator from a real log: later commits win,
// tombstones delete, unknown record types are skipped, and nothing at or
// past the end offset (the high watermark) is applied.
func TestReplay(t *testing.T) {
	dir := t.TempDir() + "/" + OffsetsTopic + "-0"
	l, _, err := engine.Open(vfs.NewOS(), dir, engine.TopicPartition{Topic: OffsetsTopic, Partition: 0}, engine.DefaultOptions(), engine.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	appendRecords(t, l, commitRecord("g", "t", 0, 5), commitRecord("g", "t", 1, 7), commitRecord("h", "t", 0, 1))
	appendRecords(t, l, commitRecord("g", "t", 0, 9), commitRecord("g", "t", 1, -1))
	acknowledged := l.LogEndOffset()
	appendRecords(t, l, commitRecord("g", "t", 0, 12))

	for _, c := range []struct {
		end  int64
		want string
	}{
		{0, "[]"},
		{4, "[t/0=5 t/1=7]"},
		{acknowledged, "[t/0=9]"},
		{l.LogEndOffset(), "[t/0=12]"},
	} {
		if got := fmt.Sprint(fetched(t, l, c.end, "g")); got != c.want {
			t.Errorf("loaded below %d: %s, want %s", c.end, got, c.want)
		}
	}
}

// appendTxnRecords writes recs as one transactional batch of producer pid
// at epoch, with sequence seq, as the driver does for a TxnOffsetCommit.
func appendTxnRecords(t *testing.T, l *engine.Log, pid int64, epoch int16, seq int32, recs ...groups.Record) {
	t.Helper()
	b := batch.NewBuilder(batch.CompressionNone)
	b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.IsTransactional = pid, epoch, seq, true
	for _, r := range recs {
		b.Append(batch.Record{Timestamp: 1000, Key: r.EncodeKey(), Value: r.EncodeValue()})
	}
	raw, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(raw, 0); err != nil {
		t.Fatal(err)
	}
}

// load replays l below end into a new coordinator.
func load(t *testing.T, l *engine.Log, end int64) *groups.Coordinator {
	t.Helper()
	c, err := groups.NewCoordinator(groups.DefaultConfig(), 0, 1, groups.SeededMemberIDs(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := replay(c, l, end); err != nil {
		t.Fatal(err)
	}
	if err := c.CompleteLoad(2000); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestReplayTxnOffsets loads a log holding transactional offset commits
// (TxnOffsetCommit's transactional batches) with and without markers: a
// committed transaction's offsets are committed, an aborted one's never
// show, and an open one's (no marker yet) stay pending: invisible, and
// UNSTABLE_OFFSET_COMMIT with RequireStable, until the marker.
func TestReplayTxnOffsets(t *testing.T) {
	dir := t.TempDir() + "/" + OffsetsTopic + "-0"
	l, _, err := engine.Open(vfs.NewOS(), dir, engine.TopicPartition{Topic: OffsetsTopic, Partition: 0}, engine.DefaultOptions(), engine.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	appendRecords(t, l, commitRecord("g", "t", 0, 5), commitRecord("g", "t", 1, 6))
	// Producer 7 commits t/0=10: COMMIT.
	appendTxnRecords(t, l, 7, 0, 0, commitRecord("g", "t", 0, 10))
	// Producer 8 commits t/1=20 and t/2=21: ABORT.
	appendTxnRecords(t, l, 8, 0, 0, commitRecord("g", "t", 1, 20), commitRecord("g", "t", 2, 21))
	if _, err := l.AppendTxnMarker(engine.TxnMarker{ProducerID: 7, ProducerEpoch: 0, Commit: true}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendTxnMarker(engine.TxnMarker{ProducerID: 8, ProducerEpoch: 0, Commit: false}, 0); err != nil {
		t.Fatal(err)
	}
	settled := l.LogEndOffset()
	// Producer 9 commits t/0=30 and no marker comes (yet).
	appendTxnRecords(t, l, 9, 0, 0, commitRecord("g", "t", 0, 30))
	open := l.LogEndOffset()
	// Its marker: COMMIT, then producer 7 again, aborted.
	if _, err := l.AppendTxnMarker(engine.TxnMarker{ProducerID: 9, ProducerEpoch: 0, Commit: true}, 0); err != nil {
		t.Fatal(err)
	}
	appendTxnRecords(t, l, 7, 0, 1, commitRecord("g", "t", 1, 40))
	if _, err := l.AppendTxnMarker(engine.TxnMarker{ProducerID: 7, ProducerEpoch: 0, Commit: false}, 0); err != nil {
		t.Fatal(err)
	}

	fetch := func(c *groups.Coordinator, stable bool) string {
		c.FetchOffsets(groups.FetchOffsetsRequest{RequestID: 1, Group: "g", RequireStable: stable,
			Partitions: []groups.TopicPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}, {Topic: "t", Partition: 2}}})
		rd := c.Ready()
		if len(rd.Responses) != 1 || rd.Responses[0].Fetch == nil || rd.Responses[0].Fetch.ErrorCode != 0 {
			t.Fatalf("fetch: %+v", rd.Responses)
		}
		var out []string
		for _, o := range rd.Responses[0].Fetch.Offsets {
			s := fmt.Sprintf("%s/%d=%d", o.Topic, o.Partition, o.Offset)
			if o.ErrorCode != 0 {
				s += "(unstable)"
			}
			out = append(out, s)
		}
		return fmt.Sprint(out)
	}
	for _, c := range []struct {
		end                int64
		want, wantStable   string
		pendingAfterLoaded bool
	}{
		{settled, "[t/0=10 t/1=6 t/2=-1]", "[t/0=10 t/1=6 t/2=-1]", false},
		{open, "[t/0=10 t/1=6 t/2=-1]", "[t/0=-1(unstable) t/1=6 t/2=-1]", true},
		{l.LogEndOffset(), "[t/0=30 t/1=6 t/2=-1]", "[t/0=30 t/1=6 t/2=-1]", false},
	} {
		co := load(t, l, c.end)
		if got := fetch(co, false); got != c.want {
			t.Errorf("loaded below %d: %s, want %s", c.end, got, c.want)
		}
		if got := fetch(co, true); got != c.wantStable {
			t.Errorf("loaded below %d, RequireStable: %s, want %s", c.end, got, c.wantStable)
		}
		if got := len(co.PendingTxnOffsets("g")) > 0; got != c.pendingAfterLoaded {
			t.Errorf("loaded below %d: pending %v, want %v", c.end, co.PendingTxnOffsets("g"), c.pendingAfterLoaded)
		}
	}
	// The open transaction's marker arrives after the load (the driver's
	// WriteTxnMarker): its offsets are committed then.
	co := load(t, l, open)
	co.CompleteTxn(groups.TxnMarkerRequest{RequestID: 2, ProducerID: 9, ProducerEpoch: 0, Commit: true}, 3000)
	co.Ready()
	if got := fetch(co, true); got != "[t/0=30 t/1=6 t/2=-1]" {
		t.Errorf("after the marker: %s", got)
	}
}
