package broker

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSIGKILLDuringIdempotentProduce runs wren as a real process, produces
// with an idempotent franz-go producer, kills the broker with SIGKILL in
// the middle and restarts it on the same data directory and port. Under
// flush policy ack every acknowledged record survives, and the producer's
// retries of batches whose answers the kill swallowed are recognised:
// 0 lost, 0 duplicates.
func TestSIGKILLDuringIdempotentProduce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the wren binary")
	}
	dir := t.TempDir()
	bin := wrenBinary(t)
	conf, addr := writeSingleNodeConfig(t, dir, filepath.Join(dir, "data"), "", `[storage]
log.flush.policy = "ack"
[logging]
level = "warn"
`)
	start := func() *exec.Cmd {
		cmd := diesWithTest(exec.Command(bin, "serve", "--config", conf))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitListening(t, addr)
		return cmd
	}
	cmd := start()
	defer func() { cmd.Process.Kill(); cmd.Wait() }()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if _, err := kadm.NewClient(adm).CreateTopic(ctx, 6, 1, nil, "killed"); err != nil {
		t.Fatal(err)
	}
	producer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("killed"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(1<<30), kgo.RequestRetries(1<<30),
		kgo.ProducerBatchMaxBytes(1<<10), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	const records = 60_000
	var acked, failed atomic.Int64
	killAt := int64(records / 3)
	killed := make(chan struct{})
	for i := 0; i < records; i++ {
		r := &kgo.Record{Partition: int32(i % 6), Value: []byte(fmt.Sprint(i))}
		producer.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
				return
			}
			if acked.Add(1) == killAt {
				close(killed)
			}
		})
	}
	<-killed
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	cmd = start()
	if err := producer.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if failed.Load() > 0 {
		t.Fatalf("%d records failed", failed.Load())
	}
	// Every record exactly once, in order per partition.
	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	checkExactlyOnceInOrder(t, ctx, consumer, "killed", 6, records)
}

// freePort is one port from freePorts.
func freePort(t *testing.T) int {
	t.Helper()
	return freePorts(t, 1)[0]
}

// waitListening polls until addr accepts a connection, with a deadline.
func waitListening(t *testing.T, addr string) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %s after 30 s", addr)
}
