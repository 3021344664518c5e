package broker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sys/unix"
)

// TestFullDiskProcess runs the real wren binary with its log dir on a
// 20 MiB tmpfs mounted by the test, with the default free-space floor
// (which comes to 1 MiB there). An idempotent acks=all franz-go producer
// fills the disk until Produce is refused with the retriable
// KAFKA_STORAGE_ERROR; reads keep working; deleting a ballast file the
// test wrote first brings writes back with no restart, and the producer's
// stuck records go through by themselves. Finally every acknowledged
// record is read back at its offset. The time from freeing space to the
// first accepted write is logged.
//
// It needs root (to mount); it skips otherwise.
func TestFullDiskProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the wren binary")
	}
	if os.Geteuid() != 0 {
		t.Skip("mounts a size-limited tmpfs, which needs root; run as root to test a full disk")
	}
	dir := t.TempDir()
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=20m"); err != nil {
		t.Skipf("cannot mount a 20 MiB tmpfs (%v): no full-disk test here", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(mnt, 0); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	// The ballast is what the test frees later.
	ballast := filepath.Join(mnt, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}

	bin := wrenBinary(t)
	// Small segments and indexes: index files are preallocated, and a
	// tmpfs counts preallocated pages as used.
	conf, addr := writeSingleNodeConfig(t, dir, filepath.Join(mnt, "data"), "", `[storage]
log.flush.policy = "ack"
log.segment.bytes = 1048576
log.index.size.max.bytes = 65536
[groups]
offsets.topic.num.partitions = 1
[logging]
level = "info"
`)
	stderr := &lockedBuffer{}
	cmd := diesWithTest(exec.Command(bin, "serve", "--config", conf))
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(unix.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	waitListening(t, addr)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const topic, partitions = "full", 2
	probe, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	if _, err := kadm.NewClient(probe).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	producer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordRetries(1<<30), kgo.RequestRetries(1<<30),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()

	type key struct {
		partition int32
		offset    int64
	}
	var (
		mu          sync.Mutex
		acked       = map[key]string{}
		failed      []error
		inflight    atomic.Int64
		spaceBack   atomic.Int64 // unix nanos when the ballast went; 0 before
		firstAfter  atomic.Int64 // unix nanos of the first ack after that
		ackedSignal = make(chan struct{}, 1)
	)
	record := func(partition int32, value string) {
		inflight.Add(1)
		producer.Produce(ctx, &kgo.Record{Partition: partition, Value: []byte(value)}, func(r *kgo.Record, err error) {
			inflight.Add(-1)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, err)
				return
			}
			if back := spaceBack.Load(); back != 0 {
				firstAfter.CompareAndSwap(0, time.Now().UnixNano())
			}
			acked[key{r.Partition, r.Offset}] = string(r.Value)
			select {
			case ackedSignal <- struct{}{}:
			default:
			}
		})
	}
	value := func(i int) string {
		v := fmt.Sprintf("r%07d|", i)
		return v + strings.Repeat("x", 1000-len(v))
	}

	// Fill the disk. A raw one-record Produce probes the broker every 32
	// records, and whenever 256 records are in flight; the first refusal
	// ends the filling.
	var refusal string
	i := 0
	for refusal == "" {
		if i > 40_000 {
			mu.Lock()
			var st unix.Statfs_t
			unix.Statfs(mnt, &st)
			t.Fatalf("%d KB produced to a 20 MiB file system without a refusal (%d acknowledged, %d failed %v, %d in flight, %d bytes free)",
				i, len(acked), len(failed), failed[:min(1, len(failed))], inflight.Load(), int64(st.Bavail)*int64(st.Bsize))
		}
		if i%32 == 0 || inflight.Load() >= 256 {
			p := rawProduce(t, ctx, probe, topic)
			switch p.ErrorCode {
			case 0:
				mu.Lock()
				acked[key{0, p.BaseOffset}] = "raw"
				mu.Unlock()
			case kerr.KafkaStorageError.Code:
				refusal = *p.ErrorMessage
				continue
			default:
				t.Fatalf("probe: error %d %v", p.ErrorCode, p.ErrorMessage)
			}
			if inflight.Load() >= 256 {
				select {
				case <-ackedSignal:
				case <-time.After(100 * time.Millisecond):
				case <-ctx.Done():
					t.Fatal("timed out filling the disk")
				}
				continue
			}
		}
		record(int32(i%partitions), value(i))
		i++
	}
	t.Logf("refused after %d records: %s", i, refusal)
	if !strings.Contains(refusal, filepath.Join(mnt, "data")) || !strings.Contains(refusal, "free-space floor") {
		t.Fatalf("the refusal does not name the dir and the floor: %q", refusal)
	}
	var st unix.Statfs_t
	unix.Statfs(mnt, &st)
	t.Logf("free at the refusal: %d bytes of %d", int64(st.Bavail)*int64(st.Bsize), int64(st.Blocks)*int64(st.Bsize))

	// Records produced now stay in flight: the producer retries them.
	inflightAtRefusal := inflight.Load()
	for j := 0; j < 8; j++ {
		record(int32(j%partitions), value(i))
		i++
	}
	for j := 0; j < 5; j++ {
		if p := rawProduce(t, ctx, probe, topic); p.ErrorCode != kerr.KafkaStorageError.Code {
			t.Fatalf("probe %d while the disk is full: error %d", j, p.ErrorCode)
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	if n := inflight.Load(); n < 8 {
		t.Fatalf("%d records in flight while the disk is full, want at least the 8 sent after the refusal (%d were in flight at it)", n, inflightAtRefusal)
	}

	// Reads keep working while writes are refused.
	mu.Lock()
	ackedBefore := len(acked)
	mu.Unlock()
	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	if f := consumer.PollRecords(ctx, 10); f.NumRecords() == 0 || len(f.Errors()) > 0 {
		t.Fatalf("read while the disk is full: %d records, %v", f.NumRecords(), f.Errors())
	}
	if !strings.Contains(stderr.String(), "below its free-space floor") {
		t.Fatal("the broker did not log that the log dir went below its floor")
	}

	// Space comes back: the stuck records go through with no restart.
	spaceBack.Store(time.Now().UnixNano())
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	// The broker's side: a raw Produce every 10 ms until one is taken.
	for {
		p := rawProduce(t, ctx, probe, topic)
		if p.ErrorCode == 0 {
			mu.Lock()
			acked[key{0, p.BaseOffset}] = "raw"
			mu.Unlock()
			break
		}
		if p.ErrorCode != kerr.KafkaStorageError.Code {
			t.Fatalf("probe after space came back: error %d %v", p.ErrorCode, p.ErrorMessage)
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("the broker never took a write after space came back")
		}
	}
	t.Logf("the broker took a write %v after space returned", time.Since(time.Unix(0, spaceBack.Load())))
	for firstAfter.Load() == 0 {
		mu.Lock()
		if len(failed) > 0 {
			t.Fatalf("%d records failed, first: %v", len(failed), failed[0])
		}
		mu.Unlock()
		select {
		case <-ackedSignal:
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			t.Fatalf("the producer's records were not acknowledged after space came back (%d in flight)", inflight.Load())
		}
	}
	resume := time.Duration(firstAfter.Load() - spaceBack.Load())
	t.Logf("the franz-go producer's stuck records were acknowledged %v after space returned (%d records acknowledged before the refusal)", resume, ackedBefore)
	for j := 0; j < 500; j++ {
		record(int32(j%partitions), value(i+j))
	}
	if err := producer.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		t.Fatalf("the broker exited: %v", err)
	default:
	}
	mu.Lock()
	if len(failed) > 0 {
		t.Fatalf("%d records failed, first: %v", len(failed), failed[0])
	}
	want := make(map[key]string, len(acked))
	for k, v := range acked {
		want[k] = v
	}
	mu.Unlock()

	// Every acknowledged record, exactly at its offset.
	consumer, err = kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	seen := map[key]bool{}
	readCtx, readCancel := context.WithTimeout(ctx, 30*time.Second)
	defer readCancel()
	for len(seen) < len(want) {
		f := consumer.PollFetches(readCtx)
		if readCtx.Err() != nil {
			var missing []key
			for k := range want {
				if !seen[k] && len(missing) < 20 {
					missing = append(missing, k)
				}
			}
			ends, err := kadm.NewClient(probe).ListEndOffsets(ctx, topic)
			t.Fatalf("read back %d of %d acknowledged records; missing %v; end offsets %v %v", len(seen), len(want), missing, ends, err)
		}
		for _, e := range f.Errors() {
			t.Fatalf("consume: %v", e.Err)
		}
		f.EachRecord(func(r *kgo.Record) {
			v, ok := want[key{r.Partition, r.Offset}]
			if !ok {
				t.Fatalf("partition %d offset %d holds %.12q, which was never acknowledged", r.Partition, r.Offset, r.Value)
			}
			if string(r.Value) != v {
				t.Fatalf("partition %d offset %d holds %.12q, acknowledged %.12q", r.Partition, r.Offset, r.Value, v)
			}
			seen[key{r.Partition, r.Offset}] = true
		})
	}
	if !strings.Contains(stderr.String(), "back above its free-space floor") {
		t.Fatal("the broker did not log that the log dir came back above its floor")
	}
}
