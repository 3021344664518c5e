package broker

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/engine"
	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

const diskSpaceTestConfig = `
[storage]
log.dir.min.free.bytes = 2097152
log.dir.min.free.percent = 100
[groups]
offsets.topic.num.partitions = 2
`

// rawProduce sends one Produce request of one record to partition 0 of
// topic and returns the partition's answer.
func rawProduce(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	bb := batch.NewBuilder(batch.CompressionNone)
	bb.Append(batch.Record{Timestamp: time.Now().UnixMilli(), Value: []byte("raw")})
	records, err := bb.Build()
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

// TestProduceBelowFloorIsRetriable fills a log dir past its floor: a
// Produce gets KAFKA_STORAGE_ERROR with a message naming the dir and the
// figures, CreateTopics and CreatePartitions are refused per topic, reads
// go on, and a franz-go producer that meets the refusal retries and
// succeeds by itself once space is back, at the next offset.
func TestProduceBelowFloorIsRetriable(t *testing.T) {
	mem := vfs.NewMem()
	mem.SetCapacity(64 << 20)
	cfg := testConfig(t, "/data", diskSpaceTestConfig)
	b, err := Start(cfg, Options{FS: mem, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ctx := testContext(t)
	cl, adm := newClient(t, b, kgo.DefaultProduceTopic("full"), kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "full"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("first")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// Another program fills the disk to 1 MiB above nothing.
	space, err := b.logs.SampleDiskSpace()
	if err != nil {
		t.Fatal(err)
	}
	ballast, err := mem.Create("/ballast")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ballast.WriteAt(make([]byte, space.FreeBytes-1<<20), 0); err != nil {
		t.Fatal(err)
	}
	if s, _ := b.logs.SampleDiskSpace(); !s.BelowFloor {
		t.Fatalf("sample after filling the disk: %+v", s)
	}
	// What the heartbeats tell the controller, which moves the node's
	// leaderships (cluster.LogDirRecords).
	if d := logDirState(b.logs); !d.Offline || d.Reason != cluster.LogDirBelowFloor || d.Dir != "/data" || !strings.Contains(d.Detail, "floor 2097152") {
		t.Fatalf("log dir state below the floor: %+v", d)
	}

	p := rawProduce(t, ctx, cl, "full")
	if p.ErrorCode != kerr.KafkaStorageError.Code || p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, "/data has") || !strings.Contains(*p.ErrorMessage, "floor 2097152") {
		t.Fatalf("produce below the floor: code %d message %v", p.ErrorCode, p.ErrorMessage)
	}
	if !kerr.IsRetriable(kerr.ErrorForCode(p.ErrorCode)) {
		t.Fatal("the refusal is not retriable")
	}

	created, err := adm.CreateTopic(ctx, 1, 1, nil, "new")
	if !errors.Is(err, kerr.KafkaStorageError) || !strings.Contains(created.ErrMessage, "free-space floor") {
		t.Fatalf("CreateTopics below the floor: %v %q", err, created.ErrMessage)
	}
	if md, err := adm.ListTopics(ctx, "new"); err != nil || md.Has("new") {
		t.Fatalf("the refused topic exists: %v", err)
	}
	cp, err := adm.CreatePartitions(ctx, 1, "full")
	if err != nil || !errors.Is(cp["full"].Err, kerr.KafkaStorageError) {
		t.Fatalf("CreatePartitions below the floor: %v %+v", err, cp)
	}

	// Reads go on.
	consumer, _ := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"full": {0: kgo.NewOffset().At(0)}}))
	fetches := consumer.PollRecords(ctx, 1)
	if errs := fetches.Errors(); len(errs) > 0 || fetches.NumRecords() != 1 || string(fetches.Records()[0].Value) != "first" {
		t.Fatalf("read below the floor: %v %d records", errs, fetches.NumRecords())
	}

	// A producer meets the refusal and retries until space is back.
	issued := time.Now()
	done := make(chan *kgo.Record, 1)
	cl.Produce(ctx, &kgo.Record{Value: []byte("second")}, func(r *kgo.Record, err error) {
		if err != nil {
			t.Errorf("produce while the disk is full: %v (want retries until space returns)", err)
		}
		done <- r
	})
	// Let the producer be refused for a while (a sample newer than the
	// send plus the refused-resample interval), then free the space.
	deadline := time.Now().Add(30 * time.Second)
	for lastSample(b).Before(issued.Add(200*time.Millisecond)) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("a record was acknowledged while the log dir was below its floor")
	default:
	}
	if err := mem.Remove("/ballast"); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.Offset != 1 {
			t.Fatalf("the retried record landed at offset %d, want 1", r.Offset)
		}
	case <-ctx.Done():
		t.Fatal("the producer never succeeded after space came back")
	}
	if d := logDirState(b.logs); d.Offline {
		t.Fatalf("log dir state with space back: %+v", d)
	}
}

// lastSample is when the log dir's free space was last measured.
func lastSample(b *Broker) time.Time {
	s, _ := b.logs.DiskSpace()
	return s.SampledAt
}

// TestCreateTopicsRefusedWhenDirFailed: with the log dir failed (EIO on
// fdatasync), CreateTopics answers KAFKA_STORAGE_ERROR instead of creating
// a topic whose partitions answer UNKNOWN_TOPIC_OR_PARTITION.
func TestCreateTopicsRefusedWhenDirFailed(t *testing.T) {
	fs := vfs.NewFaultFS(vfs.NewOS())
	cfg := testConfig(t, t.TempDir(), diskSpaceTestConfig)
	b, err := Start(cfg, Options{FS: fs, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ctx := testContext(t)
	cl, adm := newClient(t, b)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	fs.Inject(vfs.Fault{Op: vfs.OpSyncData, Path: func(n string) bool { return strings.Contains(n, "/t-0/") }, Err: syscall.EIO})
	if p := rawProduce(t, ctx, cl, "t"); p.ErrorCode != kerr.KafkaStorageError.Code {
		t.Fatalf("produce with EIO on fdatasync: code %d", p.ErrorCode)
	}
	if b.logs.Failed() == nil {
		t.Fatal("the log dir did not fail")
	}
	if d := logDirState(b.logs); !d.Offline || d.Reason != cluster.LogDirFailed || !strings.Contains(d.Detail, "input/output error") {
		t.Fatalf("log dir state with the dir failed: %+v", d)
	}
	created, err := adm.CreateTopic(ctx, 1, 1, nil, "after")
	if !errors.Is(err, kerr.KafkaStorageError) || !strings.Contains(created.ErrMessage, engine.ErrLogDirFailed.Error()) {
		t.Fatalf("CreateTopics with the log dir failed: %v %q", err, created.ErrMessage)
	}
	if md, err := adm.ListTopics(ctx, "after"); err != nil || md.Has("after") {
		t.Fatalf("the refused topic exists: %v", err)
	}
}
