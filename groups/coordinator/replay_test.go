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
